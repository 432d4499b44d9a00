/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log recovery at shard start-up: replays the records of the segment
 * files the writer (wal.h) left in a directory, then trims the directory so
 * a new log can follow. Rules and their reasons: docs/format/wal.md,
 * "Recovery".
 *
 * The log is a prefix. Segments are read in id order, one at a time, whole,
 * with O_DIRECT reads of 1 MiB; each record goes to the caller's rec_fn.
 * The log ends at the first of: a segment whose records stop at bytes that
 * are not a zero record header, or at zeros followed by a valid record of
 * that segment (a torn tail; stale bytes of an older id after the zeros, as
 * a recycled file has, are not), a segment whose preparation a crash cut
 * (shorter than its header block, or a header block of zeros), a missing
 * segment id. Nothing after that end is replayed. The writer writes segment
 * N+1 only once all of N is durable, so a valid record after the end proves
 * that durable data was lost: -SCREE_ECORRUPT.
 *
 * Listing the directory, and in eng_wal_replay_trim() a stat(2), are
 * synchronous (eng_fs has no readdir): start-up only. Everything else goes
 * through the eng_fs. Shard-local.
 */
#ifndef SCREE_ENGINE_WAL_REPLAY_H
#define SCREE_ENGINE_WAL_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/fs.h"
#include "engine/wal_format.h"

#define ENG_WAL_REPLAY_CHUNK_BYTES (1u << 20)

struct eng_wal_replay_opts {
        const char *dir;                /* borrowed until done runs */
        uint32_t shard;                 /* segment headers must name this shard */
        uint64_t from_segment;          /* oldest segment still needed (manifest); older
                                         * files are ignored; 0: from the oldest found */
        bool salvage;                   /* skip damaged records instead of failing */
        /* With salvage: called with the replay's arg for each damaged place
         * skipped (the records from offset up to the next valid record of
         * the segment, or to its end), before the records after it; NULL:
         * only counted. */
        void (*skip_fn)(void *arg, uint64_t segment, uint64_t offset);
};

/* Called for each valid record in log order; rec and its payload are
 * borrowed for the call. Return 0 to go on, <0 to stop the replay with that
 * error. */
typedef int (*eng_wal_replay_record_fn)(void *arg, uint64_t segment, const struct eng_wal_record *rec);

struct eng_wal_replay_result {
        uint64_t segments;              /* segments of the log read (dropped ones not counted) */
        uint64_t records;
        uint64_t bytes;                 /* record bytes, headers and padding included
                                         * (as eng_wal_stats.bytes counts them) */
        uint64_t last_segment;          /* highest segment id found (>= from_segment); if
                                         * none, from_segment - 1 (0 for 0). The new log
                                         * starts at last_segment + 1 */
        uint64_t end_segment;           /* last segment of the log: where it ended, else the
                                         * last one read (first expected id - 1 if none) */
        uint64_t last_seq;              /* seq of the last record replayed (0 if none) */
        bool torn;                      /* the log ended in a torn tail ... */
        uint64_t torn_segment, torn_offset;     /* ... there (trim zeroes it) */
        uint64_t salvaged;              /* damaged places skipped (salvage only) */
        uint64_t dropped_segments;      /* segment files after the end of the log: cut
                                         * preparations and never-written reserves; they
                                         * hold no records (trim makes them empty segments) */
        uint64_t bad_segment, bad_offset;       /* on -SCREE_ECORRUPT: the damaged place */
};

/* result is borrowed for the call; on error it holds what was done so far. */
typedef void (*eng_wal_replay_done_fn)(void *arg, int res, const struct eng_wal_replay_result *result);

/*
 * Lists o->dir (files named <16 lowercase hex digits>.log, id >= 1 and >=
 * o->from_segment; other names are ignored), reads every such segment in id
 * order and calls rec_fn(arg, segment, rec) for each record of the log;
 * done(arg, res, result) runs once, from the loop, at the end. res:
 *   0;
 *   -SCREE_ECORRUPT: a damaged record that later records prove was durable
 *     (unless o->salvage: skipped and counted), a segment header that is
 *     neither valid nor an unfinished preparation, a header naming another
 *     shard or another id than its file name, a seq not above the previous
 *     one, or valid records after the end of the log (after a missing or
 *     unprepared segment, or -- unless o->salvage -- after a torn tail);
 *     result->bad_segment/bad_offset say where (the engine logs at debug
 *     level only: the caller reports it);
 *   -errno from the fs (open, read), -ENOMEM, or rec_fn's error.
 * Returns 0, -EINVAL (NULL dir or callbacks), -ENOMEM, or -errno if the
 * directory cannot be listed; then done won't run. Shard-local.
 */
int eng_wal_replay(struct eng_fs *fs, const struct eng_wal_replay_opts *o, eng_wal_replay_record_fn rec_fn,
                   eng_wal_replay_done_fn done, void *arg);

/*
 * Makes the directory hold exactly the log that replay found, durably (but
 * for the names of missing ids it creates: the new log's first directory
 * fsync, before it takes a record, makes them durable -- wal.h), so
 * that a new log can start at res->last_segment + 1 (eng_wal_opts
 * .first_segment) and a later replay reads the old log and the new one as
 * one: zeroes the torn tail from res->torn_offset to the end of its file,
 * and turns every id in (res->end_segment, res->last_segment] -- dropped
 * segments and missing ids -- into an empty segment (header block only, or
 * the valid header it had). Without this a later replay would see the new
 * log's records after the old end and refuse them as corruption.
 * A power cut during the trim leaves a directory that replays the same, so
 * replay and trim may simply run again. done(arg, res) runs once from the
 * loop: 0, -errno from the fs or stat(2), -SCREE_ECORRUPT if a dropped file
 * changed since the replay. Returns 0, -EINVAL (NULL arguments) or -ENOMEM
 * (done won't run).
 * REQUIRES: res is the result of a successful eng_wal_replay with the same o,
 * and nothing wrote to the directory since. Shard-local.
 */
int eng_wal_replay_trim(struct eng_fs *fs, const struct eng_wal_replay_opts *o,
                        const struct eng_wal_replay_result *res, void (*done)(void *arg, int res), void *arg);

#endif
