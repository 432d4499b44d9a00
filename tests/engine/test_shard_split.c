/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tablet split by the catalog (eng_catalog_split_tablet) while its shard
 * runs: the children take over the parent's SSTables, memtables and
 * flushed seq at once (shard_relayout.c), read and scan every row, flush
 * and compact their own ranges until the shared files are separated and
 * gone, survive a restart -- and a crash before the manifest heard of the
 * split -- and are split again. A parent with a flush running is not
 * split (-EBUSY) until it ends.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/key.h"
#include "engine/shard_internal.h"
#include "engine/sst_reader.h"
#include "engine/tuple.h"
#include "tests/engine/shard_catalog_helpers.h"
#include "tests/engine/shard_helpers.h"
#include "tests/engine/shard_rows_helpers.h"

TestSuite(shard_split, .init = setup, .fini = teardown);

/* The parent's flushed seq, as the manifest had it before the split. */
static uint64_t parent_flushed;

/* The files the manifest names for tablet id, into ids (cap 64), and its
 * flushed seq into parent_flushed; how many. */
static uint32_t parent_files(uint32_t id, uint64_t *ids)
{
        parent_flushed = eng_manifest_flushed_seq(eng_manifest_state(sh->man), id);
        return files_of(id, ids);
}

/* The manifest has no entry for parent, and each child has one -- and,
 * as long as nothing flushed or compacted since the split (fresh), the
 * parent's flushed seq and every one of files[0..n) (the parent's). */
static void check_manifest_split(uint32_t parent, const uint32_t kids[2], const uint64_t *files,
                                 uint32_t n, bool fresh)
{
        const struct eng_manifest_state *st = eng_manifest_state(sh->man);
        uint64_t got[64];

        cr_expect(not(eng_manifest_has_tablet(st, parent)), "the parent's entry stays");
        cr_expect(gt(u64, parent_flushed, 0));
        cr_expect(eq(u32, files_of(parent, got), 0));
        for (int k = 0; k < 2; k++) {
                uint32_t m = files_of(kids[k], got), found = 0;

                cr_assert(eng_manifest_has_tablet(st, kids[k]), "no entry for child %u", kids[k]);
                if (!fresh)
                        continue;
                cr_expect(eq(u64, eng_manifest_flushed_seq(st, kids[k]), parent_flushed),
                          "child %u's flushed seq", kids[k]);
                for (uint32_t i = 0; i < n; i++)
                        for (uint32_t j = 0; j < m; j++)
                                found += got[j] == files[i];
                cr_expect(eq(u32, found, n), "child %u names %u of the parent's %u files",
                          kids[k], found, n);
        }
}

/* No table of tablet id but files[0..nf) (the parent's, shared) holds a
 * key outside its range: its flushes keep to it. Returns how many it has. */
static uint32_t own_tables_in_range(uint32_t id, const uint64_t *files, uint32_t nf)
{
        const struct eng_tablet *t = shard_tablet_by_id(sh, id);
        uint32_t own = 0;

        for (uint32_t i = 0; t->tset && i < t->tset->n; i++) {
                const struct eng_sst_props *p =
                        eng_sst_reader_props(eng_sst_table_reader(t->tset->e[i].t));
                bool shared = false;

                for (uint32_t j = 0; j < nf; j++)
                        shared |= t->tset->e[i].meta.file_id == files[j];
                if (shared)
                        continue;
                own++;
                cr_expect(ge(int, eng_key_cmp(p->smallest, p->smallest_len, t->start, t->start_len), 0),
                          "tablet %u: a flushed table starts below its range", id);
                cr_expect(lt(int, eng_key_cmp(p->largest, p->largest_len, t->end, t->end_len), 0),
                          "tablet %u: a flushed table ends past its range", id);
        }
        return own;
}

/* Waits until no table of kids[0..n) reaches out of its range and no
 * compaction runs, then checks that files[0..nf) (the parent's) are gone
 * from the manifest and the disk. */
static void check_separated(const uint32_t *kids, uint32_t n, const uint64_t *files, uint32_t nf)
{
        bool out = true;

        for (unsigned i = 0; i < 30000 && (out || sh->compaction); i++) {
                out = false;
                for (uint32_t k = 0; k < n; k++)
                        out |= reaches_out(kids[k]);
                if (out || sh->compaction)
                        run_for_ms(1);
        }
        cr_assert(not(out), "a child's table still reaches out of its range");
        for (uint32_t i = 0; i < nf; i++) {
                cr_expect(not(eng_manifest_names_file(eng_manifest_state(sh->man), files[i])),
                          "file %" PRIx64 " still named", files[i]);
                for (unsigned w = 0; w < 5000 && sst_exists(files[i]); w++)
                        run_for_ms(1);
                cr_expect(not(sst_exists(files[i])), "file %" PRIx64 " still on disk", files[i]);
        }
}

static struct wr async_w[N_ROWS / BATCH + 1];
static int flush2;                      /* load_and_split's second flush waiter */

/*
 * Rows in every place a tablet keeps them, then the split at MID: all rows
 * flushed (an SSTable), a third rewritten and flushing (a second one) when
 * a fifth are rewritten and sealed -- the split then waits (-EBUSY) for
 * that flush, which keeps the sealed memtable unflushed -- and a seventh
 * rewritten and an eleventh deleted in the active memtable. Returns the
 * parent's files; kids gets the children.
 */
static uint32_t load_and_split(uint32_t parent, uint32_t kids[2], uint64_t *files)
{
        int flush1 = 0;
        unsigned nw;
        uint32_t nf;

        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 3, "b", NULL);
        cr_assert(eq(int, eng_shard_flush(sh, on_flushed, &flush1), 0));
        nw = write_rows(0, N_ROWS, 5, "c", async_w);
        flush2 = 0;
        cr_assert(eq(int, eng_shard_flush(sh, on_flushed, &flush2), 0));
        split_at_row(parent, MID, kids);
        cr_assert(eq(int, eng_shard_set_catalog(sh, cat), -EBUSY));
        wait_flag(&flush1, 60000);
        cr_assert(eq(int, flush1, 1));
        for (unsigned i = 0; i < nw; i++)
                TEST_RUN_UNTIL(loop, async_w[i].done);
        cr_assert(eq(u32, shard_tablet_by_id(sh, parent)->n_imm, 1), "the fifth's memtable");
        write_rows(0, N_ROWS, 7, "d", NULL);
        write_rows(0, N_ROWS, 11, NULL, NULL);
        nf = parent_files(parent, files);
        cr_assert(eq(u32, nf, 2));
        install();
        return nf;
}

Test(shard_split, children_read_the_parents_tables_and_memtables)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        uint64_t files[64];
        uint32_t nf = load_and_split(parent, kids, files);

        /* Routed to the children, each holding the shared memtables and
         * tables (before a compaction separates them), the parent gone. */
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(sh, parent), NULL));
        cr_expect(eq(u32, shard_tablet_by_id(sh, kids[0])->n_imm, 2));
        cr_expect(eq(u32, shard_tablet_by_id(sh, kids[1])->n_imm, 2));
        check_manifest_split(parent, kids, files, nf, true);
        check_all();
        /* Overwrites and deletes after the split, on both sides. */
        write_rows(0, N_ROWS, 13, "e", NULL);
        write_rows(0, N_ROWS, 17, NULL, NULL);
        write_rows(MID - 3, MID + 3, 1, "f", NULL);
        check_all();
        cat_fini();
}

/* Regression: the install handed the frozen parent's sealed memtable to
 * the children but started no flush, so the waiter was answered only by
 * the next write or flush call. */
Test(shard_split, a_flush_waiter_from_before_the_split_is_answered)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        uint64_t files[64];

        load_and_split(parent, kids, files);
        /* The parent's sealed memtable went to the children: their flushes
         * of it answer the waiter, with no later write to start them. */
        wait_flag(&flush2, 60000);
        cr_expect(eq(int, flush2, 1), "waiter for the sealed memtable: %d", flush2);
        cat_fini();
}

Test(shard_split, children_flush_and_compact_apart_and_the_parents_files_go)
{
        uint32_t parent, kids[2], nf;
        uint64_t files[64];

        opts.no_compaction = true;      /* to look at the flushes' tables first */
        parent = open_with_table(ENG_CATALOG_ORDERED);
        nf = load_and_split(parent, kids, files);
        cr_assert(eq(int, flush_sync(), 0));
        for (int k = 0; k < 2; k++) {
                cr_expect(eq(u32, shard_tablet_by_id(sh, kids[k])->n_imm, 0));
                cr_expect(eq(u32, own_tables_in_range(kids[k], files, nf), 2),
                          "child %u: a table of each shared memtable", kids[k]);
        }
        sh->o.no_compaction = false;
        check_all();
        /* Background compactions alone separate the shared files (the
         * next flush's end starts them). */
        write_rows(0, N_ROWS, 29, "h", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        check_separated(kids, 2, files, nf);
        check_all();
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}

Test(shard_split, a_reopen_after_the_split_finds_every_row)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        uint64_t files[64];
        uint32_t nf = load_and_split(parent, kids, files);

        write_rows(0, N_ROWS, 19, "g", NULL);
        cr_assert(eq(int, reopen_cat(), 0));
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(sh, parent), NULL));
        check_manifest_split(parent, kids, files, nf, false);
        check_all();
        cr_assert(eq(int, major_compact_sync(), 0));
        check_separated(kids, 2, files, nf);
        check_all();
        cat_fini();
}

Test(shard_split, an_open_with_the_split_catalog_repairs_a_manifest_with_the_parent)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        uint64_t files[64];
        uint32_t nf;

        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 3, "b", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 5, "c", NULL);            /* in the log only */
        write_rows(0, N_ROWS, 11, NULL, NULL);
        nf = parent_files(parent, files);
        cr_assert(eq(u32, nf, 2));
        /* Closed with the original catalog: the catalog is saved split
         * before the shard hears of it. */
        shard_close_sync();
        split_at_row(parent, MID, kids);
        opts.catalog = cat;
        opts.no_compaction = true;      /* to see the shared files first */
        cr_assert(eq(int, shard_open_sync(), 0));
        check_manifest_split(parent, kids, files, nf, true);
        sh->o.no_compaction = false;
        check_all();
        write_rows(0, N_ROWS, 7, "d", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        check_all();
        cr_assert(eq(int, major_compact_sync(), 0));
        check_separated(kids, 2, files, nf);
        check_all();
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        cat_fini();
}

Test(shard_split, a_split_waits_for_the_parents_flush)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        struct eng_catalog *before;
        uint8_t ik[32];
        uint32_t ik_len;
        int flushed = 0;

        write_rows(0, N_ROWS, 1, "a", NULL);
        before = eng_catalog_ref(cat);
        cr_assert(eq(int, eng_shard_flush(sh, on_flushed, &flushed), 0));
        split_at_row(parent, MID, kids);
        cr_expect(eq(int, eng_shard_set_catalog(sh, cat), -EBUSY));
        cr_expect(eq(int, eng_shard_set_catalog(sh, cat), -EBUSY), "asked again");
        /* Nothing changed: the old catalog, the parent routed to. */
        cr_expect(eq(u64, eng_catalog_version(eng_shard_catalog(sh)), eng_catalog_version(before)));
        ik_len = ikey_of(MID + 1, ik);
        cr_expect(eq(u32, shard_tablet_of_ikey(sh, ik, ik_len)->id, parent));
        ik_len = ikey_of(1, ik);
        cr_expect(eq(u32, shard_tablet_of_ikey(sh, ik, ik_len)->id, parent));
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(sh, kids[0]), NULL));
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(sh, kids[1]), NULL));
        check_gets();
        wait_flag(&flushed, 60000);
        cr_assert(eq(int, flushed, 1));
        cr_expect(eng_manifest_has_tablet(eng_manifest_state(sh->man), parent));
        install();
        ik_len = ikey_of(MID + 1, ik);
        cr_expect(eq(u32, shard_tablet_of_ikey(sh, ik, ik_len)->id, kids[1]));
        ik_len = ikey_of(MID - 1, ik);
        cr_expect(eq(u32, shard_tablet_of_ikey(sh, ik, ik_len)->id, kids[0]));
        check_all();
        eng_catalog_unref(before);
        cat_fini();
}

/* Writes rows, checks every read, and splits tablet id at row v. */
static void write_check_split(uint32_t id, uint32_t v, const char *tag, uint32_t kids[2])
{
        write_rows(v % 7, N_ROWS, 7 + v % 5, tag, NULL);
        check_all();
        split_at_row(id, v, kids);
        install_when_idle();
        check_all();
}

Test(shard_split, a_child_splits_again_for_three_generations)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), g1[2], g2[2], g3[2];
        uint64_t files[64];
        uint32_t nf, leaves[4];

        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        nf = parent_files(parent, files);
        write_check_split(parent, MID, "b", g1);
        write_check_split(g1[1], 3750, "c", g2);        /* memtables shared twice */
        cr_assert(eq(int, flush_sync(), 0));
        write_check_split(g2[0], 3100, "d", g3);
        write_rows(3000, 3200, 1, "e", NULL);
        check_all();
        leaves[0] = g1[0];
        leaves[1] = g2[1];
        leaves[2] = g3[0];
        leaves[3] = g3[1];
        cr_assert(eq(int, reopen_cat(), 0));
        check_all();
        for (int k = 0; k < 4; k++)
                cr_expect(eng_manifest_has_tablet(eng_manifest_state(sh->man), leaves[k]));
        cr_expect(not(eng_manifest_has_tablet(eng_manifest_state(sh->man), g1[1])));
        cr_expect(not(eng_manifest_has_tablet(eng_manifest_state(sh->man), g2[0])));
        cr_assert(eq(int, major_compact_sync(), 0));
        check_separated(leaves, 4, files, nf);
        check_all();
        cat_fini();
}

/* A scan of the hashed table over a half of the hash space (half 0: below
 * 0x80..., 1: from it on; -1: all of it): each live row at most once, with
 * its newest value, in that half; the rows it gave are added to seen.
 * Returns how many. */
static uint32_t check_hashed_scan(int half, bool *seen)
{
        static const uint8_t mid[8] = { 0x80 };
        static struct collect c;

        scan_into(&c, half == 1 ? mid : NULL, half == 1 ? 8 : 0, half == 0 ? mid : NULL,
                  half == 0 ? 8 : 0, false);
        for (uint32_t i = 0; i < c.n; i++) {
                uint64_t v = c.keys[i];

                cr_assert(lt(u64, v, N_ROWS));
                if (half >= 0)
                        cr_assert(eq(int, c.pos0[i] >= 0x80, half), "row %" PRIu64 " in the "
                                  "wrong half", v);
                cr_assert(not(seen[v]), "row %" PRIu64 " twice", v);
                cr_assert(eq(str, c.vals[i], want[v]), "row %" PRIu64, v);
                seen[v] = true;
        }
        return c.n;
}

Test(shard_split, a_hashed_tablet_splits_at_the_hash_midpoint)
{
        uint32_t parent = open_with_table(ENG_CATALOG_HASHED), kids[2], live = 0, lo, hi;
        static bool seen[N_ROWS];
        uint8_t at[12] = { (uint8_t)(tbl >> 24), (uint8_t)(tbl >> 16), (uint8_t)(tbl >> 8),
                           (uint8_t)tbl, 0x80 };
        uint64_t files[64];
        uint32_t nf;

        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 3, "b", NULL);
        write_rows(0, N_ROWS, 11, NULL, NULL);
        nf = parent_files(parent, files);
        split_at(parent, at, sizeof(at), kids);
        install();
        check_gets();
        for (uint32_t v = 0; v < N_ROWS; v++)
                live += want[v][0] != 0;
        lo = check_hashed_scan(0, seen);
        hi = check_hashed_scan(1, seen);
        cr_expect(eq(u32, lo + hi, live), "every live row once across the halves");
        cr_expect(gt(u32, lo, live / 3));
        cr_expect(gt(u32, hi, live / 3));
        memset(seen, 0, sizeof(seen));
        cr_expect(eq(u32, check_hashed_scan(-1, seen), live));
        write_rows(0, N_ROWS, 13, "e", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        check_separated(kids, 2, files, nf);
        cr_assert(eq(int, reopen_cat(), 0));
        check_gets();
        memset(seen, 0, sizeof(seen));
        live = 0;
        for (uint32_t v = 0; v < N_ROWS; v++)
                live += want[v][0] != 0;
        cr_expect(eq(u32, check_hashed_scan(-1, seen), live));
        cat_fini();
}

/* Regression: a parent frozen by a -EBUSY install keeps sealing (up to
 * SHARD_MAX_SEALED memtables) while its flush ends, then hands them and
 * its active memtable to its children: SHARD_MAX_IMM each; splitting a
 * child that has them and took a write failed parent_seal_all's
 * assertion (or wrote past imm[]). The install now waits, flushing, for
 * room. */
Test(shard_split, a_child_holding_the_most_memtables_splits_again)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2], gk[2];
        int first = 0, more[10] = { 0 };

        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, eng_shard_flush(sh, on_flushed, &first), 0));
        split_at_row(parent, MID, kids);
        cr_assert(eq(int, eng_shard_set_catalog(sh, cat), -EBUSY));
        wait_flag(&first, 60000);
        for (int i = 0; i < 9; i++) {
                write_rows(0, N_ROWS, 50, "b", NULL);
                cr_assert(eq(int, eng_shard_flush(sh, on_flushed, &more[i]), 0));
        }
        write_rows(0, N_ROWS, 50, "c", NULL);
        install_when_idle();
        write_rows(MID, N_ROWS, 50, "d", NULL);
        split_at_row(kids[1], 3750, gk);
        install_when_idle();
        check_all();
        for (int i = 0; i < 9; i++)
                wait_flag(&more[i], 60000);     /* answered before more[] goes */
        cat_fini();
}

/* A split while the parent compacts throws that compaction away (its
 * output deleted when it ends) instead of waiting for it: the install
 * succeeds at once, every row is there, the orphan's output is named by
 * no tablet and gone from disk, and the major compaction goes on to the
 * children. */
Test(shard_split, a_split_throws_the_parents_compaction_away)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];
        const struct eng_tablet *p;
        uint64_t next_file;
        int st = 0;

        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 2, "b", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        sh->o.compaction_rate = 128u << 10;     /* slow: the split comes while it runs */
        cr_assert(eq(int, eng_shard_compact(sh, on_flushed, &st), 0));
        p = shard_tablet_by_id(sh, parent);
        for (unsigned ms = 0; ms < 60000 && !p->compacting; ms++)
                run_for_ms(1);
        cr_assert(p->compacting);
        next_file = sh->next_file_id;           /* the compaction's output is below */
        split_at_row(parent, MID, kids);
        cr_assert(eq(int, eng_shard_set_catalog(sh, cat), 0), "no wait for the compaction");
        cr_assert(eq(ptr, shard_tablet_by_id(sh, parent), NULL));
        check_all();
        sh->o.compaction_rate = 0;
        wait_flag(&st, 60000);
        cr_expect(eq(int, st, 1), "the major compaction: %d", st);
        cr_expect(not(eng_manifest_names_file(eng_manifest_state(sh->man), next_file - 1)));
        cr_expect(not(sst_exists(next_file - 1)), "the orphan's output is gone");
        cr_expect(not(reaches_out(kids[0])), "compacted apart");
        cr_expect(not(reaches_out(kids[1])), "compacted apart");
        check_all();
        reopen_cat();
        check_all();
        cat_fini();
}

/* ---- a scan across a split installed while it runs ---- */

static uint32_t split_id, split_row, items;

/* Collects like collect_item; at the 10th row installs a split of
 * split_id at split_row, as if it came while the scan waited for a
 * block. */
static int split_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        uint32_t kids[2];
        int r = collect_item(sc, it);

        if (++items == 10) {
                split_at_row(split_id, split_row, kids);
                install();
        }
        return r;
}

/* A full scan, up or down, with a split installed midway, gives every row
 * once, in order (it kept tablet indexes across waits: forward rows came
 * twice, in reverse a tablet was skipped). */
static void check_scan_across(bool reverse)
{
        static struct collect c;
        int r;

        items = 0;
        memset(&c, 0, sizeof(c));
        c.sc = (struct eng_scan){ .item = split_item, .done = collect_done, .ctx = &c,
                                  .reverse = reverse };
        r = eng_shard_scan(sh, tbl, NULL, 0, NULL, 0, 100000, &c.sc);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &c.done), 0));
                r = c.res;
        }
        cr_assert(eq(int, r, 0));
        eng_scan_release(&c.sc);
        cr_assert(eq(u32, c.n, N_ROWS), "%u rows for %u", c.n, N_ROWS);
        for (uint32_t i = 0; i < N_ROWS; i++)
                cr_assert(eq(u64, c.keys[i], reverse ? N_ROWS - 1 - i : i), "row %u", i);
}

Test(shard_split, a_scan_goes_on_right_across_a_split_of_its_own_tablet)
{
        split_id = open_with_table(ENG_CATALOG_ORDERED);
        write_rows(0, N_ROWS, 1, "v", NULL);
        split_row = MID;
        check_scan_across(false);
}

Test(shard_split, a_reverse_scan_goes_on_right_across_a_split_below_it)
{
        uint32_t parent = open_with_table(ENG_CATALOG_ORDERED), kids[2];

        write_rows(0, N_ROWS, 1, "v", NULL);
        split_at_row(parent, MID, kids);
        install_when_idle();
        for (unsigned ms = 0; ms < 60000 && (sh->compaction || sh->flush); ms++)
                run_for_ms(1);          /* the separation: the next install is not -EBUSY */
        cr_assert(not(sh->compaction || sh->flush));
        split_id = kids[0];             /* below the tablet the scan starts in */
        split_row = 1000;
        check_scan_across(true);
}
