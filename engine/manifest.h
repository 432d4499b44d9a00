/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shard's manifest on disk: <dir>/MANIFEST, a snapshot of the shard's
 * durable state followed by the edits made since (format:
 * manifest_format.h, docs/format/manifest.md), all through the shard's
 * eng_fs.
 *
 * Start-up: eng_manifest_load reads the file into a state (a torn tail --
 * edits never acknowledged -- is cut); eng_manifest_create then writes a
 * fresh file from that state (or from a new one on first start), so no
 * torn tail ever stays in the file.
 *
 * Edits: eng_manifest_apply validates an edit, applies it to the in-memory
 * state at once and appends its record. Group commit as in wal.h: one
 * write+fdatasync in flight; edits arriving meanwhile share the next one;
 * an edit is acknowledged once durable. When the file has grown to
 * ENG_MANIFEST_REWRITE_FACTOR times its snapshot (and at least
 * ENG_MANIFEST_REWRITE_MIN_BYTES), the state is written as a new snapshot
 * to <dir>/MANIFEST.tmp, fdatasynced, renamed over MANIFEST and the
 * directory fsynced; appends continue in the new file. Edits pending at
 * that point are in the snapshot and are acknowledged when it is
 * published (the directory fsync done).
 *
 * Out of space: an append or a rewrite that fails with ENOSPC (or writes
 * short) is undone (a rewrite's MANIFEST.tmp removed) and retried by a
 * timer (1 s, doubling up to 8 s); its edits wait meanwhile, and
 * eng_manifest_is_full says so. The first snapshot (eng_manifest_create)
 * fails instead, leaving no MANIFEST.tmp. See eng_manifest_stop_retrying.
 * Failure: any other failed write, fsync, open or rename (or no memory for a
 * rewrite's snapshot) stops the manifest for good -- a retried fsync can
 * report success for data the kernel dropped: pending and later edits get
 * that error. The file on disk then still reads back to every
 * acknowledged edit.
 * Shard-local.
 */
#ifndef SCREE_ENGINE_MANIFEST_H
#define SCREE_ENGINE_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/fs.h"
#include "engine/manifest_format.h"

#define ENG_MANIFEST_REWRITE_FACTOR 4u
#define ENG_MANIFEST_REWRITE_MIN_BYTES (64u * 1024u)

struct eng_manifest;

/* Caller-provided per edit; valid until done runs. */
struct eng_manifest_write {
        void (*done)(struct eng_manifest_write *w, int res);
        void *ctx;
        /* internal */
        struct eng_manifest_write *next;
};

typedef void (*eng_manifest_load_cb)(void *arg, int res, const struct eng_manifest_state *state);

struct eng_manifest_stats {
        uint64_t edits, writes, syncs;
        uint64_t marks;                 /* sync marks written behind the last edit */
        uint64_t snapshots;             /* files written and published, the first included */
        uint64_t file_bytes;            /* durable bytes of the current file */
        uint64_t snapshot_bytes;        /* its header and snapshot */
        uint64_t nospace, nospace_retries;      /* chains that ran out of space; retries */
};

/*
 * Reads <dir>/MANIFEST (dir borrowed for the call). done(arg, res, state)
 * runs later, from the loop: res 0 and state (borrowed: valid only during
 * done; copy it with eng_manifest_state_copy to keep it), or res < 0 and
 * state NULL: -SCREE_ENOTFOUND (no manifest: a new shard), -SCREE_ECORRUPT
 * (bad header, damaged record that a later one says was durable, unknown
 * record type, bad length, an edit that does not apply; logged at debug
 * level with the file and offset), -SCREE_EUNSUPPORTED (newer version), an
 * I/O error, -ENOMEM. A torn tail is cut silently. MANIFEST.tmp is never
 * read. Returns 0, or < 0 (-ENOMEM, a submit error) and done never runs.
 * Shard-local.
 */
int eng_manifest_load(struct eng_fs *fs, const char *dir, eng_manifest_load_cb done, void *arg);

/*
 * Starts a manifest in dir (borrowed for the call) holding a copy of state:
 * writes it as a fresh snapshot through MANIFEST.tmp, rename and directory
 * fsync, replacing any MANIFEST. Returns 0 and *ret at once -- edits may be
 * applied right away; they are written after the snapshot -- then
 * done(arg, res) runs from the loop when the snapshot is published (res 0)
 * or creating failed (res < 0: the manifest is stopped; close it). Returns
 * -EINVAL if state fails eng_manifest_state_check or has an unranged
 * entry (eng_manifest_state_is_ranged: fill it in first), -E2BIG if its snapshot
 * is too large, -ENOMEM, or a submit error; then nothing was created and
 * done never runs. Shard-local.
 */
int eng_manifest_create(struct eng_fs *fs, const char *dir, const struct eng_manifest_state *state,
                        void (*done)(void *arg, int res), void *arg, struct eng_manifest **ret);

/*
 * Validates e (borrowed for the call) against the current state, applies
 * it and queues its record. Returns 0: the state has changed and
 * w->done(w, res) will run from the loop -- res 0 once the edit is durable,
 * or the error that stopped the manifest. Or, with nothing changed and w
 * unused: -EINVAL (e does not apply, see eng_manifest_state_apply; or
 * e->implicit_entries), -E2BIG,
 * -ENOMEM, -SCREE_ESHUTDOWN (closing), or the error that stopped the
 * manifest. Shard-local.
 */
int eng_manifest_apply(struct eng_manifest *m, const struct eng_manifest_edit *e,
                       struct eng_manifest_write *w);

/* Whether the manifest has nothing to write now or on its own later (no
 * I/O in flight, no edit pending, no sync mark due). For tests that
 * inject the next write's failure. Shard-local. */
bool eng_manifest_is_quiet(const struct eng_manifest *m);

/* The current state, every applied edit included (durable or not).
 * Borrowed: valid until the next eng_manifest_apply or close. Shard-local. */
const struct eng_manifest_state *eng_manifest_state(const struct eng_manifest *m);

/*
 * Writes what is pending (unless stopped), waits for I/O in flight, closes
 * the files and frees m; done(arg, res) runs from the loop when finished
 * (res 0, or the error that stopped the manifest). Pending edits complete
 * before done. Returns 0, or -EALREADY (and done never runs). Shard-local.
 */
int eng_manifest_close(struct eng_manifest *m, void (*done)(void *arg, int res), void *arg);

/* Whether edits wait for space: a chain ran out of it and waits for its
 * retry. Shard-local. */
bool eng_manifest_is_full(const struct eng_manifest *m);

/*
 * For an owner about to close: no more waiting for space. If a chain
 * waits for its retry, it is tried once more now; if that, or any later
 * write, runs out of space, the waiting edits complete with -ENOSPC and
 * the manifest takes no more edits (eng_manifest_apply: -ENOSPC). The
 * file still reads back to every acknowledged edit, so eng_manifest_close
 * then reports 0. eng_manifest_close does this too. Shard-local.
 */
void eng_manifest_stop_retrying(struct eng_manifest *m);

const struct eng_manifest_stats *eng_manifest_stats(const struct eng_manifest *m);

#endif
