/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What scree-bench's peer engines share (RocksDB, LevelDB, LMDB: libraries
 * with a blocking C API): a run starts one thread per worker ("shard"),
 * and for readwhilewriting one writer thread per worker with its own
 * generator over the same keys; each thread issues its ops one at a time
 * and records them exactly as the scree engine does (bench_run.h). The
 * main thread polls for the workers' end and joins the threads.
 *
 * An engine embeds a struct bench_threads (whose bench_engine it hands
 * out), puts bench_threads_run_start / _run_is_done / _run_wait in its
 * bench_engine_ops, and supplies the two calls that touch its library in
 * struct bench_threads_ops. Those are called on the worker threads, many
 * at once: the library must allow that (all three do, on one shared
 * database).
 */
#ifndef SCREE_PERF_BENCH_THREADS_H
#define SCREE_PERF_BENCH_THREADS_H

#include <stdbool.h>
#include <stdint.h>

#include "perf/bench_run.h"

struct bench_threads_ops {
        /*
         * Runs op d (borrowed) of worker id, adding what it found, the
         * entries a scan gave and the user bytes written to res. Returns 0
         * or a negative error (logged by the engine). Worker id's thread.
         */
        int (*op)(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                  struct bench_result *res);
        /*
         * readwhilewriting's background put d (borrowed) for worker id;
         * adds the user bytes written to *user_bytes. Returns 0 or a
         * negative error. Worker id's writer thread.
         */
        int (*write)(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                     uint64_t *user_bytes);
        /*
         * Optional, for an engine that answers asynchronously (libscree's
         * completion queues): with both set and --inflight above 1 in a
         * closed loop, a worker keeps o->inflight ops in flight. submit
         * queues op d (borrowed for the call) of worker id under slot
         * (0..inflight); reap waits for at least one answer, writes the
         * slots answered into slots (room for max) and adds what they
         * found, gave and wrote to res; it returns how many, or a
         * negative error. Worker id's thread.
         */
        int (*submit)(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                      uint32_t slot);
        int (*reap)(struct bench_engine *e, unsigned id, uint32_t *slots, uint32_t max,
                    struct bench_result *res);
};

struct bench_thread;

struct bench_threads {
        struct bench_engine e;          /* what the engine hands out */
        const struct bench_threads_ops *tops;
        enum bench_workload w;          /* the run in progress */
        struct bench_thread *wk;        /* [e.n] */
};

/*
 * Sets t up as engine `name` (static) with ops and tops (static) for o
 * (borrowed for t's life): o->k.workers workers, their generators and
 * results. Returns 0 or -ENOMEM; undo with bench_threads_fini, also after
 * a failure. Main thread.
 */
int bench_threads_init(struct bench_threads *t, const char *name, const struct bench_engine_ops *ops,
                       const struct bench_threads_ops *tops, const struct bench_opts *o);

/* Frees what bench_threads_init made. REQUIRES: no run in progress. */
void bench_threads_fini(struct bench_threads *t);

/* The bench_threads e belongs to. */
struct bench_threads *bench_threads_of(struct bench_engine *e);

/* The bench_engine_ops calls of a run, for the engine's ops table: start
 * every worker's thread (0, -ENOMEM, or pthread_create's error after
 * joining those that started), whether all ended, and join them (the
 * first worker's error or 0). Main thread. */
int bench_threads_run_start(struct bench_engine *e, enum bench_workload w, const struct bench_dists *d,
                            uint64_t t0_ns);
bool bench_threads_run_is_done(struct bench_engine *e);
int bench_threads_run_wait(struct bench_engine *e);

#endif
