/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ROW.RANGE, ROW.COUNT and ROW.DELRANGE: bounds, pages and cursors (see
 * tbl_args.h).
 *
 * A bound of k parts p covers the keys that start with p, which are the
 * positions [enc(p), enc(p) + 0xFF) (docs/format/tuple.md): GE starts at
 * enc(p), GT at enc(p) + 0xFF, LE ends (exclusive) at enc(p) + 0xFF, LT
 * at enc(p). A hashed table's range is one hash prefix: both bounds share
 * their first hash_parts parts and so the hash in front, which the
 * catalog computes (eng_catalog_ikey_encode; not duplicated here).
 *
 * A cursor is the next row's position and the direction. Positions do not
 * depend on tablets, so a cursor survives splits, merges and moves: the
 * next page is [cursor, end) forward, [start, cursor] backward.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/key.h"
#include "engine/tablet.h"
#include "net/args.h"
#include "net/tbl_args.h"
#include "net/tbl_int.h"

enum bound_kind { B_GE, B_GT, B_LE, B_LT };

static const char *const bound_name[] = { "GE", "GT", "LE", "LT" };

/* One parsed bound: its kind and tuple encoding (heap). */
struct bound {
        bool given;
        enum bound_kind kind;
        uint32_t n;                     /* parts */
        uint8_t *enc;
        size_t len;
};

/* Everything ROW.RANGE's words say. */
struct range_args {
        struct bound lo, hi;
        uint32_t limit;
        bool rev;
        const struct net_arg *cursor;
};

static void range_args_fini(struct range_args *a)
{
        free(a->lo.enc);
        free(a->hi.enc);
}

/* "KIND n part1..partn" at argv[*i..argc) (the word at *i) into *b. */
static int bound_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                       size_t *i, enum bound_kind kind, const struct net_tbl_limits *lim,
                       struct bound *b, char *err, size_t err_len)
{
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        const char *name = bound_name[kind];
        char what[16];
        int64_t n;
        size_t need;
        int r;

        if (argc - *i < 2 || net_arg_i64(&argv[*i + 1], &n) < 0 || n < 1 || n > t->n_parts)
                return net_tbl_fail(err, err_len,
                                    "%s takes a count of key parts (1 to %u), then the parts", name,
                                    t->n_parts);
        if (argc - *i - 2 < (uint64_t)n)
                return net_tbl_fail(err, err_len, "%s %lld needs %lld key part%s, got %zu", name,
                                    (long long)n, (long long)n, n == 1 ? "" : "s", argc - *i - 2);
        snprintf(what, sizeof(what), "%s part", name);
        r = net_tbl_parts_parse(t->parts, argv + *i + 2, (size_t)n, what, parts, err, err_len);
        if (r < 0)
                return r;
        eng_tuple_encode(parts, (size_t)n, NULL, 0, &need);
        if (need > lim->max_key_bytes)
                return net_tbl_fail(err, err_len,
                                    "%s is %zu bytes encoded, the limit is %zu (max-key-bytes)",
                                    name, need, lim->max_key_bytes);
        b->enc = malloc(need + 1);              /* + 1: room for the prefix end */
        if (!b->enc)
                return net_tbl_nomem(err, err_len);
        eng_tuple_encode(parts, (size_t)n, b->enc, need, &b->len);
        b->given = true;
        b->kind = kind;
        b->n = (uint32_t)n;
        *i += 2 + (size_t)n;
        return 0;
}

/* LIMIT count at argv[*i..argc); *ret is 0 until one is given. */
static int limit_parse(const struct net_arg *argv, size_t argc, size_t *i, uint32_t *ret,
                       char *err, size_t err_len)
{
        int64_t v;

        if (*ret)
                return net_tbl_fail(err, err_len, "LIMIT is given twice");
        if (argc - *i < 2 || net_arg_i64(&argv[*i + 1], &v) < 0 || v < 1 || v > NET_TBL_MAX_LIMIT)
                return net_tbl_fail(err, err_len, "LIMIT must be an integer from 1 to %u",
                                    NET_TBL_MAX_LIMIT);
        *ret = (uint32_t)v;
        *i += 2;
        return 0;
}

/* One word (and what follows it) of ROW.RANGE at argv[*i..argc). */
static int range_word(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                      size_t *i, bool paging, const struct net_tbl_limits *lim,
                      struct range_args *a, char *err, size_t err_len)
{
        const struct net_arg *w = &argv[*i];

        for (int k = B_GE; k <= B_LT; k++) {
                struct bound *b = k <= B_GT ? &a->lo : &a->hi;

                if (!net_arg_is(w, bound_name[k]))
                        continue;
                if (b->given)
                        return net_tbl_fail(err, err_len, "the range's %s is given twice (%s)",
                                            k <= B_GT ? "start" : "end",
                                            k <= B_GT ? "GE or GT" : "LE or LT");
                return bound_parse(t, argv, argc, i, (enum bound_kind)k, lim, b, err, err_len);
        }
        if (paging && net_arg_is(w, "limit"))
                return limit_parse(argv, argc, i, &a->limit, err, err_len);
        if (paging && net_arg_is(w, "rev")) {
                if (a->rev)
                        return net_tbl_fail(err, err_len, "REV is given twice");
                a->rev = true;
                (*i)++;
                return 0;
        }
        if (paging && net_arg_is(w, "cursor")) {
                if (a->cursor)
                        return net_tbl_fail(err, err_len, "CURSOR is given twice");
                if (argc - *i < 2)
                        return net_tbl_fail(err, err_len,
                                            "CURSOR needs a cursor after it (0 to start)");
                a->cursor = &argv[*i + 1];
                *i += 2;
                return 0;
        }
        return net_tbl_fail(err, err_len, "unexpected '%.*s': expected %s",
                            (int)(w->len > 40 ? 40 : w->len), w->ptr,
                            paging ? "GE, GT, LE, LT, LIMIT, REV or CURSOR" : "GE, GT, LE or LT");
}

static int args_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                      bool paging, const struct net_tbl_limits *lim, struct range_args *a,
                      char *err, size_t err_len)
{
        int r = net_tbl_tuple_check(t, err, err_len);

        *a = (struct range_args){ 0 };
        for (size_t i = 0; r == 0 && i < argc;)
                r = range_word(t, argv, argc, &i, paging, lim, a, err, err_len);
        if (a->limit == 0)
                a->limit = NET_TBL_DEFAULT_LIMIT;
        return r;
}

/* A hashed table's range: both bounds, each with the hashed parts, equal
 * on them. Writes the shared hash into h. */
static int hashed_check(const struct eng_catalog_table *t, const struct range_args *a, uint8_t *h,
                        char *err, size_t err_len)
{
        long lo_len, hi_len;
        uint8_t *ik;

        if (!a->lo.given && !a->hi.given)
                return 0;
        lo_len = a->lo.given ? eng_tuple_parts_len(a->lo.enc, a->lo.len, t->hash_parts) : -1;
        hi_len = a->hi.given ? eng_tuple_parts_len(a->hi.enc, a->hi.len, t->hash_parts) : -1;
        if (lo_len < 0 || lo_len != hi_len || memcmp(a->lo.enc, a->hi.enc, (size_t)lo_len) != 0)
                return net_tbl_fail(err, err_len,
                                    "table %s is hashed on its first %u key part%s: give no bounds "
                                    "(the whole table, in hash order) or both bounds with at least "
                                    "%u part%s, equal on them",
                                    t->path, t->hash_parts, t->hash_parts == 1 ? "" : "s",
                                    t->hash_parts, t->hash_parts == 1 ? "" : "s");
        ik = malloc(eng_catalog_ikey_size(t, a->lo.len));
        if (!ik)
                return net_tbl_nomem(err, err_len);
        eng_catalog_ikey_encode(t, a->lo.enc, a->lo.len, ik);
        memcpy(h, ik + ENG_TABLE_ID_BYTES, ENG_HASH_BYTES);
        free(ik);
        return 0;
}

/* Writes a bound's position edge at dst (head: the hash, hlen bytes);
 * after: the prefix end. Returns its length. */
static size_t edge_put(uint8_t *dst, const uint8_t *head, size_t hlen, const struct bound *b,
                       bool after)
{
        memcpy(dst, head, hlen);
        memcpy(dst + hlen, b->enc, b->len);
        if (after)
                dst[hlen + b->len] = ENG_TUPLE_AFTER;
        return hlen + b->len + after;
}

static int bounds_build(const struct eng_catalog_table *t, const struct range_args *a,
                        struct net_tbl_bounds *ret, char *err, size_t err_len)
{
        uint8_t h[ENG_HASH_BYTES];
        size_t hlen = a->lo.given && t->mode == ENG_CATALOG_HASHED ? ENG_HASH_BYTES : 0;
        struct net_tbl_bounds b = { .end_open = !a->hi.given };
        int r = t->mode == ENG_CATALOG_HASHED ? hashed_check(t, a, h, err, err_len) : 0;

        if (r < 0)
                return r;
        b.mem = malloc(2 * (hlen + 1) + a->lo.len + a->hi.len + 1);
        if (!b.mem)
                return net_tbl_nomem(err, err_len);
        b.start = b.mem;
        if (a->lo.given)
                b.start_len = edge_put(b.mem, h, hlen, &a->lo, a->lo.kind == B_GT);
        b.end = b.mem + b.start_len;
        if (a->hi.given)
                b.end_len = edge_put(b.mem + b.start_len, h, hlen, &a->hi, a->hi.kind == B_LE);
        if (!b.end_open && eng_key_cmp(b.start, b.start_len, b.end, b.end_len) > 0) {
                free(b.mem);
                return net_tbl_fail(err, err_len, "the range's start is after its end");
        }
        *ret = b;
        return 0;
}

int net_tbl_bounds_parse(const struct eng_catalog_table *t, const struct net_arg *argv,
                         size_t argc, const struct net_tbl_limits *lim,
                         struct net_tbl_bounds *ret, char *err, size_t err_len)
{
        struct range_args a;
        int r = args_parse(t, argv, argc, false, lim, &a, err, err_len);

        if (r == 0)
                r = bounds_build(t, &a, ret, err, err_len);
        range_args_fini(&a);
        return r;
}

void net_tbl_bounds_fini(struct net_tbl_bounds *b)
{
        if (!b)
                return;
        free(b->mem);
        memset(b, 0, sizeof(*b));
}

int net_tbl_range_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                        const struct net_tbl_limits *lim, struct net_tbl_range *ret, char *err,
                        size_t err_len)
{
        struct range_args a;
        struct net_tbl_cursor c = { .is_start = true };
        struct net_tbl_bounds b = { 0 };
        int r = args_parse(t, argv, argc, true, lim, &a, err, err_len);

        if (r == 0)
                r = bounds_build(t, &a, &b, err, err_len);
        if (r == 0 && a.cursor)
                r = net_tbl_cursor_parse(t, a.cursor, lim, &c, err, err_len);
        if (r == 0)
                r = net_tbl_bounds_seek(&b, &c, a.rev, err, err_len);
        if (r == 0)
                *ret = (struct net_tbl_range){ .b = b, .limit = a.limit, .rev = a.rev };
        else
                net_tbl_bounds_fini(&b);
        net_tbl_cursor_fini(&c);
        range_args_fini(&a);
        return r;
}

/* ---- cursors ---- */

static const char hex[] = "0123456789abcdef";

/* A cursor's version letter, direction and table id (8 hex digits). */
#define CURSOR_HEAD 10u

size_t net_tbl_cursor_format(uint32_t table, const uint8_t *pos, size_t len, bool rev, char *buf,
                             size_t cap)
{
        size_t o = 0;

        if (len == 0 || cap < NET_TBL_CURSOR_SIZE(len))
                return 0;
        buf[o++] = 'B';
        buf[o++] = rev ? 'R' : 'F';
        for (int sh = 28; sh >= 0; sh -= 4)
                buf[o++] = hex[(table >> sh) & 15];
        for (size_t i = 0; i < len; i++) {
                buf[o++] = hex[pos[i] >> 4];
                buf[o++] = hex[pos[i] & 15];
        }
        buf[o] = 0;
        return o;
}

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int net_tbl_tuple_decode(const struct eng_catalog_table *t, const uint8_t *enc, size_t len,
                         bool whole, struct eng_tuple_part *parts, uint8_t *scratch)
{
        int n = eng_tuple_decode(enc, len, parts, t->n_parts, scratch, len);

        if (n < 1 || (whole && (uint32_t)n != t->n_parts))
                return -EINVAL;
        for (int i = 0; i < n; i++)
                if (parts[i].type != ENG_TUPLE_NULL && parts[i].type != t->parts[i])
                        return -EINVAL;
        return n;
}

int net_tbl_pos_check(const struct eng_catalog_table *t, const uint8_t *pos, size_t len)
{
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        size_t hlen = t->mode == ENG_CATALOG_HASHED ? ENG_HASH_BYTES : 0;
        uint8_t *scratch;
        int r = -EINVAL;

        if (len <= hlen)
                return -EINVAL;
        scratch = malloc(eng_catalog_ikey_size(t, len));
        if (!scratch)
                return -ENOMEM;
        if (net_tbl_tuple_decode(t, pos + hlen, len - hlen, true, parts, scratch) > 0)
                r = 0;
        if (r == 0 && hlen) {
                /* The hash must be the key's: recompute it the catalog's way. */
                eng_catalog_ikey_encode(t, pos + hlen, len - hlen, scratch);
                if (memcmp(scratch + ENG_TABLE_ID_BYTES, pos, hlen) != 0)
                        r = -EINVAL;
        }
        free(scratch);
        return r;
}

int net_tbl_cursor_parse(const struct eng_catalog_table *t, const struct net_arg *a,
                         const struct net_tbl_limits *lim, struct net_tbl_cursor *ret, char *err,
                         size_t err_len)
{
        size_t max = CURSOR_HEAD + 2 * (lim->max_key_bytes + ENG_HASH_BYTES), n;
        uint32_t table = 0;
        uint8_t *pos;
        int r;

        if (a->len == 1 && a->ptr[0] == '0') {
                *ret = (struct net_tbl_cursor){ .is_start = true };
                return 0;
        }
        if (a->len < CURSOR_HEAD + 2 || a->len > max || a->len % 2 || a->ptr[0] != 'B' ||
            (a->ptr[1] != 'F' && a->ptr[1] != 'R'))
                return net_tbl_fail(err, err_len,
                                    "invalid cursor: give 0 or a cursor from a ROW.RANGE reply");
        for (size_t i = 2; i < CURSOR_HEAD; i++) {
                int d = hex_digit(a->ptr[i]);

                if (d < 0)
                        return net_tbl_fail(err, err_len, "invalid cursor: bad character");
                table = table << 4 | (uint32_t)d;
        }
        if (table != t->id)
                return net_tbl_fail(err, err_len, "invalid cursor: it is another table's (give "
                                    "the table it was made for)");
        n = (a->len - CURSOR_HEAD) / 2;
        pos = malloc(n);
        if (!pos)
                return net_tbl_nomem(err, err_len);
        for (size_t i = 0; i < n; i++) {
                int hi = hex_digit(a->ptr[CURSOR_HEAD + 2 * i]);
                int lo = hex_digit(a->ptr[CURSOR_HEAD + 1 + 2 * i]);

                if (hi < 0 || lo < 0) {
                        free(pos);
                        return net_tbl_fail(err, err_len, "invalid cursor: bad character");
                }
                pos[i] = (uint8_t)(hi << 4 | lo);
        }
        r = net_tbl_pos_check(t, pos, n);
        if (r < 0) {
                free(pos);
                return r == -ENOMEM ? net_tbl_nomem(err, err_len)
                                    : net_tbl_fail(err, err_len,
                                                   "invalid cursor: not a row position of table %s",
                                                   t->path);
        }
        *ret = (struct net_tbl_cursor){ .rev = a->ptr[1] == 'R', .pos = pos, .len = n };
        return 0;
}

void net_tbl_cursor_fini(struct net_tbl_cursor *c)
{
        if (!c)
                return;
        free(c->pos);
        memset(c, 0, sizeof(*c));
}

int net_tbl_bounds_seek(struct net_tbl_bounds *b, const struct net_tbl_cursor *c, bool rev,
                        char *err, size_t err_len)
{
        uint8_t *mem;
        size_t keep;

        if (c->is_start)
                return 0;
        if (c->rev != rev)
                return net_tbl_fail(err, err_len,
                                    "invalid cursor: it continues a %s walk; give REV %s",
                                    c->rev ? "reverse" : "forward",
                                    c->rev ? "as when it was made" : "only if it was given");
        if (eng_key_cmp(c->pos, c->len, b->start, b->start_len) < 0 ||
            (!b->end_open && eng_key_cmp(c->pos, c->len, b->end, b->end_len) >= 0))
                return net_tbl_fail(err, err_len,
                                    "invalid cursor: outside the range (give the range as when it "
                                    "was made)");
        /* Forward: [pos, end). Reverse: [start, pos + 0x00), pos + 0x00
         * being the first position after pos. */
        keep = rev ? b->start_len : b->end_len;
        mem = malloc(keep + c->len + 1);
        if (!mem)
                return net_tbl_nomem(err, err_len);
        memcpy(mem, rev ? b->start : b->end, keep);
        memcpy(mem + keep, c->pos, c->len);
        if (rev) {
                mem[keep + c->len] = 0;
                b->start = mem;
                b->end = mem + keep;
                b->end_len = c->len + 1;
                b->end_open = false;
        } else {
                b->end = mem;
                b->start = mem + keep;
                b->start_len = c->len;
        }
        free(b->mem);
        b->mem = mem;
        return 0;
}
