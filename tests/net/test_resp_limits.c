/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Limits of the RESP request parser: each at, just below and just above its
 * value (small custom limits and the defaults), fed whole and one byte a
 * call; the unauthenticated limits; and memory: a huge announced array or
 * bulk allocates nothing before its bytes arrive, and what a big command
 * took is given back.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "net/resp_parse.h"
#include "resp_helpers.h"

TestSuite(resp_limits, .timeout = 60);

static const struct net_resp_limits small = {
        .max_bulk_bytes = 10, .max_array_len = 4, .max_inline_bytes = 16, .max_cmd_bytes = 64,
};

/* The rendering of in, checked to be the same whole and one byte a call. */
static char *render(const struct net_resp_limits *lim, const char *in, size_t len)
{
        char *whole = render_whole(lim, in, len);
        char *bytewise = render_bytewise(lim, in, len);

        cr_assert(eq(str, bytewise, whole), "one byte a call differs from whole");
        free(bytewise);
        return whole;
}

static void expect(const struct net_resp_limits *lim, const char *in, const char *want)
{
        char *got = render(lim, in, strlen(in));

        cr_expect(eq(str, got, (char *)want), "input %s", in);
        free(got);
}

Test(resp_limits, small_limits_at_below_and_above)
{
        expect(&small, "*1\r\n$9\r\n123456789\r\n", "[123456789]\n");
        expect(&small, "*1\r\n$10\r\n1234567890\r\n", "[1234567890]\n");
        expect(&small, "*1\r\n$11\r\n12345678901\r\n", "!Protocol error: invalid bulk length");
        expect(&small, "*1\r\n$11\r\n", "!Protocol error: invalid bulk length"); /* no body */
        expect(&small, "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", "[a][b][c]\n");
        expect(&small, "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", "[a][b][c][d]\n");
        expect(&small, "*5\r\n", "!Protocol error: invalid multibulk length");
        /* inline: 15, 16 and 17 bytes of content, with CRLF and with LF */
        expect(&small, "aaaaaaaaaaaaaaa\r\n", "[aaaaaaaaaaaaaaa]\n");
        expect(&small, "aaaaaaaaaaaaaaaa\r\n", "[aaaaaaaaaaaaaaaa]\n");
        expect(&small, "aaaaaaaaaaaaaaaa\n", "[aaaaaaaaaaaaaaaa]\n");
        expect(&small, "aaaaaaaaaaaaaaaaa\r\n", "!Protocol error: too big inline request");
        expect(&small, "aaaaaaaaaaaaaaaaa\n", "!Protocol error: too big inline request");
        expect(&small, "aaaaaaaaaaaaaaaaaa", "!Protocol error: too big inline request");
        expect(&small, "aaaaaaaaaaaaaaaaa", "");   /* could still end in CR LF */
        /* a length line: 16 bytes ('*' included) without CR wait, 17 fail */
        expect(&small, "*000000000000000", "");
        expect(&small, "*0000000000000000", "!Protocol error: too big mbulk count string");
        expect(&small, "*0000000000000000\r\n", "!Protocol error: too big mbulk count string");
        expect(&small, "*000000000000000\r\n", "!Protocol error: invalid multibulk length");
        expect(&small, "*1\r\n$00000000000000", "");
        expect(&small, "*1\r\n$000000000000000", "");
        expect(&small, "*1\r\n$0000000000000000", "!Protocol error: too big bulk count string");
        expect(&small, "*1\r\nx000000000000000000", "!Protocol error: too big bulk count string");
}

/* max_cmd_bytes counts every byte of the command; 64 pass, 65 fail. */
Test(resp_limits, whole_command_limit)
{
        struct net_resp_limits lim = small;
        /* 4 + 3 * (5 + 10 + 2) + (4 + 3 + 2) = 64 bytes */
        static const char at[] =
                "*4\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$3\r\n012\r\n";
        static const char above[] =
                "*4\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$10\r\n0123456789\r\n$4\r\n0123\r\n";

        cr_assert(eq(sz, sizeof(at) - 1, 64));
        expect(&lim, at, "[0123456789][0123456789][0123456789][012]\n");
        expect(&lim, above, "!Protocol error: too big request");
        lim.max_cmd_bytes = 10;
        expect(&lim, "abcdefghi\n", "[abcdefghi]\n");
        expect(&lim, "abcdefghij\n", "!Protocol error: too big request");
}

Test(resp_limits, default_limits_at_and_above)
{
        char *in = malloc(70000), *got;
        size_t n;

        cr_assert(not(eq(ptr, in, NULL)));
        expect(NULL, "*1048576\r\n", "");
        expect(NULL, "*1048577\r\n", "!Protocol error: invalid multibulk length");
        expect(NULL, "*1\r\n$536870912\r\n", "");
        expect(NULL, "*1\r\n$536870913\r\n", "!Protocol error: invalid bulk length");
        /* an inline line of 65536 bytes passes, 65537 fail */
        memset(in, 'a', 65537);
        memcpy(in + 65536, "\r\n", 2);
        got = render(NULL, in, 65538);
        cr_assert(eq(sz, strlen(got), 65536 + 3));
        free(got);
        memset(in, 'a', 65537);
        memcpy(in + 65537, "\r\n", 2);
        got = render(NULL, in, 65539);
        cr_assert(eq(str, got, "!Protocol error: too big inline request"));
        free(got);
        /* a count line of 65536 bytes without CR waits, 65537 fail */
        in[0] = '*';
        memset(in + 1, '1', 65536);
        got = render_whole(NULL, in, 65536);
        cr_assert(eq(str, got, ""));
        free(got);
        got = render_whole(NULL, in, 65537);
        cr_assert(eq(str, got, "!Protocol error: too big mbulk count string"));
        free(got);
        n = (size_t)sprintf(in, "*1\r\n");
        memset(in + n, '$', 65537);
        got = render_whole(NULL, in, n + 65537);
        cr_assert(eq(str, got, "!Protocol error: too big bulk count string"));
        free(got);
        free(in);
}

Test(resp_limits, unauthenticated_limits)
{
        struct net_resp_parser p;
        struct net_cmd cmd;

        net_resp_parser_init(&p, NULL);
        net_resp_parser_set_authenticated(&p, false);
        cr_assert(eq(i64, net_resp_parse(&p, "*10\r\n$16384\r\n", 13, &cmd), 0));
        net_resp_parser_fini(&p);

        net_resp_parser_init(&p, NULL);
        net_resp_parser_set_authenticated(&p, false);
        cr_assert(eq(i64, net_resp_parse(&p, "*10\r\n$", 6, &cmd), 0));
        cr_assert(eq(i64, net_resp_parse(&p, "16385\r\n", 7, &cmd), -SCREE_EPROTO));
        cr_assert(eq(str, (char *)net_resp_parser_error(&p), "Protocol error: unauthenticated bulk length"));
        net_resp_parser_fini(&p);

        net_resp_parser_init(&p, NULL);
        net_resp_parser_set_authenticated(&p, false);
        cr_assert(eq(i64, net_resp_parse(&p, "*11\r\n", 5, &cmd), -SCREE_EPROTO));
        cr_assert(eq(str, (char *)net_resp_parser_error(&p), "Protocol error: unauthenticated multibulk length"));
        net_resp_parser_fini(&p);

        /* invalid still wins over unauthenticated, as in Redis */
        net_resp_parser_init(&p, NULL);
        net_resp_parser_set_authenticated(&p, false);
        cr_assert(eq(i64, net_resp_parse(&p, "*2000000\r\n", 10, &cmd), -SCREE_EPROTO));
        cr_assert(eq(str, (char *)net_resp_parser_error(&p), "Protocol error: invalid multibulk length"));
        net_resp_parser_fini(&p);

        /* authenticated again: the normal limits */
        net_resp_parser_init(&p, NULL);
        net_resp_parser_set_authenticated(&p, false);
        net_resp_parser_set_authenticated(&p, true);
        cr_assert(eq(i64, net_resp_parse(&p, "*11\r\n$16385\r\n", 13, &cmd), 0));
        net_resp_parser_fini(&p);
}

Test(resp_limits, huge_announced_lengths_allocate_nothing_up_front)
{
        struct net_resp_parser p;
        struct net_cmd cmd;
        char arg[] = "$1\r\nx\r\n";

        net_resp_parser_init(&p, NULL);
        cr_assert(eq(sz, net_resp_parser_mem_bytes(&p), 0));
        cr_assert(eq(i64, net_resp_parse(&p, "*1048576\r\n", 10, &cmd), 0));
        cr_assert(le(sz, net_resp_parser_mem_bytes(&p), 4096));
        /* the argument array grows with the arguments that arrive */
        for (int i = 0; i < 1000; i++)
                cr_assert(eq(i64, net_resp_parse(&p, arg, 7, &cmd), 0));
        cr_assert(le(sz, net_resp_parser_mem_bytes(&p), 1024 * 40 + 16384));
        cr_assert(eq(sz, net_resp_parser_buffered_bytes(&p), 10 + 7000));
        net_resp_parser_fini(&p);

        net_resp_parser_init(&p, NULL);
        cr_assert(eq(i64, net_resp_parse(&p, "*1\r\n$536870912\r\nabc", 20, &cmd), 0));
        cr_assert(le(sz, net_resp_parser_mem_bytes(&p), 4096));
        cr_assert(eq(sz, net_resp_parser_buffered_bytes(&p), 20));
        net_resp_parser_fini(&p);
}

/* A 4 MiB value in 1000-byte reads: copied once, then given back. */
Test(resp_limits, big_command_memory_is_given_back)
{
        size_t vlen = 4u << 20, len = 0, off;
        char *in = malloc(vlen + 64);
        struct net_resp_parser p;
        struct net_cmd cmd;
        ssize_t r = 0;

        cr_assert(not(eq(ptr, in, NULL)));
        memset(in, 'v', vlen + 64);
        len = (size_t)sprintf(in, "*2\r\n$3\r\nSET\r\n$%zu\r\n", vlen);
        in[len] = 'v';          /* sprintf's NUL */
        len += vlen;
        memcpy(in + len, "\r\n", 2);
        len += 2;
        net_resp_parser_init(&p, NULL);
        for (off = 0; off < len; off += 1000) {
                size_t n = len - off < 1000 ? len - off : 1000;

                r = net_resp_parse(&p, in + off, n, &cmd);
                if (r > 0)
                        break;
                cr_assert(eq(i64, r, 0));
                cr_assert(eq(sz, net_resp_parser_buffered_bytes(&p), off + n));
        }
        cr_assert(gt(i64, r, 0));
        cr_assert(eq(sz, cmd.argv[1].len, vlen));
        cr_assert(eq(int, cmd.argv[1].ptr[0], 'v'));
        cr_assert(eq(int, cmd.argv[1].ptr[vlen - 1], 'v'));
        cr_assert(le(sz, net_resp_parser_mem_bytes(&p), 2 * len + 4096));
        cr_assert(eq(i64, net_resp_parse(&p, "", 0, &cmd), 0));
        cr_assert(le(sz, net_resp_parser_mem_bytes(&p), 4096), "the stash was given back");
        net_resp_parser_fini(&p);
        free(in);
}
