/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the merge tests (test_merge_iter.c, test_merge_reverse.c): a
 * "world" of children -- memtables, SSTables on real files and fake
 * children (fake_child.h) -- over versions of the model (model.h), and the
 * model of all of them, with the loop, fs and block cache they run on.
 * Each test file makes its world its own way (world_make) and frees it
 * with world_free. Header-only; tests only; one world per test process
 * (Criterion forks per test).
 */
#ifndef SCREE_TESTS_ENGINE_MERGE_WORLD_H
#define SCREE_TESTS_ENGINE_MERGE_WORLD_H

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/merge_iter.h"
#include "engine/sst_io.h"
#include "tests/engine/fake_child.h"
#include "tests/engine/helpers.h"
#include "tests/engine/model.h"
#include "tests/tmpdir.h"

enum {
        MAX_CHILDREN = 8,
};

enum child_kind {
        CHILD_MEMTABLE,
        CHILD_SST,
        CHILD_FAKE,
};

static char dir[PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_block_cache *cache;
static uint64_t next_file_id = 1;

struct child {
        enum child_kind kind;
        struct mver *v;
        size_t n;
        struct eng_memtable *mt;
        struct eng_sst_table *t;
        uint64_t file_id;
};

static struct {
        struct child c[MAX_CHILDREN];
        unsigned n_children;
        struct mver *all;
        size_t n;
        size_t *want;                   /* model_view's output */
} w;

/* Loads child c from its versions (an empty table becomes a memtable: a
 * table is never empty). */
static inline void child_load(struct child *c)
{
        uint8_t *buf;

        if (c->kind == CHILD_SST && c->n) {
                c->file_id = next_file_id++;
                c->t = model_sst_make(loop, fs, cache, dir, c->file_id, c->v, c->n);
                return;
        }
        if (c->kind == CHILD_FAKE)
                return;
        c->kind = CHILD_MEMTABLE;
        c->mt = eng_memtable_new(NULL);
        cr_assert(not(eq(ptr, c->mt, NULL)));
        buf = malloc(MODEL_MAX_VALUE);
        for (size_t i = 0; i < c->n; i++) {
                struct eng_entry e;

                mver_entry(&c->v[i], buf, &e);
                cr_assert(eq(int, eng_memtable_put(c->mt, &e), 0));
        }
        free(buf);
}

static inline void world_free(void)
{
        for (unsigned i = 0; i < w.n_children; i++) {
                eng_memtable_unref(w.c[i].mt);
                eng_sst_table_unref(w.c[i].t);
                if (w.c[i].t)
                        eng_block_cache_erase_file(cache, w.c[i].file_id);
                free(w.c[i].v);
        }
        free(w.all);
        free(w.want);
        memset(&w, 0, sizeof(w));
}

/* Drops every cached block of the world's tables, so reads go to disk
 * (blocks pinned now go at their release). */
static inline void cold_cache(void)
{
        for (unsigned i = 0; i < w.n_children; i++)
                if (w.c[i].t)
                        eng_block_cache_erase_file(cache, w.c[i].file_id);
}

/* A merge with opts o over every child of the world. */
static inline struct eng_merge_iter *merge_make(const struct eng_merge_opts *o, bool async_fakes)
{
        struct eng_merge_iter *m;

        cr_assert(eq(int, eng_merge_iter_new(o, &m), 0));
        for (unsigned i = 0; i < w.n_children; i++) {
                struct child *c = &w.c[i];

                if (c->kind == CHILD_MEMTABLE)
                        cr_assert(eq(int, eng_merge_iter_add_memtable(m, c->mt), 0));
                else if (c->kind == CHILD_SST)
                        cr_assert(eq(int, eng_merge_iter_add_sst(m, c->t), 0));
                else
                        fake_add(loop, m, c->v, c->n, async_fakes, 0);
        }
        return m;
}

#endif
