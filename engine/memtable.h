/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memtable: the in-memory, sorted write buffer of one tablet. A skiplist
 * whose nodes (entry header, key and value bytes) live in the memtable's own
 * arena (2 MiB huge pages) and are freed in one go when the memtable is
 * dropped after a flush. A directory of entry points by the key's first
 * word lets a search start near its key, and a hash index of each key's
 * newest version answers point gets (memtable.c, mt_index.h).
 * Shard-local: no locks, no atomics; only the owning shard touches it.
 *
 * Order: keys ascending as bytes (a shorter key before its extensions), and
 * for equal keys the newest sequence number first. A put never replaces an
 * entry: each version is kept until flush, so reads at an older snapshot
 * (seq) still see their version. Keys are the engine's internal keys; values
 * are opaque. Deletes are ENG_ENTRY_TOMBSTONE entries.
 */
#ifndef SCREE_ENGINE_MEMTABLE_H
#define SCREE_ENGINE_MEMTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eng_memtable;
struct eng_mt_node;

enum eng_entry_kind {
        ENG_ENTRY_VALUE = 1,
        ENG_ENTRY_TOMBSTONE = 2,
        ENG_ENTRY_KIND_MAX,
        ENG_ENTRY_KIND_INVALID = 0,
};

/* One version of one key. Pointers are borrowed: valid while the memtable
 * is referenced. */
struct eng_entry {
        const uint8_t *key;
        uint32_t key_len;
        const uint8_t *value;
        uint32_t value_len;
        uint64_t seq;
        uint64_t expiry_ms;             /* 0 = never; wall-clock ms otherwise */
        enum eng_entry_kind kind;
};

/* Returns NULL only on ENOMEM. Caller drops it with eng_memtable_unref.
 * Its arena's blocks come from pool (base/arena.h) while it has some, and
 * go back to it when the memtable is freed; pool may be NULL (plain
 * blocks). Takes a reference on pool. Shard-local. */
struct arena_pool;
struct eng_memtable *eng_memtable_new(struct arena_pool *pool);
void eng_memtable_ref(struct eng_memtable *mt);
/* Frees the memtable and every entry when the last reference goes. Accepts NULL. */
void eng_memtable_unref(struct eng_memtable *mt);

/*
 * Adds one version: key and value are copied. Returns 0, -EINVAL for a bad
 * kind, -EEXIST if this exact (key, seq) is present already, -ENOMEM.
 * Shard-local.
 */
int eng_memtable_put(struct eng_memtable *mt, const struct eng_entry *e);

/*
 * Puts several versions, each into its own memtable (the same one or not):
 * the same as eng_memtable_put on each in order -- puts[i].res gets its
 * result -- but the skip-list searches of up to ENG_MEMTABLE_PUT_MANY
 * puts run interleaved, so their cache misses overlap instead of queueing
 * (the rest of n is ignored). Shard-local.
 */
#define ENG_MEMTABLE_PUT_MANY 8u

struct eng_memtable_put {
        struct eng_memtable *mt;
        const struct eng_entry *e;
        int res;
};

void eng_memtable_put_many(struct eng_memtable_put *puts, unsigned n);

/*
 * Finds the newest version of key with seq <= snapshot_seq. Returns 0 and
 * *ret (a tombstone counts as found: callers check kind), or
 * -SCREE_ENOTFOUND. Shard-local.
 */
int eng_memtable_get(const struct eng_memtable *mt, const void *key, uint32_t key_len,
                     uint64_t snapshot_seq, struct eng_entry *ret);

/* Bytes the memtable's nodes (headers, towers, keys, values; the arena
 * reserves whole 2 MiB blocks beyond that) and its index take, and
 * versions stored. */
size_t eng_memtable_bytes(const struct eng_memtable *mt);
uint64_t eng_memtable_count(const struct eng_memtable *mt);
/* Times a put's search, having stepped over many nodes on one level (a
 * run of one key's versions, or of keys sharing their first 8 bytes, all
 * in one directory bucket), went up to a higher level. For tests. */
uint64_t eng_memtable_climbs(const struct eng_memtable *mt);
/* Directory entries new tall nodes have taken over (not counting
 * rebuilds). For tests. */
uint64_t eng_memtable_dir_pushes(const struct eng_memtable *mt);

/* Debug validator for asserts: true if every level is sorted and lower levels
 * contain the upper ones. O(n). */
bool eng_memtable_check(const struct eng_memtable *mt);

/* Iterator over every version in order, forward or (the reverse moves
 * below) backward. Valid while the memtable is referenced. Puts may happen
 * meanwhile: nodes are never moved or freed, so the iterator never
 * dangles, and it sees versions inserted ahead of it. */
struct eng_memtable_iter {
        const struct eng_memtable *mt;
        const struct eng_mt_node *node;
        uint64_t climbs;                /* levels its seeks went up mid-search (memtable.c) */
};

void eng_memtable_iter_init(struct eng_memtable_iter *it, const struct eng_memtable *mt);
/* Positions at the first version whose key is >= key (newest first). */
void eng_memtable_iter_seek(struct eng_memtable_iter *it, const void *key, uint32_t key_len);
/* Positions at the first version at or after (key, seq): the first whose
 * key is above key, or equal with a seq <= seq. */
void eng_memtable_iter_seek_version(struct eng_memtable_iter *it, const void *key,
                                    uint32_t key_len, uint64_t seq);
void eng_memtable_iter_seek_first(struct eng_memtable_iter *it);
bool eng_memtable_iter_valid(const struct eng_memtable_iter *it);
void eng_memtable_iter_next(struct eng_memtable_iter *it);
/*
 * The reverse moves, for scans that walk down (merge_iter.h). Each is a
 * search from the top of the list (no back links): O(log n) a move, prev
 * included. Versions put meanwhile are seen as by the forward moves.
 */
/* Positions at the last version whose key is < key: the oldest version of
 * the largest such key. Not valid when there is none. */
void eng_memtable_iter_seek_lt(struct eng_memtable_iter *it, const void *key, uint32_t key_len);
/* Positions at the last version of all (the oldest of the largest key). */
void eng_memtable_iter_seek_last(struct eng_memtable_iter *it);
/* The version before the current one in the list's order. REQUIRES: valid. */
void eng_memtable_iter_prev(struct eng_memtable_iter *it);
/* The current version. REQUIRES: valid. */
void eng_memtable_iter_entry(const struct eng_memtable_iter *it, struct eng_entry *ret);

#endif
