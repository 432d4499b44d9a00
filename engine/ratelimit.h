/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-partition rate limits (ScyllaDB's per_partition_rate_limit): how many
 * reads and how many writes each partition took in the current second, so
 * that a shard can refuse those past its table's limit.
 *
 * A fixed-size set-associative table of counters, allocated once: a
 * partition's token (a 64-bit hash naming its table and partition, never
 * 0) picks a set of ENG_RATELIMIT_WAYS slots and is kept whole in its
 * slot, so two partitions never share a count. A slot counts its
 * partition's reads and writes in one second (the caller's clock, whole
 * seconds: a fixed window; the first operation of a later second starts
 * both counts again from 0). A partition that has no slot takes one of
 * its set that is free or counted an earlier second, else the one with
 * the fewest operations this second, whose counts are forgotten. So:
 *   - a count is never above what its partition did this second: a
 *     partition at or under its limit is never refused;
 *   - a partition over its limit has every operation past the limit
 *     refused while it keeps its slot, which the busiest partitions of a
 *     set do: the many cold partitions that come and go take the slots
 *     with the fewest operations;
 *   - approximations, all letting more through, never less: across a
 *     second's boundary a partition may take its limit at the end of one
 *     second and again at the start of the next; one evicted by more
 *     than ENG_RATELIMIT_WAYS busier partitions of its set starts again
 *     from 0.
 * Only operations let through are counted: a refused one costs no room.
 *
 * A write of several rows counts once per partition (ScyllaDB counts a
 * batch once per partition it writes), and is refused whole if one of its
 * partitions has no room: the caller checks every row with
 * eng_ratelimit_has_room first, then counts them with
 * eng_ratelimit_take_once under one stamp, which counts each partition
 * once; eng_ratelimit_give_back_once undoes that for a write that did not
 * happen (an aborted two-phase commit).
 *
 * Pure: no I/O, no clock, no allocation after eng_ratelimit_init. Owned
 * by one thread (a shard's).
 */
#ifndef SCREE_ENGINE_RATELIMIT_H
#define SCREE_ENGINE_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define ENG_RATELIMIT_WAYS 4u
/* Sets a shard's limiter has: 4096 partitions tracked at once, 96 KiB. */
#define ENG_RATELIMIT_SETS 1024u

enum eng_ratelimit_kind {
        ENG_RATELIMIT_READ = 0,
        ENG_RATELIMIT_WRITE = 1,
        ENG_RATELIMIT_KIND_MAX,
        ENG_RATELIMIT_KIND_INVALID = -1,
};

struct eng_ratelimit_slot {
        uint64_t token;                 /* 0: free */
        uint32_t sec;                   /* the second n counts */
        uint32_t stamp;                 /* the last batch that counted or gave back here */
        uint32_t n[ENG_RATELIMIT_KIND_MAX];
};

/* Caller-provided storage; eng_ratelimit_init fills it. */
struct eng_ratelimit {
        struct eng_ratelimit_slot *slots;       /* n_sets * ENG_RATELIMIT_WAYS */
        uint32_t set_mask;                      /* n_sets - 1 */
        uint32_t stamp;                         /* the last stamp given out */
};

/* Sets rl up with n_sets sets (a power of two, at least 1), every slot
 * free. Returns 0, -EINVAL or -ENOMEM (rl then holds nothing; fini is
 * harmless). */
int eng_ratelimit_init(struct eng_ratelimit *rl, uint32_t n_sets);

/* Frees what rl holds; accepts a zeroed or finished one. */
void eng_ratelimit_fini(struct eng_ratelimit *rl);

/*
 * One operation of kind on partition token (not 0) in second now_s:
 * counted if the partition took fewer than limit of them in that second,
 * else refused. limit 0 is no limit (let through, not counted). Returns
 * true (counted) or false (refused, nothing counted).
 */
bool eng_ratelimit_take(struct eng_ratelimit *rl, uint64_t token, enum eng_ratelimit_kind kind,
                        uint32_t limit, uint32_t now_s);

/* Whether one more operation of kind on token in second now_s would be
 * let through (limit 0: always). Changes nothing. */
bool eng_ratelimit_has_room(const struct eng_ratelimit *rl, uint64_t token,
                            enum eng_ratelimit_kind kind, uint32_t limit, uint32_t now_s);

/* A new stamp for a batch (never 0; wraps after 2^32 - 1 batches). */
uint32_t eng_ratelimit_stamp(struct eng_ratelimit *rl);

/* Counts one operation of kind on token in second now_s unless this
 * stamp counted it already, whatever the limit (check with
 * eng_ratelimit_has_room first). */
void eng_ratelimit_take_once(struct eng_ratelimit *rl, uint64_t token,
                             enum eng_ratelimit_kind kind, uint32_t now_s, uint32_t stamp);

/* Gives back one operation of kind that token counted in second sec,
 * unless this stamp gave it back already, and if its slot still counts
 * that second (a later second, or a slot taken by another partition,
 * has nothing of it to give back). */
void eng_ratelimit_give_back_once(struct eng_ratelimit *rl, uint64_t token,
                                  enum eng_ratelimit_kind kind, uint32_t sec, uint32_t stamp);

#endif
