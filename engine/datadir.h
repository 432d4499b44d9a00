/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data directory's start-up checks, with plain syscalls and before
 * anything in the directory changes: the lock that keeps a second process
 * out (<dir>/LOCK), and a look at a shard directory's manifest layout, so
 * that a start that would be refused is refused before it creates or
 * deletes anything.
 *
 * The lock is flock(LOCK_EX | LOCK_NB) on <dir>/LOCK, held for as long as
 * the file stays open (the kernel drops it when the process dies, kill -9
 * included); the holder's PID is written into the file, for the message
 * of the process it keeps out. The PID is only informative: the flock
 * decides. Pure with respect to the reactor (base/ and manifest_format
 * only), so tools/ may link it. Main thread of its process; not
 * thread-safe.
 */
#ifndef SCREE_ENGINE_DATADIR_H
#define SCREE_ENGINE_DATADIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/manifest_format.h"

#define ENG_DATADIR_LOCK_NAME "LOCK"

/* Holds LOCK's bytes as they were before we wrote our PID (a stale PID
 * of an earlier holder), so that an undo can put them back. */
#define ENG_DATADIR_LOCK_SAVED_BYTES 64

struct eng_datadir_lock {
        int fd;                         /* <dir>/LOCK, flock'ed; -1 when not held */
        bool made_dir;                  /* the lock created <dir> */
        bool made_file;                 /* ... and LOCK */
        size_t saved_len;
        char saved[ENG_DATADIR_LOCK_SAVED_BYTES];
        char dir[4096];
        char path[4096];                /* <dir>/LOCK */
};

/*
 * Takes the exclusive lock of data directory dir (borrowed): creates dir
 * (one level, mode 0755) if it is missing, opens or creates dir/LOCK,
 * flock(LOCK_EX | LOCK_NB), and writes the calling process's PID into it.
 * Returns 0 (l holds the lock until eng_datadir_unlock or the process
 * exits; the fd is close-on-exec); -EWOULDBLOCK when another open file
 * holds it -- another process, or this one through another
 * eng_datadir_lock -- with *ret_holder set to the PID written in the file
 * (0 if it holds none); or -errno (-ENAMETOOLONG for a path that does not
 * fit l). On failure nothing is left behind: what it created is removed,
 * and l->fd is -1. ret_holder may be NULL. Main thread.
 */
int eng_datadir_lock(struct eng_datadir_lock *l, const char *dir, pid_t *ret_holder);

/*
 * Releases the lock. undo: the start it guarded failed, so put the
 * directory back as it was: LOCK's earlier bytes restored, or LOCK
 * removed if the lock created it, then dir removed if the lock created it
 * and it is empty. Without undo LOCK stays, with our PID in it (stale once
 * we are gone, which the next holder overwrites). Accepts a lock not held
 * (fd -1). Main thread.
 */
void eng_datadir_unlock(struct eng_datadir_lock *l, bool undo);

/* Removes directory path (borrowed) and the files in it -- a shard
 * directory a failed start made, with what its engine made in it (no
 * subdirectories: a shard makes none). Errors are ignored: what cannot
 * be removed stays. Main thread. */
void eng_datadir_remove_made(const char *path);

/*
 * Reads the layout recorded by the manifest in shard directory dir
 * (borrowed), with plain reads and the format's own decoder
 * (eng_manifest_read). Returns 0 and *ret_layout; -SCREE_ENOTFOUND when
 * dir or dir/MANIFEST does not exist (a shard not made yet: start-up
 * starts a fresh one); -SCREE_ECORRUPT or -SCREE_EUNSUPPORTED as
 * eng_manifest_read; or -errno. *ret_layout is written only on success.
 * Any thread.
 */
int eng_datadir_layout_read(const char *dir, struct eng_manifest_layout *ret_layout);

#endif
