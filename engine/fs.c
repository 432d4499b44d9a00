/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The direct eng_fs backend: each call is the matching reactor op, and the
 * completion is handed to the caller's callback. See fs.h.
 */
#include <stdlib.h>

#include "base/check.h"
#include "base/compiler.h"
#include "engine/fs.h"

static void direct_done(struct rx_loop *loop, struct rx_op *rx, int res)
{
        struct eng_fs_op *op = container_of(rx, struct eng_fs_op, rx);

        (void)loop;
        op->res = res;
        op->cb(op, res);
}

static void op_prepare(struct eng_fs *fs, struct eng_fs_op *op, enum eng_fs_kind kind, int fd,
                       uint64_t off, uint32_t len)
{
        SCREE_ASSERT_SHARD(fs);
        op->fs = fs;
        op->kind = kind;
        op->fd = fd;
        op->flags = 0;
        op->off = off;
        op->len = len;
        op->path = op->path2 = NULL;
}

static int d_open(struct eng_fs *fs, struct eng_fs_op *op, const char *path, int flags, mode_t mode)
{
        op_prepare(fs, op, ENG_FS_OPEN, -1, 0, 0);
        op->flags = flags;
        op->path = path;
        return rx_file_open(fs->loop, &op->rx, path, flags, mode, direct_done);
}

static int d_read(struct eng_fs *fs, struct eng_fs_op *op, int fd, void *buf, uint32_t len, uint64_t off)
{
        op_prepare(fs, op, ENG_FS_READ, fd, off, len);
        return rx_file_read(fs->loop, &op->rx, fd, buf, len, off, direct_done);
}

static int d_write(struct eng_fs *fs, struct eng_fs_op *op, int fd, const void *buf, uint32_t len,
                   uint64_t off)
{
        op_prepare(fs, op, ENG_FS_WRITE, fd, off, len);
        return rx_file_write(fs->loop, &op->rx, fd, buf, len, off, direct_done);
}

static int d_fdatasync(struct eng_fs *fs, struct eng_fs_op *op, int fd)
{
        op_prepare(fs, op, ENG_FS_FDATASYNC, fd, 0, 0);
        return rx_file_fdatasync(fs->loop, &op->rx, fd, direct_done);
}

static int d_fallocate(struct eng_fs *fs, struct eng_fs_op *op, int fd, int mode, uint64_t off,
                       uint64_t len)
{
        op_prepare(fs, op, ENG_FS_FALLOCATE, fd, off, 0);
        return rx_file_fallocate(fs->loop, &op->rx, fd, mode, off, len, direct_done);
}

static int d_close(struct eng_fs *fs, struct eng_fs_op *op, int fd)
{
        op_prepare(fs, op, ENG_FS_CLOSE, fd, 0, 0);
        return rx_fd_close(fs->loop, &op->rx, fd, direct_done);
}

static int d_fsync(struct eng_fs *fs, struct eng_fs_op *op, int fd)
{
        op_prepare(fs, op, ENG_FS_FSYNC, fd, 0, 0);
        return rx_file_fsync(fs->loop, &op->rx, fd, direct_done);
}

static int d_unlink(struct eng_fs *fs, struct eng_fs_op *op, const char *path)
{
        op_prepare(fs, op, ENG_FS_UNLINK, -1, 0, 0);
        op->path = path;
        return rx_file_unlink(fs->loop, &op->rx, path, direct_done);
}

static int d_rename(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path, const char *new_path)
{
        op_prepare(fs, op, ENG_FS_RENAME, -1, 0, 0);
        op->path = old_path;
        op->path2 = new_path;
        return rx_file_rename(fs->loop, &op->rx, old_path, new_path, direct_done);
}

static int d_link(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path, const char *new_path)
{
        op_prepare(fs, op, ENG_FS_LINK, -1, 0, 0);
        op->path = old_path;
        op->path2 = new_path;
        return rx_file_link(fs->loop, &op->rx, old_path, new_path, direct_done);
}

static void d_free(struct eng_fs *fs)
{
        free(fs);
}

static const struct eng_fs_vtable direct_vt = {
        .open = d_open,
        .read = d_read,
        .write = d_write,
        .fdatasync = d_fdatasync,
        .fallocate = d_fallocate,
        .close = d_close,
        .fsync = d_fsync,
        .unlink = d_unlink,
        .rename = d_rename,
        .link = d_link,
        .free = d_free,
};

struct eng_fs *eng_fs_direct_new(struct rx_loop *loop)
{
        struct eng_fs *fs = calloc(1, sizeof(*fs));

        if (!fs)
                return NULL;
        fs->vt = &direct_vt;
        fs->loop = loop;
        fs->owner_shard = check_current_shard;
        return fs;
}

void eng_fs_free(struct eng_fs *fs)
{
        if (fs)
                fs->vt->free(fs);
}
