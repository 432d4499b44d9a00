/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's LMDB engine; see bench_lmdb.h. The threads, the pacing
 * and the measurement are bench_threads.h's; this file is what touches
 * LMDB: the environment, and one op through the C API.
 *
 * Reads take LMDB's fast path: each worker keeps one read-only
 * transaction and one cursor for its life (opened with the environment),
 * renews them for an op and resets them after it (mdb_txn_renew /
 * mdb_txn_reset), so a read never allocates and never holds an old
 * snapshot between ops. The environment is opened with MDB_NOTLS, so a
 * reader slot belongs to its transaction and not to the thread: a worker
 * may hold its reset read transaction while it writes (YCSB F). Writes
 * are one write transaction each (a read-modify-write reads and writes in
 * the same one), committed before the op returns; concurrent writers take
 * turns on the writer lock, and with --sync batch each commit syncs on
 * its own: LMDB has no group commit.
 *
 * LMDB counts no bytes written, so the report falls back to the kernel's
 * count; user_bytes is counted here.
 */
#include <errno.h>
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/compiler.h"
#include "perf/bench_lmdb.h"
#include "perf/bench_threads.h"

/* The map: address space only (the file grows as pages are written),
 * far more than any run fills. */
#define MAP_BYTES ((size_t)64 << 30)
/* Reader slots beyond one per worker (LMDB's default is 126 in all). */
#define SPARE_READERS 126u

struct lmdb_reader {
        MDB_txn *txn;                   /* read-only; reset between ops */
        MDB_cursor *cur;
};

struct bench_lmdb {
        struct bench_threads t;         /* the workers and the engine interface */
        char path[PATH_MAX];
        MDB_env *env;
        MDB_dbi dbi;
        struct lmdb_reader *rd;         /* [t.e.n], while open */
};

static struct bench_lmdb *lm_of(struct bench_engine *e)
{
        return container_of(bench_threads_of(e), struct bench_lmdb, t);
}

/* LMDB's error rc, logged with what failed, as a negative errno. */
static int lm_error(int rc, const char *what)
{
        fprintf(stderr, "scree-bench: lmdb: %s: %s\n", what, mdb_strerror(rc));
        if (rc > 0)     /* LMDB passes system errors through */
                return -rc;
        return rc == MDB_MAP_FULL ? -ENOSPC : -EIO;
}

/* An MDB_val over p. MDB_val has no const variant; LMDB never writes
 * through a key or value it is given. */
static MDB_val val_of(const void *p, size_t len)
{
        return (MDB_val){ .mv_size = len, .mv_data = (void *)(uintptr_t)p };
}

/* ---- one op ---- */

static int reader_renew(struct lmdb_reader *rd, bool cursor)
{
        int rc = mdb_txn_renew(rd->txn);

        if (rc == 0 && cursor)
                rc = mdb_cursor_renew(rd->txn, rd->cur);
        if (rc)
                mdb_txn_reset(rd->txn);
        return rc ? lm_error(rc, "renewing a read transaction") : 0;
}

static int do_get(struct bench_lmdb *m, struct lmdb_reader *rd, const struct bench_op_desc *d,
                  struct bench_result *res)
{
        MDB_val k = val_of(d->key, d->key_len), v;
        int rc = reader_renew(rd, false);

        if (rc < 0)
                return rc;
        rc = mdb_get(rd->txn, m->dbi, &k, &v);
        mdb_txn_reset(rd->txn);
        if (rc && rc != MDB_NOTFOUND)
                return lm_error(rc, "get");
        res->found += rc == 0;
        return 0;
}

static int do_scan(struct lmdb_reader *rd, const struct bench_op_desc *d, struct bench_result *res)
{
        MDB_val k = val_of(d->key, d->key_len), v;
        uint32_t n = 0;
        int rc = reader_renew(rd, true);

        if (rc < 0)
                return rc;
        rc = mdb_cursor_get(rd->cur, &k, &v, MDB_SET_RANGE);
        while (rc == 0 && ++n < d->scan_len)
                rc = mdb_cursor_get(rd->cur, &k, &v, MDB_NEXT);
        mdb_txn_reset(rd->txn);
        if (rc && rc != MDB_NOTFOUND)
                return lm_error(rc, "scan");
        res->entries += n;
        res->found += n > 0;
        return 0;
}

/* A put, a delete, or a read-modify-write (its get counted into *found),
 * in a write transaction of its own; counts the user bytes written into
 * *user_bytes. */
static int do_write(struct bench_lmdb *m, const struct bench_op_desc *d, uint64_t *found,
                    uint64_t *user_bytes)
{
        MDB_val k = val_of(d->key, d->key_len), v = val_of(d->value, d->value_len), old;
        MDB_txn *txn;
        int rc = mdb_txn_begin(m->env, NULL, 0, &txn);

        if (rc)
                return lm_error(rc, "beginning a write transaction");
        if (d->kind == BENCH_OPK_DEL) {
                rc = mdb_del(txn, m->dbi, &k, NULL);
                rc = rc == MDB_NOTFOUND ? 0 : rc;
                *user_bytes += d->key_len;
        } else {
                if (d->kind == BENCH_OPK_RMW) {
                        rc = mdb_get(txn, m->dbi, &k, &old);
                        *found += rc == 0;
                }
                rc = rc == 0 || rc == MDB_NOTFOUND ? mdb_put(txn, m->dbi, &k, &v, 0) : rc;
                *user_bytes += d->key_len + d->value_len;
        }
        if (rc) {
                mdb_txn_abort(txn);
                return lm_error(rc, "write");
        }
        rc = mdb_txn_commit(txn);
        return rc ? lm_error(rc, "commit") : 0;
}

static int lm_op(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                  struct bench_result *res)
{
        struct bench_lmdb *m = lm_of(e);

        switch (d->kind) {
        case BENCH_OPK_GET:
                return do_get(m, &m->rd[id], d, res);
        case BENCH_OPK_SCAN:
                return do_scan(&m->rd[id], d, res);
        default:
                return do_write(m, d, &res->found, &res->user_bytes);
        }
}

static int lm_write(struct bench_engine *e, unsigned id, const struct bench_op_desc *d,
                     uint64_t *user_bytes)
{
        uint64_t found = 0;

        (void)id;
        return do_write(lm_of(e), d, &found, user_bytes);
}

/* ---- the engine interface ---- */

/* Opens the environment in m->path: no syncs at all unless --sync batch
 * (RocksDB's and LevelDB's runs never sync their logs either then). */
static int env_open(struct bench_lmdb *m)
{
        const struct bench_opts *o = m->t.e.o;
        unsigned flags = MDB_NOTLS | (o->sync == ENG_WAL_SYNC_BATCH ? 0 : MDB_NOSYNC);
        int rc = mdb_env_create(&m->env);

        if (rc)
                return lm_error(rc, "creating the environment");
        rc = mdb_env_set_mapsize(m->env, MAP_BYTES);
        if (rc == 0)
                rc = mdb_env_set_maxreaders(m->env, m->t.e.n + SPARE_READERS);
        if (rc == 0)
                rc = mdb_env_open(m->env, m->path, flags, 0644);
        if (rc)
                return lm_error(rc, m->path);
        if (o->k.key_size > (unsigned)mdb_env_get_maxkeysize(m->env)) {
                fprintf(stderr, "scree-bench: lmdb: keys of %u bytes are over its limit of %d\n",
                        o->k.key_size, mdb_env_get_maxkeysize(m->env));
                return -EINVAL;
        }
        return 0;
}

/* Opens the main database and every worker's reader, left reset. */
static int readers_open(struct bench_lmdb *m)
{
        MDB_txn *txn;
        int rc = mdb_txn_begin(m->env, NULL, 0, &txn);

        if (rc)
                return lm_error(rc, "beginning a write transaction");
        rc = mdb_dbi_open(txn, NULL, 0, &m->dbi);
        if (rc)
                mdb_txn_abort(txn);
        else
                rc = mdb_txn_commit(txn);
        if (rc)
                return lm_error(rc, "opening the database");
        m->rd = calloc(m->t.e.n, sizeof(*m->rd));
        if (!m->rd)
                return -ENOMEM;
        for (unsigned i = 0; i < m->t.e.n; i++) {
                struct lmdb_reader *rd = &m->rd[i];

                rc = mdb_txn_begin(m->env, NULL, MDB_RDONLY, &rd->txn);
                if (rc == 0)
                        rc = mdb_cursor_open(rd->txn, m->dbi, &rd->cur);
                if (rc)
                        return lm_error(rc, "opening a reader");
                mdb_txn_reset(rd->txn);
        }
        return 0;
}

static int lm_close(struct bench_engine *e)
{
        struct bench_lmdb *m = lm_of(e);

        for (unsigned i = 0; m->rd && i < e->n; i++) {
                if (m->rd[i].cur)
                        mdb_cursor_close(m->rd[i].cur);
                if (m->rd[i].txn)
                        mdb_txn_abort(m->rd[i].txn);
        }
        free(m->rd);
        m->rd = NULL;
        if (m->env)
                mdb_env_close(m->env);
        m->env = NULL;
        return 0;
}

static int lm_open(struct bench_engine *e)
{
        struct bench_lmdb *m = lm_of(e);
        int ret = bench_dir_prepare(e->o->dir, m->path, e->o->use_existing);

        if (ret == 0)
                ret = env_open(m);
        if (ret == 0)
                ret = readers_open(m);
        if (ret < 0)
                lm_close(e);
        return ret;
}

static uint64_t lm_space_bytes(struct bench_engine *e)
{
        return bench_dir_bytes(lm_of(e)->path);
}

static void lm_free(struct bench_engine *e)
{
        struct bench_lmdb *m;

        if (!e)
                return;
        m = lm_of(e);
        lm_close(e);
        bench_threads_fini(&m->t);
        free(m);
}

static const struct bench_threads_ops lm_thread_ops = { .op = lm_op, .write = lm_write };

static const struct bench_engine_ops lm_ops = {
        .open = lm_open,
        .run_start = bench_threads_run_start,
        .run_is_done = bench_threads_run_is_done,
        .run_wait = bench_threads_run_wait,
        .close = lm_close,
        .free = lm_free,
        .space_bytes = lm_space_bytes,
};

int bench_lmdb_new(const struct bench_opts *o, struct bench_engine **ret)
{
        struct bench_lmdb *m = calloc(1, sizeof(*m));
        int err;

        if (!m)
                return -ENOMEM;
        snprintf(m->path, sizeof(m->path), "%s/lmdb", o->dir);
        err = bench_threads_init(&m->t, "lmdb", &lm_ops, &lm_thread_ops, o);
        if (err < 0) {
                lm_free(&m->t.e);
                return err;
        }
        *ret = &m->t.e;
        return 0;
}
