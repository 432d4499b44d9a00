/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fault-injecting eng_fs; see fault_fs.h. Wraps the direct backend. For
 * each open file it keeps a second, buffered descriptor (opened through
 * /proc/self/fd) to read pre-images and to restore them, so the engine's
 * own O_DIRECT descriptor and its alignment rules are never disturbed.
 * Injected failures and ops on a dead fs complete through a posted loop
 * task, so they too call back later, never inside the call. Namespace
 * changes are noted per directory (device and inode) with the generation
 * number of the latest; a directory fsync clears a directory whose latest
 * change came before the fsync was submitted. Names the engine created are
 * noted too, each with the generation of its creation, until a directory
 * fsync submitted after it completes; a power cut unlinks those still noted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/mem.h"
#include "engine/fault_fs.h"

#define BLOCK 4096u

/* Saved bytes of one block of one file (an inode: a file the engine reopens
 * through a new descriptor, as a recycled log segment, is the same file). */
struct shadow {
        dev_t dev;
        ino_t ino;
        uint64_t block;
        uint32_t old_len;               /* bytes that existed (0: beyond EOF) */
        bool covered;                   /* an fdatasync in flight will make it durable */
        uint8_t *old;
};

struct ffile {
        int fd;                         /* the engine's descriptor (-1: slot free) */
        int aux;                        /* our buffered descriptor of the same file */
        dev_t dev;                      /* the file; aux keeps its inode number ours */
        ino_t ino;
        uint64_t synced_size;
        unsigned writes_in_flight, syncs_in_flight;
        bool closed;                    /* engine closed it; kept for a power cut */
};

/* A directory whose entries changed (create, rename, unlink) since its last
 * fsync; gen numbers the latest change. */
struct dirty_dir {
        dev_t dev;
        ino_t ino;
        uint64_t gen;
};

/* A file the engine created whose name no directory fsync made durable yet. */
struct new_name {
        char *path;
        dev_t dev;                      /* its directory */
        ino_t ino;
        uint64_t gen;                   /* dirs_gen of the creation */
};

struct fault_fs {
        struct eng_fs base;             /* first: eng_fs * casts to fault_fs * */
        struct eng_fs *inner;
        struct shadow *sh;
        size_t n_sh, cap_sh;
        struct ffile *files;
        size_t n_files;
        struct dirty_dir *dirs;
        size_t n_dirs, cap_dirs;
        uint64_t dirs_gen;
        struct new_name *names;
        size_t n_names, cap_names;
        struct { int err, count; } fail[ENG_FS_KIND_MAX];
        bool dead;
        struct eng_fault_fs_stats stats;
};

static struct fault_fs *ffs_of(struct eng_fs *fs)
{
        return (struct fault_fs *)fs;
}

static struct ffile *file_find(struct fault_fs *f, int fd)
{
        for (size_t i = 0; i < f->n_files; i++)
                if (f->files[i].fd == fd && !f->files[i].closed)
                        return &f->files[i];
        return NULL;
}

static uint64_t aux_size(int aux)
{
        struct stat st;

        return fstat(aux, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* ---- completions ---- */

static void task_done(struct rx_loop *loop, struct rx_task *t)
{
        struct eng_fs_op *op = container_of(t, struct eng_fs_op, task);

        (void)loop;
        op->cb(op, op->res);
}

/* Completes op with res from the loop, as an injected fault or a dead fs. */
static int complete_later(struct fault_fs *f, struct eng_fs_op *op, enum eng_fs_kind kind, int res)
{
        op->fs = &f->base;
        op->kind = kind;
        op->res = res;
        op->task = (struct rx_task){ .fn = task_done, .name = "fault_fs:injected" };
        rx_loop_post(f->base.loop, &op->task);
        f->stats.injected++;
        return 0;
}

/* Returns a negative errno if this op must fail instead of running. */
static int injected(struct fault_fs *f, enum eng_fs_kind kind)
{
        if (f->dead)
                return -EIO;
        if (f->fail[kind].count == 0)
                return 0;
        if (f->fail[kind].count > 0)
                f->fail[kind].count--;
        return -f->fail[kind].err;
}

/* Routes op's completion through `ours` before the caller's callback. */
static void hook(struct eng_fs_op *op, eng_fs_cb ours)
{
        op->saved_cb = op->cb;
        op->cb = ours;
}

/* After the inner call returned r: undo the hook on failure; on success make
 * op point at this fs (the inner backend pointed it at itself). */
static int unhook(struct fault_fs *f, struct eng_fs_op *op, int r)
{
        if (r < 0)
                op->cb = op->saved_cb;
        else
                op->fs = &f->base;
        return r;
}

static void pass_done(struct eng_fs_op *op, int res)
{
        /* Power was lost before this completed: it never happened. */
        if (ffs_of(op->fs)->dead)
                res = -EIO;
        op->cb = op->saved_cb;
        op->cb(op, res);
}

/* ---- shadows ---- */

static bool same_file(const struct shadow *s, const struct ffile *file)
{
        return s->dev == file->dev && s->ino == file->ino;
}

/* Whether slot x tracks a descriptor of file's inode (file's own included). */
static bool same_inode(const struct ffile *x, const struct ffile *file)
{
        return x->fd != -1 && x->dev == file->dev && x->ino == file->ino;
}

static struct shadow *shadow_find(struct fault_fs *f, const struct ffile *file, uint64_t block)
{
        for (size_t i = 0; i < f->n_sh; i++)
                if (same_file(&f->sh[i], file) && f->sh[i].block == block)
                        return &f->sh[i];
        return NULL;
}

/* Saves the current bytes of one block before its first unsynced write. */
static int shadow_block(struct fault_fs *f, struct ffile *file, uint64_t block)
{
        struct shadow *s;
        ssize_t n;

        if (shadow_find(f, file, block))
                return 0;
        if (f->n_sh == f->cap_sh) {
                size_t cap = f->cap_sh ? f->cap_sh * 2 : 64;
                struct shadow *v = realloc(f->sh, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                f->sh = v;
                f->cap_sh = cap;
        }
        s = &f->sh[f->n_sh];
        s->old = malloc(BLOCK);
        if (!s->old)
                return -ENOMEM;
        n = pread(file->aux, s->old, BLOCK, (off_t)(block * BLOCK));
        if (n < 0) {
                free(s->old);
                return -errno;
        }
        s->dev = file->dev;
        s->ino = file->ino;
        s->block = block;
        s->old_len = (uint32_t)n;
        s->covered = false;
        f->n_sh++;
        f->stats.shadowed_blocks++;
        return 0;
}

static void shadow_drop_at(struct fault_fs *f, size_t i)
{
        free(f->sh[i].old);
        f->sh[i] = f->sh[--f->n_sh];
}

/* Any tracked descriptor of the file s belongs to (every shadow has one:
 * descriptors closed by the engine are kept). */
static struct ffile *file_of(struct fault_fs *f, const struct shadow *s)
{
        for (size_t i = 0; i < f->n_files; i++)
                if (f->files[i].fd != -1 && same_file(s, &f->files[i]))
                        return &f->files[i];
        return NULL;
}

/* Writes (syncs: false) or syncs in flight to file's inode, through any
 * of its descriptors. */
static unsigned file_in_flight(const struct fault_fs *f, const struct ffile *file, bool syncs)
{
        unsigned n = 0;

        for (size_t i = 0; i < f->n_files; i++)
                if (same_inode(&f->files[i], file))
                        n += syncs ? f->files[i].syncs_in_flight : f->files[i].writes_in_flight;
        return n;
}

/* Puts one block's saved bytes back. */
static int restore(struct fault_fs *f, const struct shadow *s)
{
        struct ffile *file = file_of(f, s);

        if (!file)
                return 0;
        f->stats.restored_blocks++;
        if (pwrite(file->aux, s->old, s->old_len, (off_t)(s->block * BLOCK)) < 0)
                return -errno;
        return 0;
}

/*
 * Truncates a file back to its synced size and flushes our restores.
 * An O_DIRECT write still in flight over blocks just restored through the
 * page cache cannot drop those (dirty) pages when it lands, and the kernel
 * flags the file with EIO once ("Page cache invalidation failure on direct
 * I/O"). Our bytes are sound -- write_done restores that write's blocks
 * again -- so an EIO counts only if a second fsync still reports it.
 */
static int settle(struct ffile *file)
{
        if (aux_size(file->aux) > file->synced_size && ftruncate(file->aux, (off_t)file->synced_size) < 0)
                return -errno;
        if (fsync(file->aux) == 0 || (errno == EIO && fsync(file->aux) == 0))
                return 0;
        return -errno;
}

/* ---- namespace changes ---- */

/* Identifies the directory that holds path. */
static int parent_stat(const char *path, struct stat *ret)
{
        char dir[PATH_MAX];
        char *slash;

        if ((size_t)snprintf(dir, sizeof(dir), "%s", path) >= sizeof(dir))
                return -ENAMETOOLONG;
        slash = strrchr(dir, '/');
        if (!slash)
                snprintf(dir, sizeof(dir), ".");
        else if (slash == dir)
                dir[1] = '\0';         /* a file in / */
        else
                *slash = '\0';
        return stat(dir, ret) < 0 ? -errno : 0;
}

static void dir_changed(struct fault_fs *f, const char *path)
{
        struct dirty_dir *v;
        struct stat st;

        if (!path || parent_stat(path, &st) < 0)
                return;
        f->dirs_gen++;
        for (size_t i = 0; i < f->n_dirs; i++) {
                if (f->dirs[i].dev == st.st_dev && f->dirs[i].ino == st.st_ino) {
                        f->dirs[i].gen = f->dirs_gen;
                        return;
                }
        }
        v = mem_grow(f->dirs, &f->cap_dirs, f->n_dirs + 1, sizeof(*v));
        SCREE_VERIFY(v != NULL);        /* a test backend: ENOMEM is fatal */
        f->dirs = v;
        f->dirs[f->n_dirs++] = (struct dirty_dir){ .dev = st.st_dev, .ino = st.st_ino,
                                                   .gen = f->dirs_gen };
        f->stats.dirs_unsynced = f->n_dirs;
}

static void name_drop_at(struct fault_fs *f, size_t i)
{
        free(f->names[i].path);
        f->names[i] = f->names[--f->n_names];
}

static ssize_t name_find(const struct fault_fs *f, const char *path)
{
        for (size_t i = 0; i < f->n_names; i++)
                if (strcmp(f->names[i].path, path) == 0)
                        return (ssize_t)i;
        return -1;
}

/* The engine created path (the change dir_changed just noted): it vanishes
 * at a power cut unless a directory fsync makes it durable first. */
static void name_created(struct fault_fs *f, const char *path)
{
        struct new_name *v;
        struct stat st;
        char *copy;

        if (parent_stat(path, &st) < 0 || name_find(f, path) >= 0)
                return;
        copy = strdup(path);
        v = mem_grow(f->names, &f->cap_names, f->n_names + 1, sizeof(*v));
        SCREE_VERIFY(copy != NULL && v != NULL);        /* a test backend: ENOMEM is fatal */
        f->names = v;
        f->names[f->n_names++] = (struct new_name){ .path = copy, .dev = st.st_dev, .ino = st.st_ino,
                                                    .gen = f->dirs_gen };
}

/* path was unlinked, or renamed away: it no longer names a new file. */
static void name_forget(struct fault_fs *f, const char *path)
{
        ssize_t i = path ? name_find(f, path) : -1;

        if (i >= 0)
                name_drop_at(f, (size_t)i);
}

/* A power cut: every name created since its directory's last fsync goes. */
static void names_cut(struct fault_fs *f)
{
        while (f->n_names) {
                if (unlink(f->names[f->n_names - 1].path) == 0)
                        f->stats.names_lost++;
                name_drop_at(f, f->n_names - 1);
        }
}

/* A sync of fd, submitted when dirs_gen was gen, succeeded: if fd is a
 * directory, the changes in it noted until then are durable. A change
 * noted after the submit keeps the directory unsynced. */
static void dir_synced(struct fault_fs *f, int fd, uint64_t gen)
{
        struct stat st;

        if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))
                return;
        for (size_t i = f->n_dirs; i-- > 0;)
                if (f->dirs[i].dev == st.st_dev && f->dirs[i].ino == st.st_ino &&
                    f->dirs[i].gen <= gen)
                        f->dirs[i] = f->dirs[--f->n_dirs];
        f->stats.dirs_unsynced = f->n_dirs;
        for (size_t i = f->n_names; i-- > 0;)
                if (f->names[i].dev == st.st_dev && f->names[i].ino == st.st_ino &&
                    f->names[i].gen <= gen)
                        name_drop_at(f, i);
}

/* ---- ops ---- */

static struct ffile *file_slot(struct fault_fs *f)
{
        struct ffile *v;

        for (size_t i = 0; i < f->n_files; i++)
                if (f->files[i].fd == -1)
                        return &f->files[i];
        v = realloc(f->files, (f->n_files + 1) * sizeof(*v));
        SCREE_VERIFY(v != NULL);        /* a test backend: ENOMEM is fatal */
        f->files = v;
        return &f->files[f->n_files++];
}

/* Starts tracking the data of the file the engine opened as fd. Directories
 * have no data to track, nor does a file we cannot open for writing (then
 * neither could the engine). */
static void file_track(struct fault_fs *f, int fd)
{
        struct ffile *file;
        struct stat st;
        char path[64];
        int aux;

        if (fstat(fd, &st) < 0 || S_ISDIR(st.st_mode))
                return;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        aux = open(path, O_RDWR | O_CLOEXEC);
        if (aux < 0)
                return;
        file = file_slot(f);
        *file = (struct ffile){ .fd = fd, .aux = aux, .dev = st.st_dev, .ino = st.st_ino };
        file->synced_size = aux_size(file->aux);
        /* Another descriptor's unsynced growth is not synced by this open. */
        for (size_t i = 0; i < f->n_files; i++)
                if (&f->files[i] != file && same_inode(&f->files[i], file)) {
                        file->synced_size = f->files[i].synced_size;
                        break;
                }
}

/* An open completed; created: it made a new file. */
static void opened(struct eng_fs_op *op, int res, bool created)
{
        struct fault_fs *f = ffs_of(op->fs);

        if (res >= 0 && f->dead) {
                /* Completed after the power cut: the caller sees -EIO, so the
                 * descriptor is ours to close, and a name it made is lost. */
                close(res);
                if (created)
                        unlink(op->path);
        } else if (res >= 0) {
                file_track(f, res);
                if (op->flags & O_CREAT)
                        dir_changed(f, op->path);
                if (created)
                        name_created(f, op->path);
        }
        pass_done(op, res);
}

static void open_done_new(struct eng_fs_op *op, int res)
{
        opened(op, res, true);
}

static void open_done_old(struct eng_fs_op *op, int res)
{
        opened(op, res, false);
}

static int f_open(struct eng_fs *fs, struct eng_fs_op *op, const char *path, int flags, mode_t mode)
{
        struct fault_fs *f = ffs_of(fs);
        int err = injected(f, ENG_FS_OPEN);
        bool creates;

        if (err)
                return complete_later(f, op, ENG_FS_OPEN, err);
        /* Whether a successful open makes a new name: O_EXCL says so; else
         * look now (the engine does not race itself on one name). */
        creates = (flags & O_CREAT) && ((flags & O_EXCL) || access(path, F_OK) < 0);
        hook(op, creates ? open_done_new : open_done_old);
        return unhook(f, op, f->inner->vt->open(f->inner, op, path, flags, mode));
}

static int f_read(struct eng_fs *fs, struct eng_fs_op *op, int fd, void *buf, uint32_t len, uint64_t off)
{
        struct fault_fs *f = ffs_of(fs);
        int err = injected(f, ENG_FS_READ);

        if (err)
                return complete_later(f, op, ENG_FS_READ, err);
        hook(op, pass_done);
        return unhook(f, op, f->inner->vt->read(f->inner, op, fd, buf, len, off));
}

static void write_done(struct eng_fs_op *op, int res)
{
        struct fault_fs *f = ffs_of(op->fs);
        struct ffile *file = file_find(f, op->fd);

        if (file)
                file->writes_in_flight--;
        if (f->dead && file && op->len) {
                /* Landed after the power cut: undo it. */
                for (uint64_t b = op->off / BLOCK; b <= (op->off + op->len - 1) / BLOCK; b++) {
                        struct shadow *s = shadow_find(f, file, b);

                        if (s)
                                restore(f, s);
                }
                settle(file);
        }
        pass_done(op, res);
}

static int f_write(struct eng_fs *fs, struct eng_fs_op *op, int fd, const void *buf, uint32_t len,
                   uint64_t off)
{
        struct fault_fs *f = ffs_of(fs);
        struct ffile *file = file_find(f, fd);
        int r, err = injected(f, ENG_FS_WRITE);

        if (err)
                return complete_later(f, op, ENG_FS_WRITE, err);
        if (!file) {
                hook(op, pass_done);
                return unhook(f, op, f->inner->vt->write(f->inner, op, fd, buf, len, off));
        }
        for (uint64_t b = off / BLOCK; len && b <= (off + len - 1) / BLOCK; b++) {
                struct shadow *s;

                r = shadow_block(f, file, b);
                if (r < 0)
                        return r;
                /* Written after a sync in flight was submitted: that sync
                 * does not make the block durable. */
                if ((s = shadow_find(f, file, b)))
                        s->covered = false;
        }
        if (file_in_flight(f, file, true))
                f->stats.overlaps++;
        hook(op, write_done);
        r = unhook(f, op, f->inner->vt->write(f->inner, op, fd, buf, len, off));
        if (r == 0) {
                file->writes_in_flight++;
                f->stats.writes++;
        }
        return r;
}

/* A sync of a tracked file completed with res (power still on). It covers
 * the file, whichever descriptors wrote before it was submitted, and its
 * size then (size). */
static void file_synced(struct fault_fs *f, struct ffile *file, int res, uint64_t size)
{
        for (size_t i = f->n_sh; i-- > 0;) {
                if (!same_file(&f->sh[i], file) || !f->sh[i].covered)
                        continue;
                /* Written before the sync was submitted: durable now. */
                if (res == 0)
                        shadow_drop_at(f, i);
                else
                        f->sh[i].covered = false;
        }
        for (size_t i = 0; res == 0 && i < f->n_files; i++)
                if (same_inode(&f->files[i], file) && f->files[i].synced_size < size)
                        f->files[i].synced_size = size;
}


static void sync_done(struct eng_fs_op *op, int res)
{
        struct fault_fs *f = ffs_of(op->fs);
        struct ffile *file = file_find(f, op->fd);

        if (file)
                file->syncs_in_flight--;
        if (file && !f->dead)
                file_synced(f, file, res, op->off);
        else if (!file && !f->dead && res == 0)
                dir_synced(f, op->fd, op->off);
        pass_done(op, res);
}

/* fdatasync or fsync: for file data they are the same here. */
static int sync_submit(struct fault_fs *f, struct eng_fs_op *op, int fd, enum eng_fs_kind kind)
{
        struct ffile *file = file_find(f, fd);
        int r, err = injected(f, kind);
        bool writing;

        if (err)
                return complete_later(f, op, kind, err);
        writing = file && file_in_flight(f, file, false);
        if (writing)
                f->stats.overlaps++;    /* those blocks stay shadowed: conservative */
        for (size_t i = 0; file && !writing && i < f->n_sh; i++)
                if (same_file(&f->sh[i], file))
                        f->sh[i].covered = true;
        hook(op, sync_done);
        r = kind == ENG_FS_FSYNC ? f->inner->vt->fsync(f->inner, op, fd)
                                 : f->inner->vt->fdatasync(f->inner, op, fd);
        r = unhook(f, op, r);
        if (r < 0)
                return r;
        /* off is unused by syncs: what the sync covers -- a file's size
         * now, or a directory's changes up to now */
        op->off = file ? aux_size(file->aux) : f->dirs_gen;
        if (file) {
                file->syncs_in_flight++;
                f->stats.syncs++;
        }
        return 0;
}

static int f_fdatasync(struct eng_fs *fs, struct eng_fs_op *op, int fd)
{
        return sync_submit(ffs_of(fs), op, fd, ENG_FS_FDATASYNC);
}

static int f_fsync(struct eng_fs *fs, struct eng_fs_op *op, int fd)
{
        return sync_submit(ffs_of(fs), op, fd, ENG_FS_FSYNC);
}

/* unlink(path) or rename(path, path2) succeeded, power on. */
static void name_changed(struct fault_fs *f, struct eng_fs_op *op, bool target_existed)
{
        bool was_new = name_find(f, op->path) >= 0;

        dir_changed(f, op->path);
        dir_changed(f, op->path2);
        name_forget(f, op->path);
        if (!op->path2)
                return;
        /* A new file renamed to a new name before any directory fsync: the
         * file still has no durable name. Replacing an existing file, the
         * rename itself is durable at once (see fault_fs.h, Limits). */
        name_forget(f, op->path2);
        if (was_new && !target_existed)
                name_created(f, op->path2);
}

static void name_op_done_any(struct eng_fs_op *op, int res, bool target_existed)
{
        struct fault_fs *f = ffs_of(op->fs);

        if (res == 0 && !f->dead)
                name_changed(f, op, target_existed);
        pass_done(op, res);
}

static void name_op_done(struct eng_fs_op *op, int res)
{
        name_op_done_any(op, res, false);
}

static void name_op_done_replacing(struct eng_fs_op *op, int res)
{
        name_op_done_any(op, res, true);
}

static int f_unlink(struct eng_fs *fs, struct eng_fs_op *op, const char *path)
{
        struct fault_fs *f = ffs_of(fs);
        int err = injected(f, ENG_FS_UNLINK);

        if (err)
                return complete_later(f, op, ENG_FS_UNLINK, err);
        hook(op, name_op_done);
        return unhook(f, op, f->inner->vt->unlink(f->inner, op, path));
}

static int f_rename(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path, const char *new_path)
{
        struct fault_fs *f = ffs_of(fs);
        int err = injected(f, ENG_FS_RENAME);

        if (err)
                return complete_later(f, op, ENG_FS_RENAME, err);
        hook(op, access(new_path, F_OK) == 0 ? name_op_done_replacing : name_op_done);
        return unhook(f, op, f->inner->vt->rename(f->inner, op, old_path, new_path));
}

/* A link's new name is lost by a power cut before its directory's fsync,
 * as a new file's would be: not modelled (the fault fs tracks files it
 * creates); failures can be injected. */
static int f_link(struct eng_fs *fs, struct eng_fs_op *op, const char *old_path, const char *new_path)
{
        struct fault_fs *f = ffs_of(fs);
        int err = injected(f, ENG_FS_LINK);

        if (err)
                return complete_later(f, op, ENG_FS_LINK, err);
        return f->inner->vt->link(f->inner, op, old_path, new_path);
}

static int f_fallocate(struct eng_fs *fs, struct eng_fs_op *op, int fd, int mode, uint64_t off,
                       uint64_t len)
{
        struct fault_fs *f = ffs_of(fs);
        int err = injected(f, ENG_FS_FALLOCATE);

        if (err)
                return complete_later(f, op, ENG_FS_FALLOCATE, err);
        hook(op, pass_done);
        return unhook(f, op, f->inner->vt->fallocate(f->inner, op, fd, mode, off, len));
}

static int f_close(struct eng_fs *fs, struct eng_fs_op *op, int fd)
{
        struct fault_fs *f = ffs_of(fs);
        struct ffile *file = file_find(f, fd);
        int r, err = injected(f, ENG_FS_CLOSE);

        if (err)
                return complete_later(f, op, ENG_FS_CLOSE, err);
        hook(op, pass_done);
        r = unhook(f, op, f->inner->vt->close(f->inner, op, fd));
        /* Unsynced data outlives the descriptor, whose number may be reused:
         * the file is kept under a private negative id (its shadows name
         * the inode, which our aux descriptor keeps from being reused). */
        if (r == 0 && file) {
                file->fd = -2 - file->aux;
                file->closed = true;
        }
        return r;
}

/* ---- power cut, control, teardown ---- */

static uint64_t next_rand(uint64_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        return *s;
}

int eng_fault_fs_power_cut(struct eng_fs *fs, bool tear, uint64_t seed)
{
        struct fault_fs *f = ffs_of(fs);
        uint64_t rng = seed | 1;
        int r = 0;

        f->dead = true;
        for (size_t i = 0; i < f->n_sh; i++) {
                int e;

                if (tear && (next_rand(&rng) & 1))
                        continue;       /* torn: this block's new bytes made it */
                e = restore(f, &f->sh[i]);
                r = r ? r : e;
        }
        for (size_t i = 0; i < f->n_files; i++) {
                int e;

                if (f->files[i].fd == -1)
                        continue;
                e = settle(&f->files[i]);
                r = r ? r : e;
        }
        names_cut(f);
        /* The shadows stay: writes still in flight when power went are
         * undone as they complete (write_done). */
        return r;
}

void eng_fault_fs_fail(struct eng_fs *fs, enum eng_fs_kind kind, int err, int count)
{
        struct fault_fs *f = ffs_of(fs);

        if (kind < 0 || kind >= ENG_FS_KIND_MAX)
                return;
        f->fail[kind].err = err;
        f->fail[kind].count = count;
}

const struct eng_fault_fs_stats *eng_fault_fs_stats(const struct eng_fs *fs)
{
        return &((const struct fault_fs *)(const void *)fs)->stats;
}

static void f_free(struct eng_fs *fs)
{
        struct fault_fs *f = ffs_of(fs);

        while (f->n_sh)
                shadow_drop_at(f, f->n_sh - 1);
        for (size_t i = 0; i < f->n_files; i++)
                if (f->files[i].fd != -1)
                        close(f->files[i].aux);
        free(f->sh);
        free(f->files);
        free(f->dirs);
        while (f->n_names)
                name_drop_at(f, f->n_names - 1);
        free(f->names);
        eng_fs_free(f->inner);
        free(f);
}

static const struct eng_fs_vtable fault_vt = {
        .open = f_open,
        .read = f_read,
        .write = f_write,
        .fdatasync = f_fdatasync,
        .fallocate = f_fallocate,
        .close = f_close,
        .fsync = f_fsync,
        .unlink = f_unlink,
        .rename = f_rename,
        .link = f_link,
        .free = f_free,
};

struct eng_fs *eng_fault_fs_new(struct rx_loop *loop)
{
        struct fault_fs *f = calloc(1, sizeof(*f));

        if (!f)
                return NULL;
        f->inner = eng_fs_direct_new(loop);
        if (!f->inner) {
                free(f);
                return NULL;
        }
        f->base.vt = &fault_vt;
        f->base.loop = loop;
        f->base.owner_shard = check_current_shard;
        return &f->base;
}
