/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log replay and trim; see wal_replay.h for the contract and
 * docs/format/wal.md, "Recovery", for the reasons behind each rule.
 *
 * Replay walks the expected ids from the first segment to the highest one
 * found. Each file is opened, read whole into one buffer (reused from
 * segment to segment: only one segment is in memory), closed, and then
 * judged. Until the end of the log is found its records are replayed; after
 * it, files are only searched for records, which must not be there. In
 * salvage mode a torn tail that a later segment proves was durable is
 * damage, not an end: the walk goes back to the torn segment and resumes
 * past the damage (the only case where a segment is read twice).
 *
 * Trim is a second, small state machine: per file, open, read one block,
 * write (a cut tail and zeros, or a header), fdatasync, close.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/time.h"
#include "engine/wal_replay.h"

#define BLOCK ((size_t)MEM_DIRECT_ALIGN)
#define HDR ((size_t)ENG_WAL_SEGMENT_HEADER_BYTES)
#define CHUNK ((size_t)ENG_WAL_REPLAY_CHUNK_BYTES)

static size_t round_up(uint64_t n)
{
        return (size_t)((n + BLOCK - 1) & ~(uint64_t)(BLOCK - 1));
}

static bool is_zero(const uint8_t *p, size_t n)
{
        return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static size_t path_bytes(const char *dir)
{
        return strlen(dir) + sizeof("/0123456789abcdef.log");
}

static void segment_path(char *dst, const char *dir, uint64_t id)
{
        snprintf(dst, path_bytes(dir), "%s/%016llx.log", dir, (unsigned long long)id);
}

/* ---- listing ---- */

struct seg_file {
        uint64_t id, size;
};

/* The id in a name "<16 lowercase hex digits>.log", or 0 for other names. */
static uint64_t segment_id_of(const char *name)
{
        uint64_t id = 0;

        for (int i = 0; i < 16; i++) {
                char c = name[i];

                if (c >= '0' && c <= '9')
                        id = id << 4 | (uint64_t)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        id = id << 4 | (uint64_t)(c - 'a' + 10);
                else
                        return 0;
        }
        return strcmp(name + 16, ".log") == 0 ? id : 0;
}

static int cmp_files(const void *a, const void *b)
{
        uint64_t x = ((const struct seg_file *)a)->id, y = ((const struct seg_file *)b)->id;

        return (x > y) - (x < y);
}

/* Lists the segment files of dir with id >= from, in id order, with their
 * sizes. *ret is malloc'd (the caller frees it). */
static int list_segments(const char *dir, uint64_t from, struct seg_file **ret, size_t *ret_n)
{
        struct seg_file *v = NULL, *g;
        size_t n = 0, cap = 0;
        struct dirent *e;
        struct stat st;
        DIR *d = opendir(dir);
        int r = 0;

        if (!d)
                return -errno;
        while ((errno = 0, e = readdir(d)) != NULL) {
                uint64_t id = segment_id_of(e->d_name);

                if (id == 0 || id < from)
                        continue;
                if (fstatat(dirfd(d), e->d_name, &st, 0) < 0) {
                        r = -errno;
                        break;
                }
                if (!(g = mem_grow(v, &cap, n + 1, sizeof(*v)))) {
                        r = -ENOMEM;
                        break;
                }
                v = g;
                v[n++] = (struct seg_file){ .id = id, .size = (uint64_t)st.st_size };
        }
        if (!e && errno)
                r = -errno;
        closedir(d);
        if (r < 0) {
                free(v);
                return r;
        }
        if (n > 1)
                qsort(v, n, sizeof(*v), cmp_files);
        *ret = v;
        *ret_n = n;
        return 0;
}

/* ---- replay ---- */

enum end_kind {
        END_NONE,
        END_TORN,               /* records stop at bytes that are not zeros */
        END_UNPREPARED,         /* a crash cut the segment's preparation */
        END_MISSING,            /* no file for an expected id */
};

struct replay {
        struct eng_fs *fs;
        struct eng_wal_replay_opts o;
        eng_wal_replay_record_fn rec_fn;
        eng_wal_replay_done_fn done;
        void *arg;
        struct seg_file *files;
        size_t n_files;
        size_t next;                    /* index of the next file to visit */
        uint64_t next_id;               /* the id the log expects next */
        size_t cur;                     /* the file being read */
        int fd, err;
        uint8_t *buf;                   /* its bytes */
        size_t cap, len;
        struct eng_fs_op op;
        struct rx_task task;            /* the start, then a segment's next slice */
        struct eng_wal_reader reader;   /* the segment being replayed, between slices */
        uint64_t seg_id;
        enum end_kind end;              /* the end of the log, once found: */
        uint64_t end_id, end_off;       /* torn segment and offset, or the first id not there */
        size_t end_file;                /* torn: its index, to salvage back to */
        uint64_t resume_off;            /* salvage: re-read a torn segment past this */
        uint64_t after_end;             /* files seen after the end */
        struct eng_wal_replay_result res;
        char path[];
};

static void visit_next(struct replay *rp);

static void finish(struct replay *rp, int err)
{
        struct eng_wal_replay_result res = rp->res;
        eng_wal_replay_done_fn done = rp->done;
        void *arg = rp->arg;
        uint64_t from = rp->o.from_segment;

        res.last_segment = rp->n_files ? rp->files[rp->n_files - 1].id : from ? from - 1 : 0;
        res.end_segment = res.last_segment;
        if (rp->end != END_NONE)
                res.end_segment = rp->end == END_TORN ? rp->end_id : rp->end_id - 1;
        res.torn = rp->end == END_TORN;
        if (res.torn) {
                res.torn_segment = rp->end_id;
                res.torn_offset = rp->end_off;
        }
        res.dropped_segments = rp->after_end;
        mem_free_aligned(rp->buf);
        free(rp->files);
        free(rp);
        done(arg, err, &res);
}

static void on_fail_closed(struct eng_fs_op *op, int res)
{
        struct replay *rp = container_of(op, struct replay, op);

        (void)res;
        finish(rp, rp->err);
}

static void fail(struct replay *rp, int err)
{
        rp->err = err;
        if (rp->fd < 0 || eng_fs_close(rp->fs, &rp->op, rp->fd, on_fail_closed) < 0)
                finish(rp, err);
}

static int corrupt_at(struct replay *rp, uint64_t segment, uint64_t off)
{
        rp->res.bad_segment = segment;
        rp->res.bad_offset = off;
        return -SCREE_ECORRUPT;
}

static void end_log(struct replay *rp, enum end_kind kind, uint64_t id, uint64_t off)
{
        log_debug("wal replay %s: the log ends at segment %016llx offset %llu (%s)", rp->o.dir,
                  (unsigned long long)id, (unsigned long long)off,
                  kind == END_TORN ? "torn tail" : kind == END_MISSING ? "missing" : "unprepared");
        rp->end = kind;
        rp->end_id = id;
        rp->end_off = off;
        rp->end_file = rp->cur;
}

/* 1: a valid header of this shard and id; 0: an unfinished preparation
 * (shorter than the header block, or a header block of zeros); or
 * -SCREE_ECORRUPT. */
static int check_header(struct replay *rp, uint64_t id)
{
        struct eng_wal_segment_info info;

        if (rp->len < HDR || is_zero(rp->buf, HDR))
                return 0;
        if (eng_wal_segment_header_decode(rp->buf, rp->len, &info) < 0) {
                log_debug("wal replay %s: segment %016llx: bad header", rp->o.dir, (unsigned long long)id);
                return corrupt_at(rp, id, 0);
        }
        if (info.shard != rp->o.shard || info.segment != id) {
                log_debug("wal replay %s: segment %016llx: header names shard %u segment %016llx",
                          rp->o.dir, (unsigned long long)id, info.shard, (unsigned long long)info.segment);
                return corrupt_at(rp, id, 0);
        }
        return 1;
}

/* Whether the segment in hand holds any record that verifies. */
static bool has_records(struct replay *rp, uint64_t id)
{
        struct eng_wal_reader r;
        struct eng_wal_record rec;

        if (rp->len <= HDR || is_zero(rp->buf + HDR, rp->len - HDR))
                return false;
        eng_wal_reader_init(&r, rp->buf, rp->len, id);
        if (eng_wal_reader_next(&r, &rec) != 0)
                return true;
        r.bad_off = r.off;
        return eng_wal_reader_skip_damage(&r) == 1;
}

/* A damaged record at r->bad_off: corruption, or in salvage mode skip it.
 * Returns 1 (go on reading), 0 (nothing valid left in this segment) or <0. */
static int damaged(struct replay *rp, struct eng_wal_reader *r, uint64_t id)
{
        log_debug("wal replay %s: segment %016llx: damaged record at offset %zu%s", rp->o.dir,
                  (unsigned long long)id, r->bad_off, rp->o.salvage ? " (skipped)" : "");
        if (!rp->o.salvage)
                return corrupt_at(rp, id, r->bad_off);
        rp->res.salvaged++;
        if (rp->o.skip_fn)
                rp->o.skip_fn(rp->arg, id, r->bad_off);
        return eng_wal_reader_skip_damage(r);
}

/*
 * Whether a valid record of this segment (seq above the last) lies after
 * r->off, where the reader stopped at a zero record header. Only such
 * records make zeros a torn tail (a multi-block write that lost an earlier
 * block); anything else after them -- stale bytes of a recycled file, whose
 * records are seeded with its old id -- is not part of this segment.
 */
static bool record_after(struct replay *rp, const struct eng_wal_reader *r)
{
        struct eng_wal_reader probe = *r;

        if (is_zero(rp->buf + r->off, rp->len - r->off))
                return false;
        probe.bad_off = probe.off;
        return eng_wal_reader_skip_damage(&probe) == 1;
}

/*
 * A segment's records are replayed in slices of about REPLAY_SLICE_NS,
 * the loop running in between: a 32 MiB segment takes hundreds of
 * milliseconds, during which the shard still answers what it may while
 * loading (PING's -LOADING, INFO, HELLO). The coarse clock (a few ns) is
 * read after every record: one record is a group commit, from one write to
 * thousands.
 */
#define REPLAY_SLICE_NS (4 * NS_PER_MS)
#define REPLAY_YIELD 1

/* Replays the next slice of the segment in rp->reader. Returns 0 once the
 * segment is done (a torn tail found), REPLAY_YIELD when time is up with
 * records left, or <0. */
static int replay_more(struct replay *rp)
{
        struct eng_wal_reader *r = &rp->reader;
        struct eng_wal_record rec;
        uint64_t until = time_coarse_ns() + REPLAY_SLICE_NS;
        int rc;

        while ((rc = eng_wal_reader_next(r, &rec)) != 0) {
                if (rc < 0) {
                        rc = damaged(rp, r, rp->seg_id);
                        if (rc <= 0)
                                return rc;
                        continue;
                }
                rc = rp->rec_fn(rp->arg, rp->seg_id, &rec);
                if (rc < 0)
                        return rc;
                rp->res.records++;
                rp->res.bytes += eng_wal_record_size(rec.len);
                rp->res.last_seq = rec.seq;
                if (time_coarse_ns() >= until)
                        return REPLAY_YIELD;
        }
        /* A zero record header after the last record, and no record of this
         * segment beyond: the writer rolled to the next segment (or this is
         * the newest). Anything else: a write torn there. */
        if (r->torn || record_after(rp, r))
                end_log(rp, END_TORN, rp->seg_id, r->off);
        return 0;
}

/* Starts replaying the records of the segment in hand. As replay_more. */
static int replay_segment(struct replay *rp, uint64_t id)
{
        struct eng_wal_reader *r = &rp->reader;

        rp->res.segments++;
        rp->seg_id = id;
        eng_wal_reader_init(r, rp->buf, rp->len, id);
        r->last_seq = rp->res.last_seq;         /* seqs increase across segments too */
        if (rp->resume_off) {
                r->bad_off = (size_t)rp->resume_off;
                rp->resume_off = 0;
                if (eng_wal_reader_skip_damage(r) == 0)
                        return 0;
        }
        return replay_more(rp);
}

/* Salvage: the torn tail was durable after all; resume past it. */
static void salvage_back(struct replay *rp)
{
        log_debug("wal replay %s: segment %016llx offset %llu: damaged, resuming past it", rp->o.dir,
                  (unsigned long long)rp->end_id, (unsigned long long)rp->end_off);
        rp->res.salvaged++;
        if (rp->o.skip_fn)
                rp->o.skip_fn(rp->arg, rp->end_id, rp->end_off);
        rp->res.segments--;             /* read again below */
        rp->resume_off = rp->end_off;
        rp->next = rp->end_file;
        rp->next_id = rp->end_id;
        rp->end = END_NONE;
        rp->after_end = 0;
}

/* Judges the segment in hand. As replay_more. */
static int visit(struct replay *rp, uint64_t id)
{
        int h = check_header(rp, id);

        if (h < 0)
                return h;
        if (rp->end == END_NONE && h == 0)
                end_log(rp, END_UNPREPARED, id, 0);
        if (rp->end == END_NONE)
                return replay_segment(rp, id);
        rp->after_end++;
        if (!has_records(rp, id))
                return 0;
        /* The writer starts segment N+1 only once all of N is durable: these
         * records prove that whatever ended the log was durable once. */
        if (rp->end == END_TORN && rp->o.salvage) {
                salvage_back(rp);
                return 0;
        }
        log_debug("wal replay %s: segment %016llx holds records after the end of the log", rp->o.dir,
                  (unsigned long long)id);
        return corrupt_at(rp, rp->end_id, rp->end_off);
}

/* After a slice of replay_more (r): on to the next slice, file or end. */
static void replay_went(struct replay *rp, int r);

static void replay_task(struct rx_loop *loop, struct rx_task *t)
{
        struct replay *rp = container_of(t, struct replay, task);

        (void)loop;
        replay_went(rp, replay_more(rp));
}

static void replay_went(struct replay *rp, int r)
{
        if (r < 0) {
                fail(rp, r);
        } else if (r == REPLAY_YIELD) {
                rp->task = (struct rx_task){ .fn = replay_task, .name = "wal_replay:records" };
                rx_loop_post(rp->fs->loop, &rp->task);
        } else {
                visit_next(rp);
        }
}

static void on_closed(struct eng_fs_op *op, int res)
{
        struct replay *rp = container_of(op, struct replay, op);
        uint64_t id = rp->files[rp->cur].id;

        (void)res;                      /* read-only: nothing to lose */
        rp->fd = -1;
        rp->next = rp->cur + 1;
        rp->next_id = id + 1;
        replay_went(rp, visit(rp, id));
}

static void on_read(struct eng_fs_op *op, int res);

/* Reads the next chunk of the file in hand, or closes it when all is in. */
static void read_more(struct replay *rp)
{
        uint64_t left = rp->files[rp->cur].size - rp->len;
        int r;

        if (left == 0)
                r = eng_fs_close(rp->fs, &rp->op, rp->fd, on_closed);
        else
                r = eng_fs_read(rp->fs, &rp->op, rp->fd, rp->buf + rp->len,
                                (uint32_t)(left < CHUNK ? round_up(left) : CHUNK), rp->len, on_read);
        if (r < 0)
                fail(rp, r);
}

static void on_read(struct eng_fs_op *op, int res)
{
        struct replay *rp = container_of(op, struct replay, op);
        struct seg_file *f = &rp->files[rp->cur];
        uint64_t left = f->size - rp->len;

        if (res < 0) {
                fail(rp, res);
                return;
        }
        /* Short only if less than asked for (a whole chunk while more is
         * left) and less than left: then the file ends here. */
        if ((uint64_t)res < left && (uint64_t)res < (left < CHUNK ? round_up(left) : CHUNK))
                f->size = rp->len + (uint64_t)res;
        rp->len += (uint64_t)res < left ? (size_t)res : (size_t)left;
        read_more(rp);
}

static void on_opened(struct eng_fs_op *op, int res)
{
        struct replay *rp = container_of(op, struct replay, op);

        if (res < 0) {
                fail(rp, res);
                return;
        }
        rp->fd = res;
        rp->len = 0;
        read_more(rp);
}

/* Makes room for the file in hand. */
static int reserve(struct replay *rp, uint64_t size)
{
        size_t need = round_up(size);

        if (need <= rp->cap)
                return 0;
        mem_free_aligned(rp->buf);
        rp->cap = 0;
        rp->buf = mem_alloc_aligned(BLOCK, need);
        if (!rp->buf)
                return -ENOMEM;
        rp->cap = need;
        return 0;
}

static void visit_next(struct replay *rp)
{
        struct seg_file *f;
        int r;

        if (rp->next == rp->n_files) {
                finish(rp, 0);
                return;
        }
        f = &rp->files[rp->next];
        rp->cur = rp->next;
        if (f->id > rp->next_id && rp->end == END_NONE)
                end_log(rp, END_MISSING, rp->next_id, 0);
        r = reserve(rp, f->size);
        if (r == 0) {
                segment_path(rp->path, rp->o.dir, f->id);
                r = eng_fs_open(rp->fs, &rp->op, rp->path, O_RDONLY | O_DIRECT, 0, on_opened);
        }
        if (r < 0)
                fail(rp, r);
}

static void start_task(struct rx_loop *loop, struct rx_task *t)
{
        (void)loop;
        visit_next(container_of(t, struct replay, task));
}

int eng_wal_replay(struct eng_fs *fs, const struct eng_wal_replay_opts *o, eng_wal_replay_record_fn rec_fn,
                   eng_wal_replay_done_fn done, void *arg)
{
        struct replay *rp;
        int r;

        if (!o || !o->dir || !rec_fn || !done)
                return -EINVAL;
        rp = calloc(1, sizeof(*rp) + path_bytes(o->dir));
        if (!rp)
                return -ENOMEM;
        *rp = (struct replay){ .fs = fs, .o = *o, .rec_fn = rec_fn, .done = done, .arg = arg, .fd = -1 };
        r = list_segments(o->dir, o->from_segment, &rp->files, &rp->n_files);
        if (r < 0) {
                free(rp);
                return r;
        }
        rp->next_id = o->from_segment ? o->from_segment : rp->n_files ? rp->files[0].id : 0;
        rp->task = (struct rx_task){ .fn = start_task, .name = "wal_replay:start" };
        rx_loop_post(fs->loop, &rp->task);      /* done never runs inside this call */
        return 0;
}

/* ---- trim ---- */

struct trim {
        struct eng_fs *fs;
        struct eng_wal_replay_opts o;
        struct eng_wal_replay_result res;
        void (*done)(void *arg, int res);
        void *arg;
        bool cut_pending;               /* the torn tail is still to be zeroed */
        bool cutting;                   /* the file at hand is the torn segment */
        uint64_t id;                    /* the file at hand */
        int fd, err;
        uint8_t *block;                 /* its first block to rewrite */
        uint8_t *zeros;                 /* CHUNK zero bytes, while cutting */
        uint64_t block_off, off, end;   /* writes: the block at block_off, then zeros to end */
        struct eng_fs_op op;
        struct rx_task task;
        char path[];
};

static void trim_next(struct trim *t);

static void trim_finish(struct trim *t)
{
        void (*done)(void *arg, int res) = t->done;
        void *arg = t->arg;
        int err = t->err;

        mem_free_aligned(t->block);
        mem_free_aligned(t->zeros);
        free(t);
        done(arg, err);
}

static void trim_on_closed(struct eng_fs_op *op, int res)
{
        struct trim *t = container_of(op, struct trim, op);

        t->fd = -1;
        if (res < 0 && !t->err)
                t->err = res;
        if (t->err)
                trim_finish(t);
        else
                trim_next(t);
}

/* Closes the file at hand (if open), then goes on, or ends with t->err. */
static void trim_close(struct trim *t, int err)
{
        if (err < 0 && !t->err)
                t->err = err;
        if (t->fd < 0 || eng_fs_close(t->fs, &t->op, t->fd, trim_on_closed) < 0) {
                t->fd = -1;
                if (!t->err)
                        t->err = -EIO;
                trim_finish(t);
        }
}

static void trim_on_synced(struct eng_fs_op *op, int res)
{
        trim_close(container_of(op, struct trim, op), res < 0 ? res : 0);
}

static void trim_on_written(struct eng_fs_op *op, int res);

/* Writes the block, then zeros up to t->end, then syncs. */
static void trim_write(struct trim *t)
{
        const uint8_t *src = t->off == t->block_off ? t->block : t->zeros;
        uint64_t n = t->off == t->block_off ? BLOCK : t->end - t->off < CHUNK ? t->end - t->off : CHUNK;
        int r;

        if (t->off >= t->end)
                r = eng_fs_fdatasync(t->fs, &t->op, t->fd, trim_on_synced);
        else
                r = eng_fs_write(t->fs, &t->op, t->fd, src, (uint32_t)n, t->off, trim_on_written);
        if (r < 0)
                trim_close(t, r);
}

static void trim_on_written(struct eng_fs_op *op, int res)
{
        struct trim *t = container_of(op, struct trim, op);
        uint64_t want = t->off == t->block_off ? BLOCK : t->end - t->off < CHUNK ? t->end - t->off : CHUNK;

        if (res < 0 || (uint64_t)res != want) {
                trim_close(t, res < 0 ? res : -EIO);
                return;
        }
        t->off += want;
        trim_write(t);
}

/* The torn segment's block holding the tail: keep the records before it,
 * zero the rest of the file. */
static int plan_cut(struct trim *t, int got)
{
        size_t keep = (size_t)(t->res.torn_offset - t->block_off);

        if ((size_t)got < keep)
                return -SCREE_ECORRUPT;         /* shorter than the replay saw */
        memset(t->block + keep, 0, BLOCK - keep);
        if (t->end > t->block_off + BLOCK && !t->zeros) {
                t->zeros = mem_alloc_aligned(BLOCK, CHUNK);
                if (!t->zeros)
                        return -ENOMEM;
                memset(t->zeros, 0, CHUNK);
        }
        return 1;
}

/* A dropped segment: 1 to write a header into it, 0 if it has one, or
 * -SCREE_ECORRUPT. */
static int plan_void(struct trim *t, int got)
{
        struct eng_wal_segment_info info;

        if (got == (int)BLOCK && eng_wal_segment_header_decode(t->block, BLOCK, &info) == 0 &&
            info.shard == t->o.shard && info.segment == t->id)
                return 0;
        if (!is_zero(t->block, (size_t)got))
                return -SCREE_ECORRUPT;
        eng_wal_segment_header_encode(t->block, t->o.shard, t->id);
        t->end = BLOCK;
        return 1;
}

static void trim_on_block(struct eng_fs_op *op, int res)
{
        struct trim *t = container_of(op, struct trim, op);
        int r = res;

        if (r >= 0)
                r = t->cutting ? plan_cut(t, res) : plan_void(t, res);
        if (r <= 0) {
                trim_close(t, r);
                return;
        }
        t->off = t->block_off;
        trim_write(t);
}

static void trim_on_opened(struct eng_fs_op *op, int res)
{
        struct trim *t = container_of(op, struct trim, op);
        int r;

        if (res < 0) {
                trim_close(t, res);
                return;
        }
        t->fd = res;
        memset(t->block, 0, BLOCK);
        r = eng_fs_read(t->fs, &t->op, t->fd, t->block, BLOCK, t->block_off, trim_on_block);
        if (r < 0)
                trim_close(t, r);
}

static void trim_next(struct trim *t)
{
        struct stat st;
        int flags = O_RDWR | O_DIRECT, r;

        t->cutting = t->cut_pending;
        if (t->cut_pending) {
                t->cut_pending = false;
                t->id = t->res.torn_segment;
                t->block_off = t->res.torn_offset & ~(uint64_t)(BLOCK - 1);
                segment_path(t->path, t->o.dir, t->id);
                if (stat(t->path, &st) < 0) {
                        t->err = -errno;
                        trim_finish(t);
                        return;
                }
                t->end = round_up((uint64_t)st.st_size);
        } else {
                if (t->id >= t->res.last_segment) {
                        trim_finish(t);
                        return;
                }
                t->id++;                /* from end_segment (= torn_segment) up */
                t->block_off = 0;
                flags |= O_CREAT;       /* a missing id becomes an empty segment too */
                segment_path(t->path, t->o.dir, t->id);
        }
        r = eng_fs_open(t->fs, &t->op, t->path, flags, 0644, trim_on_opened);
        if (r < 0) {
                t->err = r;
                trim_finish(t);
        }
}

static void trim_start(struct rx_loop *loop, struct rx_task *task)
{
        (void)loop;
        trim_next(container_of(task, struct trim, task));
}

int eng_wal_replay_trim(struct eng_fs *fs, const struct eng_wal_replay_opts *o,
                        const struct eng_wal_replay_result *res, void (*done)(void *arg, int res), void *arg)
{
        struct trim *t;

        if (!o || !o->dir || !res || !done)
                return -EINVAL;
        t = calloc(1, sizeof(*t) + path_bytes(o->dir));
        if (!t)
                return -ENOMEM;
        *t = (struct trim){ .fs = fs, .o = *o, .res = *res, .done = done, .arg = arg, .fd = -1,
                            .cut_pending = res->torn, .id = res->end_segment };
        t->block = mem_alloc_aligned(BLOCK, BLOCK);
        if (!t->block) {
                free(t);
                return -ENOMEM;
        }
        t->task = (struct rx_task){ .fn = trim_start, .name = "wal_replay:trim" };
        rx_loop_post(fs->loop, &t->task);
        return 0;
}
