/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's reverse scans (engine/shard.h, eng_scan.reverse) on real
 * files, against a model of the newest version of every key and against
 * the forward scan: paged walks down of both tables, whose keys spread
 * over all four tablets, across flushed and unflushed versions, deletes
 * and expiries, warm and cold, equal the forward scan reversed at every
 * page size and range; the resume position is the last row given, which
 * the next page takes as its end, and the last page has none; writes
 * between pages show below the resume position and not above it.
 */
#include "engine/shard_internal.h"
#include "tests/engine/shard_helpers.h"

#include "base/time.h"
#include "tests/rng.h"

TestSuite(shard_reverse, .init = setup, .fini = teardown, .timeout = 120);

enum { NKEYS = 500 };

/* The model, per table and key: the value's version (0 = absent) and
 * expiry. */
static uint32_t model_ver[ENG_TABLE_MAX][NKEYS];
static uint64_t model_exp[ENG_TABLE_MAX][NKEYS];

/* Key i: a first byte spread over 0..255 -- so that the ordered table's
 * keys fall in all its tablets, which split on the first byte -- then i
 * in digits. Keys sort as their indexes. Returns the length (6). */
static uint32_t key_of(uint32_t i, char *buf)
{
        buf[0] = (char)(uint8_t)(i * 256 / NKEYS);
        snprintf(buf + 1, 8, "%05u", i);
        return 6;
}

static uint32_t key_index(const uint8_t *k, uint32_t len)
{
        uint32_t i = 0;

        cr_assert(eq(u32, len, 6));
        for (uint32_t j = 1; j < 6; j++) {      /* k is not NUL-terminated */
                cr_assert(k[j] >= '0' && k[j] <= '9');
                i = i * 10 + (uint32_t)(k[j] - '0');
        }
        cr_assert(lt(u32, i, (unsigned)NKEYS));
        cr_assert(eq(u8, k[0], (uint8_t)(i * 256 / NKEYS)));
        return i;
}

static uint32_t value_of(uint32_t i, uint32_t ver, char *buf)
{
        uint32_t len = 5 + (i * 11 + ver * 7) % 80;

        for (uint32_t j = 0; j < len; j++)
                buf[j] = (char)('A' + (i + ver * 3 + j) % 26);
        return len;
}

static void put_t(enum eng_table t, uint32_t i, uint32_t ver, uint64_t expiry)
{
        char k[8], v[128];
        struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = t, .key = k,
                                  .key_len = key_of(i, k), .value = v,
                                  .value_len = value_of(i, ver, v), .expiry_ms = expiry };

        cr_assert(eq(int, write_sync(&m, 1), 0));
        model_ver[t][i] = ver;
        model_exp[t][i] = expiry;
}

static void del_t(enum eng_table t, uint32_t i)
{
        char k[8];
        struct eng_mutation m = { .kind = ENG_MUT_DEL, .table = t, .key = k,
                                  .key_len = key_of(i, k) };

        cr_assert(eq(int, write_sync(&m, 1), 0));
        model_ver[t][i] = 0;
}

/* Random writes to both tables -- puts, overwrites, deletes, expired and
 * expiring values -- flushed every flush_every, the rest left in the
 * memtables. */
static void random_history(uint64_t seed, uint32_t ops, uint32_t flush_every)
{
        uint64_t rng = seed * 7 + 1, now = time_wall_ns() / 1000000;

        for (uint32_t op = 1; op <= ops; op++) {
                uint64_t r = test_rng_next(&rng);
                enum eng_table t = r % 2 ? ENG_TABLE_ORDERED : ENG_TABLE_DEFAULT;
                uint32_t i = (uint32_t)(r >> 8) % NKEYS, what = (uint32_t)(r >> 40) % 10;

                if (what < 2)
                        del_t(t, i);
                else if (what == 2)
                        put_t(t, i, op, now - 1000);
                else if (what == 3)
                        put_t(t, i, op, now + 3600 * 1000);
                else
                        put_t(t, i, op, 0);
                if (op % flush_every == 0)
                        cr_assert(eq(int, flush_sync(), 0));
        }
}

/* The ordered table's tablets that hold a version. */
static uint32_t ordered_tablets_with_keys(void)
{
        uint32_t n = 0;

        for (uint32_t l = 0; l < sh->n_tablets; l++) {
                const struct eng_tablet *t = sh->tablets[l];

                if (t->table == ENG_TABLE_ORDERED)
                        n += eng_memtable_count(t->active) > 0 || t->n_imm > 0 ||
                             (t->tset && t->tset->n > 0);
        }
        return n;
}

/* ---- scanning ---- */

struct collect {
        struct eng_scan sc;
        enum eng_table table;
        uint32_t keys[NKEYS + 1];
        uint8_t pos[NKEYS + 1][16];     /* the positions given, in order */
        uint32_t pos_len[NKEYS + 1];
        uint32_t n;
        bool done;
        int res;
};

static int on_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct collect *c = sc->ctx;
        uint32_t i = key_index(it->key, it->key_len);
        char want[128];

        cr_assert(lt(u32, c->n, NKEYS), "more items than keys");
        cr_assert(not(eq(u32, model_ver[c->table][i], 0)), "key %u is deleted but scanned", i);
        cr_assert(eq(u32, it->value_len, value_of(i, model_ver[c->table][i], want)), "key %u", i);
        cr_assert(eq(int, memcmp(it->value, want, it->value_len), 0), "key %u: value", i);
        cr_assert(eq(u64, it->expiry_ms, model_exp[c->table][i]), "key %u", i);
        cr_assert(le(u32, it->pos_len, 16));
        memcpy(c->pos[c->n], it->pos, it->pos_len);
        c->pos_len[c->n] = it->pos_len;
        c->keys[c->n++] = i;
        return 0;
}

static void on_scan(struct eng_scan *sc, int res)
{
        struct collect *c = sc->ctx;

        c->done = true;
        c->res = res;
}

/* One page into c (appending). Returns the scan's result. */
static int scan_page(struct collect *c, const void *start, uint32_t start_len, const void *end,
                     uint32_t end_len, uint32_t limit)
{
        int r;

        c->sc.item = on_item;
        c->sc.done = on_scan;
        c->sc.ctx = c;
        c->done = false;
        r = eng_shard_scan(sh, c->table, start, start_len, end, end_len, limit, &c->sc);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &c->done), 0));
                r = c->res;
        }
        return r;
}

/*
 * Scans [lo, hi) (key indexes; lo 0 = no start, hi NKEYS = no end) of
 * table t in pages of limit, up or down, into c. Forward pages go on from
 * resume as their start; reverse ones take resume as their end.
 */
static void scan_all(struct collect *c, enum eng_table t, uint32_t lo, uint32_t hi,
                     uint32_t limit, bool reverse)
{
        uint8_t start[16], end[16];
        char k[8];
        uint32_t start_len = 0, end_len = 0, pages;

        memset(c, 0, sizeof(*c));
        c->table = t;
        c->sc.reverse = reverse;
        if (lo)
                start_len = (uint32_t)eng_shard_scan_pos(sh, t, k, key_of(lo, k), start);
        if (hi < NKEYS)
                end_len = (uint32_t)eng_shard_scan_pos(sh, t, k, key_of(hi, k), end);
        cr_assert(eq(int, scan_page(c, start, start_len, hi < NKEYS ? end : NULL, end_len, limit),
                     0));
        for (pages = 1; c->sc.more; pages++) {
                uint32_t before = c->n;

                cr_assert(eq(u32, c->sc.n, limit), "a page with more is full");
                cr_assert(lt(u32, pages, 2 * NKEYS + 4), "scan does not end");
                if (reverse) {
                        /* resume: the last row given, the next page's end. */
                        cr_assert(eq(u32, c->sc.resume_len, c->pos_len[c->n - 1]));
                        cr_assert(eq(int, memcmp(c->sc.resume, c->pos[c->n - 1],
                                                 c->sc.resume_len), 0));
                        cr_assert(eq(int, scan_page(c, start, start_len, c->sc.resume,
                                                    c->sc.resume_len, limit), 0));
                } else {
                        cr_assert(eq(int, scan_page(c, c->sc.resume, c->sc.resume_len,
                                                    hi < NKEYS ? end : NULL, end_len, limit), 0));
                }
                cr_assert(gt(u32, c->n, before), "a page after more gives a row");
        }
        cr_assert(eq(ptr, c->sc.resume, NULL), "the last page has no resume");
        eng_scan_release(&c->sc);
}

/* c's positions strictly decrease (reverse) or increase. */
static void expect_order(const struct collect *c, bool reverse)
{
        for (uint32_t j = 1; j < c->n; j++) {
                int cmp = eng_key_cmp(c->pos[j - 1], c->pos_len[j - 1], c->pos[j], c->pos_len[j]);

                cr_assert(reverse ? cmp > 0 : cmp < 0, "positions out of order at row %u", j);
        }
}

/* The reverse scan of [lo, hi) of t in pages of limit is the forward scan
 * reversed; for the ordered table both are the model's live keys. */
static void expect_reverse_matches(enum eng_table t, uint32_t lo, uint32_t hi, uint32_t limit)
{
        struct collect *f = calloc(1, sizeof(*f)), *r = calloc(1, sizeof(*r));
        uint64_t now = time_wall_ns() / 1000000;
        uint32_t n = 0;

        scan_all(f, t, lo, hi, limit, false);
        scan_all(r, t, lo, hi, limit, true);
        expect_order(f, false);
        expect_order(r, true);
        cr_assert(eq(u32, r->n, f->n), "table %d [%u, %u) by %u", (int)t, lo, hi, limit);
        for (uint32_t j = 0; j < f->n; j++)
                cr_assert(eq(u32, r->keys[r->n - 1 - j], f->keys[j]), "row %u", j);
        if (t == ENG_TABLE_ORDERED) {
                for (uint32_t i = lo; i < hi; i++) {
                        if (!model_ver[t][i] || (model_exp[t][i] && model_exp[t][i] <= now))
                                continue;
                        cr_assert(lt(u32, n, f->n), "key %u missing", i);
                        cr_assert(eq(u32, f->keys[n], i), "key %u where %u was due", f->keys[n], i);
                        n++;
                }
                cr_assert(eq(u32, f->n, n), "extra keys");
        }
        free(f);
        free(r);
}

static void expect_all_ranges(void)
{
        static const uint32_t limits[] = { 1, 7, 64, 1000 };

        for (size_t l = 0; l < ARRAY_SIZE(limits); l++) {
                expect_reverse_matches(ENG_TABLE_ORDERED, 0, NKEYS, limits[l]);
                expect_reverse_matches(ENG_TABLE_DEFAULT, 0, NKEYS, limits[l]);
        }
        /* Ranges inside one tablet, across tablet boundaries, empty. */
        expect_reverse_matches(ENG_TABLE_ORDERED, 10, 40, 4);
        expect_reverse_matches(ENG_TABLE_ORDERED, 100, 400, 9);
        expect_reverse_matches(ENG_TABLE_ORDERED, 124, 126, 1);
        expect_reverse_matches(ENG_TABLE_ORDERED, 250, 250, 3);
        expect_reverse_matches(ENG_TABLE_ORDERED, 0, 300, 50);
        expect_reverse_matches(ENG_TABLE_ORDERED, 300, NKEYS, 50);
}

Test(shard_reverse, reverse_pages_are_the_forward_scan_reversed_across_tablets_and_tables)
{
        struct collect *c = calloc(1, sizeof(*c));

        opts.no_compaction = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        scan_all(c, ENG_TABLE_ORDERED, 0, NKEYS, 10, true);
        cr_expect(eq(u32, c->n, 0), "empty");
        random_history(1, 4000, 700);   /* the last 500 writes unflushed */
        cr_assert(eq(u32, ordered_tablets_with_keys(), 4));
        expect_all_ranges();
        /* Cold: every table block from the disk. */
        cr_assert(eq(int, reopen(), 0));
        expect_all_ranges();
        free(c);
}

Test(shard_reverse, the_resume_position_is_the_last_row_given_and_ends_the_next_page)
{
        struct collect *c = calloc(1, sizeof(*c));
        char k[8];

        opts.no_compaction = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < 20; i++)
                put_t(ENG_TABLE_ORDERED, i, 1, 0);
        c->table = ENG_TABLE_ORDERED;
        c->sc.reverse = true;
        cr_assert(eq(int, scan_page(c, NULL, 0, NULL, 0, 5), 0));
        cr_assert(eq(u32, c->sc.n, 5));
        cr_assert(c->sc.more);
        cr_assert(eq(u32, c->keys[0], 19));
        cr_assert(eq(u32, c->keys[4], 15));
        cr_assert(eq(u32, c->sc.resume_len, key_of(15, k)));
        cr_assert(eq(int, memcmp(c->sc.resume, k, 6), 0));
        /* Written between pages: above the resume position it is not
         * given again, below it is. */
        put_t(ENG_TABLE_ORDERED, 17, 2, 0);
        put_t(ENG_TABLE_ORDERED, 3, 2, 0);
        del_t(ENG_TABLE_ORDERED, 10);
        cr_assert(eq(int, flush_sync(), 0));
        /* The last page: exactly the rest, and no resume. */
        cr_assert(eq(int, scan_page(c, NULL, 0, c->sc.resume, c->sc.resume_len, 15), 0));
        cr_assert(eq(u32, c->sc.n, 14));
        cr_assert(not(c->sc.more));
        cr_assert(eq(ptr, c->sc.resume, NULL));
        for (uint32_t j = 5, i = 14; j < c->n; j++, i--) {
                if (i == 10)
                        i--;
                cr_assert(eq(u32, c->keys[j], i));
        }
        /* A page that ends exactly at the last row: no more, no resume. */
        c->n = 0;
        cr_assert(eq(int, scan_page(c, NULL, 0, NULL, 0, 19), 0));
        cr_assert(eq(u32, c->sc.n, 19));
        cr_assert(not(c->sc.more));
        cr_assert(eq(ptr, c->sc.resume, NULL));
        eng_scan_release(&c->sc);
        free(c);
}
