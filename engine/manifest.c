/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A shard's manifest file; see manifest.h for the model.
 *
 * One chain of I/O at a time runs on m->op, driven by m->step: an append
 * (write, fdatasync), a rewrite (open the directory once, open
 * MANIFEST.tmp, write, fdatasync, rename, fsync the directory, close the
 * old file) or, when closing, one close per descriptor. Records are framed
 * into m->pend as edits are applied, with the salt of the file they will
 * land in and, as synced_upto, what of that file is durable by then; an
 * append swaps pend with m->io, so memory under I/O is never touched.
 * A rewrite starts only between appends: the snapshot then holds every
 * applied edit, and pend (framed for the old file) is dropped. Failures
 * are reported from a posted task, so no callback runs inside an API call.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/checksum.h"
#include "base/compiler.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "engine/manifest.h"

#define REC_HDR ENG_MANIFEST_RECORD_HEADER_BYTES
#define READ_CHUNK (64u * 1024u)

enum step {
        STEP_IDLE,
        STEP_APPEND_WRITE,
        STEP_APPEND_SYNC,
        STEP_OPEN_DIR,
        STEP_OPEN_TMP,
        STEP_SNAPSHOT_WRITE,
        STEP_SNAPSHOT_SYNC,
        STEP_RENAME,
        STEP_DIR_SYNC,
        STEP_CLOSE_OLD,
        STEP_CLOSE,
        STEP_MARK_WRITE,                /* the sync mark behind the last edit */
        STEP_MARK_SYNC,                 /* ... made durable too, on close */
        STEP_UNDO_CLOSE,                /* a rewrite out of space: close MANIFEST.tmp, */
        STEP_UNDO_UNLINK,               /* ... remove it */
};

/* What waits for space (see nospace_enter). */
enum nospace { NOSPACE_NONE, NOSPACE_APPEND, NOSPACE_REWRITE };

#define RETRY_NS (UINT64_C(1000) * 1000 * 1000)
#define RETRY_MAX_NS (8 * RETRY_NS)

struct mbuf {
        uint8_t *data;
        size_t len, cap;
};

struct eng_manifest {
        int owner_shard;
        struct eng_fs *fs;
        struct eng_manifest_state state;
        char *path, *tmp_path, *dir;
        int fd, new_fd, dir_fd;         /* MANIFEST, MANIFEST.tmp being written, the directory */
        int *closing_fd;                /* STEP_CLOSE: which of them */
        uint64_t salt;                  /* of the file pend's records are framed for */
        uint64_t synced_upto;           /* durable in that file when they are written */
        uint64_t pend_off;              /* where pend's first byte goes in that file */
        uint64_t io_end;                /* an append: the file's end once it is durable */
        struct mbuf pend, io;
        struct eng_manifest_write *pend_head, *pend_tail;      /* edits framed in pend */
        struct eng_manifest_write *io_head;                     /* edits the chain in flight publishes */
        enum step step;
        struct eng_fs_op op;
        int error;
        bool task_posted, closing;
        struct rx_task task;
        void (*create_done)(void *arg, int res);
        void *create_arg;
        void (*close_done)(void *arg, int res);
        void *close_arg;
        struct eng_manifest_stats stats;
        bool mark_due;                  /* an append was synced; no mark behind it yet */
        uint8_t mark[REC_HDR];
        enum nospace nospace;           /* out of space: retried by retry_timer */
        struct rx_timer retry_timer;
        uint64_t retry_ns;
        bool last_try;                  /* eng_manifest_stop_retrying: give up at the next ENOSPC */
        bool gave_up;                   /* m->error is that -ENOSPC: nothing acknowledged lost */
};

static void step_done(struct eng_fs_op *op, int res);
static void close_step(struct eng_manifest *m);
static void rewrite_start(struct eng_manifest *m);
static void step_to(struct eng_manifest *m, enum step s);

/* ---- buffers and acknowledgements ---- */

/* Makes room for n more bytes. */
static int mbuf_reserve(struct mbuf *b, size_t n)
{
        uint8_t *d = mem_grow(b->data, &b->cap, b->len + n, 1);

        if (!d)
                return -ENOMEM;
        b->data = d;
        return 0;
}

static void ack_list(struct eng_manifest_write *w, int res)
{
        while (w) {
                struct eng_manifest_write *next = w->next;

                w->done(w, res);
                w = next;
        }
}

/* ---- failure, and the task that reports it ---- */

static void task_run(struct rx_loop *loop, struct rx_task *t)
{
        struct eng_manifest *m = container_of(t, struct eng_manifest, task);
        void (*create_done)(void *arg, int res) = m->create_done;
        struct eng_manifest_write *io = m->io_head, *pend = m->pend_head;

        (void)loop;
        m->task_posted = false;
        if (m->error) {
                m->io_head = m->pend_head = m->pend_tail = NULL;
                m->create_done = NULL;
                ack_list(io, m->error);
                ack_list(pend, m->error);
                if (create_done)
                        create_done(m->create_arg, m->error);
        }
        if (m->closing)
                close_step(m);
}

static void post(struct eng_manifest *m)
{
        if (m->task_posted)
                return;
        m->task_posted = true;
        rx_loop_post(m->fs->loop, &m->task);
}

/* Stops the manifest for good; waiters learn it from the task. */
static void fail(struct eng_manifest *m, int err)
{
        if (!m->error)
                m->error = err < 0 ? err : -EIO;
        m->step = STEP_IDLE;
        post(m);
}

/* ---- out of space ---- */

/*
 * ENOSPC (or a short write) is not a failure of the manifest: the edits
 * are applied in memory already and nothing durable was lost, so the same
 * chain is tried again once space returns -- an append writes the same
 * bytes at the same place, a rewrite (its MANIFEST.tmp removed first)
 * starts over with a fresh snapshot. The edits keep waiting meanwhile
 * (acknowledging them with an error would leave the state ahead of the
 * file). The first snapshot, written by eng_manifest_create at start-up,
 * fails instead, after removing MANIFEST.tmp: the start fails cleanly.
 * After eng_manifest_stop_retrying the next shortage gives up: the
 * waiting edits fail with -ENOSPC and the manifest takes no more.
 */
static void retry_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct eng_manifest *m = container_of(t, struct eng_manifest, retry_timer);
        enum nospace what = m->nospace;

        (void)loop;
        m->nospace = NOSPACE_NONE;
        if (m->error)
                return;
        m->stats.nospace_retries++;
        if (what == NOSPACE_APPEND)
                step_to(m, STEP_APPEND_WRITE);
        else if (what == NOSPACE_REWRITE)
                rewrite_start(m);
}

/* The chain in flight ran out of space and is undone: retry it later. */
static void nospace_enter(struct eng_manifest *m, enum nospace what)
{
        m->step = STEP_IDLE;
        m->stats.nospace++;
        if (m->last_try || m->create_done) {
                m->gave_up = !m->create_done;
                fail(m, -ENOSPC);
                return;
        }
        m->nospace = what;
        rx_timer_arm_after(m->fs->loop, &m->retry_timer, m->retry_ns);
        if (m->retry_ns < RETRY_MAX_NS)
                m->retry_ns *= 2;
}

/* A rewrite ran out of space: its edits go back before the pending ones
 * (the next rewrite's snapshot holds them all); MANIFEST.tmp is removed. */
static void rewrite_undo(struct eng_manifest *m)
{
        struct eng_manifest_write *last = m->io_head;

        if (last) {
                while (last->next)
                        last = last->next;
                last->next = m->pend_head;
                if (!m->pend_tail)
                        m->pend_tail = last;
                m->pend_head = m->io_head;
                m->io_head = NULL;
        }
        step_to(m, m->new_fd >= 0 ? STEP_UNDO_CLOSE : STEP_UNDO_UNLINK);
}

bool eng_manifest_is_full(const struct eng_manifest *m)
{
        return m->nospace != NOSPACE_NONE;
}

void eng_manifest_stop_retrying(struct eng_manifest *m)
{
        SCREE_ASSERT_SHARD(m);
        m->last_try = true;
        if (m->nospace != NOSPACE_NONE && rx_timer_cancel(m->fs->loop, &m->retry_timer))
                retry_fire(m->fs->loop, &m->retry_timer);
}

/* ---- the I/O chain ---- */

/* Submits the op of m->step. */
static int step_submit(struct eng_manifest *m)
{
        struct eng_fs *fs = m->fs;

        switch (m->step) {
        case STEP_APPEND_WRITE:
                return eng_fs_write(fs, &m->op, m->fd, m->io.data, (uint32_t)m->io.len,
                                    m->io_end - m->io.len, step_done);
        case STEP_APPEND_SYNC:
                return eng_fs_fdatasync(fs, &m->op, m->fd, step_done);
        case STEP_OPEN_DIR:
                return eng_fs_open(fs, &m->op, m->dir, O_RDONLY | O_DIRECTORY, 0, step_done);
        case STEP_OPEN_TMP:
                return eng_fs_open(fs, &m->op, m->tmp_path, O_CREAT | O_TRUNC | O_WRONLY, 0644,
                                   step_done);
        case STEP_SNAPSHOT_WRITE:
                return eng_fs_write(fs, &m->op, m->new_fd, m->io.data, (uint32_t)m->io.len, 0,
                                    step_done);
        case STEP_SNAPSHOT_SYNC:
                return eng_fs_fdatasync(fs, &m->op, m->new_fd, step_done);
        case STEP_RENAME:
                return eng_fs_rename(fs, &m->op, m->tmp_path, m->path, step_done);
        case STEP_DIR_SYNC:
                return eng_fs_fsync(fs, &m->op, m->dir_fd, step_done);
        case STEP_CLOSE_OLD:
                return eng_fs_close(fs, &m->op, m->fd, step_done);
        case STEP_CLOSE:
                return eng_fs_close(fs, &m->op, *m->closing_fd, step_done);
        case STEP_MARK_WRITE:
                return eng_fs_write(fs, &m->op, m->fd, m->mark, REC_HDR, m->synced_upto, step_done);
        case STEP_MARK_SYNC:
                return eng_fs_fdatasync(fs, &m->op, m->fd, step_done);
        case STEP_UNDO_CLOSE:
                return eng_fs_close(fs, &m->op, m->new_fd, step_done);
        case STEP_UNDO_UNLINK:
                return eng_fs_unlink(fs, &m->op, m->tmp_path, step_done);
        case STEP_IDLE:
                break;
        }
        return -EINVAL;
}

/* Moves the chain to step s and submits it; a refused submit stops m. */
static void step_to(struct eng_manifest *m, enum step s)
{
        int r;

        m->step = s;
        r = step_submit(m);
        if (r < 0)
                fail(m, r);
}

static bool rewrite_is_due(const struct eng_manifest *m)
{
        uint64_t limit = ENG_MANIFEST_REWRITE_FACTOR * m->stats.snapshot_bytes;

        if (limit < ENG_MANIFEST_REWRITE_MIN_BYTES)
                limit = ENG_MANIFEST_REWRITE_MIN_BYTES;
        return m->stats.file_bytes >= limit;
}

static uint64_t new_salt(const struct eng_manifest *m)
{
        uint64_t words[3] = { time_wall_ns(), m->state.layout.shard, m->salt };
        uint64_t salt = checksum64(words, sizeof(words), 0);

        return salt != m->salt ? salt : salt + 1;
}

/* Frames header and snapshot of the current state into m->io for a new
 * file, which new records are framed for from now on. */
static int snapshot_prepare(struct eng_manifest *m)
{
        size_t plen = eng_manifest_snapshot_size(&m->state);
        size_t n = ENG_MANIFEST_HEADER_BYTES + eng_manifest_record_size(plen);
        uint8_t *rec;

        if (plen > ENG_MANIFEST_MAX_PAYLOAD_BYTES)
                return -E2BIG;
        m->io.len = 0;
        if (mbuf_reserve(&m->io, n) < 0)
                return -ENOMEM;
        m->salt = new_salt(m);
        eng_manifest_header_encode(m->io.data, m->salt);
        rec = m->io.data + ENG_MANIFEST_HEADER_BYTES;
        eng_manifest_snapshot_encode(rec + REC_HDR, &m->state);
        eng_manifest_record_seal(rec, m->salt, ENG_MANIFEST_RECORD_SNAPSHOT, 0, plen);
        m->io.len = n;
        m->synced_upto = n;
        m->pend_off = n;
        return 0;
}

/* Writes the state as a new file; pending edits are in it. */
static void rewrite_start(struct eng_manifest *m)
{
        int r = snapshot_prepare(m);

        if (r < 0) {
                fail(m, r);
                return;
        }
        m->pend.len = 0;
        m->mark_due = false;            /* the new file's snapshot is synced before it is named */
        m->io_head = m->pend_head;
        m->pend_head = m->pend_tail = NULL;
        step_to(m, m->dir_fd < 0 ? STEP_OPEN_DIR : STEP_OPEN_TMP);
}

static void append_start(struct eng_manifest *m)
{
        struct mbuf t = m->io;

        SCREE_ASSERT(m->pend.len <= UINT32_MAX);
        m->io = m->pend;
        m->pend = t;
        m->pend.len = 0;
        m->io_end = m->pend_off + m->io.len;
        m->pend_off = m->io_end;
        m->io_head = m->pend_head;
        m->pend_head = m->pend_tail = NULL;
        step_to(m, STEP_APPEND_WRITE);
}

/*
 * The last edit's append is synced and nothing else waits: write a sync
 * mark behind it (not synced, but on close), so that damage to that edit
 * later reads as damage, not as a torn tail -- no later record would say
 * it was durable (docs/format/manifest.md). The next append overwrites it.
 */
static void mark_start(struct eng_manifest *m)
{
        m->mark_due = false;
        eng_manifest_record_seal(m->mark, m->salt, ENG_MANIFEST_RECORD_MARK, m->synced_upto, 0);
        step_to(m, STEP_MARK_WRITE);
}

/* Starts the next chain if there is work and nothing in flight. (The
 * first snapshot is started by create.) */
bool eng_manifest_is_quiet(const struct eng_manifest *m)
{
        return m->step == STEP_IDLE && !m->pend.len && !m->mark_due;
}

static void kick(struct eng_manifest *m)
{
        if (m->step != STEP_IDLE || m->error || m->nospace != NOSPACE_NONE)
                return;
        if (!m->closing && rewrite_is_due(m))
                rewrite_start(m);
        else if (m->pend.len)
                append_start(m);
        else if (m->mark_due)
                mark_start(m);
        else if (m->closing)
                close_step(m);
}

/* The chain in flight made its edits durable. */
static void chain_done(struct eng_manifest *m)
{
        struct eng_manifest_write *w = m->io_head;
        void (*create_done)(void *arg, int res) = m->create_done;

        m->step = STEP_IDLE;
        m->io_head = NULL;
        m->create_done = NULL;
        m->retry_ns = RETRY_NS;
        ack_list(w, 0);
        if (create_done)
                create_done(m->create_arg, 0);
        kick(m);
}

static void published(struct eng_manifest *m)
{
        m->fd = m->new_fd;
        m->new_fd = -1;
        m->stats.snapshots++;
        m->stats.file_bytes = m->stats.snapshot_bytes = m->synced_upto;
        chain_done(m);
}

/* The next step after m->step completed with res (checked); -1: the chain is done. */
static int step_next(struct eng_manifest *m, int res)
{
        switch (m->step) {
        case STEP_APPEND_WRITE:
                m->stats.writes++;
                return STEP_APPEND_SYNC;
        case STEP_APPEND_SYNC:
                m->stats.syncs++;
                m->stats.file_bytes = m->synced_upto = m->io_end;
                m->mark_due = true;
                return -1;
        case STEP_MARK_WRITE:
                m->stats.marks++;
                return m->closing ? STEP_MARK_SYNC : -1;
        case STEP_MARK_SYNC:
                return -1;
        case STEP_OPEN_DIR:
                m->dir_fd = res;
                return STEP_OPEN_TMP;
        case STEP_OPEN_TMP:
                m->new_fd = res;
                return STEP_SNAPSHOT_WRITE;
        case STEP_SNAPSHOT_WRITE:
                m->stats.writes++;
                return STEP_SNAPSHOT_SYNC;
        case STEP_SNAPSHOT_SYNC:
                m->stats.syncs++;
                return STEP_RENAME;
        case STEP_RENAME:
                return STEP_DIR_SYNC;
        case STEP_DIR_SYNC:
                return m->fd >= 0 ? STEP_CLOSE_OLD : -1;
        case STEP_CLOSE_OLD:
        case STEP_CLOSE:
        case STEP_UNDO_CLOSE:
        case STEP_UNDO_UNLINK:
        case STEP_IDLE:
                break;
        }
        return -1;
}

static bool is_write(enum step s)
{
        return s == STEP_APPEND_WRITE || s == STEP_SNAPSHOT_WRITE;
}

/* A step failed with err (-ENOSPC for a short write). Returns whether it
 * was handled as running out of space. */
static bool step_nospace(struct eng_manifest *m, enum step s, int err)
{
        if (err != -ENOSPC)
                return false;
        switch (s) {
        case STEP_APPEND_WRITE:
                nospace_enter(m, NOSPACE_APPEND);
                return true;
        case STEP_MARK_WRITE:
                /* Only a mark: go on without it (a damaged last edit would
                 * read as a torn one, as before marks). */
                m->step = STEP_IDLE;
                kick(m);
                if (m->closing)
                        close_step(m);
                return true;
        case STEP_OPEN_TMP:
        case STEP_SNAPSHOT_WRITE:
        case STEP_SNAPSHOT_SYNC:
        case STEP_RENAME:
                rewrite_undo(m);
                return true;
        default:
                return false;
        }
}

/* The undo of a rewrite that ran out of space went one step further. */
static void undo_step_done(struct eng_manifest *m, int res)
{
        if (m->step == STEP_UNDO_CLOSE) {
                m->new_fd = -1;         /* gone even if close failed */
                step_to(m, STEP_UNDO_UNLINK);
                return;
        }
        if (res < 0 && res != -ENOENT) {
                fail(m, res);
                return;
        }
        nospace_enter(m, NOSPACE_REWRITE);
}

static void step_done(struct eng_fs_op *op, int res)
{
        struct eng_manifest *m = container_of(op, struct eng_manifest, op);
        enum step s = m->step;
        int next;

        if (s == STEP_CLOSE || s == STEP_CLOSE_OLD) {
                /* The descriptor is gone even if close failed; the data was
                 * already durable. */
                *(s == STEP_CLOSE ? m->closing_fd : &m->fd) = -1;
                if (s == STEP_CLOSE_OLD) {
                        published(m);
                } else {
                        m->step = STEP_IDLE;
                        close_step(m);
                }
                return;
        }
        if (s == STEP_UNDO_CLOSE || s == STEP_UNDO_UNLINK) {
                undo_step_done(m, res);
                return;
        }
        if (res < 0 || (is_write(s) && (size_t)res != m->io.len) ||
            (s == STEP_MARK_WRITE && res != (int)REC_HDR)) {
                res = res < 0 ? res : -ENOSPC;  /* a short write: out of space */
                if (!step_nospace(m, s, res))
                        fail(m, res);
                return;
        }
        next = step_next(m, res);
        if (next >= 0)
                step_to(m, (enum step)next);
        else if (s == STEP_DIR_SYNC)
                published(m);
        else
                chain_done(m);
}

/* ---- closing ---- */

static void manifest_free(struct eng_manifest *m)
{
        eng_manifest_state_fini(&m->state);
        free(m->pend.data);
        free(m->io.data);
        free(m->path);
        free(m->tmp_path);
        free(m->dir);
        free(m);
}

static void finish_close(struct eng_manifest *m)
{
        void (*done)(void *arg, int res) = m->close_done;
        void *arg = m->close_arg;
        int res = m->gave_up ? 0 : m->error;    /* gave up: every acknowledged edit is in the file */

        rx_timer_cancel(m->fs->loop, &m->retry_timer);
        manifest_free(m);
        done(arg, res);
}

/* Drives a close: flush what is pending (unless stopped), then close the
 * descriptors one by one, then free. Re-entered until it is done. */
static void close_step(struct eng_manifest *m)
{
        int *fds[] = { &m->fd, &m->new_fd, &m->dir_fd };

        if (m->step != STEP_IDLE || m->task_posted)
                return;
        if (!m->error && (m->pend.len || m->mark_due)) {
                kick(m);
                return;
        }
        for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
                if (*fds[i] < 0)
                        continue;
                m->closing_fd = fds[i];
                m->step = STEP_CLOSE;
                if (step_submit(m) == 0)
                        return;
                m->step = STEP_IDLE;    /* cannot close it: leave it */
                *fds[i] = -1;
        }
        finish_close(m);
}

/* ---- loading ---- */

struct load {
        struct eng_fs *fs;
        struct eng_fs_op op;
        eng_manifest_load_cb done;
        void *arg;
        int fd, res;
        struct mbuf buf;
        char path[];
};

static void load_finish(struct load *l)
{
        struct eng_manifest_reader r;
        struct eng_manifest_state s;
        int rc = l->res;

        if (rc == 0) {
                rc = eng_manifest_read(&r, l->buf.data, l->buf.len, &s);
                if (rc == -SCREE_ECORRUPT || rc == -SCREE_EUNSUPPORTED)
                        log_debug("manifest %s: %s at offset %zu", l->path, scree_strerror(rc),
                                  r.bad_off);
                else if (rc == 0 && r.torn)
                        log_debug("manifest %s: torn tail cut at offset %zu", l->path, r.off);
        }
        l->done(l->arg, rc, rc == 0 ? &s : NULL);
        if (rc == 0)
                eng_manifest_state_fini(&s);
        free(l->buf.data);
        free(l);
}

static void load_closed(struct eng_fs_op *op, int res)
{
        (void)res;      /* read-only: a failed close loses nothing */
        load_finish(container_of(op, struct load, op));
}

static void load_close(struct load *l)
{
        if (eng_fs_close(l->fs, &l->op, l->fd, load_closed) < 0)
                load_finish(l);
}

static void load_read(struct load *l);

static void load_read_done(struct eng_fs_op *op, int res)
{
        struct load *l = container_of(op, struct load, op);

        if (res <= 0) {
                l->res = res;   /* 0: end of file */
                load_close(l);
                return;
        }
        l->buf.len += (size_t)res;
        load_read(l);
}

static void load_read(struct load *l)
{
        int r = mbuf_reserve(&l->buf, READ_CHUNK);

        if (r == 0)
                r = eng_fs_read(l->fs, &l->op, l->fd, l->buf.data + l->buf.len, READ_CHUNK, l->buf.len,
                                load_read_done);
        if (r < 0) {
                l->res = r;
                load_close(l);
        }
}

static void load_opened(struct eng_fs_op *op, int res)
{
        struct load *l = container_of(op, struct load, op);

        if (res < 0) {
                l->res = res == -ENOENT ? -SCREE_ENOTFOUND : res;
                load_finish(l);
                return;
        }
        l->fd = res;
        load_read(l);
}

int eng_manifest_load(struct eng_fs *fs, const char *dir, eng_manifest_load_cb done, void *arg)
{
        size_t n = strlen(dir) + sizeof("/MANIFEST");
        struct load *l = calloc(1, sizeof(*l) + n);
        int r;

        if (!l)
                return -ENOMEM;
        l->fs = fs;
        l->done = done;
        l->arg = arg;
        l->fd = -1;
        snprintf(l->path, n, "%s/MANIFEST", dir);
        r = eng_fs_open(fs, &l->op, l->path, O_RDONLY, 0, load_opened);
        if (r < 0)
                free(l);
        return r;
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

static struct eng_manifest *manifest_alloc(struct eng_fs *fs, const char *dir)
{
        struct eng_manifest *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        m->owner_shard = check_current_shard;
        m->fs = fs;
        m->fd = m->new_fd = m->dir_fd = -1;
        m->task = (struct rx_task){ .fn = task_run, .name = "manifest" };
        m->retry_ns = RETRY_NS;
        rx_timer_init(&m->retry_timer, retry_fire, "manifest:nospace_retry");
        m->dir = strdup(dir);
        m->path = path_join(dir, "MANIFEST");
        m->tmp_path = path_join(dir, "MANIFEST.tmp");
        if (!m->dir || !m->path || !m->tmp_path) {
                manifest_free(m);
                return NULL;
        }
        return m;
}

int eng_manifest_create(struct eng_fs *fs, const char *dir, const struct eng_manifest_state *state,
                        void (*done)(void *arg, int res), void *arg, struct eng_manifest **ret)
{
        struct eng_manifest *m;
        int r = eng_manifest_state_check(state);

        if (r < 0)
                return r == -SCREE_ECORRUPT ? -EINVAL : r;
        if (!eng_manifest_state_is_ranged(state))
                return -EINVAL;         /* every file written is version 3: ranges known */
        m = manifest_alloc(fs, dir);
        if (!m)
                return -ENOMEM;
        r = eng_manifest_state_copy(&m->state, state);
        if (r == 0)
                r = snapshot_prepare(m);
        if (r == 0) {
                m->step = STEP_OPEN_DIR;
                r = step_submit(m);
        }
        if (r < 0) {
                manifest_free(m);
                return r;
        }
        m->create_done = done;
        m->create_arg = arg;
        *ret = m;
        return 0;
}

int eng_manifest_apply(struct eng_manifest *m, const struct eng_manifest_edit *e,
                       struct eng_manifest_write *w)
{
        size_t plen = eng_manifest_edit_size(e);
        uint8_t *rec;
        int r;

        SCREE_ASSERT_SHARD(m);
        if (m->error)
                return m->error;
        if (m->closing)
                return -SCREE_ESHUTDOWN;
        if (e->implicit_entries)
                return -EINVAL;         /* a version 1 or 2 rule; not written */
        if (plen > ENG_MANIFEST_MAX_PAYLOAD_BYTES)
                return -E2BIG;
        if (mbuf_reserve(&m->pend, eng_manifest_record_size(plen)) < 0)
                return -ENOMEM;
        r = eng_manifest_state_apply(&m->state, e);
        if (r < 0)
                return r == -SCREE_ECORRUPT ? -EINVAL : r;
        rec = m->pend.data + m->pend.len;
        eng_manifest_edit_encode(rec + REC_HDR, e);
        m->pend.len += eng_manifest_record_seal(rec, m->salt, ENG_MANIFEST_RECORD_EDIT, m->synced_upto,
                                                plen);
        w->next = NULL;
        if (m->pend_tail)
                m->pend_tail->next = w;
        else
                m->pend_head = w;
        m->pend_tail = w;
        m->stats.edits++;
        kick(m);
        return 0;
}

const struct eng_manifest_state *eng_manifest_state(const struct eng_manifest *m)
{
        return &m->state;
}

int eng_manifest_close(struct eng_manifest *m, void (*done)(void *arg, int res), void *arg)
{
        SCREE_ASSERT_SHARD(m);
        if (m->closing)
                return -EALREADY;
        m->closing = true;
        m->close_done = done;
        m->close_arg = arg;
        eng_manifest_stop_retrying(m);
        /* From the loop, so done never runs inside this call. */
        post(m);
        return 0;
}

const struct eng_manifest_stats *eng_manifest_stats(const struct eng_manifest *m)
{
        return &m->stats;
}
