/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Statistics and administration (scree.h): the engines' counters summed
 * over the shards, flush and compact on every shard.
 */
#include <errno.h>
#include <string.h>

#include "engine/api/req.h"
#include <stdlib.h>

#define STAT(f) { #f, offsetof(struct eng_shard_stats, f) }

static const struct stat_def {
        const char *name;
        size_t off;
} stat_defs[] = {
        STAT(writes), STAT(entries_written), STAT(user_bytes), STAT(gets),
        STAT(get_memtable_hits), STAT(get_sst_reads), STAT(stalls), STAT(stall_ns),
        STAT(flushes), STAT(flush_bytes), STAT(flush_errors), STAT(compactions),
        STAT(compaction_bytes_in), STAT(compaction_bytes_out), STAT(compaction_errors),
        STAT(expired_dropped), STAT(tablet_splits), STAT(tablet_merges), STAT(corrupt_blocks),
        STAT(corrupt_reads), STAT(disk_bytes_written), STAT(log_records), STAT(memtable_bytes),
        STAT(imm_bytes), STAT(sstables), STAT(sstable_bytes), STAT(log_bytes_written),
        STAT(log_syncs), STAT(log_gathers), STAT(cache_hits), STAT(cache_misses), STAT(cache_bytes),
        STAT(row_hits), STAT(row_misses), STAT(blocks_prefaulted), STAT(prefault_pending),
};

#define N_STATS (sizeof(stat_defs) / sizeof(stat_defs[0]))

static void stats_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        uint64_t *sum = req->ctx;
        struct eng_shard *eng = api_engine_of(loop);
        const struct eng_shard_stats *st = eng ? eng_shard_stats(eng) : NULL;

        for (size_t i = 0; st && i < N_STATS; i++)
                sum[i] += *(const uint64_t *)((const char *)st + stat_defs[i].off);
        rx_alien_complete(req, 0);
}

static int stats_sum(scree_db *db, uint64_t *sum)
{
        int r = api_off_shard();

        memset(sum, 0, N_STATS * sizeof(*sum));
        for (unsigned s = 0; r == 0 && s < db->n; s++)
                r = (int)api_on_shard(db, s, stats_run, sum);
        return r;
}

SCREE_API int scree_stat(scree_db *db, const char *name, uint64_t *ret)
{
        uint64_t sum[N_STATS];
        int r;

        if (!db || !name || !ret)
                return api_fail(-EINVAL, "scree_stat needs a database, a name and somewhere to "
                                "put the value");
        for (size_t i = 0; i < N_STATS; i++)
                if (strcmp(stat_defs[i].name, name) == 0) {
                        if ((r = stats_sum(db, sum)) < 0)
                                return r;
                        *ret = sum[i];
                        return 0;
                }
        return api_fail(-SCREE_ENOTFOUND, "no counter named '%.60s'", name);
}

SCREE_API int scree_stats(scree_db *db, void (*fn)(void *arg, const char *name, uint64_t value),
                          void *arg)
{
        uint64_t sum[N_STATS];
        int r;

        if (!db || !fn)
                return api_fail(-EINVAL, "scree_stats needs a database and a callback");
        if ((r = stats_sum(db, sum)) < 0)
                return r;
        for (size_t i = 0; i < N_STATS; i++)
                fn(arg, stat_defs[i].name, sum[i]);
        return 0;
}

static void admin_done(void *arg, int res)
{
        rx_alien_complete(arg, res);
}

static void flush_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct eng_shard *eng = api_engine_of(loop);
        int r = eng ? eng_shard_flush(eng, admin_done, req) : -SCREE_ESHUTDOWN;

        if (r < 0)
                rx_alien_complete(req, r);
}

static void compact_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct eng_shard *eng = api_engine_of(loop);
        int r = eng ? eng_shard_compact(eng, admin_done, req) : -SCREE_ESHUTDOWN;

        if (r < 0)
                rx_alien_complete(req, r);
}

static int on_every_shard(scree_db *db, void (*fn)(struct rx_loop *, struct rx_alien_req *),
                          const char *what)
{
        int r = db ? api_off_shard() : api_fail(-EINVAL, "no database"), first = 0;

        if (r < 0)
                return r;
        for (unsigned s = 0; s < db->n; s++) {
                r = (int)api_on_shard(db, s, fn, NULL);
                if (r < 0 && !first)
                        first = api_fail(r, "%s on shard %u: %s", what, s, scree_strerror(r));
        }
        return first;
}

SCREE_API int scree_flush(scree_db *db)
{
        return on_every_shard(db, flush_run, "flush");
}

SCREE_API int scree_compact(scree_db *db)
{
        return on_every_shard(db, compact_run, "compaction");
}

/* ---- asynchronous: one request per shard, the last answer delivers ---- */

struct fanout {
        struct api_req *parent;         /* answered into its queue */
        _Atomic unsigned left;
        _Atomic int first_err;
        struct rx_alien_req *children;  /* [n shards] */
};

static void child_done(struct rx_alien_req *req)
{
        struct fanout *f = req->ctx;
        int res = (int)req->result, none = 0;

        if (res < 0)
                atomic_compare_exchange_strong(&f->first_err, &none, res);
        if (atomic_fetch_sub(&f->left, 1) == 1)
                api_cq_deliver(f->parent, atomic_load(&f->first_err));
}

static void fanout_finish(struct api_req *rq, scree_completion *c)
{
        struct fanout *f = rq->state;

        free(f->children);
        free(f);
}

static int on_every_shard_async(scree_cq *q, enum api_op op,
                                void (*fn)(struct rx_loop *, struct rx_alien_req *), void *tag)
{
        unsigned n = q ? q->db->n : 0;
        struct fanout *f;
        struct api_req *rq;

        if (!q)
                return api_fail(-EINVAL, "no completion queue");
        f = calloc(1, sizeof(*f));
        rq = calloc(1, sizeof(*rq));
        if (!f || !rq || !(f->children = calloc(n, sizeof(*f->children)))) {
                free(f);
                free(rq);
                return api_fail(-ENOMEM, "out of memory");
        }
        *rq = (struct api_req){ .db = q->db, .cq = q, .op = op, .tag = tag, .state = f,
                                .finish = fanout_finish };
        f->parent = rq;
        atomic_init(&f->left, n);
        atomic_init(&f->first_err, 0);
        api_cq_submitted(q);
        for (unsigned s = 0; s < n; s++) {
                f->children[s] = (struct rx_alien_req){ .run = fn, .complete = child_done,
                                                        .ctx = f };
                if (rx_smp_alien_submit(q->db->smp, s, &f->children[s]) < 0)
                        rx_alien_complete(&f->children[s], -SCREE_ESHUTDOWN);
        }
        return 0;
}

SCREE_API int scree_flush_async(scree_cq *q, void *tag)
{
        return on_every_shard_async(q, API_OP_FLUSH, flush_run, tag);
}

SCREE_API int scree_compact_async(scree_cq *q, void *tag)
{
        return on_every_shard_async(q, API_OP_COMPACT, compact_run, tag);
}
