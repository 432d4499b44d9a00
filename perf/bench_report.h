/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's figures: one workload's results over every worker
 * (bench_summary), printed as a table row, a JSON object or CSV rows, its
 * per-second time series, and the live progress line. Main thread only.
 *
 * Figures: ops/s over the run's wall time (first worker's start to last
 * worker's end); MB/s counting (key + value) bytes per op, and per entry a
 * scan gave (db_bench's way); latency from an op's intended start (its
 * issue, or its due time in open loop) to its acknowledgement; write
 * amplification two ways, the engine's own bytes written ("wamp"; the
 * kernel's figure for engines without such a counter) and the kernel's
 * /proc/self/io write_bytes ("io_wamp"), each over the user bytes the
 * workload wrote; space amplification, the engine's files' allocated bytes
 * at the end over the live user bytes (live keys x (key + value)); CPU
 * seconds, the process's user + system time during the workload.
 */
#ifndef SCREE_PERF_BENCH_REPORT_H
#define SCREE_PERF_BENCH_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "perf/bench_run.h"

enum bench_format {
        BENCH_FORMAT_TABLE,
        BENCH_FORMAT_JSON,
        BENCH_FORMAT_CSV,
};

/* ~250 KiB: keep it off the stack. */
struct bench_summary {
        enum bench_workload w;
        uint64_t ops, found, entries, bg_ops;
        uint64_t user_bytes, disk_bytes, io_bytes;
        uint64_t stalls, flushes, sst_reads;
        uint64_t compaction_ns;         /* summed over the workers */
        uint64_t live_bytes, space_bytes;
        double secs, cpu_secs;
        struct hist lat, by_cls[BENCH_OPC_MAX];
        struct hist *sec;               /* the merged series, n_sec seconds */
        size_t n_sec;
        int err;
};

/* Merges e's workers' results of workload w into s (zeroed first). The
 * caller adds io_bytes, cpu_secs and space_bytes. 0 or -ENOMEM (series). */
int bench_summarize(const struct bench_engine *e, enum bench_workload w, struct bench_summary *s);

/* Frees the merged series. */
void bench_summary_fini(struct bench_summary *s);

/* The run's settings, as a '#' comment (table) or nothing (json; csv
 * prints its column names). */
void bench_report_header(FILE *f, enum bench_format fmt, const struct bench_engine *e);

/* One workload's figures. */
void bench_report(FILE *f, enum bench_format fmt, const struct bench_engine *e,
                  const struct bench_summary *s);

/* The series' column names; then s's per-second series appended to f as
 * CSV (workload,second,ops,ops_per_sec,p50_us,p99_us). */
void bench_timeseries_header(FILE *f);
void bench_timeseries_write(FILE *f, const struct bench_summary *s);

/* Rewrites the progress line on f (a terminal): ops so far, ops/s over
 * the last interval, elapsed seconds and an estimate of what remains. */
void bench_progress_show(FILE *f, enum bench_workload w, uint64_t ops, uint64_t target,
                         double ops_per_sec, double elapsed, double limit);

/* Clears the progress line. */
void bench_progress_clear(FILE *f);

#endif
