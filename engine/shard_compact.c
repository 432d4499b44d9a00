/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compaction in the shard: when and what to merge, and how the result
 * replaces its inputs. One compaction runs at a time per shard (this
 * machine has a core per shard; the flush runs beside it):
 *   pick a run of adjacent tables of one tablet (compaction.h) -> merge
 *   them into one new table at the configured byte rate -> sync the
 *   directory -> open the table -> record it in the manifest, the inputs
 *   removed -> publish the tablet's new table set (the output in the
 *   inputs' place) -> drop the inputs' cached blocks and delete their
 *   files.
 * The output stands for the inputs' whole seq range, so the tablet's tables
 * keep disjoint, ordered seq ranges. Until the manifest edit is durable the
 * new file is not part of the database (start-up deletes it); once it is,
 * the inputs are not (start-up deletes them if we crash before we do).
 * Readers holding the old table set keep reading the inputs' open fds.
 *
 * Background compactions are picked after every flush and compaction;
 * a failed one is logged and picked again after the next flush. Besides
 * the size-tiered picks, reads start one (a read compaction, as LevelDB's
 * seek compaction, counted in work): every source a read consults beyond
 * the first (tables; memtables too for scans) is a tablet's read debt
 * (shard_read_debt), and once the debt covers what merging all the
 * tablet's tables would cost, they are merged into one, its memtable
 * flushed first if writes have left it -- the read-mostly tablet ends as
 * one table, as it would under leveled compaction, and the merges never
 * cost more than the reads they save had already wasted. A major
 * compaction (eng_shard_compact) flushes, then merges every tablet's tables
 * into one at the bottom, tablet by tablet, between background ones.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/compaction.h"
#include "engine/key.h"
#include "engine/shard_internal.h"

/* Tables one compaction merges at most (a major one does a bigger tablet
 * in several rounds, oldest tables first). */
#define SHARD_MAX_COMPACT_INPUTS 64u
/* A read compaction's cost against a read's: merging a table byte takes
 * about what a probe of one table's filter line costs a get (~5 against
 * ~40 ns here), so a tablet's read debt pays for a merge of all its tables
 * once it reaches their bytes / this. */
#define READ_DEBT_BYTES_PER_PROBE 8u
/* What any merge costs besides its bytes, in probes: the directory and
 * manifest syncs and edits (~1 ms), so that small tablets do not churn. */
#define READ_DEBT_FIXED_PROBES 25000u

struct eng_shard_compaction {
        struct eng_shard *s;
        struct eng_tablet *t;
        struct eng_tset *from;          /* the set the inputs were picked from (referenced) */
        uint32_t first, n;
        bool major;
        uint64_t started_ns;
        uint64_t file_id;
        struct eng_compaction *job;
        struct eng_sst_table *out;
        struct eng_manifest_table meta;
        struct eng_manifest_table *removed;
        struct eng_manifest_write mw;
        struct eng_fs_op op;
        uint32_t unlinked;              /* inputs deleted so far */
        /* Its tablet was split meanwhile (shard_relayout.c): the output is
         * thrown away, and t -- out of s->tablets -- is freed at the end. */
        bool orphaned;
        bool recording;                 /* its manifest edit is applied: too late to orphan */
        char unlink_path[4096];
        char path[];
};

/* A caller of eng_shard_compact. */
struct shard_major {
        void (*done)(void *arg, int res);
        void *arg;
        uint32_t next_tablet;           /* tablet ids below it are done */
        int res;
        bool flushed;
};

static void compaction_end(struct eng_shard_compaction *c, int res);

/* ---- finishing ---- */

static void major_finish(struct eng_shard *s)
{
        struct shard_major *mj = s->major;

        s->major = NULL;
        mj->done(mj->arg, mj->res);
        free(mj);
}

static void compaction_free(struct eng_shard_compaction *c)
{
        eng_compaction_free(c->job);
        eng_sst_table_unref(c->out);
        shard_tset_unref(c->from);
        free(c->removed);
        free(c);
}

/* Deletes the inputs' files one at a time, then ends. */
static void unlink_input(struct eng_shard_compaction *c);

static void input_unlinked(struct eng_fs_op *op, int res)
{
        struct eng_shard_compaction *c = op->ctx;

        if (res < 0 && res != -ENOENT)
                log_warn("shard %u: removing compacted %s: %s", c->s->o.shard, c->unlink_path,
                         strerror(-res));
        c->unlinked++;
        unlink_input(c);
}

static void unlink_input(struct eng_shard_compaction *c)
{
        struct eng_shard *s = c->s;

        while (c->unlinked < c->n) {
                uint64_t id = c->removed[c->unlinked].file_id;

                if (shard_file_named(s, id)) {
                        c->unlinked++;  /* shared: another tablet still reads it */
                        continue;
                }
                eng_block_cache_erase_file(s->cache, id);
                snprintf(c->unlink_path, sizeof(c->unlink_path), "%s/%016" PRIx64 ".sst", s->dir, id);
                c->op.ctx = c;
                if (eng_fs_unlink(s->fs, &c->op, c->unlink_path, input_unlinked) == 0)
                        return;
                c->unlinked++;  /* start-up deletes what the manifest does not name */
        }
        compaction_end(c, 0);
}

/* The new set: the current one with the inputs replaced by the output (or
 * by nothing). Flushes may have put newer tables in front meanwhile; the
 * inputs are still adjacent, since only this compaction removes tables. */
static struct eng_tset *tset_replace(const struct eng_shard_compaction *c)
{
        const struct eng_tset *cur = c->t->tset;
        uint32_t at = 0, n_out = c->out ? 1 : 0, k = 0;
        struct eng_tset *ts;

        while (at < cur->n && cur->e[at].meta.file_id != c->removed[0].file_id)
                at++;
        if (at + c->n > cur->n)
                return NULL;
        for (uint32_t i = 0; i < c->n; i++)
                if (cur->e[at + i].meta.file_id != c->removed[i].file_id)
                        return NULL;
        ts = shard_tset_new(cur->n - c->n + n_out);
        if (!ts)
                return NULL;
        for (uint32_t i = 0; i < cur->n; i++) {
                if (i == at && n_out) {
                        ts->e[k].t = c->out;
                        ts->e[k++].meta = c->meta;
                }
                if (i >= at && i < at + c->n)
                        continue;
                ts->e[k++] = cur->e[i];
                eng_sst_table_ref(cur->e[i].t);
        }
        if (n_out) {
                eng_sst_table_ref(c->out);
                shard_track_table(c->s, c->out);
        }
        return ts;
}

static void compaction_recorded(struct eng_manifest_write *mw, int res)
{
        struct eng_shard_compaction *c = mw->ctx;
        struct eng_shard *s = c->s;
        struct eng_tset *ts;

        if (res < 0) {
                /* -ENOSPC only once closing (eng_manifest_stop_retrying):
                 * not recorded, nothing lost. */
                if (res != -ENOSPC || !s->closing)
                        shard_set_error(s, res, "manifest write");
                compaction_end(c, res);
                return;
        }
        ts = tset_replace(c);
        if (!ts) {      /* durable but not published: only a restart would show it */
                shard_set_error(s, -ENOMEM, "publishing a compacted table");
                compaction_end(c, -ENOMEM);
                return;
        }
        shard_tset_unref(c->t->tset);
        c->t->tset = ts;
        s->stats.compactions++;
        s->stats.compaction_bytes_in += eng_compaction_result(c->job)->bytes_read;
        s->stats.expired_dropped += eng_compaction_result(c->job)->merge.expired;
        s->stats.compaction_bytes_out += c->meta.file_size;
        s->stats.disk_bytes_written += c->meta.file_size;
        unlink_input(c);
}

static void orphan_output_removed(struct eng_fs_op *op, int res)
{
        (void)res;      /* best effort: start-up deletes files the manifest does not name */
        compaction_end(op->ctx, 0);     /* not a failure: the children compact their ranges */
}

/* An orphaned compaction's end: its output goes (if it made one). */
static void orphan_end(struct eng_shard_compaction *c)
{
        c->op.ctx = c;
        if (!eng_compaction_result(c->job)->has_output ||
            eng_fs_unlink(c->s->fs, &c->op, c->path, orphan_output_removed) < 0)
                compaction_end(c, 0);
}

/* Records the output (if any) and the inputs' removal in the manifest. */
static void compaction_record(struct eng_shard_compaction *c)
{
        struct eng_shard *s = c->s;
        struct eng_manifest_edit e = {
                .removed = c->removed, .n_removed = c->n, .next_file_id = s->next_file_id,
        };
        int r;

        if (c->orphaned) {
                orphan_end(c);
                return;
        }
        if (c->out) {
                e.added = &c->meta;
                e.n_added = 1;
        }
        c->recording = true;
        c->mw.done = compaction_recorded;
        c->mw.ctx = c;
        r = eng_manifest_apply(s->man, &e, &c->mw);
        if (r < 0) {
                if (r != -ENOSPC || !s->closing)
                        shard_set_error(s, r, "manifest edit");
                compaction_end(c, r);
        }
}

/* ---- the job ---- */

static void compaction_failed(struct eng_shard_compaction *c, int res, const char *what)
{
        log_error("shard %u: compaction of tablet %u into %s: %s failed (%s)", c->s->o.shard,
                  c->t->id, c->path, what,
                  res < 0 && -res < 4096 ? strerror(-res) : scree_strerror(res));
        /* A damaged input was logged with its block when the merge met it;
         * say what becomes of it. It is left out of later picks, so the
         * failure does not repeat (pick_tablet). */
        for (uint32_t i = 0; res == -SCREE_ECORRUPT && i < c->n; i++)
                if (eng_sst_table_is_damaged(c->from->e[c->first + i].t))
                        log_error("shard %u: compaction of tablet %u: input %s/%016" PRIx64
                                  ".sst is damaged; the inputs are kept, and the tablet's "
                                  "compactions leave it and the tables older than it out",
                                  c->s->o.shard, c->t->id, c->s->dir,
                                  c->from->e[c->first + i].meta.file_id);
        c->s->stats.compaction_errors++;
        compaction_end(c, res);
}

static void output_opened(void *arg, int res, struct eng_sst_table *table)
{
        struct eng_shard_compaction *c = arg;
        const struct eng_compaction_result *r = eng_compaction_result(c->job);

        if (res < 0) {
                compaction_failed(c, res, "opening the new table");
                return;
        }
        c->out = table;
        c->meta = (struct eng_manifest_table){
                .tablet = c->t->id,
                .file_id = c->file_id, .file_size = r->file_size,
                .min_seq = r->min_seq, .max_seq = r->max_seq,
        };
        /* It takes the run's place in the tablet's order: it stands for
         * the run's seqs as the manifest has them (compaction.h). */
        for (uint32_t i = 0; i < c->n; i++) {
                const struct eng_manifest_table *m = &c->from->e[c->first + i].meta;

                if (m->min_seq < c->meta.min_seq)
                        c->meta.min_seq = m->min_seq;
                if (m->max_seq > c->meta.max_seq)
                        c->meta.max_seq = m->max_seq;
        }
        compaction_record(c);
}

static void output_dir_synced(struct eng_fs_op *op, int res)
{
        struct eng_shard_compaction *c = op->ctx;

        if (res == 0)
                res = eng_sst_table_open(c->s->fs, c->s->cache, c->path, c->file_id,
                                         eng_compaction_result(c->job)->file_size, output_opened, c);
        if (res < 0)
                compaction_failed(c, res, "opening the new table");
}

static void job_done(struct eng_compaction *job, int res, void *arg)
{
        struct eng_shard_compaction *c = arg;

        (void)job;
        if (res == 0 && c->orphaned) {
                orphan_end(c);
                return;
        }
        if (res < 0) {
                compaction_failed(c, res, "merging");
                return;
        }
        if (!eng_compaction_result(c->job)->has_output) {
                compaction_record(c);   /* everything was dropped */
                return;
        }
        c->op.ctx = c;
        res = eng_fs_fsync(c->s->fs, &c->op, c->s->dir_fd, output_dir_synced);
        if (res < 0)
                compaction_failed(c, res, "syncing the directory");
}

/* Starts merging tables [first, first + n) of t's set. Returns 0 or <0. */
static int compaction_start(struct eng_shard *s, struct eng_tablet *t, uint32_t first, uint32_t n,
                            bool bottommost, bool major)
{
        size_t plen = strlen(s->dir) + 32;
        struct eng_shard_compaction *c = calloc(1, sizeof(*c) + plen);
        struct eng_sst_table *inputs[SHARD_MAX_COMPACT_INPUTS];
        struct eng_compaction_opts o = { .n_inputs = n, .inputs = inputs, .bottommost = bottommost,
                                         .readahead_bytes = s->o.compaction_readahead,
                                         .lo = t->start, .lo_len = t->start_len,
                                         .hi = t->end, .hi_len = t->end_len };
        int r;

        if (!c || n > SHARD_MAX_COMPACT_INPUTS || !(c->removed = calloc(n, sizeof(*c->removed)))) {
                free(c);
                return -ENOMEM;
        }
        *c = (struct eng_shard_compaction){ .s = s, .t = t, .from = t->tset, .first = first,
                                             .n = n, .major = major, .removed = c->removed,
                                             .started_ns = time_now_ns() };
        shard_tset_ref(c->from);
        for (uint32_t i = 0; i < n; i++) {
                inputs[i] = c->from->e[first + i].t;
                c->removed[i] = c->from->e[first + i].meta;
        }
        c->file_id = shard_file_id_new(s);
        snprintf(c->path, plen, "%s/%016" PRIx64 ".sst", s->dir, c->file_id);
        o.now_ms = time_wall_ns() / 1000000;
        o.out.path = c->path;
        o.out.table.file_id = c->file_id;
        o.out.table.tablet = t->id;
        o.out.rate_bytes_per_sec = s->o.compaction_rate == UINT64_MAX ? 0 : s->o.compaction_rate;
        r = eng_compaction_start(s->fs, &o, job_done, c, &c->job);
        if (r < 0) {
                compaction_free(c);
                return r;
        }
        s->compaction = c;
        t->compacting = true;
        if (first == 0 && n == c->from->n)      /* paid: t will be one table */
                t->debt = (struct shard_rdebt){ 0 };
        s->busy++;
        return 0;
}

/* ---- picking ---- */

/*
 * How many of t's tables, newest first, lie before its newest damaged one
 * (a read found a damaged block in it: sst_io.h): all of them when none
 * is. A merge including a damaged table would fail on it again (never
 * dropping what it cannot read), so compactions keep to the tables newer
 * than it; only adjacent tables are merged, so the order stays valid.
 */
static uint32_t tables_before_damage(const struct eng_tablet *t)
{
        uint32_t n = 0;

        while (t->tset && n < t->tset->n && !eng_sst_table_is_damaged(t->tset->e[n].t))
                n++;
        return n;
}

/* A size-tiered pick for t. Returns 1 and *ret, or 0. */
static int pick_tablet(const struct eng_tablet *t, struct eng_compact_pick *ret)
{
        struct eng_compact_table tables[SHARD_MAX_COMPACT_INPUTS * 4];
        uint32_t n = tables_before_damage(t);

        if (n < 2)
                return 0;
        if (n > sizeof(tables) / sizeof(tables[0]))
                n = sizeof(tables) / sizeof(tables[0]);
        for (uint32_t i = 0; i < n; i++)
                tables[i] = (struct eng_compact_table){ .file_size = t->tset->e[i].meta.file_size,
                                                        .min_seq = t->tset->e[i].meta.min_seq,
                                                        .max_seq = t->tset->e[i].meta.max_seq };
        if (!eng_compact_pick(tables, n, NULL, ret))
                return 0;
        ret->bottommost = ret->first + ret->n == t->tset->n;
        return 1;
}

/* Whether a major compaction has work in tablet t: several tables, or one
 * holding tombstones or versions expired by now_ms to drop. */
static bool major_needed(const struct eng_tablet *t, uint64_t now_ms)
{
        const struct eng_sst_props *p;

        if (!t->tset || !t->tset->n)
                return false;
        if (t->tset->n > 1)
                return true;
        p = eng_sst_reader_props(eng_sst_table_reader(t->tset->e[0].t));
        return p->n_tombstones || (p->n_expiring && p->min_expiry_ms <= now_ms);
}

/* Whether t may take a compaction now. */
static bool compactable(const struct eng_tablet *t)
{
        return !t->dropped && !t->frozen && !t->moving && !t->compacting &&
               shard_tablet_settled(t);
}

/* Starts the next compaction of the major one; false when none is left.
 * A tablet is done once a compaction of all its tables started. */
static bool major_step(struct eng_shard *s)
{
        struct shard_major *mj = s->major;
        uint64_t now_ms = time_wall_ns() / 1000000;

        /* By id, not index: dropped tablets leave s->tablets meanwhile. */
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];
                uint32_t n;
                int r;

                if (t->id < mj->next_tablet || !compactable(t) || !major_needed(t, now_ms))
                        continue;
                mj->next_tablet = t->id;
                if (tables_before_damage(t) < t->tset->n) {
                        /* Merged at the bottom it would fail on the damage. */
                        log_error("shard %u: major compaction: tablet %u left as it is: SSTable "
                                  "%s/%016" PRIx64 ".sst is damaged", s->o.shard, t->id, s->dir,
                                  t->tset->e[tables_before_damage(t)].meta.file_id);
                        if (!mj->res)
                                mj->res = -SCREE_ECORRUPT;
                        mj->next_tablet = t->id + 1;
                        continue;
                }
                n = t->tset->n < SHARD_MAX_COMPACT_INPUTS ? t->tset->n : SHARD_MAX_COMPACT_INPUTS;
                r = compaction_start(s, t, t->tset->n - n, n, true, true);
                if (r < 0) {
                        if (!mj->res)
                                mj->res = r;
                        mj->next_tablet = t->id + 1;
                        continue;
                }
                if (n == t->tset->n)
                        mj->next_tablet = t->id + 1;
                return true;
        }
        return false;
}

/* t's sources a scan merges beyond its tables: its memtables holding
 * entries. */
static uint32_t memtable_sources(const struct eng_tablet *t)
{
        return (t->active_first_segment ? 1 : 0) + t->n_imm;
}

/* What merging all of t's tables, and its memtables flushed, would cost,
 * in probes; 0 when t is one source already. */
static uint64_t read_debt_limit(const struct eng_tablet *t)
{
        uint32_t tables = t->tset ? t->tset->n : 0;
        uint64_t bytes = t->active_bytes;

        if (tables + memtable_sources(t) < 2)
                return 0;
        for (uint32_t i = 0; i < t->n_imm; i++)
                bytes += t->imm[i].bytes;
        for (uint32_t i = 0; i < tables; i++)
                bytes += t->tset->e[i].meta.file_size;
        return bytes / READ_DEBT_BYTES_PER_PROBE + READ_DEBT_FIXED_PROBES;
}

/* The debt of tablet t (limit: read_debt_limit) is due. Its memtable
 * holding entries is judged at two looks a sixteenth of the limit apart:
 * no write reached t between them, it is sealed for the flush, whose end
 * picks again (the new table is merged with the others then); written
 * meanwhile, t's tables are merged without it (the oldest
 * SHARD_MAX_COMPACT_INPUTS; the next pick takes the rest). A tablet with a
 * damaged table is left to the size-tiered picks. Returns whether a
 * compaction started; when nothing can start for a while, the next look
 * waits a whole limit. */
static bool read_compact_tablet(struct eng_shard *s, struct eng_tablet *t, uint64_t limit)
{
        struct shard_rdebt *d = &t->debt;
        uint32_t n, nd = tables_before_damage(t);

        if (t->tset && nd < t->tset->n) {
                d->next_look = d->probes + limit;
                return false;
        }
        if (t->active_first_segment) {
                bool quiet = t->load.writes == d->writes;

                if (!d->looked || d->probes < d->look_probes + limit / 16) {
                        if (!d->looked)
                                *d = (struct shard_rdebt){ .probes = d->probes, .looked = true,
                                                           .writes = t->load.writes,
                                                           .look_probes = d->probes };
                        d->next_look = d->look_probes + limit / 16;
                        return false;
                }
                d->writes = t->load.writes;
                d->look_probes = d->probes;
                if (quiet && t->n_imm < SHARD_MAX_SEALED) {
                        shard_seal(s, t);
                        s->stats.read_seals++;
                        shard_maybe_flush(s);
                        d->next_look = d->probes + limit / 16;
                        return false;
                }
        }
        if (nd < 2 || t->n_imm) {
                /* One table and a memtable in use, or a flush of t coming
                 * (its end picks again). */
                d->next_look = d->probes + (t->n_imm ? limit / 16 : limit);
                return false;
        }
        n = nd < SHARD_MAX_COMPACT_INPUTS ? nd : SHARD_MAX_COMPACT_INPUTS;
        if (compaction_start(s, t, nd - n, n, nd == t->tset->n, false) < 0) {
                d->next_look = d->probes + limit;
                return false;
        }
        s->stats.read_compactions++;
        return true;
}

/* Whether t's debt is due; *ret_limit its limit. */
static bool read_debt_due(const struct eng_tablet *t, uint64_t *ret_limit)
{
        *ret_limit = read_debt_limit(t);
        return *ret_limit && t->debt.probes >= *ret_limit;
}

/* Whether the shard may start a background compaction now. */
static bool may_compact(const struct eng_shard *s)
{
        return !s->compaction && !s->closing && !s->error && !s->major && !s->o.no_compaction;
}

void shard_read_debt(struct eng_shard *s, struct eng_tablet *t, uint64_t probes)
{
        uint64_t limit;

        if (t->compacting)
                return;         /* its merge, under way, pays this too */
        t->debt.probes += probes;
        if (t->debt.probes < t->debt.next_look)
                return;
        if (!read_debt_due(t, &limit)) {
                t->debt.next_look = limit ? limit : t->debt.probes + 1;
                return;
        }
        t->debt.next_look = t->debt.probes + limit / 16 + 1;
        if (may_compact(s) && compactable(t))
                (void)read_compact_tablet(s, t, limit);
}

/* A read compaction of the first tablet (from the cursor) whose debt is
 * due. Returns whether one started. */
static bool start_read_compaction(struct eng_shard *s)
{
        for (uint32_t k = 0; k < s->n_tablets; k++) {
                uint32_t i = (s->compact_cursor + k) % s->n_tablets;
                struct eng_tablet *t = s->tablets[i];
                uint64_t limit;

                if (!compactable(t) || !read_debt_due(t, &limit))
                        continue;
                if (read_compact_tablet(s, t, limit)) {
                        s->compact_cursor = i + 1;
                        return true;
                }
                if (s->compaction)
                        return true;    /* a flush's waiter started one */
        }
        return false;
}

/* Whether table tb holds keys outside t's range: a file t shares with its
 * sibling since a split (shard_relayout.c). */
static bool reaches_out(const struct eng_tablet *t, const struct eng_sst_table *tb)
{
        const struct eng_sst_props *p = eng_sst_reader_props(eng_sst_table_reader(tb));

        return p->n_entries &&
               (eng_key_cmp(p->smallest, p->smallest_len, t->start, t->start_len) < 0 ||
                eng_key_cmp(p->largest, p->largest_len, t->end, t->end_len) >= 0);
}

/*
 * Once nothing else needs compacting: rewrites alone, clipped to its
 * tablet's range, the oldest table some tablet shares with its sibling
 * since a split, so that the two separate -- each file ends up with one
 * tablet's keys, the shared one is deleted once neither names it, and a
 * tablet's size is its own again. Returns whether one started.
 */
static bool start_separation(struct eng_shard *s)
{
        for (uint32_t k = 0; k < s->n_tablets; k++) {
                uint32_t i = (s->compact_cursor + k) % s->n_tablets;
                struct eng_tablet *t = s->tablets[i];

                if (!compactable(t) || !t->tset)
                        continue;
                for (uint32_t j = tables_before_damage(t); j-- > 0;) {
                        if (!reaches_out(t, t->tset->e[j].t))
                                continue;
                        if (compaction_start(s, t, j, 1, j + 1 == t->tset->n, false) < 0)
                                return false;
                        s->compact_cursor = i + 1;
                        return true;
                }
        }
        return false;
}

void shard_maybe_compact(struct eng_shard *s)
{
        struct eng_compact_pick p;

        if (s->compaction)
                return;
        if (s->closing || s->error) {
                if (s->major && s->major->flushed) {
                        s->major->res = s->error ? s->error : -SCREE_ESHUTDOWN;
                        major_finish(s);
                }
                return;
        }
        if (s->major && s->major->flushed) {
                if (major_step(s))
                        return;
                major_finish(s);
        }
        if (s->o.no_compaction || s->major)
                return;
        for (uint32_t k = 0; k < s->n_tablets; k++) {
                uint32_t i = (s->compact_cursor + k) % s->n_tablets;
                struct eng_tablet *t = s->tablets[i];

                if (compactable(t) &&
                    pick_tablet(t, &p) &&
                    compaction_start(s, t, p.first, p.n, p.bottommost, false) == 0) {
                        s->compact_cursor = i + 1;
                        return;
                }
        }
        if (!start_read_compaction(s))
                (void)start_separation(s);
}

static void compaction_end(struct eng_shard_compaction *c, int res)
{
        struct eng_shard *s = c->s;

        if (c->major && s->major && res < 0 && !s->major->res)
                s->major->res = res;
        c->t->compacting = false;
        if (c->orphaned)
                shard_tablet_free(c->t);
        s->compaction = NULL;
        s->compaction_ended_ns += time_now_ns() - c->started_ns;
        compaction_free(c);
        shard_maybe_compact(s);
        shard_job_done(s);
}

bool shard_compaction_orphanable(const struct eng_shard *s, const struct eng_tablet *t)
{
        const struct eng_shard_compaction *c = s->compaction;

        return !c || c->t != t || !c->recording;
}

bool shard_compaction_orphan(struct eng_shard *s, const struct eng_tablet *t)
{
        struct eng_shard_compaction *c = s->compaction;

        if (!c || c->t != t)
                return false;
        SCREE_ASSERT(!c->recording);
        c->orphaned = true;
        return true;
}

uint64_t shard_compaction_ns(const struct eng_shard *s)
{
        return s->compaction_ended_ns + (s->compaction ? time_now_ns() - s->compaction->started_ns : 0);
}

/* ---- major compaction ---- */

static void major_flushed(void *arg, int res)
{
        struct eng_shard *s = arg;

        s->major->flushed = true;
        if (res < 0) {
                s->major->res = res;
                major_finish(s);
                return;
        }
        shard_maybe_compact(s);
}

int eng_shard_compact(struct eng_shard *s, void (*done)(void *arg, int res), void *arg)
{
        struct shard_major *mj;
        int r;

        if (s->error)
                return s->error;
        if (s->closing)
                return -SCREE_ESHUTDOWN;
        if (s->major)
                return -EBUSY;
        mj = calloc(1, sizeof(*mj));
        if (!mj)
                return -ENOMEM;
        mj->done = done;
        mj->arg = arg;
        s->major = mj;
        r = eng_shard_flush(s, major_flushed, s);
        if (r < 0) {
                s->major = NULL;
                free(mj);
        }
        return r;
}

uint64_t shard_compaction_file_id(const struct eng_shard *s)
{
        return s->compaction ? s->compaction->file_id : 0;
}

bool shard_compaction_deleting(const struct eng_shard *s, uint64_t id)
{
        const struct eng_shard_compaction *c = s->compaction;

        if (!c || !c->recording)
                return false;
        for (uint32_t i = c->unlinked; i < c->n; i++)
                if (c->removed[i].file_id == id)
                        return true;
        return false;
}
