/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The engine's file interface (LevelDB's Env idea). Every file operation of
 * the engine's I/O glue (commit log, SSTables, manifest) goes through a
 * struct eng_fs, so tests can slide a fault-injecting backend (fault_fs.h)
 * under the real engine code. eng_fs_direct_new() maps each call onto the
 * reactor's io_uring operations. Besides data ops there are the namespace
 * ops (unlink, rename) and a full fsync, which is how a directory opened
 * with O_RDONLY | O_DIRECTORY makes its new, renamed and removed names
 * durable.
 *
 * Contract (reactor/io.h's): a call returns 0 and op->cb runs exactly once,
 * later, on the loop's thread, from the loop -- never inside the call -- or
 * returns a negative error and op->cb never runs. op, buffers and paths stay
 * the caller's and must stay valid until cb. Results are the syscall's
 * (>= 0, or -errno). Shard-local: an eng_fs belongs to one loop.
 */
#ifndef SCREE_ENGINE_FS_H
#define SCREE_ENGINE_FS_H

#include <stdint.h>
#include <sys/types.h>

#include "reactor/io.h"
#include "reactor/loop.h"

struct eng_fs;
struct eng_fs_op;

typedef void (*eng_fs_cb)(struct eng_fs_op *op, int res);

enum eng_fs_kind {
        ENG_FS_OPEN,
        ENG_FS_READ,
        ENG_FS_WRITE,
        ENG_FS_FDATASYNC,
        ENG_FS_FALLOCATE,
        ENG_FS_CLOSE,
        ENG_FS_FSYNC,
        ENG_FS_UNLINK,
        ENG_FS_RENAME,
        ENG_FS_LINK,
        ENG_FS_KIND_MAX,
        ENG_FS_KIND_INVALID = -1,
};

/* Caller-provided; usually embedded in a larger request (container_of). */
struct eng_fs_op {
        eng_fs_cb cb;
        void *ctx;                      /* the caller's */
        /* internal: the backends' state for this op */
        struct rx_op rx;
        struct rx_task task;
        struct eng_fs *fs;
        enum eng_fs_kind kind;
        eng_fs_cb saved_cb;             /* a wrapping backend's copy of cb */
        int fd;
        int flags;                      /* open's */
        uint64_t off;
        uint32_t len;
        const char *path, *path2;       /* open/unlink's path; rename's old and new */
        int res;
};

struct eng_fs_vtable {
        int (*open)(struct eng_fs *fs, struct eng_fs_op *op, const char *path, int flags, mode_t mode);
        int (*read)(struct eng_fs *fs, struct eng_fs_op *op, int fd, void *buf, uint32_t len, uint64_t off);
        int (*write)(struct eng_fs *fs, struct eng_fs_op *op, int fd, const void *buf, uint32_t len,
                     uint64_t off);
        int (*fdatasync)(struct eng_fs *fs, struct eng_fs_op *op, int fd);
        int (*fallocate)(struct eng_fs *fs, struct eng_fs_op *op, int fd, int mode, uint64_t off,
                         uint64_t len);
        int (*close)(struct eng_fs *fs, struct eng_fs_op *op, int fd);
        int (*fsync)(struct eng_fs *fs, struct eng_fs_op *op, int fd);
        int (*unlink)(struct eng_fs *fs, struct eng_fs_op *op, const char *path);
        int (*rename)(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path, const char *new_path);
        int (*link)(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path, const char *new_path);
        void (*free)(struct eng_fs *fs);
};

struct eng_fs {
        const struct eng_fs_vtable *vt;
        struct rx_loop *loop;
        int owner_shard;
};

/* A backend straight onto the loop's io_uring. NULL only on ENOMEM. Free with
 * eng_fs_free. Shard-local. */
struct eng_fs *eng_fs_direct_new(struct rx_loop *loop);

/* Accepts NULL. REQUIRES: no op in flight. */
void eng_fs_free(struct eng_fs *fs);

/* open(2) flags plus O_CLOEXEC; res is the fd. */
static inline int eng_fs_open(struct eng_fs *fs, struct eng_fs_op *op, const char *path, int flags,
                              mode_t mode, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->open(fs, op, path, flags, mode);
}

static inline int eng_fs_read(struct eng_fs *fs, struct eng_fs_op *op, int fd, void *buf, uint32_t len,
                              uint64_t off, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->read(fs, op, fd, buf, len, off);
}

static inline int eng_fs_write(struct eng_fs *fs, struct eng_fs_op *op, int fd, const void *buf,
                               uint32_t len, uint64_t off, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->write(fs, op, fd, buf, len, off);
}

static inline int eng_fs_fdatasync(struct eng_fs *fs, struct eng_fs_op *op, int fd, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->fdatasync(fs, op, fd);
}

static inline int eng_fs_fallocate(struct eng_fs *fs, struct eng_fs_op *op, int fd, int mode,
                                   uint64_t off, uint64_t len, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->fallocate(fs, op, fd, mode, off, len);
}

static inline int eng_fs_close(struct eng_fs *fs, struct eng_fs_op *op, int fd, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->close(fs, op, fd);
}

/* fsync(2): data and metadata. On a directory fd (O_RDONLY | O_DIRECTORY)
 * it makes the directory's entries durable: new files, renames, unlinks. */
static inline int eng_fs_fsync(struct eng_fs *fs, struct eng_fs_op *op, int fd, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->fsync(fs, op, fd);
}

/* unlink(2) of path; durable once its directory is fsynced. */
static inline int eng_fs_unlink(struct eng_fs *fs, struct eng_fs_op *op, const char *path, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->unlink(fs, op, path);
}

/* rename(2): atomically replaces new_path if it exists; durable once the
 * directory is fsynced (both directories if they differ). */
static inline int eng_fs_rename(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path,
                                const char *new_path, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->rename(fs, op, old_path, new_path);
}

/* link(2): new_path names old_path's file too (-EEXIST if it exists);
 * durable once new_path's directory is fsynced. */
static inline int eng_fs_link(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path,
                              const char *new_path, eng_fs_cb cb)
{
        op->cb = cb;
        return fs->vt->link(fs, op, old_path, new_path);
}

#endif
