/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shard enforcing its tables' per-partition rate limits (shard.h,
 * "per-partition rate limits"): gets, writes, read-modify-writes and
 * prepared parts of two-phase commits refused past their partition's
 * limit and nothing done, a batch refused whole, a partition of a hashed
 * table being its hash prefix, other partitions and tables without limits
 * untouched, an aborted prepare giving its count back, limits changed by
 * a new catalog.
 *
 * The counts are per second of the clock: each scenario runs on fresh
 * partitions and is run again if the second changed while it ran (its
 * refusals then need not happen), so no result depends on the timing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "engine/catalog.h"
#include "engine/shard_xtxn.h"
#include "engine/tuple.h"
#include "tests/engine/shard_catalog_helpers.h"
#include "tests/engine/shard_helpers.h"

TestSuite(shard_ratelimit, .init = setup, .fini = teardown);

static uint32_t hashed_id, ordered_id, free_id;

/* A table of key (u64, u64): hashed on the first part, or ordered. */
static uint32_t create(const char *path, enum eng_catalog_key_mode mode, uint32_t reads,
                       uint32_t writes)
{
        static const enum eng_tuple_type parts[] = { ENG_TUPLE_U64, ENG_TUPLE_U64 };
        struct eng_catalog_table_spec spec = {
                .path = path, .key_format = ENG_CATALOG_KEYS_TUPLE, .mode = mode,
                .n_parts = 2, .parts = parts, .hash_parts = mode == ENG_CATALOG_HASHED ? 1 : 0,
                .options = eng_catalog_options_default(), .n_tablets = 2,
        };
        struct eng_catalog *next;
        char err[256];
        uint32_t id;

        spec.options.partition_reads_per_sec = reads;
        spec.options.partition_writes_per_sec = writes;
        cr_assert(eq(int, eng_catalog_create_table(cat, &spec, &next, &id, err, sizeof(err)), 0),
                  "%s", err);
        eng_catalog_unref(cat);
        cat = next;
        return id;
}

/* One shard; /h hashed with 3 reads and 2 writes a partition a second,
 * /o ordered with the same, /f without limits. */
static void open_with_tables(void)
{
        cat = eng_catalog_new(1);
        cr_assert(cat != NULL);
        hashed_id = create("/h", ENG_CATALOG_HASHED, 3, 2);
        ordered_id = create("/o", ENG_CATALOG_ORDERED, 3, 2);
        free_id = create("/f", ENG_CATALOG_HASHED, 0, 0);
        opts.catalog = cat;
        cr_assert(eq(int, shard_open_sync(), 0));
}

/* The tuple (a, b) into buf (32 bytes); its length. */
static uint32_t key2(uint64_t a, uint64_t b, uint8_t *buf)
{
        struct eng_tuple_part p[2] = { { .type = ENG_TUPLE_U64, .v.u64 = a },
                                       { .type = ENG_TUPLE_U64, .v.u64 = b } };
        size_t len;

        cr_assert(eq(int, eng_tuple_encode(p, 2, buf, 32, &len), 0));
        return (uint32_t)len;
}

struct row {
        uint8_t k[32];
        struct eng_mutation m;
};

static struct eng_mutation *put_row(struct row *r, uint32_t table, uint64_t a, uint64_t b)
{
        r->m = (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = table, .key = r->k,
                                      .key_len = key2(a, b, r->k), .value = "v", .value_len = 1 };
        return &r->m;
}

static int put(uint32_t table, uint64_t a, uint64_t b)
{
        struct row r;

        return write_sync(put_row(&r, table, a, b), 1);
}

static int get(uint32_t table, uint64_t a, uint64_t b)
{
        uint8_t k[32];
        char buf[8];

        return get_copy(table, k, key2(a, b, k), buf, sizeof(buf));
}

static uint32_t sec_now(void)
{
        return (uint32_t)(time_coarse_ns() / NS_PER_SEC);
}

/* Runs scenario(base) with a fresh base of partitions until one run stays
 * within one second (all of its operations then count in one window). */
#define WITHIN_ONE_SECOND(scenario)                                                             \
        do {                                                                                    \
                static uint64_t base_;                                                          \
                uint32_t s0_;                                                                   \
                int tries_ = 0;                                                                 \
                do {                                                                            \
                        cr_assert(lt(int, tries_++, 20), "the second kept changing");           \
                        base_ += 1000;                                                          \
                        s0_ = sec_now();                                                        \
                        scenario(base_);                                                        \
                } while (sec_now() != s0_);                                                     \
        } while (0)

/* What the last scenario saw, checked once it ran within a second. */
static int seen[16];

static void writes_scenario(uint64_t p)
{
        seen[0] = put(hashed_id, p, 1);
        seen[1] = put(hashed_id, p, 2);                 /* another row, the same partition */
        seen[2] = put(hashed_id, p, 3);
        seen[3] = put(hashed_id, p + 1, 1);             /* another partition */
        seen[4] = get(hashed_id, p, 3);
        seen[5] = put(ordered_id, p, 1);
        seen[6] = put(ordered_id, p, 1);
        seen[7] = put(ordered_id, p, 1);
        seen[8] = put(ordered_id, p, 2);                /* ordered: each key is a partition */
}

Test(shard_ratelimit, writes_past_a_partitions_limit_are_refused)
{
        open_with_tables();
        WITHIN_ONE_SECOND(writes_scenario);
        cr_expect(eq(int, seen[0], 0));
        cr_expect(eq(int, seen[1], 0));
        cr_expect(eq(int, seen[2], -SCREE_ERATELIMIT), "the third write of a 2/s partition");
        cr_expect(eq(int, seen[3], 0), "another partition has its own count");
        cr_expect(eq(int, seen[4], -SCREE_ENOTFOUND), "the refused write did nothing");
        cr_expect(eq(int, seen[5], 0));
        cr_expect(eq(int, seen[6], 0));
        cr_expect(eq(int, seen[7], -SCREE_ERATELIMIT));
        cr_expect(eq(int, seen[8], 0));
        for (int i = 0; i < 1000; i++)
                cr_assert(eq(int, put(free_id, 7, 7), 0), "a table without limits");
}

static void batch_scenario(uint64_t p)
{
        struct row r[4];
        struct eng_mutation m[4];

        for (int i = 0; i < 4; i++)     /* four rows of one partition: one write */
                m[i] = *put_row(&r[i], hashed_id, p, (uint64_t)i);
        seen[0] = write_sync(m, 4);
        seen[1] = write_sync(m, 4);
        seen[2] = write_sync(m, 4);
        m[0] = *put_row(&r[0], hashed_id, p + 1, 9);    /* room */
        m[1] = *put_row(&r[1], free_id, p, 9);          /* no limit */
        m[2] = *put_row(&r[2], hashed_id, p, 9);        /* none left */
        seen[3] = write_sync(m, 3);
        seen[4] = get(hashed_id, p + 1, 9);
        seen[5] = get(free_id, p, 9);
        seen[6] = put(hashed_id, p + 1, 10);            /* the refused batch counted nothing */
        seen[7] = put(hashed_id, p + 1, 11);
}

Test(shard_ratelimit, a_batch_counts_a_partition_once_and_is_refused_whole)
{
        open_with_tables();
        WITHIN_ONE_SECOND(batch_scenario);
        cr_expect(eq(int, seen[0], 0));
        cr_expect(eq(int, seen[1], 0));
        cr_expect(eq(int, seen[2], -SCREE_ERATELIMIT));
        cr_expect(eq(int, seen[3], -SCREE_ERATELIMIT));
        cr_expect(eq(int, seen[4], -SCREE_ENOTFOUND), "no row of a refused batch is written");
        cr_expect(eq(int, seen[5], -SCREE_ENOTFOUND));
        cr_expect(eq(int, seen[6], 0));
        cr_expect(eq(int, seen[7], 0));
}

static int rmw_del(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        (void)arg;
        out->kind = ENG_MUT_DEL;
        return cur ? 1 : 0;
}

static int rmw_sync(uint32_t table, uint64_t a, uint64_t b)
{
        struct incr x = { 0 };
        uint8_t k[32];
        int r;

        x.r.done = on_rmw;
        x.r.ctx = &x;
        r = eng_shard_rmw(sh, table, k, key2(a, b, k), rmw_del, NULL, &x.r);
        if (r < 0)
                return r;
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        return x.res;
}

static void reads_scenario(uint64_t p)
{
        uint8_t k[32], pos[48];
        uint32_t len = key2(p + 1, 0, k);

        seen[0] = get(hashed_id, p, 1);                 /* a miss is a read too */
        seen[1] = get(hashed_id, p, 2);
        seen[2] = rmw_sync(hashed_id, p, 3);            /* a write, not a read */
        seen[3] = rmw_sync(hashed_id, p, 3);
        seen[4] = rmw_sync(hashed_id, p, 3);
        seen[5] = get(hashed_id, p, 3);
        seen[6] = get(hashed_id, p, 4);
        seen[7] = get(hashed_id, p + 1, 1);
        /* A read of several rows of partition p + 1, by position: its hash
         * and a key of it (eng_shard_scan_pos). */
        cr_assert(eq(long, eng_shard_scan_pos(sh, hashed_id, k, len, pos), 8 + (long)len));
        seen[8] = eng_shard_rate_take(sh, hashed_id, pos, 8, ENG_RATELIMIT_READ);
        seen[9] = eng_shard_rate_take(sh, hashed_id, pos, 8, ENG_RATELIMIT_READ);
        seen[10] = get(hashed_id, p + 1, 77);
        seen[11] = eng_shard_rate_take(sh, free_id, pos, 8, ENG_RATELIMIT_READ);
}

Test(shard_ratelimit, reads_count_apart_from_writes)
{
        open_with_tables();
        WITHIN_ONE_SECOND(reads_scenario);
        cr_expect(eq(int, seen[0], -SCREE_ENOTFOUND));
        cr_expect(eq(int, seen[1], -SCREE_ENOTFOUND));
        cr_expect(eq(int, seen[2], 0), "nothing to delete: written nothing, counted");
        cr_expect(eq(int, seen[3], 0));
        cr_expect(eq(int, seen[4], -SCREE_ERATELIMIT), "a read-modify-write is a write");
        cr_expect(eq(int, seen[5], -SCREE_ENOTFOUND), "its read did not count");
        cr_expect(eq(int, seen[6], -SCREE_ERATELIMIT));
        cr_expect(eq(int, seen[7], -SCREE_ENOTFOUND));
        cr_expect(eq(int, seen[8], 0));
        cr_expect(eq(int, seen[9], 0));
        cr_expect(eq(int, seen[10], -SCREE_ERATELIMIT), "the partition's reads by position count");
        cr_expect(eq(int, seen[11], 0), "no limit");
        cr_expect(eq(int, eng_shard_rate_take(sh, hashed_id, "", 0, ENG_RATELIMIT_KIND_MAX),
                     -EINVAL));
}

struct xop {
        struct eng_xtxn_op op;
        bool done;
        int res;
};

static void on_xop(struct eng_xtxn_op *op, int res)
{
        struct xop *x = op->ctx;

        x->done = true;
        x->res = res;
}

/* Prepares rows (p, b) and (p, b + 1) -- keys no other prepare holds,
 * of one partition -- as txn. */
static int prepare(uint64_t txn, uint64_t p, uint64_t b, struct xop *x)
{
        struct row r[2];
        struct eng_mutation m[2] = { *put_row(&r[0], hashed_id, p, b),
                                     *put_row(&r[1], hashed_id, p, b + 1) };
        int res;

        *x = (struct xop){ .op = { .done = on_xop } };
        x->op.ctx = x;
        res = eng_shard_prepare(sh, txn, 0, m, 2, &x->op);
        if (res == 0)
                cr_assert(eq(int, rx_loop_run_until(loop, &x->done), 0));
        return res < 0 ? res : x->res;
}

static void prepare_scenario(uint64_t p)
{
        uint64_t t1 = eng_shard_txn_new(sh), t2 = eng_shard_txn_new(sh), t3 = eng_shard_txn_new(sh);
        struct xop x;

        seen[0] = prepare(t1, p, 1, &x);
        seen[1] = prepare(t2, p, 3, &x);
        seen[2] = prepare(t3, p, 5, &x);                /* refused: over the limit */
        seen[3] = eng_shard_abort(sh, t1);
        seen[4] = eng_shard_abort(sh, t2);
        seen[5] = put(hashed_id, p, 7);                 /* both given back */
        seen[6] = put(hashed_id, p, 8);
        seen[7] = put(hashed_id, p, 9);
}

Test(shard_ratelimit, a_prepared_part_counts_and_its_abort_gives_it_back)
{
        open_with_tables();
        WITHIN_ONE_SECOND(prepare_scenario);
        cr_expect(eq(int, seen[0], 0));
        cr_expect(eq(int, seen[1], 0));
        cr_expect(eq(int, seen[2], -SCREE_ERATELIMIT));
        cr_expect(eq(int, seen[3], 0));
        cr_expect(eq(int, seen[4], 0));
        cr_expect(eq(int, seen[5], 0));
        cr_expect(eq(int, seen[6], 0));
        cr_expect(eq(int, seen[7], -SCREE_ERATELIMIT));
}

/* Sets /f's write limit in the test's catalog and installs it. */
static void set_free_writes(uint32_t limit)
{
        const struct eng_catalog_table *t;
        struct eng_catalog_options o;
        struct eng_catalog *next;
        char err[256];

        cr_assert(eq(int, eng_catalog_table_by_id(cat, free_id, &t), 0));
        o = t->options;
        o.partition_writes_per_sec = limit;
        cr_assert(eq(int, eng_catalog_alter_table(cat, "/f", &o, &next, err, sizeof(err)), 0),
                  "%s", err);
        eng_catalog_unref(cat);
        cat = next;
        install();
}

static void alter_scenario(uint64_t p)
{
        set_free_writes(0);
        seen[0] = put(free_id, p, 1);
        seen[1] = put(free_id, p, 2);
        set_free_writes(1);
        seen[2] = put(free_id, p + 1, 1);
        seen[3] = put(free_id, p + 1, 2);
        seen[4] = put(free_id, p, 3);
}

Test(shard_ratelimit, a_new_catalog_changes_the_limits_at_once)
{
        const struct eng_catalog_table *t;

        open_with_tables();
        WITHIN_ONE_SECOND(alter_scenario);
        cr_expect(eq(int, seen[0], 0));
        cr_expect(eq(int, seen[1], 0));
        cr_expect(eq(int, seen[2], 0), "limit 1: the first write of the second");
        cr_expect(eq(int, seen[3], -SCREE_ERATELIMIT));
        cr_expect(eq(int, seen[4], 0), "writes made without a limit were not counted");
        cr_assert(eq(int, reopen_cat(), 0));
        cr_assert(eq(int, eng_catalog_table_by_id(eng_shard_catalog(sh), free_id, &t), 0));
        cr_expect(eq(u32, t->options.partition_writes_per_sec, 1), "the limit after a reopen");
}
