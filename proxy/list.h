/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An intrusive circular doubly linked list for scree-proxy: a head is a
 * node linked to itself; an element embeds a node and finds itself back
 * with px_container_of. A node that is in no list is linked to itself,
 * so px_list_del is safe on it. One thread at a time (a worker's).
 */
#ifndef SCREE_PROXY_LIST_H
#define SCREE_PROXY_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct px_list {
        struct px_list *prev, *next;
};

#define px_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void px_list_init(struct px_list *l)
{
        l->prev = l->next = l;
}

static inline bool px_list_is_empty(const struct px_list *l)
{
        return l->next == l;
}

/* Appends n (not in a list) at l's tail. */
static inline void px_list_add_tail(struct px_list *l, struct px_list *n)
{
        n->prev = l->prev;
        n->next = l;
        l->prev->next = n;
        l->prev = n;
}

/* Inserts n (not in a list) at l's head. */
static inline void px_list_add_head(struct px_list *l, struct px_list *n)
{
        n->next = l->next;
        n->prev = l;
        l->next->prev = n;
        l->next = n;
}

/* Unlinks n (a no-op for a node linked to itself) and leaves it so. */
static inline void px_list_del(struct px_list *n)
{
        n->prev->next = n->next;
        n->next->prev = n->prev;
        n->prev = n->next = n;
}

#endif
