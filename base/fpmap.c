/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The fingerprint map (see fpmap.h): buckets double when the entries
 * outnumber them; up to FREE_KEEP removed entries wait for reuse.
 */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/fpmap.h"

#define FREE_KEEP 64u

void fpmap_init(struct fpmap *m, size_t entry_bytes)
{
        SCREE_ASSERT(entry_bytes >= sizeof(struct fpmap_entry));
        memset(m, 0, sizeof(*m));
        m->entry_bytes = entry_bytes;
}

void fpmap_fini(struct fpmap *m)
{
        struct fpmap_entry *e;

        for (size_t i = 0; i < m->n_buckets; i++) {
                while ((e = m->buckets[i])) {
                        m->buckets[i] = e->next;
                        free(e);
                }
        }
        while ((e = m->free_list)) {
                m->free_list = e->next;
                free(e);
        }
        free(m->buckets);
        memset(m, 0, sizeof(*m));
}

static size_t slot(size_t n_buckets, uint64_t fp)
{
        return (size_t)(fp ^ (fp >> 29)) & (n_buckets - 1);
}

void *fpmap_find(const struct fpmap *m, uint64_t fp)
{
        struct fpmap_entry *e;

        if (!m->n_buckets)
                return NULL;
        for (e = m->buckets[slot(m->n_buckets, fp)]; e; e = e->next)
                if (e->fp == fp)
                        return e;
        return NULL;
}

static int grow(struct fpmap *m)
{
        size_t n = m->n_buckets ? m->n_buckets * 2 : 64;
        struct fpmap_entry **b = calloc(n, sizeof(*b));

        if (!b)
                return -1;
        for (size_t i = 0; i < m->n_buckets; i++) {
                struct fpmap_entry *e, *next;

                for (e = m->buckets[i]; e; e = next) {
                        size_t s = slot(n, e->fp);

                        next = e->next;
                        e->next = b[s];
                        b[s] = e;
                }
        }
        free(m->buckets);
        m->buckets = b;
        m->n_buckets = n;
        return 0;
}

void *fpmap_insert(struct fpmap *m, uint64_t fp)
{
        struct fpmap_entry *e;
        size_t s;

        /* A failed grow of a map in use only makes its chains longer. */
        if (m->n_entries >= m->n_buckets && grow(m) < 0 && !m->n_buckets)
                return NULL;
        e = m->free_list;
        if (e) {
                m->free_list = e->next;
                m->n_free--;
        } else if (!(e = malloc(m->entry_bytes))) {
                return NULL;
        }
        memset(e, 0, m->entry_bytes);
        e->fp = fp;
        s = slot(m->n_buckets, fp);
        e->next = m->buckets[s];
        m->buckets[s] = e;
        m->n_entries++;
        return e;
}

void fpmap_remove(struct fpmap *m, void *entry)
{
        struct fpmap_entry *e = entry;
        struct fpmap_entry **pp = &m->buckets[slot(m->n_buckets, e->fp)];

        while (*pp != e)
                pp = &(*pp)->next;
        *pp = e->next;
        m->n_entries--;
        if (m->n_free < FREE_KEEP) {
                e->next = m->free_list;
                m->free_list = e;
                m->n_free++;
        } else {
                free(e);
        }
}
