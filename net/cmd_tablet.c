/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tablets that split and merge: by hand (TABLET.SPLIT, TABLET.MERGE,
 * docs/tables.md "Tablets"), and by size, load and cold (net_tablet_tick:
 * once a second each shard asks its engine for a tablet to split,
 * eng_shard_split_wanted, or else two small cold neighbours to merge,
 * eng_shard_merge_wanted; one change at a time per shard). A split is a
 * catalog change (catalog_svc.h): on shard 0 the
 * split point is checked (or chosen) against the newest snapshot, the
 * catalog with the two children is saved, and every shard installs it --
 * the owner hands the parent's SSTables and memtables to the children at
 * once, copying no row (engine/shard_relayout.c) -- before the reply
 * names the children.
 *
 * The point: AT and a key prefix (an ordered table with tuple keys: 1 to
 * n parts), AT and a hash (a hashed table: 16 hex digits, as
 * TABLE.DESCRIBE shows them), AT and bytes (a raw-key ordered table); or,
 * without AT (hashed and raw-key tables), the middle of the tablet's
 * first 8 key bytes after the table id: of its hash range, or of a raw
 * key's first bytes. Runs on the origin; the change on shard 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "base/log.h"
#include "engine/catalog.h"
#include "engine/tablet.h"
#include "engine/catalog_svc.h"
#include "net/cmd.h"
#include "net/server.h"
#include "net/tbl_args.h"
#include "net/tbl_int.h"

/* A split in flight, owned by the origin's request until it is answered
 * (an automatic one's: by its shard, auto_sh). */
struct split_change {
        struct eng_cat_change ch;
        struct net_req *req;
        struct net_shard *auto_sh;
        bool by_load;                   /* automatic: by load, else by size */
        uint64_t bytes;                 /* automatic by size: the tablet's size */
        uint32_t table, tablet;
        char path[ENG_CATALOG_MAX_PATH + 1];
        bool at;                        /* at_key holds the point's position */
        size_t at_len;
        uint32_t kids[2];
        uint8_t at_key[ENG_CATALOG_MAX_START_BYTES];    /* table id, then the position */
};

/* The middle of tablet i of t in its first 8 key bytes after the table
 * id (a hash, or a raw key's first bytes), as a split key into key (the
 * table id and 8 bytes). 0, or -EINVAL when the range is too narrow. */
static int middle8(const struct eng_catalog_table *t, uint32_t i, uint8_t *key, size_t *len)
{
        uint8_t buf[ENG_TABLE_ID_BYTES];
        const uint8_t *end;
        uint32_t end_len = eng_catalog_tablet_end(t, i, buf, &end);
        uint64_t lo = t->tablets[i].key8, mid;

        if (end == buf) {               /* the table's end: 2^64 */
                if (lo == UINT64_MAX)
                        return -EINVAL;
                mid = lo + (~lo >> 1) + 1;
        } else {
                uint64_t hi = eng_catalog_key8(end, end_len);

                if (hi - lo < 2)
                        return -EINVAL;
                mid = lo + (hi - lo) / 2;
        }
        be32_put(key, t->id);
        be64_put(key + ENG_TABLE_ID_BYTES, mid);
        *len = ENG_TABLE_ID_BYTES + 8;
        return 0;
}

static int split_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                    struct eng_catalog **ret)
{
        struct split_change *sc = container_of(ch, struct split_change, ch);
        const struct eng_catalog_table *t;
        uint32_t i;

        char *err = ch->err;
        size_t el = sizeof(ch->err);

        if (eng_catalog_tablet_by_id(cur, sc->tablet, &t, &i) < 0 || t->id != sc->table) {
                snprintf(err, el, "table %.150s has no tablet %u", sc->path, sc->tablet);
                return -SCREE_ENOTFOUND;
        }
        if (!sc->at && t->mode == ENG_CATALOG_ORDERED && t->key_format == ENG_CATALOG_KEYS_TUPLE) {
                snprintf(err, el, "table %.150s: give tablet %u's split point with AT and a key "
                         "prefix", sc->path, sc->tablet);
                return -EINVAL;
        }
        if (!sc->at && middle8(t, i, sc->at_key, &sc->at_len) < 0) {
                snprintf(err, el, "table %.150s: tablet %u is too narrow to split at its "
                         "middle: give AT", sc->path, sc->tablet);
                return -EINVAL;
        }
        return eng_catalog_split_tablet(cur, sc->tablet, sc->at_key, sc->at_len, ret, sc->kids,
                                        ch->err, sizeof(ch->err));
}

static void split_done(struct eng_cat_change *ch)
{
        struct split_change *sc = container_of(ch, struct split_change, ch);
        struct net_req *req = sc->req;

        if (sc->auto_sh) {
                if (ch->res < 0)
                        log_info("shard %u: splitting tablet %u of %s by %s: %s",
                                 sc->auto_sh->id, sc->tablet, sc->path,
                                 sc->by_load ? "load" : "size", ch->err);
                else if (sc->by_load)
                        log_info("shard %u: tablet %u of %s split by load into %u and %u",
                                 sc->auto_sh->id, sc->tablet, sc->path, sc->kids[0], sc->kids[1]);
                else
                        log_info("shard %u: tablet %u of %s split by size (%llu bytes) into %u "
                                 "and %u", sc->auto_sh->id, sc->tablet, sc->path,
                                 (unsigned long long)sc->bytes, sc->kids[0], sc->kids[1]);
                sc->auto_sh->split_busy = false;
                free(sc);
                return;
        }
        if (ch->res < 0) {
                net_resp_add_errorf(req->out, "ERR %s", ch->err);
        } else {
                net_resp_add_array(req->out, 2);
                net_resp_add_int(req->out, sc->kids[0]);
                net_resp_add_int(req->out, sc->kids[1]);
        }
        free(sc);
        net_req_complete(req);
}

static int reply_err(struct net_req *req, const char *msg)
{
        net_resp_add_errorf(req->out, "ERR %s", msg);
        return NET_CMD_DONE;
}

/* AT's arguments argv[0..argc) as the split key of t (table id first). 0,
 * or -EINVAL with err. */
static int at_parse(const struct eng_catalog_table *t, const struct net_arg *argv, size_t argc,
                    struct split_change *sc, char *err, size_t err_len)
{
        struct eng_tuple_part parts[ENG_CATALOG_MAX_PARTS];
        uint8_t *pos = sc->at_key + ENG_TABLE_ID_BYTES;
        size_t cap = sizeof(sc->at_key) - ENG_TABLE_ID_BYTES, need;
        char hex[17], *end;

        be32_put(sc->at_key, t->id);
        if (t->mode == ENG_CATALOG_HASHED) {
                bool ok = argc == 1 && argv[0].len == 16;

                if (ok) {
                        memcpy(hex, argv[0].ptr, 16);
                        hex[16] = '\0';
                        be64_put(pos, strtoull(hex, &end, 16));
                        ok = !*end && strspn(hex, "0123456789abcdefABCDEF") == 16;
                }
                if (!ok)
                        return net_tbl_fail(err, err_len, "AT takes the split point's hash, 16 hex "
                                            "digits (as TABLE.DESCRIBE shows a hash)");
                sc->at_len = ENG_TABLE_ID_BYTES + 8;
        } else if (t->key_format == ENG_CATALOG_KEYS_RAW) {
                if (argc != 1 || argv[0].len == 0 || argv[0].len > ENG_CATALOG_MAX_SPLIT_BYTES)
                        return net_tbl_fail(err, err_len, "AT takes one key of 1 to %u bytes",
                                            ENG_CATALOG_MAX_SPLIT_BYTES);
                memcpy(pos, argv[0].ptr, argv[0].len);
                sc->at_len = ENG_TABLE_ID_BYTES + argv[0].len;
        } else {
                if (argc < 1 || argc > t->n_parts)
                        return t->n_parts == 1
                                       ? net_tbl_fail(err, err_len, "AT takes 1 key part, got %zu",
                                                      argc)
                                       : net_tbl_fail(err, err_len, "AT takes 1 to %u key parts, "
                                                      "got %zu", t->n_parts, argc);
                if (net_tbl_parts_parse(t->parts, argv, argc, "AT part", parts, err, err_len) < 0)
                        return -EINVAL;
                eng_tuple_encode(parts, argc, NULL, 0, &need);
                if (need > ENG_CATALOG_MAX_SPLIT_BYTES || need > cap)
                        return net_tbl_fail(err, err_len, "AT is %zu bytes encoded, at most %u",
                                            need, ENG_CATALOG_MAX_SPLIT_BYTES);
                eng_tuple_encode(parts, argc, pos, cap, &need);
                sc->at_len = ENG_TABLE_ID_BYTES + need;
        }
        sc->at = true;
        return 0;
}

int net_tablet_args(struct net_req *req, char *path, size_t cap,
                    const struct eng_catalog_table **t, uint32_t *id, char *err, size_t err_len)
{
        uint64_t v;

        if (net_tbl_path(&req->argv[1], path, cap, err, err_len) < 0)
                return -1;
        if (eng_catalog_lookup(eng_shard_catalog(req->origin->eng), path, t) < 0) {
                snprintf(err, err_len, "no table %.200s", path);
                return -1;
        }
        if (net_tbl_u64(&req->argv[2], &v) < 0 || v > UINT32_MAX) {
                snprintf(err, err_len, "the tablet must be a tablet id (TABLE.DESCRIBE lists "
                         "them)");
                return -1;
        }
        *id = (uint32_t)v;
        return 0;
}

/* TABLET.SPLIT path tablet-id [AT point...]: replies the children's ids. */
int net_cmd_tablet_split(struct net_req *req)
{
        const struct eng_catalog_table *t;
        char err[NET_TBL_ERR_MAX];
        struct split_change *sc;
        uint32_t id;

        sc = calloc(1, sizeof(*sc));
        if (!sc)
                return reply_err(req, "out of memory");
        if (net_tablet_args(req, sc->path, sizeof(sc->path), &t, &id, err, sizeof(err)) < 0)
                goto bad;
        if (req->argc > 3 && !net_arg_is(&req->argv[3], "at")) {
                snprintf(err, sizeof(err), "TABLET.SPLIT takes a table, a tablet id, and "
                         "optionally AT and the split point");
                goto bad;
        }
        if (req->argc > 3 && at_parse(t, req->argv + 4, req->argc - 4, sc, err, sizeof(err)) < 0)
                goto bad;
        sc->req = req;
        sc->table = t->id;
        sc->tablet = id;
        sc->ch = (struct eng_cat_change){ .fn = split_fn, .done = split_done };
        net_cat_submit(req->origin, &sc->ch);
        return NET_CMD_PENDING;
bad:
        free(sc);
        return reply_err(req, err);
}

/* ---- merges ---- */

/* A merge in flight: as a split_change's. */
struct merge_change {
        struct eng_cat_change ch;
        struct net_req *req;
        struct net_shard *auto_sh;
        uint64_t bytes;                 /* automatic: what the two held */
        uint32_t table, first, second, merged;
        char path[ENG_CATALOG_MAX_PATH + 1];
};

static int merge_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                    struct eng_catalog **ret)
{
        struct merge_change *mc = container_of(ch, struct merge_change, ch);
        const struct eng_catalog_table *t;
        uint32_t i;

        if (eng_catalog_tablet_by_id(cur, mc->first, &t, &i) < 0 || t->id != mc->table) {
                snprintf(ch->err, sizeof(ch->err), "table %.150s has no tablet %u", mc->path,
                         mc->first);
                return -SCREE_ENOTFOUND;
        }
        if (i + 1 < t->n_tablets && mc->second && t->tablets[i + 1].id != mc->second) {
                snprintf(ch->err, sizeof(ch->err), "table %.150s: tablet %u's neighbour "
                         "changed", mc->path, mc->first);
                return -EINVAL;
        }
        if (i + 1 < t->n_tablets && t->tablets[i].shard != t->tablets[i + 1].shard) {
                snprintf(ch->err, sizeof(ch->err), "table %.150s: tablets %u and %u are on "
                         "shards %u and %u: move one to the other's shard first (TABLET.MOVE)",
                         mc->path, mc->first, t->tablets[i + 1].id, t->tablets[i].shard,
                         t->tablets[i + 1].shard);
                return -EINVAL;
        }
        mc->second = i + 1 < t->n_tablets ? t->tablets[i + 1].id : 0;
        return eng_catalog_merge_tablets(cur, mc->first, ret, &mc->merged, ch->err,
                                         sizeof(ch->err));
}

static void merge_done(struct eng_cat_change *ch)
{
        struct merge_change *mc = container_of(ch, struct merge_change, ch);
        struct net_req *req = mc->req;

        if (mc->auto_sh) {
                if (ch->res < 0)
                        log_info("shard %u: merging tablets %u and %u of %s: %s", mc->auto_sh->id,
                                 mc->first, mc->second, mc->path, ch->err);
                else
                        log_info("shard %u: tablets %u and %u of %s (%llu bytes, cold) merged "
                                 "into %u", mc->auto_sh->id, mc->first, mc->second, mc->path,
                                 (unsigned long long)mc->bytes, mc->merged);
                mc->auto_sh->split_busy = false;
                free(mc);
                return;
        }
        if (ch->res < 0)
                net_resp_add_errorf(req->out, "ERR %s", ch->err);
        else
                net_resp_add_int(req->out, mc->merged);
        free(mc);
        net_req_complete(req);
}

/* TABLET.MERGE path tablet-id: merges the tablet with the next one of its
 * table; replies the merged tablet's id. */
int net_cmd_tablet_merge(struct net_req *req)
{
        const struct eng_catalog_table *t;
        char err[NET_TBL_ERR_MAX];
        struct merge_change *mc;
        uint32_t id;

        if (!(mc = calloc(1, sizeof(*mc))))
                return reply_err(req, "out of memory");
        if (net_tablet_args(req, mc->path, sizeof(mc->path), &t, &id, err, sizeof(err)) < 0)
                goto bad;
        mc->req = req;
        mc->table = t->id;
        mc->first = id;
        mc->ch = (struct eng_cat_change){ .fn = merge_fn, .done = merge_done };
        net_cat_submit(req->origin, &mc->ch);
        return NET_CMD_PENDING;
bad:
        free(mc);
        return reply_err(req, err);
}

/* Submits the merge the engine wants, if any. Whether it did. */
static bool auto_merge(struct net_shard *sh)
{
        const struct eng_catalog_table *t;
        struct eng_merge_want w;
        struct merge_change *mc;

        if (eng_shard_merge_wanted(sh->eng, &w) != 1 ||
            eng_catalog_table_by_id(eng_shard_catalog(sh->eng), w.table, &t) < 0 ||
            !(mc = calloc(1, sizeof(*mc))))
                return false;
        *mc = (struct merge_change){ .auto_sh = sh, .table = w.table, .first = w.first,
                                     .second = w.second, .bytes = w.bytes };
        snprintf(mc->path, sizeof(mc->path), "%s", t->path);
        mc->ch = (struct eng_cat_change){ .fn = merge_fn, .done = merge_done };
        sh->split_busy = true;
        net_cat_submit(sh, &mc->ch);
        return true;
}

void net_tablet_tick(struct net_shard *sh)
{
        struct eng_split_want *w;
        struct split_change *sc;
        const struct eng_catalog_table *t;

        if (sh->stopping || !sh->eng || net_shard_is_loading(sh))
                return;
        eng_shard_tick(sh->eng);        /* the tablets' traffic per second */
        if (sh->split_busy)
                return;
        w = malloc(sizeof(*w));
        if (!w || eng_shard_split_wanted(sh->eng, w) != 1 ||
            eng_catalog_table_by_id(eng_shard_catalog(sh->eng), w->table, &t) < 0 ||
            !(sc = calloc(1, sizeof(*sc)))) {
                free(w);
                (void)auto_merge(sh);   /* splits first */
                return;
        }
        *sc = (struct split_change){ .auto_sh = sh, .table = w->table, .tablet = w->tablet,
                                     .by_load = w->by_load, .bytes = w->bytes, .at = true,
                                     .at_len = w->key_len };
        memcpy(sc->at_key, w->key, w->key_len);
        snprintf(sc->path, sizeof(sc->path), "%s", t->path);
        free(w);
        sc->ch = (struct eng_cat_change){ .fn = split_fn, .done = split_done };
        sh->split_busy = true;
        net_cat_submit(sh, &sc->ch);
}
