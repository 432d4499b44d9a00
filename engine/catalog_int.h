/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog snapshot's layout and the helpers catalog.c (operations,
 * routing) and catalog_format.c (encoding, checks) share. See catalog.h.
 */
#ifndef SCREE_ENGINE_CATALOG_INT_H
#define SCREE_ENGINE_CATALOG_INT_H

#include <stdatomic.h>

#include "engine/catalog.h"

struct eng_catalog {
        atomic_uint refs;               /* the only mutable field once published */
        uint64_t version;
        uint32_t n_shards;
        uint32_t next_table_id;         /* ids below are used (live or dropped) or were */
        uint32_t next_tablet_id;
        uint32_t n_dirs, n_tables, n_dropped;
        char **dirs;                    /* directory paths but "/", sorted by strcmp */
        struct eng_catalog_table *tables;       /* ascending id */
        uint32_t *dropped;              /* ascending */
};

/* A copy of c (same version + 1, one reference) to change; NULL on ENOMEM. */
struct eng_catalog *eng_catalog_clone(const struct eng_catalog *c);

/* Frees c whatever its references (a snapshot never published). */
void eng_catalog_free(struct eng_catalog *c);

/* Checks that path is a valid new name: its parent a directory, the name
 * free. 0 or an error with err set. */
int eng_catalog_new_name_check(const struct eng_catalog *c, const char *path, char *err,
                               size_t err_len);

/* A zeroed snapshot with one reference; NULL on ENOMEM. */
struct eng_catalog *eng_catalog_alloc(void);

/* Frees what t owns and zeroes it. Accepts a zeroed table. */
void eng_catalog_table_fini(struct eng_catalog_table *t);

/* Sets t->name from t->path (after the last '/'). */
void eng_catalog_table_set_name(struct eng_catalog_table *t);

/* Writes a message into err (err_len may be 0). Returns code. */
int eng_catalog_fail(int code, char *err, size_t err_len, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* Checks a path's syntax ("/" allowed only if allow_root): 0 or -EINVAL. */
int eng_catalog_path_check(const char *path, bool allow_root, char *err, size_t err_len);

/* Checks a schema (format, mode, parts, hash_parts): 0 or -EINVAL. */
int eng_catalog_schema_check(enum eng_catalog_key_format format, enum eng_catalog_key_mode mode,
                             uint32_t n_parts, const enum eng_tuple_type *parts,
                             uint32_t hash_parts, char *err, size_t err_len);

/* Index of the directory path (len bytes) in c->dirs, or -1. */
long eng_catalog_dir_find(const struct eng_catalog *c, const char *path, size_t len);

/* Index of the table at path (len bytes) in c->tables, or -1. */
long eng_catalog_table_find(const struct eng_catalog *c, const char *path, size_t len);

/* Bytes of the parent of the path of len bytes at path (0: the root). */
size_t eng_catalog_parent_len(const char *path, size_t len);

#endif
