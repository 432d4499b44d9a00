/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commit log's gathering (batch mode): how long the next flush waits
 * for the writers the last sync woke to come back, so that they share one
 * sync instead of splitting into two groups that take turns. A pure rule
 * over times the caller passes in (time_now_ns in the log, made-up ones
 * in tests). The log (wal.c) keeps one per log, on its shard.
 *
 * Why: a sync's acknowledgements wake its writers -- host threads blocked
 * in a call, clients waiting for a reply -- and they come back one at a
 * time, microseconds apart. Were the first of them to start the next flush
 * at once, the others would wait for the one after it, each write waiting
 * out two syncs (16 blocking writers through the library got half the
 * throughput of 16 writes kept in flight on the shard).
 *
 * The rule: the flush waits for the writers there were when the last sync
 * ended -- those it acknowledged and those that waited already -- but only
 * while they keep coming. It goes once no writer came back (since the sync
 * ended) for as long as the group so far took per writer, (last flush's
 * time + the wait so far) / writers waiting: a writer later than that
 * would lower the group's rate, not raise it. At the latest it goes the
 * last flush's time after the sync ended, at most ENG_WAL_GATHER_MAX_NS. A
 * lone writer never waits; when writers leave, the next sync wants fewer.
 * Where writers come back too slowly for waiting to pay -- ENG_WAL_GATHER_MISSES
 * waits in a row that ended short of what they wanted -- the log stops
 * waiting until ENG_WAL_GATHER_OFF_SYNCS more syncs ended (the missed
 * flush's own among them), then tries again. At a roll the count is off
 * once: the sealed segment's flush takes the writers already in the next
 * one too, and that one's flush may then wait for them in vain (a wait
 * of at most the cap, once per segment).
 *
 * Tried and dropped: wanting only as many writers as the last sync
 * acknowledged kept two groups taking turns once they had formed (the one
 * that waited already filled the count); a fixed deadline without the
 * rate made clients that come back slowly (redis-benchmark's 50
 * connections) wait it out on every sync.
 */
#ifndef SCREE_ENGINE_WAL_GATHER_H
#define SCREE_ENGINE_WAL_GATHER_H

#include <stdbool.h>
#include <stdint.h>

#define ENG_WAL_GATHER_MAX_NS (1000 * UINT64_C(1000))
#define ENG_WAL_GATHER_MISSES 4u
#define ENG_WAL_GATHER_OFF_SYNCS 64u

/* Zero-initialized: no sync yet, nothing waited for. Counts are writers
 * (eng_wal_write.writers); times are CLOCK_MONOTONIC ns. */
struct eng_wal_gather {
        uint32_t pending;               /* waiting for the next flush */
        uint32_t flushing;              /* in the flush in flight */
        uint32_t want;                  /* the next flush waits for this many */
        uint64_t flush_start_ns;        /* the flush in flight started */
        uint64_t synced_ns, sync_ns;    /* the last sync ended; its flush's time */
        uint64_t arrived_ns;            /* the last writer came */
        bool held;                      /* the next flush waited */
        uint32_t misses;                /* waits in a row that ended short */
        uint32_t off;                   /* syncs left without waiting */
        uint64_t waits;                 /* flushes that waited, ever */
};

/*
 * Pure code over the caller's state; any thread, one at a time per state.
 * REQUIRES of the times passed: they never go back; each flush is followed
 * by its sync before the next flush (one flush in flight, as the log has).
 */

/* `writers` more wait for the next flush (a record acknowledging them). */
void eng_wal_gather_arrive(struct eng_wal_gather *g, uint32_t writers, uint64_t now_ns);

/* When the next flush may start: 0 now, else that time (> now_ns). Changes
 * nothing. */
uint64_t eng_wal_gather_until(const struct eng_wal_gather *g, uint64_t now_ns);

/* The next flush waits (the caller armed a timer for eng_wal_gather_until):
 * it counts as having waited. */
void eng_wal_gather_hold(struct eng_wal_gather *g);

/* A flush starts, taking every waiting writer: a wait before it that ended
 * short of `want` is a miss. */
void eng_wal_gather_flush(struct eng_wal_gather *g, uint64_t now_ns);

/* The flush in flight is durable (its writers are acknowledged next). */
void eng_wal_gather_synced(struct eng_wal_gather *g, uint64_t now_ns);

#endif
