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
        return &s->stats;
}

int shard_apply_batch(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint64_t first_seq,
                      uint64_t segment)
{
        struct eng_batch_iter it;
        struct eng_entry e;
        int applied = 0, r = eng_batch_iter_init(&it, payload, len, first_seq);

        while (r == 0 && (r = eng_batch_iter_next(&it, &e)) == 1) {
                struct eng_tablet_loc loc;

                if (e.key_len < ENG_TABLE_ID_BYTES) {
                        r = -SCREE_ECORRUPT;
                        break;
                }
                loc = eng_tablet_of_ikey(&s->map, e.key, e.key_len);
                if (loc.shard != s->o.shard) {
                        r = -SCREE_ECORRUPT;
                        break;
                }
                struct eng_tablet *t = &s->tablets[loc.local];

                if (e.seq <= t->flushed_seq) {
                        r = 0;
                        continue;
                }
                r = eng_memtable_put(t->active, &e);
                if (r < 0)
                        break;
                /* What the entry costs, not what the arena reserved: the
                 * arena grows in large blocks, which would make the budget
                 * move in jumps. */
                size_t grown = (size_t)e.key_len + e.value_len + SHARD_ENTRY_OVERHEAD;

                t->active_bytes += grown;
                s->active_bytes += grown;
                if (!t->active_first_segment)
                        t->active_first_segment = segment;
                t->gen++;
                applied++;
                r = 0;
        }
        return r < 0 ? r : applied;
}

static void write_acked(struct eng_wal_write *ww, int res)
{
        struct eng_write *w = ww->ctx;

        if (res < 0)
                shard_set_error(w->s, res, "commit-log write");
        w->done(w, res);
}

/* Logs and applies an encoded batch. Returns 1 (acknowledged), 0 (w->done
 * will run) or <0. */
static int submit(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint32_t count,
                  struct eng_write *w)
{
        uint64_t first_seq = s->last_seq + 1;
        int r, a;

        w->ww.done = write_acked;
        w->ww.ctx = w;
        w->s = s;
        r = eng_wal_append(s->wal, &w->ww, first_seq, payload, len);
        if (r < 0) {
                if (r != -E2BIG && r != -EINVAL)
                        shard_set_error(s, r, "commit-log append");
                return r;
        }
        s->last_seq += count;
        a = shard_apply_batch(s, payload, len, first_seq, eng_wal_segment(s->wal));
        if (a < 0)      /* logged but not in memory: the shard no longer matches its log */
                shard_set_error(s, a, "memtable insert");
        s->stats.writes++;
        s->stats.entries_written += count;
        shard_maybe_flush(s);
        return r;
}

static int validate(const struct eng_mutation *m, uint32_t n)
{
        if (n == 0)
                return -EINVAL;
        for (uint32_t i = 0; i < n; i++) {
                if ((m[i].kind != ENG_MUT_PUT && m[i].kind != ENG_MUT_DEL) ||
                    !shard_key_ok(m[i].table, m[i].key_len) ||
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
                size_t klen = eng_ikey_size(m[i].table, m[i].key_len);
                uint8_t *ik = klen <= sizeof(small) ? small : malloc(klen);
                int r;

                if (!ik)
                        return -ENOMEM;
                eng_ikey_encode(m[i].table, m[i].key, m[i].key_len, ik);
                if (eng_tablet_of_ikey(&s->map, ik, klen).shard != s->o.shard) {
                        r = -EINVAL;    /* not this shard's key */
                } else {
                        struct eng_entry e = {
                                .key = ik, .key_len = (uint32_t)klen,
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

/* Keeps the encoded batch until memory allows it in. */
static int stall(struct eng_shard *s, struct eng_write *w)
{
        w->stalled = malloc(s->scratch.len);
        if (!w->stalled)
                return -ENOMEM;
        memcpy(w->stalled, s->scratch.buf, s->scratch.len);
        w->stalled_len = (uint32_t)s->scratch.len;
        w->stalled_count = s->scratch.count;
        w->stall_start_ns = time_now_ns();
        w->s = s;
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

int eng_shard_write(struct eng_shard *s, const struct eng_mutation *m, uint32_t n,
                    struct eng_write *w)
{
        int r;

        if (s->error)
                return s->error;
        if (s->closing)
                return -SCREE_ESHUTDOWN;
        r = validate(m, n);
        if (r == 0)
                r = encode(s, m, n);
        if (r < 0)
                return r;
        if (s->stall_head || shard_stalled(s)) {
                if (s->flush_error == -ENOSPC)
                        return -ENOSPC; /* flushing cannot free memory until space returns */
                return stall(s, w);
        }
        return submit(s, s->scratch.buf, (uint32_t)s->scratch.len, s->scratch.count, w);
}

void shard_unstall(struct eng_shard *s)
{
        while (s->stall_head &&
               (s->error || s->flush_error == -ENOSPC || !shard_stalled(s))) {
                struct eng_write *w = s->stall_head;
                int r;

                s->stall_head = w->next;
                if (!s->stall_head)
                        s->stall_tail = NULL;
                s->stats.stall_ns += time_now_ns() - w->stall_start_ns;
                if (s->error)
                        r = s->error;
                else if (shard_stalled(s))
                        r = -ENOSPC;
                else
                        r = submit(s, w->stalled, w->stalled_len, w->stalled_count, w);
                free(w->stalled);
                w->stalled = NULL;
                if (r != 0)     /* acknowledged now (periodic) or failed: tell the writer */
                        w->done(w, r > 0 ? 0 : r);
        }
}
