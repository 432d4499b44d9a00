/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's LevelDB engine (--engine leveldb): the same workloads and
 * the same measurement as the scree and RocksDB engines, through LevelDB's
 * C API (leveldb/c.h). One thread per worker ("shard"), each with its own
 * key subset (bench_gen.h) and one blocking op at a time, all on one
 * shared database in --dir/leveldb (bench_threads.h). The settings chosen
 * to match scree's and RocksDB's are in docs/benchmarks.md.
 *
 * Built only when meson finds LevelDB (option leveldb, a feature);
 * otherwise bench_leveldb_new fails with -ENOTSUP.
 */
#ifndef SCREE_PERF_BENCH_LEVELDB_H
#define SCREE_PERF_BENCH_LEVELDB_H

#include <errno.h>

#include "perf/bench_run.h"

#ifdef SCREE_BENCH_LEVELDB
/* Makes the LevelDB engine for o (borrowed for its life). Returns 0 and
 * *ret, or -ENOMEM. Main thread. */
int bench_leveldb_new(const struct bench_opts *o, struct bench_engine **ret);
#else
static inline int bench_leveldb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        (void)o;
        (void)ret;
        return -ENOTSUP;
}
#endif

#endif
