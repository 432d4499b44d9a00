/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Latency events (latency.h): a ring of per-second samples per event,
 * and the merge of the shards' copies.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/latency.h"

static const char *const names[NET_LATENCY_EVENT_MAX] = {
        [NET_LATENCY_COMMAND] = "command",
        [NET_LATENCY_LOOP_STALL] = "loop-stall",
};

const char *net_latency_event_name(enum net_latency_event ev)
{
        return names[ev];
}

enum net_latency_event net_latency_event_find(const char *name, size_t len)
{
        for (int i = 0; i < NET_LATENCY_EVENT_MAX; i++)
                if (strlen(names[i]) == len && strncasecmp(names[i], name, len) == 0)
                        return (enum net_latency_event)i;
        return NET_LATENCY_EVENT_INVALID;
}

void net_latency_add(struct net_latency *l, enum net_latency_event ev, uint64_t now_s, uint64_t ms)
{
        struct net_latency_series *se = &l->ev[ev];

        if (ms > se->max_ms)
                se->max_ms = ms;
        if (se->n) {
                struct net_latency_sample *prev =
                        &se->s[(se->next + NET_LATENCY_SAMPLES - 1) % NET_LATENCY_SAMPLES];

                if (prev->time_s == now_s) {    /* one sample a second: its highest */
                        if (ms > prev->ms)
                                prev->ms = ms;
                        return;
                }
        }
        se->s[se->next] = (struct net_latency_sample){ .time_s = now_s, .ms = ms };
        se->next = (se->next + 1) % NET_LATENCY_SAMPLES;
        if (se->n < NET_LATENCY_SAMPLES)
                se->n++;
}

bool net_latency_reset(struct net_latency *l, enum net_latency_event ev)
{
        bool had = l->ev[ev].n > 0;

        memset(&l->ev[ev], 0, sizeof(l->ev[ev]));
        return had;
}

const struct net_latency_sample *net_latency_latest(const struct net_latency_series *se)
{
        if (!se->n)
                return NULL;
        return &se->s[(se->next + NET_LATENCY_SAMPLES - 1) % NET_LATENCY_SAMPLES];
}

uint32_t net_latency_history(const struct net_latency_series *se, struct net_latency_sample *out)
{
        uint32_t first = (se->next + NET_LATENCY_SAMPLES - se->n) % NET_LATENCY_SAMPLES;

        for (uint32_t i = 0; i < se->n; i++)
                out[i] = se->s[(first + i) % NET_LATENCY_SAMPLES];
        return se->n;
}

static int by_time(const void *a, const void *b)
{
        const struct net_latency_sample *x = a, *y = b;

        return x->time_s < y->time_s ? -1 : x->time_s > y->time_s;
}

/* dst's series from both sides' samples, oldest first, one per second. */
static void merge_series(struct net_latency_series *dst, const struct net_latency_series *src)
{
        struct net_latency_sample all[2 * NET_LATENCY_SAMPLES];
        uint32_t n = net_latency_history(dst, all), k = 0, first;
        uint64_t max = dst->max_ms > src->max_ms ? dst->max_ms : src->max_ms;

        n += net_latency_history(src, all + n);
        if (!n)
                return;
        qsort(all, n, sizeof(all[0]), by_time);
        for (uint32_t i = 1; i < n; i++) {
                if (all[i].time_s == all[k].time_s) {
                        if (all[i].ms > all[k].ms)
                                all[k].ms = all[i].ms;
                } else {
                        all[++k] = all[i];
                }
        }
        n = k + 1;
        first = n > NET_LATENCY_SAMPLES ? n - NET_LATENCY_SAMPLES : 0;
        memset(dst, 0, sizeof(*dst));
        for (uint32_t i = first; i < n; i++)
                dst->s[dst->n++] = all[i];
        dst->next = dst->n % NET_LATENCY_SAMPLES;
        dst->max_ms = max;
}

void net_latency_merge(struct net_latency *dst, const struct net_latency *src)
{
        for (int i = 0; i < NET_LATENCY_EVENT_MAX; i++)
                merge_series(&dst->ev[i], &src->ev[i]);
}
