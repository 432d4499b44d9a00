/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's scree engine: one shard of the engine (engine/shard.h) per
 * worker, each on its own pinned shard thread's loop (rx_smp), in
 * --dir/shard-N. The main thread asks every shard to open, run a workload
 * and close through foreign-thread requests (rx_smp_alien_submit) and
 * polls for their end, so every shard runs the same workload at the same
 * time. Each shard draws its operations only from the keys it owns
 * (bench_gen.h), so no operation crosses shards.
 *
 * Every workload keeps up to `inflight` operations in flight per shard;
 * one that completes at once (a get answered from memory or cached
 * blocks, a write in periodic mode) frees its slot for the next at once.
 * The driver yields to the loop every few dozen operations so flushes and
 * log syncs go on. Open loop (--rate): an op is issued no earlier than it
 * is due, and its latency counts from when it was due. readwhilewriting
 * adds one more slot per shard for its writer, whose writes are not
 * measured.
 *
 * Shard-local: each shard's driver state lives on its shard's thread once
 * opened; the main thread reads its results only after its request
 * completed.
 */
#ifndef SCREE_PERF_BENCH_SHARD_H
#define SCREE_PERF_BENCH_SHARD_H

#include <stdint.h>

#include "perf/bench_run.h"

/*
 * Makes the scree engine for o (o->k.workers shards; borrowed for the
 * engine's life), starting one pinned thread per shard whose loop spins
 * idle_poll_ns before it sleeps. Returns 0 and *ret, -ENOMEM, or the
 * reactor's error (logged with a hint). Main thread.
 */
int bench_scree_new(const struct bench_opts *o, uint64_t idle_poll_ns, struct bench_engine **ret);

#endif
