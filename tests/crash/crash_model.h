/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's checker: what a shard may hold after a kill -9, given
 * what the killed writer acknowledged.
 *
 * The model is an exact base state per key (what the last complete dump
 * showed, plus every write of the next round up to its last acknowledged
 * one) and a tail: the writes issued after that, which may or may not have
 * reached the log. Writes get their sequence numbers, and their place in
 * the log, in issue order, so what a recovery finds must be the base plus
 * a prefix of the tail, the same prefix for every key:
 *   - a key whose state no prefix explains lost an acknowledged write (or
 *     holds a state nobody wrote);
 *   - keys that each fit some prefix, but no common one, are a torn batch
 *     (one half of a two-key write survived) or a write lost before one
 *     that survived.
 * A dump that was cut short (the writer was killed while reading) narrows
 * the possible prefixes; the next one must agree with it, since recovery
 * may not change what is stored. A complete dump fixes the base.
 *
 * Sequence: dump_begin, observe per key, dump_end; when the writer then
 * writes: round_begin, ack per acknowledged write, round_end; repeat.
 * Violations return -1 with a message in the caller's buffer. Pure;
 * single-threaded. For the crash test only.
 */
#ifndef SCREE_TESTS_CRASH_MODEL_H
#define SCREE_TESTS_CRASH_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tests/crash/crash_ops.h"

struct crash_model;

/* All keys absent. n_keys <= CRASH_N_KEYS (tests use fewer). NULL on ENOMEM.
 * Free with crash_model_free (accepts NULL). */
struct crash_model *crash_model_new(uint64_t seed, uint32_t n_keys);
void crash_model_free(struct crash_model *m);

void crash_model_dump_begin(struct crash_model *m);

/* A key's state as read back. Returns 0, or -1 (why filled): the state fits
 * no prefix of the tail (an acknowledged write lost), a key out of range or
 * seen twice in one dump. */
int crash_model_observe(struct crash_model *m, uint32_t key, struct crash_state st, char *why,
                        size_t cap);

/* Ends a dump; complete means every key was observed. Returns 0, or -1
 * (why filled) when the observed keys fit no common prefix, or a dump
 * said complete lacks keys. On success a complete dump becomes the base. */
int crash_model_dump_end(struct crash_model *m, bool complete, char *why, size_t cap);

/* The writer of round (> every earlier round) starts writing.
 * REQUIRES: the last dump was complete (no tail). */
void crash_model_round_begin(struct crash_model *m, uint32_t round);

/* Op index of the round was acknowledged; line is how the writer described
 * it (letter and keys), checked against the op. Returns 0 or -1 (why). */
int crash_model_ack(struct crash_model *m, uint64_t index, char letter, uint32_t key0,
                    uint32_t key1, char *why, size_t cap);

/* The writer is dead; it issued fewer than max_issued ops (every op it
 * could have issued). Everything up to the last acknowledged op joins the
 * base; the rest becomes the tail. Returns 0, or -1 (why) if an
 * acknowledged op is at or past max_issued. */
int crash_model_round_end(struct crash_model *m, uint64_t max_issued, char *why, size_t cap);

struct crash_model_info {
        uint64_t acked;                 /* this round */
        uint64_t tail;                  /* ops that may or may not have survived */
        uint64_t prefix_min, prefix_max;        /* how many of them may have */
        /* as the last dump_end found them, before a complete dump cleared them */
        uint64_t dumped_tail, dumped_min, dumped_max;
        uint32_t present;               /* keys present in the base */
};

void crash_model_info(const struct crash_model *m, struct crash_model_info *ret);

#endif
