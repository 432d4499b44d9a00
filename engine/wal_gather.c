/* SPDX-License-Identifier: Apache-2.0 */
/* The commit log's gathering rule; see wal_gather.h. */
#include "engine/wal_gather.h"

void wal_gather_arrive(struct wal_gather *g, uint32_t writers, uint64_t now)
{
        g->pending += writers;
        g->arrived_ns = now;
}

uint64_t wal_gather_until(struct wal_gather *g, uint64_t now)
{
        uint64_t last, back, until;
        uint32_t k = g->pending;

        if (k == 0 || k >= g->want || g->off || now < g->synced_ns)
                return 0;
        last = g->synced_ns + (g->sync_ns < WAL_GATHER_MAX_NS ? g->sync_ns : WAL_GATHER_MAX_NS);
        /* The last writer came back this long after the sync (those that
         * came during it tell nothing about how fast the others come back).
         * The wait ends at x after the sync where x - back = (sync + x) / k,
         * the group's time per writer so far: x = (k back + sync) / (k - 1). */
        back = g->arrived_ns > g->synced_ns ? g->arrived_ns - g->synced_ns : 0;
        until = k == 1 ? last : g->synced_ns + (k * back + g->sync_ns) / (k - 1);
        if (until > last)
                until = last;
        if (now >= until)
                return 0;
        if (!g->held)
                g->waits++;
        g->held = true;
        return until;
}

void wal_gather_flush(struct wal_gather *g, uint64_t now)
{
        if (g->held) {
                g->held = false;
                if (g->pending >= g->want) {
                        g->misses = 0;
                } else if (++g->misses >= WAL_GATHER_MISSES) {
                        g->misses = 0;
                        g->off = WAL_GATHER_OFF_SYNCS;
                }
        }
        g->flushing = g->pending;
        g->pending = 0;
        g->flush_start_ns = now;
}

void wal_gather_synced(struct wal_gather *g, uint64_t now)
{
        g->synced_ns = now;
        g->sync_ns = now - g->flush_start_ns;
        g->want = g->flushing + g->pending;
        g->flushing = 0;
        if (g->off)
                g->off--;
}
