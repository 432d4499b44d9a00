/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Directories and tables (scree.h): changes go through the catalog
 * service on shard 0 (api_catalog_change); reads use the host's snapshot.
 * Also the composite-key helpers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api/req.h"
#include "engine/catalog_options.h"

/* ---- keys ---- */

/* The library's parts as the engine's, into p (n of them). 0 or -EINVAL
 * with a message. */
static int parts_convert(const scree_part *parts, size_t n, struct eng_tuple_part *p)
{
        for (size_t i = 0; i < n; i++) {
                p[i].type = (enum eng_tuple_type)parts[i].type;
                if (parts[i].type != SCREE_BYTES) {
                        p[i].v.u64 = parts[i].v.u64;
                        continue;
                }
                if (parts[i].v.bytes.len > UINT32_MAX ||
                    (!parts[i].v.bytes.p && parts[i].v.bytes.len))
                        return api_fail(-EINVAL, "part %zu: bytes are 0 to 2^32-1, not NULL with "
                                        "a length", i + 1);
                p[i].v.bytes.p = parts[i].v.bytes.p;
                p[i].v.bytes.len = (uint32_t)parts[i].v.bytes.len;
        }
        return 0;
}

SCREE_API int scree_key_encode(const scree_part *parts, size_t n, void *dst, size_t cap,
                               size_t *ret_len)
{
        struct eng_tuple_part p[ENG_CATALOG_MAX_PARTS * 4];
        int r;

        if ((n && !parts) || !ret_len || (!dst && cap))
                return api_fail(-EINVAL, "scree_key_encode needs parts (when n > 0), a "
                                "destination (when cap > 0) and ret_len");
        if (n > sizeof(p) / sizeof(p[0]))
                return api_fail(-EINVAL, "a key has at most %zu parts, not %zu",
                                sizeof(p) / sizeof(p[0]), n);
        if ((r = parts_convert(parts, n, p)) < 0)
                return r;
        r = eng_tuple_encode(p, n, dst, cap, ret_len);
        if (r == -ENOSPC)
                return api_fail(r, "the key takes %zu bytes; cap is %zu", *ret_len, cap);
        if (r < 0)
                return api_fail(r, "a part's type is not SCREE_NULL, SCREE_I64, SCREE_U64 or "
                                "SCREE_BYTES");
        return 0;
}

SCREE_API int scree_key_decode(const void *key, size_t len, scree_part *parts, size_t max,
                               void *scratch, size_t scratch_cap)
{
        struct eng_tuple_part p[ENG_CATALOG_MAX_PARTS * 4];
        size_t m = max < sizeof(p) / sizeof(p[0]) ? max : sizeof(p) / sizeof(p[0]);
        int n;

        if ((!key && len) || (!parts && max) || (!scratch && scratch_cap))
                return api_fail(-EINVAL, "scree_key_decode needs a key (when len > 0), parts "
                                "(when max > 0) and scratch (when scratch_cap > 0)");
        n = eng_tuple_decode(key, len, p, m, scratch, scratch_cap);
        if (n < 0)
                return api_fail(n, "not a whole key encoding of at most %zu parts (or scratch, "
                                "%zu bytes, is too small)", m, scratch_cap);
        for (int i = 0; i < n; i++) {
                parts[i].type = (scree_type)p[i].type;
                if (p[i].type == ENG_TUPLE_BYTES) {
                        parts[i].v.bytes.p = p[i].v.bytes.p;
                        parts[i].v.bytes.len = p[i].v.bytes.len;
                } else {
                        parts[i].v.u64 = p[i].v.u64;
                }
        }
        return n;
}

SCREE_API size_t scree_key_prefix_end(const void *prefix, size_t len, void *dst, size_t cap)
{
        size_t n;

        if ((!prefix && len) || !dst) {
                api_fail(-EINVAL, "scree_key_prefix_end needs a prefix (when len > 0) and dst");
                return 0;
        }
        n = eng_tuple_prefix_end(prefix, len, dst, cap);
        if (n == 0)
                api_fail(-ENOSPC, "the prefix's end takes %zu bytes; cap is %zu", len + 1, cap);
        return n;
}

/* ---- changes ---- */

/* A catalog change; a synchronous call's borrows path, an asynchronous
 * one's owns a copy (tc_copy). */
struct table_change {
        int kind;                       /* 0 mkdir, 1 rmdir, 2 create, 3 drop */
        const char *path;
        struct eng_catalog_table_spec spec;     /* create */
        enum eng_tuple_type parts[ENG_CATALOG_MAX_PARTS];
        char *owned_path;
};

static int change_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                     struct eng_catalog **ret)
{
        struct table_change *tc = ch->ctx;

        switch (tc->kind) {
        case 0:
                return eng_catalog_mkdir(cur, tc->path, ret, ch->err, sizeof(ch->err));
        case 1:
                return eng_catalog_rmdir(cur, tc->path, ret, ch->err, sizeof(ch->err));
        case 2:
                return eng_catalog_create_table(cur, &tc->spec, ret, NULL, ch->err,
                                                sizeof(ch->err));
        default:
                return eng_catalog_drop_table(cur, tc->path, ret, ch->err, sizeof(ch->err));
        }
}

static void tc_free(void *arg)
{
        struct table_change *tc = arg;

        free(tc->owned_path);
        free(tc);
}

/* A heap copy of tc that owns its path; NULL on out of memory. */
static struct table_change *tc_copy(const struct table_change *tc)
{
        struct table_change *c = malloc(sizeof(*c));

        if (!c)
                return NULL;
        *c = *tc;
        c->owned_path = strdup(tc->path);
        if (!c->owned_path) {
                free(c);
                return NULL;
        }
        c->path = c->owned_path;
        c->spec.path = c->owned_path;
        c->spec.parts = c->parts;
        return c;
}

static const enum api_op change_op[] = { API_OP_MKDIR, API_OP_RMDIR, API_OP_TABLE_CREATE,
                                         API_OP_TABLE_DROP };

/* Makes change tc: waited for (q NULL) or answered into q. */
static int change(scree_db *db, scree_cq *q, struct table_change *tc, void *tag)
{
        struct table_change *c;

        if (!tc->path)
                return api_fail(-EINVAL, "no path");
        if (!q)
                return api_catalog_change(db, change_fn, tc);
        if (!(c = tc_copy(tc)))
                return api_fail(-ENOMEM, "out of memory");
        return api_catalog_change_async(q, change_op[tc->kind], change_fn, c, tc_free, tag);
}

static int path_change(scree_db *db, scree_cq *q, int kind, const char *path, void *tag)
{
        struct table_change tc = { .kind = kind, .path = path };

        if (q && !db)
                db = q->db;
        if (!db)
                return api_fail(-EINVAL, "no database (or completion queue)");
        return change(db, q, &tc, tag);
}

SCREE_API int scree_mkdir(scree_db *db, const char *path)
{
        return path_change(db, NULL, 0, path, NULL);
}

SCREE_API int scree_rmdir(scree_db *db, const char *path)
{
        return path_change(db, NULL, 1, path, NULL);
}

SCREE_API int scree_table_drop(scree_db *db, const char *path)
{
        return path_change(db, NULL, 3, path, NULL);
}

SCREE_API int scree_mkdir_async(scree_cq *q, const char *path, void *tag)
{
        return path_change(NULL, q, 0, path, tag);
}

SCREE_API int scree_rmdir_async(scree_cq *q, const char *path, void *tag)
{
        return path_change(NULL, q, 1, path, tag);
}

SCREE_API int scree_table_drop_async(scree_cq *q, const char *path, void *tag)
{
        return path_change(NULL, q, 3, path, tag);
}

/* spec's options text ("NAME value ...") onto o. */
static int options_parse(const char *text, struct eng_catalog_options *o)
{
        char err[256] = "";
        const char *p = text;

        while (p && *p) {
                const char *w, *v;
                size_t wl, vl;
                int k;

                p += strspn(p, " \t");
                if (!*p)
                        break;
                w = p;
                wl = strcspn(w, " \t");
                v = w + wl + strspn(w + wl, " \t");
                vl = strcspn(v, " \t");
                if ((k = eng_catalog_opt_find(w, wl)) < 0) {
                        eng_catalog_opt_unknown(w, wl, "", err, sizeof(err));
                        return api_fail(-EINVAL, "%s", err);
                }
                if (vl == 0)
                        return api_fail(-EINVAL, "option %s needs a value",
                                        eng_catalog_opt_name((enum eng_catalog_opt)k));
                if (eng_catalog_opt_set(o, (enum eng_catalog_opt)k, v, vl, err, sizeof(err)) < 0)
                        return api_fail(-EINVAL, "%s", err);
                p = v + vl;
        }
        if (eng_catalog_opts_check(o, err, sizeof(err)) < 0)
                return api_fail(-EINVAL, "%s", err);
        return 0;
}

/* The catalog's spec for spec, into tc. 0 or -EINVAL with a message. */
static int spec_build(const scree_table_spec *spec, struct table_change *tc)
{
        struct eng_catalog_table_spec *s = &tc->spec;
        int r;

        if (!spec || !spec->path)
                return api_fail(-EINVAL, "no table spec or path");
        if (spec->n_parts > ENG_CATALOG_MAX_PARTS || (spec->n_parts && !spec->parts))
                return api_fail(-EINVAL, "a key has 0 to %u parts", ENG_CATALOG_MAX_PARTS);
        if (spec->hash_parts > (spec->n_parts ? spec->n_parts : 1))
                return api_fail(-EINVAL, "hash_parts %zu is more than the key's parts",
                                spec->hash_parts);
        for (size_t i = 0; i < spec->n_parts; i++) {
                if (spec->parts[i] != SCREE_I64 && spec->parts[i] != SCREE_U64 &&
                    spec->parts[i] != SCREE_BYTES)
                        return api_fail(-EINVAL, "part %zu: a part is SCREE_I64, SCREE_U64 or "
                                        "SCREE_BYTES", i + 1);
                tc->parts[i] = (enum eng_tuple_type)spec->parts[i];
        }
        if (!spec->n_parts)
                tc->parts[0] = ENG_TUPLE_BYTES;
        tc->kind = 2;
        tc->path = spec->path;
        *s = (struct eng_catalog_table_spec){
                .path = spec->path,
                .key_format = spec->n_parts ? ENG_CATALOG_KEYS_TUPLE : ENG_CATALOG_KEYS_RAW,
                .mode = spec->hash_parts ? ENG_CATALOG_HASHED : ENG_CATALOG_ORDERED,
                .n_parts = spec->n_parts ? (uint32_t)spec->n_parts : 1,
                .parts = tc->parts,
                .hash_parts = (uint32_t)spec->hash_parts,
                .options = eng_catalog_options_default(),
                .n_tablets = spec->tablets,
        };
        if ((r = options_parse(spec->options, &s->options)) < 0)
                return r;
        /* A table pre-split into n tablets keeps at least n (as TABLE.CREATE). */
        if (s->n_tablets > s->options.min_tablets)
                s->options.min_tablets = s->n_tablets < s->options.max_tablets
                                                 ? s->n_tablets : s->options.max_tablets;
        return 0;
}

SCREE_API int scree_table_create(scree_db *db, const scree_table_spec *spec)
{
        struct table_change tc;
        int r;

        if (!db)
                return api_fail(-EINVAL, "no database");
        if ((r = spec_build(spec, &tc)) < 0)
                return r;
        return change(db, NULL, &tc, NULL);
}

SCREE_API int scree_table_create_async(scree_cq *q, const scree_table_spec *spec, void *tag)
{
        struct table_change tc;
        int r;

        if (!q)
                return api_fail(-EINVAL, "no completion queue");
        if ((r = spec_build(spec, &tc)) < 0)
                return r;
        return change(q->db, q, &tc, tag);
}

/* ---- reads ---- */

SCREE_API int scree_list(scree_db *db, const char *path,
                         int (*fn)(void *arg, const scree_entry *entry), void *arg)
{
        struct eng_catalog *c;
        struct eng_catalog_entry *e;
        char err[256] = "";
        long n;
        int r = 0;

        if (!db || !path || !fn)
                return api_fail(-EINVAL, "scree_list needs a database, a path and a callback");
        /* fn may call in and refresh this thread's snapshot: keep ours. */
        c = eng_catalog_ref(api_catalog(db));
        n = eng_catalog_list(c, path, NULL, 0, err, sizeof(err));
        e = n < 0 ? NULL : calloc(n ? (size_t)n : 1, sizeof(*e));
        if (n < 0)
                r = api_fail((int)n, "%s", err);
        else if (!e)
                r = api_fail(-ENOMEM, "out of memory");
        else
                n = eng_catalog_list(c, path, e, (size_t)n, err, sizeof(err));
        for (long i = 0; e && r == 0 && i < n; i++) {
                scree_entry se = { .name = e[i].name, .is_table = e[i].is_table };

                if ((r = fn(arg, &se)) < 0)
                        api_fail(r, "the callback stopped the listing at %s with %d", se.name, r);
        }
        free(e);
        eng_catalog_unref(c);
        return r;
}

static int table_find(scree_db *db, const char *path, const struct eng_catalog_table **ret)
{
        int r;

        if (!path)
                return api_fail(-EINVAL, "no path");
        r = eng_catalog_lookup(api_catalog(db), path, ret);
        if (r < 0)
                return api_fail(r, "no table %s", path);
        return 0;
}

struct describe {
        uint32_t table;
        uint64_t bytes, rows;
};

static void describe_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct describe *d = req->ctx;
        struct eng_shard *eng = api_engine_of(loop);
        struct eng_tablet_stats *st;
        uint32_t n = eng ? eng_shard_table_stats(eng, d->table, NULL, 0) : 0;
        int res = 0;

        st = calloc(n ? n : 1, sizeof(*st));
        if (!st) {
                rx_alien_complete(req, -ENOMEM);
                return;
        }
        n = eng ? eng_shard_table_stats(eng, d->table, st, n) : 0;
        for (uint32_t i = 0; i < n; i++) {
                d->bytes += st[i].bytes;
                d->rows += st[i].rows;
        }
        free(st);
        rx_alien_complete(req, res);
}

SCREE_API int scree_table_describe(scree_db *db, const char *path, scree_table_info *ret)
{
        const struct eng_catalog_table *t;
        int r;

        if (!db || !ret)
                return api_fail(-EINVAL, "scree_table_describe needs a database and somewhere to "
                                "put the description");
        if ((r = api_off_shard()) < 0 || (r = table_find(db, path, &t)) < 0)
                return r;
        memset(ret, 0, sizeof(*ret));
        ret->id = t->id;
        ret->n_parts = t->key_format == ENG_CATALOG_KEYS_RAW ? 0 : t->n_parts;
        for (uint32_t i = 0; i < ret->n_parts; i++)
                ret->parts[i] = (scree_type)t->parts[i];
        ret->hash_parts = t->mode == ENG_CATALOG_HASHED ? t->hash_parts : 0;
        ret->tablets = t->n_tablets;
        for (uint32_t i = 0; i < t->n_tablets; i++)
                if (t->tablets[i].shard < 256)
                        ret->shard_tablets[t->tablets[i].shard]++;
        for (unsigned s = 0; s < db->n; s++) {
                struct describe d = { .table = t->id };

                r = (int)api_on_shard(db, s, describe_run, &d);
                if (r < 0)
                        return r;
                ret->bytes += d.bytes;
                ret->rows += d.rows;
        }
        return 0;
}

SCREE_API int scree_table_open(scree_db *db, const char *path, scree_table **ret)
{
        const struct eng_catalog_table *t;
        scree_table *h;
        int r;

        if (!db || !ret)
                return api_fail(-EINVAL, "scree_table_open needs a database and somewhere to put "
                                "the handle");
        if ((r = table_find(db, path, &t)) < 0)
                return r;
        h = calloc(1, sizeof(*h));
        if (!h)
                return api_fail(-ENOMEM, "out of memory");
        *h = (scree_table){ .db = db, .id = t->id, .raw = t->key_format == ENG_CATALOG_KEYS_RAW,
                            .hashed = t->mode == ENG_CATALOG_HASHED,
                            .hash_parts = t->hash_parts };
        atomic_fetch_add(&db->handles, 1);
        *ret = h;
        return 0;
}

SCREE_API void scree_table_close(scree_table *t)
{
        if (!t)
                return;
        atomic_fetch_sub(&t->db->handles, 1);
        free(t);
}
