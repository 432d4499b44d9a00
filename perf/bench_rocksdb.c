/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's RocksDB engine; see bench_rocksdb.h. A run starts one
 * thread per worker (and, for readwhilewriting, one writer thread per
 * worker with its own generator over the same keys); each thread issues
 * its ops one at a time through the blocking C API and records them
 * exactly as the scree engine does (bench_run.h). The main thread polls
 * for the workers' end and joins the threads.
 *
 * RocksDB has no counter of the bytes it writes short of its statistics
 * (which cost throughput), so its results leave disk_bytes at 0 and the
 * report falls back to the kernel's count; user_bytes is counted here.
 */
#include <errno.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/time.h"
#include "perf/bench_rocksdb.h"

/* Open loop: an op due sooner than this is waited for by spinning. */
#define PACE_SPIN_NS (150 * NS_PER_US)
#define BLOOM_BITS_PER_KEY 10.0

struct bench_rocksdb;

struct rdb_worker {
        struct bench_rocksdb *r;
        unsigned id;
        struct bench_gen *bg_gen;       /* readwhilewriting's writer's; made on first use */
        pthread_t th, bg_th;
        bool bg, started, bg_started;   /* bg: a writer this run */
        struct bench_pace pace;
        uint64_t bg_ops, bg_user_bytes; /* the writer's, merged at the end */
        int bg_err;
        _Atomic bool done;              /* the worker's ops are over */
};

struct bench_rocksdb {
        struct bench_engine e;          /* first: the engine interface */
        char path[PATH_MAX];
        rocksdb_t *db;
        rocksdb_options_t *opts;
        rocksdb_block_based_table_options_t *table;
        rocksdb_cache_t *cache;
        rocksdb_writeoptions_t *wo;
        rocksdb_readoptions_t *ro;
        /* the run in progress */
        enum bench_workload w;
        const struct bench_dists *d;
        uint64_t t0_ns;
        struct rdb_worker *wk;          /* [e.n] */
};

static struct bench_rocksdb *rdb_of(struct bench_engine *e)
{
        return container_of(e, struct bench_rocksdb, e);
}

/* RocksDB's error string, logged and freed, as -EIO. */
static int rdb_error(char *err)
{
        fprintf(stderr, "scree-bench: rocksdb: %s\n", err);
        rocksdb_free(err);
        return -EIO;
}

/* ---- one op ---- */

static int do_get(struct bench_rocksdb *r, const struct bench_op_desc *d, struct bench_result *res)
{
        char *err = NULL;
        rocksdb_pinnableslice_t *p = rocksdb_get_pinned(r->db, r->ro, (const char *)d->key, d->key_len,
                                                        &err);

        if (err)
                return rdb_error(err);
        if (p) {
                size_t len;

                res->found += rocksdb_pinnableslice_value(p, &len) != NULL;
                rocksdb_pinnableslice_destroy(p);
        }
        return 0;
}

static int do_scan(struct bench_rocksdb *r, const struct bench_op_desc *d, struct bench_result *res)
{
        rocksdb_iterator_t *it = rocksdb_create_iterator(r->db, r->ro);
        char *err = NULL;
        uint32_t n = 0;

        rocksdb_iter_seek(it, (const char *)d->key, d->key_len);
        for (; n < d->scan_len && rocksdb_iter_valid(it); n++) {
                size_t klen, vlen;

                (void)rocksdb_iter_key(it, &klen);
                (void)rocksdb_iter_value(it, &vlen);
                rocksdb_iter_next(it);
        }
        rocksdb_iter_get_error(it, &err);
        rocksdb_iter_destroy(it);
        if (err)
                return rdb_error(err);
        res->entries += n;
        res->found += n > 0;
        return 0;
}

/* A put or delete; counts the user bytes written into *user_bytes. */
static int do_write(struct bench_rocksdb *r, const struct bench_op_desc *d, uint64_t *user_bytes)
{
        char *err = NULL;

        if (d->kind == BENCH_OPK_DEL) {
                rocksdb_delete(r->db, r->wo, (const char *)d->key, d->key_len, &err);
                *user_bytes += d->key_len;
        } else {
                rocksdb_put(r->db, r->wo, (const char *)d->key, d->key_len, (const char *)d->value,
                            d->value_len, &err);
                *user_bytes += d->key_len + d->value_len;
        }
        return err ? rdb_error(err) : 0;
}

static int do_op(struct bench_rocksdb *r, const struct bench_op_desc *d, struct bench_result *res)
{
        int ret;

        switch (d->kind) {
        case BENCH_OPK_GET:
                return do_get(r, d, res);
        case BENCH_OPK_SCAN:
                return do_scan(r, d, res);
        case BENCH_OPK_RMW:     /* RocksDB has no read-modify-write: YCSB's get, then put */
                ret = do_get(r, d, res);
                return ret < 0 ? ret : do_write(r, d, &res->user_bytes);
        default:
                return do_write(r, d, &res->user_bytes);
        }
}

/* Waits until due (open loop): sleeps, then spins the last stretch. */
static uint64_t wait_until(uint64_t due, uint64_t now)
{
        if (due > now + PACE_SPIN_NS) {
                struct timespec ts = time_ns_to_timespec(due - PACE_SPIN_NS);

                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        }
        while ((now = time_now_ns()) < due)
                ;
        return now;
}

/* Sleeps until due (the writer's pace is coarse: no spinning). */
static uint64_t sleep_until(uint64_t due)
{
        struct timespec ts = time_ns_to_timespec(due);

        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        return time_now_ns();
}

/* ---- the threads ---- */

static void *worker_main(void *arg)
{
        struct rdb_worker *k = arg;
        struct bench_rocksdb *r = k->r;
        struct bench_result *res = r->e.res[k->id];
        struct bench_op_desc d = { .cls = BENCH_OPC_READ };
        uint64_t now = time_now_ns();

        if (k->pace.interval_ns)
                bench_thread_precise_timers();
        for (uint64_t seq = 0; seq < k->pace.target && !res->err && now < k->pace.deadline_ns; seq++) {
                uint64_t due = bench_pace_due(&k->pace, seq, now);
                int ret;

                if (due > now)
                        now = wait_until(due, now);
                ret = bench_gen_next(r->e.gen[k->id], seq, &d);
                if (ret == 0)
                        ret = do_op(r, &d, res);
                bench_result_fail(res, k->id, r->w, ret);
                now = time_now_ns();
                bench_result_fail(res, k->id, r->w,
                                  bench_result_add(res, d.cls, due, now, r->e.o->timeseries));
        }
        res->end_ns = time_now_ns();
        atomic_store_explicit(&k->done, true, memory_order_release);
        return NULL;
}

/* readwhilewriting's writer: puts until its worker is done. */
static void *writer_main(void *arg)
{
        struct rdb_worker *k = arg;
        struct bench_op_desc d;
        uint64_t now = time_now_ns();

        if (k->pace.bg_interval_ns)
                bench_thread_precise_timers();
        while (!atomic_load_explicit(&k->done, memory_order_acquire) && !k->bg_err) {
                uint64_t due = k->pace.bg_interval_ns ? k->pace.t0_ns + k->bg_ops * k->pace.bg_interval_ns
                                                      : now;

                if (due > now)  /* ahead: catch up in a burst, as scree's shard does */
                        now = sleep_until(bench_bg_wake(due, now));
                bench_gen_write(k->bg_gen, &d);
                k->bg_err = do_write(k->r, &d, &k->bg_user_bytes);
                k->bg_ops++;
                now = time_now_ns();
        }
        return NULL;
}

/* ---- the engine interface ---- */

static int rdb_run_wait(struct bench_engine *e);

static int rdb_open(struct bench_engine *e)
{
        struct bench_rocksdb *r = rdb_of(e);
        char *err = NULL;
        int ret = bench_dir_prepare(e->o->dir, r->path, e->o->use_existing);

        if (ret < 0)
                return ret;
        r->db = rocksdb_open(r->opts, r->path, &err);
        return err ? rdb_error(err) : 0;
}

static int rdb_run_start(struct bench_engine *e, enum bench_workload w, const struct bench_dists *d,
                         uint64_t t0_ns)
{
        struct bench_rocksdb *r = rdb_of(e);
        int ret = 0;

        r->w = w;
        r->d = d;
        r->t0_ns = t0_ns;
        for (unsigned i = 0; i < e->n; i++) {
                struct rdb_worker *k = &r->wk[i];

                k->bg = w == BENCH_READWHILEWRITING && bench_gen_keys(e->gen[i]) > 0;
                if (k->bg && !k->bg_gen && !(k->bg_gen = bench_gen_new(&e->o->k, i)))
                        return -ENOMEM;
                bench_result_begin(e->res[i], t0_ns);
                bench_gen_start(e->gen[i], w, d);
                bench_pace_init(&k->pace, e->o, w, bench_gen_keys(e->gen[i]), t0_ns);
                k->bg_ops = k->bg_user_bytes = 0;
                k->bg_err = 0;
                atomic_store(&k->done, false);
        }
        for (unsigned i = 0; i < e->n && ret == 0; i++) {
                struct rdb_worker *k = &r->wk[i];

                ret = -pthread_create(&k->th, NULL, worker_main, k);
                k->started = ret == 0;
                if (ret == 0 && k->bg) {
                        ret = -pthread_create(&k->bg_th, NULL, writer_main, k);
                        k->bg_started = ret == 0;
                }
        }
        if (ret < 0) {
                for (unsigned i = 0; i < e->n; i++)   /* end what started */
                        e->res[i]->err = ret;
                rdb_run_wait(e);
        }
        return ret;
}

static bool rdb_run_is_done(struct bench_engine *e)
{
        struct bench_rocksdb *r = rdb_of(e);

        for (unsigned i = 0; i < e->n; i++)
                if (r->wk[i].started && !atomic_load_explicit(&r->wk[i].done, memory_order_acquire))
                        return false;
        return true;
}

static int rdb_run_wait(struct bench_engine *e)
{
        struct bench_rocksdb *r = rdb_of(e);
        int first = 0;

        for (unsigned i = 0; i < e->n; i++) {
                struct rdb_worker *k = &r->wk[i];
                struct bench_result *res = e->res[i];

                if (k->started)
                        pthread_join(k->th, NULL);
                if (k->bg_started)
                        pthread_join(k->bg_th, NULL);
                k->started = k->bg_started = false;
                res->bg_ops = k->bg_ops;
                res->user_bytes += k->bg_user_bytes;
                bench_result_fail(res, i, r->w, k->bg_err);
                if (res->err && !first)
                        first = res->err;
        }
        return first;
}

static int rdb_close(struct bench_engine *e)
{
        struct bench_rocksdb *r = rdb_of(e);

        if (r->db)
                rocksdb_close(r->db);
        r->db = NULL;
        return 0;
}

static uint64_t rdb_space_bytes(struct bench_engine *e)
{
        return bench_dir_bytes(rdb_of(e)->path);
}

static void rdb_free(struct bench_engine *e)
{
        struct bench_rocksdb *r;

        if (!e)
                return;
        r = rdb_of(e);
        rdb_close(e);
        if (r->opts)
                rocksdb_options_destroy(r->opts);
        if (r->table)
                rocksdb_block_based_options_destroy(r->table);
        if (r->cache)
                rocksdb_cache_destroy(r->cache);
        if (r->wo)
                rocksdb_writeoptions_destroy(r->wo);
        if (r->ro)
                rocksdb_readoptions_destroy(r->ro);
        for (unsigned i = 0; r->wk && i < e->n; i++)
                bench_gen_free(r->wk[i].bg_gen);
        free(r->wk);
        bench_engine_workers_free(e);
        free(r);
}

static const struct bench_engine_ops rdb_ops = {
        .open = rdb_open,
        .run_start = rdb_run_start,
        .run_is_done = rdb_run_is_done,
        .run_wait = rdb_run_wait,
        .close = rdb_close,
        .free = rdb_free,
        .space_bytes = rdb_space_bytes,
};

/*
 * The settings that make RocksDB comparable to scree's (docs/benchmarks.md):
 * direct I/O for reads and for flush and compaction (scree only does
 * O_DIRECT), a block cache and memtables as big as scree's over all its
 * shards (each shard has its own cache and budget; the memtables as two
 * buffers of half of it: scree flushes at half its budget and stalls at
 * all of it), no compression, a full bloom filter of 10 bits per key, the
 * WAL on and synced per write only in batch mode.
 */
static int rdb_configure(struct bench_rocksdb *r)
{
        const struct bench_opts *o = r->e.o;
        size_t memtables = o->memtable_budget * o->k.workers;

        r->opts = rocksdb_options_create();
        r->table = rocksdb_block_based_options_create();
        r->cache = rocksdb_cache_create_lru(o->cache_bytes * o->k.workers);
        r->wo = rocksdb_writeoptions_create();
        r->ro = rocksdb_readoptions_create();
        if (!r->opts || !r->table || !r->cache || !r->wo || !r->ro)
                return -ENOMEM;
        rocksdb_options_set_create_if_missing(r->opts, 1);
        rocksdb_options_set_use_direct_reads(r->opts, 1);
        rocksdb_options_set_use_direct_io_for_flush_and_compaction(r->opts, 1);
        rocksdb_options_set_compression(r->opts, rocksdb_no_compression);
        rocksdb_options_set_write_buffer_size(r->opts, memtables / 2);
        rocksdb_options_set_max_write_buffer_number(r->opts, 2);
        rocksdb_options_set_disable_auto_compactions(r->opts, !o->compaction);
        rocksdb_block_based_options_set_block_cache(r->table, r->cache);
        rocksdb_block_based_options_set_filter_policy(r->table,
                                                      rocksdb_filterpolicy_create_bloom_full(BLOOM_BITS_PER_KEY));
        rocksdb_options_set_block_based_table_factory(r->opts, r->table);
        rocksdb_writeoptions_set_sync(r->wo, o->sync == ENG_WAL_SYNC_BATCH);
        rocksdb_writeoptions_disable_WAL(r->wo, 0);
        return 0;
}

int bench_rocksdb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        struct bench_rocksdb *r = calloc(1, sizeof(*r));
        int err;

        if (!r)
                return -ENOMEM;
        r->e = (struct bench_engine){ .ops = &rdb_ops, .name = "rocksdb", .o = o, .n = o->k.workers };
        snprintf(r->path, sizeof(r->path), "%s/rocksdb", o->dir);
        err = bench_engine_workers_new(&r->e);
        r->wk = calloc(r->e.n, sizeof(*r->wk));
        if (err == 0 && !r->wk)
                err = -ENOMEM;
        for (unsigned i = 0; err == 0 && i < r->e.n; i++) {
                r->wk[i].r = r;
                r->wk[i].id = i;
        }
        if (err == 0)
                err = rdb_configure(r);
        if (err < 0) {
                rdb_free(&r->e);
                return err;
        }
        *ret = &r->e;
        return 0;
}
