/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the manifest tests: comparing two manifest states field by
 * field (tables in order) and a small sample state. Header-only; tests only.
 */
#ifndef SCREE_TESTS_ENGINE_MANIFEST_HELPERS_H
#define SCREE_TESTS_ENGINE_MANIFEST_HELPERS_H

#include <stdbool.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/manifest_format.h"

static inline bool manifest_table_is_equal(const struct eng_manifest_table *a,
                                           const struct eng_manifest_table *b)
{
        return a->tablet == b->tablet && a->file_id == b->file_id && a->file_size == b->file_size &&
               a->min_seq == b->min_seq && a->max_seq == b->max_seq;
}

static inline bool manifest_state_is_equal(const struct eng_manifest_state *a,
                                           const struct eng_manifest_state *b)
{
        if (a->layout.shard != b->layout.shard || a->layout.n_shards != b->layout.n_shards ||
            a->layout.tablets_per_shard != b->layout.tablets_per_shard ||
            a->next_file_id != b->next_file_id || a->log_segment != b->log_segment ||
            a->n_tablets != b->n_tablets || a->n_tables != b->n_tables)
                return false;
        if (a->n_tablets && memcmp(a->flushed_seq, b->flushed_seq, a->n_tablets * sizeof(uint64_t)) != 0)
                return false;
        for (size_t i = 0; i < a->n_tables; i++)
                if (!manifest_table_is_equal(&a->tables[i], &b->tables[i]))
                        return false;
        return true;
}

/* A state of shard 2 of 4 with 3 tablets and 3 tables; fini it after. */
static inline void manifest_sample_state(struct eng_manifest_state *s)
{
        static const struct eng_manifest_table t[] = {
                { .tablet = 0, .file_id = 3, .file_size = 4096, .min_seq = 1, .max_seq = 90 },
                { .tablet = 2, .file_id = 5, .file_size = 81920, .min_seq = 7, .max_seq = 7 },
                { .tablet = 0, .file_id = 8, .file_size = 12288, .min_seq = 91, .max_seq = 200 },
        };
        struct eng_manifest_layout layout = { .shard = 2, .n_shards = 4, .tablets_per_shard = 3 };

        cr_assert(eq(int, eng_manifest_state_init(s, &layout, 3), 0));
        s->next_file_id = 9;
        s->log_segment = 17;
        s->flushed_seq[0] = 200;
        s->flushed_seq[2] = 7;
        s->tables = malloc(sizeof(t));
        cr_assert(not(eq(ptr, s->tables, NULL)));
        memcpy(s->tables, t, sizeof(t));
        s->n_tables = 3;
}

#endif
