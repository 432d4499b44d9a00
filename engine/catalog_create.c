/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Creating tables: checking a table spec, laying out its tablets
 * (pre-split uniformly, on the first byte, or at explicit split points),
 * and the first catalog of a data directory (eng_catalog_initial); see
 * catalog.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "engine/catalog_int.h"
#include "engine/key.h"
#include "engine/tablet.h"

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
                                                j, eng_tuple_type_name(parts[j].type),
                                                eng_tuple_type_name(spec->parts[j]));
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
        int r = eng_catalog_new_name_check(c, spec->path, err, err_len);

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
        if (table_build(&t, c, spec, n_tablets) < 0 || !(n = eng_catalog_clone(c))) {
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

/* ---- the first catalog of an existing data directory ---- */

/* Fills table id of the initial catalog with n tablets: 0 and 1 the static
 * map's tables, 2.. the other Redis databases, laid out as database 0. */
static int initial_table(struct eng_catalog_table *t, uint32_t id, uint32_t n, uint32_t n_shards)
{
        bool hashed = id != ENG_TABLE_ORDERED;
        char path[32];

        *t = (struct eng_catalog_table){
                .id = id, .key_format = ENG_CATALOG_KEYS_RAW, .n_parts = 1,
                .mode = hashed ? ENG_CATALOG_HASHED : ENG_CATALOG_ORDERED,
                .hash_parts = hashed ? 1 : 0, .parts = { ENG_TUPLE_BYTES },
                .options = eng_catalog_options_default(),
        };
        if (t->options.max_tablets < n)
                t->options.max_tablets = n;
        if (hashed)
                snprintf(path, sizeof(path), "/redis/db%u", id ? id - 1 : 0);
        t->path = strdup(hashed ? path : "/scree/ordered");
        if (!t->path)
                return -ENOMEM;
        eng_catalog_table_set_name(t);
        if (hashed)
                return presplit_uniform(t, n, NULL, 0, id * n, 0, n_shards);
        return presplit_first_byte(t, n, id * n, 0, n_shards);
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
        c->tables = calloc(ENG_CATALOG_INITIAL_TABLES, sizeof(*c->tables));
        if (!c->dirs || !c->tables || !(c->dirs[0] = strdup("/redis")) ||
            !(c->dirs[1] = strdup("/scree")))
                goto fail;
        c->n_dirs = 2;
        for (uint32_t id = 0; id < ENG_CATALOG_INITIAL_TABLES; id++, c->n_tables++)
                if (initial_table(&c->tables[id], id, n, n_shards) < 0)
                        goto fail;
        c->next_table_id = ENG_CATALOG_INITIAL_TABLES;
        c->next_tablet_id = ENG_CATALOG_INITIAL_TABLES * n;
        *ret = c;
        return 0;
fail:
        /* Zeroed (calloc) entries free as nothing; the half-built one is freed too. */
        c->n_dirs = c->dirs ? 2 : 0;
        c->n_tables = c->tables ? ENG_CATALOG_INITIAL_TABLES : 0;
        eng_catalog_free(c);
        return -ENOMEM;
}
