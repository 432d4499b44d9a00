/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Multi-threaded queue scenarios shared by the Criterion suites and by
 * queue_stress, the plain driver that runs them under ThreadSanitizer
 * (Criterion's forked workers cannot run under TSan). Each scenario runs
 * to completion, joins every thread it started, and reports counts; the
 * caller decides what is a failure.
 */
#ifndef SCREE_TESTS_REACTOR_SCENARIOS_H
#define SCREE_TESTS_REACTOR_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

#define SCENARIO_MAX_SHARDS 4

/* One producer thread pushes n numbered items through a ring of the given
 * capacity. Returns the number of items that arrived out of order. */
uint64_t scenario_spsc_transfer(uint64_t n, uint32_t capacity);

/* `producers` threads push `per` numbered nodes each into one MPSC inbox.
 * Returns the number of nodes missing or out of per-producer order. */
uint64_t scenario_mpsc_transfer(unsigned producers, uint32_t per);

struct seq_params {
        unsigned n_shards;              /* <= SCENARIO_MAX_SHARDS */
        uint64_t per_pair;              /* messages each sending pair carries */
        unsigned window;                /* in flight per pair */
        bool all_pairs;                 /* every shard sends to every shard, itself too;
                                         * otherwise shard 0 sends to shard 1 only */
        uint32_t queue_capacity, batch; /* 0 = defaults */
        uint64_t idle_poll_ns;          /* 0 = default */
};

struct seq_result {
        int rc;                                 /* rx_smp_new result */
        uint64_t bad_order;                     /* messages seen out of sequence */
        uint64_t received[SCENARIO_MAX_SHARDS][SCENARIO_MAX_SHARDS];   /* [from][to] */
        uint64_t replies[SCENARIO_MAX_SHARDS][SCENARIO_MAX_SHARDS];    /* [from][to] */
        uint64_t ring_full;                     /* over all shards */
};

/* Sequence-numbered messages between shards; checks FIFO per pair. */
void scenario_smp_seq(const struct seq_params *p, struct seq_result *r);

struct alien_result {
        int rc;
        uint64_t total;
        uint64_t bad_runs;              /* requests not run exactly once */
        uint64_t bad_completions;       /* not completed exactly once */
        uint64_t wrong_results;
};

/* `threads` foreign threads submit `per` requests each to `n_shards` shards,
 * keeping a window in flight and waiting on the oldest. */
void scenario_alien_flood(unsigned n_shards, unsigned threads, uint64_t per, struct alien_result *r);

#endif
