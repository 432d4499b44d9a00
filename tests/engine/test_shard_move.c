/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tablet moved between two shards on one loop (shard_move.h): the
 * source flushes and hands its files over, the target links them and
 * records the tablet, the catalog names the target; every row reads back
 * on the target, the source answers -SCREE_EMOVED and drops its links,
 * and restarts -- clean, before the catalog was switched, or before the
 * source dropped its copy -- keep exactly one copy that counts. A move
 * that is called off leaves the source serving. Tablets move there and
 * back with writes in between.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/compaction.h"
#include "engine/shard_internal.h"
#include "engine/shard_move.h"
#include "engine/shard_xtxn.h"
#include "tests/engine/shard_catalog_helpers.h"
#include "tests/engine/shard_helpers.h"
#include "tests/engine/shard_rows_helpers.h"

TestSuite(shard_move, .init = setup, .fini = teardown);

static struct eng_shard *shards[2];
static char dirs[2][PATH_MAX + 8];

static void open_shard(int k)
{
        opts.dir = dirs[k];
        opts.shard = (uint32_t)k;
        opts.n_shards = 2;
        opts.catalog = cat;
        cr_assert(eq(int, shard_open_sync(), 0));
        shards[k] = sh;
}

static void close_shard(int k)
{
        sh = shards[k];
        shard_close_sync();
        shards[k] = NULL;
}

static void use(int k)
{
        sh = shards[k];
}

/* Two shards, the first catalog and table /t-move of one tablet (on the
 * shard returned in *owner); its id. */
static uint32_t open_two(int *owner)
{
        const struct eng_catalog_table *t;

        opts.segment_bytes = 8u << 20;
        cr_assert(eq(int, eng_catalog_initial(2, 4, &cat), 0));
        tbl = create_table("/t-move", ENG_CATALOG_ORDERED, 1);
        for (int k = 0; k < 2; k++) {
                snprintf(dirs[k], sizeof(dirs[k]), "%s/s%d", dir, k);
                cr_assert(eq(int, mkdir(dirs[k], 0700), 0));
                open_shard(k);
        }
        cr_assert(eq(int, eng_catalog_table_by_id(cat, tbl, &t), 0));
        memset(want, 0, sizeof(want));
        *owner = (int)t->tablets[0].shard;
        use(*owner);
        return t->tablets[0].id;
}

static void close_two(void)
{
        for (int k = 0; k < 2; k++)
                if (shards[k])
                        close_shard(k);
        sh = NULL;
}

/* Both shards closed and opened again (the catalog as the test has it). */
static void restart_two(void)
{
        close_two();
        open_shard(0);
        open_shard(1);
}

static bool mo_flag, mi_flag;
static int mo_res, mi_res;

static void mo_done(struct eng_move_out *mo, int res)
{
        (void)mo;
        mo_flag = true;
        mo_res = res;
}

static void mi_done(struct eng_move_in *mi, int res)
{
        (void)mi;
        mi_flag = true;
        mi_res = res;
}

static struct eng_move_out mo;
static struct eng_move_in mi;

/* Step 1: the source hands over (into mo; mi made ready). */
static void move_out(uint32_t id, int from)
{
        mo = (struct eng_move_out){ .done = mo_done };
        mi = (struct eng_move_in){ .done = mi_done };
        mo_flag = mi_flag = false;
        cr_assert(eq(int, eng_shard_move_out(shards[from], id, &mo), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mo_flag), 0));
        cr_assert(eq(int, mo_res, 0));
}

/* Steps 1 and 2: the source hands over, the target takes over. */
static void hand_over(uint32_t id, int from, int to)
{
        move_out(id, from);
        cr_assert(eq(int, eng_shard_move_in(shards[to], &mo.h, &mi), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mi_flag), 0));
        cr_assert(eq(int, mi_res, 0));
}

/* Step 3: the catalog names the target; installed on the shards given. */
static void switch_catalog(uint32_t id, int to, bool on_from, bool on_to)
{
        struct eng_catalog *next;
        char err[256];

        cr_assert(eq(int, eng_catalog_move_tablet(cat, id, (uint32_t)to, &next, err,
                                                  sizeof(err)), 0), "%s", err);
        eng_catalog_unref(cat);
        cat = next;
        if (on_to)
                cr_assert(eq(int, eng_shard_set_catalog(shards[to], cat), 0));
        if (on_from)
                cr_assert(eq(int, eng_shard_set_catalog(shards[1 - to], cat), 0));
}

static void move(uint32_t id, int from, int to)
{
        hand_over(id, from, to);
        switch_catalog(id, to, true, true);
        eng_handoff_fini(&mo.h);
        use(to);
}

/* Rows in an SSTable and in the memtables of the source. */
static void load(void)
{
        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        write_rows(0, N_ROWS, 3, "b", NULL);
        write_rows(0, N_ROWS, 11, NULL, NULL);
}

static int get_status(int k, uint32_t v)
{
        uint8_t key[16];
        char buf[32];

        use(k);
        return get_copy(tbl, key, (uint32_t)key_of(v, key), buf, sizeof(buf));
}

/* Waits until the shard dropped the tablet (its links gone). */
static void wait_dropped(int k, uint32_t id)
{
        for (unsigned i = 0; i < 30000 && shard_tablet_by_id(shards[k], id); i++)
                run_for_ms(1);
        cr_assert(eq(ptr, (void *)shard_tablet_by_id(shards[k], id), NULL));
}

Test(shard_move, a_tablet_moves_with_every_row_and_the_source_lets_go)
{
        int from, to;
        uint32_t id = open_two(&from);
        uint64_t files[64];
        uint32_t nf;

        to = 1 - from;
        load();
        shard_tablet_by_id(shards[from], id)->ops_avg = 1234;   /* the balancer's figure */
        hand_over(id, from, to);
        cr_expect(eq(u64, shard_tablet_by_id(shards[to], id)->ops_avg, 1234), "carried along");
        cr_expect(eq(int, get_status(from, 5), -SCREE_EMOVED), "moved out: refused");
        nf = mo.h.n_files;
        cr_expect(ge(u32, nf, 2u), "the flushed rows and the memtables' flush");
        switch_catalog(id, to, true, true);
        eng_handoff_fini(&mo.h);
        use(to);
        check_all();
        cr_expect(eq(int, get_status(from, 5), -SCREE_EMOVED), "the source routes elsewhere");
        wait_dropped(from, id);
        use(to);
        cr_expect(eq(u32, files_of(id, files), nf), "the target names the files it linked");
        write_rows(0, N_ROWS, 7, "c", NULL);
        check_all();
        restart_two();
        use(to);
        check_all();
        cr_expect(eq(int, get_status(from, 5), -SCREE_EMOVED));
        close_two();
        cat_fini();
}

Test(shard_move, a_crash_before_the_catalog_switch_leaves_the_source_serving)
{
        int from, to;
        uint32_t id = open_two(&from);

        to = 1 - from;
        load();
        hand_over(id, from, to);
        eng_handoff_fini(&mo.h);
        close_two();                    /* the catalog still names the source */
        open_shard(from);
        open_shard(to);
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(shards[to], id), NULL), "the copy stays");
        use(from);
        check_all();
        write_rows(0, N_ROWS, 5, "d", NULL);
        move(id, from, to);
        check_all();
        close_two();
        cat_fini();
}

Test(shard_move, a_crash_before_the_source_dropped_its_copy_skips_its_log)
{
        int from, to;
        uint32_t id = open_two(&from);

        to = 1 - from;
        load();                         /* the source's log holds the tablet's rows */
        hand_over(id, from, to);
        switch_catalog(id, to, false, true);
        eng_handoff_fini(&mo.h);
        use(to);
        write_rows(0, N_ROWS, 13, "e", NULL);
        restart_two();                  /* with the switched catalog */
        cr_expect(eq(ptr, (void *)shard_tablet_by_id(shards[from], id), NULL));
        use(to);
        check_all();
        close_two();
        cat_fini();
}

Test(shard_move, a_move_called_off_leaves_the_source_serving)
{
        int from, to;
        uint32_t id = open_two(&from);

        to = 1 - from;
        load();
        hand_over(id, from, to);
        eng_shard_move_in_undo(shards[to], id);
        eng_shard_move_out_undo(shards[from], id);
        eng_handoff_fini(&mo.h);
        wait_dropped(to, id);
        use(from);
        check_all();
        write_rows(0, N_ROWS, 2, "f", NULL);
        check_all();
        cr_expect(eq(int, eng_shard_move_out(shards[to], id, &mo), -SCREE_ENOTFOUND));
        restart_two();
        use(from);
        check_all();
        close_two();
        cat_fini();
}

Test(shard_move, a_tablet_moves_there_and_back_with_writes_between)
{
        int from, to;
        uint32_t id = open_two(&from);

        to = 1 - from;
        load();
        for (int round = 0; round < 4; round++) {
                char tag[8];
                int src = round % 2 ? to : from, dst = round % 2 ? from : to;

                snprintf(tag, sizeof(tag), "m%d", round);
                move(id, src, dst);
                check_all();
                write_rows((uint32_t)round, N_ROWS, 4 + (uint32_t)round, tag, NULL);
                write_rows((uint32_t)round, N_ROWS, 17 + (uint32_t)round, NULL, NULL);
                wait_dropped(src, id);
                check_all();
        }
        restart_two();
        use(from);
        check_all();
        close_two();
        cat_fini();
}

/* Regression: a write queued behind a read-modify-write of its key (whose read
 * waits for the disk) is encoded before the cut; it goes in after the
 * hand-over, into the source's memtable, and is acknowledged -- then lost
 * with the source's copy. */
static struct wr queued_w;
static struct incr queued_inc;

Test(shard_move, a_write_queued_behind_an_rmw_is_not_lost)
{
        int from, to;
        uint32_t id = open_two(&from);
        uint8_t key[16];
        uint32_t klen;
        struct eng_mutation m;

        to = 1 - from;
        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        close_two();
        open_shard(0);                  /* cold block cache: the rmw's read waits */
        open_shard(1);
        use(from);
        klen = (uint32_t)key_of(5, key);
        queued_inc = (struct incr){ .r = { .done = on_rmw } };
        queued_inc.r.ctx = &queued_inc;
        cr_assert(eq(int, eng_shard_rmw(sh, tbl, key, klen, incr_fn, &queued_inc, &queued_inc.r), 0));
        cr_assert(not(queued_inc.done), "the rmw's read should wait for the disk");
        snprintf(want[5], sizeof(want[5]), "w5");
        m = (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = tbl, .key = key, .key_len = klen,
                                   .value = want[5], .value_len = 2 };
        cr_assert(eq(int, write_async(&queued_w, &m, 1), 0), "queued behind the rmw");
        /* The move: the memtables are empty, so it hands over at once. */
        move_out(id, from);
        cr_assert(eq(int, rx_loop_run_until(loop, &queued_inc.done), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &queued_w.done), 0));
        /* Routed again (the server sends it to the new owner), not taken
         * in by the source after its hand-over. */
        cr_expect(eq(int, queued_w.res, -SCREE_EMOVED));
        mi = (struct eng_move_in){ .done = mi_done };
        mi_flag = false;
        cr_assert(eq(int, eng_shard_move_in(shards[to], &mo.h, &mi), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mi_flag), 0));
        cr_assert(eq(int, mi_res, 0));
        switch_catalog(id, to, true, true);
        eng_handoff_fini(&mo.h);
        if (queued_w.res == 0) {
                char buf[32];
                int r = get_status(to, 5);

                use(to);
                r = get_copy(tbl, key, klen, buf, sizeof(buf));
                cr_expect(eq(int, r, 0));
                cr_expect(eq(str, buf, "w5"), "an acknowledged write was lost: row 5 reads %s",
                          buf);
        }
        close_two();
        cat_fini();
}

/* REVIEW: the source settles only once no cross-shard write has a part
 * anywhere on the shard -- another table's keys included --, refusing
 * the moving tablet's keys (-SCREE_EMOVED) all the while. */
static bool rv_prep_done;
static void rv_prep(struct eng_xtxn_op *op, int res)
{
        (void)op;
        (void)res;
        rv_prep_done = true;
}

/* Regression: any part of a cross-shard write in flight on the source
 * held the hand-over, its keys refused meanwhile; only one holding keys
 * of the tablet does. */
Test(shard_move, an_unrelated_prepared_part_does_not_hold_the_move)
{
        int from, to;
        uint32_t id = open_two(&from), other = 0;
        const struct eng_catalog_table *t;
        struct eng_xtxn_op op = { .done = rv_prep };
        struct eng_mutation m;
        uint8_t key[16];
        uint64_t txn;

        (void)to;
        for (int k = 0; k < 8; k++) {
                char path[32];

                snprintf(path, sizeof(path), "/t-other%d", k);
                other = create_table(path, ENG_CATALOG_ORDERED, 1);
                cr_assert(eq(int, eng_catalog_table_by_id(cat, other, &t), 0));
                if ((int)t->tablets[0].shard == from)
                        break;
        }
        cr_assert(eq(int, (int)t->tablets[0].shard, from));
        cr_assert(eq(int, eng_shard_set_catalog(shards[0], cat), 0));
        cr_assert(eq(int, eng_shard_set_catalog(shards[1], cat), 0));
        use(from);
        write_rows(0, 100, 1, "a", NULL);
        txn = eng_shard_txn_new(shards[from]);
        m = (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = other, .key = key,
                                   .key_len = (uint32_t)key_of(1, key), .value = "v", .value_len = 1 };
        cr_assert(eq(int, eng_shard_prepare(shards[from], txn, eng_xtxn_coordinator(txn), &m, 1, &op), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &rv_prep_done), 0));
        move_out(id, from);     /* handed over with an unrelated part in flight */
        cr_assert(eq(int, eng_shard_abort(shards[from], txn), 0));
        eng_shard_move_out_undo(shards[from], id);
        eng_handoff_fini(&mo.h);
        close_two();
        cat_fini();
}

/* Regression: writes that keep coming to the moving tablet: every 1 ms tick of
 * the first phase seals its active memtable, so its sealed ones never all
 * flush by a tick -- the cut never comes, and each seal is an SSTable of
 * its own (compactions of the tablet are off meanwhile). The cut now
 * waits only for the memtables sealed when the move began. */
Test(shard_move, steady_writes_do_not_keep_the_move_from_its_cut)
{
        int from;
        uint32_t id = open_two(&from);
        uint64_t t0;
        unsigned rounds = 0;

        write_rows(0, N_ROWS, 1, "a", NULL);
        shard_seal(shards[from], shard_tablet_by_id(shards[from], id));  /* a flush under way */
        shard_maybe_flush(shards[from]);
        mo = (struct eng_move_out){ .done = mo_done };
        mo_flag = false;
        cr_assert(eq(int, eng_shard_move_out(shards[from], id, &mo), 0));
        t0 = time_now_ns();
        /* The cut comes after one flush; the bound is for a slow machine. */
        while (!mo_flag && time_now_ns() - t0 < 60ull * 1000 * 1000 * 1000) {
                struct eng_tablet *t = shard_tablet_by_id(shards[from], id);

                if (t->moved_out)
                        break;
                write_rows(rounds % 100, N_ROWS, 97, "s", NULL);   /* ~50 rows */
                rounds++;
        }
        cr_expect(shard_tablet_by_id(shards[from], id)->moved_out, "the cut never came");
        run_for_ms(200);
        if (mo_flag && mo_res == 0)
                eng_shard_move_out_undo(shards[from], id);
        eng_handoff_fini(&mo.h);
        close_two();
        cat_fini();
}

static bool sst_in(int k, uint64_t file_id)
{
        char path[PATH_MAX + 32];
        struct stat st;

        snprintf(path, sizeof(path), "%s/%016" PRIx64 ".sst", dirs[k], file_id);
        return stat(path, &st) == 0;
}

/* Regression: a split leaves its children sharing the parent's files; the
 * second child to follow the first to another shard was refused there
 * (-EEXIST, "a file from before per-shard ids"), since that shard names
 * those files already. It shares them now, and the first child's
 * compaction there -- run while the second comes in -- keeps them for it;
 * every row reads back, across a restart too. Both leave at once (no
 * compaction separates the second from the files meanwhile). */
static bool mo2_flag;
static int mo2_res;

static void mo2_done(struct eng_move_out *m, int res)
{
        (void)m;
        mo2_flag = true;
        mo2_res = res;
}

Test(shard_move, split_siblings_sharing_files_follow_each_other)
{
        static struct eng_move_out mo2;
        int from, to, st = 0;
        uint32_t id, kids[2], nf;
        uint64_t files[64], shared[64];

        opts.no_compaction = true;      /* nothing separates the children (a major does) */
        id = open_two(&from);
        to = 1 - from;
        load();
        split_at_row(id, N_ROWS / 2, kids);
        for (int k = 0; k < 2; k++)
                cr_assert(eq(int, eng_shard_set_catalog(shards[k], cat), 0));
        use(from);
        nf = files_of(kids[1], files);
        cr_assert(ge(u32, nf, 1u), "the parent's files, shared");
        mo2 = (struct eng_move_out){ .done = mo2_done };
        mo2_flag = false;
        cr_assert(eq(int, eng_shard_move_out(shards[from], kids[1], &mo2), 0));
        move(kids[0], from, to);
        wait_dropped(from, kids[0]);
        cr_assert(eq(int, rx_loop_run_until(loop, &mo2_flag), 0));
        cr_assert(eq(int, mo2_res, 0));

        mo = mo2;
        use(to);
        cr_assert(eq(u32, files_of(kids[0], shared), nf + 1), "the shared files and a flush");
        for (uint32_t i = 0, n = 0; i < nf; i++, n = 0) {
                for (uint32_t k = 0; k <= nf; k++)
                        n += shared[k] == files[i];
                cr_assert(eq(u32, n, 1u), "file %" PRIx64 " came first with the sibling", files[i]);
        }
        mi = (struct eng_move_in){ .done = mi_done };
        mi_flag = false;
        cr_assert(eq(int, eng_shard_move_in(shards[to], &mo.h, &mi), 0));
        cr_assert(eq(int, eng_shard_compact(shards[to], on_flushed, &st), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mi_flag), 0));
        cr_assert(eq(int, mi_res, 0));
        wait_flag(&st, 60000);
        cr_assert(eq(int, st, 1));
        switch_catalog(kids[1], to, true, true);
        eng_handoff_fini(&mo.h);
        wait_dropped(from, kids[1]);
        for (uint32_t i = 0; i < nf; i++) {
                cr_expect(sst_in(to, files[i]), "shared file %" PRIx64 " kept", files[i]);
                cr_expect(not(sst_in(from, files[i])), "the source let %" PRIx64 " go", files[i]);
        }
        use(to);
        check_all();
        write_rows(0, N_ROWS, 5, "w", NULL);
        check_all();
        restart_two();
        use(to);
        check_all();
        cr_assert(eq(int, major_compact_sync(), 0));
        check_all();
        close_two();
        cat_fini();
}

/* Regression: a tablet that came in with many files never compacted until
 * the shard's next flush ended (the only time a compaction was looked for
 * once its move was done) -- with a few moves under writes, tens of files. */
Test(shard_move, a_tablet_moved_in_compacts_without_waiting_for_a_flush)
{
        int from, to;
        uint32_t id, files_before;
        uint64_t files[64];

        opts.no_compaction = true;      /* the source piles up tables */
        id = open_two(&from);
        to = 1 - from;
        close_shard(to);
        opts.no_compaction = false;
        open_shard(to);
        use(from);
        for (uint32_t round = 0; round < ENG_COMPACT_DEFAULT_MAX_TABLES + 2; round++) {
                write_rows(round, N_ROWS, 7, "f", NULL);
                cr_assert(eq(int, flush_sync(), 0));
        }
        files_before = files_of(id, files);
        cr_assert(gt(u32, files_before, ENG_COMPACT_DEFAULT_MAX_TABLES));
        move(id, from, to);
        for (unsigned i = 0; i < 60000 && !shards[to]->stats.compactions; i++)
                run_for_ms(1);
        cr_expect(gt(u64, shards[to]->stats.compactions, 0), "no compaction after the move");
        check_all();
        close_two();
        cat_fini();
}

/* A file by a handed-over file's name that the target's manifest does not
 * name (left by a take-over that failed half-way) is replaced by the link. */
Test(shard_move, a_stale_file_by_the_same_name_is_replaced)
{
        int from, to;
        uint32_t id = open_two(&from);

        to = 1 - from;
        load();
        move_out(id, from);
        for (uint32_t i = 0; i < mo.h.n_files; i++) {
                char path[PATH_MAX + 32];
                FILE *f;

                snprintf(path, sizeof(path), "%s/%016" PRIx64 ".sst", dirs[to],
                         mo.h.files[i].file_id);
                cr_assert(not(eq(ptr, (void *)(f = fopen(path, "w")), NULL)));
                fputs("not an sstable", f);
                fclose(f);
        }
        cr_assert(eq(int, eng_shard_move_in(shards[to], &mo.h, &mi), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &mi_flag), 0));
        cr_assert(eq(int, mi_res, 0));
        switch_catalog(id, to, true, true);
        eng_handoff_fini(&mo.h);
        use(to);
        check_all();
        close_two();
        cat_fini();
}

/* The tablet's entries of the source's cache go into the target's: its
 * reads there start warm. */
Test(shard_move, the_cache_moves_with_the_tablet)
{
        int from, to;
        uint32_t id = open_two(&from);
        const struct eng_block_cache_stats *st;
        uint64_t blocks;

        to = 1 - from;
        write_rows(0, N_ROWS, 1, "a", NULL);
        cr_assert(eq(int, flush_sync(), 0));
        check_all();                    /* the source's cache holds its blocks */
        cr_assert(gt(u64, eng_block_cache_stats(shards[from]->cache)->blocks, 0));
        st = eng_block_cache_stats(shards[to]->cache);
        cr_assert(eq(u64, st->blocks, 0));
        move(id, from, to);
        for (unsigned i = 0; i < 10000 && !st->blocks; i++)
                run_for_ms(1);
        blocks = st->blocks;
        cr_expect(gt(u64, blocks, 0), "nothing came with the tablet");
        cr_expect(eq(u64, st->misses, 0));
        check_all();
        cr_expect(eq(u64, st->misses, 0), "the reads found every block");
        cr_expect(gt(u64, st->hits, 0));
        close_two();
        cat_fini();
}

/* Regression: the balancer's average rounded up, so a tablet once busy
 * stayed at 4 operations a second for ever (with 125 of them an idle
 * server looked busy and was never balanced by size). */
Test(shard_move, an_idle_tablets_average_load_gets_to_zero)
{
        int from;
        uint32_t id = open_two(&from);
        struct eng_tablet *t = shard_tablet_by_id(shards[from], id);

        t->ops_avg = 1000;
        for (int i = 0; i < 200; i++)
                eng_shard_tick(shards[from]);
        cr_expect(eq(u64, t->ops_avg, 0));
        close_two();
        cat_fini();
}
