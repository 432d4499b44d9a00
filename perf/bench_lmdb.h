/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's LMDB engine (--engine lmdb): the same workloads and the
 * same measurement as the scree and RocksDB engines, through LMDB's C API
 * (lmdb.h). One thread per worker ("shard"), each with its own key subset
 * (bench_gen.h) and one blocking op at a time, all on one environment in
 * --dir/lmdb (bench_threads.h). Every write is a write transaction of its
 * own, so writers take turns on LMDB's writer lock: that is LMDB. The
 * settings are in docs/benchmarks.md.
 *
 * Built only when meson finds LMDB (option lmdb, a feature); otherwise
 * bench_lmdb_new fails with -ENOTSUP.
 */
#ifndef SCREE_PERF_BENCH_LMDB_H
#define SCREE_PERF_BENCH_LMDB_H

#include <errno.h>

#include "perf/bench_run.h"

#ifdef SCREE_BENCH_LMDB
/* Makes the LMDB engine for o (borrowed for its life). Returns 0 and
 * *ret, or -ENOMEM. Main thread. */
int bench_lmdb_new(const struct bench_opts *o, struct bench_engine **ret);
#else
static inline int bench_lmdb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        (void)o;
        (void)ret;
        return -ENOTSUP;
}
#endif

#endif
