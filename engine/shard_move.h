/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving a tablet between two shards of one machine (ScyllaDB's
 * intra-node migration): no row is copied, the files change hands.
 *
 *   1. The source (eng_shard_move_out) stops compacting the tablet,
 *      flushes its memtables and copies what its cache holds of the
 *      tablet's files (shard_warm.h); then it refuses every new operation on the
 *      tablet's keys (-SCREE_EMOVED: the caller retries at the owner its
 *      catalog names, which is still the source until step 3 -- so it
 *      waits), lets the writes already logged in, and flushes again until
 *      the tablet's memtables are empty. It hands over its SSTables
 *      (struct eng_handoff): they stay in its directory, untouched.
 *   2. The target (eng_shard_move_in) hard-links each file into its own
 *      directory under its id (unique across shards; a file it holds
 *      already -- a split left it shared with a sibling that moved here
 *      first -- it shares), syncs the directory, opens them,
 *      raises its seq above theirs (they carry the source's seqs; its own
 *      next writes must be newer), and records the tablet -- not routed
 *      yet -- in its manifest.
 *   3. The caller saves the catalog with the tablet on the target and
 *      installs it on every shard (eng_shard_set_catalog): the target
 *      routes to the tablet; the source drops it (its links go; the
 *      target's stay), answering -SCREE_EMOVED meanwhile.
 * If step 2 or 3 fails, eng_shard_move_in_undo drops the target's copy
 * and eng_shard_move_out_undo makes the source serve the tablet again.
 *
 * A crash at any point leaves one copy that counts: before the catalog
 * is saved, the catalog names the source, whose files and manifest are
 * as they were, and the target's next open drops its copy (a manifest
 * tablet the catalog does not give it); after, the target's manifest has
 * the tablet (recorded before the save) and the source's next open drops
 * its own and skips the tablet's commit-log entries (all flushed into the
 * files handed over).
 *
 * Threads: move_out and its undo on the source shard, move_in and its
 * undo on the target shard. The handoff is written by the source before
 * done runs and only read afterwards (by the target, through a message).
 */
#ifndef SCREE_ENGINE_SHARD_MOVE_H
#define SCREE_ENGINE_SHARD_MOVE_H

#include <stdint.h>

#include "engine/fs.h"
#include "engine/manifest.h"
#include "reactor/loop.h"

struct eng_shard;
struct eng_tablet;
struct eng_sst_table;

/* What a tablet moving out hands over. */
struct eng_handoff {
        uint32_t tablet, table;
        uint64_t max_seq;                       /* the highest seq its files hold */
        uint32_t n_files;
        struct eng_manifest_table *files;       /* heap; the source's file ids */
        char *dir;                              /* heap: the source shard's directory */
        uint64_t flushed_bytes;                 /* what the move's flushes wrote */
        uint64_t cut_ns;                        /* when its keys were turned away (time_now_ns) */
        uint64_t ops_avg;                       /* its traffic (struct eng_tablet's) */
        /* Its entries of the source's cache (shard_warm.h), or NULL; the
         * target takes it. */
        struct eng_warm *warm;
};

/* Frees h's arrays and what it carries (h itself is the caller's). */
void eng_handoff_fini(struct eng_handoff *h);

struct eng_move_out {
        /* Once: res 0 with h filled, or <0 (the tablet serves again). */
        void (*done)(struct eng_move_out *mo, int res);
        void *ctx;
        struct eng_handoff h;
        /* internal */
        struct eng_shard *s;
        struct eng_tablet *t;
        struct rx_timer timer;
        int phase;
        uint64_t flush_bytes_at_start, started_ns, cut_ns;
        struct eng_warm *warm;          /* its cache entries, being copied */
        bool warm_done;
};

/*
 * Starts moving tablet out of shard s (step 1 above). Returns 0 (done
 * runs later), -SCREE_ENOTFOUND (s has no such live, routed tablet) or
 * -EBUSY (it is moving already).
 */
int eng_shard_move_out(struct eng_shard *s, uint32_t tablet, struct eng_move_out *mo);

/* After move_out's done(0): the move is off; the tablet serves again. */
void eng_shard_move_out_undo(struct eng_shard *s, uint32_t tablet);

struct eng_move_in {
        void (*done)(struct eng_move_in *mi, int res);  /* once */
        void *ctx;
        /* internal */
        struct eng_shard *s;
        struct eng_handoff *h;
        struct eng_tablet *t;
        uint32_t next;
        uint64_t *ids;
        /* Per file: the table of it the shard has open already (a file a
         * split left shared, one of whose tablets came here before), held
         * until the tablet's set takes it; NULL: linked and opened. */
        struct eng_sst_table **shared;
        struct eng_move_in *next_arrival;       /* s->arrivals */
        bool clearing;                          /* removing a stale file by the name */
        struct eng_fs_op op;
        struct eng_manifest_write mw;
        char src[4096], dst[4096];
};

/*
 * Takes over the tablet h hands over (step 2), h borrowed until done;
 * once it took the tablet over, it takes h->warm (its cache entries go
 * into s's cache, in the background).
 * A file the shard holds already (the tablet's split sibling came here
 * first, sharing it) is shared, not linked again. Returns 0 (done runs
 * later: 0, or <0 with nothing left behind but files the next start
 * deletes), -EBUSY (an earlier stay of the tablet on s is still being
 * dropped, another arrival or a compaction's deletion holds one of its
 * files: try again shortly), -EEXIST (a file of the shard's has the id of
 * another of the tablet's: both written before per-shard file ids) or
 * -SCREE_ENOTFOUND (s's catalog has no such tablet).
 */
int eng_shard_move_in(struct eng_shard *s, struct eng_handoff *h, struct eng_move_in *mi);

/* After move_in's done(0): the move is off; the copy is dropped. */
void eng_shard_move_in_undo(struct eng_shard *s, uint32_t tablet);

#endif
