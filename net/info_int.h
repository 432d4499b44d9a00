/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What INFO (cmd_info.c) shares with MEMORY (cmd_memory.c) and the
 * statistics (cmd_stats.c): the per-shard child that copies a shard's
 * counters, the process's memory figures, and Redis's ways of writing
 * them.
 *
 * The child (net_cmd_def_shard_info, one per shard through
 * net_req_each_shard with net_info_shard_bytes() of req->info) reads the
 * sections its parent's arguments ask for (the INFO syntax; anything else
 * asks for none): it always copies the shard's plain counters, the
 * command and error statistics only when a section needs them, and it
 * walks the shard's keys (req->ival keys, req->expiry_ms with a TTL) only
 * for the keyspace and scree sections -- the one costly part.
 */
#ifndef SCREE_NET_INFO_INT_H
#define SCREE_NET_INFO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/shard.h"
#include "net/latency.h"
#include "net/metrics.h"
#include "net/resp_write.h"
#include "reactor/alloc.h"

struct net_arg;
struct net_req;

/* INFO's sections, in Redis's order. */
enum net_info_section {
        NET_INFO_SERVER,
        NET_INFO_CLIENTS,
        NET_INFO_MEMORY,
        NET_INFO_PERSISTENCE,
        NET_INFO_STATS,
        NET_INFO_REPLICATION,
        NET_INFO_CPU,
        NET_INFO_MODULES,
        NET_INFO_COMMANDSTATS,
        NET_INFO_ERRORSTATS,
        NET_INFO_LATENCYSTATS,
        NET_INFO_CLUSTER,
        NET_INFO_KEYSPACE,
        NET_INFO_SCREE,
        NET_INFO_SECTION_MAX,
};

/* The sections INFO's arguments argv[1..argc) ask for, a mask of
 * 1u << section: none given = "default" (Redis's default sections and
 * scree); "all" and "everything" = every section; names are matched in
 * any case, repeated ones count once, unknown ones ask for nothing. Pure. */
uint32_t net_info_sections(const struct net_arg *argv, size_t argc);

/* One shard's copy (req->info of a child). */
struct net_info_shard {
        struct eng_shard_stats st;      /* engine_ready only */
        bool engine_ready, walked;
        int engine_error;               /* eng_shard_error */
        bool disk_full;
        uint64_t engine_mem;            /* eng_shard_mem_bytes */
        uint64_t conns, commands, ops_per_sec, hits, misses, client_mem, evicted;
        uint64_t in_bytes, out_bytes, in_bps, out_bps;
        uint64_t expired;               /* since the last CONFIG RESETSTAT */
        /* walked: keys and keys with a TTL per database (server.h's
         * NET_DBS; the child's ival and expiry_ms hold their sums) */
        int64_t db_keys[16], db_expires[16];
        uint64_t errors;                /* error replies written (errstats.total) */
        struct net_resp_errstats err;   /* copied for errorstats only */
        size_t n_slots;
        struct net_cmd_stat cmd[];      /* [n_slots]: for commandstats and latencystats */
};

/* The bytes of a child's req->info. Pure. */
size_t net_info_shard_bytes(void);

/* The process's memory, INFO memory's figures. */
struct net_info_mem {
        uint64_t used;                  /* allocator's allocated + the engines' blocks */
        uint64_t engine;                /* the engines' blocks (eng_shard_mem_bytes) */
        uint64_t rss, peak, clients;
        uint64_t total_system;
        struct rx_alloc_stats alloc;
};

/* Reads the figures now, with the engines' and clients' bytes from the
 * children of parent (net_info_shard each), and raises the peak to
 * used. Origin. */
void net_info_mem_get(struct net_req *parent, struct net_info_mem *ret);

/* Writes bytes as Redis's *_human fields do ("1.50M", "512B") into buf. */
void net_info_human(char *buf, size_t len, uint64_t bytes);

/* Sums every child's command statistics into sum ([net_cmd_stat_slots()],
 * zeroed by the caller). Origin. */
void net_info_sum_cmds(const struct net_req *parent, struct net_cmd_stat *sum);

#endif
