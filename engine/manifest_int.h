/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the manifest format's files: manifest_format.c (payloads of
 * versions 2 and 3, framing, the reader), manifest_v1.c (decoding version
 * 1 payloads), manifest_state.c (states, edits) and manifest_range.c
 * (tablet ranges, relayout). Not for use outside them. Pure; any thread.
 */
#ifndef SCREE_ENGINE_MANIFEST_INT_H
#define SCREE_ENGINE_MANIFEST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct eng_manifest_edit;
struct eng_manifest_layout;
struct eng_manifest_state;
struct eng_manifest_table;
struct eng_manifest_tablet;

/* The arrays of a decoded or computed edit, in one allocation. */
struct eng_manifest_edit_arrays {
        struct eng_manifest_table *added, *removed;
        struct eng_manifest_tablet *new_tablets;
        uint64_t *seqs;
        uint32_t *tablets, *dropped;
        uint8_t *keys;                  /* key_bytes for the new tablets' ranges */
};

/* Allocates the arrays for e's counts, and key_bytes bytes of keys, into
 * *a. Returns the allocation (caller frees), or NULL on ENOMEM or when it
 * would be empty. */
void *eng_manifest_edit_arrays_new(const struct eng_manifest_edit *e, size_t key_bytes,
                                   struct eng_manifest_edit_arrays *a);

/* Points e's arrays at a's, NULL where e's count is 0. */
void eng_manifest_edit_arrays_set(struct eng_manifest_edit *e, const struct eng_manifest_edit_arrays *a);

/* eng_manifest_snapshot_decode of a version 1 payload (manifest_v1.c). */
int eng_manifest_v1_snapshot_decode(const void *src, size_t len, struct eng_manifest_state *ret);

/* eng_manifest_edit_decode of a version 1 payload (manifest_v1.c). */
int eng_manifest_v1_edit_decode(const void *src, size_t len, const struct eng_manifest_layout *layout,
                                struct eng_manifest_edit *ret, void **ret_mem);

/* ---- ranges (manifest_range.c) ---- */

/* memcmp order, a prefix first. */
int eng_manifest_key_cmp(const uint8_t *a, uint32_t a_len, const uint8_t *b, uint32_t b_len);

/* Whether t's range is well formed (eng_manifest_state_check's rule);
 * false for an unranged t. */
bool eng_manifest_range_is_valid(const struct eng_manifest_tablet *t);

/* Whether t is a well-formed unranged entry: all zero but id and seq. */
bool eng_manifest_unranged_is_valid(const struct eng_manifest_tablet *t);

/* Whether the ranges of a and b (both ranged) share a key. */
bool eng_manifest_ranges_overlap(const struct eng_manifest_tablet *a,
                                 const struct eng_manifest_tablet *b);

/* Checks that the ranged entries of v (n) are pairwise disjoint: 0,
 * -SCREE_ECORRUPT or -ENOMEM. */
int eng_manifest_ranges_check(const struct eng_manifest_tablet *v, uint32_t n);

/* Copies every range of v (n entries) into one new allocation *ret_keys
 * (NULL when there are none; caller frees) and points v's entries into
 * it. Returns 0 or -ENOMEM (v unchanged). */
int eng_manifest_keys_pack(struct eng_manifest_tablet *v, uint32_t n, uint8_t **ret_keys);

/* s's entry for id, or NULL. */
const struct eng_manifest_tablet *eng_manifest_tablet_get(const struct eng_manifest_state *s,
                                                          uint32_t id);

/* Snapshot payload (all versions): fixed part, then the tablet entries
 * (version 1: flushed-seq slots), then tables. */
#define SNAP_SHARD_OFF 0
#define SNAP_N_SHARDS_OFF 4
#define SNAP_TABLETS_PER_SHARD_OFF 8
#define SNAP_N_TABLETS_OFF 12
#define SNAP_NEXT_FILE_ID_OFF 16
#define SNAP_LOG_SEGMENT_OFF 24
#define SNAP_N_TABLES_OFF 32
#define SNAP_RESERVED_OFF 36            /* versions 1, 2: 0 */
#define SNAP_KEY_BYTES_OFF 36           /* version 3: bytes of the key area */
#define SNAP_FIXED_BYTES 40

/* Edit payload: fixed part, then added tables, removed and flushed pairs,
 * dropped ids (version 2); version 3 adds two counts to the fixed part,
 * and new tablets and their key area after the dropped ids. */
#define EDIT_NEXT_FILE_ID_OFF 0
#define EDIT_LOG_SEGMENT_OFF 8
#define EDIT_N_ADDED_OFF 16
#define EDIT_N_REMOVED_OFF 20
#define EDIT_N_FLUSHED_OFF 24
#define EDIT_N_DROPPED_OFF 28
#define EDIT_FIXED_BYTES 32
#define EDIT_N_NEW_OFF 32               /* version 3 */
#define EDIT_KEY_BYTES_OFF 36           /* version 3 */
#define EDIT_V3_FIXED_BYTES 40

#endif
