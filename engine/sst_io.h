/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable I/O through the shard's eng_fs (format: docs/format/sst.md).
 *
 * Writing: eng_sst_write_start() pulls entries from a source, builds the
 * table (sst_builder.h) and writes it with O_DIRECT in chunks, one write in
 * flight while the next chunk is built, optionally throttled to a byte
 * rate (compaction). The file is fdatasynced and closed before done runs.
 * A failed table is left on disk for the caller to delete: until the
 * manifest names a file, it is not part of the database.
 *
 * Reading: eng_sst_table_open() reads the footer and the meta region and
 * keeps the fd; eng_sst_table_read_block() returns a data block pinned in
 * the shard's block cache, reading it with O_DIRECT on a miss. Concurrent
 * misses on one block share a single read. eng_sst_table_get() looks one
 * key up (bloom, index, one block); sst_iter.h scans a table in order, and
 * sst_seq.h streams one past the cache (eng_sst_table_read_raw()).
 *
 * Shard-local: tables, writes and the cache belong to the fs's loop.
 */
#ifndef SCREE_ENGINE_SST_IO_H
#define SCREE_ENGINE_SST_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/block_cache.h"
#include "engine/fs.h"
#include "engine/sst_builder.h"
#include "engine/sst_reader.h"

/* "Under way; the callback will run": returned by eng_sst_table_get() and
 * the sst_iter.h moves while a block read is in flight, and by an
 * eng_sst_source that has no entry ready yet. Positive and distinct from
 * every other result of each (0, 1, negative errors). */
#define ENG_SST_PENDING 2

/* ---- writing ---- */

struct eng_sst_source {
        /*
         * Produces the next entry in table order: returns 1 and *ret
         * (borrowed until the next call), 0 at the end, <0 to abort, or
         * ENG_SST_PENDING when the next entry is not ready yet (a source
         * fed by asynchronous reads): the source then calls
         * eng_sst_write_resume() once, later, from the loop -- never from
         * inside next -- and the writer calls next again. Meanwhile the
         * writer goes on writing what it has built; it never finishes
         * (not even after an error) while a resume is owed.
         */
        int (*next)(struct eng_sst_source *src, struct eng_entry *ret);
};

struct eng_sst_write_opts {
        const char *path;               /* borrowed until done runs */
        struct eng_sst_builder_opts table;
        uint32_t chunk_bytes;           /* per write; multiple of 4096; default 256 KiB */
        uint64_t rate_bytes_per_sec;    /* 0 = unthrottled */
};

#define ENG_SST_DEFAULT_CHUNK_BYTES (256u << 10)

struct eng_sst_write;
typedef void (*eng_sst_write_cb)(struct eng_sst_write *w, int res, void *arg);

/*
 * Starts writing a table. Returns 0 and *ret; done(w, res, arg) runs later,
 * once: res 0 when the file is complete, durable and closed, else the
 * error (from the source, the builder, or the fs; -EIO for a short write).
 * Returns -EINVAL or -ENOMEM (done won't run).
 */
int eng_sst_write_start(struct eng_fs *fs, const struct eng_sst_write_opts *o,
                        struct eng_sst_source *src, eng_sst_write_cb done, void *arg,
                        struct eng_sst_write **ret);
/* The source, whose next returned ENG_SST_PENDING, has its next entry (or
 * its end, or an error) ready: the writer goes on. Call it from the loop,
 * once per ENG_SST_PENDING. Shard-local. */
void eng_sst_write_resume(struct eng_sst_write *w);

/* The finished table's properties and size; valid until free. */
const struct eng_sst_props *eng_sst_write_props(const struct eng_sst_write *w);
uint64_t eng_sst_write_file_size(const struct eng_sst_write *w);
/* Nanoseconds spent waiting for the throttle. */
uint64_t eng_sst_write_throttled_ns(const struct eng_sst_write *w);
/* Times building gave the loop back before a chunk was ready (it does so
 * every ~100 us, so a flush or compaction never holds the shard long). */
uint64_t eng_sst_write_slices(const struct eng_sst_write *w);
/* Accepts NULL. REQUIRES: done ran. */
void eng_sst_write_free(struct eng_sst_write *w);

/* ---- reading ---- */

struct eng_sst_table;
typedef void (*eng_sst_open_cb)(void *arg, int res, struct eng_sst_table *t);

/*
 * Opens the table at path (copied) whose id and size the
 * manifest gives. done(arg, res, t) runs later with a table holding one
 * reference, or res: -errno from open/read, -SCREE_ECORRUPT (short file,
 * bad footer, checksum, index), -SCREE_EUNSUPPORTED. Returns 0, or -ENOMEM
 * (done won't run). Blocks are cached in cache (borrowed; must outlive
 * the table).
 */
int eng_sst_table_open(struct eng_fs *fs, struct eng_block_cache *cache, const char *path,
                       uint64_t file_id, uint64_t file_size, eng_sst_open_cb done, void *arg);

void eng_sst_table_ref(struct eng_sst_table *t);
/* Accepts NULL. The last reference closes the fd (in the background) and
 * frees the table. */
void eng_sst_table_unref(struct eng_sst_table *t);
/* fn(arg) runs once t is freed and its fd closed (after the last unref,
 * from the loop, or inside that unref if the close cannot start), so an
 * owner can wait for no I/O of its tables to be in flight. */
void eng_sst_table_on_closed(struct eng_sst_table *t, void (*fn)(void *arg), void *arg);

/* Borrowed; valid while t is referenced. */
const struct eng_sst_reader *eng_sst_table_reader(const struct eng_sst_table *t);
uint64_t eng_sst_table_file_id(const struct eng_sst_table *t);

/* ---- damage ---- */

/*
 * A data block found damaged while reading a table: its checksum, length,
 * type or entries do not verify (docs/format/sst.md). Reads of the block
 * fail with -SCREE_ECORRUPT every time (a damaged block is never cached);
 * the rest of the table stays readable.
 */
struct eng_sst_damage {
        uint64_t file_id;
        uint64_t offset;                /* the block's, in the file */
        uint32_t size;                  /* the block's, in bytes */
        uint32_t block;                 /* data block index */
        const char *what;               /* what failed; static text */
};

#define ENG_SST_DAMAGE_BLOCK "bad checksum, length or type"
#define ENG_SST_DAMAGE_ENTRY "bad entry"

/* Called once per damaged block met by any read of the table (a lookup,
 * an iterator, a stream), at the moment it is found; first is true the
 * first time this block of this table is reported. d is borrowed for the
 * call. Must not call into t. */
typedef void (*eng_sst_damage_fn)(void *arg, struct eng_sst_table *t,
                                  const struct eng_sst_damage *d, bool first);

/* What a reader of the table (an iterator) is told of a damaged block it
 * met; d borrowed for the call. */
typedef void (*eng_sst_damaged_fn)(void *arg, const struct eng_sst_damage *d);

/* Sets t's damage hook (fn NULL: none). Shard-local. */
void eng_sst_table_on_damage(struct eng_sst_table *t, eng_sst_damage_fn fn, void *arg);

/*
 * Data block `index` of t was found damaged (what: static text, e.g.
 * ENG_SST_DAMAGE_BLOCK): marks t damaged, calls the hook and fills *ret
 * (may be NULL). For the readers of t (sst_iter.c, sst_seq.c). REQUIRES:
 * index < eng_sst_reader_n_blocks(). Shard-local.
 */
void eng_sst_table_report_damage(struct eng_sst_table *t, uint32_t index, const char *what,
                                 struct eng_sst_damage *ret);

/* What a reader (sst_iter.c, sst_seq.c) does with a damaged block: skip
 * it or fail, and whom it tells. */
struct eng_sst_damage_policy {
        bool skip;
        eng_sst_damaged_fn fn;          /* NULL: nobody */
        void *arg;
};

/* A reader of t met damaged block `index` (in_entries: its entries, not
 * its bytes, are bad): reports it (eng_sst_table_report_damage), tells
 * p->fn, and returns 0 to skip it or err. Shard-local. */
int eng_sst_damage_met(struct eng_sst_table *t, const struct eng_sst_damage_policy *p,
                       uint32_t index, bool in_entries, int err);

/* True once a read found a damaged block in t (see above). */
bool eng_sst_table_is_damaged(const struct eng_sst_table *t);
/* The cache t reads through (to release the blocks it hands out). Borrowed. */
struct eng_block_cache *eng_sst_table_cache(const struct eng_sst_table *t);

/* Caller-provided; valid until done runs. */
struct eng_sst_block_read {
        void (*done)(struct eng_sst_block_read *rq, int res);
        void *ctx;                              /* the caller's */
        struct eng_cached_block *block;         /* on success: pinned; release it */
        /* Set by the caller: a block this request reads from disk is not
         * kept in the cache (eng_block_cache_adopt). A waiter sharing
         * another request's read gets what that one decided. */
        bool no_cache;
        /* internal */
        struct eng_sst_table *t;
        uint32_t index;
        struct eng_sst_block_read *next;        /* waiters on one read / in-flight list */
        struct eng_sst_block_read *waiters;
        struct eng_fs_op op;
        uint8_t *buf;
};

/*
 * Gets data block `index` of t. Returns 1 on a cache hit (rq->block is set
 * and pinned; done won't run), 0 when a read is under way (done(rq, res)
 * runs later: 0 with rq->block pinned, or -errno / -SCREE_ECORRUPT), or
 * -ENOMEM (done won't run). rq->block's content is the verified block
 * content; release it with eng_block_cache_release(). REQUIRES: index <
 * eng_sst_reader_n_blocks().
 */
int eng_sst_table_read_block(struct eng_sst_table *t, uint32_t index, struct eng_sst_block_read *rq);
/* Whether data block `index` of t is cached, as far as t's slot for it
 * (block_cache.h) knows, with no cache lookup: yes is always true now (the
 * cache clears a slot when its block leaves); no may be wrong, for a block
 * t has not found or read itself since it was put (a tablet move's warming
 * puts blocks unbound), bound to another handle on the same file, or when
 * t had no memory for its slots. REQUIRES: index < eng_sst_reader_n_blocks(). */
bool eng_sst_table_block_cached(const struct eng_sst_table *t, uint32_t index);
/*
 * When t's slot holds data block `index` (as eng_sst_table_block_cached
 * says), starts bringing its first bytes and its restart count (its last
 * 4) into the CPU's cache, for a move about to enter it: reading the
 * block's header (its content and length) is the only load it makes.
 * Entering a cached block reads the restart count first, and that miss
 * was two thirds of entering one in a profile of 100-row range reads.
 * No effect on the block cache. REQUIRES: as eng_sst_table_block_cached.
 */
void eng_sst_table_block_prefetch(const struct eng_sst_table *t, uint32_t index);

/*
 * Reads len bytes at off of t's file into buf, straight from the disk and
 * past the cache: for a reader that streams a table's data region in large
 * reads (sst_seq.h). buf, off and len are 4096-aligned (MEM_DIRECT_ALIGN).
 * The contract is eng_fs_read's: 0 and cb(op, res) later from the loop
 * (res the bytes read or -errno), or <0 and cb never runs. The caller
 * keeps t referenced until cb has run. Shard-local.
 */
int eng_sst_table_read_raw(struct eng_sst_table *t, struct eng_fs_op *op, void *buf, uint32_t len,
                           uint64_t off, eng_fs_cb cb);

/* ---- point lookups ---- */

/* Caller-provided; valid until done runs (or until get returns anything
 * but ENG_SST_PENDING). */
struct eng_sst_get {
        void (*done)(struct eng_sst_get *g, int res);
        void *ctx;                              /* the caller's */
        /* On success: the newest version of the key in the table (a
         * tombstone counts: callers check kind). entry.key is the caller's
         * key pointer (same bytes); the value is borrowed from block. */
        struct eng_entry entry;
        struct eng_cached_block *block;         /* on success: pinned; release it */
        /* With -SCREE_ECORRUPT: the damaged block (also given to t's hook). */
        struct eng_sst_damage damage;
        /* internal */
        struct eng_sst_block_read rq;
        uint32_t blk;                           /* the data block looked into */
        const void *key;
        size_t key_len;
        uint64_t hash;                          /* the key's (bloom and row cache) */
};

/*
 * Looks key up in t: the bloom filter, the index, the row cache (when the
 * cache keeps rows: block_cache.h), then the one data block that can hold
 * it, whose entry for the key then becomes a row. g->block may be a row
 * rather than a block; either way it is released the same. Returns
 *   0                 found at once (the block was cached): g->entry and
 *                     g->block are set, done won't run -- no allocation,
 *                     no callback;
 *   -SCREE_ENOTFOUND  not in the table, known at once (bloom, key range,
 *                     or a cached block), done won't run;
 *   ENG_SST_PENDING   a block read is under way: done(g, res) runs later,
 *                     from the loop, with 0 (g->entry, g->block set),
 *                     -SCREE_ENOTFOUND, -SCREE_ECORRUPT or -errno;
 *   -SCREE_ECORRUPT   a cached block or row is malformed, done won't run.
 * With -SCREE_ECORRUPT (either way) g->damage names the block, and t's
 * damage hook has run;
 *   -ENOMEM, -errno   the read could not start, done won't run.
 * key is borrowed until get returns, or with ENG_SST_PENDING until done
 * runs. g->block is NULL unless the lookup found the key. Shard-local.
 */
int eng_sst_table_get(struct eng_sst_table *t, const void *key, size_t key_len,
                      struct eng_sst_get *g);

/* Lookup counters of one table, for the shard to sum and expose (and to
 * fold into its totals before it drops the table). A lookup that ends in
 * an error counts in gets only. */
struct eng_sst_read_stats {
        uint64_t gets;                  /* eng_sst_table_get calls */
        uint64_t bloom_negatives;       /* answered by the bloom filter alone */
        uint64_t bloom_false_positives; /* passed the bloom, but no version in the table */
        uint64_t found;                 /* a version found (tombstones included) */
        uint64_t row_hits;              /* of those, answered by a cached row */
};

/* Borrowed; valid while t is referenced. */
const struct eng_sst_read_stats *eng_sst_table_stats(const struct eng_sst_table *t);

#endif
