/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Table command arguments: paths, typed parts, keys, row writes, range
 * bounds and cursors (see tbl_args.h; TABLE.CREATE / ALTER options are in
 * tbl_schema.c, replies in tbl_reply.c).
 *
 * Bounds become positions by the prefix rule of docs/format/tuple.md: the
 * keys that start with the parts p are [enc(p), enc(p) + 0xFF). A hashed
 * table's bounds share their hash (the rule asks both bounds to agree on
 * the hashed parts), so a range there is one contiguous run of positions
 * behind it. Everything is pure and table-tested in tests/net/test_tbl_args.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/key.h"
#include "engine/shard.h"
#include "engine/tablet.h"
#include "net/args.h"
#include "net/tbl_args.h"
#include "net/tbl_int.h"

_Static_assert(NET_TBL_OP_PUT == (int)ENG_MUT_PUT && NET_TBL_OP_DEL == (int)ENG_MUT_DEL,
               "net_tbl_op kinds are eng_mutation kinds");

/* TTLs (and so default-ttl) stay below 2^62 ms, as the catalog's. */
#define TTL_MAX_MS (UINT64_C(1) << 62)

int net_tbl_fail(char *err, size_t err_len, const char *fmt, ...)
{
        va_list ap;

        if (err_len) {
                va_start(ap, fmt);
                vsnprintf(err, err_len, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

int net_tbl_nomem(char *err, size_t err_len)
{
        if (err_len)
                snprintf(err, err_len, "out of memory");
        return -ENOMEM;
}

/* ---- paths ---- */

int net_tbl_path(const struct net_arg *a, char *buf, size_t cap, char *err, size_t err_len)
{
        if (a->len > ENG_CATALOG_MAX_PATH || a->len + 1 > cap)
                return net_tbl_fail(err, err_len, "path longer than %u bytes",
                                    ENG_CATALOG_MAX_PATH);
        if (memchr(a->ptr, 0, a->len))
                return net_tbl_fail(err, err_len, "path holds a NUL byte");
        memcpy(buf, a->ptr, a->len);
        buf[a->len] = 0;
        return 0;
}

bool net_tbl_path_is_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        if (n == 1 && dir[0] == '/')
                return path[0] == '/';
        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* ---- typed parts and keys ---- */

int net_tbl_u64(const struct net_arg *a, uint64_t *ret)
{
        uint64_t v = 0;

        if (a->len == 0 || a->len > 20 || (a->ptr[0] == '0' && a->len > 1))
                return -EINVAL;
        for (size_t i = 0; i < a->len; i++) {
                unsigned d = (unsigned char)a->ptr[i] - '0';

                if (d > 9 || v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

/* Whether a is "\...\NULL" (one or more backslashes, then NULL). */
static bool is_escaped_null(const struct net_arg *a)
{
        if (a->len < 5 || memcmp(a->ptr + a->len - 4, "NULL", 4) != 0)
                return false;
        for (size_t i = 0; i + 4 < a->len; i++)
                if (a->ptr[i] != '\\')
                        return false;
        return true;
}

int net_tbl_part_parse(const struct net_arg *a, enum eng_tuple_type type, const char *what,
                       struct eng_tuple_part *ret, char *err, size_t err_len)
{
        struct eng_tuple_part p = { .type = type };
        int shown = (int)(a->len > 40 ? 40 : a->len);

        if (a->len == 4 && memcmp(a->ptr, "NULL", 4) == 0) {
                *ret = (struct eng_tuple_part){ .type = ENG_TUPLE_NULL };
                return 0;
        }
        switch (type) {
        case ENG_TUPLE_I64:
                if (net_arg_i64(a, &p.v.i64) < 0)
                        return net_tbl_fail(err, err_len, "%s must be an i64, got '%.*s%s'", what,
                                            shown, a->ptr, shown < (int)a->len ? "..." : "");
                break;
        case ENG_TUPLE_U64:
                if (net_tbl_u64(a, &p.v.u64) < 0)
                        return net_tbl_fail(err, err_len, "%s must be a u64, got '%.*s%s'", what,
                                            shown, a->ptr, shown < (int)a->len ? "..." : "");
                break;
        case ENG_TUPLE_BYTES:
                if (a->len > UINT32_MAX)
                        return net_tbl_fail(err, err_len, "%s is too long", what);
                p.v.bytes.p = a->ptr + is_escaped_null(a);
                p.v.bytes.len = (uint32_t)a->len - is_escaped_null(a);
                break;
        case ENG_TUPLE_NULL:
        default:
                return net_tbl_fail(err, err_len, "%s: the table's part type is unknown", what);
        }
        *ret = p;
        return 0;
}

int net_tbl_tuple_check(const struct eng_catalog_table *t, char *err, size_t err_len)
{
        if (t->key_format != ENG_CATALOG_KEYS_TUPLE)
                return net_tbl_fail(err, err_len,
                                    "table %s has raw keys (the Redis keyspace): use the Redis commands",
                                    t->path);
        return 0;
}

/* Parses n parts at argv as types[0..n) into parts; part i
 * is named "<what> <i + 1>" in errors. */
int net_tbl_parts_parse(const enum eng_tuple_type *types, const struct net_arg *argv, size_t n,
                       const char *what, struct eng_tuple_part *parts, char *err,
                       size_t err_len)
{
        char name[96];

        for (size_t i = 0; i < n; i++) {
                int r;

                snprintf(name, sizeof(name), "%s %zu", what, i + 1);
                r = net_tbl_part_parse(&argv[i], types[i], name, &parts[i], err, err_len);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The encoded size of parts, refused over max bytes (-EINVAL). */
static int encoded_size(const struct eng_tuple_part *parts, size_t n, size_t max, const char *what,
                        size_t *ret, char *err, size_t err_len)
{
        size_t need;

        eng_tuple_encode(parts, n, NULL, 0, &need);
        if (need > max)
                return net_tbl_fail(err, err_len,
                                    "%s is %zu bytes encoded, the limit is %zu (max-key-bytes)",
                                    what, need, max);
        *ret = need;
        return 0;
}

int net_tbl_key_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                      const struct net_tbl_limits *lim, uint8_t *dst, size_t cap, size_t *ret_len,
                      char *err, size_t err_len)
{
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        size_t need;
        int r = net_tbl_tuple_check(t, err, err_len);

        if (r < 0)
                return r;
        if (argc != t->n_parts)
                return net_tbl_fail(err, err_len, "table %s has %u key part%s, got %zu", t->path,
                                    t->n_parts, t->n_parts == 1 ? "" : "s", argc);
        r = net_tbl_parts_parse(t->parts, argv, argc, "key part", parts, err, err_len);
        if (r == 0)
                r = encoded_size(parts, argc, lim->max_key_bytes, "the key", &need, err, err_len);
        if (r == 0 && need > cap)
                r = net_tbl_fail(err, err_len, "the key is %zu bytes encoded, room for %zu", need,
                                 cap);
        if (r < 0)
                return r;
        eng_tuple_encode(parts, argc, dst, cap, &need);
        *ret_len = need;
        return 0;
}

/* ---- row writes ---- */

struct ops_build {
        struct net_tbl_ops o;
        uint32_t cap_ops;
        size_t keys_len, keys_cap;
};

/* A new op at the end of b, its key parsed from argv[0..n_parts). */
static int op_push(struct ops_build *b, const struct eng_catalog_table *t,
                   const struct net_arg *argv, const struct net_tbl_limits *lim,
                   enum net_tbl_op_kind kind, char *err, size_t err_len)
{
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        size_t need;
        int r = net_tbl_parts_parse(t->parts, argv, t->n_parts, "key part", parts, err, err_len);

        if (r == 0)
                r = encoded_size(parts, t->n_parts, lim->max_key_bytes, "the key", &need, err,
                                 err_len);
        if (r < 0)
                return r;
        if (b->o.n == b->cap_ops) {
                uint32_t c = b->cap_ops ? b->cap_ops * 2 : 4;
                struct net_tbl_op *v = realloc(b->o.ops, c * sizeof(*v));

                if (!v)
                        return net_tbl_nomem(err, err_len);
                b->o.ops = v;
                b->cap_ops = c;
        }
        if (b->keys_len + need > b->keys_cap) {
                size_t c = (b->keys_len + need) * 2;
                uint8_t *k = realloc(b->o.keys, c);

                if (!k)
                        return net_tbl_nomem(err, err_len);
                b->o.keys = k;
                b->keys_cap = c;
        }
        eng_tuple_encode(parts, t->n_parts, b->o.keys + b->keys_len, need, &need);
        b->o.ops[b->o.n++] = (struct net_tbl_op){ .kind = kind, .key_len = (uint32_t)need };
        b->keys_len += need;
        return 0;
}

/* EX seconds or PX milliseconds at argv[0..2) into *ret_ms. */
static int ttl_parse(const struct net_arg *argv, uint64_t *ret_ms, char *err, size_t err_len)
{
        bool px = net_arg_is(&argv[0], "px");
        const char *unit = px ? "milliseconds" : "seconds";
        int64_t v;
        uint64_t ms;

        if (net_arg_i64(&argv[1], &v) < 0 || v <= 0)
                return net_tbl_fail(err, err_len, "%s must be a positive integer (%s)",
                                    px ? "PX" : "EX", unit);
        if (__builtin_mul_overflow((uint64_t)v, px ? 1u : 1000u, &ms) || ms >= TTL_MAX_MS)
                return net_tbl_fail(err, err_len, "%s %lld %s is too large", px ? "PX" : "EX",
                                    (long long)v, unit);
        *ret_ms = ms;
        return 0;
}

/* PUT's "part.. value [EX s | PX ms]" at argv[*i..argc); advances *i. */
static int put_push(struct ops_build *b, const struct eng_catalog_table *t,
                    const struct net_arg *argv, size_t argc, size_t *i,
                    const struct net_tbl_limits *lim, char *err, size_t err_len)
{
        const struct net_arg *value;
        struct net_tbl_op *op;
        int r;

        if (argc - *i < (size_t)t->n_parts + 1)
                return net_tbl_fail(err, err_len,
                                    "table %s has %u key part%s, then a value: got %zu argument%s",
                                    t->path, t->n_parts, t->n_parts == 1 ? "" : "s", argc - *i,
                                    argc - *i == 1 ? "" : "s");
        r = op_push(b, t, argv + *i, lim, NET_TBL_OP_PUT, err, err_len);
        if (r < 0)
                return r;
        *i += t->n_parts;
        value = &argv[(*i)++];
        if (value->len > lim->max_value_bytes || value->len > UINT32_MAX)
                return net_tbl_fail(err, err_len, "value too long (max %zu bytes)",
                                    lim->max_value_bytes);
        op = &b->o.ops[b->o.n - 1];
        op->value = value->ptr;
        op->value_len = (uint32_t)value->len;
        op->ttl_ms = t->options.default_ttl_ms;
        if (*i < argc && (net_arg_is(&argv[*i], "ex") || net_arg_is(&argv[*i], "px"))) {
                if (argc - *i < 2)
                        return net_tbl_fail(err, err_len, "%s needs a time after it",
                                            net_arg_is(&argv[*i], "px") ? "PX" : "EX");
                r = ttl_parse(&argv[*i], &op->ttl_ms, err, err_len);
                *i += 2;
        }
        return r;
}

/* Publishes b into *ret: every op's key pointer set. */
static void ops_finish(struct ops_build *b, struct net_tbl_ops *ret)
{
        size_t off = 0;

        for (uint32_t i = 0; i < b->o.n; i++) {
                b->o.ops[i].key = b->o.keys + off;
                off += b->o.ops[i].key_len;
        }
        *ret = b->o;
}

int net_tbl_put_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                      const struct net_tbl_limits *lim, struct net_tbl_ops *ret, char *err,
                      size_t err_len)
{
        struct ops_build b = { 0 };
        size_t i = 0;
        int r = net_tbl_tuple_check(t, err, err_len);

        if (r == 0)
                r = put_push(&b, t, argv, argc, &i, lim, err, err_len);
        if (r == 0 && i < argc)
                r = net_tbl_fail(err, err_len,
                                 "expected EX seconds or PX milliseconds after the value, got '%.*s' "
                                 "(table %s has %u key part%s)",
                                 (int)(argv[i].len > 40 ? 40 : argv[i].len), argv[i].ptr, t->path,
                                 t->n_parts, t->n_parts == 1 ? "" : "s");
        if (r < 0) {
                net_tbl_ops_fini(&b.o);
                return r;
        }
        ops_finish(&b, ret);
        return 0;
}

/* One ROW.WRITE op at argv[*i..argc). */
static int write_op(struct ops_build *b, const struct eng_catalog_table *t,
                    const struct net_arg *argv, size_t argc, size_t *i,
                    const struct net_tbl_limits *lim, char *err, size_t err_len)
{
        const struct net_arg *w = &argv[(*i)++];

        if (net_arg_is(w, "put"))
                return put_push(b, t, argv, argc, i, lim, err, err_len);
        if (!net_arg_is(w, "del"))
                return net_tbl_fail(err, err_len, "expected PUT or DEL, got '%.*s'",
                                    (int)(w->len > 40 ? 40 : w->len), w->ptr);
        if (argc - *i < t->n_parts)
                return net_tbl_fail(err, err_len, "table %s has %u key part%s, got %zu", t->path,
                                    t->n_parts, t->n_parts == 1 ? "" : "s", argc - *i);
        *i += t->n_parts;
        return op_push(b, t, argv + *i - t->n_parts, lim, NET_TBL_OP_DEL, err, err_len);
}

int net_tbl_write_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                        const struct net_tbl_limits *lim, struct net_tbl_ops *ret, char *err,
                        size_t err_len)
{
        struct ops_build b = { 0 };
        char inner[NET_TBL_ERR_MAX];
        size_t i = 0;
        uint32_t k = 0;
        int r = net_tbl_tuple_check(t, err, err_len);

        if (r == 0 && argc == 0)
                r = net_tbl_fail(err, err_len, "ROW.WRITE needs at least one PUT or DEL");
        while (r == 0 && i < argc) {
                const struct net_arg *w = &argv[i];
                const char *name = net_arg_is(w, "put") ? "PUT" : net_arg_is(w, "del") ? "DEL" : "?";

                k++;
                r = write_op(&b, t, argv, argc, &i, lim, inner, sizeof(inner));
                if (r < 0 && err_len)
                        snprintf(err, err_len, "op %u (%s): %s", k, name, inner);
        }
        if (r < 0) {
                net_tbl_ops_fini(&b.o);
                return r;
        }
        ops_finish(&b, ret);
        return 0;
}

void net_tbl_ops_fini(struct net_tbl_ops *ops)
{
        if (!ops)
                return;
        free(ops->ops);
        free(ops->keys);
        memset(ops, 0, sizeof(*ops));
}
