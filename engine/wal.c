/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log writer; see wal.h for the model.
 *
 * Segments form a list, oldest first; the newest is the reserve being
 * prepared (or ready) for the next roll, the one before it receives appends.
 * Each segment has an active buffer whose byte 0 sits at file_off (4 KiB
 * aligned). A flush hands that buffer to one O_DIRECT write, rounded up to
 * whole blocks (zero padded), and starts a new active buffer holding a copy
 * of the partial last block, so appends never touch memory under I/O and
 * the next flush rewrites that block with more records. Flushes go oldest
 * segment first, one write+fdatasync at a time, so when segment S is durable
 * up to offset O every earlier segment is durable too.
 *
 * A segment's name must be durable before any record in it is acknowledged,
 * else a power cut could take the file and its records with it. So its
 * preparation ends with an fsync of the directory (opened once, at the
 * start; segments wait for it), and a segment takes writes only once
 * prepared: the first group commit into a fresh segment waits for both
 * syncs. The reserve is prepared ahead, so in steady state that directory
 * fsync is off the write path.
 *
 * Once a sync completes and nothing waits to be written, the log writes a
 * sync mark (wal_format.h) right behind its last record, in one more write
 * of that record's block, not synced (but on close): the record after a
 * group commit is what tells a reader that the group was durable, and the
 * last group has none. With the mark, damage to it reads as damage, not as
 * a torn tail (docs/format/wal.md, "Torn or damaged"). The next flush
 * writes its records over the mark.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/mem.h"
#include "base/time.h"
#include "engine/wal.h"
#include "engine/wal_format.h"
#include "engine/wal_gather.h"
#include "engine/wal_int.h"

/* Periodic mode: appends buffered beyond this are flushed without waiting
 * for the timer, which bounds the buffer's memory. */
#define PERIODIC_FLUSH_BYTES (1u << 20)

/* Whether wal_kick may start a flush now. Batch mode flushes as soon as the
 * disk is free (group commit). Periodic mode flushes only when its timer
 * fired (or the buffer grew past PERIODIC_FLUSH_BYTES) and on close: a
 * flush chained to every sync would keep a write and an fdatasync in
 * flight all the time -- thousands per second, each a disk command and an
 * io-wq wake-up, where one per period is what was asked for. */
static bool flush_allowed(const struct eng_wal *wal)
{
        return wal->o.sync == ENG_WAL_SYNC_BATCH || wal->flush_due || wal->closing;
}

/* Whether the next flush of the current segment waits for more writers
 * (wal_gather.h; batch mode): arms the timer that ends the wait. Never
 * holds a flush without that timer. */
static bool gather_hold(struct eng_wal *wal)
{
        uint64_t until;

        if (wal->o.sync != ENG_WAL_SYNC_BATCH || wal->closing)
                return false;
        until = eng_wal_gather_until(&wal->gather, time_now_ns());
        if (!until || rx_timer_arm_at(wal->fs->loop, &wal->gather_timer, until) < 0)
                return false;
        eng_wal_gather_hold(&wal->gather);
        wal->stats.gathers = wal->gather.waits;
        return true;
}

static void gather_fire(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        wal_kick(container_of(t, struct eng_wal, gather_timer));
}

/* ---- buffers ---- */

int wal_wbuf_init(struct eng_wal *wal, struct wbuf *b, size_t cap, uint64_t file_off)
{
        cap = (cap + BLOCK - 1) & ~(size_t)(BLOCK - 1);
        b->data = mem_alloc_aligned(BLOCK, cap);
        if (!b->data)
                return -ENOMEM;
        wal->stats.buffers++;
        b->cap = cap;
        b->len = 0;
        b->file_off = file_off;
        return 0;
}

void wal_wbuf_fini(struct wbuf *b)
{
        mem_free_aligned(b->data);
        b->data = NULL;
        b->cap = b->len = 0;
}

/*
 * The next active buffer, of at least cap bytes: the spare when it is big
 * enough, so that a busy log swaps two buffers instead of allocating one
 * per flush -- a fresh one of a few MiB came back from the allocator
 * unmapped, and faulting it in took a quarter of the shard's time in a
 * YCSB A run (perf: page faults under memset).
 */
static int wbuf_take(struct eng_wal *wal, struct wbuf *b, size_t cap, uint64_t file_off)
{
        if (!wal->spare.data || wal->spare.cap < cap)
                return wal_wbuf_init(wal, b, cap, file_off);
        *b = wal->spare;
        wal->spare = (struct wbuf){ 0 };
        b->len = 0;
        b->file_off = file_off;
        return 0;
}

/* Done with a written buffer: kept as the spare if it is the bigger. */
static void wbuf_keep(struct eng_wal *wal, struct wbuf *b)
{
        if (wal->spare.cap < b->cap) {
                struct wbuf t = wal->spare;

                wal->spare = *b;
                *b = t;
        }
        wal_wbuf_fini(b);
}

/* Makes room for n more bytes. Only for a buffer not under I/O. */
int wal_wbuf_reserve(struct eng_wal *wal, struct wbuf *b, size_t n)
{
        struct wbuf nb;

        if (b->len + n <= b->cap)
                return 0;
        if (wal_wbuf_init(wal, &nb, (b->len + n) * 2, b->file_off) < 0)
                return -ENOMEM;
        memcpy(nb.data, b->data, b->len);
        nb.len = b->len;
        wal_wbuf_fini(b);
        *b = nb;
        return 0;
}

/* ---- failure and acknowledgement ---- */

static void ack_until(struct eng_wal *wal, uint64_t segment, uint64_t durable_off, int res)
{
        while (wal->ack_head && (res < 0 || wal->ack_head->segment < segment ||
                                 (wal->ack_head->segment == segment &&
                                  wal->ack_head->end_off <= durable_off))) {
                struct eng_wal_write *w = wal->ack_head;

                wal->ack_head = w->next;
                if (!wal->ack_head)
                        wal->ack_tail = NULL;
                w->done(w, res);
        }
}

/* Stops the log for good: every pending and later append gets err. */
void wal_fail(struct eng_wal *wal, int err)
{
        if (!wal->error)
                wal->error = err < 0 ? err : -EIO;
        ack_until(wal, 0, 0, wal->error);
        if (wal->closing)
                wal_close_step(wal);
}

/* ---- out of space ---- */

/*
 * ENOSPC is not a failure of the log: nothing written was lost, and the
 * same bytes can be written again once space returns (docs/design.md,
 * "Disk full"). What it stops: the flush whose write failed (its buffer is
 * kept, wal->write_nospace), and a segment whose preparation failed
 * (undone, s->nospace). The appends that wait for bytes that cannot be
 * written now fail with -ENOSPC -- not acknowledged; their records stay
 * buffered and are written when the retry succeeds, since the shard has
 * applied them already. A timer retries after o.nospace_retry_ns,
 * doubling up to RETRY_MAX_NS; closing tries once more and then gives the
 * unwritten bytes up (nothing acknowledged is among them).
 */
#define RETRY_MAX_FACTOR 8u

/* Fails the appends waiting for bytes that cannot be written now: all of
 * them after a failed write (they are behind it), else those in the first
 * segment whose preparation failed and later. */
static void fail_stuck(struct eng_wal *wal)
{
        struct eng_wal_write **pp = &wal->ack_head, *prev = NULL, *w;
        uint64_t from = UINT64_MAX;

        if (wal->write_nospace) {
                from = 0;
        } else {
                for (const struct wal_seg *s = wal->segs; s; s = s->next) {
                        if (s->nospace) {
                                from = s->id;
                                break;
                        }
                }
        }
        while (*pp && (*pp)->segment < from) {
                prev = *pp;
                pp = &(*pp)->next;
        }
        w = *pp;
        *pp = NULL;
        wal->ack_tail = prev;
        while (w) {
                struct eng_wal_write *next = w->next;

                w->done(w, -ENOSPC);
                w = next;
        }
}

static void stuck_task_run(struct rx_loop *loop, struct rx_task *t)
{
        struct eng_wal *wal = container_of(t, struct eng_wal, stuck_task);

        (void)loop;
        wal->stuck_posted = false;
        if (!wal->error)
                fail_stuck(wal);
        if (wal->closing)
                wal_close_step(wal);
}

static void retry_now(struct eng_wal *wal);

static void retry_fire(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        retry_now(container_of(t, struct eng_wal, retry_timer));
}

/* Something ran out of space: fail what waits for it, arm the retry. */
void wal_nospace_enter(struct eng_wal *wal)
{
        wal->stats.nospace++;
        fail_stuck(wal);
        if (wal->closing) {
                wal_close_step(wal);        /* no more retries: close gives it up */
                return;
        }
        if (!rx_timer_is_armed(&wal->retry_timer)) {
                rx_timer_arm_after(wal->fs->loop, &wal->retry_timer, wal->retry_ns);
                if (wal->retry_ns < RETRY_MAX_FACTOR * wal->o.nospace_retry_ns)
                        wal->retry_ns *= 2;
        }
}

/* A write or a preparation succeeded: the next shortage retries soon again. */
void wal_nospace_left(struct eng_wal *wal)
{
        wal->retry_ns = wal->o.nospace_retry_ns;
}

/* Writes the flush's buffer (again, after ENOSPC: the same bytes at the
 * same place). */
static int flush_write(struct eng_wal *wal);

static void retry_now(struct eng_wal *wal)
{
        int r = 0;

        if (wal->error)
                return;
        wal->stats.nospace_retries++;
        if (wal->write_nospace && !wal->io_busy) {
                wal->write_nospace = false;
                r = flush_write(wal);
        }
        for (struct wal_seg *s = wal->segs; s && r >= 0; s = s->next) {
                if (!s->nospace)
                        continue;
                s->nospace = false;
                r = wal_prep_start(s);
        }
        if (r < 0)
                wal_fail(wal, r);
}

bool eng_wal_is_full(const struct eng_wal *wal)
{
        return wal->write_nospace || wal->cur->nospace;
}

static bool mark_wanted(const struct eng_wal *wal);

bool eng_wal_is_quiet(const struct eng_wal *wal)
{
        if (wal->io_busy || mark_wanted(wal) || (wal->cur && wal->cur->next &&
                                                 wal_zero_wanted(wal->cur->next)))
                return false;
        for (const struct wal_seg *s = wal->segs; s; s = s->next)
                if (!s->ready || s->busy || wal_seg_pending(s))
                        return false;
        return true;
}

/* ---- sync marks ---- */

/* The partial block before the mark (< BLOCK) and the mark: two blocks. */
#define MARK_BUF (2u * BLOCK)

/* A mark is written once the log has stayed idle this long after a sync,
 * not after every sync: the next group has to wait for the mark's write,
 * which cost a lone batch-mode writer 30% of its writes a second (4.6k ->
 * 3.2k, scree-bench --sync batch --inflight 1). Under load the next
 * group's record vouches for the last one anyway; only a record that was
 * the log's last for under this long (written just before a crash) stays
 * unvouched. */
#define MARK_IDLE_NS (10 * UINT64_C(1000000))

static void mark_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct eng_wal *wal = container_of(t, struct eng_wal, mark_timer);

        (void)loop;
        wal->mark_due = true;
        wal_kick(wal);
}

static void mark_written(struct eng_fs_op *op, int res);

/* Whether the current segment's last record waits for a sync mark: it
 * has durable records, nothing is pending, and the mark fits. */
static bool mark_wanted(const struct eng_wal *wal)
{
        const struct wal_seg *s = wal->cur;

        return s && !wal->error && s->ready && !s->busy && s->durable_off > ENG_WAL_SEGMENT_HEADER_BYTES &&
               !wal_seg_pending(s) && s->mark_off != s->durable_off &&
               s->durable_off + ENG_WAL_RECORD_HEADER_BYTES <= wal->o.segment_bytes;
}

/* Writes the mark behind the last record: the block holding the record's
 * end (a copy of it is the active buffer's start), the mark, zeros. */
static int start_mark(struct eng_wal *wal)
{
        struct wal_seg *s = wal->cur;
        size_t head = s->active.len;
        uint32_t n = (uint32_t)((head + ENG_WAL_RECORD_HEADER_BYTES + BLOCK - 1) & ~(size_t)(BLOCK - 1));
        int r;

        SCREE_ASSERT(s->active.file_off + head == s->durable_off);
        if (!wal->mark_buf && !(wal->mark_buf = mem_alloc_aligned(BLOCK, MARK_BUF)))
                return -ENOMEM;
        memcpy(wal->mark_buf, s->active.data, head);
        eng_wal_record_encode(wal->mark_buf + head, s->id, ENG_WAL_RECORD_MARK, wal->last_seq,
                              s->durable_off, NULL, 0);
        memset(wal->mark_buf + head + ENG_WAL_RECORD_HEADER_BYTES, 0,
               n - head - ENG_WAL_RECORD_HEADER_BYTES);
        wal->io_seg = s;
        wal->io_end = s->durable_off;
        wal->mark_len = n;
        r = eng_fs_write(wal->fs, &wal->io_op, s->fd, wal->mark_buf, n, s->active.file_off, mark_written);
        if (r == 0)
                wal->io_busy = true;
        return r;
}

static void mark_synced(struct eng_fs_op *op, int res)
{
        struct eng_wal *wal = container_of(op, struct eng_wal, io_op);

        wal->io_busy = false;
        if (res < 0) {
                wal_fail(wal, res);
                return;
        }
        wal_close_step(wal);
}

static void mark_written(struct eng_fs_op *op, int res)
{
        struct eng_wal *wal = container_of(op, struct eng_wal, io_op);
        int r;

        if (res != (int)wal->mark_len) {
                wal->io_busy = false;
                if (res == -ENOSPC || res >= 0) {
                        /* Out of space (the block is fallocated, but): the
                         * log goes on without this mark -- a damaged last
                         * group would read as a torn tail, as before marks. */
                        wal->io_seg->mark_off = wal->io_end;
                        if (wal->closing)
                                wal_close_step(wal);
                        else
                                wal_kick(wal);
                        return;
                }
                wal_fail(wal, res);
                return;
        }
        wal->stats.writes++;
        wal->stats.marks++;
        wal->stats.written_bytes += wal->mark_len;
        wal->io_seg->mark_off = wal->io_end;
        if (wal->closing) {
                /* A clean close leaves the mark durable too. */
                r = eng_fs_fdatasync(wal->fs, &wal->io_op, wal->io_seg->fd, mark_synced);
                if (r < 0) {
                        wal->io_busy = false;
                        wal_fail(wal, r);
                }
                return;
        }
        wal->io_busy = false;
        wal_kick(wal);
        wal_zero_kick(wal);
}

/* ---- flushing ---- */

static void sync_done(struct eng_fs_op *op, int res)
{
        struct eng_wal *wal = container_of(op, struct eng_wal, io_op);
        struct wal_seg *s = wal->io_seg;

        wal->io_busy = false;
        wbuf_keep(wal, &wal->flushing);
        if (res < 0) {
                wal_fail(wal, res);
                return;
        }
        wal->stats.syncs++;
        eng_wal_gather_synced(&wal->gather, time_now_ns());
        s->durable_off = wal->io_end;
        ack_until(wal, s->id, s->durable_off, 0);
        wal_kick(wal);
        wal_zero_kick(wal);
        if (wal->closing)
                wal_close_step(wal);
}

static void write_done(struct eng_fs_op *op, int res)
{
        struct eng_wal *wal = container_of(op, struct eng_wal, io_op);
        size_t want = (wal->flushing.len + BLOCK - 1) & ~(size_t)(BLOCK - 1);
        int r;

        if (res != (int)want) {
                wal->io_busy = false;
                /* A short O_DIRECT write: out of space (a retry tells another error). */
                if (res == -ENOSPC || res >= 0) {
                        wal->write_nospace = true;
                        wal_nospace_enter(wal);
                        return;
                }
                wal_wbuf_fini(&wal->flushing);
                wal_fail(wal, res);
                return;
        }
        wal_nospace_left(wal);
        wal->stats.writes++;
        wal->stats.written_bytes += want;
        r = eng_fs_fdatasync(wal->fs, &wal->io_op, wal->io_seg->fd, sync_done);
        if (r < 0) {
                wal->io_busy = false;
                wal_wbuf_fini(&wal->flushing);
                wal_fail(wal, r);
        }
}

/* Writes s's active buffer; appends continue in a fresh one. */
static int start_flush(struct eng_wal *wal, struct wal_seg *s)
{
        struct wbuf *a = &s->active, next;
        size_t full = a->len & ~(size_t)(BLOCK - 1);

        wal->mark_due = false;  /* not idle: a mark waits for the next quiet spell */
        int r;

        r = wbuf_take(wal, &next, a->cap > MIN_BUF ? a->cap : MIN_BUF, a->file_off + full);
        if (r < 0)
                return r;
        /* The reader stops at a zero record header after the last record. */
        memset(a->data + a->len, 0, ((a->len + BLOCK - 1) & ~(size_t)(BLOCK - 1)) - a->len);
        memcpy(next.data, a->data + full, a->len - full);
        next.len = a->len - full;
        wal->flushing = *a;
        eng_wal_gather_flush(&wal->gather, time_now_ns());
        wal->io_end = wal_seg_end(s);
        wal->io_seg = s;
        *a = next;
        r = flush_write(wal);
        if (r < 0)
                wal_wbuf_fini(&wal->flushing);
        return r;
}

static int flush_write(struct eng_wal *wal)
{
        int r = eng_fs_write(wal->fs, &wal->io_op, wal->io_seg->fd, wal->flushing.data,
                             (uint32_t)((wal->flushing.len + BLOCK - 1) & ~(size_t)(BLOCK - 1)),
                             wal->flushing.file_off, write_done);

        if (r == 0)
                wal->io_busy = true;
        return r;
}

/* Closes and drops sealed segments at the head that are fully durable. */
static void retire_sealed(struct eng_wal *wal);

void wal_kick(struct eng_wal *wal)
{
        int r;

        if (wal->io_busy || wal->error || wal->write_nospace)
                return;
        retire_sealed(wal);
        for (struct wal_seg *s = wal->segs; s; s = s->next) {
                if (!wal_seg_pending(s))
                        continue;
                if (!s->ready || s->busy)
                        return;         /* prep_done or zero_done kicks again */
                if (!flush_allowed(wal) || (s == wal->cur && gather_hold(wal)))
                        return;
                rx_timer_cancel(wal->fs->loop, &wal->gather_timer);
                /* Flushing the current segment takes all that is due; a
                 * sealed one leaves the flag for the segments after it. */
                if (s == wal->cur)
                        wal->flush_due = false;
                r = start_flush(wal, s);
                if (r < 0)
                        wal_fail(wal, r);
                return;
        }
        if (!mark_wanted(wal))
                return;
        if (wal->closing || wal->mark_due) {
                wal->mark_due = false;
                if ((r = start_mark(wal)) < 0)
                        wal_fail(wal, r);
        } else if (!rx_timer_is_armed(&wal->mark_timer)) {
                rx_timer_arm_after(wal->fs->loop, &wal->mark_timer, MARK_IDLE_NS);
        }
}

/* ---- retiring and closing segments ---- */

static void unlink_head(struct eng_wal *wal)
{
        struct wal_seg *s = wal->segs;

        wal->segs = s->next;
        if (s == wal->cur)
                wal->cur = NULL;        /* closing: the last segment is gone */
        wal_seg_free(s);
}

static void retired(struct eng_fs_op *op, int res)
{
        struct wal_seg *s = container_of(op, struct wal_seg, op);
        struct eng_wal *wal = s->wal;

        s->busy = false;
        s->fd = -1;
        unlink_head(wal);
        if (res < 0)
                wal_fail(wal, res);
        else if (wal->closing)
                wal_close_step(wal);
        else
                wal_kick(wal);
}

static void retire_sealed(struct eng_wal *wal)
{
        struct wal_seg *s = wal->segs;

        if (!s || !s->sealed || s->busy || wal_seg_pending(s) || s == wal->cur)
                return;
        if (eng_fs_close(wal->fs, &s->op, s->fd, retired) < 0)
                wal_fail(wal, -EIO);
        else
                s->busy = true;
}

static void free_wal(struct eng_wal *wal)
{
        while (wal->segs)
                unlink_head(wal);
        wal_wbuf_fini(&wal->spare);
        wal_wbuf_fini(&wal->flushing);      /* kept for a retry after ENOSPC */
        mem_free_aligned(wal->zeros);
        mem_free_aligned(wal->mark_buf);
        free(wal);
}

static void finish_close(struct eng_wal *wal)
{
        void (*done)(void *arg, int res) = wal->close_done;
        void *arg = wal->close_arg;
        int res = wal->error;

        rx_timer_cancel(wal->fs->loop, &wal->timer);
        rx_timer_cancel(wal->fs->loop, &wal->retry_timer);
        rx_timer_cancel(wal->fs->loop, &wal->mark_timer);
        rx_timer_cancel(wal->fs->loop, &wal->gather_timer);
        free_wal(wal);
        done(arg, res);
}

/* The last step of a close: the directory's fd is closed. */
static void dir_closed(struct eng_fs_op *op, int res)
{
        struct eng_wal *wal = container_of(op, struct eng_wal, dir_op);

        wal->dir_busy = false;
        wal->dir_fd = -1;
        if (res < 0 && !wal->error)
                wal->error = res;
        finish_close(wal);
}

/*
 * Drives a close: flush everything (unless the log failed), then close the
 * segments one by one, then the directory, then free. Re-entered from every
 * completion while closing; returns as soon as it must wait.
 */
void wal_close_step(struct eng_wal *wal)
{
        bool stuck = wal->write_nospace;        /* closing: given up (wal_nospace_enter) */

        if (wal->io_busy || wal->dir_busy || wal->stuck_posted)
                return;         /* stuck_task_run comes back here */
        for (struct wal_seg *s = wal->segs; s; s = s->next) {
                stuck = stuck || s->nospace;    /* flushes go in order: all after it too */
                if (s->busy || (!wal->error && !stuck && wal_seg_pending(s))) {
                        wal_kick(wal);
                        return;
                }
        }
        if (mark_wanted(wal)) {
                wal_kick(wal);
                return;
        }
        while (wal->segs && wal->segs->fd < 0)
                unlink_head(wal);
        if (!wal->segs && wal->dir_fd >= 0 &&
            eng_fs_close(wal->fs, &wal->dir_op, wal->dir_fd, dir_closed) == 0) {
                wal->dir_busy = true;
                return;
        }
        if (!wal->segs) {
                finish_close(wal);      /* a failed close of the directory leaks its fd */
                return;
        }
        wal->segs->busy = true;
        if (eng_fs_close(wal->fs, &wal->segs->op, wal->segs->fd, retired) < 0) {
                wal->segs->busy = false;
                wal->segs->fd = -1;
                wal_fail(wal, -EIO);
        }
}

/* ---- the API ---- */

static void close_task_run(struct rx_loop *loop, struct rx_task *t)
{
        (void)loop;
        wal_close_step(container_of(t, struct eng_wal, close_task));
}

static void period_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct eng_wal *wal = container_of(t, struct eng_wal, timer);

        for (struct wal_seg *s = wal->segs; s; s = s->next)
                if (wal_seg_pending(s))
                        wal->flush_due = true;
        wal_kick(wal);
        if (!wal->closing)
                rx_timer_arm_after(loop, t, wal->o.period_ns);
}

/* The directory is open: prepare the segments that waited for it. */
static void dir_opened(struct eng_fs_op *op, int res)
{
        struct eng_wal *wal = container_of(op, struct eng_wal, dir_op);
        int r = res;

        wal->dir_busy = false;
        if (res >= 0) {
                wal->dir_fd = res;
                for (struct wal_seg *s = wal->segs; s && r >= 0; s = s->next)
                        r = wal_prep_start(s);
        }
        if (r < 0)
                wal_fail(wal, r);
        else if (wal->closing)
                wal_close_step(wal);
}

int eng_wal_open(struct eng_fs *fs, const struct eng_wal_opts *o, struct eng_wal **ret)
{
        struct eng_wal *wal;
        int r;

        if (!o->dir || o->first_segment == 0 ||
            (o->segment_bytes && (o->segment_bytes % BLOCK ||
                                  o->segment_bytes < 2 * ENG_WAL_SEGMENT_HEADER_BYTES)) ||
            o->sync < 0 || o->sync >= ENG_WAL_SYNC_MAX)
                return -EINVAL;
        wal = calloc(1, sizeof(*wal));
        if (!wal)
                return -ENOMEM;
        wal->owner_shard = check_current_shard;
        wal->fs = fs;
        wal->o = *o;
        wal->dir_fd = -1;
        if (!wal->o.segment_bytes)
                wal->o.segment_bytes = ENG_WAL_DEFAULT_SEGMENT_BYTES;
        if (!wal->o.period_ns)
                wal->o.period_ns = ENG_WAL_DEFAULT_PERIOD_NS;
        if (!wal->o.nospace_retry_ns)
                wal->o.nospace_retry_ns = ENG_WAL_DEFAULT_NOSPACE_RETRY_NS;
        wal->retry_ns = wal->o.nospace_retry_ns;
        rx_timer_init(&wal->timer, period_fire, "wal:periodic_sync");
        rx_timer_init(&wal->retry_timer, retry_fire, "wal:nospace_retry");
        rx_timer_init(&wal->mark_timer, mark_fire, "wal:sync_mark");
        rx_timer_init(&wal->gather_timer, gather_fire, "wal:gather");
        wal->stuck_task = (struct rx_task){ .fn = stuck_task_run, .name = "wal:nospace" };
        wal->close_task = (struct rx_task){ .fn = close_task_run, .name = "wal:close" };
        wal->cur = wal_seg_new(wal, o->first_segment);
        if (!wal->cur) {
                free(wal);
                return -ENOMEM;
        }
        /* Without a reserve the first roll fails with -ENOMEM, cleanly. */
        wal_seg_new(wal, o->first_segment + 1);
        r = eng_fs_open(fs, &wal->dir_op, wal->o.dir, O_RDONLY | O_DIRECTORY, 0, dir_opened);
        if (r < 0) {
                free_wal(wal);
                return r;
        }
        wal->dir_busy = true;
        if (wal->o.sync == ENG_WAL_SYNC_PERIODIC)
                rx_timer_arm_after(fs->loop, &wal->timer, wal->o.period_ns);
        *ret = wal;
        return 0;
}

/* Appends one record; durable: w is acknowledged once it is synced, in
 * periodic mode too (a flush is started for it). Inlined into both entry
 * points, so ordinary appends pay no extra branch for it but the
 * constant. */
static inline int append(struct eng_wal *wal, struct eng_wal_write *w,
                         enum eng_wal_record_type type, uint64_t seq, const void *payload,
                         uint32_t len, bool durable)
{
        size_t rs = eng_wal_record_size(len);
        struct wal_seg *s;
        int r;

        SCREE_ASSERT_SHARD(wal);
        if (wal->error)
                return wal->error;
        if (wal->closing)
                return -SCREE_ESHUTDOWN;
        if (rs > wal->o.segment_bytes - ENG_WAL_SEGMENT_HEADER_BYTES)
                return -E2BIG;
        if (wal->stats.appends && seq <= wal->last_seq)
                return -EINVAL;
        if (wal_seg_end(wal->cur) + rs > wal->o.segment_bytes && (r = wal_roll(wal)) < 0)
                return r;
        s = wal->cur;
        r = wal_wbuf_reserve(wal, &s->active, rs);
        if (r < 0)
                return r;
        eng_wal_record_encode(s->active.data + s->active.len, s->id, type, seq, s->durable_off,
                              payload, len);
        s->active.len += rs;
        wal->last_seq = seq;
        wal->stats.appends++;
        wal->stats.bytes += rs;
        if (wal->o.sync == ENG_WAL_SYNC_PERIODIC) {
                if (durable || s->active.len >= PERIODIC_FLUSH_BYTES)
                        wal->flush_due = true;
                if (!durable) {
                        if (wal->flush_due)
                                wal_kick(wal);
                        return 1;
                }
        }
        if (w->writers)
                eng_wal_gather_arrive(&wal->gather, w->writers, time_now_ns());
        w->next = NULL;
        w->segment = s->id;
        w->end_off = wal_seg_end(s);
        if (wal->ack_tail)
                wal->ack_tail->next = w;
        else
                wal->ack_head = w;
        wal->ack_tail = w;
        if (s->nospace || wal->write_nospace) {
                /* Nothing can be written there now: fail it from the loop. */
                if (!wal->stuck_posted) {
                        wal->stuck_posted = true;
                        rx_loop_post(wal->fs->loop, &wal->stuck_task);
                }
                return 0;
        }
        wal_kick(wal);
        return 0;
}

int eng_wal_append(struct eng_wal *wal, struct eng_wal_write *w, uint64_t seq, const void *payload,
                   uint32_t len)
{
        return append(wal, w, ENG_WAL_RECORD_BATCH, seq, payload, len, false);
}

int eng_wal_append_record(struct eng_wal *wal, struct eng_wal_write *w,
                          enum eng_wal_record_type type, uint64_t seq, const void *payload,
                          uint32_t len, bool durable)
{
        if (type <= ENG_WAL_RECORD_TYPE_INVALID || type >= ENG_WAL_RECORD_TYPE_MAX ||
            type == ENG_WAL_RECORD_MARK || (durable && !w))
                return -EINVAL;
        return append(wal, w, type, seq, payload, len, durable);
}

int eng_wal_close(struct eng_wal *wal, void (*done)(void *arg, int res), void *arg)
{
        SCREE_ASSERT_SHARD(wal);
        if (wal->closing)
                return -EALREADY;
        wal->closing = true;
        wal->close_done = done;
        wal->close_arg = arg;
        rx_timer_cancel(wal->fs->loop, &wal->timer);
        /* Out of space: one last try now, and no more after it. */
        if (rx_timer_cancel(wal->fs->loop, &wal->retry_timer))
                retry_now(wal);
        /* Completions re-enter close_step; start it from the loop so done
         * never runs inside this call. */
        rx_loop_post(wal->fs->loop, &wal->close_task);
        return 0;
}

const struct eng_wal_stats *eng_wal_stats(const struct eng_wal *wal)
{
        return &wal->stats;
}

int eng_wal_recycle(struct eng_wal *wal, uint64_t segment)
{
        SCREE_ASSERT_SHARD(wal);
        /* Only files this log created have the current segment size (the old
         * log's may not); and none of the log's live segments. */
        if (wal->error || wal->closing || wal->n_pool >= ENG_WAL_RECYCLE_MAX ||
            segment < wal->o.first_segment || !wal->segs || segment >= wal->segs->id)
                return 0;
        wal->pool[wal->n_pool++] = segment;
        return 1;
}

uint64_t eng_wal_segment(const struct eng_wal *wal)
{
        return wal->cur->id;
}
