/* SPDX-License-Identifier: Apache-2.0 */
/* scree-bench's workload generator (perf/bench_gen.h): the workers' keys
 * split the key set, every op stays on its worker's keys, inserts are
 * fresh, missing keys are missing, and the mixes keep their shares. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "engine/shard.h"
#include "perf/bench_gen.h"

#define NUM 3000u
#define OPS 20000u

static struct bench_keys_opts opts(uint32_t workers, enum eng_table t)
{
        return (struct bench_keys_opts){
                .num = NUM, .key_size = 16, .value_size = 100, .workers = workers, .table = t,
                .seek_nexts = 10, .scan_max = 100, .dist = KEYDIST_INVALID,
                .theta = KEYDIST_DEFAULT_THETA, .seed = 7,
        };
}

/* The key number of a loaded key, or -1 (not one of bench_key's). */
static long key_number(const struct bench_keys_opts *o, const uint8_t *key)
{
        uint8_t want[BENCH_MAX_KEY_BYTES];

        for (uint64_t i = 0; i < o->num; i++) {
                bench_key(o, i, want);
                if (memcmp(want, key, o->key_size) == 0)
                        return (long)i;
        }
        return -1;
}

/* The worker of n that owns key (as the engine places it). */
static unsigned owner(const struct bench_keys_opts *o, const uint8_t *key)
{
        struct eng_tablet_map m;

        cr_assert_eq(eng_tablet_map_init(&m, o->workers, ENG_SHARD_DEFAULT_TABLETS), 0);
        return eng_tablet_of_key(&m, o->table, key, o->key_size).shard;
}

static struct bench_gen *started(const struct bench_keys_opts *o, unsigned id, enum bench_workload w,
                                 struct bench_dists *d)
{
        struct bench_gen *g = bench_gen_new(o, id);

        cr_assert_not_null(g);
        cr_assert_eq(bench_dists_init(d, o, bench_gen_keys(g), true), 0);
        bench_gen_start(g, w, d);
        return g;
}

Test(bench_gen, workers_split_the_keys)
{
        struct bench_keys_opts o = opts(3, ENG_TABLE_DEFAULT);
        uint64_t sum = 0;

        for (unsigned id = 0; id < 3; id++) {
                struct bench_gen *g = bench_gen_new(&o, id);

                cr_assert_not_null(g);
                cr_expect_gt(bench_gen_keys(g), 0);
                sum += bench_gen_keys(g);
                bench_gen_free(g);
        }
        cr_expect_eq(sum, NUM);
}

Test(bench_gen, fillseq_puts_every_key_once_in_order)
{
        struct bench_keys_opts o = opts(1, ENG_TABLE_ORDERED);
        struct bench_dists d;
        struct bench_gen *g = started(&o, 0, BENCH_FILLSEQ, &d);
        struct bench_op_desc op;

        for (uint64_t i = 0; i < NUM; i++) {
                cr_assert_eq(bench_gen_next(g, i, &op), 0);
                cr_assert_eq(op.kind, BENCH_OPK_PUT);
                cr_assert_eq(key_number(&o, op.key), (long)i);
        }
        cr_expect_eq(bench_gen_live(g), NUM);
        bench_gen_free(g);
}

Test(bench_gen, readmissing_keys_are_missing_and_owned)
{
        struct bench_keys_opts o = opts(2, ENG_TABLE_DEFAULT);
        struct bench_dists d;
        struct bench_gen *g = started(&o, 1, BENCH_READMISSING, &d);
        struct bench_op_desc op;

        for (uint64_t i = 0; i < 500; i++) {
                cr_assert_eq(bench_gen_next(g, i, &op), 0);
                cr_assert_eq(op.kind, BENCH_OPK_GET);
                cr_assert_eq(key_number(&o, op.key), -1);
                cr_assert_eq(owner(&o, op.key), 1);
        }
        bench_gen_free(g);
}

Test(bench_gen, ycsb_d_inserts_fresh_keys_and_reads_the_latest)
{
        struct bench_keys_opts o = opts(2, ENG_TABLE_ORDERED);
        struct bench_dists d;
        struct bench_gen *g = started(&o, 0, BENCH_YCSB_D, &d);
        struct bench_op_desc op;
        uint8_t (*ins)[16] = calloc(OPS, 16);
        unsigned n_ins = 0, reads_of_inserts = 0;

        cr_assert_not_null(ins);
        for (uint64_t i = 0; i < OPS; i++) {
                cr_assert_eq(bench_gen_next(g, i, &op), 0);
                cr_assert_eq(owner(&o, op.key), 0);
                if (op.cls == BENCH_OPC_INSERT) {
                        cr_assert_eq(key_number(&o, op.key), -1);
                        for (unsigned j = 0; j < n_ins; j++)
                                cr_assert_neq(memcmp(ins[j], op.key, 16), 0);
                        memcpy(ins[n_ins++], op.key, 16);
                } else {
                        cr_assert_eq(op.cls, BENCH_OPC_READ);
                        reads_of_inserts += key_number(&o, op.key) < 0;
                }
        }
        cr_expect_eq(bench_gen_inserted(g), n_ins);
        /* 5% inserts, give or take */
        cr_expect(n_ins > OPS / 40 && n_ins < OPS / 10, "%u inserts", n_ins);
        /* latest: the newest items -- the inserts -- are the most read */
        cr_expect_gt(reads_of_inserts, OPS / 4);
        free(ins);
        bench_gen_free(g);
}

Test(bench_gen, ycsb_e_scans_are_1_to_scan_max_long)
{
        struct bench_keys_opts o = opts(1, ENG_TABLE_ORDERED);
        struct bench_dists d;
        struct bench_gen *g = started(&o, 0, BENCH_YCSB_E, &d);
        struct bench_op_desc op;
        uint32_t lo = UINT32_MAX, hi = 0;

        for (uint64_t i = 0; i < OPS; i++) {
                cr_assert_eq(bench_gen_next(g, i, &op), 0);
                if (op.kind != BENCH_OPK_SCAN)
                        continue;
                lo = op.scan_len < lo ? op.scan_len : lo;
                hi = op.scan_len > hi ? op.scan_len : hi;
        }
        cr_expect_eq(lo, 1);
        cr_expect_eq(hi, 100);
        bench_gen_free(g);
}

Test(bench_gen, deletes_and_puts_keep_the_live_count)
{
        struct bench_keys_opts o = opts(1, ENG_TABLE_ORDERED);
        struct bench_dists d;
        struct bench_gen *g = started(&o, 0, BENCH_FILLSEQ, &d);
        struct bench_op_desc op;

        for (uint64_t i = 0; i < NUM; i++)
                bench_gen_next(g, i, &op);
        bench_gen_start(g, BENCH_DELETERANDOM, &d);
        for (uint64_t i = 0; i < NUM; i++)
                bench_gen_next(g, i, &op);
        /* uniform with replacement: about 1/e of the keys escape */
        cr_expect(bench_gen_live(g) > NUM / 4 && bench_gen_live(g) < NUM / 2, "%lu live",
                  (unsigned long)bench_gen_live(g));
        bench_gen_free(g);
}

Test(bench_gen, names_round_trip)
{
        for (int w = 0; w < BENCH_WORKLOAD_MAX; w++)
                cr_expect_eq(bench_workload_parse(bench_workload_name((enum bench_workload)w)), w);
        cr_expect_eq(bench_workload_parse("ycsbg"), BENCH_WORKLOAD_INVALID);
        cr_expect_not_null(bench_workload_mix(BENCH_YCSB_E));
        cr_expect_null(bench_workload_mix(BENCH_READRANDOM));
}
