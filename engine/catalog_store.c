/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CATALOG file; see catalog_store.h for the model and
 * docs/format/catalog.md ("The CATALOG file") for what a crash leaves.
 *
 * Start-up half: plain blocking syscalls on the main thread. Run-time
 * half: one write sequence at a time on st->op, driven by st->step --
 * open the directory (once, kept open), open CATALOG.tmp, write it (on
 * short writes, the rest), fdatasync, close, rename over CATALOG, fsync
 * the directory. A failure before the rename undoes the sequence (close
 * and unlink CATALOG.tmp) and the store goes on; a failure of the rename
 * or the directory fsync stops it. Saves wait on st->waiters; st->newest
 * holds the newest snapshot not yet covered by a sequence. Every outcome
 * reaches the saves from a posted task (report), so no callback runs
 * inside an API call, and the next sequence starts only after the last
 * one was reported.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/mem.h"
#include "engine/catalog.h"
#include "engine/catalog_store.h"
#include "engine/fs.h"
#include "reactor/loop.h"

/* One write of a sequence carries at most this much (eng_fs lengths are
 * 32-bit). */
#define WRITE_CHUNK_BYTES (1u << 30)

/* ---- start-up: plain syscalls ---- */

static void set_err(char *err, size_t err_len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t err_len, const char *fmt, ...)
{
        va_list ap;

        if (!err_len)
                return;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
}

/* dir/name into buf (PATH_MAX bytes); -ENAMETOOLONG if it does not fit. */
static int path_make(char *buf, const char *dir, const char *name)
{
        int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

        return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* Reads the open file fd whole into *ret_buf (caller frees), *ret_len. */
static int read_fd(int fd, uint8_t **ret_buf, size_t *ret_len)
{
        struct stat sb;
        size_t cap = 0, len = 0;
        uint8_t *buf = NULL;

        if (fstat(fd, &sb) < 0)
                return -errno;
        for (;;) {
                /* + 1: room for the read that sees the end */
                uint8_t *nb = mem_grow(buf, &cap, len ? len + 1 : (size_t)sb.st_size + 1, 1);
                ssize_t n;

                if (!nb) {
                        free(buf);
                        return -ENOMEM;
                }
                buf = nb;
                n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int r = -errno;

                        free(buf);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        *ret_buf = buf;
        *ret_len = len;
        return 0;
}

/* What eng_catalog_decode's r says about buf, for the user. */
static void explain_decode(int r, const char *path, const uint8_t *buf, size_t len, char *err,
                           size_t err_len)
{
        size_t magic_len = sizeof(ENG_CATALOG_MAGIC) - 1;

        if (r == -SCREE_EUNSUPPORTED)
                set_err(err, err_len,
                        "%s: written in a newer catalog format than this build reads (version %u)",
                        path, ENG_CATALOG_FORMAT_VERSION);
        else if (r != -SCREE_ECORRUPT)
                set_err(err, err_len, "%s: %s decoding %zu bytes", path, scree_strerror(r), len);
        else if (len < ENG_CATALOG_HEADER_BYTES)
                set_err(err, err_len, "%s: damaged: truncated to %zu bytes, less than a header (%u)",
                        path, len, ENG_CATALOG_HEADER_BYTES);
        else if (memcmp(buf, ENG_CATALOG_MAGIC, magic_len) != 0)
                set_err(err, err_len, "%s: not a catalog (bad magic)", path);
        else
                set_err(err, err_len, "%s: damaged: checksum, length or content mismatch (%zu bytes)",
                        path, len);
}

int eng_catalog_store_read(const char *dir, struct eng_catalog **ret, char *err, size_t err_len)
{
        char path[PATH_MAX];
        uint8_t *buf = NULL;
        size_t len = 0;
        int fd, r;

        r = path_make(path, dir, ENG_CATALOG_STORE_NAME);
        if (r < 0) {
                set_err(err, err_len, "%s/%s: path too long", dir, ENG_CATALOG_STORE_NAME);
                return r;
        }
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                r = errno == ENOENT ? -SCREE_ENOTFOUND : -errno;
                set_err(err, err_len, "%s: %s", path,
                        r == -SCREE_ENOTFOUND ? "no such file" : scree_strerror(r));
                return r;
        }
        r = read_fd(fd, &buf, &len);
        close(fd);
        if (r < 0) {
                set_err(err, err_len, "%s: read: %s", path, scree_strerror(r));
                return r;
        }
        r = eng_catalog_decode(buf, len, ret);
        if (r < 0)
                explain_decode(r, path, buf, len, err, err_len);
        free(buf);
        return r;
}

/* Writes len bytes at buf to fd in full; a write of nothing is -ENOSPC. */
static int write_full(int fd, const uint8_t *buf, size_t len)
{
        while (len) {
                ssize_t n = write(fd, buf, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ENOSPC;
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

/* CATALOG.tmp at tmp: created, written in full, synced and closed. On
 * failure *what names the step. */
static int tmp_write(const char *tmp, const uint8_t *buf, size_t len, const char **what)
{
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        int r;

        *what = "open";
        if (fd < 0)
                return -errno;
        *what = "write";
        r = write_full(fd, buf, len);
        if (r == 0) {
                *what = "fdatasync";
                r = fdatasync(fd) < 0 ? -errno : 0;
        }
        if (close(fd) < 0 && r == 0) {
                *what = "close";
                r = -errno;
        }
        return r;
}

int eng_catalog_store_write_sync(const char *dir, const struct eng_catalog *c, char *err,
                                 size_t err_len)
{
        char path[PATH_MAX], tmp[PATH_MAX];
        size_t len = eng_catalog_encoded_size(c);
        const char *what = "encode";
        uint8_t *buf;
        int dir_fd, r;

        if (path_make(path, dir, ENG_CATALOG_STORE_NAME) < 0 ||
            path_make(tmp, dir, ENG_CATALOG_STORE_TMP_NAME) < 0) {
                set_err(err, err_len, "%s/%s: path too long", dir, ENG_CATALOG_STORE_TMP_NAME);
                return -ENAMETOOLONG;
        }
        /* The directory first: after the rename nothing may fail but its fsync. */
        dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) {
                r = -errno;
                set_err(err, err_len, "%s: open: %s", dir, scree_strerror(r));
                return r;
        }
        buf = malloc(len);
        r = buf ? 0 : -ENOMEM;
        if (r == 0) {
                eng_catalog_encode(c, buf);
                r = tmp_write(tmp, buf, len, &what);
        }
        free(buf);
        if (r == 0) {
                what = "rename";
                r = rename(tmp, path) < 0 ? -errno : 0;
        }
        if (r < 0) {
                (void)unlink(tmp);      /* CATALOG.tmp is never read: a failure to remove it is harmless */
                set_err(err, err_len, "%s: %s: %s", tmp, what, scree_strerror(r));
                close(dir_fd);
                return r;
        }
        r = fsync(dir_fd) < 0 ? -errno : 0;
        if (r < 0)
                set_err(err, err_len, "%s: fsync of the directory after renaming %s: %s", dir,
                        ENG_CATALOG_STORE_TMP_NAME, scree_strerror(r));
        close(dir_fd);
        return r;
}

/* ---- run time: the store ---- */

enum step {
        STEP_IDLE,
        STEP_OPEN_DIR,                  /* once: kept open until close */
        STEP_OPEN_TMP,
        STEP_WRITE,                     /* repeated until the buffer is written */
        STEP_SYNC,
        STEP_CLOSE_TMP,
        STEP_RENAME,
        STEP_DIR_SYNC,
        STEP_UNDO_CLOSE,                /* a failure before the rename: close CATALOG.tmp, */
        STEP_UNDO_UNLINK,               /* ... and remove it */
        STEP_CLOSE_DIR,                 /* closing the store */
};

struct eng_catalog_store {
        int owner_shard;
        struct rx_loop *loop;
        struct eng_fs *fs;
        char *dir, *path, *tmp_path;
        int dir_fd, tmp_fd;
        enum step step;
        struct eng_fs_op op;
        bool submit_failed;             /* the op of step was refused, not run */
        uint8_t *buf;                   /* the encoding being written */
        size_t buf_len, buf_cap, written;
        struct eng_catalog *newest;     /* newest snapshot no sequence covers; a reference */
        uint64_t seq_version;           /* version of the sequence in flight (or last) */
        int seq_res;                    /* its result */
        bool seq_ended;                 /* ... not reported yet */
        uint64_t durable;               /* newest version made durable */
        int error;                      /* stopped: why */
        struct eng_catalog_save *waiters;
        struct rx_task task;
        bool task_posted, closing;
        void (*close_done)(void *arg, int res);
        void *close_arg;
        struct eng_catalog_store_stats stats;
};

static void step_to(struct eng_catalog_store *st, enum step s);
static void close_step(struct eng_catalog_store *st);

static void task_run(struct rx_loop *loop, struct rx_task *t);

static void post(struct eng_catalog_store *st)
{
        if (st->task_posted)
                return;
        st->task_posted = true;
        rx_loop_post(st->loop, &st->task);
}

/* The sequence in flight is over with res; the task reports it. */
static void seq_end(struct eng_catalog_store *st, int res)
{
        st->step = STEP_IDLE;
        st->seq_res = res;
        st->seq_ended = true;
        if (res == 0) {
                st->durable = st->seq_version;
                st->stats.saved++;
        } else {
                st->stats.failed++;
        }
        post(st);
}

/* Starts a sequence that writes st->newest. */
static void seq_start(struct eng_catalog_store *st)
{
        struct eng_catalog *c = st->newest;
        size_t len = eng_catalog_encoded_size(c);
        uint8_t *b = mem_grow(st->buf, &st->buf_cap, len, 1);

        st->newest = NULL;
        st->seq_version = eng_catalog_version(c);
        st->stats.sequences++;
        if (!b) {
                eng_catalog_unref(c);
                seq_end(st, -ENOMEM);
                return;
        }
        st->buf = b;
        st->buf_len = len;
        st->written = 0;
        eng_catalog_encode(c, b);
        eng_catalog_unref(c);
        step_to(st, st->dir_fd < 0 ? STEP_OPEN_DIR : STEP_OPEN_TMP);
}

/* Starts the next sequence if one is due and nothing is in flight. */
static void kick(struct eng_catalog_store *st)
{
        if (st->step == STEP_IDLE && !st->seq_ended && !st->error && !st->closing && st->newest)
                seq_start(st);
}

/* A step before the rename failed with err: undo what the sequence made. */
static void undo(struct eng_catalog_store *st, int err)
{
        st->seq_res = err;
        step_to(st, st->tmp_fd >= 0 ? STEP_UNDO_CLOSE : STEP_UNDO_UNLINK);
}

/* The directory fsync failed: which snapshot CATALOG durably names is
 * unknown, so the store stops. */
static void stop(struct eng_catalog_store *st, int err)
{
        st->error = err;
        seq_end(st, err);
}

static int step_submit(struct eng_catalog_store *st, eng_fs_cb cb)
{
        struct eng_fs *fs = st->fs;
        size_t left = st->buf_len - st->written;

        switch (st->step) {
        case STEP_OPEN_DIR:
                return eng_fs_open(fs, &st->op, st->dir, O_RDONLY | O_DIRECTORY, 0, cb);
        case STEP_OPEN_TMP:
                return eng_fs_open(fs, &st->op, st->tmp_path, O_WRONLY | O_CREAT | O_TRUNC, 0644, cb);
        case STEP_WRITE:
                return eng_fs_write(fs, &st->op, st->tmp_fd, st->buf + st->written,
                                    (uint32_t)(left < WRITE_CHUNK_BYTES ? left : WRITE_CHUNK_BYTES),
                                    st->written, cb);
        case STEP_SYNC:
                return eng_fs_fdatasync(fs, &st->op, st->tmp_fd, cb);
        case STEP_CLOSE_TMP:
        case STEP_UNDO_CLOSE:
                return eng_fs_close(fs, &st->op, st->tmp_fd, cb);
        case STEP_RENAME:
                return eng_fs_rename(fs, &st->op, st->tmp_path, st->path, cb);
        case STEP_DIR_SYNC:
                return eng_fs_fsync(fs, &st->op, st->dir_fd, cb);
        case STEP_UNDO_UNLINK:
                return eng_fs_unlink(fs, &st->op, st->tmp_path, cb);
        case STEP_CLOSE_DIR:
                return eng_fs_close(fs, &st->op, st->dir_fd, cb);
        case STEP_IDLE:
                break;
        }
        return -EINVAL;
}

/* A write of the sequence completed with res. */
static void write_done(struct eng_catalog_store *st, int res)
{
        if (res <= 0) {
                undo(st, res < 0 ? res : -ENOSPC);      /* no progress: out of space */
                return;
        }
        st->written += (size_t)res;
        st->stats.writes++;
        step_to(st, st->written < st->buf_len ? STEP_WRITE : STEP_SYNC);
}

/*
 * The op of st->step completed (or, st->submit_failed, was refused) with
 * res. One switch for the whole sequence: each step's outcome and the
 * step after it read best side by side.
 */
static void step_done(struct eng_catalog_store *st, int res)
{
        switch (st->step) {
        case STEP_OPEN_DIR:
                if (res < 0) {
                        seq_end(st, res);       /* nothing made yet */
                        return;
                }
                st->dir_fd = res;
                step_to(st, STEP_OPEN_TMP);
                return;
        case STEP_OPEN_TMP:
                if (res < 0) {
                        undo(st, res);          /* O_CREAT may have made it */
                        return;
                }
                st->tmp_fd = res;
                step_to(st, STEP_WRITE);
                return;
        case STEP_WRITE:
                write_done(st, res);
                return;
        case STEP_SYNC:
                if (res < 0)
                        undo(st, res);
                else
                        step_to(st, STEP_CLOSE_TMP);
                return;
        case STEP_CLOSE_TMP:
                if (!st->submit_failed)
                        st->tmp_fd = -1;        /* gone even if close failed */
                if (res < 0)
                        undo(st, res);
                else
                        step_to(st, STEP_RENAME);
                return;
        case STEP_RENAME:
                /* A rename refused before it reached the kernel did not
                 * happen: CATALOG is known to be the old one. One that
                 * failed stops the store; CATALOG.tmp is removed all the
                 * same (if the rename did happen, there is none). */
                if (res < 0 && !st->submit_failed)
                        st->error = res;
                if (res < 0)
                        undo(st, res);
                else
                        step_to(st, STEP_DIR_SYNC);
                return;
        case STEP_DIR_SYNC:
                if (res < 0)
                        stop(st, res);
                else
                        seq_end(st, 0);
                return;
        case STEP_UNDO_CLOSE:
                st->tmp_fd = -1;        /* gone even if close failed (or leaked if refused) */
                step_to(st, STEP_UNDO_UNLINK);
                return;
        case STEP_UNDO_UNLINK:
                /* Best effort: CATALOG.tmp is never read, and the next
                 * sequence truncates it. */
                seq_end(st, st->seq_res);
                return;
        case STEP_CLOSE_DIR:
                st->dir_fd = -1;
                st->step = STEP_IDLE;
                close_step(st);
                return;
        case STEP_IDLE:
                break;
        }
        SCREE_ASSERT(!"catalog store: completion while idle");
}

static void op_done(struct eng_fs_op *op, int res)
{
        struct eng_catalog_store *st = container_of(op, struct eng_catalog_store, op);

        st->submit_failed = false;
        step_done(st, res);
}

/* Moves the sequence to step s and submits its op; a refused submit is
 * handled as that op failing (never a callback inside an API call: every
 * outcome is reported by the task). */
static void step_to(struct eng_catalog_store *st, enum step s)
{
        int r;

        st->step = s;
        r = step_submit(st, op_done);
        if (r < 0) {
                st->submit_failed = true;
                step_done(st, r);
        }
}

/* ---- reporting ---- */

/* Whether the sequence that ended settles w: one that succeeded, every
 * save of its version or older; one that failed, the saves it was to
 * make durable (numbered it or before); once stopped, all. */
static bool is_settled(const struct eng_catalog_store *st, const struct eng_catalog_save *w)
{
        if (st->error)
                return true;
        return st->seq_res == 0 ? w->version <= st->seq_version : w->seq <= st->stats.sequences;
}

/* Tells the saves the outcome of the sequence that ended. */
static void report(struct eng_catalog_store *st)
{
        struct eng_catalog_save *w = st->waiters, *done = NULL, *keep = NULL;
        uint64_t n = st->stats.sequences;
        int res = st->seq_res;

        st->seq_ended = false;
        while (w) {
                struct eng_catalog_save *next = w->next;
                struct eng_catalog_save **to = is_settled(st, w) ? &done : &keep;

                w->next = *to;
                *to = w;
                w = next;
        }
        st->waiters = keep;     /* before any callback, which may save again */
        while (done) {
                struct eng_catalog_save *next = done->next;

                /* Saves stopped before their sequence ran get the error that stopped it. */
                done->done(done, res == 0 || done->seq <= n ? res : st->error);
                done = next;
        }
}

static void task_run(struct rx_loop *loop, struct rx_task *t)
{
        struct eng_catalog_store *st = container_of(t, struct eng_catalog_store, task);

        (void)loop;
        st->task_posted = false;
        if (st->seq_ended)
                report(st);
        if (st->closing)
                close_step(st);
        else
                kick(st);
}

/* ---- the API ---- */

static char *path_join(const char *dir, const char *name)
{
        size_t n = strlen(dir) + strlen(name) + 2;
        char *p = malloc(n);

        if (p)
                snprintf(p, n, "%s/%s", dir, name);
        return p;
}

static void store_free(struct eng_catalog_store *st)
{
        eng_catalog_unref(st->newest);
        free(st->buf);
        free(st->dir);
        free(st->path);
        free(st->tmp_path);
        free(st);
}

int eng_catalog_store_new(struct rx_loop *loop, struct eng_fs *fs, const char *dir,
                          struct eng_catalog_store **ret)
{
        struct eng_catalog_store *st = calloc(1, sizeof(*st));

        if (!st)
                return -ENOMEM;
        st->owner_shard = check_current_shard;
        st->loop = loop;
        st->fs = fs;
        st->dir_fd = st->tmp_fd = -1;
        st->task = (struct rx_task){ .fn = task_run, .name = "catalog_store" };
        st->dir = strdup(dir);
        st->path = path_join(dir, ENG_CATALOG_STORE_NAME);
        st->tmp_path = path_join(dir, ENG_CATALOG_STORE_TMP_NAME);
        if (!st->dir || !st->path || !st->tmp_path) {
                store_free(st);
                return -ENOMEM;
        }
        *ret = st;
        return 0;
}

int eng_catalog_store_save(struct eng_catalog_store *st, struct eng_catalog *c,
                           struct eng_catalog_save *w)
{
        uint64_t v = eng_catalog_version(c);

        SCREE_ASSERT_SHARD(st);
        if (st->closing)
                return -SCREE_ESHUTDOWN;
        if (st->error)
                return st->error;
        if (v <= st->durable)
                return 1;
        w->version = v;
        w->next = st->waiters;
        st->waiters = w;
        st->stats.saves++;
        /* Covered by the sequence in flight? (One that ended and failed
         * covers nothing more: this save gets a sequence of its own.) */
        if (st->step != STEP_IDLE && v <= st->seq_version) {
                w->seq = st->stats.sequences;
                return 0;
        }
        w->seq = st->stats.sequences + 1;       /* the next sequence writes it, or a newer one */
        if (st->newest && v <= eng_catalog_version(st->newest))
                return 0;
        eng_catalog_unref(st->newest);
        st->newest = eng_catalog_ref(c);
        kick(st);
        return 0;
}

uint64_t eng_catalog_store_durable_version(const struct eng_catalog_store *st)
{
        return st->durable;
}

int eng_catalog_store_error(const struct eng_catalog_store *st)
{
        return st->error;
}

const struct eng_catalog_store_stats *eng_catalog_store_stats(const struct eng_catalog_store *st)
{
        return &st->stats;
}

/* Drives a close once the sequence in flight is reported: fail the
 * waiting saves, close the directory, free. Re-entered until done. */
static void close_step(struct eng_catalog_store *st)
{
        struct eng_catalog_save *w = st->waiters;
        void (*done)(void *arg, int res) = st->close_done;
        void *arg = st->close_arg;
        int res = st->error;

        if (st->step != STEP_IDLE || st->seq_ended || st->task_posted)
                return;
        st->waiters = NULL;
        while (w) {
                struct eng_catalog_save *next = w->next;

                w->done(w, -SCREE_ESHUTDOWN);
                w = next;
        }
        if (st->dir_fd >= 0) {
                st->step = STEP_CLOSE_DIR;
                if (step_submit(st, op_done) == 0)
                        return;
                st->step = STEP_IDLE;   /* cannot close it: leave it */
                st->dir_fd = -1;
        }
        store_free(st);
        done(arg, res);
}

int eng_catalog_store_close(struct eng_catalog_store *st, void (*done)(void *arg, int res),
                            void *arg)
{
        SCREE_ASSERT_SHARD(st);
        if (st->closing)
                return -EALREADY;
        st->closing = true;
        st->close_done = done;
        st->close_arg = arg;
        post(st);       /* from the loop, so done never runs inside this call */
        return 0;
}
