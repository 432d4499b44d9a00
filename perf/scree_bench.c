/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench: the storage engine's benchmark, in-process, with db_bench's
 * workloads (fillseq, fillrandom, overwrite, readrandom, readmissing,
 * seekrandom, deleterandom) so perf/engine_vs_rocksdb can put the two side
 * by side.
 *
 * One pinned thread per shard (rx_smp), each with its own loop and its own
 * shard in --dir/shard-N; every shard works only on the keys it owns (see
 * perf/bench_shard.h), so nothing crosses between shards. The main thread
 * runs the workloads one after another, every shard at once, and prints a
 * line per workload: ops, seconds, ops/s, MB/s ((key + value) bytes per op
 * in MiB/s, as db_bench counts), latency p50/p99/p99.9 (submit to
 * acknowledgement) and, for writes, write amplification two ways: the
 * engine's disk_bytes_written over its user bytes ("wamp"), and the bytes
 * this process wrote according to the kernel (/proc/self/io write_bytes)
 * over the same user bytes ("io_wamp"); both count only what happened
 * during the workload. --json prints one JSON object per workload instead.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "perf/args.h"
#include "perf/bench_shard.h"
#include "reactor/smp.h"

#define MAX_WORKLOADS 64u
#define DEFAULT_NUM 1000000u
#define DEFAULT_MAX_SECONDS 600u

struct cli {
        struct bench_opts o;
        uint64_t idle_poll_us;          /* the shards' loops: spin this long before sleeping */
        enum bench_workload w[MAX_WORKLOADS];
        unsigned n_w;
        bool json;
};

/* One workload's figures over every shard. */
struct summary {
        uint64_t ops, found, entries, user_bytes, disk_bytes, io_bytes;
        uint64_t stalls, flushes, sst_reads;
        double secs;
        struct hist lat;
};

static void usage(FILE *f)
{
        fprintf(f,
                "usage: scree-bench [options]\n"
                "  --benchmarks LIST   comma-separated: fillseq,fillrandom,overwrite,readrandom,\n"
                "                      readmissing,seekrandom,deleterandom (default: all, in that order)\n"
                "  --num N             keys (default %u)      --reads N   ops of read workloads (default num)\n"
                "  --key-size N        bytes (default 16)      --value-size N  bytes (default 100)\n"
                "  --shards N          shards, one pinned thread each (default 1)\n"
                "  --sync batch|periodic   ack after the log sync, or at once with a timed sync\n"
                "                      (default periodic: db_bench's sync=0)  --sync-period-ms N (10)\n"
                "  --inflight N        ops in flight per shard (default 1)\n"
                "  --seek-nexts N      entries after the first of a seek (default 10)\n"
                "  --table ordered|hashed   (default ordered: sorted, like RocksDB)\n"
                "  --dir DIR           (default /var/tmp/scree-bench)  --use-existing-db\n"
                "  --memtable-budget MIB (256)  --cache-size MIB (64)  --compaction on|off (on)\n"
                "  --max-seconds N     per workload (default %u)  --seed N  --json\n"
                "  --idle-poll-us N    a shard spins this long before it sleeps (default 50, as\n"
                "                      the server's --idle-poll-us)\n",
                DEFAULT_NUM, DEFAULT_MAX_SECONDS);
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *ret)
{
        uint64_t v;
        int r = perf_parse_u64(s, min, max, &v);

        if (r == 0)
                *ret = (uint32_t)v;
        return r;
}

static int parse_list(struct cli *c, const char *arg)
{
        char buf[1024], *save = NULL;

        if (strlen(arg) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, arg);
        c->n_w = 0;
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                enum bench_workload w = bench_workload_parse(t);

                if (w == BENCH_WORKLOAD_INVALID || c->n_w == MAX_WORKLOADS)
                        return -EINVAL;
                c->w[c->n_w++] = w;
        }
        return c->n_w ? 0 : -EINVAL;
}

static int parse_choice(const char *arg, const char *a, const char *b, int *ret)
{
        if (strcmp(arg, a) == 0)
                *ret = 0;
        else if (strcmp(arg, b) == 0)
                *ret = 1;
        else
                return -EINVAL;
        return 0;
}

static int parse_mib(const char *arg, size_t *ret)
{
        uint64_t v;
        int r = perf_parse_u64(arg, 1, UINT64_C(1) << 20, &v);

        if (r == 0)
                *ret = (size_t)v << 20;
        return r;
}

static int parse_opt(struct cli *c, int ch, const char *arg)
{
        struct bench_opts *o = &c->o;
        uint32_t ms = 0;
        int v = 0, r;

        switch (ch) {
        case 'b': return parse_list(c, arg);
        case 'n': return perf_parse_u64(arg, 1, UINT32_MAX, &o->num);
        case 'r': return perf_parse_u64(arg, 1, UINT64_MAX / UINT32_MAX, &o->reads);
        case 'k': return parse_u32(arg, 4, BENCH_MAX_KEY_BYTES, &o->key_size);
        case 'v': return parse_u32(arg, 0, ENG_MAX_VALUE_BYTES, &o->value_size);
        case 's': return parse_u32(arg, 1, ENG_MAX_SHARDS, &o->shards);
        case 'i': return parse_u32(arg, 1, 4096, &o->inflight);
        case 'N': return parse_u32(arg, 0, 1u << 20, &o->seek_nexts);
        case 'T': return parse_u32(arg, 1, 86400, &o->max_seconds);
        case 'd': o->dir = arg; return 0;
        case 'e': o->use_existing = true; return 0;
        case 'M': return parse_mib(arg, &o->memtable_budget);
        case 'C': return parse_mib(arg, &o->cache_bytes);
        case 'S': return perf_parse_u64(arg, 1, UINT64_MAX, &o->seed);
        case 'I': return perf_parse_u64(arg, 0, 1000000, &c->idle_poll_us);
        case 'j': c->json = true; return 0;
        case 'P':
                r = parse_u32(arg, 1, 60000, &ms);
                o->sync_period_ns = (uint64_t)ms * NS_PER_MS;
                return r;
        case 'y':
                r = parse_choice(arg, "batch", "periodic", &v);
                o->sync = v ? ENG_WAL_SYNC_PERIODIC : ENG_WAL_SYNC_BATCH;
                return r;
        case 't':
                r = parse_choice(arg, "hashed", "ordered", &v);
                o->table = v ? ENG_TABLE_ORDERED : ENG_TABLE_DEFAULT;
                return r;
        case 'c':
                r = parse_choice(arg, "off", "on", &v);
                o->compaction = v;
                return r;
        default: return -EINVAL;
        }
}

static void defaults(struct cli *c)
{
        memset(c, 0, sizeof(*c));
        c->idle_poll_us = 50;
        c->o = (struct bench_opts){
                .num = DEFAULT_NUM, .key_size = 16, .value_size = 100, .shards = 1, .inflight = 1,
                .seek_nexts = 10, .max_seconds = DEFAULT_MAX_SECONDS, .sync = ENG_WAL_SYNC_PERIODIC,
                .table = ENG_TABLE_ORDERED, .dir = "/var/tmp/scree-bench", .compaction = true,
                .memtable_budget = ENG_SHARD_DEFAULT_BUDGET, .cache_bytes = (size_t)64 << 20,
                .seed = 301,
        };
        for (unsigned i = 0; i < BENCH_WORKLOAD_MAX; i++)
                c->w[c->n_w++] = (enum bench_workload)i;
}

/* Keys must stay distinct (and missing keys fit between them). */
static int check_opts(struct bench_opts *o)
{
        if (!o->reads)
                o->reads = o->num;
        if (o->key_size < 8 && o->num >= UINT64_C(1) << (8 * o->key_size - 1))
                return -EINVAL;
        return 0;
}

static int parse_args(int argc, char **argv, struct cli *c)
{
        static const struct option longopts[] = {
                { "benchmarks", required_argument, NULL, 'b' }, { "num", required_argument, NULL, 'n' },
                { "reads", required_argument, NULL, 'r' },      { "key-size", required_argument, NULL, 'k' },
                { "value-size", required_argument, NULL, 'v' }, { "shards", required_argument, NULL, 's' },
                { "sync", required_argument, NULL, 'y' },       { "sync-period-ms", required_argument, NULL, 'P' },
                { "inflight", required_argument, NULL, 'i' },   { "seek-nexts", required_argument, NULL, 'N' },
                { "table", required_argument, NULL, 't' },      { "dir", required_argument, NULL, 'd' },
                { "use-existing-db", no_argument, NULL, 'e' },  { "memtable-budget", required_argument, NULL, 'M' },
                { "cache-size", required_argument, NULL, 'C' }, { "compaction", required_argument, NULL, 'c' },
                { "max-seconds", required_argument, NULL, 'T' }, { "seed", required_argument, NULL, 'S' },
                { "json", no_argument, NULL, 'j' },             { "help", no_argument, NULL, 'h' },
                { "idle-poll-us", required_argument, NULL, 'I' },
                { NULL, 0, NULL, 0 },
        };
        int ch;

        defaults(c);
        while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                if (ch == 'h') {
                        usage(stdout);
                        exit(0);
                }
                if (ch == '?' || parse_opt(c, ch, optarg) < 0) {
                        fprintf(stderr, "scree-bench: bad option or value%s%s\n", optarg ? ": " : "",
                                optarg ? optarg : "");
                        return -EINVAL;
                }
        }
        if (optind != argc || check_opts(&c->o) < 0)
                return -EINVAL;
        return 0;
}

/* ---- running ---- */

/* Bytes this process has caused to be written to storage (all threads,
 * io_uring workers included), or 0 if the kernel does not say. */
static uint64_t proc_write_bytes(void)
{
        FILE *f = fopen("/proc/self/io", "r");
        char line[128];
        unsigned long long v = 0;

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "write_bytes: %llu", &v) == 1)
                        break;
        fclose(f);
        return v;
}

/* Runs step on every shard at once; returns the first error. */
static int step_all(struct bench_shard **sh, unsigned n, struct rx_smp *smp, enum bench_step step,
                    enum bench_workload w)
{
        int first = 0, r;
        unsigned started = 0;

        for (; started < n; started++) {
                r = bench_shard_start(sh[started], smp, step, w);
                if (r < 0) {
                        first = r;
                        break;
                }
        }
        for (unsigned i = 0; i < started; i++) {
                r = bench_shard_wait(sh[i]);
                if (r < 0 && !first)
                        first = r;
        }
        return first;
}

static void summarize(struct bench_shard **sh, unsigned n, struct summary *s)
{
        uint64_t start = UINT64_MAX, end = 0;

        for (unsigned i = 0; i < n; i++) {
                const struct bench_result *r = bench_shard_result(sh[i]);

                s->ops += r->ops;
                s->found += r->found;
                s->entries += r->entries;
                s->user_bytes += r->user_bytes;
                s->disk_bytes += r->disk_bytes;
                s->stalls += r->stalls;
                s->flushes += r->flushes;
                s->sst_reads += r->sst_reads;
                start = r->start_ns < start ? r->start_ns : start;
                end = r->end_ns > end ? r->end_ns : end;
                hist_merge(&s->lat, &r->lat);
        }
        s->secs = end > start ? (double)(end - start) / 1e9 : 0;
}

static double ratio(uint64_t a, uint64_t b)
{
        return b ? (double)a / (double)b : 0;
}

static void report(const struct cli *c, enum bench_workload w, const struct summary *s)
{
        const struct bench_opts *o = &c->o;
        uint64_t per_op = w == BENCH_SEEKRANDOM ? 0 : o->key_size + o->value_size;
        uint64_t bytes = per_op * s->ops + (uint64_t)(o->key_size + o->value_size) * s->entries;
        double ops_s = s->secs > 0 ? (double)s->ops / s->secs : 0;
        double mbs = s->secs > 0 ? (double)bytes / s->secs / 1048576.0 : 0;
        double p50 = (double)hist_quantile(&s->lat, 0.50) / 1e3, p99 = (double)hist_quantile(&s->lat, 0.99) / 1e3;
        double p999 = (double)hist_quantile(&s->lat, 0.999) / 1e3;
        const char *name = bench_workload_name(w);

        if (c->json) {
                printf("{\"name\":\"%s\",\"ops\":%" PRIu64 ",\"seconds\":%.3f,\"ops_per_sec\":%.0f,"
                       "\"mb_per_sec\":%.1f,\"p50_us\":%.2f,\"p99_us\":%.2f,\"p999_us\":%.2f,"
                       "\"found\":%" PRIu64 ",\"entries\":%" PRIu64 ",\"user_bytes\":%" PRIu64
                       ",\"disk_bytes\":%" PRIu64 ",\"io_write_bytes\":%" PRIu64 ",\"wamp\":%.3f,"
                       "\"io_wamp\":%.3f,\"stalls\":%" PRIu64 ",\"flushes\":%" PRIu64 ",\"sst_reads\":%" PRIu64 "}\n",
                       name, s->ops, s->secs, ops_s, mbs, p50, p99, p999, s->found, s->entries, s->user_bytes,
                       s->disk_bytes, s->io_bytes, ratio(s->disk_bytes, s->user_bytes),
                       ratio(s->io_bytes, s->user_bytes), s->stalls, s->flushes, s->sst_reads);
        } else {
                printf("%-12s %9" PRIu64 " ops %8.3f s %10.0f ops/s %7.1f MB/s  p50 %7.1f  p99 %8.1f  "
                       "p999 %8.1f us", name, s->ops, s->secs, ops_s, mbs, p50, p99, p999);
                if (bench_workload_writes(w))
                        printf("  wamp %.2f io_wamp %.2f", ratio(s->disk_bytes, s->user_bytes),
                               ratio(s->io_bytes, s->user_bytes));
                else
                        printf("  found %" PRIu64 "%s", s->found, w == BENCH_SEEKRANDOM ? " (seeks)" : "");
                printf("\n");
        }
        fflush(stdout);
}

static int run_workload(const struct cli *c, struct bench_shard **sh, struct rx_smp *smp,
                        enum bench_workload w)
{
        struct summary *s = calloc(1, sizeof(*s));
        uint64_t io0 = proc_write_bytes();
        int r;

        if (!s)
                return -ENOMEM;
        r = step_all(sh, c->o.shards, smp, BENCH_STEP_RUN, w);
        s->io_bytes = proc_write_bytes() - io0;
        summarize(sh, c->o.shards, s);
        if (r == 0)
                report(c, w, s);
        free(s);
        return r;
}

static void print_header(const struct cli *c, const struct bench_shard *const *sh)
{
        const struct bench_opts *o = &c->o;

        if (c->json)
                return;
        printf("# scree-bench: num=%" PRIu64 " reads=%" PRIu64 " key=%u value=%u shards=%u sync=%s "
               "inflight=%u table=%s budget=%zuMiB cache=%zuMiB compaction=%s dir=%s\n",
               o->num, o->reads, o->key_size, o->value_size, o->shards,
               o->sync == ENG_WAL_SYNC_BATCH ? "batch" : "periodic", o->inflight,
               o->table == ENG_TABLE_ORDERED ? "ordered" : "hashed", o->memtable_budget >> 20,
               o->cache_bytes >> 20, o->compaction ? "on" : "off", o->dir);
        printf("# keys per shard:");
        for (unsigned i = 0; i < o->shards; i++)
                printf(" %" PRIu64, bench_shard_keys(sh[i]));
        printf("\n");
}

/* Opens every shard, runs the workloads in order, closes. */
static int bench_all(const struct cli *c, struct bench_shard **sh, struct rx_smp *smp)
{
        int r = step_all(sh, c->o.shards, smp, BENCH_STEP_OPEN, BENCH_WORKLOAD_INVALID), rc;

        if (r < 0) {
                fprintf(stderr, "scree-bench: opening the shards in %s: %s\n", c->o.dir, scree_strerror(r));
                return r;
        }
        print_header(c, (const struct bench_shard *const *)sh);
        for (unsigned i = 0; i < c->n_w && r == 0; i++)
                r = run_workload(c, sh, smp, c->w[i]);
        rc = step_all(sh, c->o.shards, smp, BENCH_STEP_CLOSE, BENCH_WORKLOAD_INVALID);
        if (rc < 0)
                fprintf(stderr, "scree-bench: closing the shards: %s\n", scree_strerror(rc));
        return r < 0 ? r : rc;
}

int main(int argc, char **argv)
{
        struct rx_smp_opts so = { 0 };
        struct bench_shard *sh[ENG_MAX_SHARDS] = { 0 };
        struct rx_smp *smp = NULL;
        struct cli c;
        int r = 0;

        if (parse_args(argc, argv, &c) < 0) {
                usage(stderr);
                return 2;
        }
        for (unsigned i = 0; i < c.o.shards && r == 0; i++)
                if (!(sh[i] = bench_shard_new(&c.o, i)))
                        r = -ENOMEM;
        so.n_shards = c.o.shards;
        so.loop.idle_poll_ns = c.idle_poll_us * 1000;
        if (r == 0)
                r = rx_smp_new(&so, &smp);
        if (r < 0)
                fprintf(stderr, "scree-bench: starting %u shards: %s (%s)\n", c.o.shards,
                        scree_strerror(r), rx_loop_setup_hint(r));
        else
                r = bench_all(&c, sh, smp);
        if (smp) {
                rx_smp_stop(smp);
                rx_smp_free(smp);
        }
        for (unsigned i = 0; i < c.o.shards; i++)
                bench_shard_free(sh[i]);
        return r == 0 ? 0 : 1;
}
