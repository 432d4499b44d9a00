/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commit-log writer of one shard. Records (format: wal_format.h,
 * docs/format/wal.md) go into preallocated segment files
 * <dir>/<segment id, 16 hex digits>.log through the shard's eng_fs.
 *
 * Group commit: at most one write+fdatasync is in flight. Appends that
 * arrive meanwhile accumulate in memory and share the next one, so one
 * fdatasync covers every write that came during the previous.
 * In batch mode a flush may also wait, briefly, for the writers
 * (eng_wal_write.writers) the last sync woke to come back, so they share
 * one sync rather than take turns in two (wal_gather.h).
 *   - ENG_WAL_SYNC_BATCH: eng_wal_append returns 0 and w->done(w, 0) runs
 *     once the record is durable (or with the error that stopped the log).
 *   - ENG_WAL_SYNC_PERIODIC: eng_wal_append returns 1: acknowledged at once;
 *     appends stay in memory until a timer writes and syncs them, once per
 *     period (or sooner once 1 MiB is buffered). A crash -- of the machine
 *     or of the process -- may lose the last period.
 * Segments: the next segment is prepared in the background (open, fallocate,
 * in batch mode zeros over the whole file but for the log's first segment,
 * header block, fdatasync, fsync of the directory so the new name is
 * durable) -- or from a recycled old segment's file (eng_wal_recycle:
 * header and a zero block, fdatasync, rename, directory fsync); a record
 * that does not fit rolls to it, and the segment it leaves ends with a zero
 * record header after its last record (docs/format/wal.md, "Recycled
 * segments"). A segment takes writes
 * only once prepared, so no record is acknowledged before its segment's name
 * is durable.
 * Out of space: a write or a segment preparation that fails with ENOSPC
 * (or writes short) does not stop the log. The appends waiting for what
 * cannot be written complete with -ENOSPC (not acknowledged), but their
 * records stay buffered; a preparation is undone (the new file removed);
 * a timer retries both (o.nospace_retry_ns, doubling up to 8x) and the
 * log goes on by itself once space returns, writing those records too.
 * eng_wal_is_full says whether an append now would fail so. A close tries
 * once more, then gives the unwritten records up.
 * Failure: any other failed write, a failed fdatasync or directory fsync
 * (or open of the directory) stops the log for good (a retried
 * fsync can report success for data the kernel already dropped): pending
 * and later appends get that error.
 * Shard-local.
 */
#ifndef SCREE_ENGINE_WAL_H
#define SCREE_ENGINE_WAL_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/fs.h"
#include "engine/wal_format.h"

struct eng_wal;
struct eng_wal_write;

enum eng_wal_sync {
        ENG_WAL_SYNC_BATCH,
        ENG_WAL_SYNC_PERIODIC,
        ENG_WAL_SYNC_MAX,
        ENG_WAL_SYNC_INVALID = -1,
};

struct eng_wal_opts {
        const char *dir;                /* existing directory; borrowed for the log's life */
        uint32_t shard;
        uint64_t first_segment;         /* id of the first segment this log creates, >= 1;
                                         * see eng_wal_open */
        uint64_t segment_bytes;         /* multiple of 4096; default 32 MiB */
        enum eng_wal_sync sync;
        uint64_t period_ns;             /* periodic mode; default 10 ms */
        uint64_t nospace_retry_ns;      /* first retry after running out of space; default
                                         * 1 s, doubling up to 8 s */
};

#define ENG_WAL_DEFAULT_SEGMENT_BYTES (32u << 20)
#define ENG_WAL_DEFAULT_PERIOD_NS (10 * UINT64_C(1000000))
#define ENG_WAL_DEFAULT_NOSPACE_RETRY_NS (1000 * UINT64_C(1000000))

/* Caller-provided per batch-mode append; valid until done runs. */
struct eng_wal_write {
        void (*done)(struct eng_wal_write *w, int res);
        void *ctx;
        /* Set by the caller: how many writers wait for this record's
         * acknowledgement (a group's; 0: none, a record logged for its own
         * sake), for the gathering (wal_gather.h). */
        uint32_t writers;
        /* internal */
        struct eng_wal_write *next;
        uint64_t segment;
        uint64_t end_off;
};

struct eng_wal_stats {
        uint64_t appends, bytes, writes, syncs, segments;
        /* Bytes written to segment files: headers and whole 4 KiB blocks,
         * counting a partial last block again each time a flush rewrites
         * it (what the disk sees, not the records' size). */
        uint64_t written_bytes;
        uint64_t recycled;              /* segments prepared from a recycled file */
        uint64_t zeroed_bytes;          /* zeros written over new segments (batch mode);
                                         * counted in written_bytes too */
        uint64_t buffers;               /* write buffers allocated */
        uint64_t marks;                 /* sync marks written (wal_format.h); counted in
                                         * writes and written_bytes too */
        uint64_t nospace;               /* writes and segment preparations that ran out of space */
        uint64_t nospace_retries;       /* retries after that */
        uint64_t gathers;               /* batch: flushes that waited for writers
                                         * (wal_gather.h) */
};

/* Old segment files a log keeps for reuse (eng_wal_recycle). */
#define ENG_WAL_RECYCLE_MAX 2u

/*
 * Starts a log; the first segment is prepared in the background (appends
 * may come at once). The log opens o->dir (O_RDONLY | O_DIRECTORY) and
 * keeps it open until closed, to fsync it after creating each segment. Segments are created, never reopened: a file that
 * already has the id of a new segment stops the log with -EEXIST (a
 * recycled file is renamed to ids above every file, by the same rule). At
 * start-up the shard replays the old log (wal_replay.h), trims the
 * directory with eng_wal_replay_trim(), and starts the new log at the
 * replay's last_segment + 1 -- above every segment file in the directory,
 * and right after the old log's last one, so that a later replay reads
 * both as one log. Seqs must go on above the replay's last_seq.
 * Returns 0 and *ret (close with eng_wal_close), -EINVAL for bad options
 * (first_segment 0 included), -ENOMEM, or the error of submitting the
 * directory's open. Shard-local.
 */
int eng_wal_open(struct eng_fs *fs, const struct eng_wal_opts *o, struct eng_wal **ret);

/*
 * Appends one record of payload (copied) with sequence number seq (must
 * increase). Returns 0 (batch: w->done will run), 1 (periodic: acknowledged
 * now; w is not used and may be NULL), -E2BIG if the record cannot fit in a
 * segment, or the error that stopped the log. Shard-local.
 */
int eng_wal_append(struct eng_wal *wal, struct eng_wal_write *w, uint64_t seq, const void *payload,
                   uint32_t len);

/*
 * eng_wal_append for a record of any type but MARK (the log writes marks
 * itself): type's payload (copied) with seq (must increase). durable:
 * acknowledged only once synced, in periodic mode too -- the record goes
 * out with the next write, started now, not at the period's end -- so
 * w->done runs then and the call returns 0; otherwise as eng_wal_append
 * (periodic: 1, acknowledged now). Returns also -EINVAL (a MARK or an
 * unknown type, or durable without w). Shard-local.
 */
int eng_wal_append_record(struct eng_wal *wal, struct eng_wal_write *w,
                          enum eng_wal_record_type type, uint64_t seq, const void *payload,
                          uint32_t len, bool durable);

/*
 * Flushes and syncs what is buffered, closes the segments and frees the log;
 * done(arg, res) runs when all that finished (res: 0 or the log's error).
 * Pending batch appends complete first. Returns 0, or <0 and done won't run.
 * Shard-local.
 */
int eng_wal_close(struct eng_wal *wal, void (*done)(void *arg, int res), void *arg);

const struct eng_wal_stats *eng_wal_stats(const struct eng_wal *wal);

/*
 * Offers the file of old segment `segment` for reuse instead of deleting it:
 * a later segment is then prepared by writing its header (and a zero block)
 * into that file and renaming it to the new name, not by creating and
 * fallocating a file -- so group commits write into already-written blocks
 * and their fdatasync commits no extent conversion. The log keeps at most
 * ENG_WAL_RECYCLE_MAX such files; one taken but never reused stays under its
 * old name (start-up deletes names below the manifest's log segment).
 * Returns 1: taken, the caller must leave the file alone; 0: not taken (pool
 * full, a file of the old log -- id below opts.first_segment, possibly of
 * another size --, a segment the log still holds, or the log is failed or
 * closing): the caller deletes it as before.
 * REQUIRES: no replay needs `segment` any more (the manifest's log segment
 * is durably above it). Shard-local.
 */
int eng_wal_recycle(struct eng_wal *wal, uint64_t segment);

/* Whether the log is out of space where appends go now (a write or the
 * current segment's preparation failed with ENOSPC; the retry timer is
 * armed): an append now is buffered but completes with -ENOSPC, not
 * acknowledged. Shard-local. */
bool eng_wal_is_full(const struct eng_wal *wal);

/* Whether the log has nothing to write now or later on its own: no I/O in
 * flight, nothing pending, no segment being prepared or zeroed, no sync
 * mark due. For tests that inject the next write's failure. Shard-local. */
bool eng_wal_is_quiet(const struct eng_wal *wal);

/* Id of the segment that receives appends now: after an append, the one
 * holding that record. Shard-local. */
uint64_t eng_wal_segment(const struct eng_wal *wal);

#endif
