/* SPDX-License-Identifier: Apache-2.0 */
/*
 * At start, the resolution of the cross-shard writes a stop left in doubt
 * (shard_xtxn.h): every part in doubt commits or aborts as its
 * coordinator decided, every decision is carried out and forgotten. Until
 * it is done, the keys of the parts in doubt stay held (their operations
 * wait), so the program that runs the shards starts it once every engine
 * is open, before it serves data operations.
 */
#ifndef SCREE_ENGINE_XTXN_RESOLVE_H
#define SCREE_ENGINE_XTXN_RESOLVE_H

#include "engine/shards.h"

struct rx_loop;

/*
 * Resolves, over every shard of shards (borrowed until done runs), what
 * the last stop left in doubt; then done(arg) runs on shard 0 -- also
 * when it failed (out of memory, a shard's error: logged; the parts in
 * doubt then keep their keys held until the next start). Shard 0 (loop0),
 * once every shard's engine is open.
 */
void eng_xtxn_resolve(struct rx_loop *loop0, const struct eng_shards *shards,
                      void (*done)(void *arg), void *arg);

#endif
