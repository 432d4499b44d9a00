/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The row model of the tablet tests (test_shard_split.c,
 * test_shard_merge.c): one shard, the first catalog and table /t-split of
 * rows 0..N_ROWS-1 (key_of), written in batches with their newest values
 * kept in want[] and every read -- gets and scans, up and down -- checked
 * against it; catalog changes installed as the shard allows.
 * Include after shard_helpers.h and shard_catalog_helpers.h, once per test
 * program file.
 */
#ifndef SCREE_TESTS_ENGINE_SHARD_ROWS_HELPERS_H
#define SCREE_TESTS_ENGINE_SHARD_ROWS_HELPERS_H

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "engine/catalog.h"
#include "engine/key.h"
#include "engine/sst_reader.h"
#include "engine/tuple.h"

#define N_ROWS 5000u
#define MID 2500u
#define BATCH 250u

static uint32_t tbl;                    /* the table split */
/* The newest value of each row ("" once deleted): what reads must show. */
static char want[N_ROWS][16];

/* One shard, the first catalog, and table /t/split of one tablet (its id
 * is returned) of the key mode given, installed. */
static inline uint32_t open_with_table(enum eng_catalog_key_mode mode)
{
        const struct eng_catalog_table *t;

        opts.segment_bytes = 8u << 20;
        cr_assert(eq(int, eng_catalog_initial(1, 4, &cat), 0));
        opts.catalog = cat;
        cr_assert(eq(int, shard_open_sync(), 0));
        tbl = create_table("/t-split", mode, 1);
        install();
        cr_assert(eq(int, eng_catalog_table_by_id(cat, tbl, &t), 0));
        memset(want, 0, sizeof(want));
        return t->tablets[0].id;
}

/* The internal key of row v of the table, into buf (32 bytes); its length. */
static inline uint32_t ikey_of(uint64_t v, uint8_t *buf)
{
        const struct eng_catalog_table *t;
        uint8_t k[16];
        size_t len = key_of(v, k);
        long n;

        cr_assert(eq(int, eng_catalog_table_by_id(cat, tbl, &t), 0));
        n = eng_catalog_ikey_encode(t, k, len, buf);
        cr_assert(gt(long, n, 0));
        return (uint32_t)n;
}

/* cat with tablet id split at internal key at; the children's ids. */
static inline void split_at(uint32_t id, const uint8_t *at, size_t at_len, uint32_t kids[2])
{
        struct eng_catalog *next;
        char err[256];

        cr_assert(eq(int, eng_catalog_split_tablet(cat, id, at, at_len, &next, kids, err,
                                                   sizeof(err)), 0), "%s", err);
        eng_catalog_unref(cat);
        cat = next;
}

/* cat with tablet id of the ordered table split at row v. */
static inline void split_at_row(uint32_t id, uint64_t v, uint32_t kids[2])
{
        uint8_t at[32];

        split_at(id, at, ikey_of(v, at), kids);
}

/* Rows from..to-1 in steps of step: put "<tag><row>", or deleted when tag
 * is NULL; in batches, acknowledged (async: started only, into w[]). */
static inline unsigned write_rows(uint32_t from, uint32_t to, uint32_t step, const char *tag,
                           struct wr *w)
{
        static uint8_t keys[BATCH][16];
        struct eng_mutation m[BATCH];
        unsigned n = 0, batches = 0;

        for (uint32_t v = from; v < to; v += step) {
                if (tag)
                        snprintf(want[v], sizeof(want[v]), "%s%u", tag, v);
                else
                        want[v][0] = 0;
                m[n] = (struct eng_mutation){ .kind = tag ? ENG_MUT_PUT : ENG_MUT_DEL,
                                              .table = tbl, .key = keys[n], .value = want[v],
                                              .value_len = (uint32_t)strlen(want[v]) };
                m[n].key_len = (uint32_t)key_of(v, keys[n]);
                if (++n < BATCH && v + step < to)
                        continue;
                if (w)
                        cr_assert(ge(int, write_async(&w[batches], m, n), 0));
                else
                        cr_assert(eq(int, write_sync(m, n), 0));
                batches++;
                n = 0;
        }
        return batches;
}

/* Every row reads back (a point get) with its newest value, or as absent. */
static inline void check_gets(void)
{
        for (uint32_t v = 0; v < N_ROWS; v++) {
                uint8_t k[16];
                char buf[32];
                int r = get_copy(tbl, k, (uint32_t)key_of(v, k), buf, sizeof(buf));

                if (!want[v][0]) {
                        cr_assert(eq(int, r, -SCREE_ENOTFOUND), "row %u: %d", v, r);
                        continue;
                }
                cr_assert(eq(int, r, 0), "row %u: %d", v, r);
                cr_assert(eq(str, buf, want[v]), "row %u", v);
        }
}

struct collect {
        struct eng_scan sc;
        uint32_t n;
        uint64_t keys[N_ROWS + 1];
        char vals[N_ROWS + 1][16];
        uint8_t pos0[N_ROWS + 1];       /* the first byte of each position */
        bool done;
        int res;
};

static inline int collect_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct collect *c = sc->ctx;
        struct eng_tuple_part p;
        uint8_t scratch[16];

        cr_assert(eq(int, eng_tuple_decode(it->key, it->key_len, &p, 1, scratch, sizeof(scratch)), 1));
        cr_assert(lt(u32, c->n, N_ROWS + 1), "more rows than written");
        cr_assert(lt(u32, it->value_len, 16u));
        c->keys[c->n] = p.v.u64;
        c->pos0[c->n] = it->pos_len ? it->pos[0] : 0;
        memcpy(c->vals[c->n], it->value, it->value_len);
        c->vals[c->n++][it->value_len] = 0;
        return 0;
}

static inline void collect_done(struct eng_scan *sc, int res)
{
        struct collect *c = sc->ctx;

        c->done = true;
        c->res = res;
}

/* Scans positions [start, end) (NULL: the table's ends) into c, in one
 * page, up or down. */
static inline void scan_into(struct collect *c, const uint8_t *start, uint32_t start_len,
                      const uint8_t *end, uint32_t end_len, bool reverse)
{
        int r;

        memset(c, 0, sizeof(*c));
        c->sc.item = collect_item;
        c->sc.done = collect_done;
        c->sc.ctx = c;
        c->sc.reverse = reverse;
        r = eng_shard_scan(sh, tbl, start, start_len, end, end_len, 100000, &c->sc);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &c->done), 0));
                r = c->res;
        }
        cr_assert(eq(int, r, 0));
        cr_assert(not(c->sc.more));
        eng_scan_release(&c->sc);
}

/* A scan of the ordered table's rows [lo, hi) (hi N_ROWS: to the table's
 * end), up or down, gives exactly the live rows there, each once, in
 * order, with their newest values. */
static inline void check_scan(uint32_t lo, uint32_t hi, bool reverse)
{
        static struct collect c;
        uint8_t a[16], b[16];
        uint32_t i = 0;

        scan_into(&c, a, (uint32_t)key_of(lo, a), hi < N_ROWS ? b : NULL,
                  hi < N_ROWS ? (uint32_t)key_of(hi, b) : 0, reverse);
        for (uint32_t k = 0; k < hi - lo; k++) {
                uint32_t v = reverse ? hi - 1 - k : lo + k;

                if (!want[v][0])
                        continue;
                cr_assert(lt(u32, i, c.n), "[%u, %u): row %u missing", lo, hi, v);
                cr_assert(eq(u64, c.keys[i], v), "[%u, %u) %s: item %u", lo, hi,
                          reverse ? "down" : "up", i);
                cr_assert(eq(str, c.vals[i], want[v]), "row %u", v);
                i++;
        }
        cr_assert(eq(u32, c.n, i), "[%u, %u): extra rows", lo, hi);
}

/* Every read of the ordered table: gets, whole and bounded scans (within
 * each half, across the split point), up and down. */
static inline void check_all(void)
{
        check_gets();
        check_scan(0, N_ROWS, false);
        check_scan(0, N_ROWS, true);
        check_scan(0, MID, false);
        check_scan(MID, N_ROWS, false);
        check_scan(MID - 700, MID + 900, false);
        check_scan(MID - 700, MID + 900, true);
}

/* The files the manifest names for tablet id, into ids (cap 64); how many. */
static inline uint32_t files_of(uint32_t id, uint64_t *ids)
{
        const struct eng_manifest_state *st = eng_manifest_state(sh->man);
        uint32_t n = 0;

        for (size_t i = 0; i < st->n_tables; i++)
                if (st->tables[i].tablet == id && n < 64)
                        ids[n++] = st->tables[i].file_id;
        return n;
}

static inline bool sst_exists(uint64_t file_id)
{
        char path[PATH_MAX + 32];

        snprintf(path, sizeof(path), "%s/%016" PRIx64 ".sst", dir, file_id);
        return access(path, F_OK) == 0;
}

/* Whether a table of tablet id holds a key outside its range. */
static inline bool reaches_out(uint32_t id)
{
        const struct eng_tablet *t = shard_tablet_by_id(sh, id);

        cr_assert(not(eq(ptr, (void *)t, NULL)), "no tablet %u", id);
        for (uint32_t i = 0; t->tset && i < t->tset->n; i++) {
                const struct eng_sst_props *p =
                        eng_sst_reader_props(eng_sst_table_reader(t->tset->e[i].t));

                if (p->n_entries &&
                    (eng_key_cmp(p->smallest, p->smallest_len, t->start, t->start_len) < 0 ||
                     eng_key_cmp(p->largest, p->largest_len, t->end, t->end_len) >= 0))
                        return true;
        }
        return false;
}

static inline void on_flushed(void *arg, int res)
{
        int *st = arg;

        *st = res == 0 ? 1 : res;
}

/* Runs the loop until *st is set (a callback ran), for at most ms. */
static inline void wait_flag(const int *st, unsigned ms)
{
        for (unsigned i = 0; i < ms && !*st; i++)
                run_for_ms(1);
        cr_assert(ne(int, *st, 0), "waited %u ms for a callback", ms);
}

static inline int major_compact_sync(void)
{
        int st = 0;

        cr_assert(eq(int, eng_shard_compact(sh, on_flushed, &st), 0));
        wait_flag(&st, 60000);
        return st == 1 ? 0 : st;
}

/* Installs cat, asking again while a split tablet's flush or compaction
 * runs (-EBUSY: it starts no new one meanwhile). */
static inline void install_when_idle(void)
{
        int r;

        for (unsigned i = 0; i < 30000 && (r = eng_shard_set_catalog(sh, cat)) == -EBUSY; i++)
                run_for_ms(1);
        cr_assert(eq(int, r, 0));
        cr_assert(eq(u64, eng_catalog_version(eng_shard_catalog(sh)), eng_catalog_version(cat)));
}

#endif
