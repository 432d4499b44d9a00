/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A moving tablet's cache entries, copied out of the source's block cache
 * and into the target's (see shard_warm.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/block_cache.h"
#include "engine/shard_internal.h"
#include "engine/shard_warm.h"

/* What a copy or fill step moves at most: well under a millisecond. */
#define WARM_STEP_BYTES (1u << 20)
/* What the source copies at most: half its cache, at most WARM_MAX_BYTES
 * and WARM_MAX_ENTRIES entries, for at most WARM_COPY_NS (the cut waits
 * for the copy). */
#define WARM_MAX_BYTES (UINT64_C(256) << 20)
#define WARM_MAX_ENTRIES (1u << 16)
#define WARM_COPY_NS (NS_PER_SEC)

struct warm_entry {
        uint64_t file_id, key;          /* key: a block's offset, or a row's (ENG_CACHE_ROW_BIT) */
        uint32_t len, content_off, content_len;
        uint64_t at;                    /* in buf */
};

struct eng_warm {
        /* the source's plan: entries still to look up */
        uint64_t *plan_file, *plan_key;
        uint32_t n_plan, next_plan;
        uint64_t planned_ns;
        /* what was copied */
        struct warm_entry *e;
        uint32_t n, cap;
        uint8_t *buf;
        uint64_t used, buf_cap, budget;
        /* the target's progress */
        struct eng_shard *s;
        struct rx_task task;
        uint32_t next, filled;
        uint64_t file_ok;               /* the last file found still named (0: none yet) */
};

void eng_warm_free(struct eng_warm *w)
{
        if (!w)
                return;
        free(w->plan_file);
        free(w->plan_key);
        free(w->e);
        free(w->buf);
        free(w);
}

uint64_t eng_warm_bytes(const struct eng_warm *w)
{
        return w ? w->used : 0;
}

struct eng_warm *shard_warm_plan(struct eng_shard *s, const struct eng_tablet *t)
{
        struct eng_warm *w;
        uint32_t n = 0;

        for (uint32_t i = 0; t->tset && i < t->tset->n && n < WARM_MAX_ENTRIES; i++)
                n += eng_block_cache_file_keys(s->cache, t->tset->e[i].meta.file_id, NULL,
                                               WARM_MAX_ENTRIES - n);
        if (!n || !(w = calloc(1, sizeof(*w))))
                return NULL;
        w->plan_file = malloc(n * sizeof(*w->plan_file));
        w->plan_key = malloc(n * sizeof(*w->plan_key));
        if (!w->plan_file || !w->plan_key) {
                eng_warm_free(w);
                return NULL;
        }
        for (uint32_t i = 0; i < t->tset->n && w->n_plan < n; i++) {
                uint64_t id = t->tset->e[i].meta.file_id;
                uint32_t k = eng_block_cache_file_keys(s->cache, id, w->plan_key + w->n_plan,
                                                       n - w->n_plan);

                for (uint32_t j = 0; j < k; j++)
                        w->plan_file[w->n_plan + j] = id;
                w->n_plan += k;
        }
        w->budget = eng_block_cache_capacity(s->cache) / 2;
        if (w->budget > WARM_MAX_BYTES)
                w->budget = WARM_MAX_BYTES;
        w->planned_ns = time_now_ns();
        return w;
}

/* Room for one more entry of len bytes, within the budget. */
static bool room_for(struct eng_warm *w, uint32_t len)
{
        if (w->used + len > w->budget)
                return false;
        if (w->n == w->cap) {
                uint32_t cap = w->cap ? 2 * w->cap : 256;
                struct warm_entry *e = realloc(w->e, cap * sizeof(*e));

                if (!e)
                        return false;
                w->e = e;
                w->cap = cap;
        }
        if (w->used + len > w->buf_cap) {
                uint64_t cap = w->buf_cap ? 2 * w->buf_cap : WARM_STEP_BYTES;
                uint8_t *b;

                while (cap < w->used + len)
                        cap *= 2;
                if (!(b = realloc(w->buf, cap)))
                        return false;
                w->buf = b;
                w->buf_cap = cap;
        }
        return true;
}

bool shard_warm_copy(struct eng_shard *s, struct eng_warm *w)
{
        uint64_t step = 0;

        if (time_now_ns() - w->planned_ns > WARM_COPY_NS)
                w->next_plan = w->n_plan;       /* what was copied goes */
        while (w->next_plan < w->n_plan && step < WARM_STEP_BYTES) {
                uint32_t i = w->next_plan++;
                const struct eng_cached_block *b =
                        eng_block_cache_peek(s->cache, w->plan_file[i], w->plan_key[i]);

                if (!b)
                        continue;               /* evicted since */
                if (!room_for(w, b->len)) {
                        w->next_plan = w->n_plan;
                        break;
                }
                w->e[w->n++] = (struct warm_entry){
                        .file_id = w->plan_file[i], .key = w->plan_key[i], .len = b->len,
                        .content_off = (uint32_t)(b->content - b->data),
                        .content_len = b->content_len, .at = w->used };
                memcpy(w->buf + w->used, b->data, b->len);
                w->used += b->len;
                step += b->len;
        }
        return w->next_plan == w->n_plan;
}

void shard_warm_keep(struct eng_warm *w, const struct eng_manifest_table *files, uint32_t n)
{
        uint32_t kept = 0;

        for (uint32_t i = 0; w && i < w->n; i++) {
                bool handed = false;

                for (uint32_t k = 0; k < n && !handed; k++)
                        handed = files[k].file_id == w->e[i].file_id;
                if (handed)
                        w->e[kept++] = w->e[i];
        }
        if (w)
                w->n = kept;
}

/* Puts entry e in s's cache, unless it is there (left as it is). */
static void fill_one(struct eng_shard *s, const struct eng_warm *w, const struct warm_entry *e)
{
        struct eng_cached_block *b;
        uint8_t *d;

        if (eng_block_cache_peek(s->cache, e->file_id, e->key))
                return;
        if (e->key & ENG_CACHE_ROW_BIT) {
                struct eng_cache_part part = { .bytes = w->buf + e->at, .len = e->len };

                b = eng_block_cache_put_row(s->cache, e->file_id, e->key, &part, 1);
        } else {
                if (!(d = eng_block_cache_alloc_data(s->cache, e->len)))
                        return;
                memcpy(d, w->buf + e->at, e->len);
                b = eng_block_cache_put(s->cache, e->file_id, e->key, d, e->len,
                                        d + e->content_off, e->content_len);
        }
        eng_block_cache_release(s->cache, b);
}

static void fill_step(struct rx_loop *loop, struct rx_task *task)
{
        struct eng_warm *w = container_of(task, struct eng_warm, task);
        struct eng_shard *s = w->s;
        uint64_t step = 0;

        /* The coldest first, so that the hottest end up the most recent;
         * a file is looked up again each step (one compacted away
         * meanwhile was erased from the cache: not put back). */
        w->file_ok = 0;
        while (w->next < w->n && step < WARM_STEP_BYTES && !s->closing && !s->error) {
                const struct warm_entry *e = &w->e[w->n - 1 - w->next++];

                if (e->file_id != w->file_ok) {
                        if (!shard_file_named(s, e->file_id))
                                continue;       /* compacted away meanwhile */
                        w->file_ok = e->file_id;
                }
                fill_one(s, w, e);
                w->filled++;
                step += e->len;
        }
        if (w->next < w->n && !s->closing && !s->error) {
                rx_loop_post(loop, &w->task);
                return;
        }
        log_info("shard %u: %u cache entries (%.1f MiB) of a tablet moved here put in its cache",
                 s->o.shard, w->filled, (double)w->used / (1 << 20));
        eng_warm_free(w);
        shard_job_done(s);
}

void shard_warm_fill(struct eng_shard *s, struct eng_warm *w)
{
        if (!w)
                return;
        if (!w->n || s->closing) {
                eng_warm_free(w);
                return;
        }
        w->s = s;
        w->task = (struct rx_task){ .fn = fill_step, .name = "engine:cache warm" };
        s->busy++;
        rx_loop_post(s->loop, &w->task);
}
