/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commit log's gathering rule (engine/wal_gather.h) on made-up times:
 * a lone writer never waits; the writers a sync woke are waited for while
 * they keep coming back, and no longer than the last flush took; a flush
 * goes once all of them are back, or once none came for as long as the
 * group took per writer; waits that keep ending short turn the waiting
 * off for a while. Times are in ns, written as multiples of US (a
 * microsecond).
 */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/wal_gather.h"

#define US 1000u
#define T0 (1000000 * US)       /* an arbitrary start */

TestSuite(wal_gather, .timeout = 30);

/* What the log does: asks when the next flush may go, and holds it if
 * that is later. */
static uint64_t wait_until(struct eng_wal_gather *g, uint64_t now)
{
        uint64_t until = eng_wal_gather_until(g, now);

        if (until)
                eng_wal_gather_hold(g);
        return until;
}

/* One flush of the writers waiting, durable after sync_us: returns when
 * its sync ended. */
static uint64_t flush_and_sync(struct eng_wal_gather *g, uint64_t now, uint64_t sync_us)
{
        eng_wal_gather_flush(g, now);
        eng_wal_gather_synced(g, now + sync_us * US);
        return now + sync_us * US;
}

Test(wal_gather, a_lone_writer_never_waits)
{
        struct eng_wal_gather g = { 0 };
        uint64_t t = T0;

        for (int i = 0; i < 10; i++) {
                eng_wal_gather_arrive(&g, 1, t);
                cr_assert(eq(u64, wait_until(&g, t), 0), "round %d", i);
                t = flush_and_sync(&g, t, 500) + 20 * US;
        }
        cr_expect(eq(u64, g.waits, 0));
}

/* 16 writers had split into two groups of 8 taking turns: 8 in the flush,
 * 8 waiting during its sync. When the sync ends, the next flush waits for
 * the 8 it woke as they come back 10 us apart, and goes with all 16. */
Test(wal_gather, the_writers_a_sync_woke_are_waited_for_while_they_come_back)
{
        struct eng_wal_gather g = { 0 };
        uint64_t t = T0, synced;

        eng_wal_gather_arrive(&g, 8, t);
        eng_wal_gather_flush(&g, t);
        eng_wal_gather_arrive(&g, 8, t + 100 * US);         /* during the sync */
        synced = t + 500 * US;
        eng_wal_gather_synced(&g, synced);
        cr_assert(eq(u32, g.want, 16));
        /* None back yet, 8 waiting: a first one back within 500 / 7 us keeps
         * the group's time per writer under what it is at that moment. */
        cr_assert(eq(u64, wait_until(&g, synced), synced + 500 * US / 7));
        for (uint64_t i = 1; i < 8; i++) {
                uint64_t now = synced + i * 10 * US;

                eng_wal_gather_arrive(&g, 1, now);
                cr_assert(eq(u64, wait_until(&g, now),
                             synced + ((8 + i) * i * 10 * US + 500 * US) / (7 + i)),
                          "writer %llu back", (unsigned long long)i);
        }
        eng_wal_gather_arrive(&g, 1, synced + 80 * US);
        cr_assert(eq(u64, wait_until(&g, synced + 80 * US), 0), "all 16 back: go");
        cr_expect(eq(u64, g.waits, 1), "one flush waited");
        eng_wal_gather_flush(&g, synced + 80 * US);
        cr_expect(eq(u32, g.flushing, 16));
}

/* 8 woken, 4 back 10 us apart, then no more: the wait ends when none came
 * for as long as the group took per writer, (400 + x) / 4 = x - 40 us. */
Test(wal_gather, a_flush_goes_once_writers_stop_coming_back)
{
        struct eng_wal_gather g = { 0 };
        uint64_t synced, until;

        eng_wal_gather_arrive(&g, 8, T0);
        synced = flush_and_sync(&g, T0, 400);
        for (uint64_t i = 1; i <= 4; i++)
                eng_wal_gather_arrive(&g, 1, synced + i * 10 * US);
        until = wait_until(&g, synced + 40 * US);
        cr_assert(eq(u64, until, synced + (4 * 40 * US + 400 * US) / 3));
        cr_expect(eq(u64, wait_until(&g, until - 1), until), "the timer may fire early");
        cr_expect(eq(u64, wait_until(&g, until), 0), "none came for that long");
}

/* One writer back of two: no rate to go by, so it waits out the last
 * flush's time -- capped for a slow disk. */
Test(wal_gather, no_wait_outlasts_the_last_flush_or_the_cap)
{
        struct eng_wal_gather g = { 0 };
        uint64_t synced;

        eng_wal_gather_arrive(&g, 2, T0);
        synced = flush_and_sync(&g, T0, 300);
        eng_wal_gather_arrive(&g, 1, synced + 10 * US);
        cr_assert(eq(u64, wait_until(&g, synced + 10 * US), synced + 300 * US));
        cr_expect(eq(u64, wait_until(&g, synced + 300 * US), 0));

        eng_wal_gather_arrive(&g, 1, synced + 300 * US);
        synced = flush_and_sync(&g, synced + 300 * US, 5000);  /* a slow disk: 5 ms */
        eng_wal_gather_arrive(&g, 1, synced);
        cr_assert(eq(u64, wait_until(&g, synced), synced + ENG_WAL_GATHER_MAX_NS));
        cr_expect(eq(u64, wait_until(&g, synced + ENG_WAL_GATHER_MAX_NS), 0));
}

/* Three writers, A and B woken by each sync and C waiting through it. A
 * comes back at once; B only after the flush went, during its sync. The
 * flush waits for B in vain (A and C go), and B is waiting through the next
 * sync: the same again, a miss each time. */
static uint64_t round_with_a_late_writer(struct eng_wal_gather *g, uint64_t synced, bool *waited)
{
        eng_wal_gather_arrive(g, 1, synced + 10 * US);              /* A */
        *waited = wait_until(g, synced + 10 * US) != 0;
        if (*waited)
                cr_assert(eq(u64, wait_until(g, synced + 500 * US), 0));
        eng_wal_gather_flush(g, synced + 500 * US);
        eng_wal_gather_arrive(g, 1, synced + 600 * US);             /* B, late */
        eng_wal_gather_synced(g, synced + 1000 * US);
        return synced + 1000 * US;
}

static uint64_t three_writers(struct eng_wal_gather *g)
{
        eng_wal_gather_arrive(g, 2, T0);
        eng_wal_gather_flush(g, T0);
        eng_wal_gather_arrive(g, 1, T0 + 100 * US);
        eng_wal_gather_synced(g, T0 + 500 * US);
        cr_assert(eq(u32, g->want, 3));
        return T0 + 500 * US;
}

Test(wal_gather, waits_that_keep_ending_short_stop_for_a_while)
{
        struct eng_wal_gather g = { 0 };
        uint64_t synced = three_writers(&g);
        unsigned syncs = 0;
        bool waited;

        for (unsigned i = 0; i < ENG_WAL_GATHER_MISSES; i++) {
                synced = round_with_a_late_writer(&g, synced, &waited);
                cr_assert(waited, "round %u waited", i);
                cr_assert(eq(u32, g.want, 3));
        }
        /* the last miss turned waiting off, from its flush's sync on */
        cr_assert(eq(u32, g.off, ENG_WAL_GATHER_OFF_SYNCS - 1));
        for (syncs = 1;; syncs++) {
                cr_assert(le(u32, syncs, ENG_WAL_GATHER_OFF_SYNCS), "waits again");
                synced = round_with_a_late_writer(&g, synced, &waited);
                if (waited)
                        break;
        }
        cr_expect(eq(u32, syncs, ENG_WAL_GATHER_OFF_SYNCS),
                  "syncs until it waits again, the missed flush's own among them");
}

Test(wal_gather, a_wait_that_got_its_writers_clears_the_misses)
{
        struct eng_wal_gather g = { 0 };
        uint64_t synced = three_writers(&g);
        bool waited;

        synced = round_with_a_late_writer(&g, synced, &waited);
        cr_assert(waited);
        cr_assert(eq(u32, g.misses, 1));
        eng_wal_gather_arrive(&g, 1, synced + 10 * US);
        cr_assert(gt(u64, wait_until(&g, synced + 10 * US), 0));
        eng_wal_gather_arrive(&g, 1, synced + 20 * US);
        cr_assert(eq(u64, wait_until(&g, synced + 20 * US), 0), "all back");
        eng_wal_gather_flush(&g, synced + 20 * US);
        cr_expect(eq(u32, g.misses, 0));
}
