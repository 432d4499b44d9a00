/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog's queries: directory listings, lookups and routing of keys
 * to tablets. See catalog.h. Routing is a binary search over one table's
 * sorted tablet start keys; a user key is compared piecewise (table id,
 * hash, key) so no internal key is built for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/endian.h"
#include "engine/catalog_int.h"
#include "engine/key.h"
#include "engine/tablet.h"

/* ---- listings and lookups ---- */

static int entry_cmp(const void *a, const void *b)
{
        const struct eng_catalog_entry *x = a, *y = b;

        return strcmp(x->name, y->name);
}

/* Collects the entries of dir (len bytes; 0 the root) into v (room for
 * every directory and table); returns their number. */
static size_t collect(const struct eng_catalog *c, const char *dir, size_t len,
                      struct eng_catalog_entry *v)
{
        size_t n = 0;

        for (uint32_t i = 0; i < c->n_dirs; i++) {
                const char *d = c->dirs[i];

                if (eng_catalog_parent_len(d, strlen(d)) == len && strncmp(d, dir, len) == 0)
                        v[n++] = (struct eng_catalog_entry){ .name = d + len + 1 };
        }
        for (uint32_t i = 0; i < c->n_tables; i++) {
                const struct eng_catalog_table *t = &c->tables[i];

                if ((size_t)(t->name - 1 - t->path) == len && strncmp(t->path, dir, len) == 0)
                        v[n++] = (struct eng_catalog_entry){ .name = t->name, .is_table = true,
                                                             .table_id = t->id };
        }
        return n;
}

long eng_catalog_list(const struct eng_catalog *c, const char *dir, struct eng_catalog_entry *ret,
                      size_t cap, char *err, size_t err_len)
{
        int r = eng_catalog_path_check(dir, true, err, err_len);
        size_t len, n;
        struct eng_catalog_entry *v;

        if (r < 0)
                return r;
        len = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
        if (len && eng_catalog_dir_find(c, dir, len) < 0) {
                if (eng_catalog_table_find(c, dir, len) >= 0)
                        return eng_catalog_fail(-ENOTDIR, err, err_len, "'%s' is a table", dir);
                return eng_catalog_fail(-SCREE_ENOTFOUND, err, err_len, "no directory '%s'", dir);
        }
        v = malloc(((size_t)c->n_dirs + c->n_tables + 1) * sizeof(*v));
        if (!v)
                return eng_catalog_fail(-ENOMEM, err, err_len, "out of memory");
        n = collect(c, dir, len, v);
        qsort(v, n, sizeof(*v), entry_cmp);
        if (n && cap)
                memcpy(ret, v, (n < cap ? n : cap) * sizeof(*v));
        free(v);
        return (long)n;
}

int eng_catalog_lookup(const struct eng_catalog *c, const char *path,
                       const struct eng_catalog_table **ret)
{
        long at;

        if (!path)
                return -SCREE_ENOTFOUND;
        at = eng_catalog_table_find(c, path, strlen(path));
        if (at < 0)
                return -SCREE_ENOTFOUND;
        *ret = &c->tables[at];
        return 0;
}

int eng_catalog_table_by_id(const struct eng_catalog *c, uint32_t id,
                            const struct eng_catalog_table **ret)
{
        uint32_t lo = 0, hi = c->n_tables;

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (c->tables[mid].id == id) {
                        *ret = &c->tables[mid];
                        return 0;
                }
                if (c->tables[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -SCREE_ENOTFOUND;
}

uint32_t eng_catalog_tablet_end(const struct eng_catalog_table *t, uint32_t i, uint8_t buf[4],
                                const uint8_t **ret)
{
        SCREE_ASSERT(i < t->n_tablets);
        if (i + 1 < t->n_tablets) {
                *ret = eng_catalog_tablet_start(t, i + 1);
                return t->tablets[i + 1].start_len;
        }
        /* Table ids stay below next_table_id <= UINT32_MAX: id + 1 exists. */
        SCREE_ASSERT(t->id < UINT32_MAX);
        be32_put(buf, t->id + 1);
        *ret = buf;
        return ENG_TABLE_ID_BYTES;
}

int eng_catalog_tablet_by_id(const struct eng_catalog *c, uint32_t id,
                             const struct eng_catalog_table **ret_table, uint32_t *ret_index)
{
        for (uint32_t i = 0; i < c->n_tables; i++) {
                const struct eng_catalog_table *t = &c->tables[i];

                for (uint32_t k = 0; k < t->n_tablets; k++) {
                        if (t->tablets[k].id != id)
                                continue;
                        *ret_table = t;
                        *ret_index = k;
                        return 0;
                }
        }
        return -SCREE_ENOTFOUND;
}

/* ---- routing ---- */

/* Compares start key s with the key head (hlen bytes) + tail (tlen). */
static int cmp_split(const uint8_t *s, size_t slen, const uint8_t *head, size_t hlen,
                     const uint8_t *tail, size_t tlen)
{
        size_t n = slen < hlen ? slen : hlen;
        int c = n ? memcmp(s, head, n) : 0;

        if (c)
                return c;
        if (slen <= hlen)
                return slen < hlen || tlen ? -1 : 0;
        return eng_key_cmp(s + hlen, slen - hlen, tail, tlen);
}

/* The key8 (catalog.h) of the key head + tail. */
static uint64_t key8_of(const uint8_t *head, size_t hlen, const uint8_t *tail, size_t tlen)
{
        uint8_t k[12];
        size_t h = hlen < 12 ? hlen : 12, n = tlen < 12 - h ? tlen : 12 - h;

        memcpy(k, head, h);
        if (n)
                memcpy(k + h, tail, n);
        return eng_catalog_key8(k, h + n);
}

/* Compares tablet i's start with head + tail (whose key8 is k8): the
 * zero-padded 8 bytes decide unless equal (a shorter key padded with
 * zeros never compares above a longer one with the same bytes). */
static int cmp_tablet(const struct eng_catalog_table *t, uint32_t i, uint64_t k8,
                      const uint8_t *head, size_t hlen, const uint8_t *tail, size_t tlen)
{
        const struct eng_catalog_tablet *b = &t->tablets[i];

        if (b->key8 != k8)
                return b->key8 < k8 ? -1 : 1;
        return cmp_split(t->keys + b->start_off, b->start_len, head, hlen, tail, tlen);
}

/* The last tablet of t whose start is at or before head + tail. */
static uint32_t route(const struct eng_catalog_table *t, const uint8_t *head, size_t hlen,
                      const uint8_t *tail, size_t tlen)
{
        uint32_t lo = 1, hi = t->n_tablets;     /* tablet 0 starts at the id: always before */
        uint64_t k8 = key8_of(head, hlen, tail, tlen);

        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (cmp_tablet(t, mid, k8, head, hlen, tail, tlen) <= 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo - 1;
}

uint32_t eng_catalog_route_ikey(const struct eng_catalog_table *t, const uint8_t *ikey, size_t len)
{
        return route(t, ikey, len, NULL, 0);
}

/* The bytes of key the hash covers, or -EINVAL. */
static long hashed_len(const struct eng_catalog_table *t, const void *key, size_t len)
{
        if (t->key_format == ENG_CATALOG_KEYS_RAW)
                return (long)len;
        return eng_tuple_parts_len(key, len, t->hash_parts);
}

/* Writes t's id and, if hashed, the key's hash into head; returns its
 * bytes, or -EINVAL. */
static long head_put(const struct eng_catalog_table *t, const void *key, size_t len, uint8_t *head)
{
        long hl;

        be32_put(head, t->id);
        if (t->mode != ENG_CATALOG_HASHED)
                return ENG_TABLE_ID_BYTES;
        hl = hashed_len(t, key, len);
        if (hl < 0)
                return hl;
        be64_put(head + ENG_TABLE_ID_BYTES, eng_key_hash(key, (size_t)hl));
        return ENG_TABLE_ID_BYTES + ENG_HASH_BYTES;
}

int eng_catalog_route_key(const struct eng_catalog_table *t, const void *key, size_t len,
                          uint32_t *ret_tablet)
{
        uint8_t head[ENG_IKEY_OVERHEAD];
        long hl = head_put(t, key, len, head);

        if (hl < 0)
                return (int)hl;
        *ret_tablet = route(t, head, (size_t)hl, key, len);
        return 0;
}

int eng_catalog_route(const struct eng_catalog *c, const uint8_t *ikey, size_t len,
                      const struct eng_catalog_table **ret_table, uint32_t *ret_tablet)
{
        const struct eng_catalog_table *t;

        if (len < ENG_TABLE_ID_BYTES || eng_catalog_table_by_id(c, be32_get(ikey), &t) < 0)
                return -SCREE_ENOTFOUND;
        *ret_table = t;
        *ret_tablet = eng_catalog_route_ikey(t, ikey, len);
        return 0;
}

size_t eng_catalog_ikey_size(const struct eng_catalog_table *t, size_t len)
{
        return ENG_TABLE_ID_BYTES + (t->mode == ENG_CATALOG_HASHED ? ENG_HASH_BYTES : 0) + len;
}

long eng_catalog_ikey_encode(const struct eng_catalog_table *t, const void *key, size_t len,
                             uint8_t *dst)
{
        long hl = head_put(t, key, len, dst);

        if (hl < 0)
                return hl;
        if (len)
                memcpy(dst + hl, key, len);
        return hl + (long)len;
}
