/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log segments (see wal.c for the model): a segment's preparation
 * (open, fallocate or reuse a recycled file, header, fdatasync, rename,
 * directory fsync) and its undoing when the disk is full, the roll from
 * the current segment to the reserve, and the zeros written over the
 * reserve ahead of use. Runs on the log's owning shard.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "engine/wal_format.h"
#include "engine/wal_int.h"

/* ---- segment preparation: open, fallocate, header, fdatasync, dir fsync ---- */

enum { PREP_OPEN, PREP_FALLOCATE, PREP_HEADER, PREP_SYNC, PREP_RENAME, PREP_DIR_SYNC, PREP_DONE,
       PREP_UNDO_CLOSE, PREP_UNDO_UNLINK };

/* A recycled file gets its header and a zero block (so the segment reads
 * as empty, not as a torn tail of stale bytes) before its rename. */
#define RECYCLED_HEAD_BYTES (ENG_WAL_SEGMENT_HEADER_BYTES + BLOCK)

static void prep_done(struct eng_fs_op *op, int res);
static void prep_undo(struct wal_seg *s);

static void old_path(const struct eng_wal *wal, char *dst, size_t len, uint64_t id)
{
        snprintf(dst, len, "%s/%016llx.log", wal->o.dir, (unsigned long long)id);
}

static uint32_t head_bytes(const struct wal_seg *s)
{
        return s->recycled_id ? RECYCLED_HEAD_BYTES : ENG_WAL_SEGMENT_HEADER_BYTES;
}

/* A recycled file: open under its old name, header, zero block, fdatasync,
 * rename, directory fsync. The header names the new id before the file
 * takes that name, so a file named like a segment never carries another
 * id; a cut before the rename leaves the old name, below the manifest's
 * log segment, which start-up ignores and deletes. */
static int prep_submit_recycled(struct wal_seg *s)
{
        struct eng_wal *wal = s->wal;
        /* Paths stay with the op until it completes: the old name is kept
         * in the segment, after its own. */
        const char *from = s->path + strlen(s->path) + 1;

        switch (s->prep_step) {
        case PREP_OPEN:
                return eng_fs_open(wal->fs, &s->op, from, O_RDWR | O_DIRECT, 0, prep_done);
        case PREP_RENAME:
                return eng_fs_rename(wal->fs, &s->op, from, s->path, prep_done);
        default:
                return -EINVAL;
        }
}

static int prep_submit(struct wal_seg *s)
{
        struct eng_wal *wal = s->wal;

        if (s->recycled_id && (s->prep_step == PREP_OPEN || s->prep_step == PREP_RENAME))
                return prep_submit_recycled(s);
        switch (s->prep_step) {
        case PREP_OPEN:
                /* O_EXCL: a leftover file of that id would mix its records,
                 * seeded with the same id, into this log. */
                return eng_fs_open(wal->fs, &s->op, s->path, O_CREAT | O_EXCL | O_RDWR | O_DIRECT, 0644,
                                   prep_done);
        case PREP_FALLOCATE:
                return eng_fs_fallocate(wal->fs, &s->op, s->fd, 0, 0, wal->o.segment_bytes, prep_done);
        case PREP_HEADER:
                eng_wal_segment_header_encode(s->header, wal->o.shard, s->id);
                return eng_fs_write(wal->fs, &s->op, s->fd, s->header, head_bytes(s), 0, prep_done);
        case PREP_SYNC:
                return eng_fs_fdatasync(wal->fs, &s->op, s->fd, prep_done);
        case PREP_DIR_SYNC:
                /* The new name; a failure stops the log like a failed fdatasync. */
                return eng_fs_fsync(wal->fs, &s->op, wal->dir_fd, prep_done);
        default:
                return -EINVAL;
        }
}

static void prep_done(struct eng_fs_op *op, int res)
{
        struct wal_seg *s = container_of(op, struct wal_seg, op);
        struct eng_wal *wal = s->wal;
        int r;

        s->busy = false;
        if (res < 0 || (s->prep_step == PREP_HEADER && res != (int)head_bytes(s))) {
                /* A short O_DIRECT write: out of space (a retry tells another error). */
                res = res < 0 ? res : -ENOSPC;
                if (res == -ENOSPC && s->prep_step < PREP_DIR_SYNC) {
                        prep_undo(s);
                        return;
                }
                wal_fail(wal, res);
                return;
        }
        if (s->prep_step == PREP_OPEN)
                s->fd = res;
        if (s->prep_step == PREP_HEADER)
                wal->stats.written_bytes += head_bytes(s);
        ++s->prep_step;
        if (s->recycled_id && s->prep_step == PREP_FALLOCATE)
                s->prep_step = PREP_HEADER;     /* already written: no extents to convert */
        if (!s->recycled_id && s->prep_step == PREP_RENAME)
                s->prep_step = PREP_DIR_SYNC;
        if (s->prep_step == PREP_DONE) {
                if (s->recycled_id)
                        wal->stats.recycled++;
                s->ready = true;
                s->zero_off = head_bytes(s);
                wal->stats.segments++;
                wal_nospace_left(wal);
                wal_kick(wal);
                wal_zero_kick(wal);
                if (wal->closing)
                        wal_close_step(wal);
                return;
        }
        r = prep_submit(s);
        if (r < 0)
                wal_fail(wal, r);
        else
                s->busy = true;
}

/*
 * Undoing a preparation the disk had no room for (ENOSPC, or a short
 * write, before the directory fsync): the file is closed and -- a new one
 * -- removed, so a full disk keeps no half-made segment (a fallocate may
 * have taken part of the space; start-up would read an empty file as an
 * unprepared segment). A recycled file keeps its old name. The segment
 * then waits for the retry timer, which starts its preparation over.
 */
static void undo_next(struct wal_seg *s);

static void undo_done(struct eng_fs_op *op, int res)
{
        struct wal_seg *s = container_of(op, struct wal_seg, op);

        s->busy = false;
        if (s->prep_step == PREP_UNDO_CLOSE) {
                s->fd = -1;     /* gone even if close failed */
                s->prep_step = PREP_UNDO_UNLINK;
        } else if (res < 0 && res != -ENOENT) {
                wal_fail(s->wal, res);
                return;
        } else {
                s->prep_step = PREP_DONE;
        }
        undo_next(s);
}

static void undo_next(struct wal_seg *s)
{
        struct eng_wal *wal = s->wal;
        int r = 0;

        if (s->prep_step == PREP_UNDO_CLOSE && s->fd < 0)
                s->prep_step = PREP_UNDO_UNLINK;
        if (s->prep_step == PREP_UNDO_UNLINK && s->recycled_id)
                s->prep_step = PREP_DONE;
        if (s->prep_step == PREP_UNDO_CLOSE)
                r = eng_fs_close(wal->fs, &s->op, s->fd, undo_done);
        else if (s->prep_step == PREP_UNDO_UNLINK)
                r = eng_fs_unlink(wal->fs, &s->op, s->path, undo_done);
        if (r < 0) {
                wal_fail(wal, r);
                return;
        }
        if (s->prep_step != PREP_DONE) {
                s->busy = true;
                return;
        }
        s->prep_step = PREP_OPEN;
        s->nospace = true;
        wal_nospace_enter(wal);
}

static void prep_undo(struct wal_seg *s)
{
        s->prep_step = PREP_UNDO_CLOSE;
        undo_next(s);
}

/* Starts preparing s. Returns 0 or the submit's error. */
int wal_prep_start(struct wal_seg *s)
{
        int r = prep_submit(s);

        if (r == 0)
                s->busy = true;
        return r;
}

/* Creates segment `id` at the end of the list and starts preparing it --
 * once the directory is open (dir_opened starts the ones that waited). */
struct wal_seg *wal_seg_new(struct eng_wal *wal, uint64_t id)
{
        size_t plen = strlen(wal->o.dir) + 32;
        struct wal_seg *s = calloc(1, sizeof(*s) + 2 * plen), **tail;

        if (!s)
                return NULL;
        s->wal = wal;
        s->id = id;
        s->fd = -1;
        s->durable_off = ENG_WAL_SEGMENT_HEADER_BYTES;
        snprintf(s->path, plen, "%s/%016llx.log", wal->o.dir, (unsigned long long)id);
        if (wal->n_pool) {
                s->recycled_id = wal->pool[--wal->n_pool];
                old_path(wal, s->path + strlen(s->path) + 1, plen, s->recycled_id);
        }
        s->header = mem_alloc_aligned(BLOCK, RECYCLED_HEAD_BYTES);
        if (s->header)
                memset(s->header, 0, RECYCLED_HEAD_BYTES);
        if (!s->header || wal_wbuf_init(wal, &s->active, MIN_BUF, ENG_WAL_SEGMENT_HEADER_BYTES) < 0 ||
            (wal->dir_fd >= 0 && wal_prep_start(s) < 0)) {
                if (s->recycled_id)
                        wal->pool[wal->n_pool++] = s->recycled_id;
                mem_free_aligned(s->header);
                wal_wbuf_fini(&s->active);
                free(s);
                return NULL;
        }
        for (tail = &wal->segs; *tail; tail = &(*tail)->next)
                ;
        *tail = s;
        return s;
}

void wal_seg_free(struct wal_seg *s)
{
        mem_free_aligned(s->header);
        wal_wbuf_fini(&s->active);
        free(s);
}

/* Seals the current segment and moves appends to the reserve. */
int wal_roll(struct eng_wal *wal)
{
        struct wal_seg *next = wal->cur->next;

        struct wal_seg *cur = wal->cur;
        uint64_t end = wal_seg_end(cur);

        if (!next)
                return -ENOMEM;
        /* A clean end for the reader: a zero record header right after the
         * last record. A flush pads its last block with zeros, so a record
         * ending less than a header before a block boundary (on one
         * included) needs the next block written too, as zeros -- like any
         * record of this segment, before the next segment gets a write.
         * Without it a recycled file's stale bytes would complete the
         * header, read as a torn tail in a middle segment. At the
         * segment's end the reader needs no header. */
        uint64_t pad = (BLOCK - end % BLOCK) % BLOCK;

        if (pad < ENG_WAL_RECORD_HEADER_BYTES && end + pad < wal->o.segment_bytes) {
                if (wal_wbuf_reserve(wal, &cur->active, ENG_WAL_RECORD_HEADER_BYTES) < 0)
                        return -ENOMEM;
                memset(cur->active.data + cur->active.len, 0, ENG_WAL_RECORD_HEADER_BYTES);
                cur->active.len += ENG_WAL_RECORD_HEADER_BYTES;
        }
        cur->sealed = true;
        wal->cur = next;
        if (!wal_seg_new(wal, next->id + 1))
                return -ENOMEM;
        return 0;
}

/* ---- zeroing the reserve ---- */

/*
 * In batch mode the log writes zeros over its prepared reserve segment,
 * behind the header, before the segment takes records (unless it reuses a
 * recycled file, written already): an fdatasync after a write into
 * fallocated, unwritten blocks must also commit their conversion to the
 * file system's journal -- here 171 us against 42 us for one into written
 * blocks (fio, io_uring, 12 KiB writes, qd 1). The zeros are not synced:
 * lost, they read as the fallocated space they replaced, and the first
 * fdatasync in the segment commits them all at once.
 *
 * It starts once the current segment is half full, so a log that writes
 * little writes no zeros, and stops where it is when the reserve becomes
 * current (the rest stays fallocated: slower syncs, never a stall; the
 * segment's first log write waits for the chunk in flight, so zeros never
 * land on records) or when the log closes or fails. The log's first
 * segment is not zeroed, so opening stays quick.
 */
#define ZERO_CHUNK (256u << 10)

static void zero_done(struct eng_fs_op *op, int res);

bool wal_zero_wanted(const struct wal_seg *s)
{
        const struct eng_wal *wal = s->wal;

        return wal->o.sync == ENG_WAL_SYNC_BATCH && !wal->closing && !wal->error &&
               s->ready && !s->busy && !s->recycled_id && s->id != wal->o.first_segment &&
               s->zero_off < wal->o.segment_bytes && wal_seg_end(wal->cur) >= wal->o.segment_bytes / 2;
}

/* Starts the next chunk of zeros over the reserve, if it is wanted now. */
void wal_zero_kick(struct eng_wal *wal)
{
        struct wal_seg *s = wal->cur->next;
        uint64_t left;
        int r;

        if (!s || !wal_zero_wanted(s))
                return;
        if (!wal->zeros) {
                wal->zeros = mem_alloc_aligned(BLOCK, ZERO_CHUNK);
                if (!wal->zeros)
                        return;         /* an optimization: go without */
                memset(wal->zeros, 0, ZERO_CHUNK);
        }
        left = wal->o.segment_bytes - s->zero_off;
        r = eng_fs_write(wal->fs, &s->op, s->fd, wal->zeros,
                         (uint32_t)(left < ZERO_CHUNK ? left : ZERO_CHUNK), s->zero_off, zero_done);
        if (r < 0)
                wal_fail(wal, r);
        else
                s->busy = true;
}

static void zero_done(struct eng_fs_op *op, int res)
{
        struct wal_seg *s = container_of(op, struct wal_seg, op);
        struct eng_wal *wal = s->wal;

        s->busy = false;
        if (res == -ENOSPC || (res >= 0 && (res == 0 || res % BLOCK))) {
                /* An optimization: a full disk (fallocated blocks should
                 * not run out, but) ends it for this segment. */
                s->zero_off = wal->o.segment_bytes;
                if (wal->closing)
                        wal_close_step(wal);
                return;
        }
        if (res < 0) {
                wal_fail(wal, res);
                return;
        }
        wal->stats.written_bytes += (uint64_t)res;
        wal->stats.zeroed_bytes += (uint64_t)res;
        s->zero_off += (uint64_t)res;
        if (wal->closing) {
                wal_close_step(wal);
                return;
        }
        wal_kick(wal);              /* a roll may have made s current meanwhile */
        wal_zero_kick(wal);
}
