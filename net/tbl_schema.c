/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TABLE.CREATE and TABLE.ALTER arguments (see tbl_args.h): the key's
 * types, key mode, pre-split and options, into the catalog's spec and
 * options. Syntax and each option's own range are judged here so that
 * errors name the words the user typed; what depends on the catalog (the
 * path's names, the uniform pre-split of a bytes first part) is left to
 * eng_catalog_create_table, and eng_catalog_options_check has the last
 * word on options.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/catalog_options.h"
#include "engine/key.h"
#include "net/args.h"
#include "net/tbl_args.h"
#include "net/tbl_int.h"

/* Option word w at argv[*i] with its value: applied to o, noted in *seen. */
static int opt_take(struct eng_catalog_options *o, uint32_t *seen, int k,
                    const struct net_arg *argv, size_t argc, size_t *i, char *err, size_t err_len)
{
        if (*seen & (1u << k))
                return net_tbl_fail(err, err_len, "option %s is given twice",
                                    eng_catalog_opt_name((enum eng_catalog_opt)k));
        if (argc - *i < 2)
                return net_tbl_fail(err, err_len, "option %s needs a value",
                                    eng_catalog_opt_name((enum eng_catalog_opt)k));
        *seen |= 1u << k;
        *i += 2;
        return eng_catalog_opt_set(o, (enum eng_catalog_opt)k, argv[*i - 1].ptr, argv[*i - 1].len,
                                   err, err_len);
}

int net_tbl_options_parse(const struct eng_catalog_options *cur, const struct net_arg *argv,
                          size_t argc, struct eng_catalog_options *ret, char *err, size_t err_len)
{
        struct eng_catalog_options o = *cur;
        uint32_t seen = 0;
        int r = 0;

        if (argc == 0)
                return net_tbl_fail(err, err_len, "give at least one option and its value");
        for (size_t i = 0; r == 0 && i < argc;) {
                int k = eng_catalog_opt_find(argv[i].ptr, argv[i].len);

                r = k < 0 ? eng_catalog_opt_unknown(argv[i].ptr, argv[i].len, "", err, err_len)
                          : opt_take(&o, &seen, k, argv, argc, &i, err, err_len);
        }
        if (r == 0)
                r = eng_catalog_opts_check(&o, err, err_len);
        if (r == 0)
                *ret = o;
        return r;
}

/* ---- TABLE.CREATE ---- */

struct create_build {
        struct net_tbl_create c;
        uint32_t seen;                  /* options given */
        bool mode_given, prefix_given, tablets_given;
        size_t keys_len, keys_cap;
};

static bool type_parse(const struct net_arg *w, enum eng_tuple_type *ret)
{
        if (net_arg_is(w, "i64"))
                *ret = ENG_TUPLE_I64;
        else if (net_arg_is(w, "u64"))
                *ret = ENG_TUPLE_U64;
        else if (net_arg_is(w, "bytes"))
                *ret = ENG_TUPLE_BYTES;
        else
                return false;
        return true;
}

/* "KEY type [type ...]" at argv[*i..argc). */
static int key_types(struct create_build *b, const struct net_arg *argv, size_t argc, size_t *i,
                     char *err, size_t err_len)
{
        struct eng_catalog_table_spec *s = &b->c.spec;

        if (*i >= argc || !net_arg_is(&argv[*i], "key"))
                return net_tbl_fail(err, err_len,
                                    "expected KEY after the path, then the key's types (i64, u64, bytes)");
        for ((*i)++; *i < argc && type_parse(&argv[*i], &b->c.parts[s->n_parts]); (*i)++)
                if (++s->n_parts == ENG_CATALOG_MAX_PARTS && *i + 1 < argc &&
                    type_parse(&argv[*i + 1], &(enum eng_tuple_type){ 0 }))
                        return net_tbl_fail(err, err_len, "a key has at most %u parts",
                                            ENG_CATALOG_MAX_PARTS);
        if (s->n_parts == 0)
                return net_tbl_fail(err, err_len, "KEY needs at least one type (i64, u64, bytes)%s",
                                    *i < argc ? ", got an unknown one" : "");
        return 0;
}

/* "HASHED [PREFIX n]" or "ORDERED" at argv[*i..argc). */
static int mode_parse(struct create_build *b, const struct net_arg *argv, size_t argc, size_t *i,
                      char *err, size_t err_len)
{
        struct eng_catalog_table_spec *s = &b->c.spec;
        uint64_t n;

        if (b->mode_given)
                return net_tbl_fail(err, err_len, "the key mode (ORDERED or HASHED) is given twice");
        b->mode_given = true;
        if (net_arg_is(&argv[(*i)++], "ordered")) {
                s->mode = ENG_CATALOG_ORDERED;
                s->hash_parts = 0;
                return 0;
        }
        s->mode = ENG_CATALOG_HASHED;
        s->hash_parts = s->n_parts;
        if (*i >= argc || !net_arg_is(&argv[*i], "prefix"))
                return 0;
        if (argc - *i < 2 || net_tbl_u64(&argv[*i + 1], &n) < 0 || n < 1 || n > s->n_parts)
                return net_tbl_fail(err, err_len, "PREFIX must be from 1 to the key's %u part%s",
                                    s->n_parts, s->n_parts == 1 ? "" : "s");
        s->hash_parts = (uint32_t)n;
        *i += 2;
        return 0;
}

static int tablets_parse(struct create_build *b, const struct net_arg *argv, size_t argc,
                         size_t *i, char *err, size_t err_len)
{
        uint64_t n;

        if (b->tablets_given)
                return net_tbl_fail(err, err_len, "TABLETS is given twice");
        if (argc - *i < 2 || net_tbl_u64(&argv[*i + 1], &n) < 0 || n < 1 ||
            n > ENG_CATALOG_MAX_TABLETS)
                return net_tbl_fail(err, err_len, "TABLETS must be an integer from 1 to %u",
                                    ENG_CATALOG_MAX_TABLETS);
        b->tablets_given = true;
        b->c.spec.n_tablets = (uint32_t)n;
        *i += 2;
        return 0;
}

/* Room for one more split point of need bytes. */
static int split_room(struct create_build *b, size_t need, char *err, size_t err_len)
{
        struct net_tbl_create *c = &b->c;

        if (c->spec.n_splits + 1 >= ENG_CATALOG_MAX_TABLETS)
                return net_tbl_fail(err, err_len, "at most %u SPLIT points",
                                    ENG_CATALOG_MAX_TABLETS - 1);
        if ((c->spec.n_splits & (c->spec.n_splits - 1)) == 0) {      /* 0, 1, 2, 4, ...: grow */
                size_t cap = c->spec.n_splits ? 2 * (size_t)c->spec.n_splits : 1;
                struct eng_catalog_split *v = realloc(c->splits, cap * sizeof(*v));

                if (!v)
                        return net_tbl_nomem(err, err_len);
                c->splits = v;
        }
        if (b->keys_len + need > b->keys_cap) {
                size_t cap = 2 * (b->keys_len + need);
                uint8_t *k = realloc(c->split_keys, cap);

                if (!k)
                        return net_tbl_nomem(err, err_len);
                c->split_keys = k;
                b->keys_cap = cap;
        }
        return 0;
}

/* "SPLIT n part1..partn" at argv[*i..argc). Keys are stored back to back;
 * create_finish points the splits at them. */
static int split_parse(struct create_build *b, const struct net_arg *argv, size_t argc, size_t *i,
                       char *err, size_t err_len)
{
        struct eng_catalog_table_spec *s = &b->c.spec;
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        char what[48];
        uint64_t n;
        size_t need;
        int r;

        if (argc - *i < 2 || net_tbl_u64(&argv[*i + 1], &n) < 0 || n < 1 || n > s->n_parts)
                return net_tbl_fail(err, err_len,
                                    "SPLIT takes a count of key parts (1 to %u), then the parts",
                                    s->n_parts);
        if (argc - *i - 2 < n)
                return net_tbl_fail(err, err_len, "SPLIT %llu needs %llu key parts, got %zu",
                                    (unsigned long long)n, (unsigned long long)n, argc - *i - 2);
        snprintf(what, sizeof(what), "SPLIT point %u, part", s->n_splits + 1);
        r = net_tbl_parts_parse(b->c.parts, argv + *i + 2, (size_t)n, what, parts, err, err_len);
        if (r < 0)
                return r;
        eng_tuple_encode(parts, (size_t)n, NULL, 0, &need);
        if (need > ENG_CATALOG_MAX_SPLIT_BYTES)
                return net_tbl_fail(err, err_len, "SPLIT point %u is %zu bytes encoded, at most %u",
                                    s->n_splits + 1, need, ENG_CATALOG_MAX_SPLIT_BYTES);
        r = split_room(b, need, err, err_len);
        if (r < 0)
                return r;
        eng_tuple_encode(parts, (size_t)n, b->c.split_keys + b->keys_len, need, &need);
        b->c.splits[s->n_splits++] = (struct eng_catalog_split){ .len = need };
        b->keys_len += need;
        *i += 2 + (size_t)n;
        return 0;
}

/* One word of TABLE.CREATE after the types, with what follows it. */
static int create_word(struct create_build *b, const struct net_arg *argv, size_t argc, size_t *i,
                       char *err, size_t err_len)
{
        const struct net_arg *w = &argv[*i];
        int k;

        if (net_arg_is(w, "ordered") || net_arg_is(w, "hashed"))
                return mode_parse(b, argv, argc, i, err, err_len);
        if (net_arg_is(w, "tablets"))
                return tablets_parse(b, argv, argc, i, err, err_len);
        if (net_arg_is(w, "split"))
                return split_parse(b, argv, argc, i, err, err_len);
        k = eng_catalog_opt_find(w->ptr, w->len);
        if (k < 0)
                return net_tbl_fail(err, err_len,
                                    "unknown key type or option '%.*s' (types: i64, u64, bytes; then "
                                    "ORDERED, HASHED [PREFIX n], TABLETS n, SPLIT n parts.., options)",
                                    (int)(w->len > 40 ? 40 : w->len), w->ptr);
        return opt_take(&b->c.spec.options, &b->seen, k, argv, argc, i, err, err_len);
}

static int split_cmp(const void *x, const void *y)
{
        const struct eng_catalog_split *a = x, *b = y;

        return eng_key_cmp(a->key, a->len, b->key, b->len);
}

/* Points the splits at their keys and sorts them; checks what needs the
 * whole command. */
static int create_finish(struct create_build *b, char *err, size_t err_len)
{
        struct eng_catalog_table_spec *s = &b->c.spec;
        size_t off = 0;

        if (s->n_splits && s->mode == ENG_CATALOG_HASHED)
                return net_tbl_fail(err, err_len,
                                    "SPLIT is for ordered tables; a hashed table pre-splits with TABLETS n");
        if (s->n_splits && b->tablets_given)
                return net_tbl_fail(err, err_len,
                                    "give TABLETS or SPLIT, not both (SPLIT points make points + 1 tablets)");
        for (uint32_t j = 0; j < s->n_splits; j++) {
                b->c.splits[j].key = b->c.split_keys + off;
                off += b->c.splits[j].len;
        }
        if (s->n_splits)
                qsort(b->c.splits, s->n_splits, sizeof(*b->c.splits), split_cmp);
        for (uint32_t j = 1; j < s->n_splits; j++)
                if (split_cmp(&b->c.splits[j - 1], &b->c.splits[j]) == 0)
                        return net_tbl_fail(err, err_len, "two SPLIT points are equal");
        s->splits = b->c.splits;
        /* A table pre-split into n tablets keeps at least n (YDB asks for
         * MIN_PARTITIONS_COUNT along with its pre-split; here it is the
         * default): cold tablets do not merge below what was asked for. */
        if (!(b->seen & (1u << ENG_OPT_MIN_TABLETS))) {
                uint32_t n = s->n_splits ? s->n_splits + 1 : s->n_tablets;

                if (n > s->options.min_tablets)
                        s->options.min_tablets = n < s->options.max_tablets ? n : s->options.max_tablets;
        }
        return eng_catalog_opts_check(&s->options, err, err_len);
}

int net_tbl_create_parse(const struct net_arg *argv, size_t argc, struct net_tbl_create *ret,
                         char *err, size_t err_len)
{
        struct create_build b = { 0 };
        struct eng_catalog_table_spec *s = &b.c.spec;
        size_t i = 1;
        int r;

        s->key_format = ENG_CATALOG_KEYS_TUPLE;
        s->mode = ENG_CATALOG_ORDERED;
        s->options = eng_catalog_options_default();
        r = argc ? net_tbl_path(&argv[0], b.c.path, sizeof(b.c.path), err, err_len)
                 : net_tbl_fail(err, err_len, "TABLE.CREATE needs a path");
        if (r == 0)
                r = key_types(&b, argv, argc, &i, err, err_len);
        while (r == 0 && i < argc)
                r = create_word(&b, argv, argc, &i, err, err_len);
        if (r == 0)
                r = create_finish(&b, err, err_len);
        if (r < 0) {
                net_tbl_create_fini(&b.c);
                return r;
        }
        *ret = b.c;
        ret->spec.path = ret->path;
        ret->spec.parts = ret->parts;
        return 0;
}

void net_tbl_create_fini(struct net_tbl_create *c)
{
        if (!c)
                return;
        free(c->splits);
        free(c->split_keys);
        memset(c, 0, sizeof(*c));
}
