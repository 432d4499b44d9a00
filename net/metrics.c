/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metrics (metrics.h): command counters, shard snapshots, and the
 * Prometheus text. Names follow Prometheus's rules (base units:
 * *_seconds, *_bytes; counters end in _total). The simple per-shard
 * families come from one table of offsets into the snapshot, so adding a
 * number is one line here and one in docs/server.md. The per-tablet
 * families are metrics_tablets.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/time.h"
#include "net/cmd.h"
#include "net/metrics.h"
#include "net/server.h"

uint64_t net_metrics_bucket_ns(unsigned i)
{
        static const uint64_t step[3] = { 10, 25, 50 };        /* 1, 2.5, 5 x 10 us x 10^k */
        uint64_t ns = step[i % 3] * NS_PER_US;

        for (unsigned k = 0; k < i / 3; k++)
                ns *= 10;
        return ns;
}

unsigned net_metrics_bucket_of(uint64_t ns)
{
        /* The bounds of net_metrics_bucket_ns, spelled out for the request
         * path: most commands end in the first few. */
        static const uint64_t bound[NET_METRICS_BUCKETS] = {
                10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000,
                10000000, 25000000, 50000000, 100000000, 250000000, 500000000, 1000000000,
                2500000000, 5000000000, 10000000000,
        };
        unsigned b = 0;

        while (b < NET_METRICS_BUCKETS && ns > bound[b])
                b++;
        return b;
}

int net_cmd_metrics_init(struct net_cmd_metrics *m)
{
        memset(m, 0, sizeof(*m));
        m->n_slots = net_cmd_stat_slots();
        m->cmd = calloc(m->n_slots, sizeof(*m->cmd));
        return m->cmd ? 0 : -ENOMEM;
}

void net_cmd_metrics_fini(struct net_cmd_metrics *m)
{
        if (!m)
                return;
        free(m->cmd);
        m->cmd = NULL;
        m->n_slots = 0;
}

void net_cmd_metrics_observe(struct net_cmd_metrics *m, size_t slot, uint64_t ns, bool failed)
{
        struct net_cmd_stat *st;

        if (slot >= m->n_slots)
                return;
        st = &m->cmd[slot];
        st->calls++;
        st->failed += failed;
        st->ns += ns;
        st->buckets[net_metrics_bucket_of(ns)]++;
}

void net_cmd_metrics_reject(struct net_cmd_metrics *m, size_t slot)
{
        if (slot < m->n_slots)
                m->cmd[slot].rejected++;
}

void net_cmd_metrics_reset(struct net_cmd_metrics *m)
{
        memset(m->cmd, 0, m->n_slots * sizeof(*m->cmd));
}

void net_cmd_metrics_copy(struct net_cmd_metrics *dst, const struct net_cmd_metrics *src)
{
        size_t n = dst->n_slots < src->n_slots ? dst->n_slots : src->n_slots;

        memcpy(dst->cmd, src->cmd, n * sizeof(*dst->cmd));
}

void net_cmd_stat_add(struct net_cmd_stat *dst, const struct net_cmd_stat *src)
{
        dst->calls += src->calls;
        dst->failed += src->failed;
        dst->rejected += src->rejected;
        dst->ns += src->ns;
        for (unsigned b = 0; b <= NET_METRICS_BUCKETS; b++)
                dst->buckets[b] += src->buckets[b];
}

int net_metrics_snap_init(struct net_metrics_snap *s, uint32_t tablets_cap)
{
        memset(s, 0, sizeof(*s));
        if (net_cmd_metrics_init(&s->cmd) < 0 ||
            net_metrics_tablets_init(&s->tablets, tablets_cap) < 0) {
                net_metrics_snap_fini(s);
                return -ENOMEM;
        }
        return 0;
}

void net_metrics_snap_fini(struct net_metrics_snap *s)
{
        net_cmd_metrics_fini(&s->cmd);
        net_metrics_tablets_fini(&s->tablets);
}

void net_metrics_snap_fill(struct net_metrics_snap *s, struct net_shard *sh)
{
        s->shard = sh->id;
        s->loop = *rx_loop_stats(sh->loop);
        s->smp = *rx_smp_stats(sh->loop);
        s->engine_ready = sh->eng != NULL;
        if (sh->eng) {
                s->eng = *eng_shard_stats(sh->eng);
                net_metrics_tablets_fill(&s->tablets, sh->eng);
        }
        s->conns = sh->n_conns;
        s->accepted = sh->n_accepted;
        if (sh->id == 0) {
                s->balancer_moves = sh->srv->balancer.moves;
                s->balancer_paused = sh->srv->balancer.paused || !sh->cfg.tablet_balancer;
        }
        if (sh->metrics)
                net_cmd_metrics_copy(&s->cmd, sh->metrics);
}

/* ---- the text ---- */

enum { GAUGE, COUNTER };

/* A per-shard family: one number of the snapshot. */
struct family {
        const char *name, *help;
        uint8_t type;
        bool engine;                    /* only for shards whose engine is open */
        bool ns;                        /* the number is ns, reported in seconds */
        size_t off;                     /* of a uint64_t in struct net_metrics_snap */
};

#define SNAP(field) offsetof(struct net_metrics_snap, field)

static const struct family families[] = {
        { "scree_connections", "Client connections open on the shard.", GAUGE, false, false,
          SNAP(conns) },
        { "scree_connections_accepted_total", "Client connections the shard accepted.", COUNTER,
          false, false, SNAP(accepted) },
        { "scree_reactor_busy_seconds_total", "Time the shard's loop spent in iterations that did work.",
          COUNTER, false, true, SNAP(loop.busy_ns) },
        { "scree_reactor_idle_seconds_total", "Time the shard's loop spent idle (spinning or asleep).",
          COUNTER, false, true, SNAP(loop.idle_ns) },
        { "scree_reactor_stalls_total", "Tasks, timers or completions that held the loop too long.",
          COUNTER, false, false, SNAP(loop.stalls) },
        { "scree_reactor_io_completed_total", "I/O operations the shard's ring completed.", COUNTER,
          false, false, SNAP(loop.io_completed) },
        { "scree_cross_shard_messages_total", "Cross-shard messages the shard sent.", COUNTER, false,
          false, SNAP(smp.sent) },
        { "scree_cross_shard_messages_received_total", "Cross-shard messages the shard ran.",
          COUNTER, false, false, SNAP(smp.received) },
        { "scree_memtable_bytes", "Bytes in the shard's active memtables.", GAUGE, true, false,
          SNAP(eng.memtable_bytes) },
        { "scree_memtable_sealed_bytes", "Bytes in sealed memtables waiting for their flush.", GAUGE,
          true, false, SNAP(eng.imm_bytes) },
        { "scree_sstables", "Live SSTables of the shard.", GAUGE, true, false, SNAP(eng.sstables) },
        { "scree_sstable_bytes", "Bytes of the shard's live SSTables.", GAUGE, true, false,
          SNAP(eng.sstable_bytes) },
        { "scree_commitlog_bytes_written_total", "Bytes written to commit-log segments since start.",
          COUNTER, true, false, SNAP(eng.log_bytes_written) },
        { "scree_commitlog_syncs_total", "Commit-log syncs since start.", COUNTER, true, false,
          SNAP(eng.log_syncs) },
        { "scree_commitlog_gathers_total",
          "Commit-log flushes that waited for the writers the last sync woke (batch mode).",
          COUNTER, true, false, SNAP(eng.log_gathers) },
        { "scree_block_cache_hits_total", "Block-cache lookups that found the block.", COUNTER, true,
          false, SNAP(eng.cache_hits) },
        { "scree_block_cache_misses_total", "Block-cache lookups that read the block from disk.",
          COUNTER, true, false, SNAP(eng.cache_misses) },
        { "scree_block_cache_bytes", "Bytes held by the block cache.", GAUGE, true, false,
          SNAP(eng.cache_bytes) },
        { "scree_flushes_total", "Memtables flushed to SSTables.", COUNTER, true, false,
          SNAP(eng.flushes) },
        { "scree_flush_bytes_total", "Bytes of SSTables written by flushes.", COUNTER, true, false,
          SNAP(eng.flush_bytes) },
        { "scree_compactions_total", "Compactions finished.", COUNTER, true, false,
          SNAP(eng.compactions) },
        { "scree_read_compactions_total", "Compactions started by reads (a tablet's read debt).",
          COUNTER, true, false, SNAP(eng.read_compactions) },
        { "scree_compaction_errors_total", "Compactions that failed (their inputs kept).", COUNTER,
          true, false, SNAP(eng.compaction_errors) },
        { "scree_tablet_splits_total", "Tablets of the shard split (by size, by load or by hand).",
          COUNTER, true, false, SNAP(eng.tablet_splits) },
        { "scree_tablet_merges_total", "Merges of the shard's tablets (automatic or by hand).",
          COUNTER, true, false, SNAP(eng.tablet_merges) },
        { "scree_tablet_moves_in_total", "Tablets moved to the shard (by the balancer or by hand).",
          COUNTER, true, false, SNAP(eng.tablet_moves_in) },
        { "scree_balancer_moves_total", "Tablets the balancer moved (counted on shard 0, which "
          "runs it).", COUNTER, false, false, SNAP(balancer_moves) },
        { "scree_balancer_paused", "1 while the balancer is paused or off (shard 0; 0 elsewhere).",
          GAUGE, false, false, SNAP(balancer_paused) },
        { "scree_tablet_moves_out_total", "Tablets moved away from the shard.",
          COUNTER, true, false, SNAP(eng.tablet_moves_out) },
        { "scree_sstable_corrupt_blocks_total",
          "Damaged SSTable data blocks found by reads (each counted and logged once).", COUNTER,
          true, false, SNAP(eng.corrupt_blocks) },
        { "scree_sstable_corrupt_reads_total",
          "Reads, scans and compactions that met a damaged SSTable data block.", COUNTER, true,
          false, SNAP(eng.corrupt_reads) },
        { "scree_compaction_bytes_read_total", "SSTable bytes read by compactions.", COUNTER, true,
          false, SNAP(eng.compaction_bytes_in) },
        { "scree_compaction_bytes_written_total", "SSTable bytes written by compactions.", COUNTER,
          true, false, SNAP(eng.compaction_bytes_out) },
        { "scree_compaction_seconds_total", "Time a compaction was running on the shard.", COUNTER,
          true, true, SNAP(eng.compaction_ns) },
        { "scree_write_stalls_total", "Writes that waited for memtable space.", COUNTER, true, false,
          SNAP(eng.stalls) },
        { "scree_write_stall_seconds_total", "Time writes waited for memtable space.", COUNTER, true,
          true, SNAP(eng.stall_ns) },
        { "scree_memtable_blocks_prefaulted_total",
          "Memtable and block-cache huge blocks faulted in off the shard's thread, ahead of use.",
          COUNTER, true, false,
          SNAP(eng.blocks_prefaulted) },
        { "scree_memtable_block_pool_misses_total",
          "Memtable and block-cache huge blocks taken cold, faulted in on the shard's thread.",
          COUNTER, true, false,
          SNAP(eng.block_pool_misses) },
};

static void head(FILE *f, const char *name, const char *help, const char *type)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void seconds(FILE *f, uint64_t ns)
{
        fprintf(f, "%llu.%09llu\n", (unsigned long long)(ns / NS_PER_SEC),
                (unsigned long long)(ns % NS_PER_SEC));
}

static void format_family(FILE *f, const struct family *fam, const struct net_metrics_snap *snaps,
                          unsigned n)
{
        head(f, fam->name, fam->help, fam->type == GAUGE ? "gauge" : "counter");
        for (unsigned i = 0; i < n; i++) {
                uint64_t v;

                if (fam->engine && !snaps[i].engine_ready)
                        continue;
                memcpy(&v, (const char *)&snaps[i] + fam->off, sizeof(v));
                fprintf(f, "%s{shard=\"%u\"} ", fam->name, snaps[i].shard);
                if (fam->ns)
                        seconds(f, v);
                else
                        fprintf(f, "%llu\n", (unsigned long long)v);
        }
}

/* A per-command counter family: one sample per shard and command called there. */
static void format_cmd_counter(FILE *f, const struct net_metrics_snap *snaps, unsigned n,
                               const char *name, const char *help, size_t off)
{
        char cmd[64];

        head(f, name, help, "counter");
        for (unsigned i = 0; i < n; i++)
                for (size_t c = 0; c < snaps[i].cmd.n_slots; c++) {
                        uint64_t v;

                        memcpy(&v, (const char *)&snaps[i].cmd.cmd[c] + off, sizeof(v));
                        if (v)
                                fprintf(f, "%s{shard=\"%u\",cmd=\"%s\"} %llu\n", name,
                                        snaps[i].shard, net_cmd_stat_name(c, cmd, sizeof(cmd)),
                                        (unsigned long long)v);
                }
}

static void format_histogram(FILE *f, const char *labels, const struct net_cmd_stat *st)
{
        static const char name[] = "scree_command_duration_seconds";
        uint64_t cum = 0;

        for (unsigned b = 0; b < NET_METRICS_BUCKETS; b++) {
                cum += st->buckets[b];
                fprintf(f, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels,
                        (double)net_metrics_bucket_ns(b) / (double)NS_PER_SEC, (unsigned long long)cum);
        }
        fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)st->calls);
        fprintf(f, "%s_sum{%s} ", name, labels);
        seconds(f, st->ns);
        fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)st->calls);
}

/* The latency histogram, per shard and command: what Redis's exporter
 * users get per command (cmd="get"). */
static void format_latency(FILE *f, const struct net_metrics_snap *snaps, unsigned n)
{
        char cmd[64], labels[128];

        head(f, "scree_command_duration_seconds", "Time from a command's dispatch to its reply.",
             "histogram");
        for (unsigned i = 0; i < n; i++)
                for (size_t c = 0; c < snaps[i].cmd.n_slots; c++) {
                        const struct net_cmd_stat *st = &snaps[i].cmd.cmd[c];

                        if (!st->calls)
                                continue;
                        snprintf(labels, sizeof(labels), "shard=\"%u\",cmd=\"%s\"", snaps[i].shard,
                                 net_cmd_stat_name(c, cmd, sizeof(cmd)));
                        format_histogram(f, labels, st);
                }
}

#define STAT(field) offsetof(struct net_cmd_stat, field)

int net_metrics_format(FILE *f, const struct net_metrics_snap *snaps, unsigned n)
{
        head(f, "scree_engine_ready", "1 once the shard's engine is open.", "gauge");
        for (unsigned i = 0; i < n; i++)
                fprintf(f, "scree_engine_ready{shard=\"%u\"} %d\n", snaps[i].shard,
                        snaps[i].engine_ready);
        format_cmd_counter(f, snaps, n, "scree_commands_total",
                           "Commands finished, by the shard of their connection.", STAT(calls));
        format_cmd_counter(f, snaps, n, "scree_command_failures_total",
                           "Commands that ran and replied an error.", STAT(failed));
        format_cmd_counter(f, snaps, n, "scree_command_rejections_total",
                           "Commands refused before they ran (arity, NOAUTH, -LOADING, key size).",
                           STAT(rejected));
        format_latency(f, snaps, n);
        for (size_t k = 0; k < ARRAY_SIZE(families); k++)
                format_family(f, &families[k], snaps, n);
        if (net_metrics_tablets_format(f, snaps, n) < 0)
                return -EIO;
        return ferror(f) ? -EIO : 0;
}

/* The escape of byte c in a label value into e; returns its length. */
static size_t escape_byte(uint8_t c, char e[5])
{
        static const char hex[] = "0123456789abcdef";

        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
                e[0] = (char)c;
                return 1;
        }
        e[0] = '\\';
        if (c == '\\' || c == '"' || c == '\n') {
                e[1] = c == '\n' ? 'n' : (char)c;
                return 2;
        }
        e[1] = '\\';         /* the value holds "\xHH": its backslash escaped */
        e[2] = 'x';
        e[3] = hex[c >> 4];
        e[4] = hex[c & 15];
        return 5;
}

size_t net_metrics_label_escape(char *buf, size_t size, const void *src, size_t len)
{
        const uint8_t *p = src;
        size_t at = 0, i;

        if (!size)
                return 0;
        for (i = 0; i < len; i++) {
                char e[5];
                size_t n = escape_byte(p[i], e);

                if (size - at <= n)
                        break;
                memcpy(buf + at, e, n);
                at += n;
        }
        buf[at] = '\0';
        return i;
}

/* ---- the request ---- */

/* The end of the head ("\r\n\r\n" or a bare "\n\n"), or NULL. */
static const char *head_end(const char *buf, size_t len)
{
        for (size_t i = 0; i + 1 < len; i++) {
                if (buf[i] != '\n')
                        continue;
                if (buf[i + 1] == '\n')
                        return buf + i + 2;
                if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
                        return buf + i + 3;
        }
        return NULL;
}

static bool is_version(const char *v, size_t len)
{
        if (len && v[len - 1] == '\r')
                len--;
        return len == 8 && (memcmp(v, "HTTP/1.0", 8) == 0 || memcmp(v, "HTTP/1.1", 8) == 0);
}

int net_metrics_check_request(const char *buf, size_t len)
{
        const char *line_end, *sp1, *sp2, *path_end;

        if (!head_end(buf, len))
                return len >= NET_METRICS_MAX_REQUEST ? 431 : 0;
        line_end = memchr(buf, '\n', len);
        sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
        if (!sp1 || sp1 == buf)
                return 400;
        sp2 = memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1));
        if (!sp2 || sp2 == sp1 + 1 || sp1[1] != '/' ||
            !is_version(sp2 + 1, (size_t)(line_end - sp2 - 1)))
                return 400;
        if ((size_t)(sp1 - buf) != 3 || memcmp(buf, "GET", 3) != 0)
                return 405;
        path_end = memchr(sp1 + 1, '?', (size_t)(sp2 - sp1 - 1));
        if (!path_end)
                path_end = sp2;
        if ((size_t)(path_end - sp1 - 1) != 8 || memcmp(sp1 + 1, "/metrics", 8) != 0)
                return 404;
        return 200;
}
