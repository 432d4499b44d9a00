/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's LevelDB engine; see bench_leveldb.h. The threads, the
 * pacing and the measurement are bench_threads.h's; this file is what
 * touches LevelDB: its settings, and one op through the blocking C API.
 * LevelDB's own writer queue lets concurrent writers share a log write
 * (and, with --sync batch, its fsync).
 *
 * LevelDB counts no bytes written either, so as with RocksDB the report
 * falls back to the kernel's count; user_bytes is counted here.
 */
#include <errno.h>
#include <leveldb/c.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "perf/bench_leveldb.h"
#include "perf/bench_threads.h"

#define BLOOM_BITS_PER_KEY 10

struct bench_leveldb {
        struct bench_threads t;         /* the workers and the engine interface */
        char path[PATH_MAX];
        leveldb_t *db;
        leveldb_options_t *opts;
        leveldb_cache_t *cache;
        leveldb_filterpolicy_t *filter;
        leveldb_writeoptions_t *wo;
        leveldb_readoptions_t *ro;
};

static struct bench_leveldb *ldb_of(struct bench_engine *e)
{
        return container_of(bench_threads_of(e), struct bench_leveldb, t);
}

/* LevelDB's error string, logged and freed, as -EIO. */
static int ldb_error(char *err)
{
        fprintf(stderr, "scree-bench: leveldb: %s\n", err);
        leveldb_free(err);
        return -EIO;
}

/* ---- one op ---- */

/* The C API has no pinned get: the value comes back as a copy to free. */
static int do_get(struct bench_leveldb *l, const struct bench_op_desc *d, struct bench_result *res)
{
        char *err = NULL;
        size_t len;
        char *v = leveldb_get(l->db, l->ro, (const char *)d->key, d->key_len, &len, &err);

        if (err)
                return ldb_error(err);
        res->found += v != NULL;
        leveldb_free(v);
        return 0;
}

static int do_scan(struct bench_leveldb *l, const struct bench_op_desc *d, struct bench_result *res)
{
        leveldb_iterator_t *it = leveldb_create_iterator(l->db, l->ro);
        char *err = NULL;
        uint32_t n = 0;

        leveldb_iter_seek(it, (const char *)d->key, d->key_len);
        for (; n < d->scan_len && leveldb_iter_valid(it); n++) {
                size_t klen, vlen;

                (void)leveldb_iter_key(it, &klen);
                (void)leveldb_iter_value(it, &vlen);
                leveldb_iter_next(it);
        }
        leveldb_iter_get_error(it, &err);
        leveldb_iter_destroy(it);
        if (err)
                return ldb_error(err);
        res->entries += n;
        res->found += n > 0;
        return 0;
}

/* A put or delete; counts the user bytes written into *user_bytes. */
static int do_write(struct bench_leveldb *l, const struct bench_op_desc *d, uint64_t *user_bytes)
{
        char *err = NULL;

        if (d->kind == BENCH_OPK_DEL) {
                leveldb_delete(l->db, l->wo, (const char *)d->key, d->key_len, &err);
                *user_bytes += d->key_len;
        } else {
                leveldb_put(l->db, l->wo, (const char *)d->key, d->key_len, (const char *)d->value,
                            d->value_len, &err);
                *user_bytes += d->key_len + d->value_len;
        }
        return err ? ldb_error(err) : 0;
}

static int ldb_op(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                  struct bench_result *res)
{
        struct bench_leveldb *l = ldb_of(e);
        int ret;

        (void)id;
        switch (d->kind) {
        case BENCH_OPK_GET:
                return do_get(l, d, res);
        case BENCH_OPK_SCAN:
                return do_scan(l, d, res);
        case BENCH_OPK_RMW:     /* no read-modify-write: YCSB's get, then put, as for RocksDB */
                ret = do_get(l, d, res);
                return ret < 0 ? ret : do_write(l, d, &res->user_bytes);
        default:
                return do_write(l, d, &res->user_bytes);
        }
}

static int ldb_write(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                     uint64_t *user_bytes)
{
        (void)id;
        return do_write(ldb_of(e), d, user_bytes);
}

/* ---- the engine interface ---- */

static int ldb_open(struct bench_engine *e)
{
        struct bench_leveldb *l = ldb_of(e);
        char *err = NULL;
        int ret = bench_dir_prepare(e->o->dir, l->path, e->o->use_existing);

        if (ret < 0)
                return ret;
        l->db = leveldb_open(l->opts, l->path, &err);
        return err ? ldb_error(err) : 0;
}

static int ldb_close(struct bench_engine *e)
{
        struct bench_leveldb *l = ldb_of(e);

        if (l->db)
                leveldb_close(l->db);
        l->db = NULL;
        return 0;
}

static uint64_t ldb_space_bytes(struct bench_engine *e)
{
        return bench_dir_bytes(ldb_of(e)->path);
}

static void ldb_free(struct bench_engine *e)
{
        struct bench_leveldb *l;

        if (!e)
                return;
        l = ldb_of(e);
        ldb_close(e);   /* first: the database uses the options' cache and filter */
        if (l->opts)
                leveldb_options_destroy(l->opts);
        if (l->filter)
                leveldb_filterpolicy_destroy(l->filter);
        if (l->cache)
                leveldb_cache_destroy(l->cache);
        if (l->wo)
                leveldb_writeoptions_destroy(l->wo);
        if (l->ro)
                leveldb_readoptions_destroy(l->ro);
        bench_threads_fini(&l->t);
        free(l);
}

static const struct bench_threads_ops ldb_thread_ops = { .op = ldb_op, .write = ldb_write };

static const struct bench_engine_ops ldb_ops = {
        .open = ldb_open,
        .run_start = bench_threads_run_start,
        .run_is_done = bench_threads_run_is_done,
        .run_wait = bench_threads_run_wait,
        .close = ldb_close,
        .free = ldb_free,
        .space_bytes = ldb_space_bytes,
};

/*
 * The settings, as RocksDB's in bench_rocksdb.c (docs/benchmarks.md): a
 * block cache as big as scree's over all its shards, a write buffer of
 * half their memtable budget (LevelDB, like RocksDB here, has one
 * memtable filling while the other is flushed), no compression, a bloom
 * filter of 10 bits per key, the log synced per write only in batch mode.
 * LevelDB has no direct I/O, and on 64-bit Linux it maps its first 1000
 * tables with mmap and keeps no block of them in the block cache: its
 * reads come from the kernel's page cache. It cannot turn compaction off
 * (--compaction off is ignored).
 */
static int ldb_configure(struct bench_leveldb *l)
{
        const struct bench_opts *o = l->t.e.o;
        size_t memtables = o->memtable_budget * o->k.workers;

        l->opts = leveldb_options_create();
        l->cache = leveldb_cache_create_lru(o->cache_bytes * o->k.workers);
        l->filter = leveldb_filterpolicy_create_bloom(BLOOM_BITS_PER_KEY);
        l->wo = leveldb_writeoptions_create();
        l->ro = leveldb_readoptions_create();
        if (!l->opts || !l->cache || !l->filter || !l->wo || !l->ro)
                return -ENOMEM;
        leveldb_options_set_create_if_missing(l->opts, 1);
        leveldb_options_set_compression(l->opts, leveldb_no_compression);
        leveldb_options_set_write_buffer_size(l->opts, memtables / 2);
        leveldb_options_set_cache(l->opts, l->cache);
        leveldb_options_set_filter_policy(l->opts, l->filter);
        leveldb_writeoptions_set_sync(l->wo, o->sync == ENG_WAL_SYNC_BATCH);
        return 0;
}

int bench_leveldb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        struct bench_leveldb *l = calloc(1, sizeof(*l));
        int err;

        if (!l)
                return -ENOMEM;
        snprintf(l->path, sizeof(l->path), "%s/leveldb", o->dir);
        err = bench_threads_init(&l->t, "leveldb", &ldb_ops, &ldb_thread_ops, o);
        if (err == 0)
                err = ldb_configure(l);
        if (err < 0) {
                ldb_free(&l->t.e);
                return err;
        }
        *ret = &l->t.e;
        return 0;
}
