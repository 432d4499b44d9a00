/* SPDX-License-Identifier: Apache-2.0 */
/* The slow-command log; see slowlog.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/slowlog.h"

#define MORE_TEXT 48                    /* room for "... (N more bytes)" */

struct net_slowlog *net_slowlog_new(void)
{
        return calloc(1, sizeof(struct net_slowlog));
}

static void entry_clear(struct net_slowlog_entry *e)
{
        free(e->argv);
        memset(e, 0, sizeof(*e));
}

void net_slowlog_reset(struct net_slowlog *l)
{
        for (uint32_t i = 0; i < l->cap; i++)
                entry_clear(&l->ring[i]);
        l->n = 0;
        l->head = 0;
}

void net_slowlog_free(struct net_slowlog *l)
{
        if (!l)
                return;
        net_slowlog_reset(l);
        free(l->ring);
        free(l);
}

/* Copies argv as the log keeps it into one allocation. NULL on ENOMEM. */
static struct net_arg *args_copy(const struct net_arg *argv, size_t argc, uint32_t *ret_n)
{
        uint32_t n = argc > NET_SLOWLOG_MAX_ARGC ? NET_SLOWLOG_MAX_ARGC : (uint32_t)argc;
        size_t bytes = n * sizeof(struct net_arg);
        struct net_arg *out;
        char *p;

        for (uint32_t i = 0; i < n; i++)
                bytes += (argv[i].len > NET_SLOWLOG_MAX_STRING ? NET_SLOWLOG_MAX_STRING
                                                                : argv[i].len) + MORE_TEXT;
        out = malloc(bytes);
        if (!out)
                return NULL;
        p = (char *)(out + n);
        for (uint32_t i = 0; i < n; i++) {
                size_t len = argv[i].len, keep = len > NET_SLOWLOG_MAX_STRING ?
                                                 NET_SLOWLOG_MAX_STRING : len;
                int extra = 0;

                out[i].ptr = p;
                if (n < argc && i == n - 1) {
                        extra = snprintf(p, MORE_TEXT, "... (%zu more arguments)", argc - n + 1);
                        keep = 0;
                } else {
                        memcpy(p, argv[i].ptr, keep);
                        if (keep < len)
                                extra = snprintf(p + keep, MORE_TEXT, "... (%zu more bytes)",
                                                 len - keep);
                }
                out[i].len = keep + (size_t)extra;
                p += out[i].len;
        }
        *ret_n = n;
        return out;
}

/* Makes room for max_len entries (the newest kept). 0 or -ENOMEM. */
static int ring_fit(struct net_slowlog *l, uint32_t max_len)
{
        struct net_slowlog_entry *r;

        if (max_len == l->cap)
                return 0;
        r = calloc(max_len, sizeof(*r));
        if (!r)
                return -ENOMEM;
        for (uint32_t i = 0; i < l->n; i++) {
                struct net_slowlog_entry *e = &l->ring[(l->head + l->cap - i) % l->cap];

                if (i < max_len)
                        r[max_len - 1 - i] = *e;        /* newest at the top */
                else
                        free(e->argv);
        }
        l->n = l->n < max_len ? l->n : max_len;
        free(l->ring);
        l->ring = r;
        l->cap = max_len;
        l->head = max_len - 1;
        return 0;
}

int net_slowlog_push(struct net_slowlog *l, uint64_t max_len, uint64_t id, uint64_t time_s,
                     uint64_t duration_us, const struct net_arg *argv, size_t argc,
                     const char *addr, const char *name)
{
        struct net_slowlog_entry *e;
        struct net_arg *copy;
        uint32_t n;

        if (max_len > 1000000)
                max_len = 1000000;
        if (max_len == 0) {
                net_slowlog_reset(l);
                return 0;
        }
        if (ring_fit(l, (uint32_t)max_len) < 0 || !(copy = args_copy(argv, argc, &n)))
                return -ENOMEM;
        l->head = (l->head + 1) % l->cap;
        e = &l->ring[l->head];
        entry_clear(e);
        *e = (struct net_slowlog_entry){ .id = id, .time_s = time_s, .duration_us = duration_us,
                                         .argc = n, .argv = copy };
        snprintf(e->addr, sizeof(e->addr), "%s", addr ? addr : "");
        snprintf(e->name, sizeof(e->name), "%s", name ? name : "");
        if (l->n < l->cap)
                l->n++;
        return 0;
}

const struct net_slowlog_entry *net_slowlog_at(const struct net_slowlog *l, uint32_t i)
{
        if (i >= l->n)
                return NULL;
        return &l->ring[(l->head + l->cap - i) % l->cap];
}
