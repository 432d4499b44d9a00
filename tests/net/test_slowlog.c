/* SPDX-License-Identifier: Apache-2.0 */
/* The slow-command log's ring and Redis's argument truncation (net/slowlog.h). */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdio.h>
#include <string.h>

#include "net/slowlog.h"

TestSuite(slowlog);

static struct net_arg arg(const char *s)
{
        return (struct net_arg){ .ptr = s, .len = strlen(s) };
}

Test(slowlog, keeps_the_newest_max_len_newest_first)
{
        struct net_slowlog *l = net_slowlog_new();
        struct net_arg a[] = { arg("GET"), arg("k") };

        for (uint64_t id = 0; id < 10; id++)
                cr_assert(eq(int, net_slowlog_push(l, 4, id, 100, id * 10, a, 2, "1.2.3.4:5", NULL),
                             0));
        cr_assert(eq(u32, l->n, 4));
        for (uint32_t i = 0; i < 4; i++)
                cr_expect(eq(u64, net_slowlog_at(l, i)->id, 9 - i));
        cr_expect(eq(ptr, (void *)net_slowlog_at(l, 4), NULL));
        /* Shrinking keeps the newest; growing keeps them all. */
        net_slowlog_push(l, 2, 10, 100, 1, a, 2, "x", "name");
        cr_assert(eq(u32, l->n, 2));
        cr_expect(eq(u64, net_slowlog_at(l, 0)->id, 10));
        cr_expect(eq(u64, net_slowlog_at(l, 1)->id, 9));
        cr_expect(eq(str, (char *)net_slowlog_at(l, 0)->name, "name"));
        net_slowlog_push(l, 8, 11, 100, 1, a, 2, "x", NULL);
        cr_assert(eq(u32, l->n, 3));
        cr_expect(eq(u64, net_slowlog_at(l, 2)->id, 9));
        net_slowlog_reset(l);
        cr_expect(eq(u32, l->n, 0));
        net_slowlog_push(l, 0, 12, 100, 1, a, 2, "x", NULL);
        cr_expect(eq(u32, l->n, 0));
        net_slowlog_free(l);
}

Test(slowlog, truncates_arguments_like_redis)
{
        struct net_slowlog *l = net_slowlog_new();
        struct net_arg a[40];
        char big[300];
        const struct net_slowlog_entry *e;

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = 0;
        for (int i = 0; i < 40; i++)
                a[i] = arg("v");
        a[1] = arg(big);
        cr_assert(eq(int, net_slowlog_push(l, 10, 1, 100, 5, a, 40, "a", NULL), 0));
        e = net_slowlog_at(l, 0);
        cr_assert(eq(u32, e->argc, NET_SLOWLOG_MAX_ARGC));
        cr_expect(eq(sz, e->argv[1].len, 128 + strlen("... (171 more bytes)")));
        cr_expect(zero(memcmp(e->argv[1].ptr + 128, "... (171 more bytes)", 20)));
        cr_expect(eq(sz, e->argv[31].len, strlen("... (9 more arguments)")));
        cr_expect(zero(memcmp(e->argv[31].ptr, "... (9 more arguments)", e->argv[31].len)));
        cr_expect(eq(sz, e->argv[30].len, 1));
        /* Exactly 32 arguments and 128 bytes: kept whole. */
        a[1] = (struct net_arg){ .ptr = big, .len = 128 };
        net_slowlog_push(l, 10, 2, 100, 5, a, 32, "a", NULL);
        e = net_slowlog_at(l, 0);
        cr_expect(eq(u32, e->argc, 32));
        cr_expect(eq(sz, e->argv[1].len, 128));
        cr_expect(eq(sz, e->argv[31].len, 1));
        net_slowlog_free(l);
}
