/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's library engine; see bench_api.h. The table is /bench with
 * byte-string keys, ordered (--table ordered) or hashed on the key
 * (--table hashed), as the scree engine's two tables.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <scree/scree.h>

#include "base/compiler.h"
#include "perf/bench_api.h"
#include "perf/bench_threads.h"

#define PATH_BYTES 4096

/* A worker's own: its completion queue, and a buffer for values. */
struct api_worker {
        scree_cq *q;
        scree_completion *c;            /* [inflight] */
        uint8_t *buf;
        size_t buf_len;
};

struct bench_api {
        struct bench_threads t;
        scree_db *db;
        scree_table *tbl;
        struct api_worker *w;           /* [workers] */
        char path[PATH_BYTES];
};

static struct bench_api *api_of(struct bench_engine *e)
{
        return container_of(bench_threads_of(e), struct bench_api, t);
}

static int api_error(int r, const char *what)
{
        fprintf(stderr, "scree-bench: api: %s: %s (%s)\n", what, scree_strerror(r),
                scree_last_error());
        return r;
}

/* ---- one op at a time ---- */

static int update_put(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        const struct bench_op_desc *d = *(const struct bench_op_desc **)arg;

        out->value = d->value;
        out->value_len = d->value_len;
        return SCREE_UPDATE_PUT;
}

static int do_scan(struct bench_api *a, const struct bench_op_desc *d, struct bench_result *res)
{
        scree_range r = { .start = d->key, .start_len = d->key_len };
        scree_rows *rows = NULL;
        int ret;

        if (a->t.e.o->k.table != ENG_TABLE_ORDERED)
                r = (scree_range){ 0 };         /* hashed: a walk in hash order */
        ret = scree_scan(a->tbl, &r, NULL, 0, d->scan_len ? d->scan_len : 1, &rows);
        if (ret < 0)
                return api_error(ret, "scan");
        res->entries += scree_rows_count(rows);
        res->found += scree_rows_count(rows) > 0;
        scree_rows_free(rows);
        return 0;
}

static int do_write(struct bench_api *a, const struct bench_op_desc *d, uint64_t *found,
                    uint64_t *user_bytes)
{
        int r;

        switch (d->kind) {
        case BENCH_OPK_DEL:
                r = scree_del(a->tbl, d->key, d->key_len);
                *user_bytes += d->key_len;
                break;
        case BENCH_OPK_RMW:
                r = scree_update(a->tbl, d->key, d->key_len, update_put, &d);
                *found += r >= 0;
                *user_bytes += d->key_len + d->value_len;
                break;
        default:
                r = scree_put(a->tbl, d->key, d->key_len, d->value, d->value_len, 0);
                *user_bytes += d->key_len + d->value_len;
                break;
        }
        return r < 0 ? api_error(r, "write") : 0;
}

static int api_op(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                  struct bench_result *res)
{
        struct bench_api *a = api_of(e);
        struct api_worker *w = &a->w[id];
        size_t len = 0;
        int r;

        switch (d->kind) {
        case BENCH_OPK_GET:
                r = scree_get(a->tbl, d->key, d->key_len, w->buf, w->buf_len, &len);
                if (r < 0 && r != -SCREE_ENOTFOUND)
                        return api_error(r, "get");
                res->found += r == 0;
                return 0;
        case BENCH_OPK_SCAN:
                return do_scan(a, d, res);
        default:
                return do_write(a, d, &res->found, &res->user_bytes);
        }
}

static int api_write(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                     uint64_t *user_bytes)
{
        uint64_t found = 0;

        (void)id;
        return do_write(api_of(e), d, &found, user_bytes);
}

/* ---- ops in flight ---- */

static int api_submit(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                      uint32_t slot)
{
        struct bench_api *a = api_of(e);
        scree_cq *q = a->w[id].q;
        void *tag = (void *)(uintptr_t)slot;
        scree_range r = { .start = d->key, .start_len = d->key_len };
        int ret;

        switch (d->kind) {
        case BENCH_OPK_GET:
                ret = scree_get_async(q, a->tbl, d->key, d->key_len, tag);
                break;
        case BENCH_OPK_SCAN:
                if (e->o->k.table != ENG_TABLE_ORDERED)
                        r = (scree_range){ 0 };
                ret = scree_scan_async(q, a->tbl, &r, NULL, 0, d->scan_len ? d->scan_len : 1, tag);
                break;
        case BENCH_OPK_DEL:
                ret = scree_del_async(q, a->tbl, d->key, d->key_len, tag);
                break;
        case BENCH_OPK_RMW:
                /* d is the generator's: the value it points to stays put
                 * (the generator's value pool), d itself does not. */
                ret = scree_put_async(q, a->tbl, d->key, d->key_len, d->value, d->value_len, 0,
                                      tag);
                break;
        default:
                ret = scree_put_async(q, a->tbl, d->key, d->key_len, d->value, d->value_len, 0,
                                      tag);
                break;
        }
        if (ret < 0)
                return api_error(ret, "submit");
        if (d->kind != BENCH_OPK_GET && d->kind != BENCH_OPK_SCAN)
                e->res[id]->user_bytes += d->key_len + (d->kind == BENCH_OPK_DEL ? 0 : d->value_len);
        return 0;
}

static int api_reap(struct bench_engine *e, unsigned id, uint32_t *slots, uint32_t max,
                    struct bench_result *res)
{
        struct api_worker *w = &api_of(e)->w[id];
        int n = scree_cq_wait(w->q, w->c, (int)max, -1);

        for (int i = 0; i < n; i++) {
                scree_completion *c = &w->c[i];

                slots[i] = (uint32_t)(uintptr_t)c->tag;
                if (c->res < 0 && c->res != -SCREE_ENOTFOUND)
                        return api_error(c->res, "an operation");
                if (c->op == SCREE_OP_GET) {
                        res->found += c->res == 0;
                        scree_value_free(c->value);
                } else if (c->op == SCREE_OP_SCAN) {
                        res->entries += scree_rows_count(c->rows);
                        res->found += scree_rows_count(c->rows) > 0;
                        scree_rows_free(c->rows);
                }
        }
        return n;
}

/* ---- the engine interface ---- */

static int api_close(struct bench_engine *e)
{
        struct bench_api *a = api_of(e);
        int r;

        for (unsigned i = 0; a->w && i < e->n; i++) {
                scree_cq_free(a->w[i].q);
                free(a->w[i].c);
                free(a->w[i].buf);
        }
        free(a->w);
        a->w = NULL;
        scree_table_close(a->tbl);
        a->tbl = NULL;
        r = scree_close(a->db);
        a->db = NULL;
        return r;
}

static int options_set(scree_options *so, const struct bench_opts *o)
{
        char v[64];
        int r = 0;
        unsigned shards = o->api_shards ? o->api_shards : o->k.workers;

        snprintf(v, sizeof(v), "%u", shards);
        r |= scree_options_set(so, "smp", v);
        /* memory: half of it for the memtables, as the server splits it */
        snprintf(v, sizeof(v), "%zu", o->memtable_budget * 2 * shards);
        r |= scree_options_set(so, "memory", v);
        snprintf(v, sizeof(v), "%zu", o->cache_bytes * shards);
        r |= scree_options_set(so, "cache-size", v);
        r |= scree_options_set(so, "commitlog-sync",
                               o->sync == ENG_WAL_SYNC_BATCH ? "batch" : "periodic");
        snprintf(v, sizeof(v), "%" PRIu64, o->sync_period_ns / 1000000 ? o->sync_period_ns / 1000000 : 1);
        r |= scree_options_set(so, "commitlog-sync-period-ms", v);
        r |= scree_options_set(so, "prefault", o->prefault ? "yes" : "no");
        return r < 0 ? -EINVAL : 0;
}

static int table_open(struct bench_api *a)
{
        bool hashed = a->t.e.o->k.table != ENG_TABLE_ORDERED;
        scree_table_spec spec = { .path = "/bench", .hash_parts = hashed ? 1 : 0,
                                  .tablets = hashed ? 4 * scree_shards(a->db) : 0 };
        int r = scree_table_create(a->db, &spec);

        if (r < 0 && r != -EEXIST)
                return api_error(r, "creating /bench");
        r = scree_table_open(a->db, "/bench", &a->tbl);
        return r < 0 ? api_error(r, "opening /bench") : 0;
}

static int workers_open(struct bench_api *a)
{
        const struct bench_opts *o = a->t.e.o;
        uint32_t window = o->inflight ? o->inflight : 1;

        a->w = calloc(a->t.e.n, sizeof(*a->w));
        if (!a->w)
                return -ENOMEM;
        for (unsigned i = 0; i < a->t.e.n; i++) {
                struct api_worker *w = &a->w[i];
                int r = scree_cq_new(a->db, &w->q);

                if (r < 0)
                        return api_error(r, "a completion queue");
                w->c = calloc(window, sizeof(*w->c));
                w->buf_len = o->k.value_size + 64;
                w->buf = malloc(w->buf_len);
                if (!w->c || !w->buf)
                        return -ENOMEM;
        }
        return 0;
}

/* Waits until the shards have faulted their memory in (--prefault), as
 * the direct engine does (bench_shard.c): the load must not race the
 * page zeroing for the CPUs. */
static int prefault_wait(struct bench_api *a)
{
        const struct timespec tick = { .tv_nsec = 2 * 1000 * 1000 };
        uint64_t pending;
        int r;

        while ((r = scree_stat(a->db, "prefault_pending", &pending)) == 0 && pending)
                nanosleep(&tick, NULL);
        return r < 0 ? api_error(r, "reading prefault_pending") : 0;
}

static int api_open(struct bench_engine *e)
{
        struct bench_api *a = api_of(e);
        scree_options *so = scree_options_new();
        int r = so ? bench_dir_prepare(e->o->dir, a->path, e->o->use_existing) : -ENOMEM;

        if (r == 0)
                r = options_set(so, e->o);
        if (r == 0 && (r = scree_open(a->path, so, &a->db)) < 0)
                api_error(r, "opening the database");
        scree_options_free(so);
        if (r == 0)
                r = table_open(a);
        if (r == 0)
                r = workers_open(a);
        if (r == 0 && e->o->prefault)
                r = prefault_wait(a);
        if (r < 0)
                api_close(e);
        return r;
}

static uint64_t api_space_bytes(struct bench_engine *e)
{
        return bench_dir_bytes(api_of(e)->path);
}

static void api_free(struct bench_engine *e)
{
        struct bench_api *a;

        if (!e)
                return;
        a = api_of(e);
        api_close(e);
        bench_threads_fini(&a->t);
        free(a);
}

static const struct bench_threads_ops api_thread_ops = {
        .op = api_op, .write = api_write, .submit = api_submit, .reap = api_reap,
};

static const struct bench_engine_ops api_ops = {
        .open = api_open,
        .run_start = bench_threads_run_start,
        .run_is_done = bench_threads_run_is_done,
        .run_wait = bench_threads_run_wait,
        .close = api_close,
        .free = api_free,
        .space_bytes = api_space_bytes,
};

int bench_api_new(const struct bench_opts *o, struct bench_engine **ret)
{
        struct bench_api *a = calloc(1, sizeof(*a));
        int err;

        if (!a)
                return -ENOMEM;
        snprintf(a->path, sizeof(a->path), "%s/api", o->dir);
        err = bench_threads_init(&a->t, "api", &api_ops, &api_thread_ops, o);
        if (err < 0) {
                api_free(&a->t.e);
                return err;
        }
        *ret = &a->t.e;
        return 0;
}
