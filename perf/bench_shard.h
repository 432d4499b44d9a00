/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's per-shard driver: one shard of the engine (engine/shard.h)
 * on one shard thread's loop, and the db_bench-style workloads run against
 * it. The main thread (scree_bench.c) starts the shard threads, asks every
 * shard to open, run a workload, report and close through foreign-thread
 * requests (rx_smp_alien_submit), and waits for all of them between steps,
 * so every shard runs the same workload at the same time.
 *
 * Keys: key i (0 <= i < num) is the big-endian integer i * (2^64 / num),
 * cut or padded with '0' bytes to key_size -- db_bench's keys, with the
 * integer spread over the key space so that the ordered table's tablets
 * (split on the first key byte) and so the shards share the keys evenly;
 * key order is integer order. Each shard gets the keys it owns
 * (eng_tablet_of_key) and draws its operations only from them, so no
 * operation ever crosses to another shard.
 *
 * Every workload keeps up to `inflight` operations in flight; one that
 * completes at once (a get answered from memory or cached blocks, a write
 * in periodic mode) frees its slot for the next at once. The driver yields
 * to the loop every few dozen operations so flushes and log syncs go on.
 * Every workload is bounded by its op count and by max_seconds.
 *
 * Shard-local: each struct bench_shard lives on its shard's thread once
 * opened; the main thread reads its results only after its request
 * completed.
 */
#ifndef SCREE_PERF_BENCH_SHARD_H
#define SCREE_PERF_BENCH_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/shard.h"
#include "perf/hist.h"
#include "reactor/smp.h"

enum bench_workload {
        BENCH_FILLSEQ,
        BENCH_FILLRANDOM,
        BENCH_OVERWRITE,
        BENCH_READRANDOM,
        BENCH_READMISSING,
        BENCH_SEEKRANDOM,
        BENCH_DELETERANDOM,
        BENCH_WORKLOAD_MAX,
        BENCH_WORKLOAD_INVALID = -1,
};

/* The workload's name as db_bench spells it. */
const char *bench_workload_name(enum bench_workload w);

/* The workload named s, or BENCH_WORKLOAD_INVALID. */
enum bench_workload bench_workload_parse(const char *s);

static inline bool bench_workload_writes(enum bench_workload w)
{
        return w <= BENCH_OVERWRITE || w == BENCH_DELETERANDOM;
}

#define BENCH_MAX_KEY_BYTES 1024u

struct bench_opts {
        uint64_t num;                   /* keys; at most UINT32_MAX */
        uint64_t reads;                 /* ops of the read workloads; default num */
        uint32_t key_size, value_size;  /* key_size 4..BENCH_MAX_KEY_BYTES, num < 2^(8*key_size-1) */
        uint32_t shards;
        uint32_t inflight;              /* ops in flight per shard */
        uint32_t seek_nexts;            /* entries a seek reads after the first */
        uint32_t max_seconds;           /* per workload */
        enum eng_wal_sync sync;
        uint64_t sync_period_ns;
        enum eng_table table;
        const char *dir;
        size_t memtable_budget, cache_bytes;
        bool compaction;
        bool use_existing;              /* keep what --dir holds */
        uint64_t seed;
};

/* What one shard did in one workload. */
struct bench_result {
        uint64_t ops, found, entries;   /* entries: items scans gave */
        uint64_t start_ns, end_ns;
        uint64_t user_bytes, disk_bytes;        /* engine counters' growth */
        uint64_t stalls, flushes, sst_reads;    /* the same */
        struct hist lat;                /* per op, ns */
        int err;
};

struct bench_shard;

/* Allocates shard id's driver with the keys it owns (computed here, on the
 * calling thread). NULL on ENOMEM. Any thread. Free with bench_shard_free. */
struct bench_shard *bench_shard_new(const struct bench_opts *o, unsigned id);

/* Accepts NULL. REQUIRES: closed (or never opened). */
void bench_shard_free(struct bench_shard *b);

/* How many keys the shard owns. */
uint64_t bench_shard_keys(const struct bench_shard *b);

enum bench_step {
        BENCH_STEP_OPEN,                /* make (or empty) the directory, open the shard */
        BENCH_STEP_RUN,                 /* run one workload */
        BENCH_STEP_CLOSE,
};

/*
 * Starts a step on the shard's thread and returns at once: 0, or the error
 * of rx_smp_alien_submit (the step won't run). w is the workload of a run.
 * bench_shard_wait() then waits for the step and returns its result: 0, or
 * the engine's error (-errno, -SCREE_*). Starting every shard before
 * waiting for any runs them together. Any non-shard thread; one step at a
 * time per shard.
 */
int bench_shard_start(struct bench_shard *b, struct rx_smp *smp, enum bench_step step,
                      enum bench_workload w);
int bench_shard_wait(struct bench_shard *b);

/* The last run's result. Borrowed; valid until the next run. */
const struct bench_result *bench_shard_result(const struct bench_shard *b);

/* Builds key i into dst (o->key_size bytes). Pure; any thread. */
void bench_key(const struct bench_opts *o, uint64_t i, uint8_t *dst);

#endif
