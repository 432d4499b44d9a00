/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key choosers for the benchmarks (scree-bench, scree-stress): which of n
 * items the next operation touches, drawn from one of YCSB's request
 * distributions, and YCSB's core workload mixes (A-F).
 *
 *   uniform     every item equally likely.
 *   zipfian     item popularity follows Zipf's law with exponent theta
 *               (0 < theta < 1; YCSB's default 0.99), using Gray et al.'s
 *               generator ("Quickly generating billion-record synthetic
 *               databases", SIGMOD 1994). The rank is scrambled by a hash
 *               so the hot items are spread over the key space, as YCSB's
 *               ScrambledZipfianGenerator does; otherwise they would all
 *               be the smallest keys and land in one tablet.
 *   latest      zipfian over recency: the newest item most popular (YCSB
 *               workload D's skewed-latest). The caller says how many
 *               items exist now (they grow as the workload inserts).
 *   sequential  0, 1, 2, ... wrapping at n.
 *   gaussian    normal around n/2 with standard deviation n/8 (option
 *               "sigma" in items), redrawn until inside [0, n).
 *
 * A struct keydist is set up once (zipfian's setup costs O(n) pow() calls,
 * about 0.3 s for 10M items) and then copied to each thread: keydist_next
 * only reads it, except for the sequential cursor, which lives in the copy.
 * Each thread passes its own random state (perf/rng.h; never 0).
 */
#ifndef SCREE_PERF_KEYDIST_H
#define SCREE_PERF_KEYDIST_H

#include <stdbool.h>
#include <stdint.h>

enum keydist_kind {
        KEYDIST_UNIFORM,
        KEYDIST_ZIPFIAN,
        KEYDIST_LATEST,
        KEYDIST_SEQUENTIAL,
        KEYDIST_GAUSSIAN,
        KEYDIST_MAX,
        KEYDIST_INVALID = -1,
};

#define KEYDIST_DEFAULT_THETA 0.99

struct keydist {
        enum keydist_kind kind;
        uint64_t n;                     /* items; >= 1 */
        uint64_t cursor;                /* sequential: the next item */
        /* zipfian and latest: Gray et al.'s constants for n items */
        double theta, zetan, alpha, eta, half_pow_theta;
        double sigma;                   /* gaussian: standard deviation, items */
};

/* The distribution's name ("uniform", ...), or KEYDIST_INVALID for s. */
const char *keydist_name(enum keydist_kind k);
enum keydist_kind keydist_parse(const char *s);

/*
 * Sets d up for n items (n >= 1). theta is zipfian's and latest's exponent
 * (0 < theta < 1), ignored by the others. Returns 0, or -EINVAL for a bad
 * kind, n or theta. Any thread; pure apart from d.
 */
int keydist_init(struct keydist *d, enum keydist_kind k, uint64_t n, double theta);

/*
 * The next item, in [0, n) -- for latest, in [0, live) where live (1..n,
 * or more once inserts went past n) is how many items exist now; the
 * others ignore live. rng: the thread's xorshift64* state.
 */
uint64_t keydist_next(struct keydist *d, uint64_t *rng, uint64_t live);

/* A uniform double in [0, 1) from rng. */
double keydist_unit(uint64_t *rng);

/*
 * YCSB's core workloads: the share of each operation (summing to 100) and
 * the request distribution they name by default.
 *   A: 50 read / 50 update, zipfian      B: 95 read / 5 update, zipfian
 *   C: 100 read, zipfian                 D: 95 read / 5 insert, latest
 *   E: 95 scan / 5 insert, zipfian       F: 50 read / 50 read-modify-write, zipfian
 */
enum ycsb_op {
        YCSB_READ,
        YCSB_UPDATE,
        YCSB_INSERT,
        YCSB_SCAN,
        YCSB_RMW,
        YCSB_OP_MAX,
};

struct ycsb_mix {
        char name;                      /* 'A'..'F' */
        uint8_t pct[YCSB_OP_MAX];
        enum keydist_kind dist;
};

/* The mix for letter c ('A'..'F' or 'a'..'f'), or NULL. */
const struct ycsb_mix *ycsb_mix_get(char c);

/* Draws the next operation of mix m. */
enum ycsb_op ycsb_next_op(const struct ycsb_mix *m, uint64_t *rng);

/* "read", "update", "insert", "scan", "rmw". */
const char *ycsb_op_name(enum ycsb_op op);

#endif
