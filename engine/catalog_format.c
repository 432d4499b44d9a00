/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog's encoding and its rules (schemas, options, the invariants
 * of a whole snapshot); see catalog.h and
 * docs/format/catalog.md for the bytes. A 40-byte header (magic, format
 * version, body length, body checksum, header checksum) then the body:
 * fixed fields, directories, dropped ids, tables. Integers little-endian,
 * fixed width; strings and keys carry a u16 length. Encodes the newest
 * version; decodes it and version 1, whose tables' options lack the
 * per-partition rate limits (read as 0, none). The header checksum is
 * verified before the version or the length is believed, the body
 * checksum before any count in it; every count is then bounded by the
 * bytes left before anything is allocated for it, and the decoded
 * snapshot must pass eng_catalog_check.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/checksum.h"
#include "base/endian.h"
#include "engine/catalog_int.h"
#include "engine/key.h"
#include "engine/tablet.h"

#define HDR_MAGIC_OFF 0
#define HDR_VERSION_OFF 8
#define HDR_RESERVED_OFF 12
#define HDR_BODY_LEN_OFF 16
#define HDR_BODY_CHECKSUM_OFF 24
#define HDR_CHECKSUM_OFF 32

#define BODY_FIXED_BYTES 32u
#define OPTIONS_V1_BYTES 32u
#define OPTIONS_BYTES 40u                                       /* version 2: the rate limits */
/* A table entry without path, parts or tablets, in version v. */
#define TABLE_MIN_BYTES_V(v) (4u + 2u + 4u + ((v) == 1 ? OPTIONS_V1_BYTES : OPTIONS_BYTES) + 4u)
#define TABLE_MIN_BYTES TABLE_MIN_BYTES_V(ENG_CATALOG_FORMAT_VERSION)
#define TABLET_MIN_BYTES 10u                                     /* id, shard, start length */

_Static_assert(ENG_CATALOG_MAX_START_BYTES ==
               ENG_TABLE_ID_BYTES + ENG_HASH_BYTES + ENG_CATALOG_MAX_SPLIT_BYTES,
               "a start key is an id, a hash and a split point");
_Static_assert(HDR_CHECKSUM_OFF + 8 == ENG_CATALOG_HEADER_BYTES, "catalog header size");

/* ---- encoding ---- */

static size_t table_size(const struct eng_catalog_table *t)
{
        return TABLE_MIN_BYTES + strlen(t->path) + t->n_parts +
               (size_t)t->n_tablets * TABLET_MIN_BYTES + t->keys_len;
}

size_t eng_catalog_encoded_size(const struct eng_catalog *c)
{
        size_t n = ENG_CATALOG_HEADER_BYTES + BODY_FIXED_BYTES + (size_t)c->n_dropped * 4;

        for (uint32_t i = 0; i < c->n_dirs; i++)
                n += 2 + strlen(c->dirs[i]);
        for (uint32_t i = 0; i < c->n_tables; i++)
                n += table_size(&c->tables[i]);
        return n;
}

static uint8_t *put_str(uint8_t *p, const void *s, size_t len)
{
        le16_put(p, (uint16_t)len);
        memcpy(p + 2, s, len);
        return p + 2 + len;
}

static uint8_t *put_options(uint8_t *p, const struct eng_catalog_options *o)
{
        p[0] = o->split_by_size;
        p[1] = o->split_by_load;
        p[2] = (uint8_t)o->compaction;
        p[3] = 0;
        le32_put(p + 4, o->split_load_percent);
        le32_put(p + 8, o->min_tablets);
        le32_put(p + 12, o->max_tablets);
        le64_put(p + 16, o->split_size_bytes);
        le64_put(p + 24, o->default_ttl_ms);
        le32_put(p + 32, o->partition_reads_per_sec);
        le32_put(p + 36, o->partition_writes_per_sec);
        return p + OPTIONS_BYTES;
}

static uint8_t *put_table(uint8_t *p, const struct eng_catalog_table *t)
{
        le32_put(p, t->id);
        p = put_str(p + 4, t->path, strlen(t->path));
        p[0] = (uint8_t)t->key_format;
        p[1] = (uint8_t)t->mode;
        p[2] = (uint8_t)t->n_parts;
        p[3] = (uint8_t)t->hash_parts;
        p += 4;
        for (uint32_t i = 0; i < t->n_parts; i++)
                *p++ = (uint8_t)t->parts[i];
        p = put_options(p, &t->options);
        le32_put(p, t->n_tablets);
        p += 4;
        for (uint32_t i = 0; i < t->n_tablets; i++) {
                le32_put(p, t->tablets[i].id);
                le32_put(p + 4, t->tablets[i].shard);
                p = put_str(p + 8, eng_catalog_tablet_start(t, i), t->tablets[i].start_len);
        }
        return p;
}

void eng_catalog_encode(const struct eng_catalog *c, void *dst)
{
        uint8_t *h = dst, *body = h + ENG_CATALOG_HEADER_BYTES, *p = body;
        size_t body_len = eng_catalog_encoded_size(c) - ENG_CATALOG_HEADER_BYTES;

        le64_put(p, c->version);
        le32_put(p + 8, c->n_shards);
        le32_put(p + 12, c->next_table_id);
        le32_put(p + 16, c->next_tablet_id);
        le32_put(p + 20, c->n_dirs);
        le32_put(p + 24, c->n_tables);
        le32_put(p + 28, c->n_dropped);
        p += BODY_FIXED_BYTES;
        for (uint32_t i = 0; i < c->n_dirs; i++)
                p = put_str(p, c->dirs[i], strlen(c->dirs[i]));
        for (uint32_t i = 0; i < c->n_dropped; i++, p += 4)
                le32_put(p, c->dropped[i]);
        for (uint32_t i = 0; i < c->n_tables; i++)
                p = put_table(p, &c->tables[i]);
        SCREE_ASSERT((size_t)(p - body) == body_len);
        memcpy(h + HDR_MAGIC_OFF, ENG_CATALOG_MAGIC, 8);
        le32_put(h + HDR_VERSION_OFF, ENG_CATALOG_FORMAT_VERSION);
        le32_put(h + HDR_RESERVED_OFF, 0);
        le64_put(h + HDR_BODY_LEN_OFF, body_len);
        le64_put(h + HDR_BODY_CHECKSUM_OFF, checksum64(body, body_len, ENG_CATALOG_SEED));
        le64_put(h + HDR_CHECKSUM_OFF, checksum64(h, HDR_CHECKSUM_OFF, ENG_CATALOG_SEED));
}

/* ---- decoding ---- */

/* A bounds-checked cursor: a read past the end sets bad and returns zeros. */
struct rd {
        const uint8_t *p, *end;
        bool bad;
        uint32_t version;               /* of the encoding (header) */
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
        const uint8_t *p = r->p;

        if (r->bad || (size_t)(r->end - r->p) < n) {
                r->bad = true;
                return NULL;
        }
        r->p += n;
        return p;
}

static uint8_t rd_u8(struct rd *r)
{
        const uint8_t *p = rd_take(r, 1);

        return p ? p[0] : 0;
}

static uint16_t rd_u16(struct rd *r)
{
        const uint8_t *p = rd_take(r, 2);

        return p ? le16_get(p) : 0;
}

static uint32_t rd_u32(struct rd *r)
{
        const uint8_t *p = rd_take(r, 4);

        return p ? le32_get(p) : 0;
}

static uint64_t rd_u64(struct rd *r)
{
        const uint8_t *p = rd_take(r, 8);

        return p ? le64_get(p) : 0;
}

/* Whether count entries of at least min bytes each can still follow. */
static bool rd_fits(const struct rd *r, uint64_t count, size_t min)
{
        return !r->bad && count <= (uint64_t)(r->end - r->p) / min;
}

/* A u16-length string as a new NUL-terminated copy; NULL if bad (r->bad)
 * or on ENOMEM (*enomem). */
static char *rd_str(struct rd *r, bool *enomem)
{
        uint16_t len = rd_u16(r);
        const uint8_t *p = rd_take(r, len);
        char *s;

        if (!p || memchr(p, 0, len)) {
                r->bad = true;
                return NULL;
        }
        s = malloc((size_t)len + 1);
        if (!s) {
                *enomem = true;
                return NULL;
        }
        memcpy(s, p, len);
        s[len] = 0;
        return s;
}

/* Booleans must be 0 or 1 (anything else is corrupt: false). */
static bool rd_bool(struct rd *r, bool *ok)
{
        uint8_t b = rd_u8(r);

        *ok = *ok && b <= 1;
        return b == 1;
}

static bool rd_options(struct rd *r, struct eng_catalog_options *o)
{
        bool ok = true;

        o->split_by_size = rd_bool(r, &ok);
        o->split_by_load = rd_bool(r, &ok);
        o->compaction = (enum eng_catalog_compaction)rd_u8(r);
        ok = ok && rd_u8(r) == 0;
        o->split_load_percent = rd_u32(r);
        o->min_tablets = rd_u32(r);
        o->max_tablets = rd_u32(r);
        o->split_size_bytes = rd_u64(r);
        o->default_ttl_ms = rd_u64(r);
        if (r->version >= 2) {
                o->partition_reads_per_sec = rd_u32(r);
                o->partition_writes_per_sec = rd_u32(r);
        } else {
                o->partition_reads_per_sec = o->partition_writes_per_sec = 0;
        }
        return ok && !r->bad;
}

/* Reads a table's tablets: their start keys are gathered into t->keys. */
static int rd_tablets(struct rd *r, struct eng_catalog_table *t)
{
        uint32_t n = rd_u32(r);
        const uint8_t *first;

        if (n == 0 || n > ENG_CATALOG_MAX_TABLETS || !rd_fits(r, n, TABLET_MIN_BYTES))
                return -SCREE_ECORRUPT;
        t->tablets = calloc(n, sizeof(*t->tablets));
        if (!t->tablets)
                return -ENOMEM;
        first = r->p;
        for (; t->n_tablets < n && !r->bad; t->n_tablets++) {
                struct eng_catalog_tablet *b = &t->tablets[t->n_tablets];

                b->id = rd_u32(r);
                b->shard = rd_u32(r);
                b->start_len = rd_u16(r);
                b->start_off = t->keys_len;
                t->keys_len += b->start_len;    /* <= n * 65535: no overflow */
                rd_take(r, b->start_len);
        }
        if (r->bad)
                return -SCREE_ECORRUPT;
        t->keys = malloc(t->keys_len ? t->keys_len : 1);
        if (!t->keys)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++) {      /* again, now known to fit */
                struct eng_catalog_tablet *b = &t->tablets[i];

                memcpy(t->keys + b->start_off, first + 10, b->start_len);
                b->key8 = eng_catalog_key8(t->keys + b->start_off, b->start_len);
                first += 10 + b->start_len;
        }
        return 0;
}

static int rd_table(struct rd *r, struct eng_catalog_table *t)
{
        bool enomem = false;

        t->id = rd_u32(r);
        t->path = rd_str(r, &enomem);
        if (!t->path)
                return enomem ? -ENOMEM : -SCREE_ECORRUPT;
        if (strlen(t->path) == 0 || t->path[0] != '/')
                return -SCREE_ECORRUPT;
        eng_catalog_table_set_name(t);
        t->key_format = (enum eng_catalog_key_format)rd_u8(r);
        t->mode = (enum eng_catalog_key_mode)rd_u8(r);
        t->n_parts = rd_u8(r);
        t->hash_parts = rd_u8(r);
        if (t->n_parts > ENG_CATALOG_MAX_PARTS)
                return -SCREE_ECORRUPT;
        for (uint32_t i = 0; i < t->n_parts; i++)
                t->parts[i] = (enum eng_tuple_type)rd_u8(r);
        if (!rd_options(r, &t->options))
                return -SCREE_ECORRUPT;
        return rd_tablets(r, t);
}

static int rd_body(struct rd *r, struct eng_catalog *c)
{
        bool enomem = false;
        uint32_t n_dirs, n_tables, n_dropped;
        int rc;

        c->version = rd_u64(r);
        c->n_shards = rd_u32(r);
        c->next_table_id = rd_u32(r);
        c->next_tablet_id = rd_u32(r);
        n_dirs = rd_u32(r);
        n_tables = rd_u32(r);
        n_dropped = rd_u32(r);
        if (!rd_fits(r, n_dirs, 2) || !rd_fits(r, n_dropped, 4) ||
            !rd_fits(r, n_tables, TABLE_MIN_BYTES_V(r->version)))
                return -SCREE_ECORRUPT;
        c->dirs = calloc((size_t)n_dirs + 1, sizeof(*c->dirs));
        c->tables = calloc((size_t)n_tables + 1, sizeof(*c->tables));
        c->dropped = calloc((size_t)n_dropped + 1, sizeof(*c->dropped));
        if (!c->dirs || !c->tables || !c->dropped)
                return -ENOMEM;
        for (; c->n_dirs < n_dirs; c->n_dirs++)
                if (!(c->dirs[c->n_dirs] = rd_str(r, &enomem)))
                        return enomem ? -ENOMEM : -SCREE_ECORRUPT;
        for (; c->n_dropped < n_dropped; c->n_dropped++)
                c->dropped[c->n_dropped] = rd_u32(r);
        for (; c->n_tables < n_tables; ) {
                rc = rd_table(r, &c->tables[c->n_tables++]);   /* counted: freed on error */
                if (rc < 0)
                        return rc;
        }
        return r->bad || r->p != r->end ? -SCREE_ECORRUPT : 0;
}

/* Verifies the header; returns the body length or an error. */
static long long header_check(const uint8_t *p, size_t len)
{
        uint32_t version;
        uint64_t body_len;

        if (len < ENG_CATALOG_HEADER_BYTES || memcmp(p + HDR_MAGIC_OFF, ENG_CATALOG_MAGIC, 8) != 0 ||
            le64_get(p + HDR_CHECKSUM_OFF) != checksum64(p, HDR_CHECKSUM_OFF, ENG_CATALOG_SEED))
                return -SCREE_ECORRUPT;
        version = le32_get(p + HDR_VERSION_OFF);
        if (version == 0 || le32_get(p + HDR_RESERVED_OFF) != 0)
                return -SCREE_ECORRUPT;
        if (version > ENG_CATALOG_FORMAT_VERSION)
                return -SCREE_EUNSUPPORTED;
        body_len = le64_get(p + HDR_BODY_LEN_OFF);
        if (body_len != len - ENG_CATALOG_HEADER_BYTES)
                return -SCREE_ECORRUPT;
        if (le64_get(p + HDR_BODY_CHECKSUM_OFF) !=
            checksum64(p + ENG_CATALOG_HEADER_BYTES, body_len, ENG_CATALOG_SEED))
                return -SCREE_ECORRUPT;
        return (long long)body_len;
}

int eng_catalog_decode(const void *src, size_t len, struct eng_catalog **ret)
{
        const uint8_t *p = src;
        long long body_len = header_check(p, len);
        struct eng_catalog *c;
        struct rd r;
        int rc;

        if (body_len < 0)
                return (int)body_len;
        c = eng_catalog_alloc();
        if (!c)
                return -ENOMEM;
        r = (struct rd){ .p = p + ENG_CATALOG_HEADER_BYTES, .end = p + len,
                         .version = le32_get(p + HDR_VERSION_OFF) };
        rc = rd_body(&r, c);
        if (rc == 0)
                rc = eng_catalog_check(c);
        if (rc < 0) {
                eng_catalog_unref(c);
                return rc;
        }
        *ret = c;
        return 0;
}

/* ---- invariants ---- */

int eng_catalog_schema_check(enum eng_catalog_key_format format, enum eng_catalog_key_mode mode,
                             uint32_t n_parts, const enum eng_tuple_type *parts,
                             uint32_t hash_parts, char *err, size_t err_len)
{
        if (mode != ENG_CATALOG_ORDERED && mode != ENG_CATALOG_HASHED)
                return eng_catalog_fail(-EINVAL, err, err_len, "key mode must be ordered or hashed");
        if (format != ENG_CATALOG_KEYS_TUPLE && format != ENG_CATALOG_KEYS_RAW)
                return eng_catalog_fail(-EINVAL, err, err_len, "unknown key format %d", (int)format);
        if (n_parts < 1 || n_parts > ENG_CATALOG_MAX_PARTS)
                return eng_catalog_fail(-EINVAL, err, err_len, "a key has 1..%u parts, not %u",
                                        ENG_CATALOG_MAX_PARTS, n_parts);
        for (uint32_t i = 0; i < n_parts; i++)
                if (parts[i] != ENG_TUPLE_I64 && parts[i] != ENG_TUPLE_U64 &&
                    parts[i] != ENG_TUPLE_BYTES)
                        return eng_catalog_fail(-EINVAL, err, err_len,
                                                "key part %u: type must be i64, u64 or bytes", i);
        if (format == ENG_CATALOG_KEYS_RAW && (n_parts != 1 || parts[0] != ENG_TUPLE_BYTES))
                return eng_catalog_fail(-EINVAL, err, err_len, "raw keys have one bytes part");
        if (mode == ENG_CATALOG_HASHED && (hash_parts < 1 || hash_parts > n_parts))
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "hash_parts must be 1..%u (the key's parts), not %u",
                                        n_parts, hash_parts);
        if (mode == ENG_CATALOG_ORDERED && hash_parts != 0)
                return eng_catalog_fail(-EINVAL, err, err_len, "an ordered table has no hash_parts");
        return 0;
}

int eng_catalog_options_check(const struct eng_catalog_options *o, char *err, size_t err_len)
{
        if (o->compaction != ENG_CATALOG_COMPACTION_SIZE_TIERED)
                return eng_catalog_fail(-EINVAL, err, err_len, "compaction: only size-tiered exists");
        if (o->split_load_percent < 1 || o->split_load_percent > 100)
                return eng_catalog_fail(-EINVAL, err, err_len, "split load threshold %u%%: 1..100",
                                        o->split_load_percent);
        if (o->min_tablets < 1 || o->min_tablets > o->max_tablets ||
            o->max_tablets > ENG_CATALOG_MAX_TABLETS)
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "tablet counts min %u max %u: need 1 <= min <= max <= %u",
                                        o->min_tablets, o->max_tablets, ENG_CATALOG_MAX_TABLETS);
        if (o->split_size_bytes < (UINT64_C(1) << 20) || o->split_size_bytes > (UINT64_C(1) << 40))
                return eng_catalog_fail(-EINVAL, err, err_len,
                                        "split size %llu bytes: 1 MiB..1 TiB",
                                        (unsigned long long)o->split_size_bytes);
        if (o->default_ttl_ms >= (UINT64_C(1) << 62))
                return eng_catalog_fail(-EINVAL, err, err_len, "default TTL %llu ms too large",
                                        (unsigned long long)o->default_ttl_ms);
        return 0;
}


static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_u32(const void *a, const void *b)
{
        uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

        return (x > y) - (x < y);
}

/* Whether path's parent is the root or a directory of c. */
static bool parent_ok(const struct eng_catalog *c, const char *path)
{
        size_t n = eng_catalog_parent_len(path, strlen(path));

        return n == 0 || eng_catalog_dir_find(c, path, n) >= 0;
}

static int dirs_check(const struct eng_catalog *c)
{
        for (uint32_t i = 0; i < c->n_dirs; i++) {
                if (!c->dirs[i] || eng_catalog_path_check(c->dirs[i], false, NULL, 0) < 0)
                        return -SCREE_ECORRUPT;
                if (i > 0 && strcmp(c->dirs[i - 1], c->dirs[i]) >= 0)
                        return -SCREE_ECORRUPT;
        }
        for (uint32_t i = 0; i < c->n_dirs; i++)
                if (!parent_ok(c, c->dirs[i]))
                        return -SCREE_ECORRUPT;
        return 0;
}

static bool tablets_ok(const struct eng_catalog *c, const struct eng_catalog_table *t)
{
        uint8_t id[ENG_TABLE_ID_BYTES];

        be32_put(id, t->id);
        if (t->n_tablets < 1 || t->n_tablets > ENG_CATALOG_MAX_TABLETS || t->tablets[0].start_len != 4)
                return false;
        for (uint32_t i = 0; i < t->n_tablets; i++) {
                const struct eng_catalog_tablet *b = &t->tablets[i];
                const uint8_t *s = eng_catalog_tablet_start(t, i);

                if (b->start_len < 4 || b->start_len > ENG_CATALOG_MAX_START_BYTES ||
                    (uint64_t)b->start_off + b->start_len > t->keys_len || memcmp(s, id, 4) != 0 ||
                    b->shard >= c->n_shards || b->id >= c->next_tablet_id ||
                    b->key8 != eng_catalog_key8(s, b->start_len))
                        return false;
                if (i > 0 && eng_key_cmp(eng_catalog_tablet_start(t, i - 1), t->tablets[i - 1].start_len,
                                         s, b->start_len) >= 0)
                        return false;
        }
        return true;
}

static int tables_check(const struct eng_catalog *c)
{
        for (uint32_t i = 0; i < c->n_tables; i++) {
                const struct eng_catalog_table *t = &c->tables[i];

                if (t->id >= c->next_table_id || (i > 0 && c->tables[i - 1].id >= t->id))
                        return -SCREE_ECORRUPT;
                if (!t->path || eng_catalog_path_check(t->path, false, NULL, 0) < 0 ||
                    !parent_ok(c, t->path))
                        return -SCREE_ECORRUPT;
                if (eng_catalog_schema_check(t->key_format, t->mode, t->n_parts, t->parts,
                                             t->hash_parts, NULL, 0) < 0 ||
                    eng_catalog_options_check(&t->options, NULL, 0) < 0 || !tablets_ok(c, t))
                        return -SCREE_ECORRUPT;
        }
        return 0;
}

/* Every path (directories and tables) distinct. */
static int names_unique(const struct eng_catalog *c)
{
        size_t n = (size_t)c->n_dirs + c->n_tables;
        const char **v = malloc((n + 1) * sizeof(*v));
        int r = 0;

        if (!v)
                return -ENOMEM;
        for (uint32_t i = 0; i < c->n_dirs; i++)
                v[i] = c->dirs[i];
        for (uint32_t i = 0; i < c->n_tables; i++)
                v[c->n_dirs + i] = c->tables[i].path;
        qsort(v, n, sizeof(*v), cmp_str);
        for (size_t i = 1; i < n && r == 0; i++)
                if (strcmp(v[i - 1], v[i]) == 0)
                        r = -SCREE_ECORRUPT;
        free(v);
        return r;
}

/* Every tablet id distinct. */
static int tablet_ids_unique(const struct eng_catalog *c)
{
        size_t n = 0, k = 0;
        uint32_t *v;
        int r = 0;

        for (uint32_t i = 0; i < c->n_tables; i++)
                n += c->tables[i].n_tablets;
        v = malloc((n + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (uint32_t i = 0; i < c->n_tables; i++)
                for (uint32_t j = 0; j < c->tables[i].n_tablets; j++)
                        v[k++] = c->tables[i].tablets[j].id;
        qsort(v, n, sizeof(*v), cmp_u32);
        for (size_t i = 1; i < n && r == 0; i++)
                if (v[i - 1] == v[i])
                        r = -SCREE_ECORRUPT;
        free(v);
        return r;
}

static int dropped_check(const struct eng_catalog *c)
{
        const struct eng_catalog_table *t;

        for (uint32_t i = 0; i < c->n_dropped; i++)
                if (c->dropped[i] >= c->next_table_id || (i > 0 && c->dropped[i - 1] >= c->dropped[i]) ||
                    eng_catalog_table_by_id(c, c->dropped[i], &t) == 0)
                        return -SCREE_ECORRUPT;
        return 0;
}

int eng_catalog_check(const struct eng_catalog *c)
{
        int r;

        if (c->version == 0 || c->n_shards < 1 || c->n_shards > ENG_CATALOG_MAX_SHARDS ||
            c->next_table_id < ENG_CATALOG_FIRST_USER_ID)
                return -SCREE_ECORRUPT;
        r = dirs_check(c);
        if (r == 0)
                r = tables_check(c);
        if (r == 0)
                r = names_unique(c);
        if (r == 0)
                r = tablet_ids_unique(c);
        if (r == 0)
                r = dropped_check(c);
        return r;
}
