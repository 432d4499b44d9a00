/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A slow-command log: the newest entries, at most max_len (a ring), each
 * with Redis's SLOWLOG fields: a unique id, the Unix time it ended, its
 * duration in microseconds, its arguments as Redis keeps them (at most
 * NET_SLOWLOG_MAX_ARGC: the last slot then says "... (N more arguments)";
 * a string over NET_SLOWLOG_MAX_STRING bytes is cut there and ends with
 * "... (N more bytes)"), the client's address and name.
 *
 * One log per shard (server.h), holding the commands of that shard's
 * connections; SLOWLOG merges the shards' logs by id. Pure data; the
 * caller serializes access (shard-local).
 */
#ifndef SCREE_NET_SLOWLOG_H
#define SCREE_NET_SLOWLOG_H

#include <stddef.h>
#include <stdint.h>

#include "net/resp_parse.h"

#define NET_SLOWLOG_MAX_ARGC 32
#define NET_SLOWLOG_MAX_STRING 128

struct net_slowlog_entry {
        uint64_t id;
        uint64_t time_s;                /* Unix seconds */
        uint64_t duration_us;
        uint32_t argc;
        struct net_arg *argv;           /* owned, with the bytes, one allocation */
        char addr[56];
        char name[64];
};

struct net_slowlog {
        struct net_slowlog_entry *ring; /* cap slots */
        uint32_t cap, n, head;          /* head: the newest entry's slot */
};

/* A new, empty log; NULL on ENOMEM. Free with net_slowlog_free (accepts NULL). */
struct net_slowlog *net_slowlog_new(void);
void net_slowlog_free(struct net_slowlog *l);

/*
 * Adds an entry (argv borrowed, copied as above; addr and name borrowed,
 * truncated to their fields; name may be NULL) and drops the oldest ones
 * beyond max_len (0: keeps none). Returns 0 or -ENOMEM (nothing added).
 */
int net_slowlog_push(struct net_slowlog *l, uint64_t max_len, uint64_t id, uint64_t time_s,
                     uint64_t duration_us, const struct net_arg *argv, size_t argc,
                     const char *addr, const char *name);

/* The i-th newest entry (0: the newest), or NULL past the end. Borrowed,
 * valid until the next push or reset. */
const struct net_slowlog_entry *net_slowlog_at(const struct net_slowlog *l, uint32_t i);

/* Drops every entry. */
void net_slowlog_reset(struct net_slowlog *l);

#endif
