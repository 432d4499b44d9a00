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
#include "engine/catalog_int.h"
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
                .partition_reads_per_sec = 0,
                .partition_writes_per_sec = 0,
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

void eng_catalog_free(struct eng_catalog *c)
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
                eng_catalog_free(c);
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

uint32_t eng_catalog_next_tablet_id(const struct eng_catalog *c)
{
        return c->next_tablet_id;
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
struct eng_catalog *eng_catalog_clone(const struct eng_catalog *c)
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
        eng_catalog_free(n);
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
int eng_catalog_new_name_check(const struct eng_catalog *c, const char *path, char *err,
                               size_t err_len)
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
        int r = eng_catalog_new_name_check(c, path, err, err_len);

        if (r < 0)
                return r;
        n = eng_catalog_clone(c);
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
        n = eng_catalog_clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        free(n->dirs[at]);
        memmove(&n->dirs[at], &n->dirs[at + 1], (n->n_dirs - (size_t)at - 1) * sizeof(*n->dirs));
        n->n_dirs--;
        *ret = n;
        return 0;
}

/* ---- schemas and options ---- */

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
        n = eng_catalog_clone(c);
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
        n = eng_catalog_clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        n->tables[at].options = *opts;
        *ret = n;
        return 0;
}

int eng_catalog_swap_tables(const struct eng_catalog *c, const char *a, const char *b,
                            struct eng_catalog **ret, char *err, size_t err_len)
{
        struct eng_catalog *n;
        long x = table_at_path(c, a, err, err_len), y;
        char *p;

        if (x < 0)
                return (int)x;
        y = table_at_path(c, b, err, err_len);
        if (y < 0)
                return (int)y;
        n = eng_catalog_clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        p = n->tables[x].path;
        n->tables[x].path = n->tables[y].path;
        n->tables[y].path = p;
        eng_catalog_table_set_name(&n->tables[x]);
        eng_catalog_table_set_name(&n->tables[y]);
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
        n = eng_catalog_clone(c);
        if (!n)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        memmove(&n->dropped[at], &n->dropped[at + 1], (n->n_dropped - at - 1) * sizeof(uint32_t));
        n->n_dropped--;
        *ret = n;
        return 0;
}
