/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the table argument files (tbl_args.c: keys and row
 * writes; tbl_range.c: bounds and cursors; tbl_schema.c: TABLE.CREATE and
 * options; tbl_reply.c: replies). See tbl_args.h.
 */
#ifndef SCREE_NET_TBL_INT_H
#define SCREE_NET_TBL_INT_H

#include "net/tbl_args.h"

struct net_req;

/* Writes a message into err (err_len may be 0); returns -EINVAL. */
int net_tbl_fail(char *err, size_t err_len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Writes "out of memory" into err; returns -ENOMEM. */
int net_tbl_nomem(char *err, size_t err_len);

/* Parses a strict decimal u64 (no sign, no leading zeros). 0 or -EINVAL. */
int net_tbl_u64(const struct net_arg *a, uint64_t *ret);

/* Parses argv[0..n) as the types types[0..n) into parts; part i is
 * named "<what> <i + 1>" in errors. 0 or -EINVAL. */
int net_tbl_parts_parse(const enum eng_tuple_type *types, const struct net_arg *argv, size_t n,
                        const char *what, struct eng_tuple_part *parts, char *err,
                        size_t err_len);

/* 0 if t has tuple keys, else -EINVAL naming t (a raw-key table). */
int net_tbl_tuple_check(const struct eng_catalog_table *t, char *err, size_t err_len);

/*
 * Decodes the tuple enc (len bytes) as a key of t into parts (room for
 * ENG_CATALOG_MAX_PARTS), bytes unescaped into scratch (len bytes): whole,
 * exactly t->n_parts parts; else 1..n_parts (a split point). Each part is
 * NULL or of t's type. Returns the count, or -EINVAL.
 */
int net_tbl_tuple_decode(const struct eng_catalog_table *t, const uint8_t *enc, size_t len,
                         bool whole, struct eng_tuple_part *parts, uint8_t *scratch);

/* Whether pos (len bytes) is a row position of t: a whole key, behind
 * its hash for a hashed table. Allocates scratch: 0, -EINVAL or -ENOMEM. */
int net_tbl_pos_check(const struct eng_catalog_table *t, const uint8_t *pos, size_t len);

/* TABLET.*'s first words, "table tablet-id" (argv[1], argv[2]): the
 * table's path into path (cap bytes), the table in the origin's catalog
 * into *t (borrowed from it), the id into *id. 0, or -1 with err (err_len
 * bytes) saying what is wrong. Origin shard (cmd_tablet.c). */
int net_tablet_args(struct net_req *req, char *path, size_t cap,
                    const struct eng_catalog_table **t, uint32_t *id, char *err, size_t err_len);

#endif
