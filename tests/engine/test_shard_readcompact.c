/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Read compactions (engine/shard_compact.c): a tablet whose reads keep
 * consulting more than one of its tables -- scans seeking into each, gets
 * probing each filter -- has its tables merged into one once that waste
 * covers the merge's cost, with no write to prompt it; a memtable that
 * takes no more writes is flushed first and merged too, one still written
 * to is left to fill; a tablet of one table, or a shard without
 * compactions, never is. The data reads the same before and after.
 */
#include "engine/shard_internal.h"
#include "tests/engine/shard_helpers.h"

#include "base/time.h"

TestSuite(shard_readcompact, .init = setup, .fini = teardown, .timeout = 120);

enum { NKEYS = 600, SMALL = 40 };

static uint32_t version[NKEYS];

static void key_of(uint32_t i, char *buf)
{
        snprintf(buf, 16, "key%05u", i);
}

static uint32_t value_of(uint32_t i, uint32_t ver, char *buf)
{
        return (uint32_t)snprintf(buf, 128, "value-%u-of-%05u-%060u", ver, i, i * ver);
}

static void put_ordered(uint32_t i, uint32_t ver)
{
        char k[16], v[128];
        struct eng_mutation m = { .kind = ENG_MUT_PUT, .table = ENG_TABLE_ORDERED, .key = k };

        key_of(i, k);
        m.key_len = (uint32_t)strlen(k);
        m.value = v;
        m.value_len = value_of(i, ver, v);
        cr_assert(eq(int, write_sync(&m, 1), 0));
        version[i] = ver;
}

/* Every key, then two small overwrites, each flushed: three tables that a
 * size-tiered pick leaves alone (the oldest outweighs the newer ones). */
static void three_tables(void)
{
        for (uint32_t i = 0; i < NKEYS; i++)
                put_ordered(i, 1);
        cr_assert(eq(int, flush_sync(), 0));
        for (uint32_t f = 2; f <= 3; f++) {
                for (uint32_t i = 0; i < SMALL; i++)
                        put_ordered((i * 13 + f) % NKEYS, f);
                cr_assert(eq(int, flush_sync(), 0));
        }
}

/* The ordered table's SSTables, over its tablets. */
static uint32_t ordered_tables(void)
{
        uint32_t n = 0;

        for (uint32_t i = 0; i < sh->n_tablets; i++)
                if (sh->tablets[i]->table == ENG_TABLE_ORDERED && sh->tablets[i]->tset)
                        n += sh->tablets[i]->tset->n;
        return n;
}

/* Runs the loop until no compaction is in progress (60 s at most). */
static void wait_compactions(void)
{
        uint64_t deadline = time_now_ns() + 60 * NS_PER_SEC;

        while (sh->compaction && time_now_ns() < deadline)
                run_for_ms(5);
        cr_assert(eq(ptr, sh->compaction, NULL), "a compaction did not end in 60 s");
}

static void expect_gets(void)
{
        for (uint32_t i = 0; i < NKEYS; i++) {
                char k[16], want[128];
                struct rd x;

                key_of(i, k);
                cr_assert(eq(int, get_wait(ENG_TABLE_ORDERED, k, (uint32_t)strlen(k), &x), 0), "%s", k);
                cr_assert(eq(u32, x.g.value_len, value_of(i, version[i], want)), "%s", k);
                cr_assert(eq(int, memcmp(x.g.value, want, x.g.value_len), 0), "%s", k);
                eng_get_release(&x.g);
        }
}

struct page {
        struct eng_scan sc;
        uint32_t first, n;
        bool done;
        int res;
};

static int on_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct page *p = sc->ctx;
        char k[16], want[128];
        uint32_t i = p->first + p->n++;

        key_of(i, k);
        cr_assert(eq(u32, (uint32_t)it->key_len, (uint32_t)strlen(k)));
        cr_assert(eq(int, memcmp(it->key, k, it->key_len), 0), "row %u of a scan from %u", p->n,
                  p->first);
        cr_assert(eq(u32, it->value_len, value_of(i, version[i], want)), "%s", k);
        cr_assert(eq(int, memcmp(it->value, want, it->value_len), 0), "%s", k);
        return 0;
}

static void on_page(struct eng_scan *sc, int res)
{
        struct page *p = sc->ctx;

        p->done = true;
        p->res = res;
}

/* Scans `limit` rows from key `first` and checks them. */
static void scan_from(uint32_t first, uint32_t limit)
{
        struct page p = { .first = first };
        uint8_t pos[64];
        char k[16];
        uint32_t len;
        int r;

        key_of(first, k);
        len = (uint32_t)eng_shard_scan_pos(sh, ENG_TABLE_ORDERED, k, (uint32_t)strlen(k), pos);
        p.sc.item = on_item;
        p.sc.done = on_page;
        p.sc.ctx = &p;
        r = eng_shard_scan(sh, ENG_TABLE_ORDERED, pos, len, NULL, 0, limit, &p.sc);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &p.done), 0));
                r = p.res;
        }
        cr_assert(eq(int, r, 0));
        cr_assert(eq(u32, p.n, limit));
        eng_scan_release(&p.sc);
}

/* Reads by `read(n)` until a compaction starts; returns the reads it took
 * (fails past max). */
static uint32_t read_until_compaction(void (*read)(uint32_t n), uint32_t max)
{
        uint64_t before = eng_shard_stats(sh)->compactions;
        uint32_t n;

        /* One may start and end within a turn of the loop. */
        for (n = 0; n < max && !sh->compaction && eng_shard_stats(sh)->compactions == before; n++) {
                read(n);
                if (n % 16 == 15)
                        run_for_ms(1);  /* cached reads end at once: let a flush go on */
        }
        cr_assert(lt(u32, n, max), "%u reads started no compaction", n);
        wait_compactions();
        cr_assert(eq(u64, eng_shard_stats(sh)->compactions, before + 1));
        return n;
}

static void scan_some(uint32_t n)
{
        scan_from((n * 37) % (NKEYS - 20), 20);
}

static void get_some(uint32_t n)
{
        char k[16];
        struct rd x;

        key_of((n * 37) % NKEYS, k);
        cr_assert(eq(int, get_wait(ENG_TABLE_ORDERED, k, (uint32_t)strlen(k), &x), 0), "%s", k);
        eng_get_release(&x.g);
}

Test(shard_readcompact, scans_over_several_tables_merge_them_into_one)
{
        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        three_tables();
        run_for_ms(20);
        cr_assert(eq(u32, ordered_tables(), 3), "the writes alone should leave three tables");
        cr_assert(eq(u64, eng_shard_stats(sh)->compactions, 0));
        (void)read_until_compaction(scan_some, 5000);
        cr_assert(eq(u32, ordered_tables(), 1));
        expect_gets();
        for (uint32_t i = 0; i + 100 <= NKEYS; i += 100)
                scan_from(i, 100);
        cr_assert(eq(u64, eng_shard_stats(sh)->read_compactions, 1));
        /* One table: reads owe nothing, and merge nothing more. */
        for (uint32_t n = 0; n < 2000; n++)
                scan_some(n);
        run_for_ms(20);
        cr_assert(eq(ptr, sh->compaction, NULL));
        cr_assert(eq(u64, eng_shard_stats(sh)->compactions, 1));
        cr_assert(eq(u64, eng_shard_stats(sh)->flushes, 3));
        cr_assert(eq(int, reopen(), 0));
        cr_assert(eq(u32, ordered_tables(), 1));
        expect_gets();
}

Test(shard_readcompact, point_reads_alone_merge_them_too_but_later_than_scans)
{
        uint32_t gets, scans;

        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        three_tables();
        gets = read_until_compaction(get_some, 200000);
        cr_assert(eq(u32, ordered_tables(), 1));
        expect_gets();
        /* Again with scans: a scan's seek per extra table weighs more. */
        for (uint32_t f = 4; f <= 5; f++) {
                for (uint32_t i = 0; i < SMALL; i++)
                        put_ordered((i * 7 + f) % NKEYS, f);
                cr_assert(eq(int, flush_sync(), 0));
        }
        cr_assert(eq(u32, ordered_tables(), 3));
        scans = read_until_compaction(scan_some, 5000);
        cr_assert(lt(u32, scans * 10, gets), "%u scans against %u gets", scans, gets);
        cr_assert(eq(u32, ordered_tables(), 1));
        expect_gets();
}

/* The ordered table's memtables holding entries. */
static uint32_t ordered_memtables(void)
{
        uint32_t n = 0;

        for (uint32_t i = 0; i < sh->n_tablets; i++)
                if (sh->tablets[i]->table == ENG_TABLE_ORDERED)
                        n += (sh->tablets[i]->active_first_segment ? 1 : 0) + sh->tablets[i]->n_imm;
        return n;
}

/* Scans until the ordered table is one table and no memtable (5000 reads
 * at most between two compactions); returns the compactions it took. */
static uint64_t scan_until_one_source(void)
{
        uint64_t c0 = eng_shard_stats(sh)->compactions;

        for (uint32_t round = 0; ordered_tables() + ordered_memtables() > 1; round++) {
                cr_assert(lt(u32, round, 4), "no single source after %u read compactions", round);
                (void)read_until_compaction(scan_some, 5000);
        }
        return eng_shard_stats(sh)->compactions - c0;
}

Test(shard_readcompact, a_memtable_no_longer_written_is_flushed_and_merged_too)
{
        uint64_t flushes;

        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        three_tables();
        for (uint32_t i = 0; i < SMALL; i++)
                put_ordered((i * 11 + 5) % NKEYS, 4);   /* left in the memtable */
        cr_assert(eq(u32, ordered_memtables(), 1));
        flushes = eng_shard_stats(sh)->flushes;
        cr_assert(le(u64, scan_until_one_source(), 2));
        cr_assert(eq(u32, ordered_tables(), 1));
        cr_assert(eq(u32, ordered_memtables(), 0));
        cr_assert(eq(u64, eng_shard_stats(sh)->flushes, flushes + 1));
        cr_assert(eq(u64, eng_shard_stats(sh)->read_seals, 1));
        expect_gets();
        cr_assert(eq(int, reopen(), 0));
        expect_gets();
}

/* One table and a memtable; a write lands between the two looks at the
 * memtable, then only scans: it is judged quiet at a later look, flushed
 * and merged (a review found it kept for good). */
Test(shard_readcompact, a_memtable_written_once_more_is_flushed_once_quiet)
{
        uint64_t looks;

        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        for (uint32_t i = 0; i < NKEYS; i++)
                put_ordered(i, 1);
        cr_assert(eq(int, flush_sync(), 0));
        for (uint32_t i = 0; i < SMALL; i++)
                put_ordered((i * 3 + 1) % NKEYS, 2);
        cr_assert(eq(u32, ordered_tables() + ordered_memtables(), 2));
        /* Scan until the first look at the memtable, write once, then scan. */
        for (looks = 0; looks < 100000; looks++) {
                struct eng_tablet *t = NULL;

                for (uint32_t i = 0; i < sh->n_tablets; i++)
                        if (sh->tablets[i]->table == ENG_TABLE_ORDERED && sh->tablets[i]->tset)
                                t = sh->tablets[i];     /* the one holding the keys */
                cr_assert(not(eq(ptr, t, NULL)));
                if (t && t->debt.looked)
                        break;
                scan_some((uint32_t)looks);
        }
        cr_assert(lt(u64, looks, 100000), "the memtable was never looked at");
        put_ordered(7, 3);
        cr_assert(le(u64, scan_until_one_source(), 2));
        cr_assert(eq(u32, ordered_memtables(), 0));
        cr_assert(eq(u64, eng_shard_stats(sh)->read_seals, 1));
        expect_gets();
}

/* Scans, and a write before every one: the memtable is never quiet. */
static void scan_and_write(uint32_t n)
{
        put_ordered((n * 17) % NKEYS, 100 + n);
        scan_some(n);
}

Test(shard_readcompact, a_memtable_still_written_is_left_and_the_tables_merged)
{
        uint64_t flushes;

        opts.compaction_rate = UINT64_MAX;
        cr_assert(eq(int, shard_open_sync(), 0));
        three_tables();
        flushes = eng_shard_stats(sh)->flushes;
        (void)read_until_compaction(scan_and_write, 5000);
        cr_assert(eq(u32, ordered_tables(), 1));
        cr_assert(eq(u32, ordered_memtables(), 1));
        cr_assert(eq(u64, eng_shard_stats(sh)->flushes, flushes), "a written memtable was flushed");
        cr_assert(eq(u64, eng_shard_stats(sh)->read_seals, 0));
        expect_gets();
}

Test(shard_readcompact, a_shard_without_compactions_never_merges_for_reads)
{
        opts.no_compaction = true;
        cr_assert(eq(int, shard_open_sync(), 0));
        three_tables();
        for (uint32_t n = 0; n < 3000; n++)
                scan_some(n);
        run_for_ms(20);
        cr_assert(eq(ptr, sh->compaction, NULL));
        cr_assert(eq(u64, eng_shard_stats(sh)->compactions, 0));
        cr_assert(eq(u32, ordered_tables(), 3));
        expect_gets();
}
