/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One shard's storage: the tablets it owns (the catalog's, catalog.h), each with its own
 * memtables and SSTables, one commit log (wal.h) and one manifest
 * (manifest.h), all in one directory, driven by the shard's loop.
 *
 * Writes: a write is a batch of puts and deletes applied atomically. It is
 * applied to the memtables at once (so the next read on this shard sees
 * it) and logged: the writes of one loop iteration share one commit-log
 * record (a bigger atomic batch), appended once the iteration's writes
 * are in. A write is acknowledged:
 *   - sync batch: when its log record is durable (group commit);
 *   - sync periodic: at once (a crash may lose the last period).
 * When memtables exceed half the memory budget the largest is sealed and
 * flushed to an SSTable in the background; when sealed and active
 * memtables together exceed the budget, flushing is behind and new writes
 * wait (stats.stalls, stats.stall_ns) instead of failing.
 *
 * Reads see the newest version; tombstones and versions whose expiry has
 * passed read as absent.
 *
 * One key's operations take effect in the order they were called (keyq.h):
 * a get, write or read-modify-write called while an earlier write to the
 * same key waits for memory, or an earlier read-modify-write of it is
 * between its read and its write, waits behind it. So a read sees every
 * write called before it, stalled or not, and read-modify-writes of one
 * key never interleave. Operations on other keys do not wait. A part of a
 * write across shards, prepared here, holds its keys the same way until
 * it commits or aborts (shard_xtxn.h, the two-phase commit).
 *
 * Errors that stop writes: a failed commit-log or manifest write or sync
 * (a retried fsync can report success for lost data) stops every later
 * write with that error; reads keep working.
 * Out of space (ENOSPC, or a short write) is not such an error: nothing
 * written was lost, and the shard recovers by itself (design.md, "Disk
 * full"). A log write or segment that ran out of space fails the writes
 * waiting for it with -ENOSPC (not acknowledged: their records stay
 * buffered and are written when space returns, so their effect may still
 * appear), and later writes fail with -ENOSPC at once while the log's
 * retry timer waits for space (eng_shard_is_full). A flush or a manifest
 * edit that ran out of space is retried; writes then stall until memory
 * runs out, and fail with -ENOSPC beyond it. A close on a full disk
 * succeeds: every acknowledged write is durable.
 *
 * Callback contract (as fs.h): a call that returns "pending" runs its
 * callback exactly once, later, from the loop; otherwise the callback never
 * runs. Shard-local: every call on the shard's loop thread.
 */
#ifndef SCREE_ENGINE_SHARD_H
#define SCREE_ENGINE_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/catalog.h"
#include "engine/compaction.h"
#include "engine/fs.h"
#include "engine/hotkeys.h"
#include "engine/keyq.h"
#include "engine/memtable.h"
#include "engine/merge_iter.h"
#include "engine/ratelimit.h"
#include "engine/sst_io.h"
#include "engine/tablet.h"
#include "engine/wal.h"

struct eng_catalog;
struct eng_catalog_table;
struct eng_shard;
struct eng_tablet;
struct eng_tset;
struct eng_cached_block;

struct eng_shard_opts {
        const char *dir;                /* existing directory of this shard; copied */
        uint32_t shard, n_shards;
        /* The catalog the shard starts with (catalog.h; borrowed for the
         * open, which takes its own reference): its tables, and which of
         * their tablets this shard owns. NULL: the first catalog of a
         * directory from before catalogs, eng_catalog_initial(n_shards,
         * tablets_per_shard). Its n_shards must be n_shards. */
        struct eng_catalog *catalog;
        uint32_t tablets_per_shard;     /* the manifest's layout; default 4 */
        enum eng_wal_sync sync;         /* default batch */
        uint64_t period_ns;             /* periodic sync; default 10 ms */
        uint64_t segment_bytes;         /* commit-log segment; default 32 MiB */
        size_t memtable_budget;         /* bytes; default 256 MiB */
        /* Commit log kept behind the newest segment before the memtables
         * holding its oldest segments are sealed and flushed, whatever
         * their size (RocksDB's max_total_wal_size): a tablet that stopped
         * taking writes would otherwise keep every segment since its last
         * write. Default memtable_budget; at least 4 segments. */
        uint64_t log_limit_bytes;
        size_t cache_bytes;             /* block cache; default 64 MiB */
        /* Point lookups that read a block cache the version they found as
         * a row (block_cache.h) instead of the block, in cache_bytes: hot
         * keys scattered over many blocks then cost their own bytes, not
         * 4 KiB each. Pays off once the rows are warm (scree-bench --row-cache
         * on|off measures it). */
        bool row_cache;
        uint64_t compaction_rate;       /* bytes/s; 0 = default 64 MiB/s; UINT64_MAX = unthrottled */
        /* A compaction reads its inputs in reads of up to this many bytes
         * (a multiple of 4096), past the block cache; 0 = default 256 KiB;
         * ENG_COMPACT_READ_CACHED = block by block through the cache
         * (compaction.h; scree-bench --compaction-readahead compares them). */
        uint32_t compaction_readahead;
        bool salvage;                   /* skip corrupt commit-log records at start-up */
        /* How the embedder's user turns salvage on, named in the error that
         * refuses a damaged commit log (the server: "--salvage ..."); NULL:
         * "the salvage option". Borrowed for the open. */
        const char *salvage_hint;
        bool no_compaction;             /* tests and benchmarks */
        /* Neighbouring tablets of a table that splits by size or load
         * merge once both stayed cold this many seconds and are small
         * (eng_shard_merge_wanted); 0 = 600. */
        uint32_t merge_after_secs;
        /* Fault the memtable budget's and the block cache's memory in as
         * soon as the shard is open, in the background (io-wq), and keep
         * it: no write then waits for fresh memory, which costs
         * milliseconds a 2 MiB block on a VM. Costs at most memtable_budget
         * + cache_bytes (whole 2 MiB blocks, rounded down) in resident
         * memory from the start. Without it, memtable memory is still kept
         * for reuse once touched. */
        bool prefault_memtables;
};

#define ENG_SHARD_DEFAULT_BUDGET ((size_t)256 << 20)
#define ENG_SHARD_DEFAULT_TABLETS 4u
#define ENG_SHARD_DEFAULT_COMPACTION_RATE (UINT64_C(64) << 20)

struct eng_shard_stats {
        uint64_t writes, entries_written, user_bytes;   /* user key + value bytes */
        uint64_t gets, get_memtable_hits, get_sst_reads;
        uint64_t stalls, stall_ns;
        uint64_t flushes, flush_bytes, flush_errors;
        uint64_t compactions, compaction_bytes_in, compaction_bytes_out, compaction_errors;
        /* compactions reads started (read debt: shard_compact.c), and
         * memtables they sealed for a flush first */
        uint64_t read_compactions, read_seals;
        uint64_t expired_dropped;       /* expired versions compactions removed */
        uint64_t compaction_ns;         /* time a compaction ran, the one running included */
        uint64_t compacting;            /* 1 while a compaction runs, else 0 */
        uint64_t tablet_splits;         /* tablets of this shard split (installs) */
        uint64_t tablet_merges;         /* merges of this shard's tablets (installs) */
        uint64_t tablet_moves_in;       /* tablets moved here (installs: shard_move.h) */
        uint64_t tablet_moves_out;      /* tablets moved away (installs) */
        /* Damaged SSTable data blocks (sst_io.h): distinct blocks found
         * (each logged once), and reads that met one (a get failed, a
         * scan skipped it, a compaction failed on it). */
        uint64_t corrupt_blocks, corrupt_reads;
        uint64_t disk_bytes_written;                    /* log + SSTables (not the manifest) */
        uint64_t log_records;                           /* commit-log records (groups of writes) */
        uint64_t segments_removed;
        uint64_t log_limit_seals;                       /* memtables sealed for log_limit_bytes */
        uint64_t memtable_bytes, imm_bytes;             /* now */
        uint64_t replayed_records;                      /* records with an entry not yet flushed */
        /* memtable blocks: faulted in off the shard's thread, taken ready
         * from the spare pool, allocated cold because it was empty */
        uint64_t blocks_prefaulted, block_pool_hits, block_pool_misses;
        uint64_t prefault_pending;      /* now: blocks prefault_memtables has still to fault in */
        /* Refreshed by eng_shard_stats from the live parts (gauges, and
         * counters the log and cache keep themselves). */
        uint64_t sstables, sstable_bytes;               /* now: the published tables */
        uint64_t log_bytes_written, log_syncs;          /* this run's commit log */
        uint64_t log_gathers;           /* its flushes that waited for writers (wal_gather.h) */
        uint64_t cache_hits, cache_misses, cache_bytes; /* block cache: blocks; bytes of all */
        uint64_t row_hits, row_misses, cache_rows;      /* its rows (row_cache) */
        /* its single-page blocks: now in huge pages from the memtables'
         * pool; ever from malloc, past what the pool may give it */
        uint64_t cache_pages_huge, cache_pages_malloc;
};

typedef void (*eng_shard_open_cb)(void *arg, int res, struct eng_shard *s);

/*
 * Opens (or creates) the shard in o->dir: reads the manifest, opens its
 * SSTables, removes files it does not name, replays the commit log and
 * starts a new one. done(arg, res, s) runs later: res 0 with the shard, or
 * -SCREE_ECORRUPT (a corrupt log record without salvage, a corrupt
 * manifest, an SSTable named by the manifest that is corrupt), -ENOENT (an
 * SSTable the manifest names is missing), -EINVAL (the directory was made
 * with another layout), -errno. Failures are logged with the file name.
 * Returns 0, or -EINVAL (no dir or done, a compaction_readahead that is
 * not a multiple of 4096) or -ENOMEM (done won't run).
 */
int eng_shard_open(struct rx_loop *loop, struct eng_fs *fs, const struct eng_shard_opts *o,
                   eng_shard_open_cb done, void *arg);

/* Waits for flushes and compactions in progress to end (none new start),
 * syncs and closes the log and manifest, and frees the shard; done(arg,
 * res) runs later. Pending writes complete first. Returns 0 or <0 (done
 * won't run). REQUIRES: no read in progress. */
int eng_shard_close(struct eng_shard *s, void (*done)(void *arg, int res), void *arg);

/* ---- writes ---- */

enum eng_mut_kind {
        ENG_MUT_PUT = 1,
        ENG_MUT_DEL = 2,
};

struct eng_mutation {
        enum eng_mut_kind kind;
        uint32_t table;                 /* catalog table id */
        const void *key;
        uint32_t key_len;
        const void *value;              /* put only */
        uint32_t value_len;
        uint64_t expiry_ms;             /* put only; wall-clock ms, 0 = never */
};

/* Caller-provided; valid until done runs. */
struct eng_write {
        void (*done)(struct eng_write *w, int res);
        void *ctx;
        /* internal */
        struct eng_wal_write ww;
        struct eng_shard *s;
        struct eng_write *next;
        uint8_t *stalled;               /* encoded batch held while it waits */
        uint32_t stalled_len, stalled_count;
        uint64_t stall_start_ns;
        /* its keys' places in the shard's key FIFOs while in flight */
        struct eng_keyq_op qop;
        struct eng_keyq_node *nodes;    /* n_nodes: &qnode, heap, or a read-modify-write's */
        uint32_t n_nodes;
        bool nodes_owned;               /* heap: freed with the places */
        struct eng_keyq_node qnode;
};

/*
 * Applies n mutations atomically (all or none survive a crash). Returns 1:
 * done and acknowledged (periodic mode; w is free again); 0: pending,
 * w->done(w, res) runs when acknowledged (batch mode, or any write that has
 * to wait for a flush or for an earlier operation on one of its keys);
 * -EINVAL (no mutation, a bad kind, a key over ENG_MAX_USER_KEY_BYTES, a
 * value over ENG_MAX_VALUE_BYTES); -SCREE_EMOVED (a key another shard owns,
 * or whose tablet is moving there: shard_move.h); -SCREE_ENOTFOUND (a
 * table the shard's catalog does not have); -SCREE_ERATELIMIT (a partition
 * it writes is at its table's write limit: nothing written, see
 * "per-partition rate limits"); -E2BIG (the batch cannot fit in a log
 * segment); or the error that stopped writes.
 * Keys and values are copied before the call returns.
 */
int eng_shard_write(struct eng_shard *s, const struct eng_mutation *m, uint32_t n,
                    struct eng_write *w);

#define ENG_MAX_VALUE_BYTES (16u << 20)

/* ---- reads ---- */

/* Caller-provided; valid until done runs (or the call returned). */
struct eng_get {
        void (*done)(struct eng_get *g, int res);
        void *ctx;
        /* on success: the value, valid until eng_get_release() */
        const uint8_t *value;
        uint32_t value_len;
        uint64_t expiry_ms;
        uint64_t seq;
        /* on -SCREE_ECORRUPT: the damaged SSTable block the key lies in
         * (the file is eng_shard_sst_path's) */
        struct eng_sst_damage damage;
        /* internal */
        struct eng_shard *s;
        struct eng_tablet *tablet;
        uint64_t cat_version;           /* of the snapshot tablet was routed by */
        struct eng_memtable *mt;        /* referenced while the value lives in it */
        struct eng_cached_block *block; /* pinned while the value lives in it */
        struct eng_tset *tset;
        uint32_t next_table;
        uint64_t now_ms;
        struct eng_keyq_op qop;         /* waiting behind an earlier operation on the key */
        struct eng_keyq_node qnode;
        uint8_t *ikey;
        uint32_t ikey_len;
        uint8_t ikey_small[64];
        struct eng_sst_get sg;
};

/*
 * Looks (t, key) up. Returns 0: found now (g->value..., release with
 * eng_get_release); -SCREE_ENOTFOUND: absent now; 1: pending (a disk
 * read, or an earlier write or read-modify-write of the key still in
 * flight), g->done(g, res) runs later with 0 (found; release it), -SCREE_ENOTFOUND or an error
 * (-SCREE_ECORRUPT, -errno); or <0 at once (-EINVAL, -ENOMEM,
 * -SCREE_ERATELIMIT: the key's partition is at its table's read limit, or
 * -SCREE_ECORRUPT from a cached block). With -SCREE_ECORRUPT, g->damage
 * names the SSTable data block that holds the key's newest version and
 * failed to verify: that key cannot be read (until it is written again),
 * while keys in the table's other blocks can. The damage is logged once
 * per block and counted (stats.corrupt_blocks).
 */
int eng_shard_get(struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                  struct eng_get *g);

/* Drops what keeps a found value alive. Accepts a g that found nothing. */
void eng_get_release(struct eng_get *g);

/* ---- scans ---- */

/*
 * A scan walks one table's keys in this shard, in order, newest version of
 * each key only (tombstones and expired versions skipped), across the
 * memtables and SSTables of every tablet of the table the shard owns.
 *
 * Positions: a scan's start, end and resume are positions in the table's
 * order: its internal keys without the table id (catalog.h). For an
 * ordered table a position is the user key itself; for a hashed one it is
 * the key's hash (8 bytes, big-endian) followed by the user key, so a
 * hashed table is walked in hash order (a cursor for SCAN-like iteration;
 * eng_shard_scan_pos() builds one from a key). A scan of a table dropped
 * while it runs may end early: with the rows given so far, or with
 * -SCREE_ENOTFOUND when it moves on to another tablet of the table.
 *
 * The entries visited are those of the tables at the call's start plus,
 * possibly, writes that land while the scan waits for the disk; no version
 * written before the call is missed: while writes called before it are
 * still in flight (stalled, or a read-modify-write's), the scan waits for
 * them first (keyq.h, a barrier).
 */
struct eng_scan_item {
        const uint8_t *key;             /* user key */
        uint32_t key_len;
        const uint8_t *pos;             /* its position (see above) */
        uint32_t pos_len;
        const uint8_t *value;
        uint32_t value_len;
        uint64_t expiry_ms;             /* 0 = never */
        uint64_t seq;
};

/* Caller-provided, zeroed before its first scan; valid until done runs
 * (or the call returned). */
struct eng_scan {
        /* Runs for each entry, in order, borrowed for the call (also from
         * inside eng_shard_scan). Return 0 to go on, <0 to end the scan
         * with that error. Must not call into the shard. */
        int (*item)(struct eng_scan *sc, const struct eng_scan_item *it);
        void (*done)(struct eng_scan *sc, int res);
        void *ctx;
        /* Set by the caller: a damaged SSTable data block (sst_io.h) is
         * skipped -- its entries are not given, and a key whose newest
         * version it held may be missing or show an older version -- and
         * the scan goes on, instead of ending with -SCREE_ECORRUPT. Either
         * way each one met is logged (once per block) and counted. */
        bool skip_damaged;
        /* Once the scan ended (either way): damaged blocks met by this
         * call, and the first of them when damaged > 0. */
        uint32_t damaged;
        struct eng_sst_damage damage;
        /* Set by the caller: walk down. The scan gives the entries of
         * [start, end) in descending order, from the last position below
         * end, across the tablets from the last down; resume (below) is
         * then the position of the last entry given, and the next page is
         * the scan of [start, resume): pass resume as the next call's end
         * (exclusive, so that entry is not given again, and nothing lies
         * between it and the next one), with the same start. */
        bool reverse;
        /* Set by the caller: the scan is of keys this shard should own (a
         * range the caller routed here). Should it meet one of [start,
         * end) that another shard owns now (or that is moving there:
         * shard_move.h), it ends there with foreign and more set, resume
         * being that tablet's bound: the next page goes on from there
         * (routed again). Without it such tablets are passed over. */
        bool stop_at_foreign;
        bool foreign;
        /* Once the scan ended with 0: n items were given; when more is
         * true, resume[0..resume_len) is the position of the next entry
         * (pass it as the next scan's start, also with this sc) -- in
         * reverse, of the last entry given (pass it as the next scan's
         * end) -- owned by sc until eng_scan_release or the next scan
         * with sc. */
        uint32_t n;
        bool more;
        uint8_t *resume;
        uint32_t resume_len;
        /* internal */
        struct eng_shard *s;
        uint32_t table;                 /* catalog table id */
        uint32_t limit;
        uint32_t tablet;                /* index in the table's tablets being walked */
        /* the tablet being walked, for its read counts: valid while the
         * shard's catalog version is cur_version */
        struct eng_tablet *cur;
        uint64_t cur_version;
        bool walked;                    /* a tablet was opened: a vanished table is an error */
        bool hashed;
        uint64_t now_ms;
        struct eng_merge_iter *m;
        uint8_t *bounds;                /* ikeys: start, end (table-prefixed) */
        uint32_t start_len, end_len;
        bool has_end;
        struct eng_keyq_op qop;         /* waiting for the writes in flight at the call */
};

/*
 * Scans table t from position start (inclusive; start_len 0 = the table's
 * first key) to end (exclusive; NULL = the table's end), giving at most
 * limit entries (1..) to sc->item: in ascending order, or descending from
 * the end down when sc->reverse is set (then resume is the position of
 * the last entry given, the next page's end). start and end are borrowed for the
 * call. Returns 0: done now (sc->n, sc->more, sc->resume set); 1: pending
 * (the disk, or writes in flight called before it),
 * sc->done(sc, res) runs later with 0 or an error (-SCREE_ECORRUPT,
 * -errno, -ENOMEM, the item callback's error); or <0 at once (-EINVAL:
 * limit 0, a position longer than a key can be; -SCREE_ENOTFOUND: no such
 * live table; -ENOMEM; the item callback's error). Items given before an
 * error stand; the scan is over.
 */
int eng_shard_scan(struct eng_shard *s, uint32_t t, const void *start, uint32_t start_len,
                   const void *end, uint32_t end_len, uint32_t limit, struct eng_scan *sc);

/* Frees what the last scan with sc kept (the resume position). */
void eng_scan_release(struct eng_scan *sc);

/* Writes the position of user key (t, key) into dst (key_len + 8 bytes for
 * a hashed table, key_len for an ordered one) and returns its length, or
 * -SCREE_ENOTFOUND (no such table), -EINVAL (a hashed tuple key without
 * its hash parts) or -ENOMEM. Shard-local. */
long eng_shard_scan_pos(const struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                        uint8_t *dst);

/* ---- read-modify-write ---- */

/*
 * Decides a read-modify-write: cur is the key's current value (NULL when
 * absent or expired; borrowed for the call). Fill *out (kind ENG_MUT_PUT
 * with its key and table preset; point value at memory that stays valid
 * until done runs, e.g. in fn_arg; or set kind ENG_MUT_DEL) and return 1
 * to write it, 0 to write nothing, or <0 to fail with that error. fn runs
 * once per call.
 */
typedef int (*eng_rmw_fn)(void *arg, const struct eng_get *cur, struct eng_mutation *out);

struct eng_rmw {
        void (*done)(struct eng_rmw *r, int res);
        void *ctx;
        /* internal */
        eng_rmw_fn fn;
        void *fn_arg;
        uint32_t table;                 /* catalog table id */
        const void *key;
        uint32_t key_len;
        struct eng_get g;
        struct eng_write w;
        struct rx_task task;
        struct eng_keyq_op qop;         /* its key's place while in flight (held) */
        struct eng_keyq_node qnode;
        int res;
        bool in_call, held, oom;
};

/*
 * Reads (t, key), calls fn with the current value and writes what it
 * returns, with no other operation on the key in between: from the call
 * until its write is in the memtables (or fn chose to write nothing), the
 * key's later operations wait (see the top). key is borrowed until done
 * runs. Returns 0: done(r, res) runs later, res 1 when fn's
 * mutation was written and acknowledged, 0 when fn wrote nothing, fn's
 * error, or a read or write error. Returns <0 at once (-EINVAL, -ENOMEM,
 * -SCREE_ERATELIMIT: the key's partition is at its table's write limit; a
 * read-modify-write counts as one write, its read not counted).
 */
int eng_shard_rmw(struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                  eng_rmw_fn fn, void *fn_arg, struct eng_rmw *r);

/* ---- expiry ---- */

/* Caller-provided; valid until done runs. */
struct eng_expire {
        void (*done)(struct eng_expire *x, int res);
        void *ctx;
        /* internal */
        uint64_t expiry_ms;
        uint8_t *copy;                  /* the value, written back with the new expiry */
        struct eng_rmw r;
};

/*
 * Sets the expiry of (t, key) to expiry_ms (wall-clock ms; 0 clears it,
 * like PERSIST), keeping its value: a read-modify-write (no other write to
 * the key in between). key is borrowed until done runs. Returns 0:
 * done(x, res) runs later with 1 (the key was live and now has the new
 * expiry; an expiry at or before now deletes it), 0 (the key is absent or
 * expired: nothing written), or an error. Returns <0 at once (-EINVAL).
 */
int eng_shard_expire(struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                     uint64_t expiry_ms, struct eng_expire *x);

/* ---- per-partition rate limits ----
 *
 * A table's partition_reads_per_sec and partition_writes_per_sec options
 * (catalog.h; 0: none) bound the reads and the writes one partition takes
 * a second on this shard; an operation past them fails with
 * -SCREE_ERATELIMIT and does nothing. A partition is, for a hashed table,
 * the rows that share its hash prefix (ScyllaDB's partition key); for an
 * ordered table, one key. What counts:
 *   - eng_shard_get: one read of its key's partition;
 *   - eng_shard_write and eng_shard_prepare: one write of each partition
 *     the batch writes, however many of its rows; one partition at its
 *     limit refuses the whole batch, nothing counted. eng_shard_abort of
 *     a prepared part gives its counts back (within the same second);
 *   - eng_shard_rmw, eng_shard_expire: one write of the key's partition;
 *   - scans: nothing (a scan may cover many partitions): a caller that
 *     reads several rows of one partition counts it with
 *     eng_shard_rate_take.
 * Counted at the call, before any wait; a write that fails later (a full
 * disk) stays counted. Counts are kept per second in a fixed table of
 * per-partition counters (ratelimit.h): a partition at or under its limit
 * is never refused; one over it has the excess refused, though up to
 * twice the limit can pass across a second's boundary, and a partition
 * forced out of the table by busier ones starts counting afresh.
 */

/*
 * Counts one operation of kind on the partition holding position pos
 * (pos_len bytes, borrowed for the call; a position as eng_shard_scan's:
 * an internal key without its table id) of table t, against t's limit of
 * that kind. Returns 0 (counted; or t has no such limit or is not a live
 * table of the shard's catalog), -SCREE_ERATELIMIT (refused, not counted)
 * or -EINVAL (a bad kind). Shard-local.
 */
int eng_shard_rate_take(struct eng_shard *s, uint32_t t, const void *pos, uint32_t pos_len,
                        enum eng_ratelimit_kind kind);

/* ---- maintenance ---- */

/* Seals every non-empty memtable and flushes it; done(arg, res) runs when
 * all of them are in SSTables. Returns 0 or <0 (done won't run). */
int eng_shard_flush(struct eng_shard *s, void (*done)(void *arg, int res), void *arg);

/*
 * A major compaction: flushes every memtable, then merges each tablet's
 * SSTables into one, dropping tombstones and expired versions for good
 * (nothing older lies below). Background size-tiered compactions go on
 * meanwhile but never overlap it. done(arg, res) runs once every tablet is
 * done: 0, or the first error (-errno, -SCREE_ECORRUPT, the error that
 * stopped writes). Returns 0 or <0 (-ENOMEM; done won't run).
 */
int eng_shard_compact(struct eng_shard *s, void (*done)(void *arg, int res), void *arg);

/* Refreshes the gauges (memtable bytes, SSTables and their bytes, the log's
 * and the cache's counters) and returns the counters. Borrowed, valid until
 * the next call. Shard-local. */
const struct eng_shard_stats *eng_shard_stats(struct eng_shard *s);

/* Memory the shard holds outside the allocator: its 2 MiB memtable and
 * block-cache blocks carved from its reserved region (taken, or faulted
 * in and ready), in bytes. Blocks that came from malloc (past the region)
 * are the allocator's and not counted here. O(1). Shard-local. */
uint64_t eng_shard_mem_bytes(const struct eng_shard *s);

/* Memory one memtable entry takes besides its key and value bytes (node
 * header and links, its share of the hash index): MEMORY USAGE's
 * per-entry overhead, the same the memtable budget counts. */
#define ENG_ENTRY_OVERHEAD_BYTES 96u

/* ---- the catalog ---- */

/*
 * Installs catalog snapshot c (a reference is taken) if it is newer than
 * the shard's: the shard makes the tablets c gives it that it lacks
 * (empty), routes every later operation by c, and empties the tablets of
 * tables c no longer has: their memtables are dropped at once (their
 * memory counts no more; but for one a flush is writing, dropped when it
 * ends), and in the background their SSTables are removed from the
 * manifest, erased from the block cache and deleted, once no flush or
 * compaction of them runs. A tablet of this shard that c splits hands
 * its SSTables, memtables and flushed seq to its children at once, with
 * no data copied (shard_relayout.c), and the manifest records the
 * children. Operations already waiting re-route after their wait: a get
 * of a dropped table finds nothing, a scan of one ends with
 * -SCREE_ENOTFOUND. Returns 0 (installed, or c is not newer), -EINVAL (c
 * has another number of shards, or replaces a tablet of this shard other
 * than by splitting it here: merges and moves are not installed this
 * way), -EBUSY (a tablet c splits has a flush or compaction running --
 * it starts no new one -- or more memtables than its children could hold
 * -- it flushes first; call again) or -ENOMEM; nothing changed on error.
 *
 * Keys of a table the shard does not know: eng_shard_write, get, rmw and
 * scan return -SCREE_ENOTFOUND; a key another shard owns (or whose tablet
 * moves there: shard_move.h): -SCREE_EMOVED from write, get and rmw, and
 * a scan with stop_at_foreign ends there.
 * Shard-local.
 */
int eng_shard_set_catalog(struct eng_shard *s, struct eng_catalog *c);

/* The snapshot the shard routes by. Borrowed: valid until the next
 * eng_shard_set_catalog (take a reference to keep it). Shard-local. */
struct eng_catalog *eng_shard_catalog(const struct eng_shard *s);

/* Whether the shard still holds a tablet of table id (live, or dropped and
 * not yet emptied). Shard-local. */
bool eng_shard_holds_table(const struct eng_shard *s, uint32_t table);

/* Hot keys a tablet's stats give at most. */
#define ENG_TABLET_HOT_KEYS 3u

/* One tablet's size, an estimate for describing tables: rows counts every
 * version and tombstone not yet compacted away (SSTable entries plus
 * memtable entries); bytes are its SSTables' file bytes plus the memory
 * its memtables account for. */
struct eng_tablet_stats {
        uint32_t id;                    /* catalog tablet id */
        uint64_t bytes, rows;
        /* Traffic over the last second (eng_shard_tick): point gets and
         * scanned rows, entries written, and their key and value bytes. */
        uint64_t reads_ps, writes_ps, read_bytes_ps, write_bytes_ps;
        /* Reads and writes a second averaged over some 8 s (the
         * balancer's figure; carried along when the tablet moves). */
        uint64_t ops_avg;
        /* Its hottest keys, hottest first: internal keys (cut: only the
         * first ENG_HOT_KEY_BYTES kept) and estimated accesses per second
         * (a sampled Space-Saving count, engine/hotkeys.h). */
        uint32_t n_hot;
        struct eng_tablet_hot {
                uint64_t per_sec;
                uint32_t len;
                bool cut;
                uint8_t key[ENG_HOT_KEY_BYTES];
        } hot[ENG_TABLET_HOT_KEYS];
};

/* Writes the stats of this shard's live tablets of table id into
 * ret[0..cap), in key order, and returns how many it has (more than cap:
 * only cap were written). Shard-local. */
uint32_t eng_shard_table_stats(const struct eng_shard *s, uint32_t table,
                               struct eng_tablet_stats *ret, uint32_t cap);

/* Rolls the tablets' traffic counters over: what eng_shard_table_stats
 * gives as per second is what came between the last two calls, and
 * measures the share of a CPU the shard's thread used meanwhile. Call it
 * once a second, on the shard's thread. */
void eng_shard_tick(struct eng_shard *s);

/* A tablet that has grown past its table's split size (eng_shard_split_wanted). */
struct eng_split_want {
        uint32_t table, tablet;         /* catalog ids */
        bool by_load;                   /* else by size */
        uint64_t bytes;                 /* by size: what its SSTables hold of its range */
        uint32_t key_len;
        uint8_t key[ENG_CATALOG_MAX_START_BYTES];       /* the split point, an internal key */
};

/*
 * Of this shard's tablets whose table splits by size (options
 * split_by_size on, fewer than max_tablets tablets), the one whose SSTables
 * hold the most of its key range past split_size_bytes, and the key that
 * halves that data (a row's key, strictly inside the tablet; estimated
 * from the files' indexes, memtables left out: shard_split.c). Else, of
 * those whose table splits by load (split_by_load on), one that took at
 * least split_load_percent of a CPU (its share of the shard's operations
 * -- reads and writes, eng_shard_tick -- times the share of a CPU the
 * shard's thread used) in each of the last 5 seconds, at the median of its
 * sampled accessed keys -- unless one key carries its load (it is logged
 * instead). Returns 1 and *ret, 0 (none), or -ENOMEM. Costs a sort of at
 * most a few thousand index keys per tablet over the size. Shard-local.
 */
int eng_shard_split_wanted(struct eng_shard *s, struct eng_split_want *ret);

/* Neighbouring tablets to merge (catalog ids; first is the lower). */
struct eng_merge_want {
        uint32_t table, first, second;
        uint64_t bytes;                 /* what their SSTables and memtables hold */
};

/*
 * Of this shard's tablets whose table splits by size or by load and has
 * more than min_tablets tablets, two neighbours both on this shard that
 * have each taken at most MERGE_COLD_OPS operations a second for
 * merge_after_secs seconds in a row and together hold less than a
 * quarter of the table's split size: a merge that neither splits back by
 * size until it grows fourfold nor by load until it gets hot (the margin
 * that keeps split and merge from flapping; YDB's is 70% of the split
 * threshold, ScyllaDB's a fourfold size). 1 and *ret, or 0. Shard-local.
 */
int eng_shard_merge_wanted(struct eng_shard *s, struct eng_merge_want *ret);

/* The error that stopped writes, or 0. */
int eng_shard_error(const struct eng_shard *s);

/* Writes the path of SSTable file_id of the shard (as an eng_sst_damage
 * names it) into buf (size bytes, NUL-terminated, cut if short). Returns
 * what snprintf returns. Shard-local. */
int eng_shard_sst_path(const struct eng_shard *s, uint64_t file_id, char *buf, size_t size);

/* Whether the shard waits for disk space: its log (writes fail with
 * -ENOSPC now), its manifest or its last flush ran out of it and retries.
 * Shard-local. */
bool eng_shard_is_full(const struct eng_shard *s);

#endif
