/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The intent-lock table (see intent.h): a chained hash of entries keyed by
 * fingerprint, each with per-mode hold counts and a FIFO of waiters. An
 * entry exists while something holds or waits on its key, so an empty
 * table means no key is locked (the fast path). Entries are recycled
 * (base/fpmap.h): a single-key write in flight takes and gives back one
 * on every call in batch mode.
 */
#include <errno.h>

#include "base/check.h"
#include "base/checksum.h"
#include "net/intent.h"

struct net_intent_entry {
        struct fpmap_entry hdr;
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
        fpmap_init(&t->keys, sizeof(struct net_intent_entry));
}

void net_intent_fini(struct net_intent_table *t)
{
        SCREE_ASSERT(t->keys.n_entries == 0);
        fpmap_fini(&t->keys);
}

uint64_t net_intent_fp(const void *key, size_t len)
{
        return checksum64(key, len, 0x7363726565ull);   /* "scree" */
}

static struct net_intent_entry *find(const struct net_intent_table *t, uint64_t fp)
{
        return fpmap_find(&t->keys, fp);
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

int net_intent_acquire(struct net_intent_table *t, struct net_intent_waiter *w)
{
        struct net_intent_entry *e = find(t, w->fp);

        SCREE_ASSERT(w->mode < NET_INTENT_MODE_MAX);
        if (!e && !(e = fpmap_insert(&t->keys, w->fp)))
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
                fpmap_remove(&t->keys, e);      /* nothing held, nobody waits */
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
