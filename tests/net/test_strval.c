/* SPDX-License-Identifier: Apache-2.0 */
/* INCRBYFLOAT's number text and GETRANGE's window (net/strval.h). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <errno.h>
#include <string.h>

#include "net/strval.h"

TestSuite(strval);

/* A table walked in one test (Redis 7's stored texts). */
static const struct {
        const char *in;
        const char *want;
} fmt_cases[] = {
        { "3.0", "3" },         { "10.6", "10.6" },    { "5.0e3", "5000" },
        { "-0.0", "0" },        { "0.1", "0.1" },      { "1e20", "100000000000000000000" },
        { "1e-5", "0.00001" }, { "1e-20", "0" },      { "-2.25", "-2.25" },
        { "1.5", "1.5" },       { "100", "100" },      { "-1e-20", "0" },
};

Test(strval, format_as_redis)
{
        static char buf[NET_LD_MAX];
        long double v;

        for (size_t i = 0; i < sizeof(fmt_cases) / sizeof(fmt_cases[0]); i++) {
                const char *in = fmt_cases[i].in, *want = fmt_cases[i].want;

                cr_assert(eq(int, net_ld_parse(in, strlen(in), &v), 0));
                cr_assert(eq(int, net_ld_format(buf, v), (int)strlen(want)));
                cr_expect(eq(str, buf, (char *)want), "input %s", in);
        }
}

Test(strval, sum_of_tenths_is_exact_enough)
{
        char buf[NET_LD_MAX];
        long double a, b;

        net_ld_parse("10.5", 4, &a);
        net_ld_parse("0.1", 3, &b);
        net_ld_format(buf, a + b);
        cr_assert(eq(str, buf, "10.6"));
}

Test(strval, parse_refuses_what_redis_refuses)
{
        long double v;

        cr_expect(eq(int, net_ld_parse("", 0, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse(" 1", 2, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse("1 ", 2, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse("1x", 2, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse("nan", 3, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse("1e5000", 6, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse("1\0", 2, &v), -EINVAL));
        cr_expect(eq(int, net_ld_parse("inf", 3, &v), 0));
        cr_expect(eq(int, net_ld_parse("0x10", 4, &v), 0));
        cr_expect(v == 16.0L);
}

Test(strval, format_refuses_infinity)
{
        char buf[NET_LD_MAX];

        cr_expect(eq(int, net_ld_format(buf, __builtin_infl()), -EINVAL));
        cr_expect(eq(int, net_ld_format(buf, __builtin_nanl("")), -EINVAL));
}

Test(strval, range_clamp)
{
        size_t off = 99, n = 99;

        cr_expect(net_range_clamp(0, 4, 11, &off, &n) && off == 0 && n == 5);
        cr_expect(net_range_clamp(-5, -1, 11, &off, &n) && off == 6 && n == 5);
        cr_expect(net_range_clamp(-100, 4, 11, &off, &n) && off == 0 && n == 5);
        cr_expect(net_range_clamp(6, 1000, 11, &off, &n) && off == 6 && n == 5);
        cr_expect(net_range_clamp(0, -100, 11, &off, &n) && off == 0 && n == 1);
        cr_expect(not(net_range_clamp(5, 2, 11, &off, &n)));
        cr_expect(not(net_range_clamp(-1, -5, 11, &off, &n)));
        cr_expect(not(net_range_clamp(0, -1, 0, &off, &n)));
        cr_expect(net_range_clamp(INT64_MIN, INT64_MIN, 11, &off, &n) && off == 0 && n == 1);
        cr_expect(net_range_clamp(INT64_MIN, INT64_MAX, 11, &off, &n) && off == 0 && n == 11);
}
