/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Composite keys (engine/tuple.h): for random tuples built from every
 * part type at its edges (NULL, 0, -1, INT64_MIN/MAX, UINT64_MAX, empty
 * strings, 0x00 and 0xFF bytes), the encodings compare as bytes exactly as
 * the tuples compare part by part; every encoding decodes back to its
 * tuple; a prefix's range [encode(prefix), prefix_end) holds exactly its
 * extensions; the sizes are what tuple.h says; malformed encodings are
 * refused. Plus the layout of docs/format/tuple.md, byte by byte.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/key.h"
#include "engine/tuple.h"
#include "tests/rng.h"

TestSuite(tuple, .timeout = 30);

#define MAX_PARTS 4
#define MAX_BYTES 6
#define ENC_CAP 256

struct tup {
        struct eng_tuple_part p[MAX_PARTS];
        uint8_t bytes[MAX_PARTS][MAX_BYTES];
        size_t n;
};

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void)
{
        return test_rng_next(&rng);
}

/* Values near the edges, where an encoding goes wrong. */
static const int64_t i64s[] = { INT64_MIN, INT64_MIN + 1, -256, -255, -2, -1, 0, 1, 2, 255, 256,
                                INT64_MAX - 1, INT64_MAX };
static const uint64_t u64s[] = { 0, 1, 2, 255, 256, UINT64_C(1) << 63, UINT64_MAX - 1, UINT64_MAX };
static const uint8_t byte_vals[] = { 0x00, 0x01, 0x02, 0x7f, 0x80, 0xfe, 0xff };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* A random tuple over a schema where part i is NULL or of type types[i]. */
static void random_tup(struct tup *t, const enum eng_tuple_type *types)
{
        t->n = next() % (MAX_PARTS + 1);
        for (size_t i = 0; i < t->n; i++) {
                struct eng_tuple_part *p = &t->p[i];

                p->type = next() % 5 == 0 ? ENG_TUPLE_NULL : types[i];
                if (p->type == ENG_TUPLE_I64) {
                        p->v.i64 = i64s[next() % N_OF(i64s)];
                } else if (p->type == ENG_TUPLE_U64) {
                        p->v.u64 = u64s[next() % N_OF(u64s)];
                } else if (p->type == ENG_TUPLE_BYTES) {
                        uint32_t len = (uint32_t)(next() % (MAX_BYTES + 1));

                        for (uint32_t k = 0; k < len; k++)
                                t->bytes[i][k] = byte_vals[next() % N_OF(byte_vals)];
                        p->v.bytes.p = t->bytes[i];
                        p->v.bytes.len = len;
                }
        }
}

static size_t enc(const struct tup *t, uint8_t *dst)
{
        size_t len;

        cr_assert(eq(int, eng_tuple_encode(t->p, t->n, dst, ENC_CAP, &len), 0));
        return len;
}

static int sign(int v)
{
        return (v > 0) - (v < 0);
}

static const enum eng_tuple_type schemas[][MAX_PARTS] = {
        { ENG_TUPLE_I64, ENG_TUPLE_BYTES, ENG_TUPLE_U64, ENG_TUPLE_BYTES },
        { ENG_TUPLE_BYTES, ENG_TUPLE_BYTES, ENG_TUPLE_BYTES, ENG_TUPLE_BYTES },
        { ENG_TUPLE_U64, ENG_TUPLE_I64, ENG_TUPLE_I64, ENG_TUPLE_U64 },
};

Test(tuple, encodings_compare_as_the_tuples_do)
{
        for (size_t s = 0; s < N_OF(schemas); s++) {
                for (int round = 0; round < 100000; round++) {
                        struct tup a, b;
                        uint8_t ea[ENC_CAP], eb[ENC_CAP];
                        size_t la, lb;
                        int want, got;

                        random_tup(&a, schemas[s]);
                        random_tup(&b, schemas[s]);
                        if (next() % 4 == 0) {          /* often equal up to a point */
                                b = a;
                                for (size_t i = 0; i < b.n; i++)
                                        if (b.p[i].type == ENG_TUPLE_BYTES)
                                                b.p[i].v.bytes.p = b.bytes[i];
                                b.n = next() % (MAX_PARTS + 1);
                                if (b.n > a.n)
                                        b.n = a.n;
                        }
                        la = enc(&a, ea);
                        lb = enc(&b, eb);
                        want = eng_tuple_cmp(a.p, a.n, b.p, b.n);
                        got = sign(eng_key_cmp(ea, la, eb, lb));
                        cr_assert(eq(int, got, want), "schema %zu round %d", s, round);
                }
        }
}

Test(tuple, every_encoding_decodes_back_and_has_the_size_tuple_h_says)
{
        for (int round = 0; round < 100000; round++) {
                struct tup a;
                struct eng_tuple_part out[MAX_PARTS];
                uint8_t e[ENC_CAP], scratch[ENC_CAP];
                size_t len, want = 0;
                int n;

                random_tup(&a, schemas[round % N_OF(schemas)]);
                len = enc(&a, e);
                for (size_t i = 0; i < a.n; i++)
                        want += eng_tuple_part_size(&a.p[i]);
                cr_assert(eq(sz, len, want));
                n = eng_tuple_decode(e, len, out, MAX_PARTS, scratch, len);
                cr_assert(eq(int, n, (int)a.n), "round %d", round);
                cr_assert(eq(int, eng_tuple_cmp(out, (size_t)n, a.p, a.n), 0), "round %d", round);
        }
}

Test(tuple, a_prefix_range_holds_exactly_its_extensions)
{
        for (int round = 0; round < 100000; round++) {
                struct tup a, b;
                uint8_t ea[ENC_CAP], eb[ENC_CAP], end[ENC_CAP + 1];
                size_t la, lb, lend;
                bool inside, extends;

                random_tup(&a, schemas[0]);
                random_tup(&b, schemas[0]);
                la = enc(&a, ea);
                lb = enc(&b, eb);
                lend = eng_tuple_prefix_end(ea, la, end, sizeof(end));
                cr_assert(eq(sz, lend, la + 1));
                inside = eng_key_cmp(eb, lb, ea, la) >= 0 && eng_key_cmp(eb, lb, end, lend) < 0;
                extends = b.n >= a.n && eng_tuple_cmp(a.p, a.n, b.p, a.n) == 0;
                cr_assert(eq(int, inside, extends), "round %d", round);
        }
}

Test(tuple, the_first_k_parts_are_the_encoding_of_the_prefix)
{
        for (int round = 0; round < 100000; round++) {
                struct tup a;
                uint8_t e[ENC_CAP], ep[ENC_CAP];
                size_t len, plen;
                size_t k;

                random_tup(&a, schemas[round % N_OF(schemas)]);
                len = enc(&a, e);
                k = a.n ? next() % (a.n + 1) : 0;
                cr_assert(eq(int, eng_tuple_encode(a.p, k, ep, sizeof(ep), &plen), 0));
                cr_assert(eq(long, eng_tuple_parts_len(e, len, k), (long)plen), "round %d", round);
                cr_assert(eq(int, memcmp(e, ep, plen), 0));
                cr_assert(eq(long, eng_tuple_parts_len(e, len, a.n + 1), -EINVAL),
                          "more parts than there are");
                if (plen > 1 && k) {
                        /* Cut inside the k-th part: malformed there. */
                        cr_assert(eq(long, eng_tuple_parts_len(e, plen - 1, k), -EINVAL), "round %d",
                                  round);
                }
        }
}

/* docs/format/tuple.md's examples, byte by byte. */
Test(tuple, the_documented_layout)
{
        static const uint8_t hello0[] = { 'h', 'i', 0x00 };
        struct eng_tuple_part p[] = {
                { .type = ENG_TUPLE_I64, .v.i64 = -1 },
                { .type = ENG_TUPLE_U64, .v.u64 = 42 },
                { .type = ENG_TUPLE_NULL },
                { .type = ENG_TUPLE_BYTES, .v.bytes = { hello0, 3 } },
        };
        static const uint8_t want[] = {
                0x10, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
                0x01,
                0x20, 'h', 'i', 0x00, 0xff, 0x00, 0x01,
        };
        uint8_t e[64];
        size_t len;

        cr_assert(eq(int, eng_tuple_encode(p, 4, e, sizeof(e), &len), 0));
        cr_assert(eq(sz, len, sizeof(want)));
        cr_assert(eq(int, memcmp(e, want, len), 0));
        /* INT64_MIN is all zeros after the tag, 0 is 0x80 then zeros. */
        p[0].v.i64 = INT64_MIN;
        cr_assert(eq(int, eng_tuple_encode(p, 1, e, sizeof(e), &len), 0));
        cr_assert(eq(int, e[1] | e[8], 0x00));
        p[0].v.i64 = 0;
        cr_assert(eq(int, eng_tuple_encode(p, 1, e, sizeof(e), &len), 0));
        cr_assert(eq(int, e[1], 0x80));
}

Test(tuple, a_short_buffer_says_what_it_needs_and_bad_types_are_refused)
{
        struct eng_tuple_part p = { .type = ENG_TUPLE_BYTES, .v.bytes = { "\0\0", 2 } };
        uint8_t e[8];
        size_t len = 0;

        cr_assert(eq(int, eng_tuple_encode(&p, 1, NULL, 0, &len), -ENOSPC));
        cr_assert(eq(sz, len, 7));              /* tag, 2 × (00 FF), 00 01 */
        cr_assert(eq(int, eng_tuple_encode(&p, 1, e, 6, &len), -ENOSPC));
        cr_assert(eq(int, eng_tuple_encode(&p, 1, e, 7, &len), 0));
        p.type = (enum eng_tuple_type)7;
        cr_assert(eq(int, eng_tuple_encode(&p, 1, e, sizeof(e), &len), -EINVAL));
        cr_assert(eq(sz, eng_tuple_prefix_end(e, 7, e, 7), 0));
}

Test(tuple, malformed_encodings_are_refused)
{
        static const struct {
                const char *why;
                uint8_t b[12];
                size_t len;
        } bad[] = {
                { "unknown tag", { 0x02 }, 1 },
                { "the after-everything byte", { 0xff }, 1 },
                { "truncated integer", { 0x10, 0, 0, 0 }, 4 },
                { "string without its terminator", { 0x20, 'a', 'b' }, 3 },
                { "string cut inside its terminator", { 0x20, 'a', 0x00 }, 3 },
                { "bad escape", { 0x20, 0x00, 0x02 }, 3 },
        };
        struct eng_tuple_part out[MAX_PARTS];
        uint8_t scratch[16];

        for (size_t i = 0; i < N_OF(bad); i++)
                cr_expect(eq(int, eng_tuple_decode(bad[i].b, bad[i].len, out, MAX_PARTS, scratch,
                                                   sizeof(scratch)),
                             -EINVAL), "%s", bad[i].why);
        /* More parts than room for. */
        static const uint8_t three_nulls[] = { 0x01, 0x01, 0x01 };

        cr_expect(eq(int, eng_tuple_decode(three_nulls, 3, out, 2, scratch, sizeof(scratch)), -EINVAL));
        cr_expect(eq(int, eng_tuple_decode(three_nulls, 3, out, 3, scratch, sizeof(scratch)), 3));
        cr_expect(eq(int, eng_tuple_decode(three_nulls, 0, out, 3, scratch, sizeof(scratch)), 0),
                  "the empty tuple");
}
