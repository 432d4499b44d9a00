/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's workload, shared by the writer (which issues it) and the
 * driver (which must know every write the writer may have issued): op i of
 * round r is a pure function of (seed, r, i), so either side computes any
 * op without replaying the ones before it. Each op carries a version tag
 * unique over the whole run, (round << 32) | (i + 1); a put's value is a
 * function of (key, version), so a value read back names the write that
 * produced it and is checked byte for byte.
 *
 * Keys: ids 0..CRASH_N_KEYS-1; the first three quarters live in the hashed
 * default table, the rest in the ordered table (first byte spread over all
 * 256 values, so every ordered tablet gets some).
 *
 * Pure; no I/O. For the crash test only (tests/crash/).
 */
#ifndef SCREE_TESTS_CRASH_OPS_H
#define SCREE_TESTS_CRASH_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/tablet.h"

#define CRASH_N_KEYS 2048u
#define CRASH_KEY_MAX 16u
/* Big enough for the largest value crash_value_len picks. */
#define CRASH_VALUE_MAX (16u << 10)
/* Expiry of a TTL put: this far after the write (far beyond any run). */
#define CRASH_TTL_MS (24 * UINT64_C(3600) * 1000)

enum crash_op_kind {
        CRASH_PUT,              /* one key */
        CRASH_PUT_TTL,          /* one key, expiry CRASH_TTL_MS ahead */
        CRASH_PUT_EXPIRED,      /* one key, expiry in the past: reads as absent */
        CRASH_DEL,              /* one key */
        CRASH_BATCH,            /* two distinct keys put in one write, same version */
        CRASH_OP_KIND_MAX,
};

struct crash_op {
        enum crash_op_kind kind;
        uint32_t n_keys;        /* 1, or 2 for a batch */
        uint32_t key[2];
        uint64_t ver;
};

/* A key's state: absent, or present holding the value of version ver. */
struct crash_state {
        bool present;
        uint64_t ver;
};

static inline uint64_t crash_ver(uint32_t round, uint64_t index)
{
        return ((uint64_t)round << 32) | (index + 1);
}

static inline uint32_t crash_ver_round(uint64_t ver)
{
        return (uint32_t)(ver >> 32);
}

static inline uint64_t crash_ver_index(uint64_t ver)
{
        return (ver & UINT32_MAX) - 1;
}

/* A 64-bit mixing function (splitmix64's finalizer): every choice of the
 * workload and of the driver's kill moments comes from it. */
uint64_t crash_mix(uint64_t x);

/* Op index of round (>= 1) of the run with seed. */
struct crash_op crash_op_gen(uint64_t seed, uint32_t round, uint64_t index);

/* The state key is left in by op (which must touch it). */
struct crash_state crash_op_result(const struct crash_op *op);

/* True if op writes key. */
bool crash_op_touches(const struct crash_op *op, uint32_t key);

/* One letter per kind for the log lines: P T X D B. */
char crash_op_letter(enum crash_op_kind kind);

/* Key id's table and user key (into buf, CRASH_KEY_MAX bytes); returns its length. */
enum eng_table crash_key_table(uint32_t key);
uint32_t crash_key_bytes(uint32_t key, uint8_t *buf);

/* Length of the value key holds at version ver. */
uint32_t crash_value_len(uint32_t key, uint64_t ver);

/* Writes that value into buf (CRASH_VALUE_MAX bytes); returns its length. */
uint32_t crash_value_make(uint32_t key, uint64_t ver, uint8_t *buf);

/*
 * Checks a value read back for key: it must be exactly the value of some
 * put of key in this run (found through the version in its header), and its
 * expiry must be that put's (0, or a TTL put's: after now_ms). Returns 0
 * and *ret_ver, or -1 with a reason (static string) in *ret_why.
 */
int crash_value_check(uint64_t seed, uint32_t key, const uint8_t *v, uint32_t len,
                      uint64_t expiry_ms, uint64_t now_ms, uint64_t *ret_ver,
                      const char **ret_why);

#endif
