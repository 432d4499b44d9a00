/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shard routing by the catalog: tables created and dropped at run time
 * (eng_shard_set_catalog), their rows written, read, scanned, flushed and
 * replayed, and a dropped table's data removed -- at once, or by the next
 * open when a crash came first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/tuple.h"
#include "tests/engine/shard_catalog_helpers.h"
#include "tests/engine/shard_helpers.h"

TestSuite(shard_catalog, .init = setup, .fini = teardown);

/* The first catalog of a 2-shard directory, opened as shard 0. */
static void open_two_shards(void)
{
        opts.n_shards = 2;
        opts.shard = 0;
        cr_assert(eq(int, eng_catalog_initial(2, 4, &cat), 0));
        opts.catalog = cat;
        cr_assert(eq(int, shard_open_sync(), 0));
}

static void drop_table(const char *path)
{
        struct eng_catalog *next;
        char err[256];

        cr_assert(eq(int, eng_catalog_drop_table(cat, path, &next, err, sizeof(err)), 0), "%s", err);
        eng_catalog_unref(cat);
        cat = next;
}

/* Whether table id's key v is this shard's (shard 0 of 2). */
static bool ours(uint32_t table, uint64_t v)
{
        const struct eng_catalog_table *t;
        uint8_t k[16];
        size_t len = key_of(v, k);
        uint32_t i;

        cr_assert(eq(int, eng_catalog_table_by_id(cat, table, &t), 0));
        cr_assert(eq(int, eng_catalog_route_key(t, k, len, &i), 0));
        return t->tablets[i].shard == 0;
}

static int put_row(uint32_t table, uint64_t v, const char *val)
{
        uint8_t k[16];
        struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = table, .key = k,
                                  .value = val, .value_len = (uint32_t)strlen(val) };

        m.key_len = (uint32_t)key_of(v, k);
        return write_sync(&m, 1);
}

static int get_row(uint32_t table, uint64_t v, char *out, size_t cap)
{
        uint8_t k[16];

        return get_copy(table, k, (uint32_t)key_of(v, k), out, cap);
}

static void expect_row(uint32_t table, uint64_t v, const char *want)
{
        char buf[64];
        int r = get_row(table, v, buf, sizeof(buf));

        if (!want) {
                cr_expect(eq(int, r, -SCREE_ENOTFOUND), "row %llu: %d", (unsigned long long)v, r);
                return;
        }
        cr_assert(eq(int, r, 0), "row %llu: %d", (unsigned long long)v, r);
        cr_expect(eq(str, buf, (char *)want));
}

struct count {
        struct eng_scan sc;
        uint32_t n;
        uint64_t last;
        bool done, sorted;
        int res;
};

static int count_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct count *c = sc->ctx;
        struct eng_tuple_part p;
        uint8_t scratch[16];

        cr_assert(eq(int, eng_tuple_decode(it->key, it->key_len, &p, 1, scratch, sizeof(scratch)), 1));
        if (c->n && p.v.u64 <= c->last)
                c->sorted = false;
        c->last = p.v.u64;
        c->n++;
        return 0;
}

static void count_done(struct eng_scan *sc, int res)
{
        struct count *c = sc->ctx;

        c->done = true;
        c->res = res;
}

/* Rows of table this shard scans, in key order for an ordered table
 * (checked; a hashed one goes in hash order), or an error. */
static int scan_count(uint32_t table, uint32_t *ret)
{
        const struct eng_catalog_table *t = NULL;
        struct count c = { .sorted = true };
        int r;

        c.sc.item = count_item;
        c.sc.done = count_done;
        c.sc.ctx = &c;
        r = eng_shard_scan(sh, table, NULL, 0, NULL, 0, 100000, &c.sc);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &c.done), 0));
                r = c.res;
        }
        eng_scan_release(&c.sc);
        if (eng_catalog_table_by_id(cat, table, &t) == 0 && t->mode == ENG_CATALOG_ORDERED)
                cr_expect(c.sorted, "rows out of order");
        *ret = c.n;
        return r;
}

Test(shard_catalog, table_created_at_run_time_takes_rows_and_survives_a_restart)
{
        uint32_t id, n_ours = 0, n;

        open_two_shards();
        id = create_table("/scree/t", ENG_CATALOG_ORDERED, 8);
        /* Before the shard knows the table, its keys are refused. */
        cr_expect(eq(int, put_row(id, 1, "x"), -SCREE_ENOTFOUND));
        install();
        for (uint64_t v = 0; v < 400; v++) {
                uint64_t k = v * (UINT64_MAX / 400);
                char val[32];

                snprintf(val, sizeof(val), "v%llu", (unsigned long long)v);
                if (!ours(id, k)) {
                        cr_expect(eq(int, put_row(id, k, val), -SCREE_EMOVED), "another shard's key");
                        continue;
                }
                cr_assert(eq(int, put_row(id, k, val), 0));
                n_ours++;
                if (v == 200)
                        cr_assert(eq(int, flush_sync(), 0));
        }
        cr_assert(gt(u32, n_ours, 100));
        cr_assert(lt(u32, n_ours, 300), "tablets spread over both shards");
        cr_assert(eq(int, scan_count(id, &n), 0));
        cr_expect(eq(u32, n, n_ours));
        /* Restart with the catalog that holds the table: flushed rows and
         * replayed ones both come back. */
        cr_assert(eq(int, reopen_cat(), 0));
        for (uint64_t v = 0; v < 400; v++) {
                uint64_t k = v * (UINT64_MAX / 400);
                char val[32];

                snprintf(val, sizeof(val), "v%llu", (unsigned long long)v);
                if (ours(id, k))
                        expect_row(id, k, val);
        }
        cr_assert(eq(int, scan_count(id, &n), 0));
        cr_expect(eq(u32, n, n_ours));
        cat_fini();
}

Test(shard_catalog, a_dropped_table_reads_as_gone_and_its_files_go)
{
        uint32_t id, keep, n;

        open_two_shards();
        id = create_table("/scree/gone", ENG_CATALOG_ORDERED, 2);
        keep = create_table("/scree/kept", ENG_CATALOG_HASHED, 4);
        install();
        for (uint64_t v = 0; v < 200; v++) {
                if (ours(id, v << 56))
                        cr_assert(eq(int, put_row(id, v << 56, "gone"), 0));
                if (ours(keep, v))
                        cr_assert(eq(int, put_row(keep, v, "kept"), 0));
        }
        cr_assert(eq(int, flush_sync(), 0));
        cr_assert(eq(int, put_row(id, 0, "unflushed"), ours(id, 0) ? 0 : -SCREE_EMOVED));
        cr_assert(gt(u32, count_files(".sst"), 0));
        unsigned before = count_files(".sst");

        drop_table("/scree/gone");
        install();
        cr_expect(eq(int, put_row(id, 0, "x"), -SCREE_ENOTFOUND));
        cr_expect(eq(int, scan_count(id, &n), -SCREE_ENOTFOUND));
        /* Emptied in the background: wait for it, bounded by events. */
        for (unsigned i = 0; i < 10000 && eng_shard_holds_table(sh, id); i++)
                run_for_ms(1);
        cr_assert(not(eng_shard_holds_table(sh, id)), "the dropped table's tablets stay");
        cr_expect(lt(u32, count_files(".sst"), before), "its SSTables stay on disk");
        for (uint64_t v = 0; v < 200; v++)
                if (ours(keep, v))
                        expect_row(keep, v, "kept");
        /* A restart neither brings it back nor misreads its log records. */
        cr_assert(eq(int, reopen_cat(), 0));
        cr_expect(eq(int, scan_count(id, &n), -SCREE_ENOTFOUND));
        cr_assert(eq(int, scan_count(keep, &n), 0));
        cr_expect(gt(u32, n, 0));
        cat_fini();
}

Test(shard_catalog, an_open_leaves_out_a_dropped_table_a_crash_left_behind)
{
        uint32_t id, n;
        unsigned with;

        open_two_shards();
        id = create_table("/scree/crashed", ENG_CATALOG_ORDERED, 2);
        install();
        for (uint64_t v = 0; v < 100; v++)
                if (ours(id, v << 57))
                        cr_assert(eq(int, put_row(id, v << 57, "x"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        for (uint64_t v = 0; v < 100; v++)
                if (ours(id, v << 57))
                        cr_assert(eq(int, put_row(id, v << 57, "in the log only"), 0));
        with = count_files(".sst");
        cr_assert(gt(u32, with, 0));
        /* The catalog dropped it, and the shard stopped before it heard. */
        shard_close_sync();
        drop_table("/scree/crashed");
        opts.catalog = cat;
        cr_assert(eq(int, shard_open_sync(), 0));
        cr_expect(not(eng_shard_holds_table(sh, id)));
        cr_expect(lt(u32, count_files(".sst"), with));
        cr_expect(eq(int, scan_count(id, &n), -SCREE_ENOTFOUND));
        cat_fini();
}

Test(shard_catalog, a_manifest_naming_a_tablet_the_catalog_never_made_is_refused)
{
        uint32_t id;
        struct eng_catalog *older;

        open_two_shards();
        older = eng_catalog_ref(cat);
        id = create_table("/scree/new", ENG_CATALOG_ORDERED, 2);
        install();
        for (uint64_t v = 0; v < 50; v++)
                if (ours(id, v << 58))
                        cr_assert(eq(int, put_row(id, v << 58, "x"), 0));
        cr_assert(eq(int, flush_sync(), 0));
        shard_close_sync();
        opts.catalog = older;   /* a catalog older than the data: never misread */
        cr_expect(eq(int, shard_open_sync(), -SCREE_ECORRUPT));
        eng_catalog_unref(older);
        cat_fini();
}

Test(shard_catalog, an_older_or_foreign_catalog_is_not_installed)
{
        struct eng_catalog *other;

        open_two_shards();
        create_table("/scree/a", ENG_CATALOG_ORDERED, 1);
        install();
        /* The same version again, or an older one: nothing changes. */
        cr_expect(eq(int, eng_shard_set_catalog(sh, cat), 0));
        cr_assert(eq(int, eng_catalog_initial(1, 4, &other), 0));
        cr_expect(eq(int, eng_shard_set_catalog(sh, other), -EINVAL));
        eng_catalog_unref(other);
        cat_fini();
}

static void flushed(void *arg, int res)
{
        int *st = arg;

        *st = res == 0 ? 1 : res;
}

/* Writes "first"/"second" to this shard's keys of table id (async). */
static unsigned write_ours(uint32_t id, const char *val, struct wr *w, unsigned nw)
{
        uint8_t k[16];

        for (uint64_t v = 0; v < 200; v++) {
                struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = id, .key = k,
                                          .value = val, .value_len = (uint32_t)strlen(val) };

                m.key_len = (uint32_t)key_of(v * (UINT64_MAX / 200), k);
                if (ours(id, v * (UINT64_MAX / 200)))
                        write_async(&w[nw++], &m, 1);
        }
        return nw;
}

/* Found by review: a flush waiter (SAVE, a major compaction) waiting for a
 * sealed memtable of a table dropped while another of its memtables was
 * being flushed was never answered. */
Test(shard_catalog, a_flush_waiter_is_answered_when_its_table_is_dropped_mid_flush)
{
        static struct wr w[400];
        uint32_t id;
        int d1 = 0, d2 = 0;
        unsigned nw;

        open_two_shards();
        id = create_table("/scree/w", ENG_CATALOG_ORDERED, 4);
        install();
        nw = write_ours(id, "first", w, 0);
        cr_assert(gt(u32, nw, 0));
        cr_assert(eq(int, eng_shard_flush(sh, flushed, &d1), 0));
        write_ours(id, "second", w, nw);
        /* The first memtable is being flushed; this seals a second. */
        cr_assert(eq(int, eng_shard_flush(sh, flushed, &d2), 0));
        drop_table("/scree/w");
        install();
        for (unsigned i = 0; i < 10000 && !(d1 && d2); i++)
                run_for_ms(1);
        cr_expect(eq(int, d1, 1), "first flush waiter: %d", d1);
        cr_expect(eq(int, d2, 1), "second flush waiter: %d", d2);
        for (unsigned i = 0; i < 10000 && eng_shard_holds_table(sh, id); i++)
                run_for_ms(1);
        cr_expect(not(eng_shard_holds_table(sh, id)));
        cat_fini();
}
