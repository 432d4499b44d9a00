/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A moving tablet's cache, carried along (shard_move.h): the blocks and
 * rows the source's block cache holds of the tablet's files go into the
 * target's, so that the tablet's reads do not start cold there -- a move
 * on one machine keeps the cache that a move between machines loses.
 * Its files keep their ids across the move and never change, so an entry
 * means the same on both shards. Nothing is shared: the source copies
 * the entries into a buffer of its own (a step at each tick of the move,
 * before the cut: the hot ones first, at most half its cache, 256 MiB and
 * a second), the buffer
 * travels with the hand-over, and the target puts the entries in its
 * cache (a step each loop iteration, once it took the tablet over) and
 * frees it.
 *
 * Threads: plan and copy on the source shard, fill on the target shard,
 * free on whichever holds the buffer.
 */
#ifndef SCREE_ENGINE_SHARD_WARM_H
#define SCREE_ENGINE_SHARD_WARM_H

#include <stdbool.h>
#include <stdint.h>

struct eng_shard;
struct eng_tablet;
struct eng_warm;

/* What t's files have in s's cache now, to copy; NULL when nothing (or
 * on ENOMEM: the move goes on cold). */
struct eng_warm *shard_warm_plan(struct eng_shard *s, const struct eng_tablet *t);
/* Copies the next entries (about a MiB); true once all are copied (or
 * the budget is spent). Entries evicted since the plan are skipped. */
bool shard_warm_copy(struct eng_shard *s, struct eng_warm *w);
/* Keeps only w's entries of the n files given (those handed over; w may
 * be NULL). */
struct eng_manifest_table;
void shard_warm_keep(struct eng_warm *w, const struct eng_manifest_table *files, uint32_t n);
/* Takes w (NULL: nothing) and puts its entries in s's cache, a step each
 * loop iteration, skipping files s no longer names; frees it at the end
 * (a job of s's: close waits for it, and it stops early then). */
void shard_warm_fill(struct eng_shard *s, struct eng_warm *w);
/* The bytes of entries copied so far. */
uint64_t eng_warm_bytes(const struct eng_warm *w);
/* Accepts NULL. */
void eng_warm_free(struct eng_warm *w);

#endif
