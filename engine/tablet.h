/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal keys and the static tablet map.
 *
 * Every key the engine stores is an internal key: the table id (4 bytes,
 * big-endian, so tables sort apart), then for a hashed table the XXH3-64 of
 * the user key (8 bytes, big-endian, so hashed keys spread evenly over the
 * key space), then the user key itself:
 *
 *   ordered table:  table id | user key
 *   hashed table:   table id | xxh3(user key) | user key
 *
 * A tablet is a contiguous range of internal keys owned by one shard; every
 * internal key falls in exactly one tablet. The static map (this issue's;
 * splitting and moving come later) has two tables:
 *   - ENG_TABLE_DEFAULT (hashed, the Redis keyspace): pre-split on the hash
 *     into tablets_per_shard * n_shards equal ranges;
 *   - ENG_TABLE_ORDERED: pre-split on the first user-key byte into the same
 *     number of ranges.
 * Global tablet i of a table goes to shard i % n_shards, where it is that
 * shard's local tablet (i / n_shards) for the default table and
 * tablets_per_shard + i / n_shards for the ordered one. A shard therefore
 * owns 2 * tablets_per_shard tablets, numbered 0.. locally. Each also has
 * a catalog tablet id (eng_tablet_static_id; engine/catalog.h), which is
 * what the manifest records.
 *
 * Pure; any thread.
 */
#ifndef SCREE_ENGINE_TABLET_H
#define SCREE_ENGINE_TABLET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum eng_table {
        ENG_TABLE_DEFAULT = 0,          /* hashed */
        ENG_TABLE_ORDERED = 1,
        ENG_TABLE_MAX,
};

#define ENG_TABLE_ID_BYTES 4u
#define ENG_HASH_BYTES 8u
/* Bytes an internal key adds to the longest user key. */
#define ENG_IKEY_OVERHEAD (ENG_TABLE_ID_BYTES + ENG_HASH_BYTES)
#define ENG_MAX_USER_KEY_BYTES (32u << 10)
#define ENG_MAX_TABLETS_PER_SHARD 64u
#define ENG_MAX_SHARDS 256u

static inline bool eng_table_hashed(enum eng_table t)
{
        return t == ENG_TABLE_DEFAULT;
}

/* Bytes of the internal key of a user key of len bytes in table t. */
static inline size_t eng_ikey_size(enum eng_table t, size_t len)
{
        return ENG_TABLE_ID_BYTES + (eng_table_hashed(t) ? ENG_HASH_BYTES : 0) + len;
}

/* The XXH3-64 a hashed table places in front of the user key. */
uint64_t eng_key_hash(const void *key, size_t len);

/* Writes the internal key of (t, key) into dst (eng_ikey_size bytes);
 * returns its length. */
size_t eng_ikey_encode(enum eng_table t, const void *key, size_t len, uint8_t *dst);

/* Splits an internal key. Returns 0 with the table and the user key
 * (borrowed from ikey), or -SCREE_ECORRUPT if it is too short or names an
 * unknown table. */
int eng_ikey_decode(const uint8_t *ikey, size_t len, enum eng_table *ret_table,
                    const uint8_t **ret_key, size_t *ret_len);

/* The first internal key of table t (the table id alone): every key of t
 * sorts at or after it, and before eng_ikey_table_start(t + 1). */
size_t eng_ikey_table_start(enum eng_table t, uint8_t dst[ENG_TABLE_ID_BYTES]);

struct eng_tablet_map {
        uint32_t n_shards, tablets_per_shard;
};

/* Checks the map's numbers: 0 or -EINVAL. */
int eng_tablet_map_init(struct eng_tablet_map *m, uint32_t n_shards, uint32_t tablets_per_shard);

/* Tablets per table (all shards), and per shard (all tables). */
static inline uint32_t eng_tablet_map_per_table(const struct eng_tablet_map *m)
{
        return m->n_shards * m->tablets_per_shard;
}

static inline uint32_t eng_tablet_map_per_shard(const struct eng_tablet_map *m)
{
        return (uint32_t)ENG_TABLE_MAX * m->tablets_per_shard;
}

struct eng_tablet_loc {
        uint32_t shard;                 /* owner */
        uint32_t local;                 /* tablet number within the owner */
};

/* Where the internal key ikey lives. REQUIRES: a valid internal key. */
struct eng_tablet_loc eng_tablet_of_ikey(const struct eng_tablet_map *m, const uint8_t *ikey,
                                         size_t len);

/* Where the user key (t, key) lives, without building the internal key. */
struct eng_tablet_loc eng_tablet_of_key(const struct eng_tablet_map *m, enum eng_table t,
                                        const void *key, size_t len);

/* The table of a shard's local tablet. REQUIRES: local < per_shard. */
enum eng_table eng_tablet_table(const struct eng_tablet_map *m, uint32_t local);

/*
 * The catalog tablet id of shard's local tablet (eng_catalog_initial gives
 * the static map's tablets these ids): global tablet g of table t is id
 * t * per_table + g, so local tablet l of shard s is
 * (l / tps) * n_shards * tps + (l % tps) * n_shards + s, below
 * ENG_TABLE_MAX * per_table. Increasing in local for a given shard.
 * REQUIRES: shard < n_shards, local < per_shard.
 */
uint32_t eng_tablet_static_id(const struct eng_tablet_map *m, uint32_t shard, uint32_t local);

/*
 * The inverse: the shard and local tablet whose static id is id. Returns 0,
 * or -EINVAL (outputs untouched) when id is no static tablet id of m (at or
 * past ENG_TABLE_MAX * per_table).
 */
int eng_tablet_static_local(const struct eng_tablet_map *m, uint32_t id, uint32_t *ret_shard,
                            uint32_t *ret_local);

/*
 * The internal-key range [start, end) of a shard's local tablet, written
 * into start_buf and end_buf (ENG_IKEY_OVERHEAD bytes each) with their
 * lengths. The last tablet of a table ends where the next table starts.
 */
void eng_tablet_range(const struct eng_tablet_map *m, uint32_t shard, uint32_t local,
                      uint8_t *start_buf, size_t *start_len, uint8_t *end_buf, size_t *end_len);

#endif
