/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's RocksDB engine; see bench_rocksdb.h. The threads, the
 * pacing and the measurement are bench_threads.h's, shared with the other
 * peer engines; this file is what touches RocksDB: its settings, and one
 * op through the blocking C API.
 *
 * RocksDB has no counter of the bytes it writes short of its statistics
 * (which cost throughput), so its results leave disk_bytes at 0 and the
 * report falls back to the kernel's count; user_bytes is counted here.
 */
#include <errno.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "perf/bench_rocksdb.h"
#include "perf/bench_threads.h"

#define BLOOM_BITS_PER_KEY 10.0

struct bench_rocksdb {
        struct bench_threads t;         /* the workers and the engine interface */
        char path[PATH_MAX];
        rocksdb_t *db;
        rocksdb_options_t *opts;
        rocksdb_block_based_table_options_t *table;
        rocksdb_cache_t *cache;
        rocksdb_writeoptions_t *wo;
        rocksdb_readoptions_t *ro;
};

static struct bench_rocksdb *rdb_of(struct bench_engine *e)
{
        return container_of(bench_threads_of(e), struct bench_rocksdb, t);
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

static int rdb_op(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                  struct bench_result *res)
{
        struct bench_rocksdb *r = rdb_of(e);
        int ret;

        (void)id;
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

static int rdb_write(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                     uint64_t *user_bytes)
{
        (void)id;
        return do_write(rdb_of(e), d, user_bytes);
}

/* ---- the engine interface ---- */

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
        bench_threads_fini(&r->t);
        free(r);
}

static const struct bench_threads_ops rdb_thread_ops = { .op = rdb_op, .write = rdb_write };

static const struct bench_engine_ops rdb_ops = {
        .open = rdb_open,
        .run_start = bench_threads_run_start,
        .run_is_done = bench_threads_run_is_done,
        .run_wait = bench_threads_run_wait,
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
        const struct bench_opts *o = r->t.e.o;
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
        snprintf(r->path, sizeof(r->path), "%s/rocksdb", o->dir);
        err = bench_threads_init(&r->t, "rocksdb", &rdb_ops, &rdb_thread_ops, o);
        if (err == 0)
                err = rdb_configure(r);
        if (err < 0) {
                rdb_free(&r->t.e);
                return err;
        }
        *ret = &r->t.e;
        return 0;
}
