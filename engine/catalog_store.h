/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the catalog (catalog.h) lives: the one file <dir>/CATALOG, an
 * eng_catalog_encode encoding, replaced whole and crash-safely: the new
 * snapshot goes to <dir>/CATALOG.tmp (created or truncated), is written
 * in full and fdatasync'ed, then renamed over CATALOG and the directory
 * fsync'ed. A crash at any point leaves CATALOG either the old snapshot
 * or the new one, whole; CATALOG.tmp is never read and is overwritten by
 * the next write (docs/format/catalog.md, "The CATALOG file").
 *
 * Two halves. At start-up, before any loop runs, the main thread reads
 * and (for a new directory) writes the file with plain blocking syscalls:
 * eng_catalog_store_read, eng_catalog_store_write_sync. At run time one
 * shard (shard 0, which serialises catalog changes) saves each new
 * snapshot through an eng_catalog_store on its loop, through eng_fs, and
 * publishes the snapshot to the other shards once its save completes.
 * The store runs one write sequence at a time; saves arriving meanwhile
 * wait, and the next sequence writes only the newest of them.
 */
#ifndef SCREE_ENGINE_CATALOG_STORE_H
#define SCREE_ENGINE_CATALOG_STORE_H

#include <stddef.h>
#include <stdint.h>

#define ENG_CATALOG_STORE_NAME "CATALOG"
#define ENG_CATALOG_STORE_TMP_NAME "CATALOG.tmp"

struct eng_catalog;
struct eng_catalog_store;
struct eng_fs;
struct rx_loop;

/* ---- start-up: plain syscalls, main thread ---- */

/*
 * Reads <dir>/CATALOG (dir borrowed) whole and decodes it. Returns 0 and
 * *ret (caller unrefs; written only on success); -SCREE_ENOTFOUND when
 * there is no CATALOG (a new directory, or one from before catalogs);
 * -SCREE_ECORRUPT or -SCREE_EUNSUPPORTED as eng_catalog_decode; or
 * -errno. On failure err (err_len bytes; may be 0) holds a message that
 * names the file and what was wrong, for the user. A CATALOG.tmp is never
 * read. Main thread (any thread: it shares nothing).
 */
int eng_catalog_store_read(const char *dir, struct eng_catalog **ret, char *err, size_t err_len);

/*
 * Writes c (borrowed) as dir's catalog, crash-safely: CATALOG.tmp
 * (O_CREAT | O_TRUNC, mode 0644) written in full (a write that makes no
 * progress is -ENOSPC), fdatasync, close, rename over CATALOG, fsync of
 * dir. Returns 0 (CATALOG is c, durably) or -errno, with err set as for
 * eng_catalog_store_read. A failure before the rename removes CATALOG.tmp
 * and leaves CATALOG as it was (dir is opened before CATALOG.tmp is
 * made, so that it cannot fail after the rename). A failed fsync of dir
 * comes after the rename: CATALOG then names c, but whether that name is
 * durable is unknown, and the caller must not go on as if it were.
 * Main thread (blocking).
 */
int eng_catalog_store_write_sync(const char *dir, const struct eng_catalog *c, char *err,
                                 size_t err_len);

/* ---- run time: on one shard's loop, through eng_fs ---- */

/* Caller-provided; valid until done runs (or save returned other than 0). */
struct eng_catalog_save {
        void (*done)(struct eng_catalog_save *w, int res);
        void *ctx;                      /* the caller's */
        /* internal */
        struct eng_catalog_save *next;
        uint64_t version;
        uint64_t seq;                   /* the write sequence to make it durable */
};

/*
 * A store for the catalog of dir (copied) that writes through fs on loop
 * (both borrowed: they must outlive the store). Nothing is read or
 * written until the first save, and the store assumes nothing of what
 * CATALOG holds. Returns 0 and *ret (close with eng_catalog_store_close)
 * or -ENOMEM. Shard-local: the store belongs to the calling shard (fs's
 * loop) and is used only there.
 */
int eng_catalog_store_new(struct rx_loop *loop, struct eng_fs *fs, const char *dir,
                          struct eng_catalog_store **ret);

/*
 * Saves snapshot c durably as CATALOG, taking a reference to c (the
 * caller keeps its own) that the store drops once c is encoded or a
 * newer save supersedes it. Returns:
 *   0   pending: w->done(w, res) runs exactly once, later, from the loop
 *       (never inside this call), with res 0 once a snapshot with a
 *       version >= c's is durable in CATALOG, or res < 0 (below);
 *   1   done now: a snapshot with a version >= c's is already durable
 *       (saved by this store); w->done never runs, w is free again;
 *   <0  refused, and w->done never runs: -SCREE_ESHUTDOWN (closing), or
 *       the error that stopped the store.
 * One write sequence runs at a time; the saves that arrive meanwhile wait,
 * and the next sequence writes only the newest of them, which completes
 * them all (coalescing). Waiters complete in no promised order.
 *
 * Errors reported to done (CATALOG is then still the last durable
 * snapshot, and the store goes on: a later save may succeed):
 *   -ENOSPC  out of space: an open, write or fdatasync of CATALOG.tmp
 *            failed with ENOSPC, or a write made no progress;
 *   -errno   the open, write, fdatasync or close of CATALOG.tmp failed
 *            otherwise, or -ENOMEM encoding it.
 * In both cases CATALOG.tmp is removed (best effort: CATALOG.tmp is
 * never read, and the next sequence truncates it) and the saves the
 * failed sequence was to make durable get the error: those waiting when
 * it started, and those that arrived during it with a version no newer
 * than its own. The others wait for the next sequence. (An op the fs
 * refuses to submit, -SCREE_EFULL say, fails like that op; a rename
 * never submitted fails like a step before it.) A failed rename or
 * directory fsync -- whatever
 * its errno, ENOSPC included -- leaves it unknown which snapshot CATALOG
 * durably names: the store stops, and every save waiting then and every
 * later one gets that error (a save then returns it; close reports it).
 * (After a failed rename CATALOG.tmp is removed too, best effort.) Start
 * again from eng_catalog_store_read to learn what CATALOG holds.
 *
 * REQUIRES: the snapshots saved through one store are of one lineage
 * (equal versions are equal snapshots). Shard-local.
 */
int eng_catalog_store_save(struct eng_catalog_store *st, struct eng_catalog *c,
                           struct eng_catalog_save *w);

/* The version of the newest snapshot this store made durable; 0 before
 * its first. Shard-local. */
uint64_t eng_catalog_store_durable_version(const struct eng_catalog_store *st);

/* The error that stopped the store, or 0. Shard-local. */
int eng_catalog_store_error(const struct eng_catalog_store *st);

struct eng_catalog_store_stats {
        uint64_t saves;                 /* that had to wait (returned 0) */
        uint64_t sequences;             /* write sequences started */
        uint64_t saved;                 /* ... that made their snapshot durable */
        uint64_t failed;                /* ... that failed */
        uint64_t writes;                /* completed writes of CATALOG.tmp (short ones too) */
};

/* Borrowed, valid until close. Shard-local. */
const struct eng_catalog_store_stats *eng_catalog_store_stats(const struct eng_catalog_store *st);

/*
 * Closes the store: waits for the write sequence in flight (its saves
 * complete as usual), fails the saves still waiting with
 * -SCREE_ESHUTDOWN, and frees st. Returns 0, and done(arg, res) runs
 * exactly once, later, from the loop, after every save's done, with res 0
 * or the error that stopped the store; or -EALREADY (a close is under
 * way; done never runs). Saves after this call return -SCREE_ESHUTDOWN.
 * st is invalid once done runs. Shard-local.
 */
int eng_catalog_store_close(struct eng_catalog_store *st, void (*done)(void *arg, int res),
                            void *arg);

#endif
