/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What INFO, MEMORY and CONFIG RESETSTAT share beyond the per-shard
 * child (info_int.h): the process's memory figures and their peak,
 * sampled by shard 0's once-a-second tick and by every INFO; the
 * command statistics summed over the children; RESETSTAT, which zeroes
 * every shard's counters through one child each; and the INFO server
 * fields main sets before the shards start.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/time.h"
#include "net/cmd.h"
#include "net/config.h"
#include "net/info_int.h"
#include "net/server.h"
#include "reactor/alloc.h"

/* ---- memory ---- */

static uint64_t rss_bytes(void)
{
        unsigned long long size = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");

        if (!f)
                return 0;
        if (fscanf(f, "%llu %llu", &size, &resident) != 2)
                resident = 0;
        fclose(f);
        return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void peak_raise(struct net_server *srv, uint64_t used)
{
        uint64_t peak = atomic_load_explicit(&srv->mem_peak, memory_order_relaxed);

        while (used > peak && !atomic_compare_exchange_weak(&srv->mem_peak, &peak, used))
                ;
}

void net_info_mem_get(struct net_req *parent, struct net_info_mem *ret)
{
        struct net_server *srv = parent->origin->srv;

        memset(ret, 0, sizeof(*ret));
        rx_alloc_stats(&ret->alloc);
        for (uint32_t i = 0; i < parent->n_children; i++) {
                const struct net_info_shard *si = parent->children[i]->info;

                ret->engine += si->engine_mem;
                ret->clients += si->client_mem;
        }
        ret->used = ret->alloc.allocated + ret->engine;
        ret->rss = rss_bytes();
        ret->total_system = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
        peak_raise(srv, ret->used);
        ret->peak = atomic_load(&srv->mem_peak);
}

void net_info_human(char *buf, size_t len, uint64_t bytes)
{
        static const char unit[] = "KMGTPE";
        double v = (double)bytes;
        int u = -1;

        if (bytes < 1024) {
                snprintf(buf, len, "%lluB", (unsigned long long)bytes);
                return;
        }
        while (v >= 1024 && u < 5) {
                v /= 1024;
                u++;
        }
        snprintf(buf, len, "%.2f%c", v, unit[u]);
}

void net_info_tick(struct net_shard *sh)
{
        struct net_server *srv = sh->srv;
        struct rx_alloc_stats a;
        uint64_t used;

        atomic_store_explicit(&sh->engine_mem_bytes, sh->eng ? eng_shard_mem_bytes(sh->eng) : 0,
                              memory_order_relaxed);
        if (sh->id != 0)
                return;
        rx_alloc_stats(&a);
        used = a.allocated;
        for (unsigned i = 0; i < srv->n_shards; i++)
                used += atomic_load_explicit(&srv->shards[i]->engine_mem_bytes,
                                             memory_order_relaxed);
        peak_raise(srv, used);
}

void net_info_sum_cmds(const struct net_req *parent, struct net_cmd_stat *sum)
{
        for (uint32_t i = 0; i < parent->n_children; i++) {
                const struct net_info_shard *si = parent->children[i]->info;

                for (size_t k = 0; k < si->n_slots; k++)
                        net_cmd_stat_add(&sum[k], &si->cmd[k]);
        }
}

/* ---- CONFIG RESETSTAT ---- */

static int shard_resetstat(struct net_req *req)
{
        struct net_shard *sh = req->exec;

        sh->n_commands = sh->tick_commands = sh->ops_per_sec = 0;
        sh->keyspace_hits = sh->keyspace_misses = 0;
        sh->evicted_clients = 0;
        sh->net_in_bytes = sh->net_out_bytes = 0;
        sh->tick_in_bytes = sh->tick_out_bytes = sh->in_bps = sh->out_bps = 0;
        memset(&sh->errstats, 0, sizeof(sh->errstats));
        if (sh->metrics)
                net_cmd_metrics_reset(sh->metrics);
        if (sh->eng)
                sh->expired_base = eng_shard_stats(sh->eng)->expired_dropped;
        net_resp_add_simple(req->out, "OK", 2);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_resetstat = { "config", -2, NET_CMD_LOADING |
                                                        NET_CMD_NOENGINE, 0, 0, 0, shard_resetstat,
                                                        NULL };

static void resetstat_gather(struct net_req *req)
{
        struct net_server *srv = req->origin->srv;

        atomic_store(&srv->total_connections, 0);
        atomic_store(&srv->rejected_connections, 0);
        atomic_store(&srv->mem_peak, 0);        /* raised again by the next sample */
        net_resp_add_simple(req->out, "OK", 2);
}

int net_cmd_resetstat(struct net_req *req)
{
        return net_req_each_shard(req, &def_shard_resetstat, 0, resetstat_gather);
}

/* ---- start-up ---- */

void net_info_init(struct net_server *srv, int argc, char **argv)
{
        static const char hex[] = "0123456789abcdef";
        const char *conf = cfg_file_arg(argc, argv);
        unsigned char rnd[20];
        ssize_t n;

        n = readlink("/proc/self/exe", srv->executable, sizeof(srv->executable) - 1);
        srv->executable[n > 0 ? n : 0] = 0;
        if (!conf || !realpath(conf, srv->config_file))
                srv->config_file[0] = 0;
        if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
                uint64_t t = time_now_ns() ^ (uint64_t)getpid();

                for (size_t i = 0; i < sizeof(rnd); i++)
                        rnd[i] = (unsigned char)(t >> (i % 8 * 8)) ^ (unsigned char)i;
        }
        for (size_t i = 0; i < sizeof(rnd); i++) {
                srv->run_id[2 * i] = hex[rnd[i] >> 4];
                srv->run_id[2 * i + 1] = hex[rnd[i] & 15];
        }
        srv->run_id[40] = 0;
}
