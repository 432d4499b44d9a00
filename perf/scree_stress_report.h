/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress's results: the workers' figures merged, and printed as a
 * table with a one-line summary, as CSV, or as one JSON object; the
 * per-second time series as CSV. Main thread, after the workers joined.
 */
#ifndef SCREE_PERF_SCREE_STRESS_REPORT_H
#define SCREE_PERF_SCREE_STRESS_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "perf/scree_stress_worker.h"

enum stress_format {
        STRESS_FORMAT_TEXT,
        STRESS_FORMAT_CSV,
        STRESS_FORMAT_JSON,
};

/* Heap-allocate it: it holds STRESS_OPS_MAX + 1 histograms. */
struct stress_summary {
        struct stress_op_stats op[STRESS_OPS_MAX];
        struct stress_op_stats all;
        bool shown[STRESS_OPS_MAX];     /* kinds the workload issues */
        uint64_t requests, late;
        double secs;                    /* start to the last reply */
        bool loaded;
        uint64_t load_keys, load_errors;
        double load_secs;
        const char *first_error;        /* the first error reply's text, or NULL */
        bool interrupted;               /* stopped early by SIGINT */
};

/* The name of operation kind op under cfg ("SET", "read", ...). */
const char *stress_op_name(const struct stress_cfg *cfg, int op);

/*
 * Merges the n workers' results (borrowed) into *s. REQUIRES: s zeroed
 * apart from the load_* fields, secs and interrupted.
 */
void stress_summary_merge(struct stress_summary *s, const struct stress_cfg *cfg,
                          const struct stress_worker *w, unsigned n);

/* Prints s to f in format fmt. */
void stress_report_print(FILE *f, enum stress_format fmt, const struct stress_cfg *cfg,
                         const struct stress_summary *s);

/*
 * Writes the per-second series of the n workers to path as CSV
 * (second,ops,errors,p50_ms,p99_ms). Returns 0 or -errno.
 */
int stress_report_timeseries(const char *path, const struct stress_worker *w, unsigned n);

#endif
