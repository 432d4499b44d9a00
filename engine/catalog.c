/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog's operations and routing; see catalog.h. An operation
 * validates everything against the snapshot it was given, then builds the
 * new snapshot as a deep copy with the change applied: the old one is
 * never written. A copy costs O(catalog size) -- tables, directories and
 * tablet start keys are a few KiB to a few MiB, and changes are rare next
 * to routing, which is a binary search over one table's tablets.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/endian.h"
#include "engine/catalog_int.h"
#include "engine/key.h"
#include "engine/tablet.h"

_Static_assert(ENG_CATALOG_MAX_SHARDS == ENG_MAX_SHARDS, "the catalog covers every shard count");
_Static_assert(ENG_CATALOG_FIRST_USER_ID == ENG_TABLE_MAX, "new ids start after the static tables");

/* ---- snapshots ---- */

struct eng_catalog_options eng_catalog_options_default(void)
{
        return (struct eng_catalog_options){
                .split_by_size = true,
                .split_by_load = false,
                .compaction = ENG_CATALOG_COMPACTION_SIZE_TIERED,
                .split_load_percent = 50,
                .min_tablets = 1,
                .max_tablets = 1024,
                .split_size_bytes = UINT64_C(2) << 30,
                .default_ttl_ms = 0,
        };
}

struct eng_catalog *eng_catalog_alloc(void)
{
        struct eng_catalog *c = calloc(1, sizeof(*c));

        if (c)
                atomic_init(&c->refs, 1);
        return c;
}

struct eng_catalog *eng_catalog_new(uint32_t n_shards)
{
        struct eng_catalog *c;

        SCREE_ASSERT(n_shards >= 1 && n_shards <= ENG_CATALOG_MAX_SHARDS);
        c = eng_catalog_alloc();
        if (!c)
                return NULL;
        c->version = 1;
        c->n_shards = n_shards;
        c->next_table_id = ENG_CATALOG_FIRST_USER_ID;
        return c;
}

void eng_catalog_table_fini(struct eng_catalog_table *t)
{
        free(t->path);
        free(t->tablets);
        free(t->keys);
        memset(t, 0, sizeof(*t));
}

void eng_catalog_table_set_name(struct eng_catalog_table *t)
{
        t->name = strrchr(t->path, '/') + 1;
}

static void catalog_free(struct eng_catalog *c)
{
        for (uint32_t i = 0; i < c->n_dirs; i++)
                free(c->dirs[i]);
        for (uint32_t i = 0; i < c->n_tables; i++)
                eng_catalog_table_fini(&c->tables[i]);
        free(c->dirs);
        free(c->tables);
        free(c->dropped);
        free(c);
}

struct eng_catalog *eng_catalog_ref(struct eng_catalog *c)
{
        /* Relaxed: taking a reference needs one already held. */
        atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
        return c;
}

void eng_catalog_unref(struct eng_catalog *c)
{
        /* Release/acquire: every reader's last access happens before the free. */
        if (c && atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1)
                catalog_free(c);
}

uint64_t eng_catalog_version(const struct eng_catalog *c)
{
        return c->version;
}

uint32_t eng_catalog_n_shards(const struct eng_catalog *c)
{
        return c->n_shards;
}

uint32_t eng_catalog_next_table_id(const struct eng_catalog *c)
{
        return c->next_table_id;
}

uint32_t eng_catalog_n_tables(const struct eng_catalog *c)
{
        return c->n_tables;
}

const struct eng_catalog_table *eng_catalog_table_at(const struct eng_catalog *c, uint32_t i)
{
        return &c->tables[i];
}

const uint32_t *eng_catalog_dropped(const struct eng_catalog *c, uint32_t *ret_n)
{
        *ret_n = c->n_dropped;
        return c->dropped;
}

static int table_copy(struct eng_catalog_table *dst, const struct eng_catalog_table *src)
{
        struct eng_catalog_table t = *src;

        t.path = strdup(src->path);
        t.tablets = malloc(src->n_tablets * sizeof(*t.tablets));
        t.keys = malloc(src->keys_len ? src->keys_len : 1);
        if (!t.path || !t.tablets || !t.keys) {
                eng_catalog_table_fini(&t);
                return -ENOMEM;
        }
        memcpy(t.tablets, src->tablets, src->n_tablets * sizeof(*t.tablets));
        memcpy(t.keys, src->keys, src->keys_len);
        eng_catalog_table_set_name(&t);
        *dst = t;
        return 0;
}

/* A deep copy of c with version + 1 and room for one more directory,
 * table and dropped id; NULL on ENOMEM. */
static struct eng_catalog *clone(const struct eng_catalog *c)
{
        struct eng_catalog *n = eng_catalog_alloc();

        if (!n)
                return NULL;
        n->version = c->version + 1;
        n->n_shards = c->n_shards;
        n->next_table_id = c->next_table_id;
        n->next_tablet_id = c->next_tablet_id;
        n->dirs = calloc(c->n_dirs + 1, sizeof(*n->dirs));
        n->tables = calloc(c->n_tables + 1, sizeof(*n->tables));
        n->dropped = malloc((c->n_dropped + 1) * sizeof(*n->dropped));
        if (!n->dirs || !n->tables || !n->dropped)
                goto fail;
        for (; n->n_dirs < c->n_dirs; n->n_dirs++)
                if (!(n->dirs[n->n_dirs] = strdup(c->dirs[n->n_dirs])))
                        goto fail;
        for (; n->n_tables < c->n_tables; n->n_tables++)
                if (table_copy(&n->tables[n->n_tables], &c->tables[n->n_tables]) < 0)
                        goto fail;
        if (c->n_dropped)
                memcpy(n->dropped, c->dropped, c->n_dropped * sizeof(*n->dropped));
        n->n_dropped = c->n_dropped;
        return n;
fail:
        catalog_free(n);
        return NULL;
}

/* ---- names and paths ---- */

int eng_catalog_fail(int code, char *err, size_t err_len, const char *fmt, ...)
{
        va_list ap;

        if (err_len) {
                va_start(ap, fmt);
                vsnprintf(err, err_len, fmt, ap);
                va_end(ap);
        }
        return code;
}

static bool name_byte_ok(unsigned char b)
{
        return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
               b == '_' || b == '-' || b == '.';
}

static int name_check(const char *name, size_t len, char *err, size_t err_len)
{
        if (len == 0)
                return eng_catalog_fail(-EINVAL, err, err_len, "empty name in path");
        if (len > ENG_CATALOG_MAX_NAME)
                return eng_catalog_fail(-EINVAL, err, err_len, "name longer than %u bytes",
                                        ENG_CATALOG_MAX_NAME);
        if ((len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.'))
                return eng_catalog_fail(-EINVAL, err, err_len, "name '%.*s' is reserved", (int)len,
                                        name);
        for (size_t i = 0; i < len; i++)
                if (!name_byte_ok((unsigned char)name[i]))
                        return eng_catalog_fail(-EINVAL, err, err_len,
                                                "name '%.*s': byte 0x%02x not allowed (A-Z a-z 0-9 _ - .)",
                                                (int)len, name, (unsigned char)name[i]);
        return 0;
}

int eng_catalog_path_check(const char *path, bool allow_root, char *err, size_t err_len)
{
        size_t len;
        const char *p;

        if (!path || path[0] != '/')
                return eng_catalog_fail(-EINVAL, err, err_len, "path must start with '/'");
        len = strnlen(path, ENG_CATALOG_MAX_PATH + 1);
        if (len > ENG_CATALOG_MAX_PATH)
                return eng_catalog_fail(-EINVAL, err, err_len, "path longer than %u bytes",
                                        ENG_CATALOG_MAX_PATH);
        if (len == 1)
                return allow_root ? 0 : eng_catalog_fail(-EINVAL, err, err_len, "'/' is the root");
        for (p = path + 1;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                int r = name_check(p, n, err, err_len);

                if (r < 0)
                        return r;
                if (!slash)
                        return 0;
                p = slash + 1;
        }
}

/* Bytes of the parent of the path of len bytes at path (0: the root). */
size_t eng_catalog_parent_len(const char *path, size_t len)
{
        while (len > 0 && path[len - 1] != '/')
                len--;
        return len ? len - 1 : 0;
}

static size_t parent_len(const char *path)
{
        return eng_catalog_parent_len(path, strlen(path));
}

long eng_catalog_dir_find(const struct eng_catalog *c, const char *path, size_t len)
{
        uint32_t lo = 0, hi = c->n_dirs;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                const char *d = c->dirs[mid];
                int cmp = strncmp(d, path, len);

                if (cmp == 0)
                        cmp = d[len] ? 1 : 0;
                if (cmp == 0)
                        return mid;
                if (cmp < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

long eng_catalog_table_find(const struct eng_catalog *c, const char *path, size_t len)
{
        for (uint32_t i = 0; i < c->n_tables; i++)
                if (strncmp(c->tables[i].path, path, len) == 0 && c->tables[i].path[len] == 0)
                        return i;
        return -1;
}

bool eng_catalog_is_dir(const struct eng_catalog *c, const char *path)
{
        return strcmp(path, "/") == 0 || eng_catalog_dir_find(c, path, strlen(path)) >= 0;
}

/* Checks that the directory of len bytes at path exists (len 0: the root). */
static int dir_check(const struct eng_catalog *c, const char *path, size_t len, char *err,
                     size_t err_len)
{
        if (len == 0 || eng_catalog_dir_find(c, path, len) >= 0)
                return 0;
        for (size_t n = len; n > 0; n = eng_catalog_parent_len(path, n))
                if (eng_catalog_table_find(c, path, n) >= 0)
                        return eng_catalog_fail(-ENOTDIR, err, err_len, "'%.*s' is a table",
                                                (int)n, path);
        return eng_catalog_fail(-SCREE_ENOTFOUND, err, err_len, "no directory '%.*s'", (int)len,
                                path);
}

/* Checks that path is a valid new name: its parent a directory, the name
 * free there. */
static int new_name_check(const struct eng_catalog *c, const char *path, char *err, size_t err_len)
{
        int r = eng_catalog_path_check(path, false, err, err_len);

        if (r < 0)
                return r;
        r = dir_check(c, path, parent_len(path), err, err_len);
        if (r < 0)
                return r;
        if (eng_catalog_dir_find(c, path, strlen(path)) >= 0)
                return eng_catalog_fail(-EEXIST, err, err_len, "'%s' exists (a directory)", path);
        if (eng_catalog_table_find(c, path, strlen(path)) >= 0)
                return eng_catalog_fail(-EEXIST, err, err_len, "'%s' exists (a table)", path);
        return 0;
}

static bool is_child(const char *path, const char *dir, size_t dir_len)
{
        return parent_len(path) == dir_len && strncmp(path, dir, dir_len) == 0;
}

/* ---- directories ---- */

int eng_catalog_mkdir(const struct eng_catalog *c, const char *path, struct eng_catalog **ret,
                      char *err, size_t err_len)
{
        struct eng_catalog *n;
        char *copy;
        uint32_t at = 0;
        int r = new_name_check(c, path, err, err_len);

        if (r < 0)
                return r;
        n = clone(c);
        copy = strdup(path);
        if (!n || !copy) {
                free(copy);
                eng_catalog_unref(n);
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        }
        while (at < n->n_dirs && strcmp(n->dirs[at], path) < 0)
                at++;
        memmove(&n->dirs[at + 1], &n->dirs[at], (n->n_dirs - at) * sizeof(*n->dirs));
        n->dirs[at] = copy;
        n->n_dirs++;
        *ret = n;
        return 0;
}

/* Whether the directory of len bytes at dir has an entry. */
static bool dir_has_entries(const struct eng_catalog *c, const char *dir, size_t len)
{
        for (uint32_t i = 0; i < c->n_dirs; i++)
                if (is_child(c->dirs[i], dir, len))
                        return true;
        for (uint32_t i = 0; i < c->n_tables; i++)
                if (is_child(c->tables[i].path, dir, len))
                        return true;
        return false;
}

int eng_catalog_rmdir(const struct eng_catalog *c, const char *path, struct eng_catalog **ret,
                      char *err, size_t err_len)
{
        struct eng_catalog *n;
        long at;
        int r = eng_catalog_path_check(path, false, err, err_len);

        if (r < 0)
                return r;
        at = eng_catalog_dir_find(c, path, strlen(path));
        if (at < 0) {
                r = dir_check(c, path, strlen(path), err, err_len);
                return r < 0 ? r : -EINVAL;
        }
        if (dir_has_entries(c, path, strlen(path)))
                return eng_catalog_fail(-ENOTEMPTY, err, err_len, "directory '%s' is not empty",
                                        path);
        n = clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        free(n->dirs[at]);
        memmove(&n->dirs[at], &n->dirs[at + 1], (n->n_dirs - (size_t)at - 1) * sizeof(*n->dirs));
        n->n_dirs--;
        *ret = n;
        return 0;
}

/* ---- schemas and options ---- */

static const char *type_name(enum eng_tuple_type t)
{
        switch (t) {
        case ENG_TUPLE_I64:
                return "i64";
        case ENG_TUPLE_U64:
                return "u64";
        case ENG_TUPLE_BYTES:
                return "bytes";
        case ENG_TUPLE_NULL:
                return "null";
        }
        return "unknown";
}

/* ---- pre-split ---- */

/* Allocates t's tablets and keys (keys_cap bytes) for n tablets. */
static int tablets_alloc(struct eng_catalog_table *t, uint32_t n, size_t keys_cap)
{
        t->tablets = calloc(n, sizeof(*t->tablets));
        t->keys = malloc(keys_cap);
        t->n_tablets = 0;
        t->keys_len = 0;
        return t->tablets && t->keys ? 0 : -ENOMEM;
}

/* Appends a tablet starting at t's id followed by tail (tlen bytes). */
static void tablet_push(struct eng_catalog_table *t, uint32_t id, uint32_t shard,
                        const uint8_t *tail, size_t tlen)
{
        struct eng_catalog_tablet *b = &t->tablets[t->n_tablets++];
        uint8_t *k = t->keys + t->keys_len;

        be32_put(k, t->id);
        if (tlen)
                memcpy(k + ENG_TABLE_ID_BYTES, tail, tlen);
        *b = (struct eng_catalog_tablet){ .id = id, .shard = shard, .start_off = t->keys_len,
                                          .start_len = (uint32_t)(ENG_TABLE_ID_BYTES + tlen) };
        b->key8 = eng_catalog_key8(k, b->start_len);
        t->keys_len += b->start_len;
}

/* First value of slice i of n equal slices of [0, 2^64): ceil(i * 2^64 / n). */
static uint64_t slice_start(uint32_t i, uint32_t n)
{
        __extension__ unsigned __int128 num = (unsigned __int128)i << 64;

        return (uint64_t)((num + n - 1) / n);
}

/* n uniform tablets: tail of tablet i > 0 is prefix (plen bytes, may be 0)
 * then the big-endian slice start; tablet i gets id first_id + i and
 * shard (shard0 + i) % n_shards. */
static int presplit_uniform(struct eng_catalog_table *t, uint32_t n, const uint8_t *prefix,
                            size_t plen, uint32_t first_id, uint32_t shard0, uint32_t n_shards)
{
        uint8_t tail[16];

        if (tablets_alloc(t, n, (size_t)n * (ENG_TABLE_ID_BYTES + plen + 8)) < 0)
                return -ENOMEM;
        if (plen)
                memcpy(tail, prefix, plen);
        for (uint32_t i = 0; i < n; i++) {
                be64_put(tail + plen, slice_start(i, n));
                tablet_push(t, first_id + i, (shard0 + i) % n_shards, tail, i ? plen + 8 : 0);
        }
        return 0;
}

/* First byte of tablet i of n over the first byte of a raw key:
 * ceil(i * 256 / n), as tablet.h's; 256 and above: past every key. */
static uint32_t byte_start(uint32_t i, uint32_t n)
{
        return (uint32_t)(((uint64_t)i * 256 + n - 1) / n);
}

/* n tablets over the first byte of a raw key (tablet.h's ordered table).
 * With more tablets than byte values some hold no key (they start where
 * the next one does, or past byte 255): they are left out. Ids
 * first_id + i, shards (shard0 + i) % n_shards (tablet.h's: shard0 0). */
static int presplit_first_byte(struct eng_catalog_table *t, uint32_t n, uint32_t first_id,
                               uint32_t shard0, uint32_t n_shards)
{
        if (tablets_alloc(t, n, (size_t)n * (ENG_TABLE_ID_BYTES + 1)) < 0)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {
                uint32_t b = byte_start(i, n);
                uint8_t byte = (uint8_t)b;

                if (i > 0 && (b > 255 || (i + 1 < n && byte_start(i + 1, n) == b)))
                        continue;
                tablet_push(t, first_id + i, (shard0 + i) % n_shards, &byte, i ? 1 : 0);
        }
        return 0;
}

/* Checks split point i of spec: a whole tuple of 1..n_parts parts of the
 * schema's types (or NULL), or for raw keys any non-empty bytes. */
static int split_check(const struct eng_catalog_table_spec *spec, uint32_t i, char *err,
                       size_t err_len)
{
        const struct eng_catalog_split *s = &spec->splits[i];
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        uint8_t scratch[ENG_CATALOG_MAX_SPLIT_BYTES];
        int n;

        if (!s->key || s->len == 0 || s->len > ENG_CATALOG_MAX_SPLIT_BYTES)
                return eng_catalog_fail(-EINVAL, err, err_len, "split point %u: 1..%u bytes", i,
                                        ENG_CATALOG_MAX_SPLIT_BYTES);
        if (i > 0 && eng_key_cmp(spec->splits[i - 1].key, spec->splits[i - 1].len, s->key, s->len) >= 0)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split point %u is not after split point %u", i, i - 1);
        if (spec->key_format == ENG_CATALOG_KEYS_RAW)
                return 0;
        n = eng_tuple_decode(s->key, s->len, parts, spec->n_parts, scratch, sizeof(scratch));
        if (n <= 0)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split point %u is not a tuple of 1..%u parts", i,
                                        spec->n_parts);
        for (int j = 0; j < n; j++)
                if (parts[j].type != ENG_TUPLE_NULL && parts[j].type != spec->parts[j])
                        return eng_catalog_fail(-EINVAL, err, err_len,
                                                "split point %u, part %d: %s, the key's is %s", i,
                                                j, type_name(parts[j].type),
                                                type_name(spec->parts[j]));
        return 0;
}

static int splits_check(const struct eng_catalog_table_spec *spec, char *err, size_t err_len)
{
        if (spec->n_splits == 0)
                return 0;
        if (spec->mode != ENG_CATALOG_ORDERED)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split points are for ordered tables (hashed: n_tablets)");
        if (spec->n_splits >= ENG_CATALOG_MAX_TABLETS || !spec->splits ||
            (spec->n_tablets && spec->n_tablets != spec->n_splits + 1))
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "%u split points make %u tablets (at most %u)",
                                        spec->n_splits, spec->n_splits + 1, ENG_CATALOG_MAX_TABLETS);
        for (uint32_t i = 0; i < spec->n_splits; i++) {
                int r = split_check(spec, i, err, err_len);

                if (r < 0)
                        return r;
        }
        return 0;
}

/* Tablets the spec makes; checks a uniform pre-split can be made. */
static int tablet_count(const struct eng_catalog_table_spec *spec, uint32_t *ret, char *err,
                        size_t err_len)
{
        uint32_t n = spec->n_splits ? spec->n_splits + 1 : spec->n_tablets ? spec->n_tablets : 1;

        if (n > ENG_CATALOG_MAX_TABLETS)
                return eng_catalog_fail(-EINVAL, err, err_len, "%u tablets: at most %u", n,
                                        ENG_CATALOG_MAX_TABLETS);
        if (n > 1 && !spec->n_splits && spec->mode == ENG_CATALOG_ORDERED) {
                bool raw = spec->key_format == ENG_CATALOG_KEYS_RAW;

                if (raw && n > 256)
                        return eng_catalog_fail(-EINVAL, err, err_len,
                                                "%u tablets over a raw key's first byte: at most 256", n);
                if (!raw && spec->parts[0] == ENG_TUPLE_BYTES)
                        return eng_catalog_fail(-EINVAL, err, err_len,
                                                "uniform pre-split needs an integer first key part; give split points");
        }
        *ret = n;
        return 0;
}

static int spec_check(const struct eng_catalog *c, const struct eng_catalog_table_spec *spec,
                      uint32_t *ret_n, char *err, size_t err_len)
{
        int r = new_name_check(c, spec->path, err, err_len);

        if (r == 0 && !spec->parts)
                r = eng_catalog_fail(-EINVAL, err, err_len, "no key parts");
        if (r == 0)
                r = eng_catalog_schema_check(spec->key_format, spec->mode, spec->n_parts, spec->parts,
                                             spec->hash_parts, err, err_len);
        if (r == 0)
                r = eng_catalog_options_check(&spec->options, err, err_len);
        if (r == 0)
                r = splits_check(spec, err, err_len);
        if (r == 0)
                r = tablet_count(spec, ret_n, err, err_len);
        if (r == 0 && c->next_table_id == UINT32_MAX)
                r = eng_catalog_fail(-ENOSPC, err, err_len, "table ids exhausted");
        if (r == 0 && UINT32_MAX - c->next_tablet_id < *ret_n)
                r = eng_catalog_fail(-ENOSPC, err, err_len, "tablet ids exhausted");
        return r;
}

static int presplit_explicit(struct eng_catalog_table *t, const struct eng_catalog_table_spec *spec,
                             uint32_t first_id, uint32_t n_shards)
{
        size_t bytes = (size_t)(spec->n_splits + 1) * ENG_TABLE_ID_BYTES;

        for (uint32_t i = 0; i < spec->n_splits; i++)
                bytes += spec->splits[i].len;
        if (tablets_alloc(t, spec->n_splits + 1, bytes) < 0)
                return -ENOMEM;
        tablet_push(t, first_id, t->id % n_shards, NULL, 0);
        for (uint32_t i = 0; i < spec->n_splits; i++)
                tablet_push(t, first_id + i + 1, (t->id + i + 1) % n_shards, spec->splits[i].key,
                            spec->splits[i].len);
        return 0;
}

/* Builds the table of a checked spec with n tablets into *t. */
static int table_build(struct eng_catalog_table *t, const struct eng_catalog *c,
                       const struct eng_catalog_table_spec *spec, uint32_t n)
{
        uint8_t tag = spec->parts[0] == ENG_TUPLE_I64 ? ENG_TUPLE_TAG_I64 : ENG_TUPLE_TAG_U64;
        uint32_t first = c->next_tablet_id;

        *t = (struct eng_catalog_table){ .id = c->next_table_id, .key_format = spec->key_format,
                                         .mode = spec->mode, .n_parts = spec->n_parts,
                                         .hash_parts = spec->hash_parts, .options = spec->options };
        memcpy(t->parts, spec->parts, spec->n_parts * sizeof(*t->parts));
        t->path = strdup(spec->path);
        if (!t->path)
                return -ENOMEM;
        eng_catalog_table_set_name(t);
        if (spec->n_splits)
                return presplit_explicit(t, spec, first, c->n_shards);
        if (spec->mode == ENG_CATALOG_HASHED || n == 1)
                return presplit_uniform(t, n, NULL, 0, first, t->id, c->n_shards);
        if (spec->key_format == ENG_CATALOG_KEYS_RAW)
                return presplit_first_byte(t, n, first, t->id, c->n_shards);
        return presplit_uniform(t, n, &tag, 1, first, t->id, c->n_shards);
}

/* ---- tables ---- */

int eng_catalog_create_table(const struct eng_catalog *c, const struct eng_catalog_table_spec *spec,
                             struct eng_catalog **ret, uint32_t *ret_id, char *err, size_t err_len)
{
        struct eng_catalog_table t = { 0 };
        struct eng_catalog *n = NULL;
        uint32_t n_tablets = 0;
        int r = spec_check(c, spec, &n_tablets, err, err_len);

        if (r < 0)
                return r;
        if (table_build(&t, c, spec, n_tablets) < 0 || !(n = clone(c))) {
                eng_catalog_table_fini(&t);
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        }
        n->tables[n->n_tables++] = t;           /* the largest id: order kept */
        n->next_table_id++;
        n->next_tablet_id += n_tablets;
        if (ret_id)
                *ret_id = t.id;
        *ret = n;
        return 0;
}

/* The live table at path, or an error naming what is wrong. */
static long table_at_path(const struct eng_catalog *c, const char *path, char *err, size_t err_len)
{
        long at;
        int r = eng_catalog_path_check(path, false, err, err_len);

        if (r < 0)
                return r;
        at = eng_catalog_table_find(c, path, strlen(path));
        if (at >= 0)
                return at;
        if (eng_catalog_dir_find(c, path, strlen(path)) >= 0)
                return eng_catalog_fail(-EINVAL, err, err_len, "'%s' is a directory", path);
        r = dir_check(c, path, parent_len(path), err, err_len);
        return r < 0 ? r : eng_catalog_fail(-SCREE_ENOTFOUND, err, err_len, "no table '%s'", path);
}

static void dropped_insert(struct eng_catalog *n, uint32_t id)
{
        uint32_t at = n->n_dropped;

        while (at > 0 && n->dropped[at - 1] > id) {
                n->dropped[at] = n->dropped[at - 1];
                at--;
        }
        n->dropped[at] = id;
        n->n_dropped++;
}

int eng_catalog_drop_table(const struct eng_catalog *c, const char *path, struct eng_catalog **ret,
                           char *err, size_t err_len)
{
        struct eng_catalog *n;
        long at = table_at_path(c, path, err, err_len);

        if (at < 0)
                return (int)at;
        n = clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        dropped_insert(n, n->tables[at].id);
        eng_catalog_table_fini(&n->tables[at]);
        memmove(&n->tables[at], &n->tables[at + 1],
                (n->n_tables - (size_t)at - 1) * sizeof(*n->tables));
        n->n_tables--;
        *ret = n;
        return 0;
}

int eng_catalog_alter_table(const struct eng_catalog *c, const char *path,
                            const struct eng_catalog_options *opts, struct eng_catalog **ret,
                            char *err, size_t err_len)
{
        struct eng_catalog *n;
        long at = table_at_path(c, path, err, err_len);
        int r;

        if (at < 0)
                return (int)at;
        r = eng_catalog_options_check(opts, err, err_len);
        if (r < 0)
                return r;
        n = clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        n->tables[at].options = *opts;
        *ret = n;
        return 0;
}

int eng_catalog_forget_dropped(const struct eng_catalog *c, uint32_t id, struct eng_catalog **ret,
                               char *err, size_t err_len)
{
        struct eng_catalog *n;
        uint32_t at = 0;

        while (at < c->n_dropped && c->dropped[at] != id)
                at++;
        if (at == c->n_dropped)
                return eng_catalog_fail(-SCREE_ENOTFOUND, err, err_len,
                                        "table id %u is not a dropped table", id);
        n = clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        memmove(&n->dropped[at], &n->dropped[at + 1], (n->n_dropped - at - 1) * sizeof(uint32_t));
        n->n_dropped--;
        *ret = n;
        return 0;
}

/* ---- the first catalog of an existing data directory ---- */

/* Fills static table id (0 or 1) of the initial catalog with n tablets. */
static int initial_table(struct eng_catalog_table *t, uint32_t id, uint32_t n, uint32_t n_shards)
{
        bool hashed = id == ENG_TABLE_DEFAULT;

        *t = (struct eng_catalog_table){
                .id = id, .key_format = ENG_CATALOG_KEYS_RAW, .n_parts = 1,
                .mode = hashed ? ENG_CATALOG_HASHED : ENG_CATALOG_ORDERED,
                .hash_parts = hashed ? 1 : 0, .parts = { ENG_TUPLE_BYTES },
                .options = eng_catalog_options_default(),
        };
        if (t->options.max_tablets < n)
                t->options.max_tablets = n;
        t->path = strdup(hashed ? "/redis/db0" : "/scree/ordered");
        if (!t->path)
                return -ENOMEM;
        eng_catalog_table_set_name(t);
        if (hashed)
                return presplit_uniform(t, n, NULL, 0, 0, 0, n_shards);
        return presplit_first_byte(t, n, n, 0, n_shards);
}

int eng_catalog_initial(uint32_t n_shards, uint32_t tablets_per_shard, struct eng_catalog **ret)
{
        struct eng_tablet_map m;
        struct eng_catalog *c;
        uint32_t n;

        if (eng_tablet_map_init(&m, n_shards, tablets_per_shard) < 0)
                return -EINVAL;
        n = eng_tablet_map_per_table(&m);
        c = eng_catalog_new(n_shards);
        if (!c)
                return -ENOMEM;
        c->dirs = calloc(2, sizeof(*c->dirs));
        c->tables = calloc(ENG_TABLE_MAX, sizeof(*c->tables));
        if (!c->dirs || !c->tables || !(c->dirs[0] = strdup("/redis")) ||
            !(c->dirs[1] = strdup("/scree")))
                goto fail;
        c->n_dirs = 2;
        for (uint32_t id = 0; id < ENG_TABLE_MAX; id++, c->n_tables++)
                if (initial_table(&c->tables[id], id, n, n_shards) < 0)
                        goto fail;
        c->next_tablet_id = ENG_TABLE_MAX * n;
        *ret = c;
        return 0;
fail:
        /* Zeroed (calloc) entries free as nothing; the half-built one is freed too. */
        c->n_dirs = c->dirs ? 2 : 0;
        c->n_tables = c->tables ? ENG_TABLE_MAX : 0;
        catalog_free(c);
        return -ENOMEM;
}
