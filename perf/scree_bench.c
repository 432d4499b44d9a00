/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench: the storage engine's benchmark, in-process: db_bench's
 * workloads (fillseq, fillrandom, overwrite, readrandom, readmissing,
 * seekrandom, deleterandom, readwhilewriting) and YCSB's core mixes A-F
 * (ycsba..ycsbf), with a choice of key distributions (perf/keydist.h), by
 * count or by duration, closed loop or open loop at a target rate.
 *
 * --engine scree (the default): one pinned thread per shard, each with
 * its own loop and shard in --dir/shard-N (perf/bench_shard.h);
 * --engine api: the same workloads through libscree's public API from
 * host threads (perf/bench_api.h).
 * --engine rocksdb, leveldb or lmdb (when built with the library): the
 * same workloads with the same measurement through the library's C API,
 * one thread per "shard" on one database (perf/bench_rocksdb.h,
 * perf/bench_leveldb.h, perf/bench_lmdb.h). Either way every worker works
 * only on the keys it owns (perf/bench_gen.h), so nothing crosses workers.
 *
 * The main thread runs the workloads one after another, every worker at
 * once, shows a progress line on a terminal, and prints a row per workload
 * (perf/bench_report.h for what each figure means): a table, --json (one
 * object per workload; perf/engine_vs_rocksdb, perf/engine_vs_embedded
 * and perf/durable_vs_fio read it) or --csv; --timeseries FILE adds one
 * CSV line per second.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "engine/shard.h"
#include "perf/args.h"
#include "perf/bench_leveldb.h"
#include "perf/bench_api.h"
#include "perf/bench_lmdb.h"
#include "perf/bench_report.h"
#include "perf/bench_rocksdb.h"
#include "perf/bench_shard.h"

#define MAX_WORKLOADS 64u
#define DEFAULT_NUM 1000000u
#define DEFAULT_MAX_SECONDS 600u
/* How often the main thread looks whether the workers are done. */
#define POLL_NS (5 * NS_PER_MS)

struct cli {
        struct bench_opts o;
        uint64_t idle_poll_us;          /* the shards' loops: spin this long before sleeping */
        enum bench_workload w[MAX_WORKLOADS];
        unsigned n_w;
        enum bench_format fmt;
        const struct engine_kind *engine;
        const char *timeseries;
        FILE *ts;
        bool progress;
};

static void usage(FILE *f)
{
        fprintf(f,
                "usage: scree-bench [options]\n"
                "  --benchmarks LIST   comma-separated: fillseq,fillrandom,overwrite,readrandom,\n"
                "                      readmissing,seekrandom,deleterandom (the default, in that order),\n"
                "                      readwhilewriting, ycsba..ycsbf (YCSB's core mixes A-F), or\n"
                "                      'ycsb' for all six\n"
                "  --engine scree|api|rocksdb|leveldb|lmdb  (default scree; api: libscree's\n"
                "                      public API from host threads, async when --inflight > 1;\n"
                "                      the peers when built with their library)\n"
                "  --num N             keys (default %u)      --reads N   ops of read workloads (default num)\n"
                "  --duration S        run each workload S seconds instead of a count\n"
                "  --key-size N        bytes (default 16)      --value-size N  bytes (default 100)\n"
                "  --distribution uniform|zipfian|latest|sequential|gaussian   keys the random\n"
                "                      workloads draw (default uniform; the YCSB mixes their own)\n"
                "  --zipf-theta X      zipfian and latest exponent, 0 < X < 1 (default 0.99)\n"
                "  --scan-length N     YCSB E: scans of 1..N entries (default 100)\n"
                "  --shards N          shards (the other engines: threads), one pinned thread each\n"
                "                      (default 1)\n"
                "  --sync batch|periodic   ack after the log sync, or at once with a timed sync\n"
                "                      (default periodic: db_bench's sync=0)  --sync-period-ms N (10)\n"
                "  --inflight N        ops in flight per shard (default 1; the other engines: always 1)\n"
                "  --rate N            open loop: N ops/s over all shards, latency from the due time\n"
                "  --write-rate N      readwhilewriting: the writers' ops/s over all (default flat out);\n"
                "                      the due writes go together, and a writer with none due waits 1 ms\n"
                "  --seek-nexts N      entries after the first of a seek (default 10)\n"
                "  --table ordered|hashed   (default ordered: sorted, like RocksDB)\n"
                "  --dir DIR           (default /var/tmp/scree-bench)  --use-existing-db\n"
                "  --memtable-budget MIB (256)  --cache-size MIB (64)  --compaction on|off (on)\n"
                "  --row-cache on|off (off; scree: lookups cache the rows they read, not blocks)\n"
                "  --compaction-readahead KIB|cached   scree: a compaction reads each input in\n"
                "                      reads of KIB (a multiple of 4; default 256) past the cache,\n"
                "                      or block by block through it\n"
                "  --compaction-rate MIB|off   scree: each shard's compaction write rate limit\n"
                "                      in MiB/s (default 64), or unthrottled\n"
                "  --prefault on|off   scree: fault the memtable budget and the cache in before\n"
                "                      the first workload (default on, as the server's --prefault)\n"
                "  --stats             scree: after each workload, each shard's engine counters\n"
                "                      (gets, cache, tables, compactions) on stderr\n"
                "  --max-seconds N     per workload (default %u)  --seed N\n"
                "  --json | --csv      machine-readable rows instead of the table\n"
                "  --timeseries FILE   one CSV line per second per workload\n"
                "  --api-shards N      api: the database's shards (default --shards, the host\n"
                "                      threads)\n"
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

static int add_workload(struct cli *c, enum bench_workload w)
{
        if (w == BENCH_WORKLOAD_INVALID || c->n_w == MAX_WORKLOADS)
                return -EINVAL;
        c->w[c->n_w++] = w;
        return 0;
}

static int parse_list(struct cli *c, const char *arg)
{
        char buf[1024], *save = NULL;
        int r = 0;

        if (strlen(arg) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, arg);
        c->n_w = 0;
        for (char *t = strtok_r(buf, ",", &save); t && r == 0; t = strtok_r(NULL, ",", &save)) {
                if (strcmp(t, "ycsb") != 0) {
                        r = add_workload(c, bench_workload_parse(t));
                        continue;
                }
                for (int w = BENCH_YCSB_A; w <= BENCH_YCSB_F && r == 0; w++)
                        r = add_workload(c, (enum bench_workload)w);
        }
        return r == 0 && c->n_w ? 0 : -EINVAL;
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

/* The word, for word_value, or a count (at least min, a multiple of
 * align, up to 2^20) of units of 1 << shift bytes. */
static int parse_amount_or(const char *arg, const char *word, uint64_t word_value, uint64_t min,
                           uint64_t align, unsigned shift, uint64_t *ret)
{
        uint64_t v;
        int r;

        if (strcmp(arg, word) == 0) {
                *ret = word_value;
                return 0;
        }
        r = perf_parse_u64(arg, min, UINT64_C(1) << 20, &v);
        if (r == 0 && v % align)
                r = -EINVAL;
        if (r == 0)
                *ret = v << shift;
        return r;
}

/* MiB/s, or "off". */
static int parse_compaction_rate(const char *arg, uint64_t *ret)
{
        return parse_amount_or(arg, "off", UINT64_MAX, 1, 1, 20, ret);
}

/* KiB, a multiple of 4, or "cached". */
static int parse_readahead(const char *arg, uint32_t *ret)
{
        uint64_t v;
        int r = parse_amount_or(arg, "cached", ENG_COMPACT_READ_CACHED, 4, 4, 10, &v);

        if (r == 0)
                *ret = (uint32_t)v;
        return r;
}

static int parse_theta(const char *arg, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(arg, &end);
        if (errno || end == arg || *end || !(v > 0.0 && v < 1.0))
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_dist(const char *arg, enum keydist_kind *ret)
{
        *ret = keydist_parse(arg);
        return *ret == KEYDIST_INVALID ? -EINVAL : 0;
}

/* The engines --engine names, with what to install for each that
 * scree-bench can be built without. */
static const struct engine_kind {
        const char *name, *library, *package;
        int (*make)(const struct bench_opts *o, struct bench_engine **ret);
} engine_kinds[] = {
        { "scree", NULL, NULL, NULL },
        { "rocksdb", "RocksDB", "librocksdb-dev", bench_rocksdb_new },
        { "leveldb", "LevelDB", "libleveldb-dev", bench_leveldb_new },
        { "lmdb", "LMDB", "liblmdb-dev", bench_lmdb_new },
        { "api", NULL, NULL, bench_api_new },
};

static int parse_engine(struct cli *c, const char *arg)
{
        for (size_t i = 0; i < ARRAY_SIZE(engine_kinds); i++) {
                if (strcmp(arg, engine_kinds[i].name) == 0) {
                        c->engine = &engine_kinds[i];
                        return 0;
                }
        }
        return -EINVAL;
}

/* The flags that take no value, and those that pick among words. */
static int parse_word_opt(struct cli *c, int ch, const char *arg)
{
        struct bench_opts *o = &c->o;
        int v = 0, r;

        switch (ch) {
        case 'y':
                r = parse_choice(arg, "batch", "periodic", &v);
                o->sync = v ? ENG_WAL_SYNC_PERIODIC : ENG_WAL_SYNC_BATCH;
                return r;
        case 't':
                r = parse_choice(arg, "hashed", "ordered", &v);
                o->k.table = v ? ENG_TABLE_ORDERED : ENG_TABLE_DEFAULT;
                return r;
        case 'c':
                r = parse_choice(arg, "off", "on", &v);
                o->compaction = v;
                return r;
        case 'w':
                r = parse_choice(arg, "off", "on", &v);
                o->row_cache = v;
                return r;
        case 'F':
                r = parse_choice(arg, "off", "on", &v);
                o->prefault = v;
                return r;
        case 'E': return parse_engine(c, arg);
        case 'D': return parse_dist(arg, &o->k.dist);
        case 'Z': return parse_theta(arg, &o->k.theta);
        case 'd': o->dir = arg; return 0;
        case 'e': o->use_existing = true; return 0;
        case 'G': o->stats = true; return 0;
        case 'j': c->fmt = BENCH_FORMAT_JSON; return 0;
        case 'V': c->fmt = BENCH_FORMAT_CSV; return 0;
        case 'X': c->timeseries = arg; return 0;
        default: return -EINVAL;
        }
}

static int parse_opt(struct cli *c, int ch, const char *arg)
{
        struct bench_opts *o = &c->o;
        uint32_t ms = 0;
        int r;

        switch (ch) {
        case 'b': return parse_list(c, arg);
        case 'n': return perf_parse_u64(arg, 1, UINT32_MAX, &o->k.num);
        case 'r': return perf_parse_u64(arg, 1, UINT64_MAX / UINT32_MAX, &o->reads);
        case 'k': return parse_u32(arg, 4, BENCH_MAX_KEY_BYTES, &o->k.key_size);
        case 'v': return parse_u32(arg, 0, ENG_MAX_VALUE_BYTES, &o->k.value_size);
        case 's': return parse_u32(arg, 1, ENG_MAX_SHARDS, &o->k.workers);
        case 'i': return parse_u32(arg, 1, 4096, &o->inflight);
        case 'N': return parse_u32(arg, 0, 1u << 20, &o->k.seek_nexts);
        case 'L': return parse_u32(arg, 1, 1u << 20, &o->k.scan_max);
        case 'T': return parse_u32(arg, 1, 86400, &o->max_seconds);
        case 'u': return parse_u32(arg, 1, 86400, &o->duration);
        case 'R': return perf_parse_u64(arg, 1, UINT64_C(1) << 32, &o->rate);
        case 'W': return perf_parse_u64(arg, 1, UINT64_C(1) << 32, &o->write_rate);
        case 'M': return parse_mib(arg, &o->memtable_budget);
        case 'C': return parse_mib(arg, &o->cache_bytes);
        case 'A': return parse_readahead(arg, &o->compaction_readahead);
        case 'O': return parse_compaction_rate(arg, &o->compaction_rate);
        case 'S': return perf_parse_u64(arg, 1, UINT64_MAX, &o->k.seed);
        case 'I': return perf_parse_u64(arg, 0, 1000000, &c->idle_poll_us);
        case 'H': return parse_u32(arg, 1, ENG_MAX_SHARDS, &o->api_shards);
        case 'P':
                r = parse_u32(arg, 1, 60000, &ms);
                o->sync_period_ns = (uint64_t)ms * NS_PER_MS;
                return r;
        default: return parse_word_opt(c, ch, arg);
        }
}

static void defaults(struct cli *c)
{
        memset(c, 0, sizeof(*c));
        c->idle_poll_us = 50;
        c->engine = &engine_kinds[0];
        c->o = (struct bench_opts){
                .k = { .num = DEFAULT_NUM, .key_size = 16, .value_size = 100, .workers = 1,
                       .table = ENG_TABLE_ORDERED, .seek_nexts = 10, .scan_max = 100,
                       .dist = KEYDIST_INVALID, .theta = KEYDIST_DEFAULT_THETA, .seed = 301 },
                .inflight = 1, .max_seconds = DEFAULT_MAX_SECONDS, .sync = ENG_WAL_SYNC_PERIODIC,
                .dir = "/var/tmp/scree-bench", .compaction = true, .prefault = true,
                .memtable_budget = ENG_SHARD_DEFAULT_BUDGET, .cache_bytes = (size_t)64 << 20,
        };
        for (unsigned i = 0; i < BENCH_DEFAULT_WORKLOADS; i++)
                c->w[c->n_w++] = (enum bench_workload)i;
}

/* Keys must stay distinct (and missing keys fit between them). */
static int check_opts(struct cli *c)
{
        struct bench_opts *o = &c->o;

        if (!o->reads)
                o->reads = o->k.num;
        if (o->k.key_size < 8 && o->k.num >= UINT64_C(1) << (8 * o->k.key_size - 1)) {
                fprintf(stderr, "scree-bench: %u-byte keys cannot tell %" PRIu64 " keys apart\n",
                        o->k.key_size, o->k.num);
                return -EINVAL;
        }
        o->k.loaded = o->use_existing;
        o->timeseries = c->timeseries != NULL;
        return 0;
}

static const struct option longopts[] = {
        { "benchmarks", required_argument, NULL, 'b' },   { "num", required_argument, NULL, 'n' },
        { "reads", required_argument, NULL, 'r' },        { "key-size", required_argument, NULL, 'k' },
        { "value-size", required_argument, NULL, 'v' },   { "shards", required_argument, NULL, 's' },
        { "sync", required_argument, NULL, 'y' },         { "sync-period-ms", required_argument, NULL, 'P' },
        { "inflight", required_argument, NULL, 'i' },     { "seek-nexts", required_argument, NULL, 'N' },
        { "table", required_argument, NULL, 't' },        { "dir", required_argument, NULL, 'd' },
        { "use-existing-db", no_argument, NULL, 'e' },    { "memtable-budget", required_argument, NULL, 'M' },
        { "cache-size", required_argument, NULL, 'C' },   { "compaction", required_argument, NULL, 'c' },
        { "max-seconds", required_argument, NULL, 'T' },  { "seed", required_argument, NULL, 'S' },
        { "json", no_argument, NULL, 'j' },               { "help", no_argument, NULL, 'h' },
        { "idle-poll-us", required_argument, NULL, 'I' }, { "engine", required_argument, NULL, 'E' },
        { "distribution", required_argument, NULL, 'D' }, { "zipf-theta", required_argument, NULL, 'Z' },
        { "scan-length", required_argument, NULL, 'L' },  { "duration", required_argument, NULL, 'u' },
        { "rate", required_argument, NULL, 'R' },         { "write-rate", required_argument, NULL, 'W' },
        { "csv", no_argument, NULL, 'V' },                { "timeseries", required_argument, NULL, 'X' },
        { "row-cache", required_argument, NULL, 'w' },    { "stats", no_argument, NULL, 'G' },
        { "prefault", required_argument, NULL, 'F' },     { "api-shards", required_argument, NULL, 'H' },
        { "compaction-readahead", required_argument, NULL, 'A' },
        { "compaction-rate", required_argument, NULL, 'O' },
        { NULL, 0, NULL, 0 },
};

static int parse_args(int argc, char **argv, struct cli *c)
{
        int ch, idx = -1;

        defaults(c);
        while ((ch = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
                if (ch == 'h') {
                        usage(stdout);
                        exit(0);
                }
                if (ch == '?')
                        return -EINVAL;
                if (parse_opt(c, ch, optarg) < 0) {
                        fprintf(stderr, "scree-bench: bad value for --%s: %s\n",
                                idx >= 0 ? longopts[idx].name : "?", optarg ? optarg : "");
                        return -EINVAL;
                }
                idx = -1;
        }
        if (optind != argc) {
                fprintf(stderr, "scree-bench: unexpected argument: %s\n", argv[optind]);
                return -EINVAL;
        }
        return check_opts(c);
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

/* User + system CPU seconds of the whole process so far. */
static double cpu_secs(void)
{
        struct rusage ru;

        if (getrusage(RUSAGE_SELF, &ru) < 0)
                return 0;
        return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static uint64_t progress_ops(const struct bench_engine *e)
{
        uint64_t sum = 0;

        for (unsigned i = 0; i < e->n; i++)
                sum += atomic_load_explicit(&e->res[i]->progress, memory_order_relaxed);
        return sum;
}

/* Every worker's op target for w (UINT64_MAX by duration). */
static uint64_t total_target(const struct bench_engine *e, enum bench_workload w)
{
        uint64_t sum = 0;

        for (unsigned i = 0; i < e->n; i++) {
                struct bench_pace p;

                bench_pace_init(&p, e->o, w, bench_gen_keys(e->gen[i]), 0);
                if (p.target == UINT64_MAX)
                        return UINT64_MAX;
                sum += p.target;
        }
        return sum;
}

/* Polls until every worker is done, showing progress once a second. */
static void await_run(const struct cli *c, struct bench_engine *e, enum bench_workload w, uint64_t t0)
{
        uint64_t target = total_target(e, w), last_ns = t0, last_ops = 0;
        double limit = c->o.duration ? c->o.duration : c->o.max_seconds;
        struct timespec ts = time_ns_to_timespec(POLL_NS);
        bool shown = false;

        while (!e->ops->run_is_done(e)) {
                uint64_t now = time_now_ns(), ops;

                nanosleep(&ts, NULL);
                if (!c->progress || now - last_ns < NS_PER_SEC)
                        continue;
                ops = progress_ops(e);
                bench_progress_show(stderr, w, ops, target,
                                    (double)(ops - last_ops) * 1e9 / (double)(now - last_ns),
                                    (double)(now - t0) / 1e9, limit);
                shown = true;
                last_ns = now;
                last_ops = ops;
        }
        if (shown)
                bench_progress_clear(stderr);
}

static int run_workload(struct cli *c, struct bench_engine *e, enum bench_workload w,
                        const struct bench_dists *d)
{
        struct bench_summary *s = calloc(1, sizeof(*s));
        uint64_t io0 = proc_write_bytes(), t0 = time_now_ns();
        double cpu0 = cpu_secs();
        int r;

        if (!s)
                return -ENOMEM;
        r = e->ops->run_start(e, w, d, t0);
        if (r == 0) {
                await_run(c, e, w, t0);
                r = e->ops->run_wait(e);
        }
        if (r == 0)
                r = bench_summarize(e, w, s);
        if (r == 0) {
                s->io_bytes = proc_write_bytes() - io0;
                s->cpu_secs = cpu_secs() - cpu0;
                s->space_bytes = e->ops->space_bytes(e);
                bench_report(stdout, c->fmt, e, s);
                if (c->ts)
                        bench_timeseries_write(c->ts, s);
        }
        bench_summary_fini(s);
        free(s);
        return r;
}

static int dists_init(const struct cli *c, const struct bench_engine *e, struct bench_dists *d)
{
        uint64_t n = UINT64_MAX;
        bool mixes = false;

        for (unsigned i = 0; i < e->n; i++)
                if (bench_gen_keys(e->gen[i]) < n)
                        n = bench_gen_keys(e->gen[i]);
        for (unsigned i = 0; i < c->n_w; i++)
                mixes |= bench_workload_mix(c->w[i]) != NULL;
        return bench_dists_init(d, &c->o.k, n, mixes);
}

/* Opens the engine, runs the workloads in order, closes. */
static int bench_all(struct cli *c, struct bench_engine *e)
{
        struct bench_dists d;
        int r = dists_init(c, e, &d), rc;

        if (r == 0)
                r = e->ops->open(e);
        if (r < 0) {
                fprintf(stderr, "scree-bench: opening %s in %s: %s\n", e->name, c->o.dir, scree_strerror(r));
                return r;
        }
        bench_report_header(stdout, c->fmt, e);
        for (unsigned i = 0; i < c->n_w && r == 0; i++)
                r = run_workload(c, e, c->w[i], &d);
        rc = e->ops->close(e);
        if (rc < 0)
                fprintf(stderr, "scree-bench: closing %s: %s\n", e->name, scree_strerror(rc));
        return r < 0 ? r : rc;
}

static int engine_new(const struct cli *c, struct bench_engine **ret)
{
        if (c->engine->make)
                return c->engine->make(&c->o, ret);
        return bench_scree_new(&c->o, c->idle_poll_us * NS_PER_US, ret);
}

int main(int argc, char **argv)
{
        struct bench_engine *e = NULL;
        struct cli c;
        int r;

        if (parse_args(argc, argv, &c) < 0) {
                usage(stderr);
                return 2;
        }
        c.progress = isatty(STDERR_FILENO);
        if (c.timeseries) {
                c.ts = fopen(c.timeseries, "w");
                if (!c.ts) {
                        fprintf(stderr, "scree-bench: %s: %s\n", c.timeseries, strerror(errno));
                        return 2;
                }
                bench_timeseries_header(c.ts);
        }
        r = engine_new(&c, &e);
        if (r == -ENOTSUP && c.engine->library)
                fprintf(stderr, "scree-bench: built without %s (meson -D%s=enabled, apt-get install %s)\n",
                        c.engine->library, c.engine->name, c.engine->package);
        else if (r < 0)
                fprintf(stderr, "scree-bench: starting %s: %s\n", c.engine->name, scree_strerror(r));
        else
                r = bench_all(&c, e);
        if (e)
                e->ops->free(e);
        if (c.ts && fclose(c.ts) != 0 && r == 0)
                r = -errno;
        return r == 0 ? 0 : 1;
}
