/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Size-tiered compaction: the picker and the job; see compaction.h.
 *
 * The job: seek the compaction-view merge to its first entry (from the
 * loop: the merge may wait for blocks). None at all -- every version
 * dropped -- ends the job without a file. Otherwise the SSTable writer is
 * started with a source that hands out the merge's current entry and
 * steps it; when a step waits for a read the source answers
 * ENG_SST_PENDING and the merge's callback resumes the writer. When the
 * writer is done (the file durable and closed, or failed) the merge is
 * freed, which drops its block pins and table references, and a failed
 * output is unlinked before done runs.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/check.h"
#include "base/compiler.h"
#include "engine/compaction.h"

/* ---- picking ---- */

bool eng_compact_tables_check(const struct eng_compact_table *tables, uint32_t n)
{
        for (uint32_t i = 0; i < n; i++) {
                if (tables[i].min_seq > tables[i].max_seq)
                        return false;
                if (i + 1 < n && tables[i].max_seq < tables[i + 1].max_seq)
                        return false;
        }
        return true;
}

/* next <= acc * (100 + pct) / 100, without overflowing. */
static bool within_ratio(uint64_t next, uint64_t acc, uint32_t pct)
{
        uint64_t extra;

        if (next <= acc)
                return true;
        if (pct && acc / 100 > UINT64_MAX / pct)
                return true;    /* the bound is beyond any size */
        extra = acc / 100 * pct + acc % 100 * pct / 100;
        return next - acc <= extra;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The tables newer than the oldest add up to pct% of its size or more. */
static bool space_amp_over(const struct eng_compact_table *tables, uint32_t n, uint32_t pct)
{
        uint64_t newer = 0, oldest = tables[n - 1].file_size;

        if (pct == UINT32_MAX)
                return false;
        for (uint32_t i = 0; i + 1 < n; i++)
                newer = add_sat(newer, tables[i].file_size);
        if (oldest / 100 > UINT64_MAX / pct)
                return false;   /* the bound is beyond any size */
        return newer >= oldest / 100 * pct + oldest % 100 * pct / 100;
}

static struct eng_compact_pick pick_of(uint32_t first, uint32_t len, uint32_t n)
{
        return (struct eng_compact_pick){ .first = first, .n = len, .bottommost = first + len == n };
}

int eng_compact_pick(const struct eng_compact_table *tables, uint32_t n,
                     const struct eng_compact_opts *o, struct eng_compact_pick *ret)
{
        struct eng_compact_opts d = o ? *o : (struct eng_compact_opts){ 0 };
        uint64_t acc;
        uint32_t len;

        SCREE_ASSERT(eng_compact_tables_check(tables, n));
        if (!d.size_ratio_pct)
                d.size_ratio_pct = ENG_COMPACT_DEFAULT_SIZE_RATIO_PCT;
        if (!d.min_merge)
                d.min_merge = ENG_COMPACT_DEFAULT_MIN_MERGE;
        if (d.min_merge < 2)
                d.min_merge = 2;
        if (!d.max_tables)
                d.max_tables = ENG_COMPACT_DEFAULT_MAX_TABLES;
        if (!d.max_space_amp_pct)
                d.max_space_amp_pct = ENG_COMPACT_DEFAULT_MAX_SPACE_AMP_PCT;
        if (n < 2)
                return 0;
        if (space_amp_over(tables, n, d.max_space_amp_pct)) {
                *ret = pick_of(0, n, n);
                return 1;
        }
        acc = tables[0].file_size;
        for (len = 1; len < n && within_ratio(tables[len].file_size, acc, d.size_ratio_pct); len++)
                acc = add_sat(acc, tables[len].file_size);
        if (len >= d.min_merge) {
                *ret = pick_of(0, len, n);
                return 1;
        }
        if (n > d.max_tables) {
                *ret = pick_of(0, d.min_merge < n ? d.min_merge : n, n);
                return 1;
        }
        return 0;
}

int eng_compact_pick_major(uint32_t n, struct eng_compact_pick *ret)
{
        if (!n)
                return 0;
        *ret = pick_of(0, n, n);
        return 1;
}

/* ---- the job ---- */

struct eng_compaction {
        struct eng_fs *fs;
        struct eng_sst_write_opts out;
        struct eng_merge_iter *m;
        struct eng_sst_source src;
        struct eng_sst_write *w;
        int merge_res;                  /* the merge's last move: 1, 0 or <0 */
        bool fresh;                     /* on an entry the writer has not had */
        eng_compaction_cb done;
        void *arg;
        struct rx_task task;            /* goes on after a first move that did not wait */
        struct eng_fs_op op;            /* unlinks a failed output */
        int res;
        struct eng_compaction_result result;
};

/* Ends the job: drops the merge (its pins and table references) and
 * reports. */
static void finish(struct eng_compaction *job, int res)
{
        struct eng_compaction_result *rs = &job->result;

        rs->merge = *eng_merge_iter_stats(job->m);
        rs->dropped = rs->merge.shadowed + rs->merge.tombstones + rs->merge.expired;
        eng_merge_iter_free(job->m);
        job->m = NULL;
        job->done(job, res, job->arg);  /* last: it may free the job */
}

static void on_removed(struct eng_fs_op *op, int res)
{
        struct eng_compaction *job = container_of(op, struct eng_compaction, op);

        (void)res;      /* best effort: start-up removes files the manifest does not name */
        finish(job, job->res);
}

static void on_written(struct eng_sst_write *w, int res, void *arg)
{
        struct eng_compaction *job = arg;
        struct eng_compaction_result *rs = &job->result;

        rs->file_size = rs->bytes_written = eng_sst_write_file_size(w);
        rs->throttled_ns = eng_sst_write_throttled_ns(w);
        if (res < 0) {
                job->res = res;
                if (eng_fs_unlink(job->fs, &job->op, job->out.path, on_removed) < 0)
                        finish(job, res);
                return;
        }
        rs->has_output = true;
        rs->props = *eng_sst_write_props(w);
        rs->entries_out = rs->props.n_entries;
        finish(job, 0);
}

static void on_merge_next(struct eng_merge_iter *m, int res, void *arg)
{
        struct eng_compaction *job = arg;

        (void)m;
        job->merge_res = res;
        job->fresh = res == 1;
        eng_sst_write_resume(job->w);
}

/* The writer's source: the merge's current entry, then the next. */
static int src_next(struct eng_sst_source *src, struct eng_entry *ret)
{
        struct eng_compaction *job = container_of(src, struct eng_compaction, src);
        int r;

        if (!job->fresh && job->merge_res == 1) {
                r = eng_merge_iter_next(job->m, on_merge_next, job);
                if (r == ENG_SST_PENDING)
                        return r;
                job->merge_res = r;
                job->fresh = r == 1;
        }
        if (!job->fresh)
                return job->merge_res;          /* 0 at the end, or the error */
        job->fresh = false;
        eng_merge_iter_entry(job->m, ret);
        return 1;
}

/* The merge's first move ended with r. */
static void first_moved(struct eng_compaction *job, int r)
{
        job->merge_res = r;
        job->fresh = r == 1;
        if (r != 1) {
                finish(job, r);         /* an error, or every version dropped: no file */
                return;
        }
        r = eng_sst_write_start(job->fs, &job->out, &job->src, on_written, job, &job->w);
        if (r < 0)
                finish(job, r);
}

static void on_first(struct eng_merge_iter *m, int res, void *arg)
{
        (void)m;
        first_moved(arg, res);
}

static void on_first_task(struct rx_loop *loop, struct rx_task *t)
{
        struct eng_compaction *job = container_of(t, struct eng_compaction, task);

        (void)loop;
        first_moved(job, job->merge_res);
}

/* Counts the inputs and adds them to the merge. Their order is the
 * caller's (compaction.h): a version's seq, not its table, decides which
 * is newest, and the tables of a merged tablet may interleave by seq. */
static int add_inputs(struct eng_compaction *job, const struct eng_compaction_opts *o)
{
        struct eng_compaction_result *rs = &job->result;
        int r;

        rs->min_seq = UINT64_MAX;
        for (uint32_t i = 0; i < o->n_inputs; i++) {
                const struct eng_sst_reader *rd = eng_sst_table_reader(o->inputs[i]);
                const struct eng_sst_props *p = eng_sst_reader_props(rd);

                if (p->min_seq > p->max_seq)
                        return -EINVAL;
                if (p->min_seq < rs->min_seq)
                        rs->min_seq = p->min_seq;
                if (p->max_seq > rs->max_seq)
                        rs->max_seq = p->max_seq;
                rs->bytes_read += eng_sst_reader_file_size(rd);
                rs->entries_in += p->n_entries;
                if ((r = eng_merge_iter_add_sst(job->m, o->inputs[i])) < 0)
                        return r;
        }
        return 0;
}

int eng_compaction_start(struct eng_fs *fs, const struct eng_compaction_opts *o,
                         eng_compaction_cb done, void *arg, struct eng_compaction **ret)
{
        struct eng_merge_opts mo = { .view = ENG_MERGE_COMPACT, .now_ms = o->now_ms,
                                     .bottommost = o->bottommost, .end_key = o->hi,
                                     .end_len = o->hi ? o->hi_len : 0 };
        struct eng_compaction *job;
        int r;

        if (!o->n_inputs || !o->out.path || o->out.chunk_bytes % 4096)
                return -EINVAL;
        if (o->readahead_bytes != ENG_COMPACT_READ_CACHED)
                mo.stream_bytes = o->readahead_bytes ? o->readahead_bytes
                                                     : ENG_SST_SEQ_DEFAULT_CHUNK;
        if (!(job = calloc(1, sizeof(*job))))
                return -ENOMEM;
        *job = (struct eng_compaction){ .fs = fs, .out = o->out, .done = done, .arg = arg,
                                        .src = { .next = src_next } };
        job->task = (struct rx_task){ .fn = on_first_task, .name = "compaction:first" };
        if ((r = eng_merge_iter_new(&mo, &job->m)) < 0 || (r = add_inputs(job, o)) < 0)
                goto fail;
        r = o->lo_len ? eng_merge_iter_seek(job->m, o->lo, o->lo_len, on_first, job)
                      : eng_merge_iter_seek_first(job->m, on_first, job);
        if (r < 0)
                goto fail;
        if (r != ENG_SST_PENDING) {
                job->merge_res = r;     /* done must not run inside this call */
                rx_loop_post(fs->loop, &job->task);
        }
        *ret = job;
        return 0;
fail:
        eng_merge_iter_free(job->m);
        free(job);
        return r;
}

const struct eng_compaction_result *eng_compaction_result(const struct eng_compaction *job)
{
        return &job->result;
}

void eng_compaction_free(struct eng_compaction *job)
{
        if (!job)
                return;
        SCREE_ASSERT(!job->m);
        eng_sst_write_free(job->w);
        free(job);
}
