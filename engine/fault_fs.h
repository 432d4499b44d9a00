/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fault-injecting eng_fs for tests: real files through the real reactor,
 * plus the failures a disk and a power supply produce.
 *
 *  - Power cut: before the first write to a 4 KiB block since the file's
 *    last completed fdatasync, the block's old bytes are saved. A completed
 *    fdatasync forgets what it made durable. eng_fault_fs_power_cut() puts
 *    every saved block back -- or, with tear, keeps a random subset of the
 *    new blocks, as a multi-block write cut mid-way would -- truncates each
 *    file to its size at its last sync, and kills the fs: every later op
 *    fails with -EIO, like a machine that lost power. Ops still in flight
 *    at the cut complete with -EIO, and a write among them that lands
 *    afterwards is undone, so the cut may come at any moment. Reopen with a
 *    new fs.
 *  - Injected errors: eng_fault_fs_fail() makes the next ops of one kind fail
 *    with a chosen errno (a failed write writes nothing; a failed fdatasync
 *    makes nothing durable).
 *  - Namespace: open, fsync (a full one; on a directory fd it syncs the
 *    directory), unlink and rename pass through, can be injected to fail
 *    and fail with -EIO after a cut, like every op. A file's full fsync
 *    makes its data durable as fdatasync does.
 *
 *  - New names: a file the engine creates (open with O_CREAT of a name
 *    that did not exist) is unlinked by a power cut unless a full fsync of
 *    its directory, submitted after the open completed, has completed --
 *    as a real file system may lose an entry never made durable. A new
 *    file renamed to a name that did not exist stays new under that name;
 *    unlinking it forgets it. An open that completes after the cut closes
 *    its descriptor and unlinks what it created. stats.names_lost counts
 *    the names a cut removed; stats.dirs_unsynced is how many directories
 *    changed (create, rename, unlink) since their last completed fsync.
 *
 * Limits: other namespace changes (a rename over an existing file, an
 * unlink) are durable at once -- a power cut never undoes them, and one in
 * flight at the cut may have happened although it reports -EIO; tests can
 * check dirs_unsynced to see that code relying on them syncs the directory.
 * File data is tracked per file (inode) the engine opened, whichever
 * descriptor wrote it: a sync through one descriptor covers the writes
 * submitted before it through any other, closed or open, and the file's
 * size at its submit; a descriptor opened later starts from the file's
 * synced size (directories have no data). Closing a descriptor while its
 * own sync is in flight is not modelled. A write submitted while an fdatasync of the same file is in
 * flight, or the reverse, has no single right answer; it is counted in
 * stats.overlaps and handled conservatively. Engine code is expected not to
 * do that, and tests check overlaps == 0.
 * Shard-local, like every eng_fs.
 */
#ifndef SCREE_ENGINE_FAULT_FS_H
#define SCREE_ENGINE_FAULT_FS_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/fs.h"

struct eng_fault_fs_stats {
        uint64_t writes, syncs, injected, shadowed_blocks, restored_blocks, overlaps;
        uint64_t dirs_unsynced;         /* directories changed since their last fsync */
        uint64_t names_lost;            /* new names a power cut removed */
};

/* NULL only on ENOMEM. Free with eng_fs_free. Shard-local. */
struct eng_fs *eng_fault_fs_new(struct rx_loop *loop);

/* The next `count` ops of `kind` complete with -err instead (count < 0: until
 * set again; count 0: stop failing). err is a positive errno. */
void eng_fault_fs_fail(struct eng_fs *fs, enum eng_fs_kind kind, int err, int count);

/*
 * Simulates a power cut now, synchronously: restores unsynced blocks (all of
 * them, or with tear a random subset chosen from seed), truncates files to
 * their last synced size, unlinks new names whose directory was not fsynced
 * since, then fails every later op -- and every op still
 * in flight -- with -EIO. Returns 0 or -errno if restoring failed.
 */
int eng_fault_fs_power_cut(struct eng_fs *fs, bool tear, uint64_t seed);

const struct eng_fault_fs_stats *eng_fault_fs_stats(const struct eng_fs *fs);

#endif
