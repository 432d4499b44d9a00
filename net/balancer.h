/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tablet balancer (docs/tables.md "Balancing"): on shard 0, once a
 * second, it asks every shard for its tablets' sizes and operations per
 * second (of the tables with typed keys: the Redis keyspace's tablets do
 * not move) and, when the shards are uneven, moves one tablet from the
 * busiest to the idlest (net_tablet_move) -- by load (operations a
 * second averaged over some 8 s) when the server does real work, else by
 * size, else by each table's tablet count. Moves are paced and damped:
 * one at a time, only after three rounds in a row found the shards
 * uneven, the next decided only once every shard's figures are from
 * after it; a tablet moved is left where it is for a while; a move must
 * make the two shards' difference smaller by a margin; and a move back
 * the way the last one went doubles the pause after it. Tablets stay
 * where the catalog says across restarts.
 *
 * Threads: everything on shard 0, but net_cmd_balancer (any shard; it
 * sends itself to shard 0).
 */
#ifndef SCREE_NET_BALANCER_H
#define SCREE_NET_BALANCER_H

#include <stdbool.h>
#include <stdint.h>

#include "net/tablet_move.h"

struct net_shard;
struct net_balance_round;

/* Shard 0's balancer state (in struct net_server). */
struct net_balancer {
        bool paused;
        bool busy;                      /* a round or a move in flight */
        uint64_t moves;                 /* moves it made */
        uint64_t next_ns;               /* no round before this */
        uint64_t last_move_ns;
        uint32_t last_from, last_to;    /* the last move's shards */
        uint64_t pause_ns;              /* after the last move (pause_after) */
        uint32_t steady;                /* rounds in a row that found a move to make */
        char last[256];                 /* what the last move was, or why none */
        struct net_tablet_move move;
        /* Tablets moved lately, left alone until their time (ring). */
        struct net_bal_cool { uint32_t tablet; uint64_t until_ns; } cool[64];
        uint32_t n_cool, cool_next;     /* entries in use; the next to write */
};

/* Shard 0, once a second. */
void net_balancer_tick(struct net_shard *sh0);

/* The damping's two steps, pure but for b (unit-tested): */
/* A round found a move to make (found) or not: whether to make it now
 * (rounds in a row found one, BAL_STEADY_ROUNDS of them). */
bool net_balancer_confirm(struct net_balancer *b, bool found);
/* A move from shard from to shard to was made at now (time_now_ns):
 * counts it and returns the pause before the next round -- doubled, up to
 * 64 s, when it goes back the way the last one went within the last
 * pause and a minute; back to 2 s once that long passed without a move;
 * else as it was. */
uint64_t net_balancer_moved(struct net_balancer *b, uint32_t from, uint32_t to, uint64_t now);

#endif
