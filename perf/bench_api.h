/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's library engine (--engine api): the same workloads through
 * libscree's public API (include/scree/scree.h) from host threads, one per
 * worker, against a database of --shards shards in --dir/api -- what an
 * embedding program gets, to set against the shards driven directly
 * (--engine scree). With --inflight 1 each thread makes blocking calls
 * one at a time; with more, each keeps that many asynchronous calls in
 * flight through its own completion queue.
 */
#ifndef SCREE_PERF_BENCH_API_H
#define SCREE_PERF_BENCH_API_H

#include "perf/bench_run.h"

/* Makes the library engine for o (borrowed for its life). Returns 0 and
 * *ret, or -ENOMEM. Main thread. */
int bench_api_new(const struct bench_opts *o, struct bench_engine **ret);

#endif
