/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Argument parsing (net/args.h) and glob matching (net/glob.h): strict
 * integers at and past the int64 edges, expiry arithmetic and overflow,
 * SET's and EXPIRE's options with Redis's error texts, and glob patterns
 * (classes, ranges, escapes, stars that must backtrack, NUL bytes).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include "net/args.h"
#include "net/glob.h"

static struct net_arg A(const char *s)
{
        return (struct net_arg){ s, strlen(s) };
}

/* Inline text, not pointers: Criterion runs each case in a fresh process. */
struct i64_case {
        char text[32];
        int ret;
        int64_t v;
};

ParameterizedTestParameters(args, i64_table)
{
        static struct i64_case cases[] = {
                { "0", 0, 0 }, { "7", 0, 7 }, { "-7", 0, -7 },
                { "9223372036854775807", 0, INT64_MAX },
                { "-9223372036854775808", 0, INT64_MIN },
                { "9223372036854775808", -EINVAL, 0 }, { "-9223372036854775809", -EINVAL, 0 },
                { "99999999999999999999", -EINVAL, 0 }, { "", -EINVAL, 0 }, { "-", -EINVAL, 0 },
                { "-0", -EINVAL, 0 }, { "007", -EINVAL, 0 }, { "+1", -EINVAL, 0 },
                { " 1", -EINVAL, 0 }, { "1 ", -EINVAL, 0 }, { "1x", -EINVAL, 0 },
                { "1.5", -EINVAL, 0 }, { "123456789012345678901", -EINVAL, 0 },
        };
        return cr_make_param_array(struct i64_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct i64_case *c, args, i64_table)
{
        struct net_arg a = A(c->text);
        int64_t v = 12345;

        cr_assert(eq(int, net_arg_i64(&a, &v), c->ret), "'%s'", c->text);
        cr_assert(eq(i64, v, c->ret == 0 ? c->v : 12345), "'%s'", c->text);
}

Test(args, i64_takes_binary_length_not_nul)
{
        struct net_arg a = { "12\0" "3", 4 };
        int64_t v;

        cr_expect(eq(int, net_arg_i64(&a, &v), -EINVAL));
        a.len = 2;
        cr_expect(eq(int, net_arg_i64(&a, &v), 0));
        cr_expect(eq(i64, v, 12));
}

Test(args, fmt_i64_round_trips_the_edges)
{
        char buf[24];

        cr_expect(eq(sz, net_fmt_i64(buf, INT64_MIN), 20));
        cr_expect(eq(str, buf, "-9223372036854775808"));
        cr_expect(eq(sz, net_fmt_i64(buf, 0), 1));
}

Test(args, expiry_relative_absolute_and_overflow)
{
        uint64_t ms;

        cr_expect(eq(int, net_expiry_ms(10, 1000, false, 5000, &ms), 0));
        cr_expect(eq(u64, ms, 15000));
        cr_expect(eq(int, net_expiry_ms(10, 1000, true, 5000, &ms), 0));
        cr_expect(eq(u64, ms, 10000));
        cr_expect(eq(int, net_expiry_ms(-10, 1000, false, 5000, &ms), 0));
        cr_expect(eq(u64, ms, 0), "below zero clamps to 0");
        cr_expect(eq(int, net_expiry_ms(INT64_MAX, 1000, false, 5000, &ms), -ERANGE));
        cr_expect(eq(int, net_expiry_ms(INT64_MAX - 10, 1, false, 5000, &ms), -ERANGE));
}

static const char *set_parse(const char *words, struct net_set_opts *o)
{
        static char buf[256];
        static struct net_arg argv[8];
        size_t n = 0;
        char *save = NULL, *w;

        strcpy(buf, words);
        for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
                argv[n++] = A(w);
        return net_set_opts_parse(argv, n, 1000000, o);
}

Test(args, set_options_and_their_errors)
{
        struct net_set_opts o;

        cr_expect(eq(ptr, (void *)set_parse("", &o), NULL));
        cr_expect(eq(u32, o.flags, 0));
        cr_expect(eq(ptr, (void *)set_parse("ex 10 nx get", &o), NULL));
        cr_expect(eq(u32, o.flags, NET_SET_EXPIRY | NET_SET_NX | NET_SET_GET));
        cr_expect(eq(u64, o.expiry_ms, 1010000));
        cr_expect(eq(ptr, (void *)set_parse("PXAT 5", &o), NULL));
        cr_expect(eq(u64, o.expiry_ms, 5));
        cr_expect(eq(ptr, (void *)set_parse("KeepTTL XX", &o), NULL));
        cr_expect(eq(str, (char *)set_parse("nx xx", &o), "syntax error"));
        cr_expect(eq(str, (char *)set_parse("ex 1 px 1", &o), "syntax error"));
        cr_expect(eq(str, (char *)set_parse("ex 1 keepttl", &o), "syntax error"));
        cr_expect(eq(str, (char *)set_parse("ex", &o), "syntax error"));
        cr_expect(eq(str, (char *)set_parse("bogus", &o), "syntax error"));
        cr_expect(eq(str, (char *)set_parse("ex abc", &o), NET_ERR_NOT_INT));
        cr_expect(eq(str, (char *)set_parse("ex 0", &o), "invalid expire time in 'set' command"));
        cr_expect(eq(str, (char *)set_parse("px -5", &o), "invalid expire time in 'set' command"));
        cr_expect(eq(str, (char *)set_parse("ex 9223372036854775807", &o),
                     "invalid expire time in 'set' command"));
}

Test(args, expire_options_and_conflicts)
{
        struct net_arg nx = A("NX"), xx = A("xx"), gt = A("gt"), lt = A("lt"), bad = A("zz");
        struct net_arg two[2];
        uint32_t f = 99;
        char buf[96];

        cr_expect(eq(ptr, (void *)net_expire_opts_parse(&gt, 1, &f, buf, sizeof(buf)), NULL));
        cr_expect(eq(u32, f, NET_EXPIRE_GT));
        two[0] = nx;
        two[1] = xx;
        cr_expect(eq(str, (char *)net_expire_opts_parse(two, 2, &f, buf, sizeof(buf)),
                     "NX and XX, GT or LT options at the same time are not compatible"));
        two[0] = gt;
        two[1] = lt;
        cr_expect(eq(str, (char *)net_expire_opts_parse(two, 2, &f, buf, sizeof(buf)),
                     "GT and LT options at the same time are not compatible"));
        cr_expect(eq(str, (char *)net_expire_opts_parse(&bad, 1, &f, buf, sizeof(buf)),
                     "Unsupported option zz"));
}

Test(args, expire_allowed_treats_no_expiry_as_infinite)
{
        cr_expect(net_expire_allowed(0, 0, 5));
        cr_expect(net_expire_allowed(NET_EXPIRE_NX, 0, 5));
        cr_expect(not(net_expire_allowed(NET_EXPIRE_NX, 9, 5)));
        cr_expect(not(net_expire_allowed(NET_EXPIRE_XX, 0, 5)));
        cr_expect(net_expire_allowed(NET_EXPIRE_XX, 9, 5));
        cr_expect(not(net_expire_allowed(NET_EXPIRE_GT, 0, 5)), "nothing beats infinity");
        cr_expect(net_expire_allowed(NET_EXPIRE_GT, 4, 5));
        cr_expect(not(net_expire_allowed(NET_EXPIRE_GT, 5, 5)));
        cr_expect(net_expire_allowed(NET_EXPIRE_LT, 0, 5));
        cr_expect(net_expire_allowed(NET_EXPIRE_LT, 6, 5));
        cr_expect(not(net_expire_allowed(NET_EXPIRE_LT, 5, 5)));
}

struct glob_case {
        char pat[24], s[40];
        bool nocase, want;
};

ParameterizedTestParameters(glob, table)
{
        static struct glob_case cases[] = {
                { "*", "", false, true },           { "*", "anything", false, true },
                { "", "", false, true },            { "", "a", false, false },
                { "a*", "abc", false, true },       { "*c", "abc", false, true },
                { "*b*", "abc", false, true },      { "*x*", "abc", false, false },
                { "a?c", "abc", false, true },      { "a?c", "ac", false, false },
                { "[abc]x", "bx", false, true },    { "[^abc]x", "bx", false, false },
                { "[^abc]x", "dx", false, true },   { "[a-c]", "b", false, true },
                { "[c-a]", "b", false, true },      { "[a-c]", "d", false, false },
                { "\\*", "*", false, true },        { "\\*", "a", false, false },
                { "[\\]]", "]", false, true },      { "MAX*", "maxclients", true, true },
                { "MAX*", "maxclients", false, false }, { "[A-Z]x", "qx", true, true },
                { "*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, false },
                { "*port", "metrics-port", false, true }, { "a*b*c", "a-b-b-c", false, true },
                { "[abc", "b", false, true },       { "a**", "a", false, true },
        };
        return cr_make_param_array(struct glob_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct glob_case *c, glob, table)
{
        cr_assert(eq(int, net_glob_match(c->pat, strlen(c->pat), c->s, strlen(c->s), c->nocase),
                     c->want), "'%s' vs '%s'", c->pat, c->s);
}

Test(glob, binary_safe)
{
        cr_expect(net_glob_match("a?b", 3, "a\0b", 3, false));
        cr_expect(not(net_glob_match("a?b", 3, "a\0b", 2, false)));
}
