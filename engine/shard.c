/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's write path and lifetime; see shard.h. A write is encoded
 * once into a batch (internal keys), appended to the commit log, and
 * inserted into the memtables of the tablets it touches. Writes that
 * arrive while memtables are over budget wait, encoded, in a FIFO until a
 * flush frees memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/arena.h"
#include "base/compiler.h"
#include "base/endian.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/shard_internal.h"

void shard_set_error(struct eng_shard *s, int err, const char *what)
{
        if (s->error)
                return;
        s->error = err;
        log_error("shard %u: %s failed (%s); writes stopped, reads go on", s->o.shard, what,
                  strerror(err < 0 && -err < 4096 ? -err : EIO));
        /* Writes waiting for memory would wait for a flush that may never come. */
        shard_unstall(s);
}

int eng_shard_error(const struct eng_shard *s)
{
        return s->error;
}

bool eng_shard_is_full(const struct eng_shard *s)
{
        return (s->wal && eng_wal_is_full(s->wal)) || (s->man && eng_manifest_is_full(s->man)) ||
               s->flush_error == -ENOSPC;
}

/* Counted when asked rather than kept in step by flushes and compactions:
 * the published table sets are the truth, and a walk over the tablets is
 * cheap next to a stats request. */
static void stats_refresh_parts(struct eng_shard *s)
{
        uint64_t n = 0, bytes = 0;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_tset *ts = s->tablets[i]->tset;

                for (uint32_t j = 0; ts && j < ts->n; j++) {
                        n++;
                        bytes += ts->e[j].meta.file_size;
                }
        }
        s->stats.sstables = n;
        s->stats.sstable_bytes = bytes;
        if (s->wal) {
                s->stats.log_bytes_written = eng_wal_stats(s->wal)->written_bytes;
                s->stats.log_syncs = eng_wal_stats(s->wal)->syncs;
                s->stats.log_gathers = eng_wal_stats(s->wal)->gathers;
        }
        if (s->cache) {
                const struct eng_block_cache_stats *c = eng_block_cache_stats(s->cache);

                s->stats.cache_hits = c->hits;
                s->stats.cache_misses = c->misses;
                s->stats.cache_bytes = c->bytes;
                s->stats.row_hits = c->row_hits;
                s->stats.row_misses = c->row_misses;
                s->stats.cache_rows = c->rows;
                eng_block_cache_page_stats(s->cache, &s->stats.cache_pages_huge,
                                           &s->stats.cache_pages_malloc);
        }
}

const struct eng_shard_stats *eng_shard_stats(struct eng_shard *s)
{
        /* The log's bytes are added as they grow, so this stays a counter
         * that other code (flushes, compactions) adds to directly. */
        if (s->wal) {
                uint64_t logged = eng_wal_stats(s->wal)->written_bytes;

                s->stats.disk_bytes_written += logged - s->log_bytes_counted;
                s->log_bytes_counted = logged;
        }
        s->stats.memtable_bytes = s->active_bytes;
        s->stats.imm_bytes = s->imm_bytes;
        s->stats.block_pool_hits = s->pool->hits;
        s->stats.block_pool_misses = s->pool->misses;
        s->stats.prefault_pending = shard_prefault_pending(s);
        s->stats.compaction_ns = shard_compaction_ns(s);
        s->stats.compacting = s->compaction != NULL;
        stats_refresh_parts(s);
        return &s->stats;
}

uint64_t eng_shard_mem_bytes(const struct eng_shard *s)
{
        const struct arena_pool *p = s->pool;

        if (!p)
                return 0;
        return (uint64_t)(p->region_blocks - p->n_cold) * ARENA_HUGE_BYTES;
}

/* Accounts one entry put into tablet t's active memtable. */
static void applied_one(struct eng_shard *s, struct eng_tablet *t, const struct eng_entry *e,
                        uint64_t segment)
{
        /* What the entry costs, not what the arena reserved: the arena
         * grows in large blocks, which would make the budget move in jumps. */
        size_t grown = (size_t)e->key_len + e->value_len + SHARD_ENTRY_OVERHEAD;

        t->active_bytes += grown;
        s->active_bytes += grown;
        if (!t->active_first_segment) {
                t->active_first_segment = segment;
                s->seal_blocked = false;        /* t has something to seal now */
        }
}

/* Puts a chunk of decoded entries: their skip-list searches interleave
 * (eng_memtable_put_many). Returns the number applied or the first error. */
static int apply_chunk(struct eng_shard *s, struct eng_memtable_put *puts, struct eng_tablet **tab,
                       unsigned n, uint64_t segment)
{
        int applied = 0;

        eng_memtable_put_many(puts, n);
        for (unsigned i = 0; i < n; i++) {
                if (puts[i].res < 0)
                        return puts[i].res;
                applied_one(s, tab[i], puts[i].e, segment);
                applied++;
        }
        return applied;
}

int shard_apply_batch(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint64_t first_seq,
                      uint64_t segment)
{
        struct eng_memtable_put puts[ENG_MEMTABLE_PUT_MANY];
        struct eng_entry e[ENG_MEMTABLE_PUT_MANY];
        struct eng_tablet *tab[ENG_MEMTABLE_PUT_MANY];
        struct eng_batch_iter it;
        unsigned n = 0;
        int applied = 0, a, r = eng_batch_iter_init(&it, payload, len, first_seq);

        while (r == 0 && (r = eng_batch_iter_next(&it, &e[n])) == 1) {
                struct eng_tablet *t;

                r = 0;
                if (e[n].key_len < ENG_TABLE_ID_BYTES) {
                        r = -SCREE_ECORRUPT;
                        break;
                }
                t = shard_tablet_of_ikey(s, e[n].key, e[n].key_len);
                if (!t) {
                        /* A dropped table's entry (replayed, or waiting in
                         * s->unapplied when the drop came) has nowhere to
                         * go; nor has a replayed entry of a tablet that
                         * moved to another shard since, with its files
                         * holding every entry of it logged here
                         * (shard_move.h). */
                        if (shard_table_gone(s, be32_get(e[n].key)) ||
                            (s->replaying && shard_route_of(s, be32_get(e[n].key))))
                                continue;
                        r = -SCREE_ECORRUPT;
                        break;
                }
                if (e[n].seq <= t->flushed_seq)
                        continue;
                t->load.writes++;
                t->load.write_bytes += e[n].key_len + e[n].value_len;
                shard_hot_access(t, e[n].key, e[n].key_len);
                tab[n] = t;
                puts[n] = (struct eng_memtable_put){ .mt = t->active, .e = &e[n] };
                if (++n < ENG_MEMTABLE_PUT_MANY)
                        continue;
                a = apply_chunk(s, puts, tab, n, segment);
                n = 0;
                if (a < 0) {
                        r = a;
                        break;
                }
                applied += a;
        }
        if (r >= 0 && n) {
                a = apply_chunk(s, puts, tab, n, segment);
                if (a < 0)
                        r = a;
                else
                        applied += a;
        }
        if (r < 0)
                return r;
        if (first_seq + le32_get(payload) - 1 > s->applied_seq)
                s->applied_seq = first_seq + le32_get(payload) - 1;
        return applied;
}

/* A group bigger than group_max() is logged at once; one write bigger
 * than that is logged alone. Pending inserts (s->unapplied) are applied
 * at once beyond GROUP_MAX_BYTES too. */
#define GROUP_MAX_BYTES (256u << 10)

/* GROUP_MAX_BYTES, or a quarter segment if that is less: a group always
 * fits a segment, with room for the write that makes it full. */
static uint32_t group_max(const struct eng_shard *s)
{
        uint64_t seg = s->o.segment_bytes ? s->o.segment_bytes : ENG_WAL_DEFAULT_SEGMENT_BYTES;

        return seg / 4 < GROUP_MAX_BYTES ? (uint32_t)(seg / 4) : GROUP_MAX_BYTES;
}

/* One logged group: the writes that wait for its record to be durable. */
struct shard_group {
        struct eng_wal_write ww;
        struct eng_shard *s;
        struct eng_write *head;
};

static void answer_all(struct eng_write *head, int res)
{
        while (head) {
                struct eng_write *w = head;

                head = w->next;
                w->done(w, res);
        }
}

static void group_acked(struct eng_wal_write *ww, int res)
{
        struct shard_group *g = container_of(ww, struct shard_group, ww);

        /* Out of space is not permanent (wal.h): nothing written was lost,
         * and the log writes the group's record once space returns. */
        if (res < 0 && res != -ENOSPC)
                shard_set_error(g->s, res, "commit-log write");
        answer_all(g->head, res);
        free(g);
}

static void group_task(struct rx_loop *loop, struct rx_task *task)
{
        struct eng_shard *s = container_of(task, struct eng_shard, group_task);
        struct eng_write *failed;

        s->group_posted = false;
        shard_log_group(s);
        /* The log write is queued: send it to the disk now, and do the
         * memtable inserts while it is there (shard_apply_pending). */
        rx_loop_submit_now(loop);
        shard_apply_pending(s);
        failed = s->group_failed;
        s->group_failed = NULL;
        answer_all(failed, s->group_error);
}

static void post_group_task(struct eng_shard *s)
{
        if (s->group_posted)
                return;
        s->group_posted = true;
        s->group_task.fn = group_task;
        s->group_task.name = "shard log group";
        rx_loop_post(s->loop, &s->group_task);
}

void shard_log_group(struct eng_shard *s)
{
        struct eng_write *waiting = s->group_head;
        struct shard_group *g;
        int r = -ENOMEM;

        if (!s->group.count)
                return;
        s->group_head = s->group_tail = NULL;
        g = malloc(sizeof(*g));
        if (g) {
                *g = (struct shard_group){ .s = s, .head = waiting };
                g->ww.done = group_acked;
                g->ww.ctx = g;
                g->ww.writers = s->group_writers;
                r = eng_wal_append(s->wal, &g->ww, s->group_first_seq, s->group.buf,
                                   (uint32_t)s->group.len);
        }
        eng_batch_clear(&s->group);
        s->group_writers = 0;
        s->stats.log_records++;
        if (r == 0)
                return;         /* batch: group_acked answers the writes */
        free(g);
        if (r == 1)
                return;         /* periodic: they were answered already */
        /* Applied but not logged: the shard no longer matches its log. */
        shard_set_error(s, r, "commit-log append");
        if (waiting) {          /* answered from the loop, never inside a write */
                struct eng_write *last = waiting;

                while (last->next)
                        last = last->next;
                last->next = s->group_failed;
                s->group_failed = waiting;
                s->group_error = r;
                post_group_task(s);
        }
}

static void write_acked(struct eng_wal_write *ww, int res)
{
        struct eng_write *w = ww->ctx;

        if (res < 0 && res != -ENOSPC)
                shard_set_error(w->s, res, "commit-log write");
        w->done(w, res);
}

/* Logs a batch too big to group, on its own, after the group (seqs stay
 * in order). Returns 1 (periodic: acknowledged), 0 (w->done will run) or
 * <0 (nothing applied). */
static int log_alone(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint64_t first_seq,
                     struct eng_write *w)
{
        int r;

        shard_log_group(s);
        if (s->error)
                return s->error;
        w->ww.done = write_acked;
        w->ww.ctx = w;
        w->ww.writers = 1;
        r = eng_wal_append(s->wal, &w->ww, first_seq, payload, len);
        if (r < 0 && r != -E2BIG && r != -EINVAL)
                shard_set_error(s, r, "commit-log append");
        if (r >= 0)
                s->stats.log_records++;
        return r;
}

/* Adds a batch to the group. Returns 1 (periodic: acknowledged), 0 (w
 * waits for the group's record) or -ENOMEM (nothing applied). */
static int log_grouped(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint64_t first_seq,
                       struct eng_write *w)
{
        if (!s->group.count)
                s->group_first_seq = first_seq;
        if (eng_batch_append(&s->group, payload, len) < 0)
                return -ENOMEM;
        if (s->o.sync == ENG_WAL_SYNC_PERIODIC)
                return 1;
        w->next = NULL;
        if (s->group_tail)
                s->group_tail->next = w;
        else
                s->group_head = w;
        s->group_tail = w;
        s->group_writers++;
        return 0;
}

/*
 * A grouped write goes into the memtables only after its group is logged
 * (group_task, at the end of the loop iteration that submitted it), so
 * the inserts of a whole iteration run together, their skip-list searches
 * interleaved (shard_apply_batch, eng_memtable_put_many: ~0.8 -> ~0.45 us
 * per insert at 150k entries). In batch mode the log write is then on its
 * way to the disk already, so the inserts -- a write's costly part: cache
 * misses down the skip list -- overlap the write and the sync instead of
 * delaying them (with 64 writers in flight they took ~4 us each, ~0.25 ms
 * of every ~0.6 ms group commit cycle), and a write is never acknowledged
 * before its sync. In either mode a read, a scan, a flush, an
 * expiry or a read-modify-write applies what is pending first, so it sees
 * every write submitted before it, as before. Applies stay in seq order:
 * anything applied directly applies the pending writes first (a seal in
 * between would otherwise record a flushed seq above an unapplied write).
 */
void shard_apply_pending(struct eng_shard *s)
{
        int a;

        if (!s->unapplied.count)
                return;
        a = shard_apply_batch(s, s->unapplied.buf, (uint32_t)s->unapplied.len,
                              s->unapplied_first_seq, s->unapplied_segment);
        if (a < 0)      /* logged but not in memory: the shard no longer matches its log */
                shard_set_error(s, a, "memtable insert");
        eng_batch_clear(&s->unapplied);
        shard_maybe_flush(s);
}

/* Whether a grouped write waits in s->unapplied (0) or must be applied
 * now (-ENOMEM). */
static int defer_apply(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint64_t first_seq)
{
        if (!s->unapplied.count) {
                s->unapplied_first_seq = first_seq;
                /* Its record goes into this segment or a later one: the
                 * segment it ends up in may be gone before the memtable
                 * that takes it is flushed if a later one were named. */
                s->unapplied_segment = eng_wal_segment(s->wal);
        }
        return eng_batch_append(&s->unapplied, payload, len);
}

/* Logs and applies an encoded batch. Returns 1 (acknowledged), 0 (w->done
 * will run) or <0. */
static int submit(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint32_t count,
                  struct eng_write *w)
{
        uint64_t first_seq = s->last_seq + 1;
        int r, a;

        w->s = s;
        if (len > group_max(s))
                r = log_alone(s, payload, len, first_seq, w);
        else
                r = log_grouped(s, payload, len, first_seq, w);
        if (r < 0)
                return r;
        s->last_seq += count;
        if (len <= group_max(s) && s->unapplied.len < GROUP_MAX_BYTES &&
            defer_apply(s, payload, len, first_seq) == 0) {
                a = 0;
        } else {
                shard_apply_pending(s);
                a = shard_apply_batch(s, payload, len, first_seq, eng_wal_segment(s->wal));
        }
        if (a < 0)      /* logged but not in memory: the shard no longer matches its log */
                shard_set_error(s, a, "memtable insert");
        s->stats.writes++;
        s->stats.entries_written += count;
        if (s->group.len >= group_max(s))
                shard_log_group(s);
        if (s->group.count || s->unapplied.count)
                post_group_task(s);
        shard_maybe_flush(s);
        return r;
}

static int validate(const struct eng_mutation *m, uint32_t n)
{
        if (n == 0)
                return -EINVAL;
        for (uint32_t i = 0; i < n; i++) {
                if ((m[i].kind != ENG_MUT_PUT && m[i].kind != ENG_MUT_DEL) ||
                    !shard_key_ok(m[i].key_len) ||
                    (m[i].kind == ENG_MUT_PUT && m[i].value_len > ENG_MAX_VALUE_BYTES))
                        return -EINVAL;
        }
        return 0;
}

static int encode(struct eng_shard *s, const struct eng_mutation *m, uint32_t n)
{
        uint8_t small[256];

        eng_batch_clear(&s->scratch);
        for (uint32_t i = 0; i < n; i++) {
                uint8_t *ik;
                uint32_t klen;
                int r = shard_ikey(s, m[i].table, m[i].key, m[i].key_len, small, sizeof(small),
                                   &ik, &klen);

                if (r < 0)
                        return r;
                struct eng_tablet *t = shard_tablet_of_ikey(s, ik, klen);

                if (!t || t->moved_out) {
                        r = -SCREE_EMOVED;      /* another shard's key now (shard_move.h) */
                } else {
                        struct eng_entry e = {
                                .key = ik, .key_len = klen,
                                .kind = m[i].kind == ENG_MUT_PUT ? ENG_ENTRY_VALUE : ENG_ENTRY_TOMBSTONE,
                        };

                        if (m[i].kind == ENG_MUT_PUT) {
                                e.value = m[i].value;
                                e.value_len = m[i].value_len;
                                e.expiry_ms = m[i].expiry_ms;
                        }
                        r = eng_batch_add(&s->scratch, &e);
                }
                if (ik != small)
                        free(ik);
                if (r < 0)
                        return r;
                s->stats.user_bytes += m[i].key_len + (m[i].kind == ENG_MUT_PUT ? m[i].value_len : 0);
        }
        return 0;
}

int shard_encode(struct eng_shard *s, const struct eng_mutation *m, uint32_t n)
{
        int r = validate(m, n);

        return r < 0 ? r : encode(s, m, n);
}

/* Keeps w's batch (w->stalled, or a copy of the scratch) until memory
 * allows it in, its keys held meanwhile. Returns 0, or -ENOMEM (w holds
 * nothing). */
static int stall(struct eng_shard *s, struct eng_write *w)
{
        int r;

        if (!w->stalled) {
                w->stalled = malloc(s->scratch.len);
                if (!w->stalled) {
                        shard_release_write(s, w);
                        return -ENOMEM;
                }
                memcpy(w->stalled, s->scratch.buf, s->scratch.len);
                w->stalled_len = (uint32_t)s->scratch.len;
                w->stalled_count = s->scratch.count;
        }
        /* Its keys are free (the caller checked), so it heads their FIFOs
         * at once: later operations on them wait until it is in. */
        if (!w->n_nodes && (r = shard_hold_batch(s, w, w->stalled, w->stalled_len)) != 0) {
                free(w->stalled);
                w->stalled = NULL;
                shard_release_write(s, w);
                return r < 0 ? r : -EINVAL;
        }
        w->stall_start_ns = time_now_ns();
        w->next = NULL;
        if (s->stall_tail)
                s->stall_tail->next = w;
        else
                s->stall_head = w;
        s->stall_tail = w;
        s->stats.stalls++;
        shard_maybe_flush(s);
        return 0;
}

/* Writes w's batch (w->stalled, or the scratch when NULL) now, or stalls
 * it. Returns as eng_shard_write; w leaves its keys' FIFOs once its
 * entries are in, or it failed. */
bool shard_batch_moved(struct eng_shard *s, const uint8_t *payload, uint32_t len,
                       const struct eng_tablet *only)
{
        struct eng_batch_iter it;
        struct eng_entry e;

        if (eng_batch_iter_init(&it, payload, len, 0) < 0)
                return false;
        while (eng_batch_iter_next(&it, &e) == 1) {
                struct eng_tablet *t;

                if (e.key_len < ENG_TABLE_ID_BYTES)
                        continue;
                t = shard_tablet_of_ikey(s, e.key, e.key_len);
                if (only ? t == only : (!t ? shard_route_of(s, be32_get(e.key)) != NULL
                                           : t->moved_out))
                        return true;
        }
        return false;
}

static int write_now(struct eng_shard *s, struct eng_write *w)
{
        int r;

        if (w->stalled && shard_batch_moved(s, w->stalled, w->stalled_len, NULL)) {
                /* It waited (behind an operation on its keys, or for
                 * memory) while a tablet of its keys moved away: routed
                 * when called, it must be routed again (shard_move.h). */
                r = -SCREE_EMOVED;
        } else if (eng_wal_is_full(s->wal)) {
                r = -ENOSPC;    /* fail fast: the log cannot take it until space returns */
        } else if (s->stall_head || shard_stalled(s)) {
                if (!eng_shard_is_full(s))
                        return stall(s, w);
                r = -ENOSPC;    /* flushing cannot free memory until space returns */
        } else if (w->stalled) {
                r = submit(s, w->stalled, w->stalled_len, w->stalled_count, w);
        } else {
                r = submit(s, s->scratch.buf, (uint32_t)s->scratch.len, s->scratch.count, w);
        }
        free(w->stalled);
        w->stalled = NULL;
        shard_release_write(s, w);
        return r;
}

/* A write that waited behind an earlier operation on one of its keys
 * heads all of their FIFOs now (from the order task). */
static void write_woken(struct eng_keyq_op *op)
{
        struct eng_write *w = container_of(op, struct eng_write, qop);
        struct eng_shard *s = w->s;
        int r;

        if (s->error || s->closing) {
                r = s->error ? s->error : -SCREE_ESHUTDOWN;
                free(w->stalled);
                w->stalled = NULL;
                shard_release_write(s, w);
        } else {
                r = write_now(s, w);
        }
        if (r != 0)     /* acknowledged now (periodic) or failed: tell the writer */
                w->done(w, r > 0 ? 0 : r);
}

/* Copies the scratch batch into w and has it wait behind the operations
 * in flight on its keys. Returns 0 (write_woken goes on) or <0. */
static int write_wait(struct eng_shard *s, struct eng_write *w)
{
        int r;

        w->stalled = malloc(s->scratch.len);
        if (!w->stalled)
                return -ENOMEM;
        memcpy(w->stalled, s->scratch.buf, s->scratch.len);
        w->stalled_len = (uint32_t)s->scratch.len;
        w->stalled_count = s->scratch.count;
        r = shard_hold_batch(s, w, w->stalled, w->stalled_len);
        if (r > 0)
                return 0;
        if (r == 0)             /* its keys came free meanwhile: cannot happen, but */
                return write_now(s, w);
        free(w->stalled);
        w->stalled = NULL;
        return r;
}

/* rated: count the write against the rate limits (a read-modify-write's
 * counted at its call). */
static int write_common(struct eng_shard *s, const struct eng_mutation *m, uint32_t n,
                        struct eng_write *w, struct eng_keyq_node *held, bool rated)
{
        uint32_t sec;
        int r;

        w->s = s;
        w->stalled = NULL;
        w->nodes = held;
        w->n_nodes = held ? 1 : 0;
        w->nodes_owned = false;
        w->qop = (struct eng_keyq_op){ .run = write_woken };
        if (s->error)
                r = s->error;
        else if (s->closing)
                r = -SCREE_ESHUTDOWN;
        else if ((r = validate(m, n)) == 0)
                r = encode(s, m, n);
        if (r == 0 && rated)
                r = shard_rl_write(s, s->scratch.buf, (uint32_t)s->scratch.len, &sec);
        if (r < 0) {
                shard_release_write(s, w);
                return r;
        }
        if (!held && shard_batch_busy(s, s->scratch.buf, (uint32_t)s->scratch.len))
                return write_wait(s, w);
        return write_now(s, w);
}

int eng_shard_write(struct eng_shard *s, const struct eng_mutation *m, uint32_t n,
                    struct eng_write *w)
{
        return write_common(s, m, n, w, NULL, true);
}

int shard_write_held(struct eng_shard *s, const struct eng_mutation *m, struct eng_write *w,
                     struct eng_keyq_node *held)
{
        return write_common(s, m, 1, w, held, false);
}

void shard_unstall(struct eng_shard *s)
{
        while (s->stall_head && (s->error || eng_shard_is_full(s) || !shard_stalled(s))) {
                struct eng_write *w = s->stall_head;
                int r;

                s->stall_head = w->next;
                if (!s->stall_head)
                        s->stall_tail = NULL;
                s->stats.stall_ns += time_now_ns() - w->stall_start_ns;
                if (s->error)
                        r = s->error;
                else if (shard_stalled(s) || eng_wal_is_full(s->wal))
                        r = -ENOSPC;
                else if (shard_batch_moved(s, w->stalled, w->stalled_len, NULL))
                        r = -SCREE_EMOVED;      /* as in write_now */
                else
                        r = submit(s, w->stalled, w->stalled_len, w->stalled_count, w);
                free(w->stalled);
                w->stalled = NULL;
                shard_release_write(s, w);
                if (r != 0)     /* acknowledged now (periodic) or failed: tell the writer */
                        w->done(w, r > 0 ? 0 : r);
        }
}
