/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RESP request parser (net/resp_parse.h): a table of inputs -- every
 * request form, and every malformed input we know of -- with the exact
 * commands or error text each gives, fed whole, cut at every position, cut
 * at every pair of positions, and one byte a call; pipelines; limits at,
 * below and above; a dead parser staying dead; zero-copy arguments; memory
 * that follows the bytes received, never an announced length.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <scree/scree_errors.h>

#include "net/resp_parse.h"
#include "resp_helpers.h"

TestSuite(resp_parse, .timeout = 30);

struct pcase {
        const char *in;
        size_t len;             /* 0: strlen(in) */
        const char *want;
};

#define E_MBULK "!Protocol error: invalid multibulk length"
#define E_BULK "!Protocol error: invalid bulk length"
#define E_QUOTES "!Protocol error: unbalanced quotes in request"
#define E_CRLF "!Protocol error: invalid CRLF in request"

static const struct pcase cases[] = {
        /* arrays of bulk strings */
        { "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n", 0, "[SET][key][value]\n" },
        { "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", 0, "[PING]\n[ECHO][hi]\n" },
        { "*2\r\n$3\r\nGET\r\n$0\r\n\r\n", 0, "[GET][]\n" },
        { "*1\r\n$7\r\na\0\r\nb\n\xff\r\n", 17, "[a\\x00\\x0d\\x0ab\\x0a\\xff]\n" },
        { "*0\r\n*1\r\n$1\r\nx\r\n", 0, "[x]\n" },
        { "*-1\r\n*-5\r\n*-9223372036854775808\r\n*1\r\n$1\r\ny\r\n", 0, "[y]\n" },
        { "*1\r\n$10\r\n0123456789\r\n", 0, "[0123456789]\n" },
        { "*2\r\n$0\r\n\r\n$0\r\n\r\n", 0, "[][]\n" },
        /* incomplete: nothing yet, no error */
        { "*2\r\n$3\r\nGET\r\n$3\r\nke", 0, "" },
        { "*1\r\n$3\r\nab\r\n", 0, E_CRLF },    /* "ab\r", then LF where CR is due */
        { "*1048576\r\n", 0, "" },
        /* inline */
        { "PING\r\n", 0, "[PING]\n" },
        { "PING\n", 0, "[PING]\n" },
        { "  set \t a   b \r\n", 0, "[set][a][b]\n" },
        { "\r\n\n   \r\nPING\r\n", 0, "[PING]\n" },
        { "SET \"a b\" 'c d'\r\n", 0, "[SET][a b][c d]\n" },
        { "\"\\x41\\x4a\\n\\r\\t\\b\\a\\\\\\\"z\"\n", 0, "[AJ\\x0a\\x0d\\x09\\x08\\x07\\x5c\"z]\n" },
        { "\"\\xZZ\" \"\\x4\" \"\\q\"\n", 0, "[xZZ][x4][q]\n" },
        { "'it\\'s' 'a\\nb' '\"'\n", 0, "[it's][a\\x5cnb][\"]\n" },
        { "foo\"bar\" x'y z'\n", 0, "[foobar][xy z]\n" },
        { "\"\" ''\n", 0, "[][]\n" },
        { "\"a\"\v\"b\"\n", 0, "[a][b]\n" },
        { "a\vb\fc\n", 0, "[a\\x0bb\\x0cc]\n" },
        { "a\rb\n", 0, "[a][b]\n" },
        { "a\0b c\r\n", 7, "[a\\x00b][c]\n" },
        { "+x\r\n$3\r\n:1\r\n", 0, "[+x]\n[$3]\n[:1]\n" },
        { "PING", 0, "" },
        /* multibulk count errors */
        { "*abc\r\n", 0, E_MBULK },
        { "*\r\n", 0, E_MBULK },
        { "*+1\r\n", 0, E_MBULK },
        { "*01\r\n", 0, E_MBULK },
        { "*00\r\n", 0, E_MBULK },
        { "*-0\r\n", 0, E_MBULK },
        { "*-\r\n", 0, E_MBULK },
        { "*1-\r\n", 0, E_MBULK },
        { "* 1\r\n", 0, E_MBULK },
        { "*1 \r\n", 0, E_MBULK },
        { "*1\n$4\r\nPING\r\n", 0, E_MBULK },
        { "*1\0\r\n", 5, E_MBULK },
        { "*9223372036854775808\r\n", 0, E_MBULK },
        { "*99999999999999999999\r\n", 0, E_MBULK },
        { "*-9223372036854775809\r\n", 0, E_MBULK },
        { "*1048577\r\n", 0, E_MBULK },
        { "*1\rX", 0, E_CRLF },
        { "*0\r", 0, "" },
        /* bulk length errors */
        { "*1\r\n$abc\r\n", 0, E_BULK },
        { "*1\r\n$\r\n", 0, E_BULK },
        { "*1\r\n$-1\r\n", 0, E_BULK },
        { "*1\r\n$-0\r\n", 0, E_BULK },
        { "*1\r\n$+3\r\nabc\r\n", 0, E_BULK },
        { "*1\r\n$03\r\nabc\r\n", 0, E_BULK },
        { "*1\r\n$1\0\r\nx\r\n", 12, E_BULK },
        { "*1\r\n$536870913\r\n", 0, E_BULK },
        { "*1\r\n$18446744073709551616\r\n", 0, E_BULK },
        { "*1\r\n$3\rXabc\r\n", 0, E_CRLF },
        { "*1\r\n$3\n\rabc\r\n", 0, E_BULK },
        /* something else where a bulk is due */
        { "*1\r\n+x\r\n", 0, "!Protocol error: expected '$', got '+'" },
        { "*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", 0, "!Protocol error: expected '$', got 'f'" },
        { "*1\r\n\r\n", 0, "!Protocol error: expected '$', got ' '" },
        { "*1\r\n\nx\r\n", 0, "!Protocol error: expected '$', got ' '" },
        { "*1\r\n\0x\r\n", 8, "!Protocol error: expected '$', got ' '" },
        { "*2\r\n$1\r\na\r\n*1\r\n", 0, "!Protocol error: expected '$', got '*'" },
        /* the bytes of a bulk and their CRLF */
        { "*1\r\n$3\r\nab\r\n\r\n", 0, E_CRLF },
        { "*1\r\n$3\r\nabcd\r\n", 0, E_CRLF },
        { "*1\r\n$3\r\nabc\rX", 0, E_CRLF },
        { "*1\r\n$3\r\nabc\n\r", 0, E_CRLF },
        { "*1\r\n$0\r\nx\r\n", 0, E_CRLF },
        /* inline quoting errors */
        { "SET \"abc\n", 0, E_QUOTES },
        { "SET 'abc\n", 0, E_QUOTES },
        { "\"a\"b\n", 0, E_QUOTES },
        { "'a'b\n", 0, E_QUOTES },
        { "foo\"bar\"baz\n", 0, E_QUOTES },
        { "\"a\\\"\n", 0, E_QUOTES },
        { "\"ab\\\n", 0, E_QUOTES },
        { "SET \"a\r\nb\"\r\n", 0, E_QUOTES },
        { "'it\\'\n", 0, E_QUOTES },
        /* the commands before an error come out */
        { "PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n", 0, "[PING]\n[PING]\n" E_MBULK },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* Parameters are indices into cases[]: Criterion may run a test in a fresh
 * exec of the binary, where pointers of the parent mean nothing. */
static unsigned *case_indices(void)
{
        static unsigned idx[N_CASES];

        for (unsigned i = 0; i < N_CASES; i++)
                idx[i] = i;
        return idx;
}

ParameterizedTestParameters(resp_parse, table)
{
        return cr_make_param_array(unsigned, case_indices(), N_CASES);
}

static size_t case_len(const struct pcase *c)
{
        return c->len ? c->len : strlen(c->in);
}

/* A dead parser answers every later call with the same error. */
static void expect_dead_stays_dead(const struct pcase *c)
{
        static const char ping[] = "*1\r\n$4\r\nPING\r\n";
        struct net_resp_parser p;
        struct text t = { 0 };
        struct net_cmd cmd;

        net_resp_parser_init(&p, NULL);
        feed_cuts(&p, c->in, case_len(c), NULL, 0, &t);
        cr_assert(net_resp_parser_is_dead(&p));
        for (int i = 0; i < 3; i++) {
                cr_assert(eq(i64, net_resp_parse(&p, ping, sizeof(ping) - 1, &cmd), -SCREE_EPROTO));
                cr_assert(eq(i64, net_resp_parse(&p, "", 0, &cmd), -SCREE_EPROTO));
        }
        cr_assert(eq(str, (char *)net_resp_parser_error(&p), strrchr(c->want, '!') + 1));
        net_resp_parser_fini(&p);
        free(t.s);
}

/* Each case fed whole, cut at every position and every pair of positions,
 * and one byte a call, gives the same; an error leaves the parser dead. */
ParameterizedTest(unsigned *ci, resp_parse, table)
{
        const struct pcase *c = &cases[*ci];
        size_t len = case_len(c);
        char *got = render_whole(NULL, c->in, len);

        cr_assert(eq(str, got, (char *)c->want), "input %s", c->in);
        free(got);
        for (size_t i = 0; i <= len; i++) {
                for (size_t j = i; j <= len; j++) {
                        size_t cuts[2] = { i, j };

                        got = render_cuts(NULL, c->in, len, cuts, 2);
                        cr_assert(eq(str, got, (char *)c->want), "input %s cut at %zu and %zu", c->in, i, j);
                        free(got);
                }
        }
        got = render_bytewise(NULL, c->in, len);
        cr_assert(eq(str, got, (char *)c->want), "input %s one byte a call", c->in);
        free(got);
        if (c->want[0] == '!' || strstr(c->want, "\n!"))
                expect_dead_stays_dead(c);
}

Test(resp_parse, alive_parser_has_no_error)
{
        struct net_resp_parser p;

        net_resp_parser_init(&p, NULL);
        cr_assert(eq(ptr, (void *)net_resp_parser_error(&p), NULL));
        cr_assert(not(net_resp_parser_is_dead(&p)));
        net_resp_parser_fini(&p);
        net_resp_parser_fini(NULL);
}

/* SET key:000123 <value> as redis-benchmark sends it. */
static size_t make_set(char *dst, unsigned i, size_t vlen)
{
        size_t n = (size_t)sprintf(dst, "*3\r\n$3\r\nSET\r\n$10\r\nkey:%06u\r\n$%zu\r\n", i, vlen);

        memset(dst + n, 'a' + (int)(i % 26), vlen);
        memcpy(dst + n + vlen, "\r\n", 2);
        return n + vlen + 2;
}

Test(resp_parse, pipeline_of_many_commands_in_one_buffer_is_zero_copy)
{
        enum { N = 2000 };
        char *buf = malloc(N * 160);
        size_t len = 0, off = 0;
        struct net_resp_parser p;
        unsigned n = 0;

        for (unsigned i = 0; i < N; i++)
                len += make_set(buf + len, i, i % 100);
        net_resp_parser_init(&p, NULL);
        while (off < len) {
                struct net_cmd cmd;
                ssize_t r = net_resp_parse(&p, buf + off, len - off, &cmd);
                char key[16];

                cr_assert(gt(i64, r, 0));
                cr_assert(eq(sz, cmd.argc, 3));
                snprintf(key, sizeof(key), "key:%06u", n);
                cr_assert(eq(int, memcmp(cmd.argv[1].ptr, key, 10), 0));
                cr_assert(eq(sz, cmd.argv[2].len, n % 100));
                for (size_t a = 0; a < 3; a++)
                        cr_assert(cmd.argv[a].ptr >= buf + off && cmd.argv[a].ptr < buf + off + (size_t)r,
                                  "argument %zu of command %u is not in the buffer", a, n);
                off += (size_t)r;
                n++;
        }
        cr_assert(eq(u32, n, N));
        cr_assert(eq(sz, net_resp_parser_buffered_bytes(&p), 0));
        net_resp_parser_fini(&p);
        free(buf);
}

/* The same pipeline in random fragments gives the same commands as whole. */
Test(resp_parse, pipeline_in_random_fragments_matches_whole)
{
        enum { N = 300 };
        char *buf = malloc(N * 3000);
        size_t len = 0, cuts[64];
        unsigned seed = 12345;
        char *want, *got;

        for (unsigned i = 0; i < N; i++)
                len += make_set(buf + len, i, (i * 37) % 2500);
        for (unsigned i = 0; i < N / 3; i++)
                len += (size_t)sprintf(buf + len, "GET \"key:%06u\"\r\n", i);
        want = render_whole(NULL, buf, len);
        for (int round = 0; round < 50; round++) {
                size_t n_cuts = 0, at = 0;

                while (n_cuts < 64) {
                        seed = seed * 1103515245u + 12345u;
                        at += 1 + (seed >> 8) % (round % 2 ? 50 : 9000);
                        if (at >= len)
                                break;
                        cuts[n_cuts++] = at;
                }
                got = render_cuts(NULL, buf, len, cuts, n_cuts);
                cr_assert(eq(str, got, want), "round %d", round);
                free(got);
        }
        free(want);
        free(buf);
}

Test(resp_parse, split_command_is_copied_into_the_stash_once)
{
        static const char in[] = "*2\r\n$3\r\nGET\r\n$5\r\nhello\r\n";
        size_t len = sizeof(in) - 1, first = 15;
        struct net_resp_parser p;
        struct net_cmd cmd;
        char a[64], b[64];

        memcpy(a, in, first);
        memcpy(b, in + first, len - first);
        net_resp_parser_init(&p, NULL);
        cr_assert(eq(i64, net_resp_parse(&p, a, first, &cmd), 0));
        cr_assert(eq(sz, net_resp_parser_buffered_bytes(&p), first));
        memset(a, 'Z', sizeof(a));      /* the caller may reuse its buffer */
        cr_assert(eq(i64, net_resp_parse(&p, b, len - first, &cmd), (int64_t)(len - first)));
        cr_assert(eq(sz, cmd.argc, 2));
        cr_assert(eq(int, memcmp(cmd.argv[0].ptr, "GET", 3), 0));
        cr_assert(eq(int, memcmp(cmd.argv[1].ptr, "hello", 5), 0));
        cr_assert(cmd.argv[1].ptr < b || cmd.argv[1].ptr >= b + sizeof(b), "in the stash");
        cr_assert(eq(sz, net_resp_parser_buffered_bytes(&p), 0));
        cr_assert(eq(i64, net_resp_parse(&p, "", 0, &cmd), 0));
        net_resp_parser_fini(&p);
}
