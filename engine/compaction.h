/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Size-tiered compaction of one tablet: which tables to merge (the picker,
 * pure) and the job that merges them into one new SSTable.
 *
 * A tablet's tables are ordered newest first by their highest seq, and for
 * every key the tables holding it are in the order of its versions: each
 * holds only versions newer than the next one's. Most tablets' tables
 * cover disjoint seq ranges; a merge of two tablets (shard_relayout.c)
 * interleaves the ranges of tables that share no key. A compaction
 * merges ADJACENT tables only, so the output takes their place in that
 * order (its highest seq is its newest input's) and the order stays
 * valid; a run reaching the oldest table holds every older version of
 * its keys (bottommost). The picker follows RocksDB's universal
 * compaction: first, when the tables newer than the oldest add up to at
 * least max_space_amp_pct% of the oldest's size, all of them are merged
 * (bottommost: stale versions and tombstones go, which bounds the space
 * and the blocks a cold read touches). Else, starting from the newest
 * table, a run grows while the next older table is at most
 * (100 + size_ratio_pct)% of the run's accumulated size; a run of at least
 * min_merge tables is compacted. Otherwise, when the tablet holds more
 * than max_tables tables, the newest min_merge are.
 *
 * The job (eng_compaction_start) merges its input tables through a
 * merge_iter.h merge in compaction view -- the newest version of each key;
 * tombstones and expired versions dropped only when the inputs are
 * bottommost -- and writes one SSTable with eng_sst_write_start(), at a
 * byte rate. It streams its inputs (sst_seq.h): large reads, one ahead
 * per input, past the block cache, so a compaction neither floods the
 * disk with 4 KiB reads beside the point reads nor evicts their blocks.
 * The writer's source pulls from the asynchronous merge: when the merge
 * waits for a read, the source returns ENG_SST_PENDING and resumes the
 * writer when the read is in. The new table is not part of
 * the tablet until the caller records it (the manifest) and drops the
 * inputs; a failed job removes its partial output.
 *
 * Shard-local: the job runs on the fs's loop, like the tables it reads.
 */
#ifndef SCREE_ENGINE_COMPACTION_H
#define SCREE_ENGINE_COMPACTION_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/merge_iter.h"
#include "engine/sst_io.h"
#include "engine/sst_seq.h"

/* ---- picking ---- */

/* What the picker knows of a table. */
struct eng_compact_table {
        uint64_t file_size;
        uint64_t min_seq, max_seq;
};

/* Zero means "default" for every field. */
struct eng_compact_opts {
        uint32_t size_ratio_pct;        /* default 1 (%) */
        uint32_t min_merge;             /* tables in a run worth merging; default 4, at least 2 */
        uint32_t max_tables;            /* more than this forces a merge; default 12 */
        uint32_t max_space_amp_pct;     /* newer tables' bytes vs the oldest's; default 200;
                                         * UINT32_MAX: never */
};

#define ENG_COMPACT_DEFAULT_SIZE_RATIO_PCT 1u
#define ENG_COMPACT_DEFAULT_MIN_MERGE 4u
#define ENG_COMPACT_DEFAULT_MAX_TABLES 12u
#define ENG_COMPACT_DEFAULT_MAX_SPACE_AMP_PCT 200u

/* Tables [first, first + n) of the newest-first list. */
struct eng_compact_pick {
        uint32_t first, n;
        bool bottommost;                /* the run includes the oldest table */
};

/* True if the n tables are newest first (max_seq not increasing) and
 * each has min_seq <= max_seq: what can be checked of the order above
 * without reading keys. For asserts. Pure; any thread. */
bool eng_compact_tables_check(const struct eng_compact_table *tables, uint32_t n);

/*
 * Picks a size-tiered compaction of a tablet's n tables (borrowed, newest
 * first); o may be NULL (defaults). Returns 1 and *ret, or 0 when nothing
 * should be merged. REQUIRES: eng_compact_tables_check(). Pure; any thread.
 */
int eng_compact_pick(const struct eng_compact_table *tables, uint32_t n,
                     const struct eng_compact_opts *o, struct eng_compact_pick *ret);

/* A major compaction: all n tables, bottommost. Returns 1 and *ret, or 0
 * when n is 0. (One table is picked too: rewriting it at the bottom drops
 * its tombstones and expired versions.) Pure; any thread. */
int eng_compact_pick_major(uint32_t n, struct eng_compact_pick *ret);

/* ---- the job ---- */

#define ENG_COMPACT_READ_CACHED UINT32_MAX

struct eng_compaction;

struct eng_compaction_opts {
        /* The tables to merge, adjacent in their tablet's order, newest first;
         * borrowed for the call: the job references them until done. */
        struct eng_sst_table *const *inputs;
        uint32_t n_inputs;
        uint64_t now_ms;                /* wall-clock ms: what has expired */
        bool bottommost;                /* nothing older lies below the inputs */
        /* Only keys in [lo, hi) are merged (borrowed for the call; lo_len
         * 0: from the first, hi NULL: to the last): a tablet's range,
         * since a tablet made by a split shares its parent's files, whose
         * other keys belong to its sibling. */
        const void *lo, *hi;
        size_t lo_len, hi_len;
        /* Each input is read in runs of blocks of up to this many bytes,
         * one read each, past the block cache (sst_seq.h): a multiple of
         * 4096; 0 = ENG_SST_SEQ_DEFAULT_CHUNK; ENG_COMPACT_READ_CACHED =
         * block by block through the cache, as point reads do. Each
         * input holds up to two chunks while the job runs. */
        uint32_t readahead_bytes;
        /* The output: path (borrowed until done runs), table.file_id,
         * table.tablet, chunk_bytes, rate_bytes_per_sec (0 = unthrottled). */
        struct eng_sst_write_opts out;
};

struct eng_compaction_result {
        bool has_output;                /* false: every version was dropped, no file made */
        uint64_t file_size;             /* the output's; = bytes_written */
        /* The output's properties (smallest/largest borrowed until the job
         * is freed). Its min/max seq are those of the versions it kept. */
        struct eng_sst_props props;
        /* The inputs' seq range: what the output stands for in the tablet. */
        uint64_t min_seq, max_seq;
        uint64_t bytes_read;            /* the inputs' file sizes */
        uint64_t bytes_written;
        uint64_t entries_in;            /* the inputs' versions */
        uint64_t entries_out;
        /* Versions left out: shadowed + tombstones + expired (the merge's
         * counters); entries_in = entries_out + dropped on success. */
        uint64_t dropped;
        struct eng_merge_stats merge;
        uint64_t throttled_ns;          /* waiting for the rate */
};

typedef void (*eng_compaction_cb)(struct eng_compaction *job, int res, void *arg);

/*
 * Starts merging o->inputs into one table at o->out.path. done(job, res,
 * arg) runs once, later, from the loop: res 0 when the output is complete,
 * durable and closed -- or when every version was dropped and no file was
 * made (result.has_output false) --, else the error of a read (-errno,
 * -SCREE_ECORRUPT), of the write (-errno) or -ENOMEM; a failed job has
 * removed its partial output (best effort). Returns 0 and *ret, -EINVAL
 * (no inputs, an input with min_seq above max_seq, bad
 * output options) or -ENOMEM (done won't run). Shard-local.
 */
int eng_compaction_start(struct eng_fs *fs, const struct eng_compaction_opts *o,
                         eng_compaction_cb done, void *arg, struct eng_compaction **ret);

/* What the job did; complete once done ran. Borrowed, valid until free. */
const struct eng_compaction_result *eng_compaction_result(const struct eng_compaction *job);

/* Accepts NULL. REQUIRES: done ran. Shard-local. */
void eng_compaction_free(struct eng_compaction *job);

#endif
