/* SPDX-License-Identifier: Apache-2.0 */
/*
 * INFO [section ...], Redis 7.0's sections and field names for what
 * scree has (docs/server.md "INFO and the statistics"). The memory
 * figures, RESETSTAT and the start-up fields are in cmd_stats.c.
 *
 * One child per shard (net_cmd_shard_info, contract in info_int.h)
 * copies that shard's counters into memory the origin allocated; the
 * origin adds them up and writes the text. Process-wide figures (memory,
 * CPU, connections) are read on the origin. The per-shard counters are
 * plain fields each shard bumps on its own thread (server.h, metrics.h):
 * nothing on the request path is shared. Only the keyspace and scree
 * sections walk every key (a DBSIZE's cost, chunked so that the shards
 * go on serving); the others cost a message per shard.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/time.h"
#include "net/cmd.h"
#include "net/info_int.h"
#include "net/server.h"

#ifndef SCREE_VERSION
#define SCREE_VERSION "0.1.0"
#endif

#define SEC(s) (1u << NET_INFO_##s)
#define ALL_SECTIONS ((1u << NET_INFO_SECTION_MAX) - 1)
/* Redis's default sections, and scree's own. */
#define DEFAULT_SECTIONS (ALL_SECTIONS & ~(SEC(COMMANDSTATS) | SEC(LATENCYSTATS)))

static const char *const section_names[NET_INFO_SECTION_MAX] = {
        "server", "clients", "memory", "persistence", "stats", "replication", "cpu", "modules",
        "commandstats", "errorstats", "latencystats", "cluster", "keyspace", "scree",
};

static const char *const section_titles[NET_INFO_SECTION_MAX] = {
        "Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules",
        "Commandstats", "Errorstats", "Latencystats", "Cluster", "Keyspace", "Scree",
};

uint32_t net_info_sections(const struct net_arg *argv, size_t argc)
{
        uint32_t m = 0;

        if (argc < 2)
                return DEFAULT_SECTIONS;
        for (size_t i = 1; i < argc; i++) {
                const struct net_arg *a = &argv[i];

                if (net_arg_is(a, "default"))
                        m |= DEFAULT_SECTIONS;
                else if (net_arg_is(a, "all") || net_arg_is(a, "everything"))
                        m |= ALL_SECTIONS;
                else if (net_arg_is(a, "module_list"))  /* Redis's other name for it */
                        m |= SEC(MODULES);
                for (int s = 0; s < NET_INFO_SECTION_MAX; s++)
                        if (net_arg_is(a, section_names[s]))
                                m |= 1u << s;
        }
        return m;
}

size_t net_info_shard_bytes(void)
{
        return sizeof(struct net_info_shard) + net_cmd_stat_slots() * sizeof(struct net_cmd_stat);
}

/* ---- the per-shard child ---- */

static void copy_counters(struct net_info_shard *si, struct net_shard *sh, uint32_t mask)
{
        si->conns = sh->n_conns;
        si->commands = sh->n_commands;
        si->ops_per_sec = sh->ops_per_sec;
        si->hits = sh->keyspace_hits;
        si->misses = sh->keyspace_misses;
        si->client_mem = sh->client_mem_bytes;
        si->evicted = sh->evicted_clients;
        si->in_bytes = sh->net_in_bytes;
        si->out_bytes = sh->net_out_bytes;
        si->in_bps = sh->in_bps;
        si->out_bps = sh->out_bps;
        si->n_slots = net_cmd_stat_slots();
        si->errors = sh->errstats.total;
        if (mask & SEC(ERRORSTATS))
                si->err = sh->errstats;
        if ((mask & (SEC(COMMANDSTATS) | SEC(LATENCYSTATS))) && sh->metrics &&
            sh->metrics->n_slots == si->n_slots)
                memcpy(si->cmd, sh->metrics->cmd, si->n_slots * sizeof(si->cmd[0]));
}

static_assert(sizeof(((struct net_info_shard *)0)->db_keys) / sizeof(int64_t) == NET_DBS,
              "a count per database");

/* One database of the shard walked (net_req_walk_dbs). */
static void info_db_counted(struct net_req *req)
{
        struct net_info_shard *si = req->info;

        si->db_keys[req->db] = req->ival;
        si->db_expires[req->db] = (int64_t)req->expiry_ms;
}

/* Every database walked: the shard's sums, then its reply. */
static void info_counted(struct net_req *req, int res)
{
        const struct net_info_shard *si = req->info;

        req->ival = 0;
        req->expiry_ms = 0;
        for (unsigned d = 0; res == 0 && d < NET_DBS; d++) {
                req->ival += si->db_keys[d];
                req->expiry_ms += (uint64_t)si->db_expires[d];
        }
        net_then_int_ival(req, res);
}

int net_cmd_shard_info(struct net_req *req)
{
        struct net_info_shard *si = req->info;
        struct net_shard *sh = req->exec;
        uint32_t mask = net_info_sections(req->argv, req->argc);

        copy_counters(si, sh, mask);
        si->engine_ready = sh->eng != NULL;
        if (sh->eng) {
                si->st = *eng_shard_stats(sh->eng);
                si->engine_mem = eng_shard_mem_bytes(sh->eng);
                si->engine_error = eng_shard_error(sh->eng);
                si->disk_full = eng_shard_is_full(sh->eng);
                si->expired = si->st.expired_dropped - sh->expired_base;
        }
        if (!sh->eng || !(mask & (SEC(KEYSPACE) | SEC(SCREE)))) {
                req->ival = 0;
                net_resp_add_int(req->out, 0);
                return NET_CMD_DONE;
        }
        si->walked = true;
        return net_req_walk_dbs(req, net_req_count_item, true, info_db_counted, info_counted);
}

/* ---- the text ---- */

/* The children's counters added up. */
struct info_sum {
        uint64_t commands, ops, hits, misses, client_mem, evicted;
        uint64_t in_bytes, out_bytes, in_bps, out_bps, expired, errors;
        uint64_t log_bytes, log_syncs, log_gathers;
        int64_t keys, expires;
        int64_t db_keys[NET_DBS], db_expires[NET_DBS];
        bool loading, write_err, disk_full;
};

struct info_out {
        FILE *f;
        struct net_req *req;
        struct net_server *srv;
        uint32_t mask;
        unsigned n;                     /* sections written */
        struct info_sum s;
};

static void info_sum(struct info_out *o)
{
        struct info_sum *s = &o->s;

        for (uint32_t i = 0; i < o->req->n_children; i++) {
                const struct net_req *c = o->req->children[i];
                const struct net_info_shard *si = c->info;

                s->commands += si->commands;
                s->ops += si->ops_per_sec;
                s->hits += si->hits;
                s->misses += si->misses;
                s->client_mem += si->client_mem;
                s->evicted += si->evicted;
                s->in_bytes += si->in_bytes;
                s->out_bytes += si->out_bytes;
                s->in_bps += si->in_bps;
                s->out_bps += si->out_bps;
                s->expired += si->expired;
                s->errors += si->errors;
                s->log_bytes += si->st.log_bytes_written;
                s->log_syncs += si->st.log_syncs;
                s->log_gathers += si->st.log_gathers;
                s->keys += c->ival;
                s->expires += (int64_t)c->expiry_ms;    /* counted by the walk */
                for (unsigned d = 0; si->walked && d < NET_DBS; d++) {
                        s->db_keys[d] += si->db_keys[d];
                        s->db_expires[d] += si->db_expires[d];
                }
                s->loading |= !si->engine_ready;
                s->write_err |= si->engine_error != 0;
                s->disk_full |= si->disk_full;
        }
}

/* Starts section sec if it is wanted: true then. */
static bool section(struct info_out *o, enum net_info_section sec)
{
        if (!(o->mask & (1u << sec)))
                return false;
        fprintf(o->f, "%s# %s\r\n", o->n++ ? "\r\n" : "", section_titles[sec]);
        return true;
}

static void info_server(struct info_out *o)
{
        const struct net_server *srv = o->srv;
        uint64_t up_s = (time_now_ns() - srv->start_ns) / NS_PER_SEC;
        struct utsname u;

        if (uname(&u) < 0)
                memset(&u, 0, sizeof(u));
        fprintf(o->f, "redis_version:7.0.0\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n"
                      "redis_mode:standalone\r\nos:%s %s %s\r\narch_bits:%zu\r\n"
                      "monotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:io_uring\r\n"
                      "atomicvar_api:c11-builtin\r\ngcc_version:%d.%d.%d\r\nprocess_id:%ld\r\n"
                      "process_supervised:no\r\nrun_id:%s\r\ntcp_port:%llu\r\n"
                      "server_time_usec:%llu\r\nuptime_in_seconds:%llu\r\nuptime_in_days:%llu\r\n"
                      "hz:1\r\nconfigured_hz:1\r\nexecutable:%s\r\nconfig_file:%s\r\n"
                      "io_threads_active:0\r\nscree_version:%s\r\nshards:%u\r\n",
                u.sysname, u.release, u.machine, sizeof(void *) * 8, __GNUC__, __GNUC_MINOR__,
                __GNUC_PATCHLEVEL__, (long)getpid(), srv->run_id,
                (unsigned long long)srv->cfg->port,
                (unsigned long long)(time_wall_ns() / NS_PER_US), (unsigned long long)up_s,
                (unsigned long long)(up_s / 86400), srv->executable, srv->config_file,
                SCREE_VERSION, srv->n_shards);
}

static void info_clients(struct info_out *o)
{
        fprintf(o->f, "connected_clients:%llu\r\ncluster_connections:0\r\nmaxclients:%llu\r\n"
                      "blocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
                (unsigned long long)atomic_load(&o->srv->clients),
                (unsigned long long)o->req->exec->cfg.maxclients);
}

static void human_field(FILE *f, const char *name, uint64_t bytes)
{
        char h[32];

        net_info_human(h, sizeof(h), bytes);
        fprintf(f, "%s:%llu\r\n%s_human:%s\r\n", name, (unsigned long long)bytes, name, h);
}

static void info_memory(struct info_out *o)
{
        const struct scree_config *cfg = &o->req->exec->cfg;
        struct net_info_mem m;
        FILE *f = o->f;

        net_info_mem_get(o->req, &m);
        human_field(f, "used_memory", m.used);
        human_field(f, "used_memory_rss", m.rss);
        human_field(f, "used_memory_peak", m.peak);
        fprintf(f, "used_memory_peak_perc:%.2f%%\r\n",
                m.peak ? 100.0 * (double)m.used / (double)m.peak : 100.0);
        human_field(f, "total_system_memory", m.total_system);
        human_field(f, "maxmemory", cfg->memory);
        fprintf(f, "maxmemory_policy:noeviction\r\nallocator_allocated:%llu\r\n"
                   "allocator_active:%llu\r\nallocator_resident:%llu\r\n"
                   "mem_fragmentation_ratio:%.2f\r\nmem_fragmentation_bytes:%lld\r\n"
                   "mem_allocator:%s\r\nmem_engine_blocks:%llu\r\nmem_clients_normal:%llu\r\n"
                   "maxmemory_clients:%llu\r\n",
                (unsigned long long)m.alloc.allocated, (unsigned long long)m.alloc.active,
                (unsigned long long)m.alloc.resident,
                m.used ? (double)m.rss / (double)m.used : 0.0,
                (long long)m.rss - (long long)m.used, m.alloc.name, (unsigned long long)m.engine,
                (unsigned long long)m.clients,
                (unsigned long long)(cfg_clients_limit_bytes(cfg, o->srv->n_shards) *
                                     o->srv->n_shards));
}

static void info_persistence(struct info_out *o)
{
        const struct info_sum *s = &o->s;
        const char *st = s->write_err || s->disk_full ? "err" : "ok";

        /* rdb_*: SAVE and BGSAVE (cmd_save.c), which flush the memtables. */
        fprintf(o->f, "loading:%d\r\nasync_loading:0\r\nrdb_bgsave_in_progress:%d\r\n"
                      "rdb_last_save_time:%llu\r\nrdb_last_bgsave_status:%s\r\n"
                      "aof_enabled:1\r\naof_rewrite_in_progress:0\r\n"
                      "aof_rewrite_scheduled:0\r\naof_last_write_status:%s\r\n"
                      "commitlog_sync:%s\r\ncommitlog_bytes_written:%llu\r\n"
                      "commitlog_syncs:%llu\r\ncommitlog_gathers:%llu\r\n"
                      "commitlog_write_status:%s\r\ndisk_full:%d\r\n",
                s->loading, atomic_load(&o->srv->bgsave_left) > 0,
                (unsigned long long)atomic_load(&o->srv->lastsave_s),
                atomic_load(&o->srv->last_save_failed) ? "err" : "ok", st,
                o->req->exec->cfg.sync == CFG_SYNC_BATCH ? "batch" : "periodic",
                (unsigned long long)s->log_bytes, (unsigned long long)s->log_syncs,
                (unsigned long long)s->log_gathers, st,
                s->disk_full);
}

static void info_stats(struct info_out *o)
{
        const struct info_sum *s = &o->s;

        fprintf(o->f, "total_connections_received:%llu\r\ntotal_commands_processed:%llu\r\n"
                      "instantaneous_ops_per_sec:%llu\r\ntotal_net_input_bytes:%llu\r\n"
                      "total_net_output_bytes:%llu\r\ninstantaneous_input_kbps:%.2f\r\n"
                      "instantaneous_output_kbps:%.2f\r\nrejected_connections:%llu\r\n"
                      "expired_keys:%llu\r\nevicted_keys:0\r\nevicted_clients:%llu\r\n"
                      "keyspace_hits:%llu\r\nkeyspace_misses:%llu\r\npubsub_channels:0\r\n"
                      "pubsub_patterns:0\r\ntotal_error_replies:%llu\r\n",
                (unsigned long long)atomic_load(&o->srv->total_connections),
                (unsigned long long)s->commands, (unsigned long long)s->ops,
                (unsigned long long)s->in_bytes, (unsigned long long)s->out_bytes,
                (double)s->in_bps / 1024, (double)s->out_bps / 1024,
                (unsigned long long)atomic_load(&o->srv->rejected_connections),
                (unsigned long long)s->expired, (unsigned long long)s->evicted,
                (unsigned long long)s->hits, (unsigned long long)s->misses,
                (unsigned long long)s->errors);
}

static void info_replication(struct info_out *o)
{
        fprintf(o->f, "role:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\n"
                      "master_replid:%s\r\nmaster_replid2:0000000000000000000000000000000000000000"
                      "\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\n"
                      "repl_backlog_active:0\r\n",
                o->srv->run_id);
}

static void cpu_field(FILE *f, const char *name, const struct timeval *tv)
{
        fprintf(f, "%s:%ld.%06ld\r\n", name, (long)tv->tv_sec, (long)tv->tv_usec);
}

static void info_cpu(struct info_out *o)
{
        struct rusage self, kids;

        memset(&self, 0, sizeof(self));
        memset(&kids, 0, sizeof(kids));
        getrusage(RUSAGE_SELF, &self);          /* every thread of the process */
        getrusage(RUSAGE_CHILDREN, &kids);
        cpu_field(o->f, "used_cpu_sys", &self.ru_stime);
        cpu_field(o->f, "used_cpu_user", &self.ru_utime);
        cpu_field(o->f, "used_cpu_sys_children", &kids.ru_stime);
        cpu_field(o->f, "used_cpu_user_children", &kids.ru_utime);
}

/* The upper bound (us) of the bucket holding the pct-th percentile. */
static double pct_usec(const struct net_cmd_stat *st, double pct)
{
        uint64_t want = (uint64_t)ceil(pct / 100 * (double)st->calls), cum = 0;
        unsigned b;

        if (want < 1)
                want = 1;
        for (b = 0; b < NET_METRICS_BUCKETS; b++) {
                cum += st->buckets[b];
                if (cum >= want)
                        break;
        }
        if (b == NET_METRICS_BUCKETS)
                b--;                    /* above the last bound: say the last */
        return (double)net_metrics_bucket_ns(b) / (double)NS_PER_US;
}

static void info_commandstats(struct info_out *o, const struct net_cmd_stat *sum, size_t n)
{
        char name[64];

        for (size_t k = 0; k < n; k++) {
                const struct net_cmd_stat *st = &sum[k];

                if (!st->calls && !st->failed && !st->rejected)
                        continue;
                fprintf(o->f, "cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,"
                              "rejected_calls=%llu,failed_calls=%llu\r\n",
                        net_cmd_stat_name(k, name, sizeof(name)), (unsigned long long)st->calls,
                        (unsigned long long)(st->ns / NS_PER_US),
                        st->calls ? (double)st->ns / NS_PER_US / (double)st->calls : 0.0,
                        (unsigned long long)st->rejected, (unsigned long long)st->failed);
        }
}

/* Adds src's counts to dst's, code by code. */
static void errstats_merge(struct net_resp_errstats *dst, const struct net_resp_errstats *src)
{
        dst->total += src->total;
        for (uint32_t i = 0; i < src->n_codes; i++) {
                uint32_t k;

                for (k = 0; k < dst->n_codes && strcmp(dst->code[k], src->code[i]); k++)
                        ;
                if (k == dst->n_codes) {
                        if (k == NET_RESP_ERR_CODES)
                                continue;
                        memcpy(dst->code[k], src->code[i], sizeof(dst->code[k]));
                        dst->n_codes++;
                }
                dst->count[k] += src->count[i];
        }
}

static void info_errorstats(struct info_out *o)
{
        struct net_resp_errstats *all = calloc(1, sizeof(*all));

        if (!all)
                return;
        for (uint32_t i = 0; i < o->req->n_children; i++)
                errstats_merge(all, &((const struct net_info_shard *)o->req->children[i]->info)->err);
        for (uint32_t k = 0; k < all->n_codes; k++)
                fprintf(o->f, "errorstat_%s:count=%llu\r\n", all->code[k],
                        (unsigned long long)all->count[k]);
        free(all);
}

static void info_latencystats(struct info_out *o, const struct net_cmd_stat *sum, size_t n)
{
        char name[64];

        for (size_t k = 0; k < n; k++)
                if (sum[k].calls)
                        fprintf(o->f, "latency_percentiles_usec_%s:p50=%.3f,p99=%.3f,"
                                      "p99.9=%.3f\r\n", net_cmd_stat_name(k, name, sizeof(name)),
                                pct_usec(&sum[k], 50), pct_usec(&sum[k], 99),
                                pct_usec(&sum[k], 99.9));
}

/* commandstats, errorstats, latencystats: in Redis's order. */
static void info_cmd_sections(struct info_out *o)
{
        size_t n = net_cmd_stat_slots();
        struct net_cmd_stat *sum = NULL;

        if (o->mask & (SEC(COMMANDSTATS) | SEC(LATENCYSTATS))) {
                sum = calloc(n, sizeof(*sum));
                if (!sum)
                        return;
                net_info_sum_cmds(o->req, sum);
        }
        if (section(o, NET_INFO_COMMANDSTATS))
                info_commandstats(o, sum, n);
        if (section(o, NET_INFO_ERRORSTATS))
                info_errorstats(o);
        if (section(o, NET_INFO_LATENCYSTATS))
                info_latencystats(o, sum, n);
        free(sum);
}

static void info_scree(struct info_out *o)
{
        for (uint32_t i = 0; i < o->req->n_children; i++) {
                const struct net_req *c = o->req->children[i];
                const struct net_info_shard *si = c->info;
                const struct eng_shard_stats *s = &si->st;

                fprintf(o->f, "shard%u:", i);
                if (si->walked)
                        fprintf(o->f, "keys=%lld,", (long long)c->ival);
                fprintf(o->f, "loading=%d,connections=%llu,writes=%llu,gets=%llu,"
                              "memtable_bytes=%llu,imm_bytes=%llu,flushes=%llu,compactions=%llu,"
                              "compacting=%llu,tablet_splits=%llu,tablet_merges=%llu,"
                              "tablet_moves_in=%llu,tablet_moves_out=%llu,"
                              "stalls=%llu,disk_bytes_written=%llu,replayed_records=%llu,"
                              "blocks_prefaulted=%llu,block_pool_hits=%llu,block_pool_misses=%llu,"
                              "prefault_pending=%llu,client_mem=%llu,evicted_clients=%llu,"
                              "corrupt_blocks=%llu,corrupt_reads=%llu,compaction_errors=%llu,"
                              "engine_mem=%llu,net_input_bytes=%llu,net_output_bytes=%llu\r\n",
                        !si->engine_ready, (unsigned long long)si->conns,
                        (unsigned long long)s->writes, (unsigned long long)s->gets,
                        (unsigned long long)s->memtable_bytes, (unsigned long long)s->imm_bytes,
                        (unsigned long long)s->flushes, (unsigned long long)s->compactions,
                        (unsigned long long)s->compacting, (unsigned long long)s->tablet_splits,
                        (unsigned long long)s->tablet_merges,
                        (unsigned long long)s->tablet_moves_in,
                        (unsigned long long)s->tablet_moves_out,
                        (unsigned long long)s->stalls, (unsigned long long)s->disk_bytes_written,
                        (unsigned long long)s->replayed_records,
                        (unsigned long long)s->blocks_prefaulted,
                        (unsigned long long)s->block_pool_hits,
                        (unsigned long long)s->block_pool_misses,
                        (unsigned long long)s->prefault_pending, (unsigned long long)si->client_mem,
                        (unsigned long long)si->evicted, (unsigned long long)s->corrupt_blocks,
                        (unsigned long long)s->corrupt_reads,
                        (unsigned long long)s->compaction_errors,
                        (unsigned long long)si->engine_mem, (unsigned long long)si->in_bytes,
                        (unsigned long long)si->out_bytes);
        }
}

static void info_text(struct info_out *o)
{
        if (section(o, NET_INFO_SERVER))
                info_server(o);
        if (section(o, NET_INFO_CLIENTS))
                info_clients(o);
        if (section(o, NET_INFO_MEMORY))
                info_memory(o);
        if (section(o, NET_INFO_PERSISTENCE))
                info_persistence(o);
        if (section(o, NET_INFO_STATS))
                info_stats(o);
        if (section(o, NET_INFO_REPLICATION))
                info_replication(o);
        if (section(o, NET_INFO_CPU))
                info_cpu(o);
        section(o, NET_INFO_MODULES);           /* none: the title alone, as Redis */
        info_cmd_sections(o);
        if (section(o, NET_INFO_CLUSTER))
                fprintf(o->f, "cluster_enabled:0\r\n");
        if (section(o, NET_INFO_KEYSPACE))
                for (unsigned d = 0; d < NET_DBS; d++)  /* Redis: the non-empty ones */
                        if (o->s.db_keys[d] > 0)
                                fprintf(o->f, "db%u:keys=%lld,expires=%lld,avg_ttl=0\r\n", d,
                                        (long long)o->s.db_keys[d],
                                        (long long)o->s.db_expires[d]);
        if (section(o, NET_INFO_SCREE))
                info_scree(o);
}

static void info_gather(struct net_req *req)
{
        struct info_out o = { .req = req, .srv = req->origin->srv };
        char *text = NULL;
        size_t len = 0;

        o.mask = net_info_sections(req->argv, req->argc);
        o.f = open_memstream(&text, &len);
        if (!o.f) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        info_sum(&o);
        info_text(&o);
        if (fclose(o.f) != 0) {
                free(text);
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        net_resp_add_verbatim(req->out, "txt", text, len);
        free(text);
}

int net_cmd_info(struct net_req *req)
{
        return net_req_each_shard(req, &net_cmd_def_shard_info, net_info_shard_bytes(),
                                  info_gather);
}
