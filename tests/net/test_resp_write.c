/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RESP reply writer (net/resp_write.h): every type byte-exact in RESP2
 * and RESP3, doubles, sanitized errors and simple strings, replies across
 * block boundaries with partial sends, deferred aggregate headers (nested,
 * at block edges, holding back what follows), appends while a send is in
 * flight, block reuse, and allocation failure.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include "net/resp_write.h"

TestSuite(resp_write, .timeout = 30);

/* Under ASan, let the huge malloc of the failure test return NULL. */
const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
        return "allocator_may_return_null=1";
}

/* Every byte that can be sent now, without consuming; *ret_len its length. */
static char *collect(const struct net_resp_out *o, size_t *ret_len)
{
        struct iovec *iov = calloc(4096, sizeof(*iov));
        size_t bytes, off = 0;
        int n = net_resp_out_iov(o, iov, 4096, &bytes);
        char *s = malloc(bytes + 1);

        for (int i = 0; i < n; i++) {
                memcpy(s + off, iov[i].iov_base, iov[i].iov_len);
                off += iov[i].iov_len;
        }
        cr_assert(eq(sz, off, bytes));
        s[off] = '\0';
        *ret_len = off;
        free(iov);
        return s;
}

static void expect_bytes(const struct net_resp_out *o, const char *want, size_t want_len)
{
        size_t len;
        char *got = collect(o, &len);

        cr_assert(eq(sz, len, want_len), "got \"%s\"", got);
        cr_assert(eq(int, memcmp(got, want, len), 0), "got \"%s\" want \"%s\"", got, want);
        free(got);
}

#define EXPECT(o, lit) expect_bytes(o, lit, sizeof(lit) - 1)

/* Writes one of each reply type. */
static void write_all_types(struct net_resp_out *o)
{
        net_resp_add_simple(o, "OK", 2);
        net_resp_add_error(o, "ERR bad", 7);
        net_resp_add_int(o, 0);
        net_resp_add_int(o, -42);
        net_resp_add_int(o, INT64_MIN);
        net_resp_add_bulk(o, "a\0b", 3);
        net_resp_add_bulk(o, "", 0);
        net_resp_add_null(o);
        net_resp_add_null_array(o);
        net_resp_add_array(o, 2);
        net_resp_add_map(o, 3);
        net_resp_add_set(o, 4);
        net_resp_add_push(o, 5);
        net_resp_add_double(o, 1.5);
        net_resp_add_bool(o, true);
        net_resp_add_bool(o, false);
        net_resp_add_verbatim(o, "txt", "hi", 2);
        net_resp_add_bignum(o, "-123456789012345678901234567890", 31);
        net_resp_add_raw(o, "+PONG\r\n", 7);
}

Test(resp_write, every_type_in_resp2)
{
        struct net_resp_out o;

        net_resp_out_init(&o, 0);
        write_all_types(&o);
        static const char want[] =
                "+OK\r\n-ERR bad\r\n:0\r\n:-42\r\n:-9223372036854775808\r\n"
                "$3\r\na\0b\r\n$0\r\n\r\n$-1\r\n*-1\r\n*2\r\n*6\r\n*4\r\n*5\r\n"
                "$3\r\n1.5\r\n:1\r\n:0\r\n$2\r\nhi\r\n"
                "$31\r\n-123456789012345678901234567890\r\n+PONG\r\n";

        EXPECT(&o, want);
        cr_assert(eq(sz, net_resp_out_pending_bytes(&o), sizeof(want) - 1));
        cr_assert(not(net_resp_out_failed(&o)));
        net_resp_out_fini(&o);
}

Test(resp_write, every_type_in_resp3)
{
        struct net_resp_out o;

        net_resp_out_init(&o, 0);
        net_resp_out_set_proto(&o, NET_RESP3);
        write_all_types(&o);
        EXPECT(&o, "+OK\r\n-ERR bad\r\n:0\r\n:-42\r\n:-9223372036854775808\r\n"
                   "$3\r\na\0b\r\n$0\r\n\r\n_\r\n_\r\n*2\r\n%3\r\n~4\r\n>5\r\n"
                   ",1.5\r\n#t\r\n#f\r\n=6\r\ntxt:hi\r\n"
                   "(-123456789012345678901234567890\r\n+PONG\r\n");
        net_resp_out_fini(&o);
}

struct dcase {
        double d;
        const char *want;
};

static const struct dcase dcases[] = {
                { 1.5, "1.5" },
                { 0.1, "0.1" },
                { 1.1, "1.1" },
                { -2.25, "-2.25" },
                { 1.0 / 3, "0.3333333333333333" },
                { 2.0 / 3, "0.6666666666666666" },
                { 0.1 + 0.2, "0.30000000000000004" },
                { 3.0, "3" },
                { -12.0, "-12" },
                { 1e15, "1000000000000000" },
                { 0x1p62, "4611686018427387904" },
                { 0x1p63, "9.223372036854776e+18" },
                { 1e20, "1e+20" },
                { 1.5e-7, "1.5e-07" },
                { 5e-324, "4.94065645841247e-324" },
                { 1.7976931348623157e308, "1.7976931348623157e+308" },
                { 0.0, "0" },
                { -0.0, "-0" },
                { INFINITY, "inf" },
                { -INFINITY, "-inf" },
                { NAN, "nan" },
                { -NAN, "nan" },
};

/* Indices into dcases[] (no pointers in Criterion parameters). */
ParameterizedTestParameters(resp_write, doubles)
{
        static unsigned idx[sizeof(dcases) / sizeof(dcases[0])];

        for (unsigned i = 0; i < sizeof(idx) / sizeof(idx[0]); i++)
                idx[i] = i;
        return cr_make_param_array(unsigned, idx, sizeof(idx) / sizeof(idx[0]));
}

ParameterizedTest(unsigned *ci, resp_write, doubles)
{
        const struct dcase *c = &dcases[*ci];
        char buf[NET_RESP_DOUBLE_MAX];
        size_t n = net_resp_fmt_double(buf, c->d);
        struct net_resp_out o;
        char want[128];
        size_t len;
        char *got;

        cr_assert(eq(str, buf, (char *)c->want));
        cr_assert(eq(sz, n, strlen(c->want)));
        if (!isnan(c->d))
                cr_assert(strtod(buf, NULL) == c->d || (isinf(c->d) && isinf(strtod(buf, NULL))));
        net_resp_out_init(&o, 0);
        net_resp_add_double(&o, c->d);
        net_resp_out_set_proto(&o, NET_RESP3);
        net_resp_add_double(&o, c->d);
        len = (size_t)snprintf(want, sizeof(want), "$%zu\r\n%s\r\n,%s\r\n", n, c->want, c->want);
        got = collect(&o, &n);
        cr_assert(eq(sz, n, len));
        cr_assert(eq(str, got, want));
        free(got);
        net_resp_out_fini(&o);
}

Test(resp_write, errors_and_simple_strings_never_hold_cr_or_lf)
{
        struct net_resp_out o;
        char big[600];

        net_resp_out_init(&o, 0);
        net_resp_add_error(&o, "ERR a\r\nb\rc\nd", 12);
        net_resp_add_error(&o, "\r\nERR x\r\n\n", 10);
        net_resp_add_simple(&o, "line1\nline2", 11);
        net_resp_add_errorf(&o, "ERR unknown command '%s'", "GET\r\nX");
        net_resp_add_simple(&o, "\r\n", 2);
        EXPECT(&o, "-ERR a  b c d\r\n-ERR x\r\n+line1 line2\r\n-ERR unknown command 'GET  X'\r\n+\r\n");
        net_resp_out_fini(&o);

        /* a long formatted error (past the stack buffer) */
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        big[100] = '\n';
        net_resp_out_init(&o, 64);
        net_resp_add_errorf(&o, "ERR %s", big);
        {
                size_t len;
                char *got = collect(&o, &len);

                cr_assert(eq(sz, len, 1 + 4 + 599 + 2));
                cr_assert(eq(int, got[5 + 100], ' '));
                cr_assert(eq(ptr, memchr(got, '\n', len - 1), NULL));
                free(got);
        }
        net_resp_out_fini(&o);
}

/* The reference stream written with small blocks, sent in odd-sized pieces. */
Test(resp_write, replies_across_blocks_with_partial_sends)
{
        enum { N = 500 };
        struct net_resp_out o, ref;
        char *want, *got, val[300];
        size_t want_len, len, sent = 0;
        unsigned seed = 7;

        memset(val, 'v', sizeof(val));
        net_resp_out_init(&o, 64);
        net_resp_out_init(&ref, 1 << 20);
        for (int i = 0; i < N; i++) {
                struct net_resp_out *w[2] = { &o, &ref };

                for (int k = 0; k < 2; k++) {
                        net_resp_add_int(w[k], i * 7919);
                        net_resp_add_bulk(w[k], val, (size_t)(i % 300));
                        net_resp_add_simple(w[k], "OK", 2);
                }
        }
        want = collect(&ref, &want_len);
        got = collect(&o, &len);
        cr_assert(eq(sz, len, want_len));
        cr_assert(eq(int, memcmp(got, want, len), 0));
        free(got);
        /* send in random pieces; what is left is always the reference's tail */
        for (int round = 0; sent < want_len && round < 100000; round++) {
                size_t n;

                seed = seed * 1103515245u + 12345u;
                n = 1 + (seed >> 8) % 700;
                if (n > want_len - sent)
                        n = want_len - sent;
                net_resp_out_consume(&o, n);
                sent += n;
                cr_assert(eq(sz, net_resp_out_pending_bytes(&o), want_len - sent));
                if (round % 16 == 0) {
                        got = collect(&o, &len);
                        cr_assert(eq(sz, len, want_len - sent));
                        cr_assert(eq(int, memcmp(got, want + sent, len), 0));
                        free(got);
                }
        }
        cr_assert(eq(sz, sent, want_len));
        free(want);
        net_resp_out_fini(&o);
        net_resp_out_fini(&ref);
}

Test(resp_write, big_bulk_gets_its_own_block_and_is_freed_when_sent)
{
        size_t vlen = 1 << 20, len;
        char *val = malloc(vlen), *got;
        struct net_resp_out o;
        struct iovec iov[8];

        memset(val, 'q', vlen);
        net_resp_out_init(&o, 0);
        net_resp_add_simple(&o, "OK", 2);
        net_resp_add_bulk(&o, val, vlen);
        net_resp_add_int(&o, 1);
        cr_assert(le(int, net_resp_out_iov(&o, iov, 8, NULL), 4));
        got = collect(&o, &len);
        cr_assert(eq(sz, len, 5 + 10 + vlen + 2 + 4));
        cr_assert(eq(int, memcmp(got + 5, "$1048576\r\nqqq", 13), 0));
        cr_assert(eq(int, memcmp(got + len - 7, "q\r\n:1\r\n", 7), 0));
        free(got);
        net_resp_out_consume(&o, len);
        cr_assert(eq(sz, net_resp_out_pending_bytes(&o), 0));
        cr_assert(le(sz, net_resp_out_mem_bytes(&o), 3 * NET_RESP_DEFAULT_CHUNK_BYTES),
                  "the 1 MiB block is freed");
        free(val);
        net_resp_out_fini(&o);
}

/* CLIENT LIST's obl/oll/omem: the oldest block's unsent bytes, then the
 * blocks after it and their memory. */
Test(resp_write, shape_is_the_oldest_block_and_the_rest)
{
        size_t vlen = 1 << 20, head, more, mem;
        char *val = malloc(vlen);
        struct net_resp_out o;

        memset(val, 'q', vlen);
        net_resp_out_init(&o, 0);
        net_resp_out_shape(&o, &head, &more, &mem);
        cr_expect(eq(sz, head + more + mem, 0));
        net_resp_add_simple(&o, "OK", 2);
        net_resp_out_shape(&o, &head, &more, &mem);
        cr_expect(eq(sz, head, 5));
        cr_expect(eq(sz, more + mem, 0));
        net_resp_add_bulk(&o, val, vlen);       /* fills the block, the rest in its own */
        net_resp_add_int(&o, 1);                /* and a third */
        net_resp_out_shape(&o, &head, &more, &mem);
        cr_expect(eq(sz, head, NET_RESP_DEFAULT_CHUNK_BYTES));
        cr_expect(eq(sz, more, 2));
        cr_expect(ge(sz, mem, vlen + 5 + 10 + 2 - NET_RESP_DEFAULT_CHUNK_BYTES));
        net_resp_out_consume(&o, net_resp_out_pending_bytes(&o));
        net_resp_out_shape(&o, &head, &more, &mem);
        cr_expect(eq(sz, head + more + mem, 0));
        free(val);
        net_resp_out_fini(&o);
}

/* A connection that keeps up reuses one block: memory stays flat. */
Test(resp_write, drained_output_reuses_its_block)
{
        struct net_resp_out o;
        size_t mem;

        net_resp_out_init(&o, 0);
        net_resp_add_simple(&o, "OK", 2);
        net_resp_out_consume(&o, 5);
        mem = net_resp_out_mem_bytes(&o);
        for (int i = 0; i < 100000; i++) {
                net_resp_add_int(&o, i);
                net_resp_add_simple(&o, "OK", 2);
                net_resp_out_consume(&o, net_resp_out_pending_bytes(&o));
        }
        cr_assert(eq(sz, net_resp_out_mem_bytes(&o), mem));
        EXPECT(&o, "");
        net_resp_out_fini(&o);
}

Test(resp_write, deferred_array_holds_back_what_follows_until_set)
{
        struct net_resp_out o;
        struct net_out_node *slot;

        net_resp_out_init(&o, 0);
        net_resp_add_simple(&o, "OK", 2);
        slot = net_resp_add_deferred(&o);
        cr_assert(not(eq(ptr, slot, NULL)));
        net_resp_add_bulk(&o, "a", 1);
        net_resp_add_bulk(&o, "b", 1);
        EXPECT(&o, "+OK\r\n");
        cr_assert(eq(sz, net_resp_out_pending_bytes(&o), 5 + 14));
        net_resp_out_consume(&o, 5);
        EXPECT(&o, "");
        net_resp_set_deferred(&o, slot, NET_RESP_ARRAY, 2);
        EXPECT(&o, "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
        net_resp_out_consume(&o, 3);
        EXPECT(&o, "\n$1\r\na\r\n$1\r\nb\r\n");
        net_resp_out_consume(&o, 15);
        cr_assert(eq(sz, net_resp_out_pending_bytes(&o), 0));
        net_resp_add_int(&o, 5);
        EXPECT(&o, ":5\r\n");
        net_resp_out_fini(&o);
}

/* SCAN-like: a known outer array, a deferred inner one; a deferred map in
 * both protocols; a slot first in an empty writer and one at a block's end. */
Test(resp_write, nested_and_edge_deferred_headers)
{
        struct net_resp_out o;
        struct net_out_node *outer, *inner, *map;
        char fill[64];

        for (int proto = 2; proto <= 3; proto++) {
                net_resp_out_init(&o, 64);
                net_resp_out_set_proto(&o, (enum net_resp_proto)proto);
                outer = net_resp_add_deferred(&o);      /* empty writer: no block yet */
                net_resp_add_bulk(&o, "0", 1);
                inner = net_resp_add_deferred(&o);
                map = net_resp_add_deferred(&o);        /* two slots in a row */
                net_resp_add_bulk(&o, "k", 1);
                net_resp_add_int(&o, 1);
                net_resp_set_deferred(&o, map, NET_RESP_MAP, 1);
                EXPECT(&o, "");
                net_resp_set_deferred(&o, inner, NET_RESP_ARRAY, 1);
                EXPECT(&o, "");
                net_resp_set_deferred(&o, outer, NET_RESP_ARRAY, 2);
                if (proto == 2)
                        EXPECT(&o, "*2\r\n$1\r\n0\r\n*1\r\n*2\r\n$1\r\nk\r\n:1\r\n");
                else
                        EXPECT(&o, "*2\r\n$1\r\n0\r\n*1\r\n%1\r\n$1\r\nk\r\n:1\r\n");
                net_resp_out_fini(&o);
        }

        /* the tail block exactly full when the slot is taken */
        memset(fill, 'f', sizeof(fill));
        fill[0] = '+';
        fill[62] = '\r';
        fill[63] = '\n';
        net_resp_out_init(&o, 64);
        net_resp_add_raw(&o, fill, 64);
        outer = net_resp_add_deferred(&o);
        net_resp_add_bool(&o, true);
        net_resp_set_deferred(&o, outer, NET_RESP_SET, 1);
        {
                size_t len;
                char *got = collect(&o, &len);

                cr_assert(eq(sz, len, 64 + 4 + 4));
                cr_assert(eq(int, memcmp(got + 64, "*1\r\n:1\r\n", 8), 0));
                free(got);
        }
        net_resp_out_consume(&o, 66);
        EXPECT(&o, "\r\n:1\r\n");
        net_resp_out_fini(&o);
}

/* Bytes handed out for a send stay put while replies are appended. */
Test(resp_write, appends_during_a_send_leave_handed_out_bytes_alone)
{
        struct net_resp_out o;
        struct iovec iov[64];
        char snap[4096], *p = snap, *got;
        size_t bytes, len;
        int n;

        net_resp_out_init(&o, 64);
        for (int i = 0; i < 20; i++)
                net_resp_add_int(&o, i * 1000003);
        n = net_resp_out_iov(&o, iov, 64, &bytes);
        for (int i = 0; i < n; i++) {
                memcpy(p, iov[i].iov_base, iov[i].iov_len);
                p += iov[i].iov_len;
        }
        for (int i = 0; i < 50; i++) {
                struct net_out_node *d = net_resp_add_deferred(&o);

                net_resp_add_bulk(&o, "xyzxyzxyzxyz", 12);
                net_resp_set_deferred(&o, d, NET_RESP_ARRAY, 1);
        }
        p = snap;
        for (int i = 0; i < n; i++) {
                cr_assert(eq(int, memcmp(iov[i].iov_base, p, iov[i].iov_len), 0), "iov %d changed", i);
                p += iov[i].iov_len;
        }
        net_resp_out_consume(&o, bytes);
        got = collect(&o, &len);
        cr_assert(eq(sz, len, 50 * (4 + 19)));
        for (int i = 0; i < 50; i++)
                cr_assert(eq(int, memcmp(got + i * 23, "*1\r\n$12\r\nxyzxyzxyzxyz\r\n", 23), 0));
        free(got);
        net_resp_out_fini(&o);
}

Test(resp_write, failed_allocation_fails_the_writer_for_good)
{
        struct net_resp_out o;
        char data[64] = { 0 };

        net_resp_out_init(&o, 64);
        net_resp_add_simple(&o, "OK", 2);
        cr_assert(eq(int, net_resp_add_bulk(&o, data, (size_t)1 << 62), -ENOMEM));
        cr_assert(net_resp_out_failed(&o));
        cr_assert(eq(int, net_resp_add_int(&o, 1), -ENOMEM));
        cr_assert(eq(int, net_resp_add_simple(&o, "OK", 2), -ENOMEM));
        cr_assert(eq(int, net_resp_add_errorf(&o, "ERR %d", 1), -ENOMEM));
        cr_assert(eq(ptr, net_resp_add_deferred(&o), NULL));
        net_resp_set_deferred(&o, NULL, NET_RESP_ARRAY, 1);
        net_resp_out_fini(&o);
        net_resp_out_fini(NULL);
}

Test(resp_write, error_replies_are_counted_by_their_code)
{
        struct net_resp_errstats *st = calloc(1, sizeof(*st));
        struct net_resp_out o;
        char code[64];

        net_resp_out_init(&o, 0);
        net_resp_out_set_errstats(&o, st);
        net_resp_add_error(&o, "ERR syntax error", 16);
        net_resp_add_errorf(&o, "WRONGTYPE Operation against a key holding %s", "a list");
        net_resp_add_error(&o, "ERR again", 9);
        net_resp_add_error(&o, "NOSPACE", 7);                   /* no code word: ERR */
        memset(code, 'A', sizeof(code));
        memcpy(code + 40, " tail", 5);
        net_resp_add_error(&o, code, 45);                       /* no space within 32: ERR */
        net_resp_add_simple(&o, "OK", 2);
        cr_expect(eq(u32, net_resp_out_errors(&o), 5));
        cr_expect(eq(u64, st->total, 5));
        cr_assert(eq(u32, st->n_codes, 2));
        cr_expect(eq(str, st->code[0], "ERR"));
        cr_expect(eq(u64, st->count[0], 4));
        cr_expect(eq(str, st->code[1], "WRONGTYPE"));
        cr_expect(eq(u64, st->count[1], 1));
        net_resp_out_note_error(&o);                            /* a child's, copied raw */
        cr_expect(eq(u32, net_resp_out_errors(&o), 6));
        cr_expect(eq(u64, st->total, 5));
        net_resp_out_fini(&o);
        free(st);
}

Test(resp_write, errstats_keep_the_first_codes_and_count_the_rest_in_total)
{
        struct net_resp_errstats *st = calloc(1, sizeof(*st));
        char text[32];

        for (int i = 0; i < NET_RESP_ERR_CODES + 5; i++) {
                int n = snprintf(text, sizeof(text), "E%d text", i);

                net_resp_errstats_count(st, text, (size_t)n);
        }
        cr_expect(eq(u32, st->n_codes, NET_RESP_ERR_CODES));
        cr_expect(eq(u64, st->total, NET_RESP_ERR_CODES + 5));
        free(st);
}
