/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's scree engine; see bench_shard.h. Open, run and close
 * arrive as foreign-thread requests and run on the shard's loop; a run
 * issues operations from a fixed set of slots (inflight of them, plus
 * BG_SLOTS for readwhilewriting's writer), each recording its latency when it
 * is acknowledged, and completes the request once the op count or the
 * time limit is reached and the last op is back.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "engine/fs.h"
#include "engine/shard.h"
#include "perf/bench_shard.h"
#include "reactor/smp.h"

/* Synchronous ops issued before yielding to the loop (flushes, syncs). */
#define PUMP_BATCH 64u
/* Open loop: an op due sooner than this is waited for by spinning (the
 * pump re-posted) instead of a timer: a sleeping VM thread wakes ~50 us
 * late, which would count as latency. */
#define PACE_SPIN_NS (150 * NS_PER_US)
/* readwhilewriting's writer: writes in flight at once. */
#define BG_SLOTS 32u

struct bench_shard;

struct bench_op {
        struct bench_shard *b;
        uint64_t start_ns;              /* when it was due */
        enum bench_opc cls;
        const uint8_t *value;           /* rmw: what to write */
        uint32_t value_len;
        uint8_t key[BENCH_MAX_KEY_BYTES];       /* rmw: borrowed until done */
        union {
                struct eng_write w;
                struct eng_get g;
                struct eng_scan sc;
                struct eng_rmw r;
        } u;
};

enum step {
        STEP_OPEN,
        STEP_RUN,
        STEP_CLOSE,
};

struct bench_shard {
        const struct bench_opts *o;
        unsigned id;
        struct bench_gen *gen;
        struct bench_result *res;
        char path[PATH_MAX];
        /* on the shard's thread */
        struct rx_loop *loop;
        struct eng_fs *fs;
        struct eng_shard *sh;
        struct rx_alien_req req;
        enum step step;
        /* the run in progress */
        enum bench_workload w;
        const struct bench_dists *dists;
        uint64_t t0_ns;
        struct bench_pace pace;
        bool running, pump_posted;
        bool bg;                        /* readwhilewriting's writer is on */
        uint32_t bg_free[BG_SLOTS], n_bg_free;  /* the writer's free slots */
        uint64_t issued, bg_issued;
        uint64_t bg_ns;                 /* time spent issuing the writer's writes */
        struct bench_op *ops;           /* inflight, then the writer's */
        uint32_t *free_slots, n_free, in_flight;
        struct rx_task pump_task;
        struct rx_timer pace_timer;
        struct rx_timer open_timer;     /* polls the prefault after the open */
        struct eng_shard_stats before;
};

struct bench_scree {
        struct bench_engine e;          /* first: the engine interface */
        struct rx_smp *smp;
        struct bench_shard *sh[ENG_MAX_SHARDS];
};

static struct bench_scree *scree_of(struct bench_engine *e)
{
        return container_of(e, struct bench_scree, e);
}

/* ---- issuing operations ---- */

static void op_finished(struct bench_shard *b, struct bench_op *op, int res);
static void pump(struct bench_shard *b);

static void on_write(struct eng_write *w, int res)
{
        struct bench_op *op = w->ctx;

        op_finished(op->b, op, res);
}

static int issue_write(struct bench_shard *b, struct bench_op *op, const struct bench_op_desc *d)
{
        struct eng_mutation m = {
                .kind = d->kind == BENCH_OPK_DEL ? ENG_MUT_DEL : ENG_MUT_PUT,
                .table = b->o->k.table, .key = d->key, .key_len = d->key_len,
                .value = d->value, .value_len = d->value_len,
        };
        int r;

        op->u.w.done = on_write;
        op->u.w.ctx = op;
        r = eng_shard_write(b->sh, &m, 1, &op->u.w);
        return r == 1 ? 0 : r == 0 ? 1 : r;
}

/* A get's answer: found and not found both count as success. */
static int get_answer(struct bench_shard *b, struct eng_get *g, int res)
{
        if (res == 0) {
                b->res->found++;
                eng_get_release(g);
        }
        return res == -SCREE_ENOTFOUND ? 0 : res;
}

static void on_get(struct eng_get *g, int res)
{
        struct bench_op *op = g->ctx;

        op_finished(op->b, op, get_answer(op->b, g, res));
}

static int issue_get(struct bench_shard *b, struct bench_op *op, const struct bench_op_desc *d)
{
        int r;

        op->u.g.done = on_get;
        op->u.g.ctx = op;
        r = eng_shard_get(b->sh, b->o->k.table, d->key, d->key_len, &op->u.g);
        return r == 1 ? 1 : get_answer(b, &op->u.g, r);
}

static int scan_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        (void)sc;
        (void)it;
        return 0;
}

static int scan_answer(struct bench_shard *b, struct eng_scan *sc, int res)
{
        if (res == 0) {
                b->res->entries += sc->n;
                b->res->found += sc->n > 0;
        }
        eng_scan_release(sc);
        return res;
}

static void on_scan(struct eng_scan *sc, int res)
{
        struct bench_op *op = sc->ctx;

        op_finished(op->b, op, scan_answer(op->b, sc, res));
}

static int issue_scan(struct bench_shard *b, struct bench_op *op, const struct bench_op_desc *d)
{
        uint8_t pos[BENCH_MAX_KEY_BYTES + ENG_HASH_BYTES];
        uint32_t len = (uint32_t)eng_shard_scan_pos(b->sh, b->o->k.table, d->key, d->key_len, pos);
        int r;

        op->u.sc.item = scan_item;
        op->u.sc.done = on_scan;
        op->u.sc.ctx = op;
        r = eng_shard_scan(b->sh, b->o->k.table, pos, len, NULL, 0, d->scan_len, &op->u.sc);
        return r == 1 ? 1 : scan_answer(b, &op->u.sc, r);
}

/* YCSB F's read-modify-write: reads the value and writes a new one. */
static int rmw_decide(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct bench_op *op = arg;

        if (cur)
                op->b->res->found++;
        out->kind = ENG_MUT_PUT;
        out->value = op->value;
        out->value_len = op->value_len;
        return 1;
}

static void on_rmw(struct eng_rmw *r, int res)
{
        struct bench_op *op = r->ctx;

        op_finished(op->b, op, res < 0 ? res : 0);
}

static int issue_rmw(struct bench_shard *b, struct bench_op *op, const struct bench_op_desc *d)
{
        int r;

        memcpy(op->key, d->key, d->key_len);
        op->value = d->value;
        op->value_len = d->value_len;
        op->u.r.done = on_rmw;
        op->u.r.ctx = op;
        r = eng_shard_rmw(b->sh, b->o->k.table, op->key, d->key_len, rmw_decide, op, &op->u.r);
        return r < 0 ? r : 1;
}

/* Issues d in op. Returns 0 (done now), 1 (pending) or <0. */
static int issue(struct bench_shard *b, struct bench_op *op, const struct bench_op_desc *d)
{
        op->cls = d->cls;
        switch (d->kind) {
        case BENCH_OPK_PUT:
        case BENCH_OPK_DEL:
                return issue_write(b, op, d);
        case BENCH_OPK_SCAN:
                return issue_scan(b, op, d);
        case BENCH_OPK_RMW:
                return issue_rmw(b, op, d);
        case BENCH_OPK_GET:
        default:
                return issue_get(b, op, d);
        }
}

/* ---- the run ---- */

static bool can_issue(const struct bench_shard *b, uint64_t now_ns)
{
        return !b->res->err && b->issued < b->pace.target && now_ns < b->pace.deadline_ns;
}

#define D(f) (st->f - b->before.f)

/* --stats: what the engine did during the workload, on stderr. */
static void print_stats(const struct bench_shard *b, const struct eng_shard_stats *st)
{
        fprintf(stderr,
                "stats %s shard %u: gets %" PRIu64 " (memtable %" PRIu64 ", sst reads %" PRIu64
                "), blocks hit %" PRIu64 " miss %" PRIu64 ", rows hit %" PRIu64 " miss %" PRIu64
                " (%" PRIu64 " now), cache %" PRIu64 " MiB, flushes %" PRIu64
                " (%" PRIu64 " for the log limit), compactions %" PRIu64 " (%" PRIu64 " MiB in, %.1f s),"
                " tables %" PRIu64 " (%" PRIu64 " MiB), memtable blocks warm %" PRIu64
                " cold %" PRIu64 "\n",
                bench_workload_name(b->w), b->id, D(gets), D(get_memtable_hits), D(get_sst_reads),
                D(cache_hits), D(cache_misses), D(row_hits), D(row_misses), st->cache_rows,
                st->cache_bytes >> 20, D(flushes), D(log_limit_seals), D(compactions),
                D(compaction_bytes_in) >> 20, (double)D(compaction_ns) / 1e9, st->sstables, st->sstable_bytes >> 20,
                D(block_pool_hits), D(block_pool_misses));
}

#undef D

static void run_finish(struct bench_shard *b)
{
        const struct eng_shard_stats *st = eng_shard_stats(b->sh);
        struct bench_result *res = b->res;

        b->running = false;
        rx_timer_cancel(b->loop, &b->pace_timer);
        res->end_ns = time_now_ns();
        res->user_bytes = st->user_bytes - b->before.user_bytes;
        res->disk_bytes = st->disk_bytes_written - b->before.disk_bytes_written;
        res->stalls = st->stalls - b->before.stalls;
        res->compaction_ns = st->compaction_ns - b->before.compaction_ns;
        res->flushes = st->flushes - b->before.flushes;
        res->sst_reads = st->get_sst_reads - b->before.get_sst_reads;
        if (b->o->stats)
                print_stats(b, st);
        rx_alien_complete(&b->req, res->err);
}

/* Records op's end and frees its slot. */
static void op_account(struct bench_shard *b, struct bench_op *op, int res)
{
        uint64_t now = time_now_ns();

        bench_result_fail(b->res, b->id, b->w, res);
        if (op >= &b->ops[b->o->inflight]) {
                b->bg_free[b->n_bg_free++] = (uint32_t)(op - b->ops);
                b->res->bg_ops++;
                return;
        }
        bench_result_fail(b->res, b->id, b->w,
                          bench_result_add(b->res, op->cls, op->start_ns, now, b->o->timeseries));
        b->free_slots[b->n_free++] = (uint32_t)(op - b->ops);
        b->in_flight--;
}

/* A pending op's callback: account, then refill (unless a pump is queued). */
static void op_finished(struct bench_shard *b, struct bench_op *op, int res)
{
        op_account(b, op, res);
        if (!b->pump_posted)
                pump(b);
}

static void pump_task(struct rx_loop *loop, struct rx_task *t)
{
        struct bench_shard *b = container_of(t, struct bench_shard, pump_task);

        (void)loop;
        b->pump_posted = false;
        pump(b);
}

static void pace_fire(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        pump(container_of(t, struct bench_shard, pace_timer));
}

static void wake_at(uint64_t *wake, uint64_t due)
{
        if (!*wake || due < *wake)
                *wake = due;
}

/* readwhilewriting: issues the writer's next write if a writer slot is
 * free and the write is due (*wake: when it will be). A flat-out writer gets at most half the shard's time, as a writer thread
 * sharing a core with the readers would: otherwise, while reads wait for
 * the disk, it would take the whole core and the readers would starve. */
static bool step_writer(struct bench_shard *b, uint64_t now, uint64_t *wake)
{
        struct bench_op *op;
        struct bench_op_desc d;
        uint64_t due;
        int r;

        if (!b->bg || !b->n_bg_free || !can_issue(b, now))
                return false;
        if (!b->pace.bg_interval_ns && 2 * b->bg_ns > now - b->pace.t0_ns)
                return false;
        due = b->pace.bg_interval_ns ? b->pace.t0_ns + b->bg_issued * b->pace.bg_interval_ns : now;
        if (due > now) {
                wake_at(wake, due);
                return false;
        }
        bench_gen_write(b->gen, &d);
        op = &b->ops[b->bg_free[--b->n_bg_free]];
        b->bg_issued++;
        op->start_ns = due;
        r = issue(b, op, &d);
        if (r != 1)
                op_account(b, op, r);
        b->bg_ns += time_now_ns() - now;
        return true;
}

/* Issues the workload's next op if a slot is free and the op is due. */
static bool step_reader(struct bench_shard *b, uint64_t now, uint64_t *wake)
{
        struct bench_op_desc d;
        struct bench_op *op;
        uint64_t due;
        int r;

        if (!b->n_free || !can_issue(b, now))
                return false;
        due = bench_pace_due(&b->pace, b->issued, now);
        if (due > now) {
                wake_at(wake, due);
                return false;
        }
        op = &b->ops[b->free_slots[--b->n_free]];
        op->start_ns = due;
        b->in_flight++;
        r = bench_gen_next(b->gen, b->issued, &d);
        b->issued++;
        if (r == 0)
                r = issue(b, op, &d);
        if (r != 1)
                op_account(b, op, r);
        return true;
}

/* Issues ops while slots are free and ops are due, PUMP_BATCH at most
 * before yielding; then sleeps till the next due op, or finishes. A read
 * due within PACE_SPIN_NS is spun for; the writer's next write only ever
 * gets a timer, BENCH_BG_TICK_NS ahead at least (its latency is not
 * measured, and a spinning vCPU slows the disk). */
static void pump(struct bench_shard *b)
{
        uint64_t now = time_now_ns(), wake = 0, bg_wake = 0;
        bool busy = false;

        if (!b->running)
                return;
        for (unsigned n = 0; n < PUMP_BATCH; n++) {
                bool w = step_writer(b, now, &bg_wake);
                bool r = step_reader(b, now, &wake);

                busy = w || r;
                if (!busy)
                        break;
                wake = bg_wake = 0;
                now = time_now_ns();
        }
        if (busy || (wake && wake - now < PACE_SPIN_NS)) {
                if (!b->pump_posted) {
                        b->pump_posted = true;
                        rx_loop_post(b->loop, &b->pump_task);
                }
                return;
        }
        if (bg_wake)
                wake_at(&wake, bench_bg_wake(bg_wake, now));
        if (wake && rx_timer_arm_at(b->loop, &b->pace_timer, wake) == 0)
                return;
        if (wake)
                bench_result_fail(b->res, b->id, b->w, -ENOMEM);
        if (b->in_flight == 0 && b->n_bg_free == BG_SLOTS && !can_issue(b, now))
                run_finish(b);
}

static void run_start(struct bench_shard *b)
{
        uint32_t n = b->o->inflight;

        bench_result_begin(b->res, b->t0_ns);
        bench_gen_start(b->gen, b->w, b->dists);
        bench_pace_init(&b->pace, b->o, b->w, bench_gen_keys(b->gen), b->t0_ns);
        memset(b->ops, 0, (n + BG_SLOTS) * sizeof(*b->ops));
        for (uint32_t i = 0; i < n + BG_SLOTS; i++)
                b->ops[i].b = b;
        for (uint32_t i = 0; i < BG_SLOTS; i++)
                b->bg_free[i] = n + i;
        b->n_bg_free = BG_SLOTS;
        for (uint32_t i = 0; i < n; i++)
                b->free_slots[i] = n - 1 - i;
        b->n_free = n;
        b->in_flight = 0;
        b->issued = b->bg_issued = b->bg_ns = 0;
        b->bg = b->w == BENCH_READWHILEWRITING && bench_gen_keys(b->gen) > 0;
        b->before = *eng_shard_stats(b->sh);
        b->pump_task.fn = pump_task;
        b->pump_task.name = "scree-bench pump";
        rx_timer_init(&b->pace_timer, pace_fire, "scree-bench pace");
        if (b->pace.interval_ns || b->pace.bg_interval_ns)
                bench_thread_precise_timers();
        b->running = true;
        pump(b);
}

/* ---- open and close, on the shard's thread ---- */

/* The open step ends once the shard has faulted its memtable budget in
 * (--prefault): a server has that memory ready long before a benchmark's
 * load, and a fresh huge page costs 2.5-11 ms on a VM (shard_pool.c), a
 * stall no workload should be charged with. */
static void prefault_poll(struct rx_loop *loop, struct rx_timer *t)
{
        struct bench_shard *b = container_of(t, struct bench_shard, open_timer);

        (void)loop;
        if (eng_shard_stats(b->sh)->prefault_pending == 0)
                rx_alien_complete(&b->req, 0);
        else if (rx_timer_arm_after(b->loop, t, 2 * NS_PER_MS) < 0)
                rx_alien_complete(&b->req, -ENOMEM);
}

static void on_opened(void *arg, int res, struct eng_shard *s)
{
        struct bench_shard *b = arg;

        if (res < 0) {
                rx_alien_complete(&b->req, res);
                return;
        }
        b->sh = s;
        rx_timer_init(&b->open_timer, prefault_poll, "scree-bench prefault");
        prefault_poll(b->loop, &b->open_timer);
}

static int open_start(struct bench_shard *b)
{
        struct eng_shard_opts so = {
                .dir = b->path, .shard = b->id, .n_shards = b->o->k.workers,
                .sync = b->o->sync, .period_ns = b->o->sync_period_ns,
                .memtable_budget = b->o->memtable_budget, .cache_bytes = b->o->cache_bytes,
                .no_compaction = !b->o->compaction, .row_cache = b->o->row_cache,
                .compaction_readahead = b->o->compaction_readahead,
                .compaction_rate = b->o->compaction_rate,
                .prefault_memtables = b->o->prefault,
        };
        int r = bench_dir_prepare(b->o->dir, b->path, b->o->use_existing);

        if (r < 0)
                return r;
        b->fs = eng_fs_direct_new(b->loop);
        if (!b->fs)
                return -ENOMEM;
        return eng_shard_open(b->loop, b->fs, &so, on_opened, b);
}

static void on_closed(void *arg, int res)
{
        struct bench_shard *b = arg;

        b->sh = NULL;
        eng_fs_free(b->fs);
        b->fs = NULL;
        rx_alien_complete(&b->req, res);
}

static void step_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct bench_shard *b = req->ctx;
        int r = 0;

        b->loop = loop;
        switch (b->step) {
        case STEP_OPEN:
                r = open_start(b);
                break;
        case STEP_RUN:
                run_start(b);
                break;
        case STEP_CLOSE:
                r = b->sh ? eng_shard_close(b->sh, on_closed, b) : 0;
                if (r == 0 && !b->sh)
                        rx_alien_complete(req, 0);
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0)
                rx_alien_complete(req, r);
}

/* Starts step on every shard. Returns how many started; *ret_err the
 * first submit error. */
static unsigned start_all(struct bench_scree *s, enum step step, int *ret_err)
{
        unsigned i;

        *ret_err = 0;
        for (i = 0; i < s->e.n; i++) {
                struct bench_shard *b = s->sh[i];
                int r;

                b->step = step;
                memset(&b->req, 0, sizeof(b->req));
                b->req.run = step_run;
                b->req.ctx = b;
                r = rx_smp_alien_submit(s->smp, b->id, &b->req);
                if (r < 0) {
                        *ret_err = r;
                        break;
                }
        }
        return i;
}

/* Waits for the first `started` shards' step; returns the first error. */
static int wait_all(struct bench_scree *s, unsigned started, int first)
{
        for (unsigned i = 0; i < started; i++) {
                int r = (int)rx_alien_wait(&s->sh[i]->req);

                if (r < 0 && !first)
                        first = r;
        }
        return first;
}

static int step_all(struct bench_scree *s, enum step step)
{
        int err;
        unsigned started = start_all(s, step, &err);

        return wait_all(s, started, err);
}

/* ---- the engine interface ---- */

static int scree_open(struct bench_engine *e)
{
        return step_all(scree_of(e), STEP_OPEN);
}

static int scree_run_start(struct bench_engine *e, enum bench_workload w,
                           const struct bench_dists *d, uint64_t t0_ns)
{
        struct bench_scree *s = scree_of(e);
        unsigned started;
        int err;

        for (unsigned i = 0; i < e->n; i++) {
                s->sh[i]->w = w;
                s->sh[i]->dists = d;
                s->sh[i]->t0_ns = t0_ns;
        }
        started = start_all(s, STEP_RUN, &err);
        if (err < 0)
                return wait_all(s, started, err);
        return 0;
}

static bool scree_run_is_done(struct bench_engine *e)
{
        struct bench_scree *s = scree_of(e);

        for (unsigned i = 0; i < e->n; i++)
                if (!rx_alien_is_done(&s->sh[i]->req))
                        return false;
        return true;
}

static int scree_run_wait(struct bench_engine *e)
{
        return wait_all(scree_of(e), e->n, 0);
}

static int scree_close(struct bench_engine *e)
{
        return step_all(scree_of(e), STEP_CLOSE);
}

static uint64_t scree_space_bytes(struct bench_engine *e)
{
        struct bench_scree *s = scree_of(e);
        uint64_t sum = 0;

        for (unsigned i = 0; i < e->n; i++)
                sum += bench_dir_bytes(s->sh[i]->path);
        return sum;
}

static void shard_free(struct bench_shard *b)
{
        if (!b)
                return;
        free(b->ops);
        free(b->free_slots);
        free(b);
}

static void scree_free(struct bench_engine *e)
{
        struct bench_scree *s;

        if (!e)
                return;
        s = scree_of(e);
        if (s->smp) {
                rx_smp_stop(s->smp);
                rx_smp_free(s->smp);
        }
        for (unsigned i = 0; i < e->n; i++)
                shard_free(s->sh[i]);
        bench_engine_workers_free(e);
        free(s);
}

static const struct bench_engine_ops scree_ops = {
        .open = scree_open,
        .run_start = scree_run_start,
        .run_is_done = scree_run_is_done,
        .run_wait = scree_run_wait,
        .close = scree_close,
        .free = scree_free,
        .space_bytes = scree_space_bytes,
};

static struct bench_shard *shard_new(struct bench_scree *s, unsigned id)
{
        const struct bench_opts *o = s->e.o;
        struct bench_shard *b = calloc(1, sizeof(*b));

        if (!b)
                return NULL;
        b->o = o;
        b->id = id;
        b->gen = s->e.gen[id];
        b->res = s->e.res[id];
        snprintf(b->path, sizeof(b->path), "%s/shard-%u", o->dir, id);
        b->ops = calloc(o->inflight + BG_SLOTS, sizeof(*b->ops));
        b->free_slots = calloc(o->inflight, sizeof(*b->free_slots));
        if (!b->ops || !b->free_slots) {
                shard_free(b);
                return NULL;
        }
        return b;
}

int bench_scree_new(const struct bench_opts *o, uint64_t idle_poll_ns, struct bench_engine **ret)
{
        struct rx_smp_opts so = { .n_shards = o->k.workers, .loop.idle_poll_ns = idle_poll_ns };
        struct bench_scree *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return -ENOMEM;
        s->e = (struct bench_engine){ .ops = &scree_ops, .name = "scree", .o = o, .n = o->k.workers };
        r = bench_engine_workers_new(&s->e);
        for (unsigned i = 0; i < s->e.n && r == 0; i++)
                if (!(s->sh[i] = shard_new(s, i)))
                        r = -ENOMEM;
        if (r == 0) {
                r = rx_smp_new(&so, &s->smp);
                if (r < 0)
                        fprintf(stderr, "scree-bench: starting %u shards: %s (%s)\n", o->k.workers,
                                scree_strerror(r), rx_loop_setup_hint(r));
        }
        if (r < 0) {
                scree_free(&s->e);
                return r;
        }
        *ret = &s->e;
        return 0;
}
