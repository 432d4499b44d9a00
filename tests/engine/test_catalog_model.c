/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The catalog against a model: random sequences of mkdir, rmdir, create,
 * drop, alter and forget over a small name space (so that names collide,
 * parents go missing and directories fill up), each operation's outcome
 * predicted by a plain in-memory model. After every step: each directory's
 * listing, each table's description and the routing of random keys (by
 * the model's own arithmetic: hash slices, integer slices, split points
 * compared as tuples), the dropped ids, and that the snapshot the
 * operation started from is byte for byte what it was. Every few steps the
 * catalog goes through its encoding and the copy is checked the same way.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/tablet.h"
#include "engine/tuple.h"
#include "tests/engine/catalog_helpers.h"
#include "tests/rng.h"

TestSuite(catalog_model, .timeout = 60);

#define MAXP 32
#define MAX_DIRS 64
#define MAX_TABLES 64
#define MAX_SPLITS 6
#define N_SHARDS 3

/* A one-part split point; for bytes the part's pointer is set by sp_part. */
struct sp {
        struct eng_tuple_part p;
        char b[4];
};

static struct eng_tuple_part sp_part(const struct sp *s)
{
        struct eng_tuple_part p = s->p;

        if (p.type == ENG_TUPLE_BYTES)
                p.v.bytes.p = s->b;
        return p;
}

struct m_table {
        char path[MAXP];
        uint32_t id;
        enum eng_catalog_key_mode mode;
        enum eng_tuple_type parts[3];
        uint32_t n_parts, hash_parts, n_tablets, n_splits;
        struct sp split[MAX_SPLITS];
        uint64_t ttl;
};

struct model {
        char dirs[MAX_DIRS][MAXP];
        uint32_t n_dirs, n_tables, n_dropped, next_id;
        struct m_table tables[MAX_TABLES];
        uint32_t dropped[1024];
};

static uint64_t rng = 0x9e3779b97f4a7c15u;
static char err[256];

static uint64_t next(void)
{
        return test_rng_next(&rng);
}

/* ---- the model ---- */

static long m_dir(const struct model *m, const char *p)
{
        for (uint32_t i = 0; i < m->n_dirs; i++)
                if (strcmp(m->dirs[i], p) == 0)
                        return i;
        return -1;
}

static long m_table(const struct model *m, const char *p)
{
        for (uint32_t i = 0; i < m->n_tables; i++)
                if (strcmp(m->tables[i].path, p) == 0)
                        return i;
        return -1;
}

/* The parent of p into out ("" for the root). */
static void parent(const char *p, char *out)
{
        size_t n = (size_t)(strrchr(p, '/') - p);

        memcpy(out, p, n);
        out[n] = 0;
}

/* What a missing directory p (or an ancestor of it, p included) gives. */
static int m_missing(const struct model *m, const char *p)
{
        char a[MAXP];

        for (strcpy(a, p); a[0]; parent(a, a))
                if (m_table(m, a) >= 0)
                        return -ENOTDIR;
        return -SCREE_ENOTFOUND;
}

/* The error of putting a new name at p, or 0. */
static int m_new_name(const struct model *m, const char *p)
{
        char par[MAXP];

        parent(p, par);
        if (par[0] && m_dir(m, par) < 0)
                return m_missing(m, par);
        if (m_dir(m, p) >= 0 || m_table(m, p) >= 0)
                return -EEXIST;
        return 0;
}

static bool m_has_children(const struct model *m, const char *p)
{
        char par[MAXP];

        for (uint32_t i = 0; i < m->n_dirs; i++)
                if ((parent(m->dirs[i], par), strcmp(par, p) == 0))
                        return true;
        for (uint32_t i = 0; i < m->n_tables; i++)
                if ((parent(m->tables[i].path, par), strcmp(par, p) == 0))
                        return true;
        return false;
}

/* The error of naming a table at p, or 0. */
static int m_table_err(const struct model *m, const char *p)
{
        char par[MAXP];

        if (m_table(m, p) >= 0)
                return 0;
        if (m_dir(m, p) >= 0)
                return -EINVAL;
        parent(p, par);
        if (par[0] && m_dir(m, par) < 0)
                return m_missing(m, par);
        return -SCREE_ENOTFOUND;
}

/* ---- random inputs ---- */

static void random_path(char *p)
{
        int depth = 1 + (int)(next() % 3);

        p[0] = 0;
        for (int i = 0; i < depth; i++)
                strcat(p, (const char *[]){ "/a", "/b", "/c" }[next() % 3]);
}

static const int64_t i64s[] = { INT64_MIN, -1000, -1, 0, 1, 7, 1000, INT64_MAX };
static const uint64_t u64s[] = { 0, 1, 7, 1000, UINT64_C(1) << 63, UINT64_MAX };

/* A random value of type t (bytes point into buf, 4 bytes). */
static void random_part(struct eng_tuple_part *p, enum eng_tuple_type t, char *buf)
{
        p->type = t;
        if (t == ENG_TUPLE_I64)
                p->v.i64 = next() % 2 ? i64s[next() % 8] : (int64_t)next();
        else if (t == ENG_TUPLE_U64)
                p->v.u64 = next() % 2 ? u64s[next() % 6] : next();
        else {
                uint32_t n = (uint32_t)(next() % 4);

                for (uint32_t i = 0; i < n; i++)
                        buf[i] = "ab\0\xff"[next() % 4];
                p->v.bytes.p = buf;
                p->v.bytes.len = n;
        }
}

static int sp_cmp(const void *a, const void *b)
{
        struct eng_tuple_part x = sp_part(a), y = sp_part(b);

        return eng_tuple_cmp(&x, 1, &y, 1);
}

/* Sorted distinct split points over the first part. */
static void random_splits(struct m_table *t)
{
        uint32_t want = 1 + (uint32_t)(next() % MAX_SPLITS), n = 0;

        for (; n < want; n++)
                random_part(&t->split[n].p, t->parts[0], t->split[n].b);
        qsort(t->split, n, sizeof(t->split[0]), sp_cmp);
        t->n_splits = 0;
        for (uint32_t i = 0; i < n; i++)        /* distinct */
                if (i == 0 || sp_cmp(&t->split[i - 1], &t->split[i]) != 0)
                        t->split[t->n_splits++] = t->split[i];
}

static void random_schema(struct m_table *t)
{
        static const enum eng_tuple_type types[] = { ENG_TUPLE_I64, ENG_TUPLE_U64, ENG_TUPLE_BYTES };

        t->n_parts = 1 + (uint32_t)(next() % 3);
        for (uint32_t i = 0; i < t->n_parts; i++)
                t->parts[i] = types[next() % 3];
        t->mode = next() % 2 ? ENG_CATALOG_HASHED : ENG_CATALOG_ORDERED;
        t->hash_parts = t->mode == ENG_CATALOG_HASHED ? 1 + (uint32_t)(next() % t->n_parts) : 0;
        t->n_splits = 0;
        t->n_tablets = 1 + (uint32_t)(next() % 16);
        if (t->mode == ENG_CATALOG_ORDERED && (t->parts[0] == ENG_TUPLE_BYTES || next() % 2)) {
                random_splits(t);
                t->n_tablets = t->n_splits + 1;
        }
        t->ttl = next() % 3 ? 0 : next() % 100000;
}

/* The spec of model table t; split encodings go into enc. */
static struct eng_catalog_table_spec spec_of(const struct m_table *t, uint8_t enc[][32],
                                             struct eng_catalog_split *sp)
{
        struct eng_catalog_table_spec s = {
                .path = t->path, .key_format = ENG_CATALOG_KEYS_TUPLE, .mode = t->mode,
                .n_parts = t->n_parts, .parts = t->parts, .hash_parts = t->hash_parts,
                .options = eng_catalog_options_default(), .n_tablets = t->n_tablets,
                .splits = sp, .n_splits = t->n_splits,
        };

        s.options.default_ttl_ms = t->ttl;
        for (uint32_t i = 0; i < t->n_splits; i++) {
                struct eng_tuple_part p = sp_part(&t->split[i]);

                cr_assert(eq(int, eng_tuple_encode(&p, 1, enc[i], 32, &sp[i].len), 0));
                sp[i].key = enc[i];
        }
        return s;
}

/* The model's tablet of a key: slices of the hash or of the first
 * integer, or the split points at or before the key. */
static uint32_t m_route(const struct m_table *t, const struct eng_tuple_part *key)
{
        __extension__ unsigned __int128 x;
        uint8_t enc[128];
        size_t len;
        uint32_t g = 0;

        if (t->mode == ENG_CATALOG_HASHED) {
                eng_tuple_encode(key, t->hash_parts, enc, sizeof(enc), &len);
                x = __extension__(unsigned __int128)eng_key_hash(enc, len) * t->n_tablets;
                return (uint32_t)(x >> 64);
        }
        if (t->n_splits) {
                for (uint32_t i = 0; i < t->n_splits; i++) {
                        struct eng_tuple_part p = sp_part(&t->split[i]);

                        g += eng_tuple_cmp(&p, 1, key, t->n_parts) <= 0;
                }
                return g;
        }
        if (key[0].type == ENG_TUPLE_NULL)
                return 0;
        x = key[0].type == ENG_TUPLE_U64 ? key[0].v.u64 : (uint64_t)key[0].v.i64 ^ (UINT64_C(1) << 63);
        return (uint32_t)((x * t->n_tablets) >> 64);
}

static void check_routes(const struct eng_catalog_table *ct, const struct m_table *t)
{
        for (int k = 0; k < 16; k++) {
                struct eng_tuple_part key[3];
                char bufs[3][4];
                uint8_t enc[128];
                size_t len;
                uint32_t tablet, want;

                for (uint32_t i = 0; i < t->n_parts; i++)
                        if (next() % 8 == 0)
                                key[i].type = ENG_TUPLE_NULL;
                        else
                                random_part(&key[i], t->parts[i], bufs[i]);
                cr_assert(eq(int, eng_tuple_encode(key, t->n_parts, enc, sizeof(enc), &len), 0));
                cr_assert(eq(int, eng_catalog_route_key(ct, enc, len, &tablet), 0));
                want = m_route(t, key);
                cr_assert(eq(u32, tablet, want), "%s: key routed to %u, model says %u", t->path,
                          tablet, want);
                cr_assert(eq(u32, ct->tablets[tablet].shard, (t->id + want) % N_SHARDS));
        }
}

static void check_table(const struct eng_catalog *c, const struct m_table *t)
{
        const struct eng_catalog_table *ct;

        cr_assert(eq(int, eng_catalog_lookup(c, t->path, &ct), 0), "%s", t->path);
        cr_assert(eq(u32, ct->id, t->id));
        cr_assert(eq(int, ct->mode, t->mode));
        cr_assert(eq(u32, ct->n_parts, t->n_parts));
        cr_assert(eq(u32, ct->hash_parts, t->hash_parts));
        for (uint32_t i = 0; i < t->n_parts; i++)
                cr_assert(eq(int, ct->parts[i], t->parts[i]));
        cr_assert(eq(u32, ct->n_tablets, t->n_tablets));
        cr_assert(eq(u64, ct->options.default_ttl_ms, t->ttl));
        check_routes(ct, t);
}

static int name_cmp(const void *a, const void *b)
{
        return strcmp(a, b);
}

/* The listing of dir p ("" for the root) against the model's children. */
static void check_dir(const struct eng_catalog *c, const struct model *m, const char *p)
{
        struct eng_catalog_entry v[MAX_DIRS + MAX_TABLES];
        char want[MAX_DIRS + MAX_TABLES][MAXP], par[MAXP];
        size_t n = 0;
        long got = eng_catalog_list(c, p[0] ? p : "/", v, MAX_DIRS + MAX_TABLES, err, sizeof(err));

        for (uint32_t i = 0; i < m->n_dirs; i++)
                if ((parent(m->dirs[i], par), strcmp(par, p) == 0))
                        strcpy(want[n++], strrchr(m->dirs[i], '/') + 1);
        for (uint32_t i = 0; i < m->n_tables; i++)
                if ((parent(m->tables[i].path, par), strcmp(par, p) == 0))
                        strcpy(want[n++], strrchr(m->tables[i].path, '/') + 1);
        qsort(want, n, MAXP, name_cmp);
        cr_assert(eq(long, got, (long)n), "listing '%s': %s", p, err);
        for (size_t i = 0; i < n; i++) {
                char full[2 * MAXP];

                cr_assert(eq(str, (char *)v[i].name, want[i]));
                snprintf(full, sizeof(full), "%s/%s", p, want[i]);
                cr_assert(eq(int, v[i].is_table, m_table(m, full) >= 0));
        }
}

static void check_all(const struct eng_catalog *c, const struct model *m)
{
        const uint32_t *dropped;
        uint32_t n_dropped;

        cr_assert(eq(int, eng_catalog_check(c), 0));
        cr_assert(eq(u32, eng_catalog_n_tables(c), m->n_tables));
        cr_assert(eq(u32, eng_catalog_next_table_id(c), m->next_id));
        check_dir(c, m, "");
        for (uint32_t i = 0; i < m->n_dirs; i++)
                check_dir(c, m, m->dirs[i]);
        for (uint32_t i = 0; i < m->n_tables; i++)
                check_table(c, &m->tables[i]);
        dropped = eng_catalog_dropped(c, &n_dropped);
        cr_assert(eq(u32, n_dropped, m->n_dropped));
        for (uint32_t i = 0; i < n_dropped; i++)
                cr_assert(eq(u32, dropped[i], m->dropped[i]));
}

/* ---- operations: the catalog's result and the model's prediction ---- */

static void m_drop(struct model *m, long at)
{
        uint32_t id = m->tables[at].id, i = m->n_dropped++;

        for (; i > 0 && m->dropped[i - 1] > id; i--)
                m->dropped[i] = m->dropped[i - 1];
        m->dropped[i] = id;
        m->tables[at] = m->tables[--m->n_tables];
}

static void m_forget(struct model *m, uint32_t at)
{
        memmove(&m->dropped[at], &m->dropped[at + 1], (m->n_dropped - at - 1) * sizeof(uint32_t));
        m->n_dropped--;
}

/* One random operation on *c: checks the outcome against the model and
 * applies it to both. */
static void step(struct eng_catalog **c, struct model *m)
{
        struct eng_catalog *n = NULL;
        struct m_table t = { 0 };
        struct eng_catalog_options o = eng_catalog_options_default();
        uint8_t enc[MAX_SPLITS][32];
        struct eng_catalog_split sp[MAX_SPLITS];
        struct eng_catalog_table_spec s;
        uint32_t id = 0, fid;
        long at;
        int r, want, op = (int)(next() % 6);

        random_path(t.path);
        at = m_table(m, t.path);
        switch (op) {
        case 0:
                r = eng_catalog_mkdir(*c, t.path, &n, err, sizeof(err));
                want = m_new_name(m, t.path);
                if (r == 0 && want == 0)
                        strcpy(m->dirs[m->n_dirs++], t.path);
                break;
        case 1:
                r = eng_catalog_rmdir(*c, t.path, &n, err, sizeof(err));
                want = m_dir(m, t.path) < 0 ? m_missing(m, t.path) :
                       m_has_children(m, t.path) ? -ENOTEMPTY : 0;
                if (r == 0 && want == 0) {
                        at = m_dir(m, t.path);
                        memmove(m->dirs[at], m->dirs[--m->n_dirs], MAXP);
                }
                break;
        case 2:
        case 3:
                random_schema(&t);
                s = spec_of(&t, enc, sp);
                r = eng_catalog_create_table(*c, &s, &n, &id, err, sizeof(err));
                want = m_new_name(m, t.path);
                if (r == 0 && want == 0) {
                        cr_assert(eq(u32, id, m->next_id));
                        t.id = m->next_id++;
                        m->tables[m->n_tables++] = t;
                }
                break;
        case 4:
                r = eng_catalog_drop_table(*c, t.path, &n, err, sizeof(err));
                want = m_table_err(m, t.path);
                if (r == 0 && want == 0)
                        m_drop(m, at);
                break;
        default:
                if (m->n_dropped && next() % 2) {
                        fid = (uint32_t)(next() % m->n_dropped);
                        r = eng_catalog_forget_dropped(*c, m->dropped[fid], &n, err, sizeof(err));
                        want = 0;
                        if (r == 0)
                                m_forget(m, fid);
                        break;
                }
                o.default_ttl_ms = next() % 1000;
                r = eng_catalog_alter_table(*c, t.path, &o, &n, err, sizeof(err));
                want = m_table_err(m, t.path);
                if (r == 0 && want == 0)
                        m->tables[at].ttl = o.default_ttl_ms;
                break;
        }
        cr_assert(eq(int, r, want), "op %d on %s: got %d (%s), model says %d", op, t.path, r,
                  r ? err : "", want);
        if (r < 0) {
                cr_assert(n == NULL);
                return;
        }
        cr_assert(eq(u64, eng_catalog_version(n), eng_catalog_version(*c) + 1));
        eng_catalog_unref(*c);
        *c = n;
}

/* c through its encoding: the copy re-encodes to the same bytes. */
static struct eng_catalog *round_trip(const struct eng_catalog *c)
{
        size_t len = eng_catalog_encoded_size(c), len2;
        uint8_t *b = malloc(len), *b2;
        struct eng_catalog *d = NULL;

        cr_assert(b != NULL);
        eng_catalog_encode(c, b);
        cr_assert(eq(int, eng_catalog_decode(b, len, &d), 0));
        len2 = eng_catalog_encoded_size(d);
        cr_assert(eq(sz, len2, len));
        b2 = malloc(len2);
        eng_catalog_encode(d, b2);
        cr_assert(eq(int, memcmp(b, b2, len), 0));
        free(b2);
        free(b);
        return d;
}

Test(catalog_model, random_operations_match_the_model)
{
        for (int round = 0; round < 20; round++) {
                struct model *m = calloc(1, sizeof(*m));
                struct eng_catalog *c = eng_catalog_new(N_SHARDS), *old = NULL;
                uint8_t *old_bytes = NULL;
                size_t old_len = 0;

                m->next_id = ENG_CATALOG_FIRST_USER_ID;
                for (int i = 0; i < 300; i++) {
                        if (i % 37 == 0) {      /* keep one snapshot, check it never changes */
                                if (old) {
                                        size_t len;
                                        uint8_t *now = catalog_bytes(old, &len);

                                        cr_assert(eq(sz, len, old_len));
                                        cr_assert(eq(int, memcmp(now, old_bytes, len), 0));
                                        free(now);
                                }
                                eng_catalog_unref(old);
                                free(old_bytes);
                                old = eng_catalog_ref(c);
                                old_bytes = catalog_bytes(old, &old_len);
                        }
                        step(&c, m);
                        check_all(c, m);
                        if (i % 25 == 24) {
                                struct eng_catalog *d = round_trip(c);

                                check_all(d, m);
                                eng_catalog_unref(c);
                                c = d;
                        }
                }
                eng_catalog_unref(old);
                free(old_bytes);
                eng_catalog_unref(c);
                free(m);
        }
}
