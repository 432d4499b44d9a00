/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The memtable's point-lookup index: key hash -> the node holding the
 * key's newest version. An open-addressing table (linear probing) of
 * (hash, node) slots, so finding a key costs one slot line and one node
 * instead of the ~5-20 scattered nodes of a skip-list search.
 *
 * Growing never stalls: at 3/4 full a table twice the size takes new keys
 * while every put moves a few slots of the old one over (as Redis's dict
 * does); lookups meanwhile try the new table, then the old. The bigger
 * table itself is made ready a segment at a time while the current one
 * fills from 1/2 to 3/4, so no single put takes and zeroes all of it. A
 * put of a key still in the old table leaves a tombstone there (node NULL,
 * hash kept so probe chains stay whole), so a moved slot never duplicates
 * a key.
 *
 * A table is a row of segments of up to 2 MiB; tables from 2 MiB up take
 * whole segments from the shard's block pool (base/arena.h), which holds
 * memory already faulted in: a table growing into fresh pages stopped the
 * shard ~4 ms per 2 MiB on a VM. Taken blocks are zeroed (~0.1 ms each).
 *
 * Keys are never removed (a memtable only grows). The index knows nodes
 * only as pointers and compares keys through the caller's `same`, called
 * only on a full 64-bit hash match. On ENOMEM (a failed grow at 3/4 full
 * is not yet an error; a table with no room is) mt_index_put returns
 * -ENOMEM and the caller stops using the index. Shard-local.
 */
#ifndef SCREE_ENGINE_MT_INDEX_H
#define SCREE_ENGINE_MT_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_slot {
        uint64_t hash;                  /* 0: empty (hashes are stored as 1 instead) */
        void *node;                     /* NULL with a hash: moved or replaced (old table) */
};

#define MT_INDEX_SEG_SHIFT 17u          /* 2 MiB of slots */

struct mt_table {
        struct mt_slot **seg;           /* slot i is seg[i >> MT_INDEX_SEG_SHIFT][low bits] */
        uint64_t mask;                  /* slots - 1 */
};

struct arena_pool;

struct mt_index {
        struct mt_table cur, old;       /* old.seg: being moved into cur, or NULL */
        struct mt_table next;           /* the next cur, twice its size, or seg NULL */
        uint64_t next_ready;            /* next's first segments taken and zeroed */
        uint64_t cur_used;              /* slots with a hash in cur */
        uint64_t moved;                 /* old slots [0, moved) are done */
        struct arena_pool *pool;        /* whole segments come from it; may be NULL */
};

/* Whether the node `node` holds the key `key` describes (caller's format). */
typedef bool (*mt_index_same_fn)(const void *node, const void *key);

/* Takes a reference on pool (may be NULL: segments from mmap). Returns 0
 * or -ENOMEM. */
int mt_index_init(struct mt_index *x, struct arena_pool *pool);
void mt_index_fini(struct mt_index *x);

/* The node stored for the key with this hash, or NULL. */
void *mt_index_find(const struct mt_index *x, uint64_t hash, mt_index_same_fn same, const void *key);

/*
 * Stores node for key (replacing what is stored for it, if anything).
 * `newer(stored)` decides whether node should replace a node already
 * stored for the key: the index keeps each key's newest version.
 * Returns 0 or -ENOMEM (the index is then unusable).
 */
int mt_index_put(struct mt_index *x, uint64_t hash, void *node, mt_index_same_fn same,
                 const void *key, bool (*newer)(const void *stored, const void *node));

/* Starts fetching the slot a put or find of this hash will look at first:
 * call it before other work (a skip-list search) to overlap the miss. */
void mt_index_prefetch(const struct mt_index *x, uint64_t hash);

/* Whether an old table is still being moved. */
static inline bool mt_index_moving(const struct mt_index *x)
{
        return x->old.seg != NULL;
}

/* Bytes the tables take (the next one's ready segments too). */
size_t mt_index_bytes(const struct mt_index *x);

#endif
