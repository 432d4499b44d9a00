/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table commands' arguments and replies (DIR.*, TABLE.*, ROW.*;
 * docs/tables.md): typed key parts parsed against a table's schema into
 * tuple encodings (engine/tuple.h), range bounds and cursors turned into
 * positions, TABLE.CREATE and TABLE.ALTER into catalog specs and options,
 * ROW.PUT / ROW.WRITE into mutation records, and keys, rows and tablet
 * ranges written as RESP values.
 *
 * A position is an internal key without its 4-byte table id: for an
 * ordered table the tuple key, for a hashed one the key's 8-byte hash
 * (engine/catalog.h) then the tuple key. Engine internal key = the table
 * id (big-endian) followed by the position. A range is [start, end) of
 * positions; a cursor is the position of the next row to return plus the
 * direction, so it stays valid whatever the table's tablets do.
 *
 * Errors: every parse function returns a negative code (-EINVAL for bad
 * input, -ENOMEM) and writes into err (err_len bytes, may be 0) the text a
 * client sees after "ERR ", naming what was wrong. Output parameters are
 * written only on success.
 *
 * Pure: no I/O, no engine state; tables are borrowed catalog values. Any
 * thread. One header for the family, implemented in tbl_args.c (paths,
 * parts, keys, row writes), tbl_range.c (bounds, cursors), tbl_schema.c
 * (TABLE.CREATE, options) and tbl_reply.c (replies), sharing tbl_int.h.
 */
#ifndef SCREE_NET_TBL_ARGS_H
#define SCREE_NET_TBL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/catalog.h"
#include "engine/shard.h"
#include "net/resp_parse.h"

struct net_resp_out;

/* Room for any message these functions write. */
#define NET_TBL_ERR_MAX 256u

/* The server's defaults for the row limits (issue 25: both configurable). */
#define NET_TBL_DEFAULT_MAX_KEY_BYTES 2048u             /* a key's tuple encoding */
#define NET_TBL_DEFAULT_MAX_VALUE_BYTES (8u << 20)

/* ROW.RANGE's LIMIT: default and largest. */
#define NET_TBL_DEFAULT_LIMIT 100u
#define NET_TBL_MAX_LIMIT 100000u

struct net_tbl_limits {
        size_t max_key_bytes;           /* of a key's tuple encoding */
        size_t max_value_bytes;
};

/* ---- paths ---- */

/*
 * Copies a path argument into buf (cap bytes) as a NUL-terminated string
 * for the catalog, which checks its syntax. Returns 0, or -EINVAL when it
 * holds a NUL byte or does not fit (more than ENG_CATALOG_MAX_PATH bytes
 * or cap - 1). a borrowed.
 */
int net_tbl_path(const struct net_arg *a, char *buf, size_t cap, char *err, size_t err_len);

/* Whether table path lies under directory dir ("/" holds everything),
 * at any depth: TABLE.LIST's filter. */
bool net_tbl_path_is_under(const char *path, const char *dir);

/* ---- typed parts and keys ---- */


/*
 * Parses one key part of the given type: i64 and u64 as strict decimals
 * (as Redis's integers: no spaces, '+', leading zeros or "-0"), bytes as
 * given; the argument NULL (exactly) is NULL for every type, and for a
 * bytes part one or more backslashes then NULL stand for themselves with
 * one backslash removed. A bytes part points into a (borrowed: valid while
 * a is). Returns 0 and *ret, or -EINVAL with "<what> must be an i64"
 * (what: e.g. "key part 2").
 */
int net_tbl_part_parse(const struct net_arg *a, enum eng_tuple_type type, const char *what,
                       struct eng_tuple_part *ret, char *err, size_t err_len);

/*
 * Parses a key: argv[0..argc) against table t's parts (argc must be
 * t->n_parts) into its tuple encoding at dst (cap bytes). Returns 0 and
 * *ret_len, or -EINVAL: a wrong count ("table /a/b has 2 key parts, got
 * 3"), a bad part, a raw-key table, or an encoding over lim's
 * max_key_bytes or cap. t, argv, lim borrowed.
 */
int net_tbl_key_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                      const struct net_tbl_limits *lim, uint8_t *dst, size_t cap, size_t *ret_len,
                      char *err, size_t err_len);

/* ---- row writes: ROW.PUT, ROW.DEL, ROW.WRITE ---- */

enum net_tbl_op_kind {
        NET_TBL_OP_PUT = 1,             /* = ENG_MUT_PUT */
        NET_TBL_OP_DEL = 2,             /* = ENG_MUT_DEL */
        NET_TBL_OP_KIND_MAX,
        NET_TBL_OP_KIND_INVALID = 0,
};

/* One row write, shaped as struct eng_mutation (engine/shard.h). */
struct net_tbl_op {
        enum net_tbl_op_kind kind;
        const uint8_t *key;             /* tuple encoding: inside the owning net_tbl_ops */
        uint32_t key_len;
        const void *value;              /* put: the argument's bytes (borrowed from argv) */
        uint32_t value_len;
        /* put: time to live in ms, relative (the caller adds now for
         * eng_mutation.expiry_ms): EX / PX, else the table's default TTL;
         * 0 = never. Below 2^62. */
        uint64_t ttl_ms;
};

/* Parsed row writes; caller-embedded, freed with net_tbl_ops_fini. */
struct net_tbl_ops {
        struct net_tbl_op *ops;         /* heap */
        uint32_t n;
        uint8_t *keys;                  /* heap: every op's key */
};

/*
 * ROW.PUT: argv[0..argc) is "part.. value [EX seconds | PX milliseconds]"
 * (after the table). Fills *ret with one put. Returns 0, -EINVAL (message
 * as net_tbl_key_parse, a value over max_value_bytes, a bad or
 * non-positive time, a wrong argument count) or -ENOMEM. Values are
 * borrowed from argv: valid while it is.
 */
int net_tbl_put_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                      const struct net_tbl_limits *lim, struct net_tbl_ops *ret, char *err,
                      size_t err_len);

/*
 * ROW.WRITE: argv[0..argc) is one or more of "PUT part.. value [EX s | PX
 * ms]" and "DEL part.." (words without case), after the table. Errors name
 * the op ("op 2 (DEL): ..."). Returns as net_tbl_put_parse.
 */
int net_tbl_write_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                        const struct net_tbl_limits *lim, struct net_tbl_ops *ret, char *err,
                        size_t err_len);

/* Frees what ops holds and zeroes it; accepts a zeroed one. */
void net_tbl_ops_fini(struct net_tbl_ops *ops);

/* ---- ranges and cursors: ROW.RANGE, ROW.COUNT, ROW.DELRANGE ---- */

/*
 * [start, end) of positions (see the top). start_len 0: the table's first
 * row; end_open: past its last. Both point into mem, which the range owns.
 */
struct net_tbl_bounds {
        const uint8_t *start;
        size_t start_len;
        const uint8_t *end;
        size_t end_len;
        bool end_open;
        uint8_t *mem;                   /* heap */
};

/* A ROW.RANGE page: the range with the cursor applied (bounds), the rows
 * to return at most, and the direction (rev: from the end down). */
struct net_tbl_range {
        struct net_tbl_bounds b;
        uint32_t limit;
        bool rev;
};

/*
 * ROW.COUNT and ROW.DELRANGE: argv[0..argc) is "[GE|GT n part1..partn]
 * [LE|LT n part1..partn]" (after the table; either order, each at most
 * once; n is 1..the table's parts, each part parsed by its type). GE p:
 * from the first key >= p; GT p: after every key that starts with p; LE p:
 * up to every key that starts with p, included; LT p: before p. For a
 * hashed table: no bounds, or both with at least hash_parts parts and
 * equal on those. Returns 0 and *ret (caller finis), -EINVAL (a bad word,
 * count or part; a start after the end; the hashed rule; a raw-key table)
 * or -ENOMEM.
 */
int net_tbl_bounds_parse(const struct eng_catalog_table *t, const struct net_arg *argv,
                         size_t argc, const struct net_tbl_limits *lim,
                         struct net_tbl_bounds *ret, char *err, size_t err_len);

/* Frees b's memory and zeroes it; accepts a zeroed one. */
void net_tbl_bounds_fini(struct net_tbl_bounds *b);

/*
 * ROW.RANGE: the bounds as net_tbl_bounds_parse, then "[LIMIT count] [REV]
 * [CURSOR cursor]" in any order (count 1..NET_TBL_MAX_LIMIT, default
 * NET_TBL_DEFAULT_LIMIT). The cursor (from a reply; "0": the start) is
 * decoded (net_tbl_cursor_parse) and applied (net_tbl_bounds_seek).
 * Returns 0 and *ret (caller finis ret->b), -EINVAL or -ENOMEM.
 */
int net_tbl_range_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                        const struct net_tbl_limits *lim, struct net_tbl_range *ret, char *err,
                        size_t err_len);

/* Cursor text: "B" (format 2), "F" or "R" (forward, reverse), the table's
 * id (8 lowercase hex digits), then the position in lowercase hex. "0" is
 * the start, and a reply's "0" the end. */
#define NET_TBL_CURSOR_START "0"
#define NET_TBL_CURSOR_SIZE(pos_len) (10 + 2 * (size_t)(pos_len) + 1)

/* Writes the cursor of the row at position pos (len > 0 bytes) of table
 * id table for a walk in direction rev into buf (cap >=
 * NET_TBL_CURSOR_SIZE(len)), NUL-terminated. Returns its length, or 0
 * when cap is too small. */
size_t net_tbl_cursor_format(uint32_t table, const uint8_t *pos, size_t len, bool rev, char *buf,
                             size_t cap);

/* A decoded cursor: is_start, or the position of the next row. */
struct net_tbl_cursor {
        bool is_start;
        bool rev;
        uint8_t *pos;                   /* heap; NULL when is_start */
        size_t len;
};

/*
 * Decodes cursor text a for table t: "0", or a cursor of
 * net_tbl_cursor_format made for t (its id) whose position is a key of t (its parts of t's
 * types or NULL, and for a hashed table the right hash). Returns 0 and
 * *ret (caller finis), -EINVAL ("invalid cursor: ...") or -ENOMEM.
 */
int net_tbl_cursor_parse(const struct eng_catalog_table *t, const struct net_arg *a,
                         const struct net_tbl_limits *lim, struct net_tbl_cursor *ret, char *err,
                         size_t err_len);

/* Frees c's position and zeroes it; accepts a zeroed one. */
void net_tbl_cursor_fini(struct net_tbl_cursor *c);

/*
 * Narrows b to what a walk in direction rev still has to return after
 * cursor c (borrowed): forward, from c's position on; reverse, up to it
 * included. Returns 0, -EINVAL (c made for the other direction, or its
 * position outside b: "invalid cursor: ...") or -ENOMEM; b is unchanged
 * on error.
 */
int net_tbl_bounds_seek(struct net_tbl_bounds *b, const struct net_tbl_cursor *c, bool rev,
                        char *err, size_t err_len);

/* ---- TABLE.CREATE and TABLE.ALTER ---- */

/* A parsed TABLE.CREATE; spec points into it (do not move it). */
struct net_tbl_create {
        struct eng_catalog_table_spec spec;
        char path[ENG_CATALOG_MAX_PATH + 1];
        enum eng_tuple_type parts[ENG_CATALOG_MAX_PARTS];
        struct eng_catalog_split *splits;       /* heap: spec.n_splits, sorted */
        uint8_t *split_keys;                    /* heap: their encodings */
};

/*
 * TABLE.CREATE: argv[0..argc) is "path KEY type [type ...] [ORDERED |
 * HASHED [PREFIX n]] [TABLETS n] [SPLIT n part1..partn]... [option
 * value]..." (after the command name). Options start from
 * eng_catalog_options_default() and are checked with
 * eng_catalog_options_check. Split points are sorted; equal ones, SPLIT
 * on a hashed table and TABLETS with SPLIT are errors. The path's syntax
 * and name are left to eng_catalog_create_table. Returns 0 and *ret
 * (caller finis), -EINVAL or -ENOMEM.
 */
int net_tbl_create_parse(const struct net_arg *argv, size_t argc, struct net_tbl_create *ret,
                         char *err, size_t err_len);

/* Frees what c holds and zeroes it; accepts a zeroed one. */
void net_tbl_create_fini(struct net_tbl_create *c);

/*
 * Options as "name value" pairs, argv[0..argc) (TABLE.ALTER after the
 * path: at least one pair), applied over *cur (the table's options).
 * Names without case: AUTO-SPLIT-SIZE on|off, AUTO-SPLIT-LOAD on|off,
 * SPLIT-SIZE bytes[kb|mb|gb|tb], SPLIT-LOAD-PERCENT, MIN-TABLETS,
 * MAX-TABLETS, DEFAULT-TTL seconds (0: none), COMPACTION size-tiered,
 * PER-PARTITION-READS and PER-PARTITION-WRITES (per second, 0: no limit);
 * each at most once. The result is checked with eng_catalog_options_check.
 * Returns 0 and *ret, or -EINVAL.
 */
int net_tbl_options_parse(const struct eng_catalog_options *cur, const struct net_arg *argv,
                          size_t argc, struct eng_catalog_options *ret, char *err, size_t err_len);

/* ---- replies ---- */

/*
 * Writes the key of the row at position pos (len bytes) of t as an array
 * of its typed parts: i64 as integers, u64 as integers (above INT64_MAX a
 * bulk string, in RESP3 too: redis-cli 7.0 shows no big numbers), bytes
 * as bulk strings, NULL as nil. Returns 0, -EINVAL (pos is not a key of t: nothing written) or
 * -ENOMEM (the writer failed).
 */
int net_tbl_key_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                      const uint8_t *pos, size_t len);

/* Writes a ROW.RANGE row: [key, value]. Returns as net_tbl_key_write. */
int net_tbl_row_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                      const uint8_t *pos, size_t len, const void *value, size_t value_len);

/*
 * Writes a tablet boundary of t: ikey (len bytes, an internal key of t) as
 * an array -- for a hashed table the hash as 16 lowercase hex digits
 * first, then the key's typed parts (as net_tbl_key_write; a raw-key
 * table's key as one bulk string); or, with ikey NULL, the table's start
 * or end as the bulk string "-inf" (is_end false) or "+inf". Returns 0,
 * -EINVAL (not a boundary of t: nothing written) or -ENOMEM.
 */
int net_tbl_boundary_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                           const uint8_t *ikey, size_t len, bool is_end);

/* A tablet's size for TABLE.DESCRIBE (the engine's estimate). */
struct net_tbl_tablet_stats {
        uint64_t bytes;
        uint64_t rows;
        uint64_t reads_ps, writes_ps, read_bytes_ps, write_bytes_ps;    /* the last second's */
        uint32_t n_hot;
        const struct eng_tablet_hot *hot;       /* borrowed: the engine's hottest keys */
};

/*
 * Writes hot key h of t (borrowed) as one line of text into buf (size
 * bytes; no NUL; may be 0): a tuple key's parts separated by single spaces
 * -- integers in decimal, a null part as NULL, bytes as they are (any
 * byte; bytes reading NULL behind zero or more backslashes get one
 * backslash more) -- as typed after ROW.GET's table (but that a bytes part
 * may hold spaces); a raw key, or a key the engine
 * cut short (or that does not decode), its bytes after the table id and a
 * hashed table's hash. Returns the text's whole length: more than size
 * means only size bytes of it were written. Pure.
 */
size_t net_tbl_hot_key_text(const struct eng_catalog_table *t, const struct eng_tablet_hot *h,
                            char *buf, size_t size);

/* Writes tablet i of t as a map: id, shard, start, end (boundaries as
 * net_tbl_boundary_write), bytes, rows, reads-per-sec, writes-per-sec,
 * read-bytes-per-sec, write-bytes-per-sec, hot-keys (an array of maps:
 * key -- its parts, or for a raw-key table or a key cut short its bytes
 * after the table id -- and per-sec). Returns 0, -EINVAL or -ENOMEM. */
int net_tbl_tablet_write(struct net_resp_out *o, const struct eng_catalog_table *t, uint32_t i,
                         const struct net_tbl_tablet_stats *st);

/* Writes t's options as a map of the option names (lowercase) to their
 * values as TABLE.ALTER takes them (on/off, integers, size-tiered). */
int net_tbl_options_write(struct net_resp_out *o, const struct eng_catalog_options *opts);

/*
 * Writes TABLE.DESCRIBE's reply: a map of path, id, key (type names),
 * mode, hash-prefix (0 for ordered), options, and tablets (an array of
 * net_tbl_tablet_write maps; stats[i] for tablet i, or NULL: zeros).
 * Returns 0, -EINVAL (a malformed boundary: nothing written) or -ENOMEM.
 */
int net_tbl_describe_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                           const struct net_tbl_tablet_stats *stats);

/* Writes DIR.LIST's reply: a map of entry names to "table" or "directory". */
int net_tbl_dir_list_write(struct net_resp_out *o, const struct eng_catalog_entry *e, size_t n);

#endif
