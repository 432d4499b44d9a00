/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable writing and reading through eng_fs; see sst_io.h. The writer is a
 * small state machine driven by its I/O completions, the throttle timer
 * and a waiting source's resume: pump() submits the chunk that is ready if
 * no write is in flight, then builds the next one, so building overlaps the
 * previous write. A source that has no entry ready (ENG_SST_PENDING) only
 * pauses the building; a chunk is written once full (or the table is
 * finished), so a slow source never causes small writes. Building gives the
 * loop back every FILL_SLICE_NS (a posted task goes on), so a flush or a
 * compaction never holds the shard's reads and acks for a whole chunk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/endian.h"
#include "base/mem.h"
#include "base/time.h"
#include "engine/bloom.h"
#include "engine/sst_io.h"

/* ---- writing ---- */

struct eng_sst_write {
        struct eng_fs *fs;
        struct eng_sst_write_opts o;
        struct eng_sst_source *src;
        struct eng_sst_builder *b;
        eng_sst_write_cb done;
        void *arg;
        struct eng_fs_op op;
        int fd;
        uint8_t *wbuf;                  /* the chunk being written */
        size_t wlen;
        bool writing, syncing, finished, closing;
        bool waiting;                   /* for the source's resume */
        bool sliced;                    /* slice_task posted: building goes on there */
        struct rx_task slice_task;
        int err;
        uint64_t start_ns, written, throttled_ns, throttle_from;
        uint64_t slices;                /* times building yielded the loop */
        struct rx_timer throttle;
        bool throttled;
};

static void pump(struct eng_sst_write *w);
static void fill(struct eng_sst_write *w);

static void fail(struct eng_sst_write *w, int err)
{
        if (!w->err)
                w->err = err;
}

static void on_closed(struct eng_fs_op *op, int res)
{
        struct eng_sst_write *w = container_of(op, struct eng_sst_write, op);

        if (res < 0)
                fail(w, res);
        w->done(w, w->err, w->arg);
}

static void finish_io(struct eng_sst_write *w)
{
        int r;

        w->closing = true;
        if (w->fd < 0) {
                w->done(w, w->err, w->arg);     /* open failed: nothing to close */
                return;
        }
        r = eng_fs_close(w->fs, &w->op, w->fd, on_closed);
        SCREE_VERIFY(r == 0);   /* close never fails to submit on an open loop */
}

static void on_synced(struct eng_fs_op *op, int res)
{
        struct eng_sst_write *w = container_of(op, struct eng_sst_write, op);

        w->syncing = false;
        if (res < 0)
                fail(w, res);
        finish_io(w);
}

static void on_written(struct eng_fs_op *op, int res)
{
        struct eng_sst_write *w = container_of(op, struct eng_sst_write, op);

        if (res >= 0 && (size_t)res != w->wlen)
                res = -ENOSPC;  /* O_DIRECT to a regular file: short when the disk is full */
        if (res < 0)
                fail(w, res);
        else
                w->written += w->wlen;
        mem_free_aligned(w->wbuf);
        w->wbuf = NULL;
        w->writing = false;
        pump(w);
}

static void on_throttle(struct rx_loop *loop, struct rx_timer *t)
{
        struct eng_sst_write *w = container_of(t, struct eng_sst_write, throttle);

        (void)loop;
        w->throttled = false;
        w->throttled_ns += time_now_ns() - w->throttle_from;
        pump(w);
}

/* True (timer armed) if the bytes written so far are ahead of the rate. */
static bool throttle(struct eng_sst_write *w)
{
        uint64_t now, allowed_ns, elapsed;

        if (!w->o.rate_bytes_per_sec)
                return false;
        now = time_now_ns();
        elapsed = now - w->start_ns;
        allowed_ns = (uint64_t)((double)w->written * 1e9 / (double)w->o.rate_bytes_per_sec);
        if (allowed_ns <= elapsed)
                return false;
        w->throttled = true;
        w->throttle_from = now;
        rx_timer_arm_after(w->fs->loop, &w->throttle, allowed_ns - elapsed);
        return true;
}

/*
 * How long building runs before it gives the loop back. A 256 KiB chunk of
 * a compaction takes 0.5-1 ms to build; built in one go, every read and
 * acknowledgement that completed meanwhile waited for it to end.
 */
#define FILL_SLICE_NS (100 * NS_PER_US)
#define FILL_CLOCK_EVERY 16u            /* entries between two clock reads */

static void on_slice(struct rx_loop *loop, struct rx_task *t)
{
        struct eng_sst_write *w = container_of(t, struct eng_sst_write, slice_task);

        (void)loop;
        w->sliced = false;
        if (w->writing)
                fill(w);        /* the next chunk, while this one is written */
        else
                pump(w);
}

/* Builds until a chunk is ready, the table is finished, the source must be
 * waited for or the slice is spent (then slice_task goes on). */
static void fill(struct eng_sst_write *w)
{
        uint64_t until = time_now_ns() + FILL_SLICE_NS;
        unsigned n = 0;

        if (w->sliced)
                return;
        while (!w->err && !w->finished && !w->waiting &&
               eng_sst_builder_ready(w->b) < w->o.chunk_bytes) {
                struct eng_entry e;
                int r;

                if (++n % FILL_CLOCK_EVERY == 0 && time_now_ns() >= until) {
                        w->sliced = true;
                        w->slices++;
                        rx_loop_post(w->fs->loop, &w->slice_task);
                        return;
                }
                r = w->src->next(w->src, &e);

                if (r == ENG_SST_PENDING) {
                        w->waiting = true;
                } else if (r == 0) {
                        r = eng_sst_builder_finish(w->b);
                        w->finished = r == 0;
                } else if (r > 0) {
                        r = eng_sst_builder_add(w->b, &e);
                }
                if (r < 0)
                        fail(w, r);
        }
}

static void submit_chunk(struct eng_sst_write *w)
{
        uint64_t off;
        int r;

        eng_sst_builder_take(w->b, &w->wbuf, &w->wlen, &off);
        r = eng_fs_write(w->fs, &w->op, w->fd, w->wbuf, (uint32_t)w->wlen, off, on_written);
        if (r < 0) {
                mem_free_aligned(w->wbuf);
                w->wbuf = NULL;
                fail(w, r);
                return;
        }
        w->writing = true;
}

/* A whole chunk, or the table's last bytes, wait to be written. */
static bool chunk_ready(const struct eng_sst_write *w)
{
        size_t ready = eng_sst_builder_ready(w->b);

        return ready > 0 && (ready >= w->o.chunk_bytes || w->finished);
}

static void pump(struct eng_sst_write *w)
{
        int r;

        if (w->writing || w->throttled || w->syncing || w->closing)
                return;
        if (!w->err && !chunk_ready(w))
                fill(w);
        if (!w->err && chunk_ready(w)) {
                if (throttle(w))
                        return;
                submit_chunk(w);
                fill(w);        /* build the next chunk while this one is written */
                if (w->writing)
                        return;
        }
        /* The source owes a resume: it pumps again, also to finish after
         * an error, so that done never runs before it. */
        if (w->waiting || w->sliced)
                return;
        if (w->err) {
                finish_io(w);
                return;
        }
        SCREE_ASSERT(w->finished && eng_sst_builder_ready(w->b) == 0);
        w->syncing = true;
        r = eng_fs_fdatasync(w->fs, &w->op, w->fd, on_synced);
        if (r < 0) {
                w->syncing = false;
                fail(w, r);
                finish_io(w);
        }
}

static void on_opened(struct eng_fs_op *op, int res)
{
        struct eng_sst_write *w = container_of(op, struct eng_sst_write, op);

        if (res < 0) {
                fail(w, res);
                finish_io(w);
                return;
        }
        w->fd = res;
        w->start_ns = time_now_ns();
        pump(w);
}

int eng_sst_write_start(struct eng_fs *fs, const struct eng_sst_write_opts *o,
                        struct eng_sst_source *src, eng_sst_write_cb done, void *arg,
                        struct eng_sst_write **ret)
{
        struct eng_sst_write *w;
        int r;

        if (!o->path || (o->chunk_bytes % 4096) != 0)
                return -EINVAL;
        if (!(w = calloc(1, sizeof(*w))))
                return -ENOMEM;
        w->fs = fs;
        w->o = *o;
        if (!w->o.chunk_bytes)
                w->o.chunk_bytes = ENG_SST_DEFAULT_CHUNK_BYTES;
        w->src = src;
        w->done = done;
        w->arg = arg;
        w->fd = -1;
        rx_timer_init(&w->throttle, on_throttle, "sst_write:throttle");
        w->slice_task.fn = on_slice;
        w->slice_task.name = "sst_write:build";
        if ((r = eng_sst_builder_new(&o->table, &w->b)) < 0 ||
            (r = eng_fs_open(fs, &w->op, o->path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644,
                             on_opened)) < 0) {
                eng_sst_builder_free(w->b);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

void eng_sst_write_resume(struct eng_sst_write *w)
{
        SCREE_ASSERT(w->waiting);
        w->waiting = false;
        pump(w);
}

const struct eng_sst_props *eng_sst_write_props(const struct eng_sst_write *w)
{
        return eng_sst_builder_props(w->b);
}

uint64_t eng_sst_write_file_size(const struct eng_sst_write *w)
{
        return eng_sst_builder_file_size(w->b);
}

uint64_t eng_sst_write_throttled_ns(const struct eng_sst_write *w)
{
        return w->throttled_ns;
}

uint64_t eng_sst_write_slices(const struct eng_sst_write *w)
{
        return w->slices;
}

void eng_sst_write_free(struct eng_sst_write *w)
{
        if (!w)
                return;
        mem_free_aligned(w->wbuf);
        eng_sst_builder_free(w->b);
        free(w);
}

/* ---- reading ---- */

struct eng_sst_table {
        unsigned refs;
        void (*closed)(void *arg);      /* eng_sst_table_on_closed */
        void *closed_arg;
        struct eng_fs *fs;
        struct eng_block_cache *cache;
        struct eng_sst_reader *r;
        uint64_t file_id;
        int fd;
        struct eng_sst_block_read *inflight;    /* one leader per block being read */
        struct eng_fs_op close_op;
        /* Point lookups search blocks with this one iterator: they use it
         * synchronously, and its key buffer, once grown, makes a lookup in a
         * cached block allocation-free. */
        struct eng_block_iter lookup;
        struct eng_sst_read_stats stats;
        eng_sst_damage_fn on_damage;
        void *damage_arg;
        uint8_t *damaged;               /* a bit per data block reported; NULL: none */
        /* Data block i's cached block, bound to slots[i] (block_cache.h)
         * once a read found or put it there; NULL until the first. */
        struct eng_cached_block **slots;
};

/* An open in three steps: open(2), read the footer page, read the meta region. */
struct open_ctx {
        struct eng_fs_op op;
        struct eng_fs *fs;
        struct eng_block_cache *cache;
        uint64_t file_id, file_size;
        int fd, err;
        uint8_t *footer, *meta;
        uint32_t meta_len;
        eng_sst_open_cb done;
        void *arg;
        char path[];                    /* the open runs later: the caller's copy may be gone */
};

static void open_ctx_free(struct open_ctx *c)
{
        mem_free_aligned(c->footer);
        mem_free_aligned(c->meta);
        free(c);
}

static void on_open_failed_closed(struct eng_fs_op *op, int res)
{
        struct open_ctx *c = container_of(op, struct open_ctx, op);

        (void)res;
        c->done(c->arg, c->err, NULL);
        open_ctx_free(c);
}

static void open_fail(struct open_ctx *c, int err)
{
        c->err = err;
        if (c->fd < 0 || eng_fs_close(c->fs, &c->op, c->fd, on_open_failed_closed) < 0)
                on_open_failed_closed(&c->op, 0);
}

static void open_finish(struct open_ctx *c)
{
        struct eng_sst_table *t = calloc(1, sizeof(*t));
        uint8_t *meta = c->meta;
        int r;

        if (!t) {
                open_fail(c, -ENOMEM);
                return;
        }
        c->meta = NULL;         /* the reader takes it, also on failure */
        r = eng_sst_reader_new(c->file_id, c->file_size, c->footer, meta, &t->r);
        if (r < 0) {
                free(t);
                open_fail(c, r);
                return;
        }
        t->refs = 1;
        t->fs = c->fs;
        t->cache = c->cache;
        t->file_id = c->file_id;
        t->fd = c->fd;
        c->done(c->arg, 0, t);
        open_ctx_free(c);
}

static void on_meta_read(struct eng_fs_op *op, int res)
{
        struct open_ctx *c = container_of(op, struct open_ctx, op);

        if (res >= 0 && (uint32_t)res != c->meta_len)
                res = -SCREE_ECORRUPT;  /* shorter than the manifest says */
        if (res < 0)
                open_fail(c, res);
        else
                open_finish(c);
}

static void on_footer_read(struct eng_fs_op *op, int res)
{
        struct open_ctx *c = container_of(op, struct open_ctx, op);
        uint64_t off;
        int r;

        if (res >= 0 && res != ENG_SST_FOOTER_BYTES)
                res = -SCREE_ECORRUPT;
        if (res < 0 || (res = eng_sst_meta_range(c->footer, c->file_size, c->file_id, &off,
                                                 &c->meta_len)) < 0) {
                open_fail(c, res);
                return;
        }
        if (!(c->meta = mem_alloc_aligned(MEM_DIRECT_ALIGN, c->meta_len))) {
                open_fail(c, -ENOMEM);
                return;
        }
        r = eng_fs_read(c->fs, &c->op, c->fd, c->meta, c->meta_len, off, on_meta_read);
        if (r < 0)
                open_fail(c, r);
}

static void on_table_fd(struct eng_fs_op *op, int res)
{
        struct open_ctx *c = container_of(op, struct open_ctx, op);
        int r;

        if (res < 0) {
                open_fail(c, res);
                return;
        }
        c->fd = res;
        if (c->file_size < ENG_SST_FOOTER_BYTES || c->file_size % ENG_BLOCK_PAGE_BYTES) {
                open_fail(c, -SCREE_ECORRUPT);
                return;
        }
        r = eng_fs_read(c->fs, &c->op, c->fd, c->footer, ENG_SST_FOOTER_BYTES,
                        c->file_size - ENG_SST_FOOTER_BYTES, on_footer_read);
        if (r < 0)
                open_fail(c, r);
}

int eng_sst_table_open(struct eng_fs *fs, struct eng_block_cache *cache, const char *path,
                       uint64_t file_id, uint64_t file_size, eng_sst_open_cb done, void *arg)
{
        size_t plen = strlen(path) + 1;
        struct open_ctx *c = calloc(1, sizeof(*c) + plen);
        int r;

        if (!c)
                return -ENOMEM;
        *c = (struct open_ctx){ .fs = fs, .cache = cache, .file_id = file_id,
                                .file_size = file_size, .fd = -1, .done = done, .arg = arg };
        memcpy(c->path, path, plen);
        c->footer = mem_alloc_aligned(MEM_DIRECT_ALIGN, ENG_SST_FOOTER_BYTES);
        if (!c->footer) {
                free(c);
                return -ENOMEM;
        }
        r = eng_fs_open(fs, &c->op, c->path, O_RDONLY | O_DIRECT, 0, on_table_fd);
        if (r < 0) {
                open_ctx_free(c);
                return r;
        }
        return 0;
}

void eng_sst_table_ref(struct eng_sst_table *t)
{
        t->refs++;
}

static void table_free(struct eng_sst_table *t)
{
        void (*closed)(void *) = t->closed;
        void *arg = t->closed_arg;

        free(t);
        if (closed)
                closed(arg);
}

static void on_table_closed(struct eng_fs_op *op, int res)
{
        (void)res;
        table_free(container_of(op, struct eng_sst_table, close_op));
}

void eng_sst_table_on_closed(struct eng_sst_table *t, void (*fn)(void *arg), void *arg)
{
        t->closed = fn;
        t->closed_arg = arg;
}

/* Binds cached block b of data block index to its slot (best effort:
 * without memory for the slots, hits go through the cache's hash). */
static void slot_bind(struct eng_sst_table *t, uint32_t index, struct eng_cached_block *b)
{
        if (!t->slots && !(t->slots = calloc(eng_sst_reader_n_blocks(t->r), sizeof(*t->slots))))
                return;
        eng_block_cache_bind(t->cache, b, &t->slots[index]);
}

static void slots_free(struct eng_sst_table *t)
{
        if (!t->slots)
                return;
        for (uint32_t i = 0, n = eng_sst_reader_n_blocks(t->r); i < n; i++)
                eng_block_cache_unbind(t->cache, &t->slots[i]);
        free(t->slots);
        t->slots = NULL;
}

void eng_sst_table_unref(struct eng_sst_table *t)
{
        if (!t || --t->refs > 0)
                return;
        SCREE_ASSERT(!t->inflight);
        eng_block_iter_fini(&t->lookup);
        free(t->damaged);
        slots_free(t);
        eng_sst_reader_unref(t->r);
        t->r = NULL;
        if (eng_fs_close(t->fs, &t->close_op, t->fd, on_table_closed) < 0)
                table_free(t);  /* loop stopping: the fd goes with the process */
}

const struct eng_sst_reader *eng_sst_table_reader(const struct eng_sst_table *t)
{
        return t->r;
}

struct eng_block_cache *eng_sst_table_cache(const struct eng_sst_table *t)
{
        return t->cache;
}

uint64_t eng_sst_table_file_id(const struct eng_sst_table *t)
{
        return t->file_id;
}

void eng_sst_table_on_damage(struct eng_sst_table *t, eng_sst_damage_fn fn, void *arg)
{
        t->on_damage = fn;
        t->damage_arg = arg;
}

bool eng_sst_table_is_damaged(const struct eng_sst_table *t)
{
        return t->damaged != NULL;
}

static struct eng_sst_damage damage_of(const struct eng_sst_table *t, uint32_t index,
                                       const char *what)
{
        struct eng_sst_handle h = eng_sst_reader_block(t->r, index);

        return (struct eng_sst_damage){ .file_id = t->file_id, .offset = h.offset,
                                        .size = h.size, .block = index, .what = what };
}

void eng_sst_table_report_damage(struct eng_sst_table *t, uint32_t index, const char *what,
                                 struct eng_sst_damage *ret)
{
        struct eng_sst_damage d = damage_of(t, index, what);
        uint32_t n = eng_sst_reader_n_blocks(t->r);
        bool first = true;

        SCREE_ASSERT(index < n);
        /* Without memory for the bitmap every report counts as the first:
         * a repeated log line is better than none. */
        if (!t->damaged)
                t->damaged = calloc((n + 7) / 8, 1);
        if (t->damaged) {
                first = !(t->damaged[index / 8] & (1u << (index % 8)));
                t->damaged[index / 8] |= (uint8_t)(1u << (index % 8));
        }
        if (t->on_damage)
                t->on_damage(t->damage_arg, t, &d, first);
        if (ret)
                *ret = d;
}

int eng_sst_damage_met(struct eng_sst_table *t, const struct eng_sst_damage_policy *p,
                       uint32_t index, bool in_entries, int err)
{
        struct eng_sst_damage d;

        eng_sst_table_report_damage(t, index, in_entries ? ENG_SST_DAMAGE_ENTRY : ENG_SST_DAMAGE_BLOCK,
                                    &d);
        if (p->fn)
                p->fn(p->arg, &d);
        return p->skip ? 0 : err;
}

const struct eng_sst_read_stats *eng_sst_table_stats(const struct eng_sst_table *t)
{
        return &t->stats;
}

static void inflight_remove(struct eng_sst_table *t, struct eng_sst_block_read *rq)
{
        struct eng_sst_block_read **p = &t->inflight;

        while (*p != rq)
                p = &(*p)->next;
        *p = rq->next;
}

/* Verifies and caches the block a leader read; NULL with *err on failure. */
static struct eng_cached_block *cache_read(struct eng_sst_block_read *rq, int res, int *err)
{
        struct eng_sst_table *t = rq->t;
        struct eng_sst_handle h = eng_sst_reader_block(t->r, rq->index);
        struct eng_cached_block *b;
        const uint8_t *content;
        size_t clen;
        uint8_t *buf = rq->buf;

        rq->buf = NULL;
        if (res >= 0 && (uint32_t)res != h.size)
                res = -SCREE_ECORRUPT;
        if (res >= 0)
                res = eng_sst_data_open(t->r, rq->index, buf, h.size, &content, &clen);
        if (res < 0) {
                eng_block_cache_free_data(t->cache, buf, h.size);
                *err = res;
                return NULL;
        }
        if (rq->no_cache)
                b = eng_block_cache_adopt(t->cache, buf, h.size, content, (uint32_t)clen);
        else
                b = eng_block_cache_put(t->cache, t->file_id, h.offset, buf, h.size, content,
                                        (uint32_t)clen);
        *err = b ? 0 : -ENOMEM;
        if (b && !rq->no_cache)
                slot_bind(t, rq->index, b);
        return b;
}

static void on_block_read(struct eng_fs_op *op, int res)
{
        struct eng_sst_block_read *rq = container_of(op, struct eng_sst_block_read, op);
        struct eng_sst_table *t = rq->t;
        struct eng_sst_block_read *w, *next;
        struct eng_cached_block *b;
        int err;

        inflight_remove(t, rq);
        b = cache_read(rq, res, &err);
        /* Pin for every waiter before any callback can release the block. */
        for (w = rq->waiters; w; w = w->next)
                w->block = b ? eng_block_cache_pin(t->cache, b) : NULL;
        rq->block = b;
        w = rq->waiters;
        rq->done(rq, err);              /* may free rq */
        for (; w; w = next) {
                next = w->next;
                w->done(w, err);
                eng_sst_table_unref(t);
        }
        eng_sst_table_unref(t);
}

int eng_sst_table_read_block(struct eng_sst_table *t, uint32_t index, struct eng_sst_block_read *rq)
{
        struct eng_sst_handle h;
        struct eng_sst_block_read *leader;
        int r;

        if (eng_sst_table_block_cached(t, index)) {
                rq->block = eng_block_cache_get_bound(t->cache, &t->slots[index]);
                return 1;
        }
        h = eng_sst_reader_block(t->r, index);
        rq->block = eng_block_cache_get(t->cache, t->file_id, h.offset);
        if (rq->block) {
                slot_bind(t, index, rq->block);
                return 1;
        }
        rq->t = t;
        rq->index = index;
        rq->waiters = NULL;
        for (leader = t->inflight; leader && leader->index != index; leader = leader->next)
                ;
        if (leader) {
                rq->next = leader->waiters;
                leader->waiters = rq;
                t->refs++;
                return 0;
        }
        if (!(rq->buf = eng_block_cache_alloc_data(t->cache, h.size)))
                return -ENOMEM;
        r = eng_fs_read(t->fs, &rq->op, t->fd, rq->buf, h.size, h.offset, on_block_read);
        if (r < 0) {
                eng_block_cache_free_data(t->cache, rq->buf, h.size);
                rq->buf = NULL;
                return r;
        }
        rq->next = t->inflight;
        t->inflight = rq;
        t->refs++;
        return 0;
}

bool eng_sst_table_block_cached(const struct eng_sst_table *t, uint32_t index)
{
        return t->slots && t->slots[index];
}

void eng_sst_table_block_prefetch(const struct eng_sst_table *t, uint32_t index)
{
        const struct eng_cached_block *b;

        if (!t->slots || !(b = t->slots[index]))
                return;
        prefetch_lines(b->content, 1);
        if (b->content_len >= 4)
                prefetch_lines(b->content + b->content_len - 4, 1);
}

int eng_sst_table_read_raw(struct eng_sst_table *t, struct eng_fs_op *op, void *buf, uint32_t len,
                           uint64_t off, eng_fs_cb cb)
{
        return eng_fs_read(t->fs, op, t->fd, buf, len, off, cb);
}

/* ---- point lookups ---- */

/*
 * Rows (block_cache.h): what a lookup found in this table, cached by the
 * key's hash (the bloom's): le32 key length, the key, then the entry's
 * value as the data block stores it. A hit answers without the block; a
 * lookup that read the block adds the row. Only versions found are
 * cached; a key absent from the table is the bloom filter's job.
 */
#define ROW_HEADER 4u

/* Answers g from a cached row, if it holds g's key. 0 keeps the row
 * pinned in g->block; -SCREE_ENOTFOUND: no such row (hash collisions
 * included); -SCREE_ECORRUPT. */
static int get_from_row(struct eng_sst_table *t, struct eng_sst_get *g)
{
        struct eng_cached_block *row = eng_block_cache_get_row(t->cache, t->file_id, g->hash);
        const uint8_t *p;
        uint32_t klen;
        int r;

        if (!row)
                return -SCREE_ENOTFOUND;
        p = row->content;
        klen = le32_get(p);
        if (klen != g->key_len || eng_key_cmp(p + ROW_HEADER, klen, g->key, g->key_len) != 0) {
                eng_block_cache_release(t->cache, row);
                return -SCREE_ENOTFOUND;
        }
        r = eng_sst_entry_decode(g->key, klen, p + ROW_HEADER + klen,
                                 row->content_len - ROW_HEADER - klen, &g->entry);
        if (r < 0) {
                eng_block_cache_release(t->cache, row);
                eng_sst_table_report_damage(t, g->blk, ENG_SST_DAMAGE_ENTRY, &g->damage);
                return r;
        }
        g->block = row;
        t->stats.found++;
        t->stats.row_hits++;
        return 0;
}

/* Caches the entry t->lookup stands on as g's row (best effort: no memory,
 * no row). */
static void row_add(struct eng_sst_table *t, const struct eng_sst_get *g)
{
        uint8_t klen[ROW_HEADER];
        const struct eng_cache_part parts[] = {
                { klen, sizeof(klen) },
                { g->key, g->key_len },
                { t->lookup.value, t->lookup.value_len },
        };

        le32_put(klen, (uint32_t)g->key_len);
        eng_block_cache_release(t->cache, eng_block_cache_put_row(t->cache, t->file_id, g->hash,
                                                                  parts, ARRAY_SIZE(parts)));
}

/* Searches the pinned block b for g's key. 0 keeps b pinned in g->block;
 * otherwise b is released. */
static int get_in_block(struct eng_sst_table *t, struct eng_sst_get *g, struct eng_cached_block *b)
{
        int r = eng_block_iter_reset(&t->lookup, b->content, b->content_len);

        if (r == 0)
                r = eng_sst_data_get(&t->lookup, g->key, g->key_len, &g->entry);
        if (r == 0) {
                g->entry.key = g->key;  /* the same bytes; the iterator's copy is reused */
                g->block = b;
                t->stats.found++;
                if (eng_block_cache_rows(t->cache))
                        row_add(t, g);
                return 0;
        }
        eng_block_cache_release(t->cache, b);
        if (r == -SCREE_ENOTFOUND)
                t->stats.bloom_false_positives++;
        else if (r == -SCREE_ECORRUPT)
                eng_sst_table_report_damage(t, g->blk, ENG_SST_DAMAGE_ENTRY, &g->damage);
        return r;
}

static void on_get_block(struct eng_sst_block_read *rq, int res)
{
        struct eng_sst_get *g = container_of(rq, struct eng_sst_get, rq);

        if (res == 0)
                res = get_in_block(rq->t, g, rq->block);
        else if (res == -SCREE_ECORRUPT)
                eng_sst_table_report_damage(rq->t, g->blk, ENG_SST_DAMAGE_BLOCK, &g->damage);
        g->done(g, res);
}

int eng_sst_table_get(struct eng_sst_table *t, const void *key, size_t key_len,
                      struct eng_sst_get *g)
{
        uint32_t blk;
        bool rows;
        int r;

        t->stats.gets++;
        g->block = NULL;
        g->hash = eng_bloom_hash(key, key_len);
        if (!eng_sst_reader_may_contain(t->r, g->hash)) {
                t->stats.bloom_negatives++;
                return -SCREE_ENOTFOUND;
        }
        if (eng_sst_reader_find_block(t->r, key, key_len, &blk) < 0) {
                t->stats.bloom_false_positives++;       /* above the largest key */
                return -SCREE_ENOTFOUND;
        }
        g->key = key;
        g->key_len = key_len;
        g->blk = blk;
        rows = eng_block_cache_rows(t->cache);
        if (rows && (r = get_from_row(t, g)) != -SCREE_ENOTFOUND)
                return r;
        g->rq.done = on_get_block;
        /* With rows, the row is what a lookup keeps: its block would take
         * 4 KiB of cache for one hot key among cold ones. */
        g->rq.no_cache = rows;
        r = eng_sst_table_read_block(t, blk, &g->rq);
        if (r == 1)
                return get_in_block(t, g, g->rq.block);
        return r == 0 ? ENG_SST_PENDING : r;
}
