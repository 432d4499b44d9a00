/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The intent-lock table (see intent.h): a chained hash of entries keyed by
 * fingerprint, each with per-mode hold counts and a FIFO of waiters. An
 * entry exists while something holds or waits on its key, so an empty
 * table means no key is locked (the fast path). Entries are recycled
 * (base/fpmap.h): a single-key write in flight takes and gives back one
 * on every call in batch mode. The whole-table lock (ALL) is a flag, a
 * count of key holds it waits to reach 0, and the table's FIFO of ALL
 * waiters and of the key requests parked behind them; a parked request's
 * entry exists already (counted in parked), so leaving the FIFO for its
 * key never allocates.
 */
#include <errno.h>

#include "base/check.h"
#include "base/checksum.h"
#include "net/intent.h"

struct net_intent_entry {
        struct fpmap_entry hdr;
        uint32_t held[NET_INTENT_MODE_MAX];
        uint32_t parked;                /* its requests parked in the table's FIFO */
        struct net_intent_waiter *head, *tail;
};

/* compat[requested][held], for keys (an entry never holds ALL) */
static const bool compat[NET_INTENT_MODE_MAX][NET_INTENT_MODE_MAX] = {
        [NET_INTENT_READ] = { true, false, false, true, false },
        [NET_INTENT_WRITE] = { false, false, false, false, false },
        [NET_INTENT_SOLO] = { false, false, true, true, false },
        [NET_INTENT_PEEK] = { true, false, true, true, false },
};

void net_intent_init(struct net_intent_table *t)
{
        fpmap_init(&t->keys, sizeof(struct net_intent_entry));
        t->n_held = 0;
        t->all_held = false;
        t->q_head = t->q_tail = NULL;
}

void net_intent_fini(struct net_intent_table *t)
{
        SCREE_ASSERT(t->keys.n_entries == 0 && !t->all_held && !t->q_head);
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

/* Nothing holds, waits or parks on e: it can go. */
static bool entry_unused(const struct net_intent_entry *e)
{
        return !e->head && !e->parked && compatible(e, NET_INTENT_WRITE);
}

static bool all_grantable(const struct net_intent_table *t)
{
        return !t->all_held && t->n_held == 0;
}

bool net_intent_can_grant(const struct net_intent_table *t, uint64_t fp,
                          enum net_intent_mode mode)
{
        const struct net_intent_entry *e;

        if (mode == NET_INTENT_ALL)
                return all_grantable(t) && !t->q_head;
        if (t->all_held || t->q_head)
                return false;
        e = find(t, fp);
        return !e || (!e->head && compatible(e, mode));
}

static void fifo_push(struct net_intent_waiter **head, struct net_intent_waiter **tail,
                      struct net_intent_waiter *w)
{
        w->next = NULL;
        if (*tail)
                (*tail)->next = w;
        else
                *head = w;
        *tail = w;
}

/* Grants w on e, or queues it in e's FIFO. Returns true when granted. */
static bool key_take(struct net_intent_table *t, struct net_intent_entry *e,
                     struct net_intent_waiter *w)
{
        if (!e->head && compatible(e, w->mode)) {
                e->held[w->mode]++;
                t->n_held++;
                return true;
        }
        fifo_push(&e->head, &e->tail, w);
        return false;
}

int net_intent_acquire(struct net_intent_table *t, struct net_intent_waiter *w)
{
        struct net_intent_entry *e;

        SCREE_ASSERT(w->mode < NET_INTENT_MODE_MAX);
        if (w->mode == NET_INTENT_ALL) {
                if (all_grantable(t) && !t->q_head) {
                        t->all_held = true;
                        return 1;
                }
                fifo_push(&t->q_head, &t->q_tail, w);
                return 0;
        }
        e = find(t, w->fp);
        if (!e && !(e = fpmap_insert(&t->keys, w->fp)))
                return -ENOMEM;
        /* The entry stays while parked: leaving the FIFO needs no memory. */
        if ((t->all_held || t->q_head) && !w->nested) {
                SCREE_ASSERT(!t->all_held || t->n_held == 0);
                e->parked++;
                fifo_push(&t->q_head, &t->q_tail, w);
                return 0;
        }
        return key_take(t, e, w) ? 1 : 0;
}

/* Appends w to the list of waiters to wake (linked through next). */
static void woken_add(struct net_intent_waiter ***wt, struct net_intent_waiter *w)
{
        w->next = NULL;
        **wt = w;
        *wt = &w->next;
}

/* Moves the table's FIFO on as far as it can: an ALL at its head once no
 * key is held, then (the ALL released) the key requests behind it to
 * their keys, up to the next ALL. */
static void table_drain(struct net_intent_table *t, struct net_intent_waiter ***wt)
{
        struct net_intent_waiter *w;

        while ((w = t->q_head) && !t->all_held) {
                struct net_intent_entry *e;

                if (w->mode == NET_INTENT_ALL && t->n_held)
                        break;
                t->q_head = w->next;
                if (!t->q_head)
                        t->q_tail = NULL;
                if (w->mode == NET_INTENT_ALL) {
                        t->all_held = true;
                        woken_add(wt, w);
                        continue;
                }
                e = find(t, w->fp);
                SCREE_VERIFY(e && e->parked > 0);
                e->parked--;
                if (key_take(t, e, w))
                        woken_add(wt, w);
        }
}

/* Grants e's waiters from the head while compatible. */
static void key_drain(struct net_intent_table *t, struct net_intent_entry *e,
                      struct net_intent_waiter ***wt)
{
        struct net_intent_waiter *w;

        while ((w = e->head) && compatible(e, w->mode)) {
                e->head = w->next;
                if (!e->head)
                        e->tail = NULL;
                e->held[w->mode]++;
                t->n_held++;
                woken_add(wt, w);
        }
}

void net_intent_release(struct net_intent_table *t, uint64_t fp, enum net_intent_mode mode)
{
        struct net_intent_waiter *woken = NULL, **wt = &woken, *w;

        if (mode == NET_INTENT_ALL) {
                SCREE_VERIFY(t->all_held);
                t->all_held = false;
        } else {
                struct net_intent_entry *e = find(t, fp);

                SCREE_VERIFY(e && e->held[mode] > 0);
                e->held[mode]--;
                t->n_held--;
                key_drain(t, e, &wt);
                if (entry_unused(e))
                        fpmap_remove(&t->keys, e);
        }
        table_drain(t, &wt);
        /* Wake after the table is consistent: a wake may use the table. */
        while ((w = woken)) {
                woken = w->next;
                w->wake(w);
        }
}

uint32_t net_intent_holders(const struct net_intent_table *t, uint64_t fp,
                            enum net_intent_mode mode)
{
        const struct net_intent_entry *e;

        if (mode == NET_INTENT_ALL)
                return t->all_held;
        e = find(t, fp);
        return e ? e->held[mode] : 0;
}

uint32_t net_intent_waiters(const struct net_intent_table *t, uint64_t fp)
{
        const struct net_intent_entry *e = find(t, fp);
        uint32_t n = e ? e->parked : 0;

        for (const struct net_intent_waiter *w = e ? e->head : NULL; w; w = w->next)
                n++;
        return n;
}
