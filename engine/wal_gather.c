/* SPDX-License-Identifier: Apache-2.0 */
/* The commit log's gathering rule; see wal_gather.h. */
#include "engine/wal_gather.h"

void eng_wal_gather_arrive(struct eng_wal_gather *g, uint32_t writers, uint64_t now_ns)
{
        g->pending += writers;
        g->arrived_ns = now_ns;
}

uint64_t eng_wal_gather_until(const struct eng_wal_gather *g, uint64_t now_ns)
{
        uint64_t last, back, until;
        uint32_t k = g->pending;

        if (k == 0 || k >= g->want || g->off || now_ns < g->synced_ns)
                return 0;
        last = g->synced_ns + (g->sync_ns < ENG_WAL_GATHER_MAX_NS ? g->sync_ns
                                                                  : ENG_WAL_GATHER_MAX_NS);
        if (now_ns >= last)
                return 0;
        /* The last writer came back this long after the sync (those that
         * came during it tell nothing about how fast the others come back;
         * back < last - synced <= 1 ms here). The wait ends at x after the
         * sync where x - back = (sync + x) / k, the group's time per writer
         * so far: x = (k back + sync) / (k - 1). */
        back = g->arrived_ns > g->synced_ns ? g->arrived_ns - g->synced_ns : 0;
        until = k == 1 ? last : g->synced_ns + (k * back + g->sync_ns) / (k - 1);
        if (until > last)
                until = last;
        return now_ns >= until ? 0 : until;
}

void eng_wal_gather_hold(struct eng_wal_gather *g)
{
        if (!g->held)
                g->waits++;
        g->held = true;
}

void eng_wal_gather_flush(struct eng_wal_gather *g, uint64_t now_ns)
{
        if (g->held) {
                g->held = false;
                if (g->pending >= g->want) {
                        g->misses = 0;
                } else if (++g->misses >= ENG_WAL_GATHER_MISSES) {
                        g->misses = 0;
                        g->off = ENG_WAL_GATHER_OFF_SYNCS;
                }
        }
        g->flushing = g->pending;
        g->pending = 0;
        g->flush_start_ns = now_ns;
}

void eng_wal_gather_synced(struct eng_wal_gather *g, uint64_t now_ns)
{
        g->synced_ns = now_ns;
        g->sync_ns = now_ns - g->flush_start_ns;
        g->want = g->flushing + g->pending;
        g->flushing = 0;
        if (g->off)
                g->off--;
}
