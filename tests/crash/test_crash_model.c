/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's checker (tests/crash/crash_model.h) and value codec on
 * made-up histories: recoveries that keep every acknowledged write and a
 * prefix of the rest pass; a lost acknowledged write, a torn batch
 * (acknowledged or not), a write lost before one that survived, a dump
 * that contradicts an earlier cut-short one, garbage values and workload
 * mismatches are reported.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "tests/crash/crash_model.h"

#define SEED 99u
#define ACKED 200u
#define ISSUED (ACKED + 64u)

static struct crash_model *m;
static struct crash_state truth[CRASH_N_KEYS];
static char why[1024];

static void setup(void)
{
        m = crash_model_new(SEED, CRASH_N_KEYS);
        cr_assert(not(eq(ptr, m, NULL)));
        memset(truth, 0, sizeof(truth));
}

static void teardown(void)
{
        crash_model_free(m);
}

TestSuite(crash_model, .init = setup, .fini = teardown, .timeout = 30);

/* Applies ops [from, to) of round to truth. */
static void apply(uint32_t round, uint64_t from, uint64_t to)
{
        for (uint64_t i = from; i < to; i++) {
                struct crash_op op = crash_op_gen(SEED, round, i);

                for (uint32_t h = 0; h < op.n_keys; h++)
                        truth[op.key[h]] = crash_op_result(&op);
        }
}

static void ack(uint32_t round, uint64_t i)
{
        struct crash_op op = crash_op_gen(SEED, round, i);

        cr_assert(eq(int, crash_model_ack(m, i, crash_op_letter(op.kind), op.key[0],
                                          op.n_keys == 2 ? op.key[1] : 0, why, sizeof(why)), 0), "%s", why);
}

/* Round 1 writes ops [0, ISSUED) of which [0, ACKED) were acknowledged. */
static void write_round1(void)
{
        crash_model_dump_begin(m);
        cr_assert(eq(int, crash_model_dump_end(m, false, why, sizeof(why)), 0));
        crash_model_round_begin(m, 1);
        for (uint64_t i = 0; i < ACKED; i++)
                ack(1, i);
        cr_assert(eq(int, crash_model_round_end(m, ISSUED, why, sizeof(why)), 0), "%s", why);
        apply(1, 0, ACKED);
}

/* Observes every key as truth says; returns the first failure (-1) or
 * dump_end's result. */
static int dump(bool complete)
{
        crash_model_dump_begin(m);
        for (uint32_t k = 0; k < CRASH_N_KEYS; k++)
                if (crash_model_observe(m, k, truth[k], why, sizeof(why)) < 0)
                        return -1;
        return crash_model_dump_end(m, complete, why, sizeof(why));
}

/* A tail op index whose keys no other tail op touches, of kind (or any
 * put when kind is CRASH_OP_KIND_MAX). */
static uint64_t lone_tail_op(enum crash_op_kind kind, uint64_t from)
{
        for (uint64_t j = from; j < ISSUED; j++) {
                struct crash_op op = crash_op_gen(SEED, 1, j);
                bool alone = kind == CRASH_OP_KIND_MAX ? op.kind == CRASH_PUT : op.kind == kind;

                for (uint64_t i = ACKED; i < ISSUED && alone; i++) {
                        struct crash_op o = crash_op_gen(SEED, 1, i);

                        for (uint32_t h = 0; h < op.n_keys; h++)
                                alone = alone && (i == j || !crash_op_touches(&o, op.key[h]));
                }
                if (alone)
                        return j;
        }
        cr_fail("no suitable op in the tail");
        cr_fatal();
        return 0;
}

Test(crash_model, every_prefix_of_the_unacknowledged_writes_passes)
{
        for (uint64_t p = 0; p <= ISSUED - ACKED; p += 16) {
                struct crash_model_info mi;

                crash_model_free(m);
                setup();
                write_round1();
                apply(1, ACKED, ACKED + p);
                cr_assert(eq(int, dump(true), 0), "prefix %llu: %s", (unsigned long long)p, why);
                crash_model_info(m, &mi);
                cr_expect(eq(u64, mi.tail, 0), "a complete dump fixes the base");
        }
}

Test(crash_model, a_lost_acknowledged_write_is_reported)
{
        write_round1();
        /* The last acknowledged write did not survive: its key shows what
         * the write before it left. */
        memset(truth, 0, sizeof(truth));
        apply(1, 0, ACKED - 1);
        cr_assert(eq(int, dump(true), -1));
        cr_expect(not(eq(ptr, strstr(why, "acknowledged write lost"), NULL)), "%s", why);
        cr_expect(not(eq(ptr, strstr(why, "key"), NULL)), "%s", why);
}

/* The state key is in after ops [0, end) of round 1. */
static struct crash_state state_before(uint32_t key, uint64_t end)
{
        struct crash_state st = { 0 };

        for (uint64_t i = 0; i < end; i++) {
                struct crash_op o = crash_op_gen(SEED, 1, i);

                if (crash_op_touches(&o, key))
                        st = crash_op_result(&o);
        }
        return st;
}

Test(crash_model, a_torn_acknowledged_batch_is_reported)
{
        uint64_t j = ACKED;
        struct crash_op op;

        write_round1();
        /* The last acknowledged batch that is still its second key's state. */
        do {
                cr_assert(gt(u64, j, 0));
                op = crash_op_gen(SEED, 1, --j);
        } while (op.kind != CRASH_BATCH || truth[op.key[1]].ver != op.ver);
        truth[op.key[1]] = state_before(op.key[1], j);  /* second half lost */
        cr_assert(eq(int, dump(true), -1));
        cr_expect(not(eq(ptr, strstr(why, "acknowledged write lost"), NULL)), "%s", why);
        cr_expect(not(eq(ptr, strstr(why, "from a batch"), NULL)), "%s", why);
}

Test(crash_model, a_torn_unacknowledged_batch_is_reported)
{
        uint64_t j = lone_tail_op(CRASH_BATCH, ACKED);
        struct crash_op op = crash_op_gen(SEED, 1, j);
        struct crash_state keep;

        write_round1();
        keep = truth[op.key[1]];
        apply(1, ACKED, j + 1);         /* the batch and all before it survived... */
        truth[op.key[1]] = keep;        /* ...but not its second half */
        cr_assert(eq(int, dump(true), -1));
        cr_expect(not(eq(ptr, strstr(why, "torn batch"), NULL)), "%s", why);
}

Test(crash_model, a_write_lost_before_one_that_survived_is_reported)
{
        uint64_t a = lone_tail_op(CRASH_OP_KIND_MAX, ACKED);
        uint64_t b = lone_tail_op(CRASH_OP_KIND_MAX, a + 1);
        struct crash_op lost = crash_op_gen(SEED, 1, a);
        struct crash_state keep;

        write_round1();
        keep = truth[lost.key[0]];
        apply(1, ACKED, b + 1);
        truth[lost.key[0]] = keep;
        cr_assert(eq(int, dump(true), -1));
        cr_expect(not(eq(ptr, strstr(why, "not a prefix"), NULL)), "%s", why);
}

Test(crash_model, a_recovery_must_agree_with_an_earlier_cut_short_one)
{
        uint64_t j = lone_tail_op(CRASH_OP_KIND_MAX, ACKED);
        struct crash_state before;

        write_round1();
        before = truth[crash_op_gen(SEED, 1, j).key[0]];
        apply(1, ACKED, ISSUED);        /* the first recovery saw every write... */
        cr_assert(eq(int, dump(false), 0), "%s", why);
        truth[crash_op_gen(SEED, 1, j).key[0]] = before;      /* ...the next lost one */
        cr_assert(eq(int, dump(true), -1));
}

Test(crash_model, bookkeeping_errors_are_reported)
{
        struct crash_op op;

        write_round1();
        crash_model_dump_begin(m);
        cr_expect(eq(int, crash_model_observe(m, 0, truth[0], why, sizeof(why)), 0));
        cr_expect(eq(int, crash_model_observe(m, 0, truth[0], why, sizeof(why)), -1));
        cr_expect(eq(int, crash_model_observe(m, CRASH_N_KEYS, truth[0], why, sizeof(why)), -1));
        cr_expect(eq(int, crash_model_dump_end(m, true, why, sizeof(why)), -1), "keys missing");

        crash_model_round_begin(m, 2);
        op = crash_op_gen(SEED, 2, 5);
        cr_expect(eq(int, crash_model_ack(m, 5, 'Q', op.key[0], 0, why, sizeof(why)), -1));
        cr_expect(eq(int, crash_model_ack(m, 5, crash_op_letter(op.kind), op.key[0] + 1, 0, why,
                                          sizeof(why)), -1));
        ack(2, 5);
        cr_expect(eq(int, crash_model_ack(m, 5, crash_op_letter(op.kind), op.key[0],
                                          op.n_keys == 2 ? op.key[1] : 0, why, sizeof(why)), -1),
                  "acknowledged twice");
        cr_expect(eq(int, crash_model_round_end(m, 5, why, sizeof(why)), -1), "acked beyond issued");
}

/* ---- values ---- */

static uint64_t find_op(enum crash_op_kind kind)
{
        for (uint64_t i = 0; i < 10000; i++)
                if (crash_op_gen(SEED, 3, i).kind == kind)
                        return i;
        cr_fail("no op of kind %d", kind);
        cr_fatal();
        return 0;
}

Test(crash_model, values_are_checked_byte_for_byte)
{
        static uint8_t v[CRASH_VALUE_MAX];
        struct crash_op op = crash_op_gen(SEED, 3, find_op(CRASH_PUT));
        uint32_t len = crash_value_make(op.key[0], op.ver, v);
        uint64_t ver = 0;
        const char *w = NULL;

        cr_assert(eq(int, crash_value_check(SEED, op.key[0], v, len, 0, 1000, &ver, &w), 0), "%s", w);
        cr_expect(eq(u64, ver, op.ver));
        cr_expect(eq(int, crash_value_check(SEED, op.key[0] + 1, v, len, 0, 1000, &ver, &w), -1),
                  "another key's value");
        cr_expect(eq(int, crash_value_check(SEED, op.key[0], v, len - 1, 0, 1000, &ver, &w), -1),
                  "truncated");
        cr_expect(eq(int, crash_value_check(SEED, op.key[0], v, len, 5000, 1000, &ver, &w), -1),
                  "an expiry nobody wrote");
        v[len - 1] ^= 1;
        cr_expect(eq(int, crash_value_check(SEED, op.key[0], v, len, 0, 1000, &ver, &w), -1));
        cr_expect(not(eq(ptr, strstr(w, "garbage"), NULL)), "%s", w);
        memset(v, 0, 32);
        cr_expect(eq(int, crash_value_check(SEED, op.key[0], v, len, 0, 1000, &ver, &w), -1));
}

Test(crash_model, ttl_and_expired_puts_are_checked)
{
        static uint8_t v[CRASH_VALUE_MAX];
        struct crash_op ttl = crash_op_gen(SEED, 3, find_op(CRASH_PUT_TTL));
        struct crash_op exp = crash_op_gen(SEED, 3, find_op(CRASH_PUT_EXPIRED));
        uint32_t len = crash_value_make(ttl.key[0], ttl.ver, v);
        uint64_t now = 1000000, ver;
        const char *w = NULL;

        cr_expect(eq(int, crash_value_check(SEED, ttl.key[0], v, len, now + CRASH_TTL_MS, now, &ver,
                                            &w), 0), "%s", w);
        cr_expect(eq(int, crash_value_check(SEED, ttl.key[0], v, len, 0, now, &ver, &w), -1),
                  "expiry lost");
        cr_expect(eq(int, crash_value_check(SEED, ttl.key[0], v, len, now - 1, now, &ver, &w), -1));
        len = crash_value_make(exp.key[0], exp.ver, v);
        cr_expect(eq(int, crash_value_check(SEED, exp.key[0], v, len, now - 1, now, &ver, &w), -1));
        cr_expect(not(eq(ptr, strstr(w, "expired"), NULL)), "%s", w);
}

Test(crash_model, the_workload_is_a_pure_function_of_its_numbers)
{
        unsigned kinds[CRASH_OP_KIND_MAX] = { 0 }, tables[2] = { 0 };

        for (uint64_t i = 0; i < 5000; i++) {
                struct crash_op a = crash_op_gen(SEED, 4, i), b = crash_op_gen(SEED, 4, i);

                cr_assert(eq(int, memcmp(&a, &b, sizeof(a)), 0));
                cr_assert(lt(u32, a.key[0], CRASH_N_KEYS));
                if (a.n_keys == 2)
                        cr_assert(not(eq(u32, a.key[0], a.key[1])));
                kinds[a.kind]++;
                tables[crash_key_table(a.key[0])]++;
                cr_assert(eq(u64, crash_ver_index(a.ver), i));
                cr_assert(eq(u32, crash_ver_round(a.ver), 4));
        }
        for (int k = 0; k < CRASH_OP_KIND_MAX; k++)
                cr_expect(gt(u32, kinds[k], 50), "kind %d", k);
        cr_expect(gt(u32, tables[1], 100), "the ordered table is used");
}
