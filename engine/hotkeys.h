/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tablet's hottest keys: a Space-Saving top-k over a sample of its
 * accesses (Metwally et al.; ScyllaDB's toppartitions, YDB's key-access
 * sampling), for showing hot partitions and for choosing where a tablet
 * under load splits.
 *
 * ENG_HOT_SLOTS counters, each a key (its first ENG_HOT_KEY_BYTES bytes
 * kept; longer keys are told apart by a 64-bit hash of the whole key), a
 * count and the count's possible overestimate. An access of a key held
 * adds 1 to its count; of another key, takes a free slot with count 1, or
 * else replaces the key of the smallest count c with count c + 1 and
 * overestimate c. Every key accessed more often than the sample's size
 * over ENG_HOT_SLOTS is held, and a held key's true count lies in
 * [count - err, count]. Decaying (halving every count) makes it follow
 * what is hot now.
 *
 * The caller samples (eng_hot_sampled: one access in ENG_HOT_SAMPLE), so
 * the cost per access is a counter increment, and per sampled access a
 * scan of ENG_HOT_SLOTS hashes. Pure; the owner's thread.
 */
#ifndef SCREE_ENGINE_HOTKEYS_H
#define SCREE_ENGINE_HOTKEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENG_HOT_SLOTS 16u
#define ENG_HOT_KEY_BYTES 128u
#define ENG_HOT_SAMPLE 16u              /* one access in this many is counted */

struct eng_hot_slot {
        uint64_t hash;                  /* of the whole key */
        uint64_t count;                 /* sampled accesses (may overestimate by err) */
        uint64_t err;
        uint32_t len;                   /* bytes of key kept (at most ENG_HOT_KEY_BYTES) */
        bool cut;                       /* the key was longer */
        uint8_t key[ENG_HOT_KEY_BYTES];
};

/* Zero it to start. */
struct eng_hotkeys {
        uint32_t n;                     /* slots in use */
        struct eng_hot_slot s[ENG_HOT_SLOTS];
};

/* Whether this access is one to count: one in ENG_HOT_SAMPLE on
 * average, at random (xorshift32 over *state, the caller's; 0 is a
 * fine start) -- not every n-th, which a periodic load would alias. */
static inline bool eng_hot_sampled(uint32_t *state)
{
        uint32_t x = *state ? *state : 2463534242u;

        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *state = x;
        return (x & (ENG_HOT_SAMPLE - 1)) == 0;
}

/* Counts an access of key (len bytes, borrowed for the call). */
void eng_hotkeys_add(struct eng_hotkeys *h, const void *key, size_t len);

/* Halves every count and overestimate; drops the slots left at 0. */
void eng_hotkeys_decay(struct eng_hotkeys *h);

/* Copies the k hottest slots (fewer if fewer are held) into out, by
 * count, highest first; returns how many. */
uint32_t eng_hotkeys_top(const struct eng_hotkeys *h, struct eng_hot_slot *out, uint32_t k);

#endif
