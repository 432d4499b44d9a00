/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The intent-lock table (see intent.h): a chained hash of entries keyed by
 * fingerprint, each with per-mode hold counts and a FIFO of waiters. An
 * entry exists while something holds or waits on its key, so an empty
 * table means no key is locked (the fast path). Entries are recycled
 * through a small free list: a single-key write in flight takes and gives
 * back one on every call in batch mode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/checksum.h"
#include "net/intent.h"

#define FREE_KEEP 64u

struct net_intent_entry {
        struct net_intent_entry *next;          /* bucket chain or free list */
        uint64_t fp;
        uint32_t held[NET_INTENT_MODE_MAX];
        struct net_intent_waiter *head, *tail;
};

/* compat[requested][held] */
static const bool compat[NET_INTENT_MODE_MAX][NET_INTENT_MODE_MAX] = {
        [NET_INTENT_READ] = { true, false, false, true },
        [NET_INTENT_WRITE] = { false, false, false, false },
        [NET_INTENT_SOLO] = { false, false, true, true },
        [NET_INTENT_PEEK] = { true, false, true, true },
};

void net_intent_init(struct net_intent_table *t)
{
        memset(t, 0, sizeof(*t));
}

void net_intent_fini(struct net_intent_table *t)
{
        struct net_intent_entry *e;

        SCREE_ASSERT(t->n_entries == 0);
        while ((e = t->free_list)) {
                t->free_list = e->next;
                free(e);
        }
        free(t->buckets);
        memset(t, 0, sizeof(*t));
}

uint64_t net_intent_fp(const void *key, size_t len)
{
        return checksum64(key, len, 0x7363726565ull);   /* "scree" */
}

static size_t slot(const struct net_intent_table *t, uint64_t fp)
{
        return (size_t)(fp ^ (fp >> 29)) & (t->n_buckets - 1);
}

static struct net_intent_entry *find(const struct net_intent_table *t, uint64_t fp)
{
        struct net_intent_entry *e;

        if (!t->n_buckets)
                return NULL;
        for (e = t->buckets[slot(t, fp)]; e; e = e->next)
                if (e->fp == fp)
                        return e;
        return NULL;
}

static bool compatible(const struct net_intent_entry *e, enum net_intent_mode mode)
{
        for (int m = 0; m < NET_INTENT_MODE_MAX; m++)
                if (e->held[m] && !compat[mode][m])
                        return false;
        return true;
}

bool net_intent_can_grant(const struct net_intent_table *t, uint64_t fp,
                          enum net_intent_mode mode)
{
        const struct net_intent_entry *e = find(t, fp);

        return !e || (!e->head && compatible(e, mode));
}

static int grow(struct net_intent_table *t)
{
        size_t n = t->n_buckets ? t->n_buckets * 2 : 64;
        struct net_intent_entry **b = calloc(n, sizeof(*b));

        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_buckets; i++) {
                struct net_intent_entry *e, *next;

                for (e = t->buckets[i]; e; e = next) {
                        size_t s = (size_t)(e->fp ^ (e->fp >> 29)) & (n - 1);

                        next = e->next;
                        e->next = b[s];
                        b[s] = e;
                }
        }
        free(t->buckets);
        t->buckets = b;
        t->n_buckets = n;
        return 0;
}

static struct net_intent_entry *insert(struct net_intent_table *t, uint64_t fp)
{
        struct net_intent_entry *e;
        size_t s;

        if (t->n_entries >= t->n_buckets && grow(t) < 0 && !t->n_buckets)
                return NULL;            /* a failed grow of a used table only slows it */
        e = t->free_list;
        if (e) {
                t->free_list = e->next;
                t->n_free--;
        } else if (!(e = malloc(sizeof(*e)))) {
                return NULL;
        }
        memset(e, 0, sizeof(*e));
        e->fp = fp;
        s = slot(t, fp);
        e->next = t->buckets[s];
        t->buckets[s] = e;
        t->n_entries++;
        return e;
}

static void remove_entry(struct net_intent_table *t, struct net_intent_entry *e)
{
        struct net_intent_entry **pp = &t->buckets[slot(t, e->fp)];

        while (*pp != e)
                pp = &(*pp)->next;
        *pp = e->next;
        t->n_entries--;
        if (t->n_free < FREE_KEEP) {
                e->next = t->free_list;
                t->free_list = e;
                t->n_free++;
        } else {
                free(e);
        }
}

int net_intent_acquire(struct net_intent_table *t, struct net_intent_waiter *w)
{
        struct net_intent_entry *e = find(t, w->fp);

        SCREE_ASSERT(w->mode < NET_INTENT_MODE_MAX);
        if (!e && !(e = insert(t, w->fp)))
                return -ENOMEM;
        if (!e->head && compatible(e, w->mode)) {
                e->held[w->mode]++;
                return 1;
        }
        w->next = NULL;
        if (e->tail)
                e->tail->next = w;
        else
                e->head = w;
        e->tail = w;
        return 0;
}

void net_intent_release(struct net_intent_table *t, uint64_t fp, enum net_intent_mode mode)
{
        struct net_intent_entry *e = find(t, fp);
        struct net_intent_waiter *woken = NULL, **wt = &woken, *w;

        SCREE_VERIFY(e && e->held[mode] > 0);
        e->held[mode]--;
        while ((w = e->head) && compatible(e, w->mode)) {
                e->head = w->next;
                if (!e->head)
                        e->tail = NULL;
                e->held[w->mode]++;
                w->next = NULL;
                *wt = w;
                wt = &w->next;
        }
        if (!e->head && compatible(e, NET_INTENT_WRITE))
                remove_entry(t, e);     /* nothing held, nobody waits */
        /* Wake after the table is consistent: a wake may use the table. */
        while ((w = woken)) {
                woken = w->next;
                w->wake(w);
        }
}

uint32_t net_intent_holders(const struct net_intent_table *t, uint64_t fp,
                            enum net_intent_mode mode)
{
        const struct net_intent_entry *e = find(t, fp);

        return e ? e->held[mode] : 0;
}

uint32_t net_intent_waiters(const struct net_intent_table *t, uint64_t fp)
{
        const struct net_intent_entry *e = find(t, fp);
        uint32_t n = 0;

        for (const struct net_intent_waiter *w = e ? e->head : NULL; w; w = w->next)
                n++;
        return n;
}
