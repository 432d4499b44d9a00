/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's scans and compactions (engine/shard.h) on real files through
 * the fault-injecting fs, against a model of the newest version of every
 * key: scans return exactly the live keys in order across memtables and
 * SSTables, in pages with resume positions, with bounds, on both tables
 * and with a cold cache; background compactions keep the table count down
 * and the newest version of each key, keep tombstones that still hide
 * older versions, and survive power cuts; a major compaction leaves one
 * table per tablet and drops tombstones and expired versions; a failed
 * compaction leaves the data as it was.
 */
#include "engine/shard_internal.h"
#include "tests/engine/shard_helpers.h"

#include <sys/stat.h>

#include "base/time.h"
#include "engine/compaction.h"

TestSuite(shard_lsm, .init = setup, .fini = teardown, .timeout = 120);

enum { NKEYS = 600 };

/* The model, per table and key: the value's version (0 = absent) and
 * expiry. model_ver and model_exp point at the ordered table's. */
static uint32_t models_ver[ENG_TABLE_MAX][NKEYS];
static uint64_t models_exp[ENG_TABLE_MAX][NKEYS];
static uint32_t *const model_ver = models_ver[ENG_TABLE_ORDERED];
static uint64_t *const model_exp = models_exp[ENG_TABLE_ORDERED];

static void key_of(uint32_t i, char *buf)
{
        snprintf(buf, 16, "key%05u", i);
}

/* Value bytes follow from (key, version); length varies with both. */
static uint32_t value_of(uint32_t i, uint32_t ver, char *buf)
{
        uint32_t len = 8 + (i * 7 + ver * 13) % 90;

        for (uint32_t j = 0; j < len; j++)
                buf[j] = (char)('a' + (i + ver + j) % 26);
        return len;
}

static void put_t(enum eng_table t, uint32_t i, uint32_t ver, uint64_t expiry)
{
        char k[16], v[128];
        struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = t, .key = k, .expiry_ms = expiry };

        key_of(i, k);
        m.key_len = (uint32_t)strlen(k);
        m.value = v;
        m.value_len = value_of(i, ver, v);
        cr_assert(eq(int, write_sync(&m, 1), 0));
        models_ver[t][i] = ver;
        models_exp[t][i] = expiry;
}

static void del_t(enum eng_table t, uint32_t i)
{
        char k[16];
        struct eng_mutation m = { .kind = ENG_MUT_DEL, .table = t, .key = k };

        key_of(i, k);
        m.key_len = (uint32_t)strlen(k);
        cr_assert(eq(int, write_sync(&m, 1), 0));
        models_ver[t][i] = 0;
}

static bool model_live(uint32_t i, uint64_t now_ms)
{
        return model_ver[i] && !(model_exp[i] && model_exp[i] <= now_ms);
}

/* ---- scanning ---- */

struct collect {
        struct eng_scan sc;
        enum eng_table table;
        uint32_t keys[NKEYS + 1];
        uint32_t n;
        uint8_t last_pos[64];
        uint32_t last_pos_len;
        bool done;
        int res;
        int fail_after;                 /* item returns -EIO after this many; <0 never */
};

static int on_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct collect *c = sc->ctx;
        const uint32_t *ver = models_ver[c->table];
        unsigned i;
        char want[128], k[16];

        if (c->fail_after >= 0 && c->n == (uint32_t)c->fail_after)
                return -EIO;
        cr_assert(lt(u32, c->n, NKEYS), "more items than keys");
        cr_assert(eq(int, sscanf((const char *)it->key, "key%5u", &i), 1));
        key_of(i, k);
        cr_assert(eq(u32, it->key_len, (uint32_t)strlen(k)));
        cr_assert(lt(u32, i, (unsigned)NKEYS));
        /* Positions strictly increase, also across pages. */
        cr_assert(le(u32, it->pos_len, (uint32_t)sizeof(c->last_pos)));
        if (c->last_pos_len)
                cr_assert(lt(int, eng_key_cmp(c->last_pos, c->last_pos_len, it->pos, it->pos_len), 0),
                          "positions out of order at %s", k);
        memcpy(c->last_pos, it->pos, it->pos_len);
        c->last_pos_len = it->pos_len;
        cr_assert(not(eq(u32, ver[i], 0)), "%s is deleted but scanned", k);
        cr_assert(eq(u32, it->value_len, value_of(i, ver[i], want)), "%s", k);
        cr_assert(eq(int, memcmp(it->value, want, it->value_len), 0), "%s: value", k);
        cr_assert(eq(u64, it->expiry_ms, models_exp[c->table][i]), "%s", k);
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
static int scan_page(struct collect *c, enum eng_table t, const void *start, uint32_t start_len,
                     const void *end, uint32_t end_len, uint32_t limit)
{
        int r;

        c->sc.item = on_item;
        c->sc.done = on_scan;
        c->sc.ctx = c;
        c->table = t;
        c->done = false;
        r = eng_shard_scan(sh, t, start, start_len, end, end_len, limit, &c->sc);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &c->done), 0));
                r = c->res;
        }
        return r;
}

/* Scans [start, end) of t in pages of `limit`; returns the pages taken. */
static uint32_t scan_all(struct collect *c, enum eng_table t, const char *start, const char *end,
                         uint32_t limit)
{
        uint8_t pos[64], endpos[64];
        uint32_t pages = 0, start_len = 0, end_len = 0;

        memset(c, 0, sizeof(*c));
        c->fail_after = -1;
        if (start)
                start_len = (uint32_t)eng_shard_scan_pos(sh, t, start, (uint32_t)strlen(start), pos);
        if (end)
                end_len = (uint32_t)eng_shard_scan_pos(sh, t, end, (uint32_t)strlen(end), endpos);
        cr_assert(eq(int, scan_page(c, t, pos, start_len, end ? endpos : NULL, end_len, limit), 0));
        for (pages = 1; c->sc.more; pages++) {
                cr_assert(le(u32, c->sc.n, limit));
                cr_assert(lt(u32, pages, 2 * NKEYS + 4), "scan does not end");
                /* The resume position is owned by sc: pass it back in. */
                cr_assert(eq(int, scan_page(c, t, c->sc.resume, c->sc.resume_len,
                                            end ? endpos : NULL, end_len, limit), 0));
        }
        eng_scan_release(&c->sc);
        return pages;
}

/* The ordered table's scan of [lo, hi) (key indexes; hi NKEYS = no end)
 * matches the model exactly. */
static void expect_ordered_scan(uint32_t lo, uint32_t hi, uint32_t limit)
{
        struct collect *c = calloc(1, sizeof(*c));
        char ks[16], ke[16];
        uint64_t now = time_wall_ns() / 1000000;
        uint32_t n = 0;

        key_of(lo, ks);
        key_of(hi, ke);
        scan_all(c, ENG_TABLE_ORDERED, lo ? ks : NULL, hi < NKEYS ? ke : NULL, limit);
        for (uint32_t i = lo; i < hi; i++) {
                if (!model_live(i, now))
                        continue;
                cr_assert(lt(u32, n, c->n), "key%05u missing from the scan", i);
                cr_assert(eq(u32, c->keys[n], i), "scan gave key%05u where key%05u was due",
                          c->keys[n], i);
                n++;
        }
        cr_assert(eq(u32, c->n, n), "extra keys in the scan");
        free(c);
}

/* A random history over the ordered table: puts, overwrites, deletes and
 * expiring values (some already expired), flushed now and then. */
static void random_history(uint64_t seed, uint32_t ops, uint32_t flush_every)
{
        uint64_t now = time_wall_ns() / 1000000;

        for (uint32_t op = 1; op <= ops; op++) {
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                uint32_t i = (uint32_t)(seed >> 33) % NKEYS, r = (uint32_t)(seed >> 20) % 10;

                if (r < 2)
                        del_t(ENG_TABLE_ORDERED, i);
                else if (r == 2)
                        put_t(ENG_TABLE_ORDERED, i, op, now - 1000);    /* expired */
                else if (r == 3)
                        put_t(ENG_TABLE_ORDERED, i, op, now + 3600 * 1000);
                else
                        put_t(ENG_TABLE_ORDERED, i, op, 0);
                if (op % flush_every == 0)
                        cr_assert(eq(int, flush_sync(), 0));
        }
}

Test(shard_lsm, scans_give_live_keys_in_order_across_memtables_and_sstables)
{
        opts.no_compaction = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_ordered_scan(0, NKEYS, 1000);    /* empty */
        random_history(1, 3000, 500);           /* last 500 ops in the memtable */
        expect_ordered_scan(0, NKEYS, 1000);
        expect_ordered_scan(0, NKEYS, 1);
        expect_ordered_scan(0, NKEYS, 7);
        expect_ordered_scan(17, 333, 10);
        expect_ordered_scan(250, 251, 10);
        expect_ordered_scan(300, 300, 10);
        /* Cold: every table block read from the disk. */
        cr_assert(eq(int, reopen(), 0));
        expect_ordered_scan(0, NKEYS, 13);
        expect_ordered_scan(123, 456, 50);
}

Test(shard_lsm, scans_of_the_hashed_table_give_every_key_once_in_hash_order)
{
        struct collect *c = calloc(1, sizeof(*c));
        uint32_t seen[NKEYS] = { 0 }, live = 0;

        opts.no_compaction = true;
        opts.tablets_per_shard = 3;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < NKEYS; i++)
                put_t(ENG_TABLE_DEFAULT, i, 1, 0);
        cr_assert(eq(int, flush_sync(), 0));
        for (uint32_t i = 0; i < NKEYS; i += 3)
                del_t(ENG_TABLE_DEFAULT, i);
        for (uint32_t i = 0; i < NKEYS; i++)
                live += models_ver[ENG_TABLE_DEFAULT][i] != 0;
        /* on_item checks that positions (hash, key) increase. */
        scan_all(c, ENG_TABLE_DEFAULT, NULL, NULL, 9);
        cr_assert(eq(u32, c->n, live));
        for (uint32_t k = 0; k < c->n; k++)
                cr_assert(eq(u32, seen[c->keys[k]]++, 0), "key%05u twice", c->keys[k]);
        /* The ordered table is empty: the tables are apart. */
        scan_all(c, ENG_TABLE_ORDERED, NULL, NULL, 100);
        cr_assert(eq(u32, c->n, 0));
        free(c);
}

Test(shard_lsm, a_resume_position_picks_up_where_the_page_ended)
{
        struct collect *c = calloc(1, sizeof(*c));

        opts.no_compaction = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < 20; i++)
                put_t(ENG_TABLE_ORDERED, i, 1, 0);
        c->fail_after = -1;
        cr_assert(eq(int, scan_page(c, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 5), 0));
        cr_assert(eq(u32, c->sc.n, 5));
        cr_assert(c->sc.more);
        cr_assert(eq(u32, c->sc.resume_len, 8));
        cr_assert(eq(int, memcmp(c->sc.resume, "key00005", 8), 0));
        /* The last page: exactly the rest, and no resume. */
        cr_assert(eq(int, scan_page(c, ENG_TABLE_ORDERED, c->sc.resume, c->sc.resume_len, NULL, 0,
                                    15), 0));
        cr_assert(eq(u32, c->sc.n, 15));
        cr_assert(not(c->sc.more));
        cr_assert(eq(ptr, c->sc.resume, NULL));
        eng_scan_release(&c->sc);
        free(c);
}

Test(shard_lsm, bad_scans_are_refused_and_an_item_error_ends_the_scan)
{
        struct collect *c = calloc(1, sizeof(*c));

        opts.no_compaction = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < 50; i++)
                put_t(ENG_TABLE_ORDERED, i, 1, 0);
        c->fail_after = -1;
        c->sc.item = on_item;
        c->sc.ctx = c;
        cr_assert(eq(int, eng_shard_scan(sh, 1000, NULL, 0, NULL, 0, 5, &c->sc), -SCREE_ENOTFOUND));
        cr_assert(eq(int, eng_shard_scan(sh, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 0, &c->sc), -EINVAL));
        cr_assert(eq(int, eng_shard_scan(sh, ENG_TABLE_ORDERED, "x", ENG_MAX_USER_KEY_BYTES + 9, NULL,
                                         0, 5, &c->sc), -EINVAL));
        c->fail_after = 10;
        cr_assert(eq(int, scan_page(c, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 100), -EIO));
        cr_assert(eq(u32, c->n, 10));
        /* Same from the disk, where the error comes from the loop. */
        cr_assert(eq(int, flush_sync(), 0));
        cr_assert(eq(int, reopen(), 0));
        c->n = 0;
        c->last_pos_len = 0;
        cr_assert(eq(int, scan_page(c, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 100), -EIO));
        cr_assert(eq(u32, c->n, 10));
        free(c);
}

static int compact_sync(void)
{
        op_done = false;
        cr_assert(eq(int, eng_shard_compact(sh, on_closed, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &op_done), 0));
        return op_res;
}

/* Writes that land while a scan waits for the disk do not upset it. */
Test(shard_lsm, a_scan_goes_on_while_writes_flushes_and_compactions_change_the_tablet)
{
        struct collect *c = calloc(1, sizeof(*c));
        uint32_t pages = 0, ahead = 0;

        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t round = 0; round < 6; round++) {
                for (uint32_t i = 0; i < NKEYS; i += 2)
                        put_t(ENG_TABLE_ORDERED, i, 1, 0);
                cr_assert(eq(int, flush_sync(), 0));
        }
        cr_assert(eq(int, reopen(), 0));
        c->fail_after = -1;
        cr_assert(eq(int, scan_page(c, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 25), 0));
        while (c->sc.more && pages++ < NKEYS) {
                /* Between pages: odd keys appear ahead, then get flushed. */
                if (50 * pages + 61 < NKEYS) {
                        put_t(ENG_TABLE_ORDERED, 50 * pages + 61, 2, 0);
                        ahead++;
                }
                if (pages % 4 == 0)
                        cr_assert(eq(int, flush_sync(), 0));
                if (pages == 6)         /* and a compaction, whatever the background did */
                        cr_assert(eq(int, compact_sync(), 0));
                cr_assert(eq(int, scan_page(c, ENG_TABLE_ORDERED, c->sc.resume, c->sc.resume_len,
                                            NULL, 0, 25), 0));
        }
        /* Every even key, and the odd ones written ahead of the scan. */
        cr_assert(eq(u32, c->n, NKEYS / 2 + ahead));
        cr_assert(gt(u64, eng_shard_stats(sh)->compactions, 0));
        eng_scan_release(&c->sc);
        free(c);
}

/* ---- compaction ---- */

/* Point reads of every key of the ordered table match the model. */
static void expect_ordered_gets(void)
{
        uint64_t now = time_wall_ns() / 1000000;

        for (uint32_t i = 0; i < NKEYS; i++) {
                struct rd x;
                char k[16], want[128];
                int r;

                key_of(i, k);
                r = get_wait(ENG_TABLE_ORDERED, k, (uint32_t)strlen(k), &x);
                if (!model_live(i, now)) {
                        cr_assert(eq(int, r, -SCREE_ENOTFOUND), "%s should be absent: %d", k, r);
                        continue;
                }
                cr_assert(eq(int, r, 0), "%s: %d", k, r);
                cr_assert(eq(u32, x.g.value_len, value_of(i, model_ver[i], want)), "%s", k);
                cr_assert(eq(int, memcmp(x.g.value, want, x.g.value_len), 0), "%s", k);
                eng_get_release(&x.g);
        }
}

static void background_compactions(uint32_t readahead)
{
        opts.compaction_rate = UINT64_MAX;
        opts.compaction_readahead = readahead;
        cr_assert(eq(int, shard_open_sync(), 0));
        random_history(7, 6000, 150);           /* 40 flushes into one tablet */
        expect_ordered_gets();
        expect_ordered_scan(0, NKEYS, 64);
        cr_assert(gt(u64, eng_shard_stats(sh)->compactions, 0));
        cr_assert(eq(u64, eng_shard_stats(sh)->compaction_errors, 0));
        /* The time compactions ran is counted, and only grows. */
        {
                uint64_t ns = eng_shard_stats(sh)->compaction_ns;

                cr_assert(gt(u64, ns, 0));
                cr_assert(ge(u64, eng_shard_stats(sh)->compaction_ns, ns));
        }
        /* Close waits for the compaction in progress. */
        cr_assert(eq(int, reopen(), 0));
        cr_assert(le(u32, count_files(".sst"), ENG_COMPACT_DEFAULT_MAX_TABLES));
        expect_ordered_gets();
        expect_ordered_scan(0, NKEYS, 1000);
}

/* The inputs streamed in the default chunks, a page a read, or block by
 * block through the cache: the same history and the same answers. */
Test(shard_lsm, background_compactions_keep_the_newest_version_and_few_tables)
{
        background_compactions(0);
}

Test(shard_lsm, background_compactions_reading_a_page_at_a_time)
{
        background_compactions(4096);
}

Test(shard_lsm, background_compactions_reading_through_the_cache)
{
        background_compactions(ENG_COMPACT_READ_CACHED);
}

Test(shard_lsm, a_compaction_readahead_of_part_pages_is_refused)
{
        opts.compaction_readahead = 1000;
        cr_expect(eq(int, eng_shard_open(loop, fs, &opts, on_open, NULL), -EINVAL));
}

/* A compaction of newer tables that leaves an older one out must keep the
 * tombstones: they still hide the older table's versions. */
Test(shard_lsm, a_compaction_above_older_tables_keeps_tombstones)
{
        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < NKEYS; i++)
                put_t(ENG_TABLE_ORDERED, i, 1, 0);
        cr_assert(eq(int, flush_sync(), 0));    /* the big, oldest table */
        for (uint32_t f = 0; f < 4; f++) {      /* four small ones of one size */
                for (uint32_t i = 0; i < 10; i++) {
                        if (f == 2 && i == 5)
                                del_t(ENG_TABLE_ORDERED, 77);
                        else
                                put_t(ENG_TABLE_ORDERED, 100 + f * 10 + i, 2, 0);
                }
                cr_assert(eq(int, flush_sync(), 0));
        }
        cr_assert(eq(int, reopen(), 0));        /* waits for the compaction */
        cr_assert(eq(u32, count_files(".sst"), 2), "the four small tables were not merged");
        expect_ordered_gets();                  /* key 77 stays deleted */
        expect_ordered_scan(0, NKEYS, 100);
}

static bool cut_now;

/* Keys "big%05u" with 1000-byte values, outside the model's key range. */
static void put_big(uint32_t i)
{
        char k[16], v[1000];
        struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = ENG_TABLE_ORDERED, .key = k,
                                  .value = v, .value_len = sizeof(v) };

        snprintf(k, sizeof(k), "big%05u", i);
        m.key_len = (uint32_t)strlen(k);
        memset(v, 'a' + (int)(i % 26), sizeof(v));
        cr_assert(eq(int, write_sync(&m, 1), 0));
}

static void expect_big(uint32_t i)
{
        char k[16];
        struct rd x;
        int r;

        snprintf(k, sizeof(k), "big%05u", i);
        r = get_wait(ENG_TABLE_ORDERED, k, (uint32_t)strlen(k), &x);
        cr_assert(eq(int, r, 0), "%s: %d", k, r);
        cr_assert(eq(u32, x.g.value_len, 1000), "%s", k);
        cr_assert(eq(int, ((const char *)x.g.value)[999], 'a' + (int)(i % 26)), "%s", k);
        eng_get_release(&x.g);
}

/* A flush that lands while a compaction runs puts its table in front of
 * the inputs; the set the compaction publishes must still hold a reference
 * to the table behind them. Regression: the references went to the tables
 * at the new set's positions in the old set, so the oldest table was
 * closed while a get could still reach it. */
Test(shard_lsm, a_flush_during_a_compaction_keeps_the_tables_behind_its_inputs)
{
        opts.compaction_rate = 256 << 10;       /* the output's second chunk waits ~1 s */
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < 1000; i++)     /* the oldest table, ~1 MB */
                put_big(i);
        cr_assert(eq(int, flush_sync(), 0));
        for (uint32_t i = 1000; i < 1400; i++) {        /* four of ~100 KB: the 4th starts it */
                put_big(i);
                if (i % 100 == 99)
                        cr_assert(eq(int, flush_sync(), 0));
        }
        for (uint32_t i = 2000; i < 2010; i++)
                put_big(i);
        cr_assert(eq(int, flush_sync(), 0));
        cr_assert(eq(u64, eng_shard_stats(sh)->compactions, 0),
                  "the compaction ended before the flush: the test needs a lower rate");
        /* The compaction ends (throttled: seconds) and its inputs are
         * unlinked; a fixed 20 ms used to stand for the last unlink. */
        TEST_RUN_UNTIL(loop, eng_shard_stats(sh)->compactions == 1 && count_files(".sst") == 3);
        cr_assert(eq(u64, eng_shard_stats(sh)->sstables, 3));
        for (uint32_t i = 0; i < 1400; i++)
                expect_big(i);
        for (uint32_t i = 2000; i < 2010; i++)
                expect_big(i);
        cr_assert(eq(int, reopen(), 0));
        expect_big(0);
        expect_big(1399);
}

Test(shard_lsm, a_major_compaction_leaves_one_table_and_drops_the_dead)
{
        opts.no_compaction = true;              /* only the major one */
        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        random_history(11, 3000, 300);
        for (uint32_t i = 0; i < 50; i++)
                put_t(ENG_TABLE_DEFAULT, i, 1, 0);
        cr_assert(ge(u32, count_files(".sst"), 10));
        cr_assert(eq(int, compact_sync(), 0));
        /* Two tablets hold data: the ordered one and one hashed (at most
         * four: the hashed keys spread over the default table's tablets). */
        cr_assert(le(u32, count_files(".sst"), 1 + ENG_SHARD_DEFAULT_TABLETS));
        expect_ordered_gets();
        expect_ordered_scan(0, NKEYS, 100);
        cr_assert(eq(int, reopen(), 0));
        expect_ordered_gets();

        /* Everything deleted or expired: nothing is left on the disk. */
        uint64_t soon = time_wall_ns() / 1000000 + 200;

        for (uint32_t i = 0; i < NKEYS; i++) {
                if (i % 2)
                        del_t(ENG_TABLE_ORDERED, i);
                else
                        put_t(ENG_TABLE_ORDERED, i, 9, soon);
        }
        for (uint32_t i = 0; i < 50; i++)
                del_t(ENG_TABLE_DEFAULT, i);
        cr_assert(eq(int, flush_sync(), 0));
        while (time_wall_ns() / 1000000 <= soon + 10)
                usleep(20 * 1000);
        cr_assert(eq(int, compact_sync(), 0));
        cr_assert(eq(u32, count_files(".sst"), 0), "dead versions survived a major compaction");
        expect_ordered_scan(0, NKEYS, 100);
        cr_assert(eq(int, reopen(), 0));
        expect_ordered_gets();
}

Test(shard_lsm, a_failed_compaction_leaves_the_data_and_the_next_one_works)
{
        opts.no_compaction = true;
        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        random_history(5, 2000, 250);
        cr_assert(eq(int, flush_sync(), 0));
        unsigned before = count_files(".sst");

        /* The next write must be the compaction's: let the log and the
         * manifest write their sync marks (or anything else they have
         * to) first. Regression: a mark took the failure now and then
         * and stopped writes. */
        TEST_RUN_UNTIL(loop, eng_wal_is_quiet(sh->wal) && eng_manifest_is_quiet(sh->man));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        cr_assert(eq(int, compact_sync(), -EIO));
        cr_assert(eq(u64, eng_shard_stats(sh)->compaction_errors, 1));
        cr_assert(eq(u32, count_files(".sst"), before), "a partial output was left");
        cr_assert(eq(int, eng_shard_error(sh), 0), "a failed compaction stopped writes");
        expect_ordered_gets();
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_assert(eq(int, reopen(), 0));        /* cold cache: the compaction must read */
        eng_fault_fs_fail(fs, ENG_FS_READ, EIO, 1);
        cr_assert(eq(int, compact_sync(), -EIO));
        cr_assert(eq(int, compact_sync(), 0));
        cr_assert(eq(u32, count_files(".sst"), 1));
        expect_ordered_gets();
        put_t(ENG_TABLE_ORDERED, 3, 99999, 0);
        expect_ordered_gets();
}



static void on_cut_timer(struct rx_loop *l, struct rx_timer *t)
{
        (void)l;
        (void)t;
        cut_now = true;
}

static void on_compacted(void *arg, int res)
{
        (void)arg;
        (void)res;
        cut_now = true;
}

/* Power cuts at random moments of a major compaction (throttled, so the
 * cut lands mid-merge, mid-manifest edit or mid-delete): every write (all
 * were acknowledged) is there after each. */
Test(shard_lsm, power_cuts_during_compactions_lose_nothing)
{
        uint64_t seed = 1;

        opts.compaction_rate = 8 << 20;
        for (uint32_t round = 0; round < 8; round++) {
                struct rx_timer timer = { .fn = on_cut_timer, .name = "cut" };

                cr_assert(eq(int, shard_open_sync(), 0));
                random_history(seed + round, 800, 100);
                cut_now = false;
                cr_assert(eq(int, eng_shard_compact(sh, on_compacted, NULL), 0));
                seed = seed * 6364136223846793005u + 1442695040888963407u;
                cr_assert(eq(int, rx_timer_arm_after(loop, &timer, (seed >> 40) % 30000000), 0));
                cr_assert(eq(int, rx_loop_run_until(loop, &cut_now), 0));
                rx_timer_cancel(loop, &timer);
                cr_assert(eq(int, eng_fault_fs_power_cut(fs, round % 2, seed), 0));
                shard_close_sync();     /* the major compaction ends with an error */
                eng_fs_free(fs);
                fs = eng_fault_fs_new(loop);
                cr_assert(eq(int, shard_open_sync(), 0));
                expect_ordered_gets();
                expect_ordered_scan(0, NKEYS, 200);
                shard_close_sync();
        }
}

/* The bytes of every file in the shard directory ending in ext. */
static uint64_t files_bytes(const char *ext)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        uint64_t bytes = 0;

        cr_assert(not(eq(ptr, d, NULL)));
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char path[PATH_MAX + 300];
                struct stat st;

                if (len <= 4 || strcmp(de->d_name + len - 4, ext) != 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                cr_assert(eq(int, stat(path, &st), 0));
                bytes += (uint64_t)st.st_size;
        }
        closedir(d);
        return bytes;
}

static void expect_table_stats_match_the_files(void)
{
        const struct eng_shard_stats *st = eng_shard_stats(sh);

        cr_assert(eq(u64, st->sstables, count_files(".sst")));
        cr_assert(eq(u64, st->sstable_bytes, files_bytes(".sst")));
}

Test(shard_lsm, table_stats_follow_flushes_compactions_and_reopen)
{
        opts.no_compaction = true;
        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(u64, eng_shard_stats(sh)->sstables, 0));
        cr_assert(eq(u64, eng_shard_stats(sh)->sstable_bytes, 0));
        for (uint32_t round = 0; round < 3; round++) {
                for (uint32_t i = 0; i < 100; i++)
                        put_t(ENG_TABLE_ORDERED, i, round + 1, 0);
                cr_assert(eq(int, flush_sync(), 0));
                expect_table_stats_match_the_files();
        }
        cr_assert(ge(u64, eng_shard_stats(sh)->sstables, 3));
        cr_assert(eq(int, compact_sync(), 0));
        expect_table_stats_match_the_files();
        cr_assert(eq(u64, eng_shard_stats(sh)->sstables, 1));
        /* The log and the cache report through the same stats. */
        cr_assert(gt(u64, eng_shard_stats(sh)->log_bytes_written, 0));
        cr_assert(eq(int, reopen(), 0));
        expect_table_stats_match_the_files();
        expect_ordered_gets();
        cr_assert(gt(u64, eng_shard_stats(sh)->cache_hits + eng_shard_stats(sh)->cache_misses, 0));
}

/* ---- a damaged SSTable block (issue 23) ---- */

/* The path of the shard's SSTable with the lowest file id. */
static void oldest_sst(char *path, size_t cap, uint64_t *ret_id)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        char best[64] = "";

        cr_assert(not(eq(ptr, d, NULL)));
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);

                if (len == 20 && strcmp(de->d_name + 16, ".sst") == 0 &&
                    (!best[0] || strcmp(de->d_name, best) < 0))
                        memcpy(best, de->d_name, len + 1);      /* 20 bytes and the NUL */
        }
        closedir(d);
        cr_assert(best[0] != 0, "no SSTable in %s", dir);
        snprintf(path, cap, "%s/%s", dir, best);
        *ret_id = strtoull(best, NULL, 16);
}

/* Gets every ordered key: those in the damaged block (data block 1 of
 * file_id) fail with the block named, the others match the model.
 * Returns how many failed. */
static uint32_t gets_around_damage(uint64_t file_id)
{
        uint32_t failed = 0, first = NKEYS, last = 0;

        for (uint32_t i = 0; i < NKEYS; i++) {
                struct rd x;
                char k[16], want[128];
                int r;

                key_of(i, k);
                r = get_wait(ENG_TABLE_ORDERED, k, (uint32_t)strlen(k), &x);
                if (r == -SCREE_ECORRUPT) {
                        cr_expect(eq(u64, x.g.damage.file_id, file_id), "%s", k);
                        cr_expect(eq(u64, x.g.damage.offset, 4096), "%s", k);
                        cr_expect(eq(u32, x.g.damage.size, 4096), "%s", k);
                        cr_expect(eq(u32, x.g.damage.block, 1), "%s", k);
                        cr_expect(eq(str, (char *)x.g.damage.what, ENG_SST_DAMAGE_BLOCK));
                        failed++;
                        first = i < first ? i : first;
                        last = i;
                        continue;
                }
                cr_assert(eq(int, r, 0), "%s: %d", k, r);
                cr_assert(eq(u32, x.g.value_len, value_of(i, model_ver[i], want)), "%s", k);
                cr_assert(eq(int, memcmp(x.g.value, want, x.g.value_len), 0), "%s", k);
                eng_get_release(&x.g);
        }
        cr_assert(gt(u32, failed, 0), "no key read the damaged block");
        cr_expect(eq(u32, last - first + 1, failed), "the failed keys are one block's run");
        return failed;
}

/* Scans the ordered table in pages of 50, skipping damaged blocks or not;
 * returns the scan's result, with c holding what it gave. */
static int scan_damaged(struct collect *c, bool skip)
{
        int r;

        memset(c, 0, sizeof(*c));
        c->fail_after = -1;
        c->sc.skip_damaged = skip;
        r = scan_page(c, ENG_TABLE_ORDERED, NULL, 0, NULL, 0, 50);
        while (r == 0 && c->sc.more) {
                uint32_t damaged = c->sc.damaged;
                struct eng_sst_damage d = c->sc.damage;

                r = scan_page(c, ENG_TABLE_ORDERED, c->sc.resume, c->sc.resume_len, NULL, 0, 50);
                if (damaged && !c->sc.damaged) {        /* keep the page's that met it */
                        c->sc.damaged = damaged;
                        c->sc.damage = d;
                }
        }
        eng_scan_release(&c->sc);
        return r;
}

Test(shard_lsm, issue23_a_damaged_block_fails_only_its_keys_scans_skip_it_compactions_keep_it)
{
        struct collect *c = calloc(1, sizeof(*c));
        char path[PATH_MAX + 32];
        uint64_t file_id;
        uint32_t failed;
        unsigned tables;

        opts.no_compaction = true;
        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < NKEYS; i++)
                put_t(ENG_TABLE_ORDERED, i, 1, 0);
        cr_assert(eq(int, flush_sync(), 0));
        oldest_sst(path, sizeof(path), &file_id);
        for (uint32_t i = NKEYS - 100; i < NKEYS; i++)  /* a newer table, far from block 1 */
                put_t(ENG_TABLE_ORDERED, i, 2, 0);
        cr_assert(eq(int, flush_sync(), 0));
        tables = count_files(".sst");
        cr_assert(eq(u32, tables, 2));
        engine_test_flip_byte(path, 4096 + 300);
        cr_assert(eq(int, reopen(), 0));        /* cold cache; opening reads no data block */

        /* Gets: only the keys of the damaged block fail, naming it. */
        failed = gets_around_damage(file_id);
        cr_expect(eq(u64, eng_shard_stats(sh)->corrupt_blocks, 1), "counted once");
        cr_expect(eq(u64, eng_shard_stats(sh)->corrupt_reads, failed));
        failed = gets_around_damage(file_id);   /* never cached: fails again */
        cr_expect(eq(u64, eng_shard_stats(sh)->corrupt_blocks, 1));

        /* A skipping scan gives every other key, and says what it skipped. */
        cr_assert(eq(int, scan_damaged(c, true), 0));
        cr_expect(eq(u32, c->n, NKEYS - failed));
        cr_expect(eq(u32, c->sc.damaged, 1));
        cr_expect(eq(u64, c->sc.damage.file_id, file_id));
        cr_expect(eq(u64, c->sc.damage.offset, 4096));
        /* A strict one fails there, naming it. */
        cr_expect(eq(int, scan_damaged(c, false), -SCREE_ECORRUPT));
        cr_expect(eq(u64, c->sc.damage.file_id, file_id));
        cr_expect(eq(u64, c->sc.damage.offset, 4096));

        /* A compaction that meets it fails and keeps its inputs... */
        cr_assert(eq(int, reopen(), 0));        /* the damage is not known yet */
        cr_expect(eq(int, compact_sync(), -SCREE_ECORRUPT));
        cr_expect(eq(u64, eng_shard_stats(sh)->compaction_errors, 1));
        cr_expect(eq(u32, count_files(".sst"), tables), "inputs kept, no output left");
        /* ... and is not tried again on the damaged table. */
        cr_expect(eq(int, compact_sync(), -SCREE_ECORRUPT));
        run_for_ms(50);
        cr_expect(eq(u64, eng_shard_stats(sh)->compaction_errors, 1), "retried");
        cr_expect(eq(u32, gets_around_damage(file_id), failed));
        free(c);
}
