/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A model of a tablet's versions for the merge and compaction tests: keys
 * from a fixed table (the empty key and "k1".."k159", so prefixes and
 * byte order matter), versions with unique seqs, tombstones and expiry
 * times around MODEL_NOW_MS, values whose bytes follow from their seq.
 * Random version lists, what each merge view must yield from them (the
 * reference), writing a list as an SSTable and opening it, and checking
 * an entry against its version. Header-only; for tests only.
 */
#ifndef SCREE_TESTS_ENGINE_MODEL_H
#define SCREE_TESTS_ENGINE_MODEL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/compiler.h"
#include "engine/key.h"
#include "engine/merge_iter.h"
#include "engine/sst_io.h"

enum {
        MODEL_KEYS = 160,
        MODEL_MAX_VALUE = 6000,
};

#define MODEL_NOW_MS UINT64_C(1700000000000)

struct mver {
        uint32_t key;                   /* index in model_keys */
        uint64_t seq;
        uint64_t expiry_ms;
        enum eng_entry_kind kind;
        uint32_t value_len;
};

static char model_keys[MODEL_KEYS][8];
static uint32_t model_key_lens[MODEL_KEYS];

static inline void model_keys_init(void)
{
        for (uint32_t i = 0; i < MODEL_KEYS; i++)
                model_key_lens[i] = i ? (uint32_t)snprintf(model_keys[i], 8, "k%u", i) : 0;
}

static inline uint64_t model_rand(uint64_t *s)
{
        uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

        z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
        return z ^ (z >> 31);
}

static inline int model_key_cmp(uint32_t key, const void *k, size_t len)
{
        return eng_key_cmp(model_keys[key], model_key_lens[key], k, len);
}

/* qsort order of versions: the engine's. */
static inline int mver_cmp(const void *a, const void *b)
{
        const struct mver *x = a, *y = b;

        return eng_version_cmp(model_keys[x->key], model_key_lens[x->key], x->seq,
                               model_keys[y->key], model_key_lens[y->key], y->seq);
}

static inline uint8_t model_value_byte(uint64_t seq, uint32_t j)
{
        return (uint8_t)(seq * 131 + j * 7);
}

/* v as an entry; the value is written into buf (MODEL_MAX_VALUE bytes). */
static inline void mver_entry(const struct mver *v, uint8_t *buf, struct eng_entry *ret)
{
        for (uint32_t j = 0; j < v->value_len; j++)
                buf[j] = model_value_byte(v->seq, j);
        *ret = (struct eng_entry){ .key = (const uint8_t *)model_keys[v->key],
                                   .key_len = model_key_lens[v->key], .value = buf,
                                   .value_len = v->value_len, .seq = v->seq,
                                   .expiry_ms = v->expiry_ms, .kind = v->kind };
}

static inline void expect_mver(const struct eng_entry *e, const struct mver *v)
{
        cr_assert(eq(u32, e->key_len, model_key_lens[v->key]), "seq %lu", (unsigned long)v->seq);
        cr_assert(eq(int, model_key_cmp(v->key, e->key, e->key_len), 0), "key of seq %lu",
                  (unsigned long)v->seq);
        cr_assert(eq(u64, e->seq, v->seq), "key %s", model_keys[v->key]);
        cr_assert(eq(int, (int)e->kind, (int)v->kind), "seq %lu", (unsigned long)v->seq);
        cr_assert(eq(u64, e->expiry_ms, v->expiry_ms), "seq %lu", (unsigned long)v->seq);
        cr_assert(eq(u32, e->value_len, v->value_len), "seq %lu", (unsigned long)v->seq);
        for (uint32_t j = 0; j < v->value_len; j++)
                cr_assert(eq(u8, e->value[j], model_value_byte(v->seq, j)), "seq %lu byte %u",
                          (unsigned long)v->seq, j);
}

static inline bool mver_dead(const struct mver *v, uint64_t now_ms)
{
        return v->kind == ENG_ENTRY_TOMBSTONE || (v->expiry_ms && v->expiry_ms <= now_ms);
}

/*
 * n random versions with the given seqs (unique): keys skewed so that a
 * few keys get many versions, ~1 in 5 a tombstone, ~1 in 5 values with
 * an expiry (past, exactly MODEL_NOW_MS, or future), ~1 in 40 values of
 * a few KB. Sorted in the engine's order.
 */
static inline void model_gen(uint64_t *rng, const uint64_t *seqs, size_t n, struct mver *out)
{
        for (size_t i = 0; i < n; i++) {
                uint64_t r = model_rand(rng);
                struct mver *v = &out[i];

                *v = (struct mver){ .seq = seqs[i], .kind = ENG_ENTRY_VALUE };
                v->key = (uint32_t)(r % 3 == 0 ? r / 3 % 12 : r / 3 % MODEL_KEYS);
                r = model_rand(rng);
                if (r % 5 == 0) {
                        v->kind = ENG_ENTRY_TOMBSTONE;
                        continue;
                }
                if (r / 5 % 5 == 0)
                        v->expiry_ms = MODEL_NOW_MS - 500 + r / 25 % 1001;
                v->value_len = (uint32_t)(r / 25000 % 40 == 0 ? 2000 + r % 4000 : r % 200);
        }
        qsort(out, n, sizeof(*out), mver_cmp);
}

/* Seqs 1..n in random order. Caller frees. */
static inline uint64_t *model_shuffled_seqs(uint64_t *rng, size_t n)
{
        uint64_t *s = malloc((n ? n : 1) * sizeof(*s));

        cr_assert(not(eq(ptr, s, NULL)));
        for (size_t i = 0; i < n; i++)
                s[i] = i + 1;
        for (size_t i = n; i > 1; i--) {
                size_t j = (size_t)(model_rand(rng) % i), t = s[i - 1];

                s[i - 1] = s[j];
                s[j] = t;
        }
        return s;
}

/*
 * What a merge with options o yields from all (n versions, sorted): their
 * indexes into out (n slots), the count returned, and the counters the
 * merge keeps over a full scan in *st.
 */
static inline size_t model_view(const struct mver *all, size_t n, const struct eng_merge_opts *o,
                                size_t *out, struct eng_merge_stats *st)
{
        size_t k = 0;

        *st = (struct eng_merge_stats){ 0 };
        for (size_t i = 0; i < n; i++) {
                const struct mver *v = &all[i];
                bool newest = i == 0 || all[i - 1].key != v->key;

                if (o->end_key && model_key_cmp(v->key, o->end_key, o->end_len) >= 0)
                        break;
                if (o->view != ENG_MERGE_RAW) {
                        if (!newest) {
                                st->shadowed++;
                                continue;
                        }
                        if (mver_dead(v, o->now_ms) &&
                            (o->view == ENG_MERGE_USER || o->bottommost)) {
                                if (v->kind == ENG_ENTRY_TOMBSTONE)
                                        st->tombstones++;
                                else
                                        st->expired++;
                                continue;
                        }
                }
                out[k++] = i;
        }
        st->entries = k;
        return k;
}

/* ---- SSTables of versions ---- */

struct model_src {
        struct eng_sst_source s;
        const struct mver *v;
        size_t n, i;
        uint8_t buf[MODEL_MAX_VALUE];
};

static inline int model_src_next(struct eng_sst_source *s, struct eng_entry *ret)
{
        struct model_src *x = container_of(s, struct model_src, s);

        if (x->i == x->n)
                return 0;
        mver_entry(&x->v[x->i++], x->buf, ret);
        return 1;
}

struct model_wait {
        bool done;
        int res;
        struct eng_sst_table *t;
};

static inline void model_on_write(struct eng_sst_write *w, int res, void *arg)
{
        struct model_wait *mw = arg;

        (void)w;
        mw->done = true;
        mw->res = res;
}

static inline void model_on_open(void *arg, int res, struct eng_sst_table *t)
{
        struct model_wait *mw = arg;

        mw->done = true;
        mw->res = res;
        mw->t = t;
}

/* The path of file id in dir (PATH_MAX + 32 bytes). */
static inline void model_sst_path(char *buf, const char *dir, uint64_t id)
{
        snprintf(buf, PATH_MAX + 32, "%s/%016llx.sst", dir, (unsigned long long)id);
}

/* Writes v[0..n) (sorted, n > 0) as table `id` in dir and opens it. */
static inline struct eng_sst_table *model_sst_make(struct rx_loop *loop, struct eng_fs *fs,
                                                   struct eng_block_cache *cache, const char *dir,
                                                   uint64_t id, const struct mver *v, size_t n)
{
        static struct model_src x;
        char path[PATH_MAX + 32];
        struct eng_sst_write_opts o = { .path = path, .table = { .file_id = id } };
        struct model_wait mw = { 0 };
        struct eng_sst_write *w;
        uint64_t size;

        model_sst_path(path, dir, id);
        x = (struct model_src){ .s = { .next = model_src_next }, .v = v, .n = n };
        cr_assert(eq(int, eng_sst_write_start(fs, &o, &x.s, model_on_write, &mw, &w), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mw.done), 0));
        cr_assert(eq(int, mw.res, 0));
        size = eng_sst_write_file_size(w);
        eng_sst_write_free(w);
        mw = (struct model_wait){ 0 };
        cr_assert(eq(int, eng_sst_table_open(fs, cache, path, id, size, model_on_open, &mw), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mw.done), 0));
        cr_assert(eq(int, mw.res, 0));
        return mw.t;
}

#endif
