/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog: directories and tables named by paths (`/app/events`), each
 * table with its key schema, key mode, options and tablet map, as an
 * immutable, versioned value. Every change takes a snapshot and returns a
 * new one (version + 1); the old one is never modified and stays valid
 * while referenced. One shard will serialise changes and publish each new
 * snapshot to every shard (a later step); shards then route by it without
 * locks.
 *
 * Sharing: a snapshot is immutable once built and may be read by any
 * number of threads at once. Its reference count is atomic (the one
 * exception to "no atomics in engine/": the count is the only thing
 * shards share), so eng_catalog_ref/unref are safe from any thread and the
 * last unref frees it. Everything a snapshot returns (tables, tablets,
 * names) is borrowed, valid until that snapshot's last unref.
 *
 * Names: 1..ENG_CATALOG_MAX_NAME bytes of [A-Za-z0-9_.-], not "." or
 * "..", unique within their directory (a table and a directory may not
 * share a name). A path is "/" then names joined by "/", at most
 * ENG_CATALOG_MAX_PATH bytes, no trailing "/". The root "/" always exists.
 *
 * Internal keys (as engine/tablet.h): table id (4 bytes, big-endian), then
 * for a hashed table the XXH3 (eng_key_hash) of the key's first hash_parts
 * parts (8 bytes, big-endian), then the user key: a tuple encoding
 * (engine/tuple.h) for ENG_CATALOG_KEYS_TUPLE tables, the bytes as given
 * for ENG_CATALOG_KEYS_RAW ones (the Redis keyspace). A table's tablets
 * are sorted start keys; tablet 0 starts at the table id alone, and a key
 * belongs to the last tablet whose start is at or before it.
 *
 * The encoding, byte by byte: docs/format/catalog.md.
 *
 * Pure (no I/O, no threads of its own); see each function for threads.
 */
#ifndef SCREE_ENGINE_CATALOG_H
#define SCREE_ENGINE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/tuple.h"

#define ENG_CATALOG_MAX_NAME 255u
#define ENG_CATALOG_MAX_PATH 1024u
#define ENG_CATALOG_MAX_PARTS 16u
#define ENG_CATALOG_MAX_TABLETS 65536u          /* per table */
#define ENG_CATALOG_MAX_SPLIT_BYTES 2048u       /* an explicit split point's encoding */
/* A tablet's start key: table id (4), a hashed table's hash (8), then at
 * most a split point's bytes. */
#define ENG_CATALOG_MAX_START_BYTES (12u + ENG_CATALOG_MAX_SPLIT_BYTES)
#define ENG_CATALOG_MAX_SHARDS 256u
/* Tables 0 and 1 are the static tables of engine/tablet.h; an empty
 * catalog's new ids start here. */
#define ENG_CATALOG_FIRST_USER_ID 2u
/* Redis's numbered databases, /redis/db0 .. /redis/db15. */
#define ENG_CATALOG_REDIS_DBS 16u
/* eng_catalog_initial's tables: the static two and databases 1..15. */
#define ENG_CATALOG_INITIAL_TABLES (ENG_CATALOG_FIRST_USER_ID + ENG_CATALOG_REDIS_DBS - 1)

enum eng_catalog_key_mode {
        ENG_CATALOG_ORDERED = 1,                /* internal key: id | user key */
        ENG_CATALOG_HASHED = 2,                 /* id | hash(first hash_parts parts) | user key */
        ENG_CATALOG_KEY_MODE_MAX,
        ENG_CATALOG_KEY_MODE_INVALID = 0,
};

enum eng_catalog_key_format {
        ENG_CATALOG_KEYS_TUPLE = 1,             /* user keys are tuple encodings of the schema */
        /* User keys are opaque bytes, stored as given: the Redis keyspace.
         * The schema is then exactly one bytes part (hash_parts 1). */
        ENG_CATALOG_KEYS_RAW = 2,
        ENG_CATALOG_KEY_FORMAT_MAX,
        ENG_CATALOG_KEY_FORMAT_INVALID = 0,
};

enum eng_catalog_compaction {
        ENG_CATALOG_COMPACTION_SIZE_TIERED = 1,
        ENG_CATALOG_COMPACTION_MAX,
        ENG_CATALOG_COMPACTION_INVALID = 0,
};

/* Per-table options; the partitioning ones are acted on by a later step. */
struct eng_catalog_options {
        bool split_by_size;
        bool split_by_load;
        enum eng_catalog_compaction compaction;
        uint32_t split_load_percent;    /* 1..100: a tablet's share of a shard's CPU */
        uint32_t min_tablets;           /* 1..max_tablets */
        uint32_t max_tablets;           /* ..ENG_CATALOG_MAX_TABLETS */
        uint64_t split_size_bytes;      /* 1 MiB..1 TiB */
        uint64_t default_ttl_ms;        /* 0: none; < 2^62 */
        /* Per-partition rate limits (ScyllaDB's per_partition_rate_limit):
         * the reads and the writes one partition may take a second, 0 for
         * no limit (the default); enforced by the owning shard (shard.h,
         * "per-partition rate limits"). */
        uint32_t partition_reads_per_sec;
        uint32_t partition_writes_per_sec;
};

struct eng_catalog_tablet {
        uint32_t id;                    /* unique in the catalog, never reused */
        uint32_t shard;                 /* owner */
        uint32_t start_off;             /* start key: table->keys + start_off */
        uint32_t start_len;
        /* The start key's 8 bytes after the table id (a hashed table's
         * hash), big-endian, zero-padded: routing compares these first and
         * the whole keys only on a tie. Derived, not encoded. */
        uint64_t key8;
};

/* The 8 bytes of an internal key after its table id, zero-padded. */
static inline uint64_t eng_catalog_key8(const uint8_t *k, size_t len)
{
        uint64_t v = 0;

        for (size_t i = 4; i < 12; i++)
                v = v << 8 | (i < len ? k[i] : 0);
        return v;
}

/* A table, borrowed from its snapshot. */
struct eng_catalog_table {
        uint32_t id;
        char *path;                     /* NUL-terminated */
        const char *name;               /* the last component, inside path */
        enum eng_catalog_key_format key_format;
        enum eng_catalog_key_mode mode;
        uint32_t n_parts;
        uint32_t hash_parts;            /* hashed: 1..n_parts; ordered: 0 */
        enum eng_tuple_type parts[ENG_CATALOG_MAX_PARTS];
        struct eng_catalog_options options;
        uint32_t n_tablets;
        struct eng_catalog_tablet *tablets;
        uint8_t *keys;                  /* every tablet's start key, back to back */
        uint32_t keys_len;
};

static inline const uint8_t *eng_catalog_tablet_start(const struct eng_catalog_table *t, uint32_t i)
{
        return t->keys + t->tablets[i].start_off;
}

/* An explicit split point: a tuple encoding (borrowed). */
struct eng_catalog_split {
        const uint8_t *key;
        size_t len;
};

/* What eng_catalog_create_table creates; everything borrowed for the call. */
struct eng_catalog_table_spec {
        const char *path;
        enum eng_catalog_key_format key_format;
        enum eng_catalog_key_mode mode;
        uint32_t n_parts;                       /* 1..ENG_CATALOG_MAX_PARTS */
        const enum eng_tuple_type *parts;       /* I64, U64 or BYTES each */
        uint32_t hash_parts;                    /* hashed: 1..n_parts; ordered: 0 */
        struct eng_catalog_options options;
        /* Pre-split. Either n_tablets uniform tablets (0 or 1: one tablet)
         * over the hash space (hashed) or over the first part's whole
         * value range (ordered, integer first part), or, for an ordered
         * table, n_splits split points: strictly increasing tuples of 1..n
         * parts of the schema's types (or NULL), giving n_splits + 1
         * tablets (n_tablets then 0 or n_splits + 1). An ordered table
         * with raw keys splits uniformly on the first byte (at most 256
         * tablets). Tablet i goes to shard (id + i) % n_shards. */
        uint32_t n_tablets;
        const struct eng_catalog_split *splits;
        uint32_t n_splits;
};

struct eng_catalog;

/* An entry of a directory listing; name borrowed from the snapshot. */
struct eng_catalog_entry {
        const char *name;
        bool is_table;
        uint32_t table_id;              /* is_table only */
};

/* ---- snapshots ---- */

/* The defaults: split by size at 2 GiB on, by load (50%) off, 1..1024
 * tablets, no TTL, size-tiered, no per-partition rate limits. Any thread. */
struct eng_catalog_options eng_catalog_options_default(void);

/* Checks options as table creation and alteration do (each value's range,
 * min_tablets <= max_tablets): 0, or -EINVAL with err (err_len bytes, may
 * be 0) naming what is wrong. Any thread. */
int eng_catalog_options_check(const struct eng_catalog_options *o, char *err, size_t err_len);

/*
 * A new empty catalog (only "/", version 1, next table id
 * ENG_CATALOG_FIRST_USER_ID) for n_shards shards. Returns NULL on ENOMEM.
 * REQUIRES: 1 <= n_shards <= ENG_CATALOG_MAX_SHARDS. Caller unrefs. Any thread.
 */
struct eng_catalog *eng_catalog_new(uint32_t n_shards);

/*
 * The first catalog of a data directory, new or written before the
 * catalog existed: engine/tablet.h's static map, plus Redis's other
 * databases. Directories /redis and /scree; table 0 is /redis/db0
 * (hashed, raw keys: the Redis keyspace, database 0), table 1 is
 * /scree/ordered (ordered, raw keys, split on the first user-key byte),
 * tables 2..16 are /redis/db1 .. /redis/db15, laid out as db0. Global
 * tablet g of table t gets tablet id t * n_shards * tablets_per_shard + g
 * and shard g % n_shards -- so every database routes a key to the same
 * shard, and a shard's local tablet l of tablet.h's map is tablet id
 * (l / tps) * n_shards * tps + (l % tps) * n_shards + shard. Ordered
 * tablets that can hold no key (more tablets than byte values) are left
 * out. Version 1, next table id ENG_CATALOG_INITIAL_TABLES. Returns 0 and
 * *ret (caller unrefs), -EINVAL (numbers outside eng_tablet_map_init's) or
 * -ENOMEM. Any thread.
 */
int eng_catalog_initial(uint32_t n_shards, uint32_t tablets_per_shard, struct eng_catalog **ret);

/* Takes a reference; returns c. Any thread (atomic). */
struct eng_catalog *eng_catalog_ref(struct eng_catalog *c);

/* Drops a reference; the last one frees c. Accepts NULL. Any thread (atomic). */
void eng_catalog_unref(struct eng_catalog *c);

uint64_t eng_catalog_version(const struct eng_catalog *c);
uint32_t eng_catalog_n_shards(const struct eng_catalog *c);
uint32_t eng_catalog_next_table_id(const struct eng_catalog *c);
/* Tablet ids below it were given out (to live or dropped tables). */
uint32_t eng_catalog_next_tablet_id(const struct eng_catalog *c);
uint32_t eng_catalog_n_tables(const struct eng_catalog *c);
/* Table i (0..n_tables), in id order. Borrowed. */
const struct eng_catalog_table *eng_catalog_table_at(const struct eng_catalog *c, uint32_t i);

/* Ids of dropped tables whose data is still on disk, ascending (borrowed),
 * and their count. */
const uint32_t *eng_catalog_dropped(const struct eng_catalog *c, uint32_t *ret_n);

/* ---- changes: each returns a new snapshot or an error ----
 *
 * Common contract: c is borrowed and never changed. On success: 0 and
 * *ret, a new snapshot with version + 1 (caller unrefs). On error: *ret
 * untouched, and err (err_len bytes, may be 0) holds a message naming
 * what was wrong. Errors: -EINVAL (a bad path or name, schema, option or
 * split point), -EEXIST (the name is taken in its directory),
 * -SCREE_ENOTFOUND (no such parent, directory or table), -ENOTDIR (a path
 * goes through a table), -ENOTEMPTY (rmdir of a directory with entries),
 * -ENOSPC (table ids exhausted), -ENOMEM. Any thread, on a snapshot it
 * holds a reference to.
 */
int eng_catalog_mkdir(const struct eng_catalog *c, const char *path, struct eng_catalog **ret,
                      char *err, size_t err_len);
int eng_catalog_rmdir(const struct eng_catalog *c, const char *path, struct eng_catalog **ret,
                      char *err, size_t err_len);
/* The new table's id is the catalog's next id; *ret_id (may be NULL) gets it. */
int eng_catalog_create_table(const struct eng_catalog *c, const struct eng_catalog_table_spec *spec,
                             struct eng_catalog **ret, uint32_t *ret_id, char *err, size_t err_len);
/* The table's id joins the dropped list; its name is free at once.
 * -EINVAL also when path names a directory. */
int eng_catalog_drop_table(const struct eng_catalog *c, const char *path, struct eng_catalog **ret,
                           char *err, size_t err_len);
/* Replaces a table's options (validated as at creation). */
int eng_catalog_alter_table(const struct eng_catalog *c, const char *path,
                            const struct eng_catalog_options *opts, struct eng_catalog **ret,
                            char *err, size_t err_len);
/* Swaps the paths of the live tables at a and b (a == b: nothing changes
 * but the version): each table keeps its id, schema, options, tablets and
 * rows under the other's name. Redis's SWAPDB. */
int eng_catalog_swap_tables(const struct eng_catalog *c, const char *a, const char *b,
                            struct eng_catalog **ret, char *err, size_t err_len);
/* Forgets a dropped id once its data is gone from disk (-SCREE_ENOTFOUND
 * if it is not in the dropped list). */
int eng_catalog_forget_dropped(const struct eng_catalog *c, uint32_t id, struct eng_catalog **ret,
                               char *err, size_t err_len);

/* ---- tablet changes (catalog_tablets.c) ----
 *
 * The common contract above. A table's tablets stay sorted and cover its
 * whole key range; new tablets get fresh ids from the catalog's next
 * tablet id (ids are never reused: an id names one key range on one
 * shard's data for good), and keep their table's place in it. The table's
 * min_tablets and max_tablets options bound automatic splits and merges,
 * not these: a split or merge asked for here may go past them. Errors:
 * -SCREE_ENOTFOUND (no live tablet with that id), -EINVAL, -ENOSPC and
 * -ENOMEM as each function says.
 */

/*
 * Splits live tablet tablet_id, [start, end) (eng_catalog_tablet_end), at
 * internal key at (at_len bytes, borrowed): it is replaced, in place in
 * its table's tablets, by [start, at) and [at, end), both on its shard,
 * with ids next_tablet_id and next_tablet_id + 1 (written to ret_ids[0],
 * ret_ids[1]; ret_ids may be NULL); the next tablet id goes up by 2. at
 * is any internal key strictly inside the range (routing compares bytes;
 * for a tuple table it need not be a whole tuple). -EINVAL: at not
 * starting with the table's id, not after start, not before end, or
 * longer than ENG_CATALOG_MAX_START_BYTES; -ENOSPC: the table has
 * ENG_CATALOG_MAX_TABLETS tablets, or fewer than 2 tablet ids are left.
 */
int eng_catalog_split_tablet(const struct eng_catalog *c, uint32_t tablet_id, const uint8_t *at,
                             size_t at_len, struct eng_catalog **ret, uint32_t ret_ids[2],
                             char *err, size_t err_len);

/*
 * Merges live tablet first_id with the next tablet of its table into one,
 * [first's start, the second's end), on their shard, with id
 * next_tablet_id (written to *ret_id, which may be NULL); the next tablet
 * id goes up by 1. -EINVAL: first_id is its table's last tablet (nothing
 * to merge with), or the two are on different shards (move one first);
 * -ENOSPC: tablet ids exhausted.
 */
int eng_catalog_merge_tablets(const struct eng_catalog *c, uint32_t first_id,
                              struct eng_catalog **ret, uint32_t *ret_id, char *err,
                              size_t err_len);

/*
 * Moves live tablet tablet_id to shard: it keeps its id and range. The
 * next tablet id does not change. -EINVAL: shard >= n_shards, or the
 * tablet is on that shard already.
 */
int eng_catalog_move_tablet(const struct eng_catalog *c, uint32_t tablet_id, uint32_t shard,
                            struct eng_catalog **ret, char *err, size_t err_len);

/* ---- queries (any thread, on a referenced snapshot) ---- */

/*
 * Lists directory dir: its subdirectories and tables, sorted by name, into
 * ret[0..cap). Returns the number of entries (more than cap: only cap were
 * written; call again with room), or -EINVAL / -SCREE_ENOTFOUND / -ENOTDIR / -ENOMEM
 * with err set. Names are borrowed from c.
 */
long eng_catalog_list(const struct eng_catalog *c, const char *dir, struct eng_catalog_entry *ret,
                      size_t cap, char *err, size_t err_len);

/* The table at path: 0 and *ret (borrowed), or -SCREE_ENOTFOUND. */
int eng_catalog_lookup(const struct eng_catalog *c, const char *path,
                       const struct eng_catalog_table **ret);

/* Whether path names a directory ("/" included). */
bool eng_catalog_is_dir(const struct eng_catalog *c, const char *path);

/* The live table with id: 0 and *ret (borrowed), or -SCREE_ENOTFOUND. */
int eng_catalog_table_by_id(const struct eng_catalog *c, uint32_t id,
                            const struct eng_catalog_table **ret);

/*
 * Tablet i's end key, exclusive: the next tablet's start, or for the
 * table's last tablet the table's end, the next table id alone (4 bytes,
 * big-endian, written into buf; a live table's id is below UINT32_MAX,
 * so the end always exists). Returns its length and sets *ret to it
 * (borrowed from t, or buf). REQUIRES: i < t->n_tablets.
 */
uint32_t eng_catalog_tablet_end(const struct eng_catalog_table *t, uint32_t i, uint8_t buf[4],
                                const uint8_t **ret);

/* The live tablet with id: 0, its table and its index there (borrowed),
 * or -SCREE_ENOTFOUND. A walk over every tablet: not for hot paths. */
int eng_catalog_tablet_by_id(const struct eng_catalog *c, uint32_t id,
                             const struct eng_catalog_table **ret_table, uint32_t *ret_index);

/* ---- routing ---- */

/* The tablet (index into t->tablets) of an internal key of t, by binary
 * search. REQUIRES: ikey starts with t's id (4 bytes). */
uint32_t eng_catalog_route_ikey(const struct eng_catalog_table *t, const uint8_t *ikey, size_t len);

/*
 * The tablet of user key (key, len) of t, without building the internal
 * key. Returns 0 and *ret_tablet, or -EINVAL if t is hashed on a tuple
 * prefix and the key holds fewer than hash_parts whole parts.
 */
int eng_catalog_route_key(const struct eng_catalog_table *t, const void *key, size_t len,
                          uint32_t *ret_tablet);

/* The tablet of internal key ikey in c: finds its table by the id in front.
 * 0 and *ret_table, *ret_tablet; -SCREE_ENOTFOUND (short key or no such
 * live table). */
int eng_catalog_route(const struct eng_catalog *c, const uint8_t *ikey, size_t len,
                      const struct eng_catalog_table **ret_table, uint32_t *ret_tablet);

/* Bytes of the internal key of a user key of len bytes in t. */
size_t eng_catalog_ikey_size(const struct eng_catalog_table *t, size_t len);

/* Writes the internal key of (t, key) into dst (eng_catalog_ikey_size
 * bytes). Returns its length, or -EINVAL as eng_catalog_route_key. */
long eng_catalog_ikey_encode(const struct eng_catalog_table *t, const void *key, size_t len,
                             uint8_t *dst);

/* ---- encoding (catalog_format.c) ---- */

#define ENG_CATALOG_MAGIC "screeCAT"
/* Version 2 added the per-partition rate limits to a table's options;
 * version 1 is still read (its tables have no limits). Always written as
 * the newest. */
#define ENG_CATALOG_FORMAT_VERSION 2u
#define ENG_CATALOG_HEADER_BYTES 40u
/* Seed of both checksums ("screecat"): a catalog is one whole file, so no
 * per-file salt is needed to tell its bytes from another file's. */
#define ENG_CATALOG_SEED UINT64_C(0x7363726565636174)

/* Bytes of c's encoding. Any thread. */
size_t eng_catalog_encoded_size(const struct eng_catalog *c);

/* Encodes c into the eng_catalog_encoded_size(c) bytes at dst. Any thread. */
void eng_catalog_encode(const struct eng_catalog *c, void *dst);

/*
 * Decodes an encoding (len bytes at src, borrowed) into *ret (written only
 * on success; caller unrefs; refcount 1). Returns 0, -SCREE_ECORRUPT
 * (anything malformed: a bad header, checksum, length, count, name,
 * schema, order or reference; see eng_catalog_check), -SCREE_EUNSUPPORTED
 * (a newer format version) or -ENOMEM. Never trusts a length before the
 * checksum covering it verifies. Any thread.
 */
int eng_catalog_decode(const void *src, size_t len, struct eng_catalog **ret);

/*
 * Checks every invariant of a snapshot: valid and unique paths whose
 * parents are directories, tables in id order below the next id, valid
 * schemas and options, tablets starting at the table id and strictly
 * increasing within the table, shards below n_shards, tablet ids unique
 * and below the next tablet id, dropped ids sorted, unique, below the next
 * id and not live. 0, -SCREE_ECORRUPT or -ENOMEM. For asserts and decode.
 */
int eng_catalog_check(const struct eng_catalog *c);

#endif
