/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tablet moving between shards: the source's and the target's steps
 * (see shard_move.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/catalog.h"
#include "engine/shard_internal.h"
#include "engine/shard_move.h"
#include "engine/shard_warm.h"
#include "engine/shard_xtxn_int.h"
#include "engine/sst_reader.h"

void eng_handoff_fini(struct eng_handoff *h)
{
        free(h->files);
        free(h->dir);
        eng_warm_free(h->warm);
        h->files = NULL;
        h->dir = NULL;
        h->warm = NULL;
        h->n_files = 0;
}

/* ---- the source ---- */

enum { MO_FLUSH, MO_SETTLE };

#define MO_TICK_NS (1000 * 1000)        /* how often the source looks again */
/* A move that could not hand over in this long is called off (a flush
 * that cannot keep up, a part in doubt that does not commit). */
#define MO_DEADLINE_NS (30ull * 1000 * 1000 * 1000)

static void mo_end(struct eng_move_out *mo, int res)
{
        struct eng_shard *s = mo->s;

        eng_warm_free(mo->warm);        /* (handed over, on success) */
        mo->warm = NULL;
        if (res < 0) {
                mo->t->moving = mo->t->moved_out = false;
                eng_handoff_fini(&mo->h);
                shard_maybe_compact(s);
        }
        shard_job_done(s);
        mo->done(mo, res);
}

/* Whether t's memtables hold anything. */
static bool holds_memtables(const struct eng_tablet *t)
{
        return t->n_imm || t->active_first_segment;
}

/* Everything logged before the cut is applied (a write with a seq is in
 * the memtables or in s->unapplied: shard.c), and no part of a write
 * across shards holding keys of the tablet waits for its commit (which
 * applies them). A write that waits for memory or behind another
 * operation is routed again when it goes on (shard.c, write_now), as is
 * a read-modify-write's write. */
static bool settled(struct eng_move_out *mo)
{
        struct eng_shard *s = mo->s;

        shard_apply_pending(s);
        if (s->unapplied.count)
                return false;
        for (const struct shard_txn *x = s->txns; x; x = x->next)
                if (!x->dropped && shard_batch_moved(s, x->batch, x->batch_len, mo->t))
                        return false;
        return true;
}

static int mo_handoff(struct eng_move_out *mo)
{
        struct eng_shard *s = mo->s;
        const struct eng_tablet *t = mo->t;
        uint32_t n = t->tset ? t->tset->n : 0;

        mo->h = (struct eng_handoff){ .tablet = t->id, .table = t->table, .n_files = n,
                                      .flushed_bytes = s->stats.flush_bytes - mo->flush_bytes_at_start,
                                      .cut_ns = mo->cut_ns, .ops_avg = t->ops_avg,
                                      .warm = mo->warm };
        mo->warm = NULL;
        mo->h.files = calloc(n ? n : 1, sizeof(*mo->h.files));
        mo->h.dir = strdup(s->dir);
        if (!mo->h.files || !mo->h.dir)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                mo->h.files[i] = t->tset->e[i].meta;
                if (t->tset->e[i].meta.max_seq > mo->h.max_seq)
                        mo->h.max_seq = t->tset->e[i].meta.max_seq;
        }
        shard_warm_keep(mo->h.warm, mo->h.files, n);
        return 0;
}

static void mo_tick(struct rx_loop *loop, struct rx_timer *tm)
{
        struct eng_move_out *mo = container_of(tm, struct eng_move_out, timer);
        struct eng_shard *s = mo->s;
        struct eng_tablet *t = mo->t;

        if (s->error || s->closing || t->dropped) {
                mo_end(mo, s->error ? s->error : t->dropped ? -SCREE_ENOTFOUND : -SCREE_ESHUTDOWN);
                return;
        }
        if (time_now_ns() - mo->started_ns > MO_DEADLINE_NS) {
                log_warn("shard %u: moving tablet %u: no hand-over in 30 s; called off",
                         s->o.shard, t->id);
                mo_end(mo, -ETIMEDOUT);
                return;
        }
        /* Its cache entries are copied a step a tick before the cut
         * (they cost the tablet's requests no wait then). */
        if (mo->phase == MO_FLUSH && mo->warm && !mo->warm_done)
                mo->warm_done = shard_warm_copy(s, mo->warm);
        /* Its memtables as they were when the move began are flushed
         * (writes meanwhile wait in its active memtable), its cache
         * entries copied: cut. */
        if (mo->phase == MO_FLUSH && !t->compacting && !t->n_imm &&
            (!mo->warm || mo->warm_done)) {
                /* From now on its keys go elsewhere: let in what was
                 * logged before, then flush that too. */
                t->moved_out = true;
                mo->phase = MO_SETTLE;
                mo->cut_ns = time_now_ns();
        }
        if (mo->phase == MO_SETTLE && settled(mo) && !t->compacting && !holds_memtables(t)) {
                mo_end(mo, mo_handoff(mo));
                return;
        }
        if (t->active_first_segment && mo->phase == MO_SETTLE && settled(mo))
                shard_seal(s, t);       /* what came in before the cut */
        shard_maybe_flush(s);
        rx_timer_arm_after(loop, &mo->timer, MO_TICK_NS);
}

int eng_shard_move_out(struct eng_shard *s, uint32_t tablet, struct eng_move_out *mo)
{
        struct eng_tablet *t = shard_tablet_by_id(s, tablet);

        if (!t || t->dropped || t->arriving || !shard_route_of(s, t->table))
                return -SCREE_ENOTFOUND;
        if (t->moving)
                return -EBUSY;
        mo->s = s;
        mo->t = t;
        mo->phase = MO_FLUSH;
        mo->h = (struct eng_handoff){ 0 };
        mo->flush_bytes_at_start = s->stats.flush_bytes;
        mo->warm = shard_warm_plan(s, t);
        mo->warm_done = false;
        t->moving = true;               /* no compaction starts on it */
        mo->started_ns = time_now_ns();
        shard_seal(s, t);               /* the flushes before the cut */
        s->busy++;
        rx_timer_init(&mo->timer, mo_tick, "engine:move out");
        mo_tick(s->loop, &mo->timer);
        return 0;
}

void eng_shard_move_out_undo(struct eng_shard *s, uint32_t tablet)
{
        struct eng_tablet *t = shard_tablet_by_id(s, tablet);

        if (!t || t->dropped)
                return;
        t->moving = t->moved_out = false;
        shard_maybe_compact(s);
}

/* ---- the target ---- */

bool shard_file_named(const struct eng_shard *s, uint64_t id)
{
        if (eng_manifest_names_file(eng_manifest_state(s->man), id))
                return true;
        for (const struct eng_move_in *mi = s->arrivals; mi; mi = mi->next_arrival)
                for (uint32_t k = 0; k < mi->h->n_files; k++)
                        if (mi->ids[k] == id)
                                return true;
        return false;
}

/* The entry of file id in a live tablet's set, or NULL. */
static const struct eng_tset_entry *entry_of_file(const struct eng_shard *s, uint64_t id)
{
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_tablet *t = s->tablets[i];

                for (uint32_t k = 0; !t->dropped && t->tset && k < t->tset->n; k++)
                        if (t->tset->e[k].meta.file_id == id)
                                return &t->tset->e[k];
        }
        return NULL;
}

/* Frees mi's arrays (the shared tables it still holds let go). */
static void mi_free(struct eng_move_in *mi)
{
        for (uint32_t k = 0; mi->shared && k < mi->h->n_files; k++)
                if (mi->shared[k])
                        eng_sst_table_unref(mi->shared[k]);
        free(mi->shared);
        free(mi->ids);
        mi->shared = NULL;
        mi->ids = NULL;
}

static void mi_end(struct eng_move_in *mi, int res)
{
        struct eng_shard *s = mi->s;
        struct eng_move_in **p = &s->arrivals;

        if (res < 0) {
                log_warn("shard %u: taking over tablet %u: %s", s->o.shard, mi->h->tablet,
                         scree_strerror(res));
                shard_tablet_free(mi->t);
        }
        while (*p != mi)
                p = &(*p)->next_arrival;
        *p = mi->next_arrival;
        mi->t = NULL;
        mi_free(mi);
        shard_job_done(s);
        mi->done(mi, res);
}

static void mi_recorded(struct eng_manifest_write *mw, int res)
{
        struct eng_move_in *mi = mw->ctx;
        struct eng_shard *s = mi->s;

        if (res == 0)
                res = shard_tablet_insert(s, mi->t);
        if (res < 0) {
                shard_set_error(s, res, "recording a tablet moved in");
                mi_end(mi, res);
                return;
        }
        log_info("shard %u: tablet %u taken over from the shard in %s (%u files)", s->o.shard,
                 mi->t->id, mi->h->dir, mi->h->n_files);
        shard_warm_fill(s, mi->h->warm);
        mi->h->warm = NULL;
        mi_end(mi, 0);
}

/* Every file is open: raise the seq, record the tablet. */
static void mi_record(struct eng_move_in *mi)
{
        struct eng_shard *s = mi->s;
        struct eng_tablet *t = mi->t;
        struct eng_manifest_edit e = { 0 };
        struct eng_manifest_tablet entry;
        struct eng_manifest_table *added = NULL;
        int r;

        /* Its files carry the source's seqs: this shard's next ones must
         * be newer, and a replay here skips whatever an earlier stay of
         * the tablet left in this shard's log. */
        if (mi->h->max_seq > s->last_seq)
                s->last_seq = mi->h->max_seq;
        for (uint32_t i = 0; i < mi->h->n_files; i++)
                if (mi->ids[i] >= s->next_file_id)
                        s->next_file_id = mi->ids[i] + 1;
        e.next_file_id = s->next_file_id;
        t->flushed_seq = s->last_seq;
        entry = (struct eng_manifest_tablet){ .id = t->id, .table = t->table,
                                              .flushed_seq = t->flushed_seq, .start = t->start,
                                              .start_len = t->start_len, .end = t->end,
                                              .end_len = t->end_len };
        if (t->tset && !(added = calloc(t->tset->n, sizeof(*added)))) {
                mi_end(mi, -ENOMEM);
                return;
        }
        for (uint32_t i = 0; t->tset && i < t->tset->n; i++)
                added[i] = t->tset->e[i].meta;
        e.new_tablets = &entry;
        e.n_new_tablets = 1;
        e.added = added;
        e.n_added = t->tset ? t->tset->n : 0;
        mi->mw = (struct eng_manifest_write){ .done = mi_recorded, .ctx = mi };
        r = eng_manifest_apply(s->man, &e, &mi->mw);
        free(added);
        if (r < 0)
                mi_end(mi, r);
}

static void mi_open_next(struct eng_move_in *mi);

static void mi_opened(void *arg, int res, struct eng_sst_table *tb)
{
        struct eng_move_in *mi = arg;
        struct eng_tset_entry *e;

        if (res < 0) {
                mi_end(mi, res);
                return;
        }
        e = &mi->t->tset->e[mi->next];
        e->t = tb;
        e->meta = mi->h->files[mi->next];
        e->meta.tablet = mi->t->id;
        e->meta.file_id = mi->ids[mi->next];
        if (!mi->shared[mi->next])
                shard_track_table(mi->s, tb);
        mi->shared[mi->next] = NULL;    /* the set holds it */
        mi->next++;
        mi_open_next(mi);
}

static void mi_open_next(struct eng_move_in *mi)
{
        int r;

        if (mi->next < mi->h->n_files && mi->shared[mi->next]) {
                mi->t->tset->n = mi->next;
                mi_opened(mi, 0, mi->shared[mi->next]);
                return;
        }
        if (mi->next == mi->h->n_files) {
                if (mi->t->tset) {
                        mi->t->tset->n = mi->h->n_files;
                        shard_tset_sort(mi->t->tset->e, mi->t->tset->n, sizeof(mi->t->tset->e[0]));
                }
                mi_record(mi);
                return;
        }
        mi->t->tset->n = mi->next;      /* what is open so far, for a failure's free */
        eng_shard_sst_path(mi->s, mi->ids[mi->next], mi->dst, sizeof(mi->dst));
        r = eng_sst_table_open(mi->s->fs, mi->s->cache, mi->dst, mi->ids[mi->next],
                               mi->h->files[mi->next].file_size, mi_opened, mi);
        if (r < 0)
                mi_end(mi, r);
}

static void mi_synced(struct eng_fs_op *op, int res)
{
        struct eng_move_in *mi = op->ctx;

        if (res < 0) {
                mi_end(mi, res);
                return;
        }
        mi->next = 0;
        if (mi->h->n_files && !(mi->t->tset = shard_tset_new(mi->h->n_files))) {
                mi_end(mi, -ENOMEM);
                return;
        }
        mi_open_next(mi);
}

static void mi_link_next(struct eng_move_in *mi);
static void mi_cleared(struct eng_fs_op *op, int res);

static void mi_linked(struct eng_fs_op *op, int res)
{
        struct eng_move_in *mi = op->ctx;
        int r;

        if (res == -EEXIST && !mi->clearing) {
                /* A file by that name here is no one's (the manifest does
                 * not name it: left by a move that failed, or a drop still
                 * unlinking it): gone, the link follows. */
                mi->clearing = true;
                if ((r = eng_fs_unlink(mi->s->fs, &mi->op, mi->dst, mi_cleared)) < 0)
                        mi_end(mi, r);
                return;
        }
        if (res < 0) {
                mi_end(mi, res);
                return;
        }
        mi->clearing = false;
        mi->next++;
        mi_link_next(mi);
}

static void mi_cleared(struct eng_fs_op *op, int res)
{
        struct eng_move_in *mi = op->ctx;
        int r;

        if (res < 0 && res != -ENOENT) {
                mi_end(mi, res);
                return;
        }
        r = eng_fs_link(mi->s->fs, &mi->op, mi->src, mi->dst, mi_linked);
        if (r < 0)
                mi_end(mi, r);
}

/* Links the files one by one (each under its id: its checksums are
 * seeded with it), then syncs the directory once. */
static void mi_link_next(struct eng_move_in *mi)
{
        struct eng_shard *s = mi->s;
        int r;

        mi->op.ctx = mi;
        while (mi->next < mi->h->n_files && mi->shared[mi->next])
                mi->next++;             /* here already */
        if (mi->next == mi->h->n_files) {
                r = eng_fs_fsync(s->fs, &mi->op, s->dir_fd, mi_synced);
        } else {
                eng_shard_sst_path(s, mi->ids[mi->next], mi->dst, sizeof(mi->dst));
                snprintf(mi->src, sizeof(mi->src), "%s/%016" PRIx64 ".sst", mi->h->dir,
                         mi->h->files[mi->next].file_id);
                r = eng_fs_link(s->fs, &mi->op, mi->src, mi->dst, mi_linked);
        }
        if (r < 0)
                mi_end(mi, r);
}

/* Whether file k can come in: a new id is linked; one the shard holds
 * already is the same file (a split sibling brought it) and is shared. */
static int mi_check_file(struct eng_move_in *mi, uint32_t k)
{
        const struct eng_shard *s = mi->s;
        const struct eng_manifest_table *f = &mi->h->files[k];
        const struct eng_tset_entry *e;

        if (shard_compaction_deleting(s, f->file_id))
                return -EBUSY;                  /* gone in a moment: linked again then */
        if (f->file_id == shard_flush_file_id(s) || f->file_id == shard_compaction_file_id(s))
                return -EEXIST;
        if (!shard_file_named(s, f->file_id))
                return 0;
        if (!(e = entry_of_file(s, f->file_id)))
                return -EBUSY;                  /* another arrival's, not open yet */
        if (e->meta.file_size != f->file_size || e->meta.min_seq != f->min_seq ||
            e->meta.max_seq != f->max_seq) {
                log_warn("shard %u: tablet %u's file %016" PRIx64 " is not the one here by that id "
                         "(both from before per-shard file ids)", s->o.shard, mi->h->tablet,
                         f->file_id);
                return -EEXIST;
        }
        eng_sst_table_ref(e->t);
        mi->shared[k] = e->t;
        return 0;
}

int eng_shard_move_in(struct eng_shard *s, struct eng_handoff *h, struct eng_move_in *mi)
{
        const struct eng_catalog_table *ct;
        uint32_t i;

        if (shard_tablet_by_id(s, h->tablet) || s->dropping)
                return -EBUSY;          /* an earlier stay (or another tablet) being dropped:
                                         * its unlinks must not meet these links */
        if (eng_catalog_tablet_by_id(s->cat, h->tablet, &ct, &i) < 0 || !s->man)
                return -SCREE_ENOTFOUND;
        mi->s = s;
        mi->h = h;
        mi->next = 0;
        mi->clearing = false;
        mi->ids = calloc(h->n_files ? h->n_files : 1, sizeof(*mi->ids));
        mi->shared = calloc(h->n_files ? h->n_files : 1, sizeof(*mi->shared));
        if (!mi->ids || !mi->shared) {
                mi_free(mi);
                return -ENOMEM;
        }
        for (uint32_t k = 0; k < h->n_files; k++) {
                int r;

                mi->ids[k] = h->files[k].file_id;
                if ((r = mi_check_file(mi, k)) < 0) {
                        mi_free(mi);
                        return r;
                }
        }
        if (!(mi->t = shard_tablet_new(s, ct, i))) {
                mi_free(mi);
                return -ENOMEM;
        }
        mi->t->arriving = mi->t->moving = true;
        mi->t->ops_avg = h->ops_avg;
        /* No file of this shard's gets one of these ids from now on, and
         * none of them is deleted while it comes in. */
        for (uint32_t k = 0; k < h->n_files; k++)
                if (mi->ids[k] >= s->next_file_id)
                        s->next_file_id = mi->ids[k] + 1;
        mi->next_arrival = s->arrivals;
        s->arrivals = mi;
        s->busy++;
        mi_link_next(mi);
        return 0;
}

void eng_shard_move_in_undo(struct eng_shard *s, uint32_t tablet)
{
        struct eng_tablet *t = shard_tablet_by_id(s, tablet);

        if (!t || !t->arriving || t->dropped)
                return;
        t->dropped = true;              /* emptied and freed as a dropped table's */
        shard_drop_step(s);
}
