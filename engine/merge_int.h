/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the merge (merge_iter.c) and its children over memtables and
 * SSTables (merge_child.c) share beyond merge_iter.h. Shard-local.
 */
#ifndef SCREE_ENGINE_MERGE_INT_H
#define SCREE_ENGINE_MERGE_INT_H

#include "engine/merge_iter.h"

/*
 * A child over t as a merge with options o (borrowed for the call) reads
 * it: streaming when o->stream_bytes is set (eng_merge_child_sst_seq_new),
 * else through the cache, told o->span. Either way damaged blocks go to
 * fn(arg, d) and are skipped when o->skip_damaged. 0 and *ret, -EINVAL
 * (stream_bytes), or -ENOMEM. Shard-local.
 */
int eng_merge_child_sst_for(struct eng_sst_table *t, const struct eng_merge_opts *o,
                            eng_sst_damaged_fn fn, void *arg, struct eng_merge_child **ret);

#endif
