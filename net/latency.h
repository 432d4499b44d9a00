/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Latency events, as Redis's latency monitor keeps them (LATENCY LATEST /
 * HISTORY / RESET / DOCTOR): per event, the newest NET_LATENCY_SAMPLES
 * samples of (Unix second, milliseconds) -- at most one per second, the
 * highest of that second -- and the highest ever seen since the last
 * reset. Events: "command" (a command SLOWLOG records: over
 * slowlog-log-slower-than) and "loop-stall" (a task, timer or completion
 * that held a shard's loop over the reactor's stall threshold).
 *
 * One set per shard (server.h), fed on that shard; LATENCY copies every
 * shard's set and merges the copies on the origin (net_latency_merge).
 * Pure data; the caller serializes access (shard-local).
 */
#ifndef SCREE_NET_LATENCY_H
#define SCREE_NET_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_LATENCY_SAMPLES 160

enum net_latency_event {
        NET_LATENCY_COMMAND = 0,
        NET_LATENCY_LOOP_STALL = 1,
        NET_LATENCY_EVENT_MAX,
        NET_LATENCY_EVENT_INVALID = -1,
};

struct net_latency_sample {
        uint64_t time_s;                /* Unix seconds; 0: an unused slot */
        uint64_t ms;
};

/* One event's samples, a ring: next is where the next new second goes. */
struct net_latency_series {
        struct net_latency_sample s[NET_LATENCY_SAMPLES];
        uint32_t next, n;               /* n: slots used; 0 = the event has no series */
        uint64_t max_ms;
};

struct net_latency {
        struct net_latency_series ev[NET_LATENCY_EVENT_MAX];
};

/* The event's name ("command", "loop-stall"). REQUIRES: a valid event. Pure. */
const char *net_latency_event_name(enum net_latency_event ev);

/* The event named name (len bytes, any case), or NET_LATENCY_EVENT_INVALID. Pure. */
enum net_latency_event net_latency_event_find(const char *name, size_t len);

/* Records a sample of ms at Unix second now_s: kept as the second's
 * sample if it is the first or the highest of that second. Shard-local. */
void net_latency_add(struct net_latency *l, enum net_latency_event ev, uint64_t now_s, uint64_t ms);

/* Drops ev's series. Returns true if it had one. Shard-local. */
bool net_latency_reset(struct net_latency *l, enum net_latency_event ev);

/* ev's newest sample, or NULL if it has none. Borrowed, valid until l
 * changes. Pure. */
const struct net_latency_sample *net_latency_latest(const struct net_latency_series *se);

/* Copies ev's samples, oldest first, into out (NET_LATENCY_SAMPLES
 * slots). Returns how many. Pure. */
uint32_t net_latency_history(const struct net_latency_series *se, struct net_latency_sample *out);

/* Merges src into dst (shards' copies on the origin): the same second
 * keeps the highest sample, the newest NET_LATENCY_SAMPLES seconds stay,
 * max is the highest of both. Pure. */
void net_latency_merge(struct net_latency *dst, const struct net_latency *src);

#endif
