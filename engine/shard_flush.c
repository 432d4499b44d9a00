/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flush: a sealed memtable becomes an SSTable. One flush runs at a time per
 * shard, oldest sealed memtable first (so the commit log can be cut as
 * early as possible):
 *   write the table (newest version of each key only; tombstones kept, as
 *   older versions may sit in older tables) -> open it -> record it in the
 *   manifest together with the tablet's new flushed seq and the oldest
 *   log segment still needed -> publish a new table set -> drop the
 *   memtable -> delete log segments nobody needs.
 * Until the manifest edit is durable the new file is not part of the
 * database: a crash before that leaves an unreferenced file that start-up
 * deletes, and the log still holds the data.
 * A failed flush leaves the memtable sealed and is retried after a pause;
 * a failed manifest write stops the shard's writes (one out of space
 * waits for the manifest's retry instead: manifest.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/log.h"
#include "base/time.h"
#include "engine/key.h"
#include "engine/shard_internal.h"

#define FLUSH_RETRY_NS (UINT64_C(1000) * 1000 * 1000)

struct eng_flush {
        struct eng_shard *s;
        struct eng_tablet *t;
        struct eng_imm imm;
        uint64_t file_id;
        struct eng_sst_source src;
        struct eng_memtable_iter it;
        struct eng_entry last;          /* last entry handed out (key borrowed from the memtable) */
        bool have_last;
        struct eng_sst_write *w;
        struct eng_sst_table *table;
        struct eng_manifest_table meta;
        struct eng_manifest_write mw;
        uint64_t mw_log_segment;
        struct eng_fs_op op;
        char path[];
};

/* ---- table sets ---- */

struct eng_tset *shard_tset_new(uint32_t n)
{
        struct eng_tset *ts = calloc(1, sizeof(*ts) + (size_t)n * sizeof(ts->e[0]));

        if (ts) {
                ts->refs = 1;
                ts->n = n;
        }
        return ts;
}

void shard_tset_ref(struct eng_tset *ts)
{
        ts->refs++;
}

void shard_tset_unref(struct eng_tset *ts)
{
        if (!ts || --ts->refs)
                return;
        for (uint32_t i = 0; i < ts->n; i++)
                eng_sst_table_unref(ts->e[i].t);
        free(ts);
}

/* ---- sealing ---- */

void shard_seal(struct eng_shard *s, struct eng_tablet *t)
{
        struct eng_memtable *fresh;

        if (!t->active_first_segment || t->n_imm >= SHARD_MAX_SEALED || t->dropped)
                return;
        fresh = eng_memtable_new(s->pool);
        if (!fresh)
                return;         /* try again at the next write */
        t->imm[t->n_imm++] = (struct eng_imm){
                /* Not last_seq: writes still waiting in s->unapplied
                 * are not in this memtable, and a flushed seq above them
                 * would make the replay after a crash skip them. */
                .mt = t->active, .sealed_seq = s->applied_seq,
                .first_segment = t->active_first_segment, .bytes = t->active_bytes,
        };
        s->active_bytes -= t->active_bytes;
        s->imm_bytes += t->active_bytes;
        t->active = fresh;
        t->active_bytes = 0;
        t->active_first_segment = 0;
}

uint64_t shard_log_needed(const struct eng_shard *s)
{
        uint64_t need = eng_wal_segment(s->wal), txn = shard_xtxn_log_needed(s);

        /* A part in doubt or a decision not forgotten keeps its record. */
        if (txn && txn < need)
                need = txn;

        /* Writes waiting in s->unapplied are in no memtable yet, and the
         * log may have rolled past the segment holding their records. */
        if (s->unapplied.count && s->unapplied_segment < need)
                need = s->unapplied_segment;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_tablet *t = s->tablets[i];
                /* The flush in progress is about to be done with its memtable. */
                uint32_t first = s->flush && s->flush->t == t ? 1 : 0;
                uint64_t seg = first < t->n_imm ? t->imm[first].first_segment :
                                                  t->active_first_segment;

                if (seg && seg < need)
                        need = seg;
        }
        return need;
}

bool shard_flushing(const struct eng_shard *s, const struct eng_tablet *t)
{
        return s->flush && s->flush->t == t;
}

/* ---- commit-log truncation ---- */

static void unlink_done(struct eng_fs_op *op, int res)
{
        struct eng_shard *s = op->ctx;

        if (res < 0 && res != -ENOENT)
                log_warn("shard %u: removing log segment %s: %s", s->o.shard, s->unlink_path,
                         strerror(-res));
        else
                s->stats.segments_removed++;
        s->log_oldest++;
        s->unlinking = false;
        shard_release_log(s);
        shard_job_done(s);
}

void shard_release_log(struct eng_shard *s)
{
        if (s->unlinking)
                return;
        while (s->log_oldest < s->log_cut && s->wal && eng_wal_recycle(s->wal, s->log_oldest))
                s->log_oldest++;
        if (s->log_oldest >= s->log_cut)
                return;
        snprintf(s->unlink_path, sizeof(s->unlink_path), "%s/%016llx.log", s->dir,
                 (unsigned long long)s->log_oldest);
        s->unlink_op.ctx = s;
        if (eng_fs_unlink(s->fs, &s->unlink_op, s->unlink_path, unlink_done) < 0)
                return;         /* tried again after the next flush */
        s->unlinking = true;
        s->busy++;
}

/* ---- the flush job ---- */

/* Whether memtable entry e lies past tablet t's range. */
static bool past_end(const struct eng_tablet *t, const struct eng_entry *e)
{
        return eng_key_cmp(e->key, e->key_len, t->end, t->end_len) >= 0;
}

/* The newest version of each key of the tablet's range, in order (a
 * memtable shared by the children of a split holds both's keys). */
static int flush_next(struct eng_sst_source *src, struct eng_entry *ret)
{
        struct eng_flush *f = (struct eng_flush *)((char *)src - offsetof(struct eng_flush, src));

        for (; eng_memtable_iter_valid(&f->it); eng_memtable_iter_next(&f->it)) {
                eng_memtable_iter_entry(&f->it, ret);
                if (past_end(f->t, ret))
                        return 0;
                if (f->have_last &&
                    eng_key_cmp(ret->key, ret->key_len, f->last.key, f->last.key_len) == 0)
                        continue;
                f->last = *ret;
                f->have_last = true;
                eng_memtable_iter_next(&f->it);
                return 1;
        }
        return 0;
}

static void flush_free(struct eng_flush *f)
{
        eng_sst_write_free(f->w);
        eng_sst_table_unref(f->table);
        free(f);
}

static void flush_retry(struct rx_loop *loop, struct rx_timer *timer)
{
        struct eng_shard *s = (struct eng_shard *)((char *)timer - offsetof(struct eng_shard, retry_timer));

        (void)loop;
        s->retry_armed = false;
        shard_job_done(s);
        shard_maybe_flush(s);
}

static void failed_file_gone(struct eng_fs_op *op, int res)
{
        struct eng_flush *f = op->ctx;
        struct eng_shard *s = f->s;

        (void)res;      /* best effort: start-up deletes files the manifest does not name */
        flush_free(f);
        shard_job_done(s);
}

/* A flush failed before it touched the manifest: keep the memtable sealed,
 * delete the file, and retry after a pause. */
static void flush_failed(struct eng_flush *f, int res, const char *what)
{
        struct eng_shard *s = f->s;

        log_error("shard %u: flush of tablet %u to %s: %s failed (%s); retrying", s->o.shard,
                  f->t->id, f->path, what, strerror(res < 0 && -res < 4096 ? -res : EIO));
        s->stats.flush_errors++;
        s->flush_error = res;
        s->flush = NULL;
        eng_sst_table_unref(f->table);
        f->table = NULL;
        f->op.ctx = f;
        if (eng_fs_unlink(s->fs, &f->op, f->path, failed_file_gone) < 0) {
                flush_free(f);
                shard_job_done(s);
        }
        if (!s->retry_armed && !s->closing) {
                s->retry_timer.fn = flush_retry;
                s->retry_timer.name = "shard flush retry";
                if (rx_timer_arm_after(s->loop, &s->retry_timer, FLUSH_RETRY_NS) == 0) {
                        s->retry_armed = true;
                        s->busy++;
                }
        }
        shard_unstall(s);       /* fails stalled writes when the disk is full */
}

/* Runs the waiters of eng_shard_flush whose memtables are all flushed
 * (a dropped tablet's never will be: they are freed instead). */
void shard_wake_waiters(struct eng_shard *s)
{
        struct shard_waiter **pp = &s->flush_waiters;

        while (*pp) {
                struct shard_waiter *w = *pp;
                bool pending = false;

                for (uint32_t i = 0; i < s->n_tablets && !s->error; i++)
                        if (s->tablets[i]->n_imm && !s->tablets[i]->dropped &&
                            s->tablets[i]->imm[0].sealed_seq <= w->upto_seq)
                                pending = true;
                if (pending) {
                        pp = &w->next;
                        continue;
                }
                *pp = w->next;
                w->done(w->arg, s->error);
                free(w);
        }
}

/* Fills ts (room for old's tables and one more) with old's tables and tb
 * (meta m; the reference moves to ts) in newest-first order. A flushed
 * table is the newest but for a merged tablet's first flushes
 * (shard_relayout.c), whose memtables from each side hold no key of the
 * other's and may be flushed in either seq order. */
static void tset_insert(struct eng_tset *ts, const struct eng_tset *old, struct eng_sst_table *tb,
                        const struct eng_manifest_table *m)
{
        uint32_t n_old = old ? old->n : 0, at = 0;

        while (at < n_old && old->e[at].meta.max_seq > m->max_seq)
                at++;
        for (uint32_t i = 0, k = 0; i < n_old + 1; i++) {
                if (i == at) {
                        ts->e[i] = (struct eng_tset_entry){ .t = tb, .meta = *m };
                        continue;
                }
                ts->e[i] = old->e[k++];
                eng_sst_table_ref(ts->e[i].t);
        }
}

/* The manifest names the table now: publish it and drop the memtable. */
static void flush_recorded(struct eng_manifest_write *mw, int res)
{
        struct eng_flush *f = mw->ctx;
        struct eng_shard *s = f->s;
        struct eng_tablet *t = f->t;
        struct eng_tset *old = t->tset, *ts;
        uint32_t n_old = old ? old->n : 0;

        s->flush = NULL;
        if (res < 0) {
                /* -ENOSPC only once closing (eng_manifest_stop_retrying):
                 * not recorded, the log still holds the memtable's data. */
                if (res != -ENOSPC || !s->closing)
                        shard_set_error(s, res, "manifest write");
                flush_free(f);
                shard_wake_waiters(s);
                shard_job_done(s);
                return;
        }
        ts = shard_tset_new(n_old + 1);
        if (!ts) {      /* durable but not published: only a restart would show it */
                shard_set_error(s, -ENOMEM, "publishing a flushed table");
                flush_free(f);
                shard_job_done(s);
                return;
        }
        tset_insert(ts, old, f->table, &f->meta);
        shard_track_table(s, f->table);
        f->table = NULL;
        t->tset = ts;
        shard_tset_unref(old);
        t->flushed_seq = f->imm.sealed_seq;
        memmove(&t->imm[0], &t->imm[1], (t->n_imm - 1) * sizeof(t->imm[0]));
        t->n_imm--;
        s->seal_blocked = false;        /* t may be sealed again */
        s->imm_bytes -= f->imm.bytes;
        eng_memtable_unref(f->imm.mt);
        s->stats.flushes++;
        s->stats.flush_bytes += f->meta.file_size;
        s->stats.disk_bytes_written += f->meta.file_size;
        s->flush_error = 0;
        if (f->mw_log_segment > s->log_cut)
                s->log_cut = f->mw_log_segment;
        flush_free(f);
        shard_release_log(s);
        shard_wake_waiters(s);
        shard_unstall(s);
        shard_maybe_flush(s);
        shard_maybe_compact(s);
        shard_job_done(s);
}

static void flush_opened(void *arg, int res, struct eng_sst_table *table)
{
        struct eng_flush *f = arg;
        struct eng_shard *s = f->s;
        const struct eng_sst_props *p;
        uint32_t tablet = f->t->id;
        uint64_t seq = f->imm.sealed_seq;
        struct eng_manifest_edit e = { 0 };
        const struct eng_tablet *t = f->t;
        /* A tablet made since the open (its table created, or given to
         * this shard, by a catalog installed meanwhile) gets its entry,
         * with its range, in its first flush's edit. */
        const struct eng_manifest_tablet entry = {
                .id = t->id, .table = t->table, .start = t->start, .end = t->end,
                .start_len = t->start_len, .end_len = t->end_len,
        };

        if (res < 0) {
                flush_failed(f, res, "opening the new table");
                return;
        }
        f->table = table;
        p = eng_sst_reader_props(eng_sst_table_reader(table));
        f->meta = (struct eng_manifest_table){
                .tablet = tablet, .file_id = f->file_id,
                .file_size = eng_sst_reader_file_size(eng_sst_table_reader(table)),
                .min_seq = p->min_seq, .max_seq = p->max_seq,
        };
        f->mw_log_segment = shard_log_needed(s);
        if (!eng_manifest_has_tablet(eng_manifest_state(s->man), tablet)) {
                e.new_tablets = &entry;
                e.n_new_tablets = 1;
        }
        e.added = &f->meta;
        e.n_added = 1;
        e.flushed_tablets = &tablet;
        e.flushed_seqs = &seq;
        e.n_flushed = 1;
        e.next_file_id = s->next_file_id;
        e.log_segment = f->mw_log_segment;
        f->mw.done = flush_recorded;
        f->mw.ctx = f;
        res = eng_manifest_apply(s->man, &e, &f->mw);
        if (res < 0) {
                if (res != -ENOSPC || !s->closing)
                        shard_set_error(s, res, "manifest edit");
                s->flush = NULL;
                flush_free(f);
                shard_job_done(s);
        }
}

/* The new file's name is durable: open the table. */
static void flush_dir_synced(struct eng_fs_op *op, int res)
{
        struct eng_flush *f = op->ctx;

        if (res < 0) {
                flush_failed(f, res, "syncing the directory");
                return;
        }
        res = eng_sst_table_open(f->s->fs, f->s->cache, f->path, f->file_id,
                                 eng_sst_write_file_size(f->w), flush_opened, f);
        if (res < 0)
                flush_failed(f, res, "opening the new table");
}

static void flush_written(struct eng_sst_write *w, int res, void *arg)
{
        struct eng_flush *f = arg;

        (void)w;
        if (res < 0) {
                flush_failed(f, res, "writing the table");
                return;
        }
        f->op.ctx = f;
        res = eng_fs_fsync(f->s->fs, &f->op, f->s->dir_fd, flush_dir_synced);
        if (res < 0)
                flush_failed(f, res, "syncing the directory");
}

/* The tablet whose oldest sealed memtable is the oldest in the shard. */
static struct eng_tablet *pick_flush(struct eng_shard *s)
{
        struct eng_tablet *best = NULL;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];

                if (t->n_imm && !t->dropped && !t->frozen &&
                    (!best || t->imm[0].sealed_seq < best->imm[0].sealed_seq))
                        best = t;
        }
        return best;
}

/* Whether t's oldest sealed memtable holds no key of t's range (one
 * shared by the children of a split may hold only the sibling's). */
static bool oldest_sealed_empty(const struct eng_tablet *t)
{
        struct eng_memtable_iter it;
        struct eng_entry e;

        eng_memtable_iter_init(&it, t->imm[0].mt);
        eng_memtable_iter_seek(&it, t->start, t->start_len);
        if (!eng_memtable_iter_valid(&it))
                return true;
        eng_memtable_iter_entry(&it, &e);
        return past_end(t, &e);
}

/* Drops t's oldest sealed memtable, which holds nothing of t's: nothing to
 * write, and nothing for a replay to find either (the log's entries of
 * t's range up to its seq are all in t's SSTables). */
static void skip_empty(struct eng_shard *s, struct eng_tablet *t)
{
        t->flushed_seq = t->imm[0].sealed_seq;
        s->imm_bytes -= t->imm[0].bytes;
        eng_memtable_unref(t->imm[0].mt);
        memmove(&t->imm[0], &t->imm[1], (t->n_imm - 1) * sizeof(t->imm[0]));
        t->n_imm--;
        s->seal_blocked = false;
}

static void start_flush(struct eng_shard *s)
{
        struct eng_tablet *t = pick_flush(s);
        size_t plen = strlen(s->dir) + 32;
        struct eng_flush *f;
        struct eng_sst_write_opts o = { 0 };
        int r;

        while (t && oldest_sealed_empty(t)) {
                skip_empty(s, t);
                shard_wake_waiters(s);
                t = pick_flush(s);
        }
        if (!t)
                return;
        f = calloc(1, sizeof(*f) + plen);
        if (!f)
                return;
        f->s = s;
        f->t = t;
        f->imm = t->imm[0];
        f->file_id = shard_file_id_new(s);
        snprintf(f->path, plen, "%s/%016llx.sst", s->dir, (unsigned long long)f->file_id);
        f->src.next = flush_next;
        eng_memtable_iter_init(&f->it, f->imm.mt);
        eng_memtable_iter_seek(&f->it, t->start, t->start_len);
        o.path = f->path;
        o.table.file_id = f->file_id;
        o.table.tablet = t->id;
        r = eng_sst_write_start(s->fs, &o, &f->src, flush_written, f, &f->w);
        if (r < 0) {
                free(f);
                return;
        }
        s->flush = f;
        s->busy++;
}

/*
 * Once per log segment: when the log behind the newest segment has grown
 * past log_limit_bytes, seals every active memtable whose first record lies
 * in the segments beyond the limit, so their flushes let the log be cut.
 * Only a tablet that has stopped taking writes (a sequential load moves on
 * through the key ranges) holds one that long: the budget seals the
 * busiest memtable first. A tablet that cannot be sealed now (its sealed
 * memtables are at the limit) is tried again at the next segment.
 */
static void seal_log_holders(struct eng_shard *s)
{
        uint64_t cur = s->wal ? eng_wal_segment(s->wal) : 0;
        uint64_t keep = s->o.log_limit_bytes / s->o.segment_bytes;

        if (cur == s->log_checked)
                return;
        s->log_checked = cur;
        if (keep < SHARD_LOG_MIN_SEGMENTS)
                keep = SHARD_LOG_MIN_SEGMENTS;
        if (cur <= keep)
                return;
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];

                if (t->active_first_segment && t->active_first_segment <= cur - keep &&
                    t->n_imm < SHARD_MAX_SEALED) {
                        shard_seal(s, t);
                        s->stats.log_limit_seals += !t->active_first_segment;
                }
        }
}

void shard_maybe_flush(struct eng_shard *s)
{
        seal_log_holders(s);
        /* A scan over every tablet, so not again on every write while
         * nothing can be sealed: until a flush frees a slot or an empty
         * tablet takes a write (s->seal_blocked). */
        while (s->active_bytes >= s->o.memtable_budget / 2 && !s->seal_blocked) {
                struct eng_tablet *big = NULL;

                for (uint32_t i = 0; i < s->n_tablets; i++)
                        if (s->tablets[i]->n_imm < SHARD_MAX_SEALED && !s->tablets[i]->dropped &&
                            (!big || s->tablets[i]->active_bytes > big->active_bytes))
                                big = s->tablets[i];
                if (!big || !big->active_first_segment) {
                        s->seal_blocked = true;
                        break;
                }
                shard_seal(s, big);
                if (big->active_first_segment)
                        break;          /* no memory for a fresh memtable: next write */
        }
        if (!s->flush && !s->retry_armed && !s->error)
                start_flush(s);
}

int eng_shard_flush(struct eng_shard *s, void (*done)(void *arg, int res), void *arg)
{
        struct shard_waiter *w;

        if (s->error)
                return s->error;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        shard_apply_pending(s);
        for (uint32_t i = 0; i < s->n_tablets; i++)
                shard_seal(s, s->tablets[i]);
        w->upto_seq = s->last_seq;
        w->done = done;
        w->arg = arg;
        w->next = s->flush_waiters;
        s->flush_waiters = w;
        shard_maybe_flush(s);
        /* Nothing to flush: answer from the loop, never inside the call. */
        if (!s->wake_posted) {
                s->wake_posted = true;
                s->wake_task.fn = shard_wake_task;
                s->wake_task.name = "shard flush waiters";
                rx_loop_post(s->loop, &s->wake_task);
        }
        return 0;
}

void shard_wake_task(struct rx_loop *loop, struct rx_task *task)
{
        struct eng_shard *s = (struct eng_shard *)((char *)task - offsetof(struct eng_shard, wake_task));

        (void)loop;
        s->wake_posted = false;
        shard_wake_waiters(s);
}

uint64_t shard_flush_file_id(const struct eng_shard *s)
{
        return s->flush ? s->flush->file_id : 0;
}
