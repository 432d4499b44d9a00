/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies of the table commands (see tbl_args.h): keys as arrays of typed
 * parts, ROW.RANGE rows, tablet boundaries and TABLE.DESCRIBE. Every
 * writer decodes and checks what it is given before writing a byte, so a
 * malformed key (-EINVAL) leaves the reply stream untouched; after that
 * only the writer itself can fail (-ENOMEM, for good).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/endian.h"
#include "engine/tablet.h"
#include "net/resp_write.h"
#include "net/tbl_args.h"
#include "net/tbl_int.h"

/* A decoded key or boundary: the hash in front (hashed tables), then
 * either typed parts or raw bytes. */
struct decoded {
        bool has_hash;
        uint64_t hash;
        bool raw;
        const uint8_t *raw_p;
        size_t raw_len;
        int n;                                  /* parts */
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        uint8_t *scratch;                       /* heap: the parts' bytes */
};

static int str(struct net_resp_out *o, const char *s)
{
        return net_resp_add_bulk(o, s, strlen(s));
}

/* Decodes a position of t (after the table id): whole, a row's key; else
 * a tablet boundary (a prefix of a key, or the hash alone). */
static int decode(const struct eng_catalog_table *t, const uint8_t *pos, size_t len, bool whole,
                  struct decoded *d)
{
        size_t h = t->mode == ENG_CATALOG_HASHED ? ENG_HASH_BYTES : 0;

        memset(d, 0, sizeof(*d));
        if (len < h || (whole && len == h))
                return -EINVAL;
        if (h) {
                d->has_hash = true;
                d->hash = be64_get(pos);
        }
        pos += h;
        len -= h;
        if (t->key_format == ENG_CATALOG_KEYS_RAW) {
                d->raw = len > 0;
                d->raw_p = pos;
                d->raw_len = len;
                return 0;
        }
        if (len == 0)
                return whole ? -EINVAL : 0;
        d->scratch = malloc(len);
        if (!d->scratch)
                return -ENOMEM;
        d->n = net_tbl_tuple_decode(t, pos, len, whole, d->parts, d->scratch);
        if (d->n < 0) {
                free(d->scratch);
                d->scratch = NULL;
                return -EINVAL;
        }
        return 0;
}

static int part_write(struct net_resp_out *o, const struct eng_tuple_part *p)
{
        char buf[24];

        switch (p->type) {
        case ENG_TUPLE_I64:
                return net_resp_add_int(o, p->v.i64);
        case ENG_TUPLE_U64:
                if (p->v.u64 <= INT64_MAX)
                        return net_resp_add_int(o, (int64_t)p->v.u64);
                /* A bulk string in RESP3 too: redis-cli 7.0 cannot show a
                 * RESP3 big number ("Unknown reply type: 13"). */
                return net_resp_add_bulk(o, buf,
                                         (size_t)snprintf(buf, sizeof(buf), "%llu",
                                                          (unsigned long long)p->v.u64));
        case ENG_TUPLE_BYTES:
                return net_resp_add_bulk(o, p->v.bytes.p, p->v.bytes.len);
        case ENG_TUPLE_NULL:
                break;
        }
        return net_resp_add_null(o);
}

/* Writes d's parts (or raw bytes), after its hash when with_hash. */
static int decoded_write(struct net_resp_out *o, const struct decoded *d, bool with_hash)
{
        bool hash = with_hash && d->has_hash;
        char hx[17];
        int r = net_resp_add_array(o, (uint64_t)hash + (d->raw ? 1 : (uint64_t)d->n));

        if (r == 0 && hash) {
                snprintf(hx, sizeof(hx), "%016llx", (unsigned long long)d->hash);
                r = net_resp_add_bulk(o, hx, 16);
        }
        if (r == 0 && d->raw)
                r = net_resp_add_bulk(o, d->raw_p, d->raw_len);
        for (int i = 0; r == 0 && i < d->n; i++)
                r = part_write(o, &d->parts[i]);
        return r;
}

int net_tbl_key_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                      const uint8_t *pos, size_t len)
{
        struct decoded d;
        int r = decode(t, pos, len, true, &d);

        if (r < 0)
                return r;
        r = decoded_write(o, &d, false);
        free(d.scratch);
        return r;
}

int net_tbl_row_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                      const uint8_t *pos, size_t len, const void *value, size_t value_len)
{
        struct decoded d;
        int r = decode(t, pos, len, true, &d);

        if (r < 0)
                return r;
        r = net_resp_add_array(o, 2);
        if (r == 0)
                r = decoded_write(o, &d, false);
        if (r == 0)
                r = net_resp_add_bulk(o, value, value_len);
        free(d.scratch);
        return r;
}

/* Decodes boundary ikey of t (NULL: infinite) into d; is_inf set for
 * the table's own start (its id alone) and for NULL. */
static int boundary_decode(const struct eng_catalog_table *t, const uint8_t *ikey, size_t len,
                           struct decoded *d, bool *is_inf)
{
        uint8_t id[ENG_TABLE_ID_BYTES];

        *is_inf = !ikey || len == ENG_TABLE_ID_BYTES;
        memset(d, 0, sizeof(*d));
        if (!ikey)
                return 0;
        be32_put(id, t->id);
        if (len < ENG_TABLE_ID_BYTES || memcmp(ikey, id, sizeof(id)) != 0)
                return -EINVAL;
        if (*is_inf)
                return 0;
        return decode(t, ikey + ENG_TABLE_ID_BYTES, len - ENG_TABLE_ID_BYTES, false, d);
}

int net_tbl_boundary_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                           const uint8_t *ikey, size_t len, bool is_end)
{
        struct decoded d;
        bool inf;
        int r = boundary_decode(t, ikey, len, &d, &inf);

        if (r < 0)
                return r;
        if (inf)
                return str(o, is_end ? "+inf" : "-inf");
        r = decoded_write(o, &d, true);
        free(d.scratch);
        return r;
}

/* Whether tablet i's start and end decode. */
static bool tablet_ok(const struct eng_catalog_table *t, uint32_t i)
{
        struct decoded d;
        bool inf;
        int r = boundary_decode(t, eng_catalog_tablet_start(t, i), t->tablets[i].start_len, &d,
                                &inf);

        free(d.scratch);
        return r == 0;
}

/* A name and a count (clamped to INT64_MAX). */
static int count(struct net_resp_out *o, const char *name, uint64_t v)
{
        int r = str(o, name);

        return r ? r : net_resp_add_int(o, v <= INT64_MAX ? (int64_t)v : INT64_MAX);
}

/* Hot key h of t: true and its parts in *d (free d->scratch), or false
 * and its user key's bytes in *ret_p, *ret_len when they do not decode (a
 * raw key, or a key cut short: what was kept, after a hashed table's hash). */
static bool hot_key_decode(const struct eng_catalog_table *t, const struct eng_tablet_hot *h,
                           struct decoded *d, const uint8_t **ret_p, size_t *ret_len)
{
        const uint8_t *pos = h->key + ENG_TABLE_ID_BYTES;
        size_t len = h->len > ENG_TABLE_ID_BYTES ? h->len - ENG_TABLE_ID_BYTES : 0;
        size_t skip = t->mode == ENG_CATALOG_HASHED ? ENG_HASH_BYTES : 0;

        if (!h->cut && t->key_format == ENG_CATALOG_KEYS_TUPLE && decode(t, pos, len, true, d) == 0)
                return true;
        if (len >= skip) {
                pos += skip;
                len -= skip;
        }
        *ret_p = pos;
        *ret_len = len;
        return false;
}

/* One hot key: its parts, or its bytes after the table id when they do
 * not decode (a key cut short, a raw key). */
static int hot_key_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                         const struct eng_tablet_hot *h)
{
        const uint8_t *raw;
        size_t len;
        struct decoded d;
        int r;

        if (!hot_key_decode(t, h, &d, &raw, &len))
                return net_resp_add_bulk(o, raw, len);
        r = decoded_write(o, &d, false);
        free(d.scratch);
        return r;
}

/* Appends len bytes of p to buf (size bytes) at *at, as far as they fit;
 * *at counts them all. */
static void text_put(char *buf, size_t size, size_t *at, const void *p, size_t len)
{
        if (*at < size)
                memcpy(buf + *at, p, len < size - *at ? len : size - *at);
        *at += len;
}

/* Whether bytes b read NULL behind zero or more backslashes: typed with
 * one backslash more, lest the null part be read (net_tbl_part_parse). */
static bool reads_null(const uint8_t *b, size_t len)
{
        if (len < 4 || memcmp(b + len - 4, "NULL", 4) != 0)
                return false;
        for (size_t i = 0; i + 4 < len; i++)
                if (b[i] != '\\')
                        return false;
        return true;
}

static void part_text(char *buf, size_t size, size_t *at, const struct eng_tuple_part *p)
{
        char num[24];

        switch (p->type) {
        case ENG_TUPLE_I64:
                text_put(buf, size, at, num,
                         (size_t)snprintf(num, sizeof(num), "%lld", (long long)p->v.i64));
                return;
        case ENG_TUPLE_U64:
                text_put(buf, size, at, num,
                         (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)p->v.u64));
                return;
        case ENG_TUPLE_BYTES:
                if (reads_null(p->v.bytes.p, p->v.bytes.len))
                        text_put(buf, size, at, "\\", 1);
                text_put(buf, size, at, p->v.bytes.p, p->v.bytes.len);
                return;
        case ENG_TUPLE_NULL:
                break;
        }
        text_put(buf, size, at, "NULL", 4);
}

size_t net_tbl_hot_key_text(const struct eng_catalog_table *t, const struct eng_tablet_hot *h,
                            char *buf, size_t size)
{
        const uint8_t *raw;
        size_t len, at = 0;
        struct decoded d;

        if (!hot_key_decode(t, h, &d, &raw, &len)) {
                text_put(buf, size, &at, raw, len);
                return at;
        }
        for (int i = 0; i < d.n; i++) {
                if (i)
                        text_put(buf, size, &at, " ", 1);
                part_text(buf, size, &at, &d.parts[i]);
        }
        free(d.scratch);
        return at;
}

static int hot_keys_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                          const struct net_tbl_tablet_stats *st)
{
        uint32_t n = st && st->hot ? st->n_hot : 0;
        int r = net_resp_add_array(o, n);

        for (uint32_t k = 0; r == 0 && k < n; k++) {
                r = net_resp_add_map(o, 2);
                r = r ? r : str(o, "key");
                r = r ? r : hot_key_write(o, t, &st->hot[k]);
                r = r ? r : count(o, "per-sec", st->hot[k].per_sec);
        }
        return r;
}

static int tablet_map(struct net_resp_out *o, const struct eng_catalog_table *t, uint32_t i,
                      const struct net_tbl_tablet_stats *st)
{
        const struct eng_catalog_tablet *b = &t->tablets[i];
        bool last = i + 1 == t->n_tablets;
        int r = net_resp_add_map(o, 11);

        r = r ? r : str(o, "id");
        r = r ? r : net_resp_add_int(o, b->id);
        r = r ? r : str(o, "shard");
        r = r ? r : net_resp_add_int(o, b->shard);
        r = r ? r : str(o, "start");
        r = r ? r : net_tbl_boundary_write(o, t, i ? eng_catalog_tablet_start(t, i) : NULL,
                                           b->start_len, false);
        r = r ? r : str(o, "end");
        r = r ? r : net_tbl_boundary_write(o, t, last ? NULL : eng_catalog_tablet_start(t, i + 1),
                                           last ? 0 : t->tablets[i + 1].start_len, true);
        r = r ? r : str(o, "bytes");
        r = r ? r : net_resp_add_int(o, st && st->bytes <= INT64_MAX ? (int64_t)st->bytes : 0);
        r = r ? r : str(o, "rows");
        r = r ? r : net_resp_add_int(o, st && st->rows <= INT64_MAX ? (int64_t)st->rows : 0);
        r = r ? r : count(o, "reads-per-sec", st ? st->reads_ps : 0);
        r = r ? r : count(o, "writes-per-sec", st ? st->writes_ps : 0);
        r = r ? r : count(o, "read-bytes-per-sec", st ? st->read_bytes_ps : 0);
        r = r ? r : count(o, "write-bytes-per-sec", st ? st->write_bytes_ps : 0);
        r = r ? r : str(o, "hot-keys");
        r = r ? r : hot_keys_write(o, t, st);
        return r;
}

int net_tbl_tablet_write(struct net_resp_out *o, const struct eng_catalog_table *t, uint32_t i,
                         const struct net_tbl_tablet_stats *st)
{
        if (i >= t->n_tablets || !tablet_ok(t, i) || (i + 1 < t->n_tablets && !tablet_ok(t, i + 1)))
                return -EINVAL;
        return tablet_map(o, t, i, st);
}

int net_tbl_options_write(struct net_resp_out *o, const struct eng_catalog_options *opts)
{
        int r = net_resp_add_map(o, 10);

        r = r ? r : str(o, "auto-split-size");
        r = r ? r : str(o, opts->split_by_size ? "on" : "off");
        r = r ? r : str(o, "auto-split-load");
        r = r ? r : str(o, opts->split_by_load ? "on" : "off");
        r = r ? r : str(o, "split-size");
        r = r ? r : net_resp_add_int(o, (int64_t)opts->split_size_bytes);
        r = r ? r : str(o, "split-load-percent");
        r = r ? r : net_resp_add_int(o, opts->split_load_percent);
        r = r ? r : str(o, "min-tablets");
        r = r ? r : net_resp_add_int(o, opts->min_tablets);
        r = r ? r : str(o, "max-tablets");
        r = r ? r : net_resp_add_int(o, opts->max_tablets);
        r = r ? r : str(o, "default-ttl");
        r = r ? r : net_resp_add_int(o, (int64_t)(opts->default_ttl_ms / 1000));
        r = r ? r : str(o, "compaction");
        r = r ? r : str(o, opts->compaction == ENG_CATALOG_COMPACTION_SIZE_TIERED ? "size-tiered"
                                                                                  : "unknown");
        r = r ? r : str(o, "per-partition-reads");
        r = r ? r : net_resp_add_int(o, opts->partition_reads_per_sec);
        r = r ? r : str(o, "per-partition-writes");
        r = r ? r : net_resp_add_int(o, opts->partition_writes_per_sec);
        return r;
}

static int key_types_write(struct net_resp_out *o, const struct eng_catalog_table *t)
{
        int r = net_resp_add_array(o, t->n_parts);

        for (uint32_t i = 0; r == 0 && i < t->n_parts; i++)
                r = str(o, eng_tuple_type_name(t->parts[i]));
        return r;
}

int net_tbl_describe_write(struct net_resp_out *o, const struct eng_catalog_table *t,
                           const struct net_tbl_tablet_stats *stats)
{
        int r;

        for (uint32_t i = 0; i < t->n_tablets; i++)
                if (!tablet_ok(t, i))
                        return -EINVAL;
        r = net_resp_add_map(o, 7);
        r = r ? r : str(o, "path");
        r = r ? r : str(o, t->path);
        r = r ? r : str(o, "id");
        r = r ? r : net_resp_add_int(o, t->id);
        r = r ? r : str(o, "key");
        r = r ? r : key_types_write(o, t);
        r = r ? r : str(o, "mode");
        r = r ? r : str(o, t->mode == ENG_CATALOG_HASHED ? "hashed" : "ordered");
        r = r ? r : str(o, "hash-prefix");
        r = r ? r : net_resp_add_int(o, t->hash_parts);
        r = r ? r : str(o, "options");
        r = r ? r : net_tbl_options_write(o, &t->options);
        r = r ? r : str(o, "tablets");
        r = r ? r : net_resp_add_array(o, t->n_tablets);
        for (uint32_t i = 0; r == 0 && i < t->n_tablets; i++)
                r = tablet_map(o, t, i, stats ? &stats[i] : NULL);
        return r;
}

int net_tbl_dir_list_write(struct net_resp_out *o, const struct eng_catalog_entry *e, size_t n)
{
        int r = net_resp_add_map(o, n);

        for (size_t i = 0; r == 0 && i < n; i++) {
                r = str(o, e[i].name);
                r = r ? r : str(o, e[i].is_table ? "table" : "directory");
        }
        return r;
}
