/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's RocksDB engine (--engine rocksdb): the same workloads and
 * the same measurement as the scree engine, through RocksDB's C API
 * (rocksdb/c.h), so the two can be put side by side in one binary. One
 * thread per worker ("shard"), each with its own key subset
 * (bench_gen.h) and one blocking op at a time, all on one shared
 * database in --dir/rocksdb (as db_bench's threads share one). The
 * settings chosen to match scree's are in docs/benchmarks.md.
 *
 * Built only when meson finds RocksDB (option rocksdb, a feature);
 * otherwise bench_rocksdb_new fails with -ENOTSUP.
 */
#ifndef SCREE_PERF_BENCH_ROCKSDB_H
#define SCREE_PERF_BENCH_ROCKSDB_H

#include <errno.h>

#include "perf/bench_run.h"

#ifdef SCREE_BENCH_ROCKSDB
/* Makes the RocksDB engine for o (borrowed for its life). Returns 0 and
 * *ret, or -ENOMEM. Main thread. */
int bench_rocksdb_new(const struct bench_opts *o, struct bench_engine **ret);
#else
static inline int bench_rocksdb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        (void)o;
        (void)ret;
        return -ENOTSUP;
}
#endif

#endif
