/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An asynchronous k-way merge over sorted children -- a tablet's memtables
 * and SSTables -- in the engine's one order (engine/key.h: key ascending,
 * newest seq first), for scans and compactions.
 *
 * Children implement struct eng_merge_child: moves that return 1
 * (positioned), 0 (exhausted), <0 (error) or ENG_SST_PENDING (the child
 * calls eng_merge_child_done() later, from the loop). Memtable iterators
 * never wait; SSTable iterators (sst_iter.h) wait for block reads. A seek
 * moves every child at once and waits for all that are pending; next moves
 * only the child that stands on the current entry. A binary heap orders
 * the positioned children.
 *
 * Views, chosen at creation:
 *   RAW      every version of every key;
 *   USER     a scan: the newest version of each key only, skipping keys
 *            whose newest version is a tombstone or has expired. Older
 *            versions are stepped over one at a time up to
 *            ENG_MERGE_MAX_SKIPS per key; past that the child standing on
 *            the key is sought beyond it (a hot key's thousands of
 *            versions in a memtable cost one seek, as RocksDB's
 *            max_sequential_skip_in_iterations), so `shadowed` then
 *            counts only the versions stepped over;
 *   COMPACT  a compaction: the newest version of each key only; a
 *            tombstone or expired newest version is dropped only when the
 *            inputs are bottommost (no older data below them), else kept,
 *            since it must go on hiding older versions.
 * Any view stops before an exclusive end key, if given.
 *
 * A shard scan of [start, end) is: seek(start), then take entries with
 * next until `limit` are taken; the key of the entry after the last one
 * taken is the resume key.
 *
 * A reverse merge (eng_merge_opts.reverse; RAW and USER only) walks the
 * same order down: seek_lt(end) or seek_last, then prev, stopping before
 * a key below start_key. Positioned below a bound, a child stands on the
 * oldest version of its key, so the USER view takes every version of the
 * key from every child -- newest last -- before it decides: a copy of the
 * newest is kept, yielded unless it is a tombstone or expired. Past
 * ENG_MERGE_MAX_SKIPS versions of one key the child is sought forward to
 * its newest version of the key instead of stepped through them.
 *
 * Shard-local, like its children.
 */
#ifndef SCREE_ENGINE_MERGE_ITER_H
#define SCREE_ENGINE_MERGE_ITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/memtable.h"
#include "engine/sst_io.h"

struct eng_merge_iter;
struct eng_merge_child;

/* USER view: versions of one key stepped over before seeking past it. */
#define ENG_MERGE_MAX_SKIPS 8u

/* ---- children ---- */

/*
 * A sorted source. Each move returns 1 positioned, 0 exhausted, <0 an
 * error, or ENG_SST_PENDING: then the child calls eng_merge_child_done(c,
 * res) once, later, from the loop -- never from inside the move -- with
 * 1, 0 or <0. After 0 or an error only a seek follows.
 */
struct eng_merge_child_ops {
        /* The first version at or after (key, seq) in the engine's order:
         * the first whose key is above key, or equal with a seq <= seq
         * (UINT64_MAX: key's newest version). key is borrowed for the
         * call. */
        int (*seek)(struct eng_merge_child *c, const void *key, size_t key_len, uint64_t seq);
        int (*seek_first)(struct eng_merge_child *c);
        /* REQUIRES: positioned. */
        int (*next)(struct eng_merge_child *c);
        /* The reverse moves, for a reverse merge: the last version whose
         * key is < key (the oldest version of the largest such key; key
         * borrowed for the call), the last version of all, and the version
         * before the current one (REQUIRES: positioned). A child that
         * cannot walk down returns -ENOTSUP. */
        int (*seek_lt)(struct eng_merge_child *c, const void *key, size_t key_len);
        int (*seek_last)(struct eng_merge_child *c);
        int (*prev)(struct eng_merge_child *c);
        /* The current version, borrowed until the child's next move or
         * free. REQUIRES: positioned. */
        void (*entry)(struct eng_merge_child *c, struct eng_entry *ret);
        /* Frees the child, also while a move is pending: that move must
         * then never call eng_merge_child_done. May be called from inside
         * eng_merge_child_done. */
        void (*free)(struct eng_merge_child *c);
};

/* Embedded in the child's own struct (container_of). */
struct eng_merge_child {
        const struct eng_merge_child_ops *ops;
        /* The child's smallest key when it is known without a read (an
         * SSTable's, from its properties; borrowed for the child's life),
         * or NULL. A seek below it is put off: the child stands in the
         * heap on (lo, UINT64_MAX), which sorts before any real version,
         * and is sought to lo only when the merge reaches it -- a table
         * that the scan ends before costs no block. */
        const uint8_t *lo;
        size_t lo_len;
        /* The same for the child's largest key, or NULL: a reverse seek
         * above it is put off, the child standing on (hi, 0), which sorts
         * after any real version; and a forward merge whose children's hi
         * all lie below its end key leaves out the end's compare. So hi,
         * when set, must bound every key the child holds. */
        const uint8_t *hi;
        size_t hi_len;
        /* set by eng_merge_iter_add_take */
        struct eng_merge_iter *m;
        uint32_t index;
};

/* A child's pending move ended with res (1, 0 or <0). Shard-local. */
void eng_merge_child_done(struct eng_merge_child *c, int res);

/* A child over a memtable, which it references until freed. Returns 0 and
 * *ret, or -ENOMEM. Shard-local. */
int eng_merge_child_memtable_new(struct eng_memtable *mt, struct eng_merge_child **ret);

/* A child over an open SSTable (an sst_iter.h iterator, which references
 * t until it is gone). Returns 0 and *ret, or -ENOMEM. Shard-local. */
int eng_merge_child_sst_new(struct eng_sst_table *t, struct eng_merge_child **ret);
/* The same over an sst_seq.h iterator reading chunks of chunk_bytes (0 =
 * its default). 0 and *ret, -EINVAL (chunk_bytes), or -ENOMEM. It walks
 * forward only: its reverse moves are -ENOTSUP. */
int eng_merge_child_sst_seq_new(struct eng_sst_table *t, uint32_t chunk_bytes,
                                struct eng_merge_child **ret);

/* ---- the merge ---- */

enum eng_merge_view {
        ENG_MERGE_RAW = 1,
        ENG_MERGE_USER = 2,
        ENG_MERGE_COMPACT = 3,
        ENG_MERGE_VIEW_MAX,
        ENG_MERGE_VIEW_INVALID = 0,
};

struct eng_merge_opts {
        enum eng_merge_view view;
        /* USER and COMPACT: a version with 0 < expiry_ms <= now_ms has
         * expired (wall-clock ms, as eng_entry.expiry_ms). */
        uint64_t now_ms;
        bool bottommost;                /* COMPACT: nothing older lies below the inputs */
        const void *end_key;            /* exclusive; NULL = none; copied */
        size_t end_len;
        /* Entries a seek will likely be followed for (a scan's limit), 0 =
         * unknown: an SSTable child whose seek must read reads that far
         * ahead at once (eng_sst_iter_set_span). */
        uint32_t span;
        /* A compaction's: SSTable children stream their tables in reads of
         * this many bytes (a multiple of 4096), past the block cache
         * (sst_seq.h), instead of reading block by block through it (0). */
        uint32_t stream_bytes;
        /* SSTable children skip a damaged data block (sst_iter.h,
         * eng_sst_iter_on_damage) instead of failing with -SCREE_ECORRUPT:
         * for scans that must get past the damage. Either way the damaged
         * blocks met are counted and the first is kept
         * (eng_merge_iter_damage). Never for a compaction. */
        bool skip_damaged;
        /*
         * A reverse merge: it walks down, with seek_last, seek_lt and prev
         * (the forward moves are -EINVAL, as the reverse ones are on a
         * forward merge). RAW yields every version in the reverse of the
         * engine's order (key descending, oldest version first); USER
         * still yields each key's newest live version, gathering all its
         * versions first. COMPACT has no reverse (-EINVAL), nor does a
         * merge that streams (stream_bytes). end_key must be NULL: a
         * reverse walk of [start, end) is seek_lt(end) with start_key set
         * to start.
         */
        bool reverse;
        /* Reverse only: the inclusive lower bound; a walk down stops
         * before a key below it. NULL = none; copied. */
        const void *start_key;
        size_t start_len;
};

/* What the views left out, counted per version. */
struct eng_merge_stats {
        uint64_t entries;               /* yielded */
        uint64_t shadowed;              /* older versions of a key already seen, stepped over */
        uint64_t tombstones;            /* newest versions that were tombstones, skipped or dropped */
        uint64_t expired;               /* newest versions that had expired, skipped or dropped */
        uint64_t lazy, woken;           /* children whose seek was put off; then made */
        uint64_t damaged;               /* damaged SSTable blocks met (skipped or failed on) */
};

/* res: what the pending move returns now that it is done (1, 0 or <0). */
typedef void (*eng_merge_cb)(struct eng_merge_iter *m, int res, void *arg);

/* Makes an empty merge with options o (borrowed; end_key is copied).
 * Returns 0 and *ret (free with eng_merge_iter_free), -EINVAL (bad view
 * or stream_bytes), or -ENOMEM. Shard-local. */
int eng_merge_iter_new(const struct eng_merge_opts *o, struct eng_merge_iter **ret);

/*
 * Adds child c, taking it (also on failure, when it is freed). Children
 * are added newest first: for a version present in two of them (never in
 * a well-formed tablet) the earlier-added one's comes first. Returns 0 or
 * -ENOMEM. REQUIRES: no move made yet. Shard-local.
 */
int eng_merge_iter_add_take(struct eng_merge_iter *m, struct eng_merge_child *c);

/* Shorthands: make the child and add it (an SSTable's streams when the
 * merge's stream_bytes is set). 0 or -ENOMEM. */
int eng_merge_iter_add_memtable(struct eng_merge_iter *m, struct eng_memtable *mt);
int eng_merge_iter_add_sst(struct eng_merge_iter *m, struct eng_sst_table *t);

/*
 * Frees m and its children; accepts NULL. Allowed mid-scan, while a move
 * is pending (its callback then never runs) and from the callback.
 * Shard-local.
 */
void eng_merge_iter_free(struct eng_merge_iter *m);

/*
 * The moves. Each returns
 *   1                positioned on an entry of the view (eng_merge_iter_entry);
 *   0                exhausted: no such entry at or after the target, or
 *                    the next one is at or after the end key;
 *   ENG_SST_PENDING  a child is waiting for a read: cb(m, res, arg) runs
 *                    later, from the loop, with 1, 0 or <0;
 *   <0               the first child error (-SCREE_ECORRUPT, -ENOMEM,
 *                    -errno), reported once no child is pending.
 * After 0 or an error m is not positioned and only a seek may follow.
 * REQUIRES: no move pending. Shard-local.
 */
int eng_merge_iter_seek_first(struct eng_merge_iter *m, eng_merge_cb cb, void *arg);

/* To the first entry of the view whose key is >= key (borrowed for the
 * call). */
int eng_merge_iter_seek(struct eng_merge_iter *m, const void *key, size_t key_len,
                        eng_merge_cb cb, void *arg);

/* The next entry of the view. REQUIRES: positioned. */
int eng_merge_iter_next(struct eng_merge_iter *m, eng_merge_cb cb, void *arg);

/*
 * The reverse moves, for a merge made with reverse (else -EINVAL, without
 * a callback). The same results, 0 meaning no entry of the view below the
 * target, or the next one is below start_key. In the USER view the entry
 * is a copy of the key's newest version, owned by m.
 */
/* To the last entry of the view. */
int eng_merge_iter_seek_last(struct eng_merge_iter *m, eng_merge_cb cb, void *arg);
/* To the last entry of the view whose key is < key (borrowed for the
 * call): the exclusive upper end of a walk down. */
int eng_merge_iter_seek_lt(struct eng_merge_iter *m, const void *key, size_t key_len,
                           eng_merge_cb cb, void *arg);
/* The entry before the current one in the view. REQUIRES: positioned. */
int eng_merge_iter_prev(struct eng_merge_iter *m, eng_merge_cb cb, void *arg);

/* True when the last move left m on an entry. */
bool eng_merge_iter_is_valid(const struct eng_merge_iter *m);

/* The current entry, borrowed until the next move or free. REQUIRES:
 * positioned. */
void eng_merge_iter_entry(const struct eng_merge_iter *m, struct eng_entry *ret);

/* Counters since creation; borrowed, valid until free. */
const struct eng_merge_stats *eng_merge_iter_stats(const struct eng_merge_iter *m);
/* The first damaged SSTable block a move met (skipped or failed on), or
 * NULL. Borrowed, valid until free. */
const struct eng_sst_damage *eng_merge_iter_damage(const struct eng_merge_iter *m);

#endif
