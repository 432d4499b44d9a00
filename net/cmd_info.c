/* SPDX-License-Identifier: Apache-2.0 */
/*
 * INFO [section ...]: Redis's field names where Redis has the field
 * (server, clients, stats, keyspace), and a `# Scree` section with every
 * shard's engine counters. One child per shard copies its counters and
 * counts its keys (a scan, as DBSIZE); the origin writes the text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/time.h"
#include "net/cmd.h"
#include "net/server.h"

#ifndef SCREE_VERSION
#define SCREE_VERSION "0.1.0"
#endif

struct shard_info {
        struct eng_shard_stats st;
        uint64_t conns, commands, ops_per_sec, hits, misses, client_mem, evicted;
        bool loading;
};

int net_cmd_shard_info(struct net_req *req)
{
        struct shard_info *si = req->info;
        struct net_shard *sh = req->exec;

        si->conns = sh->n_conns;
        si->commands = sh->n_commands;
        si->ops_per_sec = sh->ops_per_sec;
        si->hits = sh->keyspace_hits;
        si->misses = sh->keyspace_misses;
        si->client_mem = sh->client_mem_bytes;
        si->evicted = sh->evicted_clients;
        si->loading = !sh->eng;
        if (!sh->eng) {
                net_resp_add_int(req->out, 0);
                return NET_CMD_DONE;
        }
        si->st = *eng_shard_stats(sh->eng);
        return net_cmd_shard_count(req);
}

static bool want(const struct net_req *req, const char *section)
{
        if (req->argc < 2)
                return true;
        for (size_t i = 1; i < req->argc; i++)
                if (net_arg_is(&req->argv[i], section) || net_arg_is(&req->argv[i], "all") ||
                    net_arg_is(&req->argv[i], "everything") || net_arg_is(&req->argv[i], "default"))
                        return true;
        return false;
}

static void info_server(FILE *f, const struct net_server *srv)
{
        uint64_t up_s = (time_now_ns() - srv->start_ns) / NS_PER_SEC;

        fprintf(f, "# Server\r\nredis_version:7.0.0\r\nscree_version:%s\r\nredis_mode:standalone\r\n"
                   "os:Linux\r\narch_bits:64\r\nmultiplexing_api:io_uring\r\nprocess_id:%ld\r\n"
                   "tcp_port:%llu\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n"
                   "shards:%u\r\n\r\n",
                SCREE_VERSION, (long)getpid(), (unsigned long long)srv->cfg->port,
                (unsigned long long)up_s, (unsigned long long)(up_s / 86400), srv->n_shards);
}

static void info_clients_stats(FILE *f, const struct net_req *req, struct net_server *srv)
{
        uint64_t cmds = 0, ops = 0, hits = 0, misses = 0, client_mem = 0, evicted = 0;

        for (uint32_t i = 0; i < req->n_children; i++) {
                const struct shard_info *si = req->children[i]->info;

                cmds += si->commands;
                ops += si->ops_per_sec;
                hits += si->hits;
                misses += si->misses;
                client_mem += si->client_mem;
                evicted += si->evicted;
        }
        if (want(req, "clients"))
                fprintf(f, "# Clients\r\nconnected_clients:%llu\r\nmaxclients:%llu\r\n\r\n",
                        (unsigned long long)atomic_load(&srv->clients),
                        (unsigned long long)req->exec->cfg.maxclients);
        /* Only the clients' part of Redis's memory section: the engine's
         * memory is in `# Scree`. */
        if (want(req, "memory"))
                fprintf(f, "# Memory\r\nmem_clients_normal:%llu\r\nmaxmemory_clients:%llu\r\n\r\n",
                        (unsigned long long)client_mem,
                        (unsigned long long)(cfg_clients_limit_bytes(&req->exec->cfg, srv->n_shards) *
                                             srv->n_shards));
        if (!want(req, "stats"))
                return;
        fprintf(f, "# Stats\r\ntotal_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                   "instantaneous_ops_per_sec:%llu\r\nrejected_connections:%llu\r\n"
                   "expired_keys:0\r\nevicted_keys:0\r\nevicted_clients:%llu\r\n"
                   "keyspace_hits:%llu\r\nkeyspace_misses:%llu\r\n\r\n",
                (unsigned long long)atomic_load(&srv->total_connections),
                (unsigned long long)cmds, (unsigned long long)ops,
                (unsigned long long)atomic_load(&srv->rejected_connections),
                (unsigned long long)evicted, (unsigned long long)hits, (unsigned long long)misses);
}

static void info_scree(FILE *f, const struct net_req *req)
{
        fprintf(f, "# Scree\r\n");
        for (uint32_t i = 0; i < req->n_children; i++) {
                const struct shard_info *si = req->children[i]->info;
                const struct eng_shard_stats *s = &si->st;

                fprintf(f, "shard%u:keys=%lld,loading=%d,connections=%llu,writes=%llu,gets=%llu,"
                           "memtable_bytes=%llu,imm_bytes=%llu,flushes=%llu,compactions=%llu,"
                           "stalls=%llu,disk_bytes_written=%llu,replayed_records=%llu,"
                           "blocks_prefaulted=%llu,block_pool_hits=%llu,block_pool_misses=%llu,"
                           "prefault_pending=%llu,client_mem=%llu,evicted_clients=%llu,"
                           "corrupt_blocks=%llu,corrupt_reads=%llu,compaction_errors=%llu\r\n",
                        i, (long long)req->children[i]->ival, si->loading,
                        (unsigned long long)si->conns, (unsigned long long)s->writes,
                        (unsigned long long)s->gets, (unsigned long long)s->memtable_bytes,
                        (unsigned long long)s->imm_bytes, (unsigned long long)s->flushes,
                        (unsigned long long)s->compactions, (unsigned long long)s->stalls,
                        (unsigned long long)s->disk_bytes_written,
                        (unsigned long long)s->replayed_records,
                        (unsigned long long)s->blocks_prefaulted,
                        (unsigned long long)s->block_pool_hits,
                        (unsigned long long)s->block_pool_misses,
                        (unsigned long long)s->prefault_pending,
                        (unsigned long long)si->client_mem, (unsigned long long)si->evicted,
                        (unsigned long long)s->corrupt_blocks,
                        (unsigned long long)s->corrupt_reads,
                        (unsigned long long)s->compaction_errors);
        }
        fprintf(f, "\r\n");
}

static void info_gather(struct net_req *req)
{
        struct net_server *srv = req->origin->srv;
        int64_t keys = 0, expires = 0;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        for (uint32_t i = 0; i < req->n_children; i++) {
                keys += req->children[i]->ival;
                expires += (int64_t)req->children[i]->expiry_ms;   /* counted by the walk */
        }
        if (want(req, "server"))
                info_server(f, srv);
        info_clients_stats(f, req, srv);
        if (want(req, "keyspace")) {
                fprintf(f, "# Keyspace\r\n");
                if (keys > 0)
                        fprintf(f, "db0:keys=%lld,expires=%lld,avg_ttl=0\r\n", (long long)keys,
                                (long long)expires);
                fprintf(f, "\r\n");
        }
        if (want(req, "scree"))
                info_scree(f, req);
        fclose(f);
        /* Drop the last blank line, as Redis does. */
        while (len >= 2 && text[len - 2] == '\r' && text[len - 1] == '\n' && len >= 4 &&
               text[len - 4] == '\r')
                len -= 2;
        net_resp_add_verbatim(req->out, "txt", text, len);
        free(text);
}

int net_cmd_info(struct net_req *req)
{
        return net_req_each_shard(req, &net_cmd_def_shard_info, sizeof(struct shard_info),
                                  info_gather);
}
