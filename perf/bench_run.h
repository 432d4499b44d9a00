/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What scree-bench's engines share: the run's settings, what a worker
 * measures (bench_result), the pacing of a run (op count, time limit,
 * open-loop send times), and the interface every engine under test
 * implements (struct bench_engine: scree's shards in bench_shard.c,
 * RocksDB's threads in bench_rocksdb.c). The main thread (scree_bench.c)
 * opens an engine, runs the workloads one after another on every worker
 * at once, polls for the end (showing progress), and reports.
 *
 * A worker is a shard or a thread with its own keys (bench_gen.h) and its
 * own bench_result; it writes its result and the main thread reads it
 * only after the run ended (run_is_done true), except `progress`, an
 * atomic counter the main thread may read at any time.
 */
#ifndef SCREE_PERF_BENCH_RUN_H
#define SCREE_PERF_BENCH_RUN_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/time.h"
#include "engine/wal.h"
#include "perf/bench_gen.h"
#include "perf/hist.h"

struct bench_opts {
        struct bench_keys_opts k;       /* k.workers: shards / threads */
        uint64_t reads;                 /* ops of the read workloads and mixes; default num */
        uint32_t inflight;              /* ops in flight per shard (scree) */
        uint32_t max_seconds;           /* per workload, a bound */
        uint32_t duration;              /* seconds per workload instead of a count; 0 = count */
        uint64_t rate;                  /* open loop: ops/s over all workers; 0 = closed loop */
        uint64_t write_rate;            /* readwhilewriting's writers, ops/s in all; 0 = flat out */
        enum eng_wal_sync sync;
        uint64_t sync_period_ns;
        const char *dir;
        size_t memtable_budget, cache_bytes;
        bool compaction;
        /* scree: bytes a compaction reads of an input at once, past the
         * cache; 0 = the engine's default; ENG_COMPACT_READ_CACHED = block
         * by block through the cache */
        uint32_t compaction_readahead;
        uint64_t compaction_rate;       /* scree: bytes/s a shard; 0 = default; UINT64_MAX = off */
        bool row_cache;                 /* scree: point lookups cache rows too */
        bool prefault;                  /* scree: memtable memory faulted in before the run */
        bool use_existing;              /* keep what --dir holds */
        bool timeseries;                /* keep per-second histograms */
        bool stats;                     /* scree: print engine counters per workload */
        uint32_t api_shards;            /* api: the database's shards; 0 = k.workers */
};

/* What one worker did in one workload. */
struct bench_result {
        uint64_t ops, found, entries;   /* entries: items scans gave */
        uint64_t bg_ops;                /* readwhilewriting's writes (not in ops) */
        uint64_t start_ns, end_ns;
        uint64_t user_bytes, disk_bytes;        /* the engine's counters' growth, if it has them */
        uint64_t stalls, flushes, sst_reads;    /* the same */
        uint64_t compaction_ns;         /* the same: time a compaction ran */
        struct hist lat;                /* per op, ns, from its intended start */
        struct hist by_cls[BENCH_OPC_MAX];
        struct hist *sec;               /* timeseries: second s since t0 in sec[s] */
        size_t n_sec, cap_sec;
        uint64_t t0_ns;
        _Atomic uint64_t progress;      /* ops so far; any thread may read */
        int err;
};

/* Empties r for a run starting at t0_ns (keeps the series' memory). */
void bench_result_begin(struct bench_result *r, uint64_t t0_ns);

/* Records one op of class cls that was due at start_ns and ended at end_ns;
 * series: also into its second. Returns 0 or -ENOMEM (series growth). */
int bench_result_add(struct bench_result *r, enum bench_opc cls, uint64_t start_ns,
                     uint64_t end_ns, bool series);

/* Records err as the run's error if it is the first; logs it. */
void bench_result_fail(struct bench_result *r, unsigned worker, enum bench_workload w, int err);

/* Frees the series. Accepts NULL. */
void bench_result_fini(struct bench_result *r);

/*
 * readwhilewriting's paced writer (--write-rate) issues the writes that are
 * due in a burst, and when none is due waits at least this long: a write
 * load arrives in batches, as a server's shard reads them from its
 * sockets. Pacing each write to its due time kept a vCPU spinning (half a
 * core a shard at 100k writes/s), which on a VM slows the disk the readers
 * wait for (docs/PERFORMANCE.md). The writes' latency is not measured.
 */
#define BENCH_BG_TICK_NS (1 * NS_PER_MS)

/* When a paced writer whose next write is due at due (> now) wakes. */
static inline uint64_t bench_bg_wake(uint64_t due, uint64_t now)
{
        return due > now + BENCH_BG_TICK_NS ? due : now + BENCH_BG_TICK_NS;
}

/* A run's bounds for one worker. */
struct bench_pace {
        uint64_t target;                /* ops; UINT64_MAX with a duration */
        uint64_t t0_ns, deadline_ns;
        uint64_t interval_ns;           /* open loop: between ops; 0 = closed loop */
        uint64_t bg_interval_ns;        /* readwhilewriting's writer; 0 = flat out */
};

/* The pace of workload w for a worker owning n_keys keys, from t0_ns. */
void bench_pace_init(struct bench_pace *p, const struct bench_opts *o, enum bench_workload w,
                     uint64_t n_keys, uint64_t t0_ns);

/* When op seq is due (open loop), or now (closed loop: now_ns). */
static inline uint64_t bench_pace_due(const struct bench_pace *p, uint64_t seq, uint64_t now_ns)
{
        return p->interval_ns ? p->t0_ns + seq * p->interval_ns : now_ns;
}

/* Makes the calling thread's timers and sleeps fire within ~1 us instead
 * of the kernel's default 50 us slack (open loop). Any thread. */
void bench_thread_precise_timers(void);

/* ---- engines ---- */

struct bench_engine;

struct bench_engine_ops {
        /* Prepares (or empties) the directory and opens the engine. Blocks. */
        int (*open)(struct bench_engine *e);
        /* Starts workload w on every worker at t0_ns and returns. */
        int (*run_start)(struct bench_engine *e, enum bench_workload w, const struct bench_dists *d,
                         uint64_t t0_ns);
        bool (*run_is_done)(struct bench_engine *e);
        /* Waits for the run's end; returns its first error or 0. */
        int (*run_wait)(struct bench_engine *e);
        int (*close)(struct bench_engine *e);
        /* Accepts a never-opened or closed engine. */
        void (*free)(struct bench_engine *e);
        /* Bytes its files take on disk now (space amplification). */
        uint64_t (*space_bytes)(struct bench_engine *e);
};

struct bench_engine {
        const struct bench_engine_ops *ops;
        const char *name;               /* "scree", "rocksdb" */
        const struct bench_opts *o;
        unsigned n;                     /* workers */
        struct bench_gen **gen;         /* [n] */
        struct bench_result **res;      /* [n] */
};

/* Makes e's n generators and results (e->o, e->n set). 0 or -ENOMEM; undo
 * with bench_engine_workers_free (also after a failure). Any thread. */
int bench_engine_workers_new(struct bench_engine *e);
void bench_engine_workers_free(struct bench_engine *e);

/* Makes dir (and its parent), emptying it of files unless use_existing. */
int bench_dir_prepare(const char *parent, const char *dir, bool use_existing);

/* Bytes allocated on disk for dir's files (recursive); 0 if unreadable. */
uint64_t bench_dir_bytes(const char *dir);

#endif
