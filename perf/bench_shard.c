/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's per-shard driver; see bench_shard.h. Open, run and close
 * arrive as foreign-thread requests and run on the shard's loop; a run
 * issues operations from a fixed set of slots (inflight of them), each
 * recording its latency when it is acknowledged, and completes the request
 * once the op count or the time limit is reached and the last op is back.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "engine/fs.h"
#include "perf/bench_shard.h"
#include "perf/rng.h"

/* Synchronous ops issued before yielding to the loop (flushes, syncs). */
#define PUMP_BATCH 64u
/* Random bytes values are cut from, at a random offset. */
#define VALUE_SPREAD 1024u
/* Tries at finding a missing key this shard owns (hashed table). */
#define MISSING_TRIES 256u

struct bench_op {
        struct bench_shard *b;
        uint64_t start_ns;
        union {
                struct eng_write w;
                struct eng_get g;
                struct eng_scan sc;
        } u;
};

struct bench_shard {
        const struct bench_opts *o;
        unsigned id;
        struct eng_tablet_map map;
        uint32_t *keys;                 /* the key numbers this shard owns, ascending */
        uint64_t n_keys;
        char path[PATH_MAX];
        uint8_t *values;
        uint64_t rng;
        /* on the shard's thread */
        struct rx_loop *loop;
        struct eng_fs *fs;
        struct eng_shard *sh;
        struct rx_alien_req req;
        enum bench_step step;
        /* the run in progress */
        enum bench_workload w;
        bool running, pump_posted;
        uint64_t target, issued, deadline_ns;
        struct bench_op *ops;
        uint32_t *free_slots, n_free, in_flight;
        struct rx_task pump_task;
        struct eng_shard_stats before;
        struct bench_result res;
};

static const char *const workload_names[BENCH_WORKLOAD_MAX] = {
        [BENCH_FILLSEQ] = "fillseq",         [BENCH_FILLRANDOM] = "fillrandom",
        [BENCH_OVERWRITE] = "overwrite",     [BENCH_READRANDOM] = "readrandom",
        [BENCH_READMISSING] = "readmissing", [BENCH_SEEKRANDOM] = "seekrandom",
        [BENCH_DELETERANDOM] = "deleterandom",
};

const char *bench_workload_name(enum bench_workload w)
{
        return (unsigned)w < BENCH_WORKLOAD_MAX ? workload_names[w] : "?";
}

enum bench_workload bench_workload_parse(const char *s)
{
        for (unsigned i = 0; i < BENCH_WORKLOAD_MAX; i++)
                if (strcmp(s, workload_names[i]) == 0)
                        return (enum bench_workload)i;
        return BENCH_WORKLOAD_INVALID;
}

/* ---- keys ---- */

/* The key of integer position v in the key space (see bench_key). */
static void key_at(const struct bench_opts *o, uint64_t v, uint8_t *dst)
{
        uint32_t n = o->key_size < 8 ? o->key_size : 8;

        for (uint32_t j = 0; j < n; j++)
                dst[j] = (uint8_t)(v >> (56 - 8 * j));
        memset(dst + n, '0', o->key_size - n);
}

static uint64_t key_stride(const struct bench_opts *o)
{
        return UINT64_MAX / (o->num ? o->num : 1);
}

void bench_key(const struct bench_opts *o, uint64_t i, uint8_t *dst)
{
        key_at(o, i * key_stride(o), dst);
}

/* A key between key i and key i + 1: absent, and sorted among the rest. */
static void missing_key(const struct bench_opts *o, uint64_t i, uint8_t *dst)
{
        key_at(o, i * key_stride(o) + key_stride(o) / 2, dst);
}

static bool owns(const struct bench_shard *b, const uint8_t *key)
{
        return eng_tablet_of_key(&b->map, b->o->table, key, b->o->key_size).shard == b->id;
}

static int keys_compute(struct bench_shard *b)
{
        uint8_t key[BENCH_MAX_KEY_BYTES];
        uint64_t n = 0;

        b->keys = malloc(b->o->num * sizeof(*b->keys));
        if (!b->keys)
                return -ENOMEM;
        for (uint64_t i = 0; i < b->o->num; i++) {
                bench_key(b->o, i, key);
                if (owns(b, key))
                        b->keys[n++] = (uint32_t)i;
        }
        b->n_keys = n;
        return 0;
}

struct bench_shard *bench_shard_new(const struct bench_opts *o, unsigned id)
{
        struct bench_shard *b = calloc(1, sizeof(*b));

        if (!b)
                return NULL;
        b->o = o;
        b->id = id;
        b->rng = (o->seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (id + 1))) | 1;
        snprintf(b->path, sizeof(b->path), "%s/shard-%u", o->dir, id);
        if (eng_tablet_map_init(&b->map, o->shards, ENG_SHARD_DEFAULT_TABLETS) < 0 ||
            keys_compute(b) < 0)
                goto fail;
        b->values = malloc(o->value_size + VALUE_SPREAD);
        b->ops = calloc(o->inflight, sizeof(*b->ops));
        b->free_slots = calloc(o->inflight, sizeof(*b->free_slots));
        if (!b->values || !b->ops || !b->free_slots)
                goto fail;
        for (uint32_t i = 0; i < o->value_size + VALUE_SPREAD; i++)
                b->values[i] = (uint8_t)xorshift64s(&b->rng);
        return b;
fail:
        bench_shard_free(b);
        return NULL;
}

void bench_shard_free(struct bench_shard *b)
{
        if (!b)
                return;
        free(b->keys);
        free(b->values);
        free(b->ops);
        free(b->free_slots);
        free(b);
}

uint64_t bench_shard_keys(const struct bench_shard *b)
{
        return b->n_keys;
}

const struct bench_result *bench_shard_result(const struct bench_shard *b)
{
        return &b->res;
}

/* ---- issuing operations ---- */

static uint64_t pick(struct bench_shard *b)
{
        if (b->w == BENCH_FILLSEQ)
                return b->keys[b->issued];
        return b->keys[xorshift64s(&b->rng) % b->n_keys];
}

static void op_finished(struct bench_shard *b, struct bench_op *op, int res);
static void pump(struct bench_shard *b);

static void on_write(struct eng_write *w, int res)
{
        struct bench_op *op = w->ctx;

        op_finished(op->b, op, res);
}

static int issue_write(struct bench_shard *b, struct bench_op *op, const uint8_t *key)
{
        struct eng_mutation m = {
                .kind = b->w == BENCH_DELETERANDOM ? ENG_MUT_DEL : ENG_MUT_PUT,
                .table = b->o->table, .key = key, .key_len = b->o->key_size,
                .value = b->values + xorshift64s(&b->rng) % VALUE_SPREAD,
                .value_len = b->o->value_size,
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
                b->res.found++;
                eng_get_release(g);
        }
        return res == -SCREE_ENOTFOUND ? 0 : res;
}

static void on_get(struct eng_get *g, int res)
{
        struct bench_op *op = g->ctx;

        op_finished(op->b, op, get_answer(op->b, g, res));
}

static int issue_get(struct bench_shard *b, struct bench_op *op, const uint8_t *key)
{
        int r;

        op->u.g.done = on_get;
        op->u.g.ctx = op;
        r = eng_shard_get(b->sh, b->o->table, key, b->o->key_size, &op->u.g);
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
                b->res.entries += sc->n;
                b->res.found += sc->n > 0;
        }
        eng_scan_release(sc);
        return res;
}

static void on_scan(struct eng_scan *sc, int res)
{
        struct bench_op *op = sc->ctx;

        op_finished(op->b, op, scan_answer(op->b, sc, res));
}

static int issue_scan(struct bench_shard *b, struct bench_op *op, const uint8_t *key)
{
        uint8_t pos[BENCH_MAX_KEY_BYTES + ENG_HASH_BYTES];
        uint32_t len = eng_shard_scan_pos(b->o->table, key, b->o->key_size, pos);
        int r;

        op->u.sc.item = scan_item;
        op->u.sc.done = on_scan;
        op->u.sc.ctx = op;
        r = eng_shard_scan(b->sh, b->o->table, pos, len, NULL, 0, b->o->seek_nexts + 1, &op->u.sc);
        return r == 1 ? 1 : scan_answer(b, &op->u.sc, r);
}

/* A missing key this shard owns, near a random one of its keys. */
static int pick_missing(struct bench_shard *b, uint8_t *key)
{
        for (unsigned i = 0; i < MISSING_TRIES; i++) {
                missing_key(b->o, pick(b), key);
                if (owns(b, key))
                        return 0;
        }
        return -ENOENT;
}

/* Issues the run's next op in op. Returns 0 (done now), 1 (pending) or <0. */
static int issue(struct bench_shard *b, struct bench_op *op)
{
        uint8_t key[BENCH_MAX_KEY_BYTES];
        int r;

        if (b->w == BENCH_READMISSING) {
                r = pick_missing(b, key);
                return r < 0 ? r : issue_get(b, op, key);
        }
        bench_key(b->o, pick(b), key);
        if (bench_workload_writes(b->w))
                return issue_write(b, op, key);
        if (b->w == BENCH_SEEKRANDOM)
                return issue_scan(b, op, key);
        return issue_get(b, op, key);
}

/* ---- the run ---- */

static void pump_task(struct rx_loop *loop, struct rx_task *t)
{
        struct bench_shard *b = container_of(t, struct bench_shard, pump_task);

        (void)loop;
        b->pump_posted = false;
        pump(b);
}

static bool can_issue(const struct bench_shard *b, uint64_t now_ns)
{
        return !b->res.err && b->issued < b->target && now_ns < b->deadline_ns;
}

static void run_finish(struct bench_shard *b)
{
        const struct eng_shard_stats *st = eng_shard_stats(b->sh);

        b->running = false;
        b->res.end_ns = time_now_ns();
        b->res.user_bytes = st->user_bytes - b->before.user_bytes;
        b->res.disk_bytes = st->disk_bytes_written - b->before.disk_bytes_written;
        b->res.stalls = st->stalls - b->before.stalls;
        b->res.flushes = st->flushes - b->before.flushes;
        b->res.sst_reads = st->get_sst_reads - b->before.get_sst_reads;
        rx_alien_complete(&b->req, b->res.err);
}

/* Records op's end and frees its slot. */
static void op_account(struct bench_shard *b, struct bench_op *op, int res)
{
        hist_add(&b->res.lat, time_now_ns() - op->start_ns);
        if (res < 0 && !b->res.err) {
                b->res.err = res;
                fprintf(stderr, "scree-bench: shard %u: %s failed: %s\n", b->id,
                        bench_workload_name(b->w), scree_strerror(res));
        }
        b->res.ops++;
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

/* Issues ops while slots are free, PUMP_BATCH at most before yielding. */
static void pump(struct bench_shard *b)
{
        uint64_t now = time_now_ns();

        if (!b->running)
                return;
        for (unsigned n = 0; n < PUMP_BATCH && b->n_free && can_issue(b, now); n++) {
                struct bench_op *op = &b->ops[b->free_slots[--b->n_free]];
                int r;

                op->start_ns = now;
                b->in_flight++;
                r = issue(b, op);
                b->issued++;    /* after: fillseq takes key number `issued` */
                if (r != 1)
                        op_account(b, op, r);
                now = time_now_ns();
        }
        if (b->n_free && can_issue(b, now)) {
                if (!b->pump_posted) {
                        b->pump_posted = true;
                        rx_loop_post(b->loop, &b->pump_task);
                }
        } else if (b->in_flight == 0 && !can_issue(b, now)) {
                run_finish(b);
        }
}

static uint64_t run_target(const struct bench_shard *b)
{
        const struct bench_opts *o = b->o;

        if (bench_workload_writes(b->w) || !b->n_keys)
                return b->n_keys;
        /* The read count shared out like the keys. */
        return (o->reads * b->n_keys + o->num - 1) / o->num;
}

static void run_start(struct bench_shard *b)
{
        memset(&b->res, 0, sizeof(b->res));
        memset(b->ops, 0, b->o->inflight * sizeof(*b->ops));
        for (uint32_t i = 0; i < b->o->inflight; i++) {
                b->ops[i].b = b;
                b->free_slots[i] = b->o->inflight - 1 - i;
        }
        b->n_free = b->o->inflight;
        b->in_flight = 0;
        b->issued = 0;
        b->target = run_target(b);
        b->before = *eng_shard_stats(b->sh);
        b->pump_task.fn = pump_task;
        b->pump_task.name = "scree-bench pump";
        b->res.start_ns = time_now_ns();
        b->deadline_ns = b->res.start_ns + (uint64_t)b->o->max_seconds * NS_PER_SEC;
        b->running = true;
        pump(b);
}

/* ---- open and close, on the shard's thread ---- */

/* Makes the shard's directory; empties it unless the db is to be reused. */
static int dir_prepare(const struct bench_shard *b)
{
        char file[PATH_MAX + 256];
        struct dirent *de;
        DIR *d;

        if (mkdir(b->o->dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(b->path, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (b->o->use_existing)
                return 0;
        d = opendir(b->path);
        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(file, sizeof(file), "%s/%s", b->path, de->d_name);
                        unlink(file);
                }
        closedir(d);
        return 0;
}

static void on_opened(void *arg, int res, struct eng_shard *s)
{
        struct bench_shard *b = arg;

        if (res == 0)
                b->sh = s;
        rx_alien_complete(&b->req, res);
}

static int open_start(struct bench_shard *b)
{
        struct eng_shard_opts so = {
                .dir = b->path, .shard = b->id, .n_shards = b->o->shards,
                .sync = b->o->sync, .period_ns = b->o->sync_period_ns,
                .memtable_budget = b->o->memtable_budget, .cache_bytes = b->o->cache_bytes,
                .no_compaction = !b->o->compaction,
        };
        int r = dir_prepare(b);

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
        case BENCH_STEP_OPEN:
                r = open_start(b);
                break;
        case BENCH_STEP_RUN:
                run_start(b);
                break;
        case BENCH_STEP_CLOSE:
                r = eng_shard_close(b->sh, on_closed, b);
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0)
                rx_alien_complete(req, r);
}

int bench_shard_start(struct bench_shard *b, struct rx_smp *smp, enum bench_step step,
                      enum bench_workload w)
{
        b->step = step;
        b->w = w;
        memset(&b->req, 0, sizeof(b->req));
        b->req.run = step_run;
        b->req.ctx = b;
        return rx_smp_alien_submit(smp, b->id, &b->req);
}

int bench_shard_wait(struct bench_shard *b)
{
        return (int)rx_alien_wait(&b->req);
}
