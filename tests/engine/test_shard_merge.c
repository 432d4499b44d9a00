/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Neighbouring tablets merged by the catalog (eng_catalog_merge_tablets)
 * while their shard runs (shard_merge.c): the merged tablet takes its
 * members' SSTables (interleaved seq ranges, no shared key), memtables
 * and flushed seq; every row reads back before and after its flushes,
 * compactions and a restart -- and after a crash before the manifest
 * heard of the merge. Members that lag each other's flushes are sealed
 * first (-EBUSY meanwhile). A random mix of writes, deletes, flushes,
 * splits, merges and restarts checks every read after each step.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/shard_internal.h"
#include "tests/engine/shard_catalog_helpers.h"
#include "tests/engine/shard_helpers.h"
#include "tests/engine/shard_rows_helpers.h"

TestSuite(shard_merge, .init = setup, .fini = teardown);

/* cat with tablet first merged with the next one; the merged tablet's id. */
static uint32_t merge_at(uint32_t first)
{
        struct eng_catalog *next;
        uint32_t id;
        char err[256];

        cr_assert(eq(int, eng_catalog_merge_tablets(cat, first, &next, &id, err, sizeof(err)), 0),
                  "%s", err);
        eng_catalog_unref(cat);
        cat = next;
        return id;
}

/* The table's tablet ids in key order, into ids (cap 64); how many. */
static uint32_t tablets(uint32_t *ids)
{
        const struct eng_catalog_table *t;

        cr_assert(eq(int, eng_catalog_table_by_id(cat, tbl, &t), 0));
        for (uint32_t i = 0; i < t->n_tablets && i < 64; i++)
                ids[i] = t->tablets[i].id;
        return t->n_tablets;
}

/* The manifest names merged, and none of gone[0..n). */
static void check_manifest_merged(uint32_t merged, const uint32_t *gone, uint32_t n)
{
        const struct eng_manifest_state *st = eng_manifest_state(sh->man);
        uint64_t files[64];

        cr_expect(eng_manifest_has_tablet(st, merged), "no entry for the merged tablet");
        for (uint32_t i = 0; i < n; i++) {
                cr_expect(not(eng_manifest_has_tablet(st, gone[i])), "member %u stays", gone[i]);
                cr_expect(eq(u32, files_of(gone[i], files), 0));
        }
}

/* Splits the table's one tablet at MID; writes and flushes, so that each
 * child holds shared and own tables; kids gets them. */
static void split_and_load(uint32_t parent, uint32_t kids[2])
{
        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        split_at_row(parent, MID, kids);
        install();
        write_rows(0, N_ROWS, 3, "b", NULL);
        write_rows(0, N_ROWS, 13, NULL, NULL);
        cr_assert(eq(int, flush_sync(), 0));
}

Test(shard_merge, children_merge_back_sharing_their_parents_files)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2], merged;

        split_and_load(parent, kids);
        write_rows(0, N_ROWS, 7, "c", NULL);            /* in both members' memtables */
        merged = merge_at(kids[0]);
        install_when_idle();
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(sh, kids[0]), NULL));
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(sh, kids[1]), NULL));
        check_manifest_merged(merged, kids, 2);
        check_all();
        write_rows(0, N_ROWS, 11, "d", NULL);
        check_all();
        cr_assert(eq(int, flush_sync(), 0));
        check_all();
        cr_assert(eq(int, major_compact_sync(), 0));
        cr_expect(eq(u32, shard_tablet_by_id(sh, merged)->tset->n, 1));
        check_all();
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}

/* Rows of one member then the other, flushed between, so that their
 * tables' seq ranges interleave once merged. */
static void interleave(uint32_t round)
{
        char tag[8];

        snprintf(tag, sizeof(tag), "i%u", round);
        write_rows(round % 3, MID, 3, tag, NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(MID + round % 5, N_ROWS, 5, tag, NULL);
        write_rows(round % 7, MID, 7 + round, NULL, NULL);
        cr_assert(eq(int, flush_sync(), 0));
}

Test(shard_merge, interleaved_tables_compact_without_resurrecting_a_row)
{
        uint32_t parent, kids[2], merged;

        opts.no_compaction = true;      /* every flush a table of its own */
        parent = open_with_table(ENG_CATALOG_ORDERED);
        split_and_load(parent, kids);
        sh->o.no_compaction = false;
        cr_assert(eq(int, major_compact_sync(), 0));    /* the children apart */
        sh->o.no_compaction = true;
        cr_expect(not(reaches_out(kids[0])));
        cr_expect(not(reaches_out(kids[1])));
        for (uint32_t r = 0; r < 4; r++)
                interleave(r);
        merged = merge_at(kids[0]);
        install_when_idle();
        check_manifest_merged(merged, kids, 2);
        check_all();
        cr_expect(ge(u32, shard_tablet_by_id(sh, merged)->tset->n, 8u));
        /* Small compactions of adjacent tables mix the members' rows. */
        sh->o.no_compaction = false;
        for (uint32_t r = 4; r < 10; r++) {
                interleave(r);
                check_all();
        }
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cr_assert(eq(int, major_compact_sync(), 0));
        check_all();
        cat_fini();
}

Test(shard_merge, members_that_flushed_to_different_seqs_are_sealed_first)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2], merged;
        struct eng_tablet *a, *b;

        split_and_load(parent, kids);
        write_rows(0, MID, 2, "e", NULL);               /* member 0 only */
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 9, "f", NULL);            /* both, unflushed */
        a = shard_tablet_by_id(sh, kids[0]);
        b = shard_tablet_by_id(sh, kids[1]);
        cr_assert(ne(u64, a->flushed_seq, b->flushed_seq));
        merged = merge_at(kids[0]);
        cr_expect(eq(int, eng_shard_set_catalog(sh, cat), -EBUSY), "members flushed apart");
        check_all();
        install_when_idle();
        check_all();
        cr_expect(eq(u32, shard_tablet_by_id(sh, merged)->n_imm, 0));
        write_rows(0, N_ROWS, 4, "g", NULL);
        cr_assert(eq(int, reopen_cat(), 0));             /* a replay of the merged tablet */
        check_all();
        cat_fini();
}

Test(shard_merge, a_merge_with_both_memtables_full_flushes_them_apart)
{
        uint32_t parent, kids[2], merged;
        struct eng_tablet *m;

        opts.no_compaction = true;
        parent = open_with_table(ENG_CATALOG_ORDERED);
        split_and_load(parent, kids);
        write_rows(0, N_ROWS, 2, "h", NULL);            /* both: flushed to the same seq */
        merged = merge_at(kids[0]);
        install_when_idle();
        m = shard_tablet_by_id(sh, merged);
        cr_expect(eq(u32, m->n_imm, 2), "each member's memtable, sealed");
        cr_expect(not(shard_tablet_settled(m)));
        check_all();
        write_rows(1, N_ROWS, 6, "i", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        cr_expect(shard_tablet_settled(m));
        check_all();
        sh->o.no_compaction = false;
        cr_assert(eq(int, major_compact_sync(), 0));
        check_all();
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}

Test(shard_merge, an_open_with_the_merged_catalog_repairs_the_manifest)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2], merged;

        split_and_load(parent, kids);
        write_rows(0, MID, 2, "j", NULL);
        cr_assert(eq(int, flush_sync(), 0));            /* member 0 flushed further */
        write_rows(0, N_ROWS, 3, "k", NULL);            /* in the log only */
        write_rows(0, N_ROWS, 17, NULL, NULL);
        shard_close_sync();
        merged = merge_at(kids[0]);
        opts.catalog = cat;
        cr_assert(eq(int, shard_open_sync(), 0));
        check_manifest_merged(merged, kids, 2);
        check_all();
        write_rows(0, N_ROWS, 5, "l", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        cr_assert(eq(int, major_compact_sync(), 0));
        check_all();
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}

/* One random step of the mix: writes or deletes, a flush, a split of a
 * random tablet at a random row, a merge of a random pair, or a restart. */
static void random_step(uint64_t *x)
{
        uint32_t ids[64], n = tablets(ids), kids[2];
        char tag[8];

        *x = *x * 6364136223846793005ull + 1442695040888963407ull;
        snprintf(tag, sizeof(tag), "r%u", (unsigned)(*x >> 40) % 1000);
        switch ((*x >> 33) % 6) {
        case 0:
        case 1:
                write_rows((uint32_t)(*x >> 20) % 50, N_ROWS, 7 + (uint32_t)(*x >> 50) % 60,
                           (*x >> 27) % 4 ? tag : NULL, NULL);
                break;
        case 2:
                cr_assert(eq(int, flush_sync(), 0));
                break;
        case 3: {
                uint32_t v = 1 + (uint32_t)(*x >> 17) % (N_ROWS - 2);
                uint8_t at[32];
                struct eng_catalog *next;
                char err[256];

                if (n >= 16 || eng_catalog_split_tablet(cat, ids[(*x >> 45) % n], at, ikey_of(v, at),
                                                        &next, kids, err, sizeof(err)) < 0)
                        break;  /* the row is outside that tablet, or too many */
                eng_catalog_unref(cat);
                cat = next;
                install_when_idle();
                break;
        }
        case 4:
                if (n < 2)
                        break;
                merge_at(ids[(*x >> 45) % (n - 1)]);
                install_when_idle();
                break;
        default:
                if ((*x >> 21) % 4 == 0)
                        cr_assert(eq(int, reopen_cat(), 0));
                break;
        }
}

Test(shard_merge, a_random_mix_of_splits_merges_and_writes_reads_right)
{
        uint64_t x = 0x5eed1234abcdull;

        open_with_table(ENG_CATALOG_ORDERED);
        for (uint32_t step = 0; step < 60; step++) {
                random_step(&x);
                check_all();
        }
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}

/* Regression: a crash after the merge's catalog is saved, before the shard
 * installed it, with one member never flushed (no manifest entry: made
 * by a split of a tablet the manifest never heard of, or a table's
 * first tablets) and the other flushed past the first's entries. */
Test(shard_merge, a_member_the_manifest_never_heard_of_keeps_its_rows)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        struct eng_tablet *a;

        split_at_row(parent, MID, kids);
        install();
        write_rows(MID, N_ROWS, 1, "b", NULL);          /* member 1: the log only */
        write_rows(0, MID, 1, "a", NULL);               /* member 0: flushed below */
        a = shard_tablet_by_id(sh, kids[0]);
        shard_seal(sh, a);
        shard_maybe_flush(sh);
        for (unsigned i = 0; i < 30000 && a->n_imm; i++)
                run_for_ms(1);
        cr_assert(eq(u32, a->n_imm, 0));
        cr_assert(not(eng_manifest_has_tablet(eng_manifest_state(sh->man), kids[1])));
        merge_at(kids[0]);                              /* saved, not installed: */
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}
