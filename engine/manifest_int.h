/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the manifest format's two files: manifest_format.c (states,
 * version 2 payloads, framing, the reader) and manifest_v1.c (decoding
 * version 1 payloads into version 2 states and edits). Not for use
 * outside them. Pure; any thread.
 */
#ifndef SCREE_ENGINE_MANIFEST_INT_H
#define SCREE_ENGINE_MANIFEST_INT_H

#include <stddef.h>
#include <stdint.h>

struct eng_manifest_edit;
struct eng_manifest_layout;
struct eng_manifest_state;
struct eng_manifest_table;

/* The arrays of a decoded edit, in one allocation. */
struct eng_manifest_edit_arrays {
        struct eng_manifest_table *added, *removed;
        uint64_t *seqs;
        uint32_t *tablets, *dropped;
};

/* Allocates the arrays for e's counts into *a. Returns the allocation
 * (caller frees), or NULL on ENOMEM or when every count is 0. */
void *eng_manifest_edit_arrays_new(const struct eng_manifest_edit *e,
                                   struct eng_manifest_edit_arrays *a);

/* Points e's arrays at a's, NULL where e's count is 0. */
void eng_manifest_edit_arrays_set(struct eng_manifest_edit *e, const struct eng_manifest_edit_arrays *a);

/* eng_manifest_snapshot_decode of a version 1 payload (manifest_v1.c). */
int eng_manifest_v1_snapshot_decode(const void *src, size_t len, struct eng_manifest_state *ret);

/* eng_manifest_edit_decode of a version 1 payload (manifest_v1.c). */
int eng_manifest_v1_edit_decode(const void *src, size_t len, const struct eng_manifest_layout *layout,
                                struct eng_manifest_edit *ret, void **ret_mem);

/* Snapshot payload (both versions): fixed part, then the tablet entries
 * (version 1: flushed-seq slots), then tables. */
#define SNAP_SHARD_OFF 0
#define SNAP_N_SHARDS_OFF 4
#define SNAP_TABLETS_PER_SHARD_OFF 8
#define SNAP_N_TABLETS_OFF 12
#define SNAP_NEXT_FILE_ID_OFF 16
#define SNAP_LOG_SEGMENT_OFF 24
#define SNAP_N_TABLES_OFF 32
#define SNAP_RESERVED_OFF 36
#define SNAP_FIXED_BYTES 40

/* Edit payload: fixed part, then added tables, removed and flushed pairs,
 * dropped ids (version 2). */
#define EDIT_NEXT_FILE_ID_OFF 0
#define EDIT_LOG_SEGMENT_OFF 8
#define EDIT_N_ADDED_OFF 16
#define EDIT_N_REMOVED_OFF 20
#define EDIT_N_FLUSHED_OFF 24
#define EDIT_N_DROPPED_OFF 28
#define EDIT_FIXED_BYTES 32

#endif
