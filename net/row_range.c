/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ROW.RANGE, ROW.COUNT and ROW.DELRANGE over the protocol (docs/tables.md;
 * the bounds and cursors: tbl_range.c). A range walks the table's tablets
 * in key order, one hop per run of neighbouring tablets on one shard, each
 * hop a shard scan clipped to the run: rows come back in key order
 * whatever the tablets' shards, and the cursor is a key position, so it
 * stays right however the tablets are laid out by the next page. A hop
 * that meets a tablet moved away plans the rest again (hop_replan).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/endian.h"
#include "engine/catalog.h"
#include "engine/key.h"
#include "net/cmd.h"
#include "net/row_int.h"
#include "net/server.h"
#include "net/tbl_args.h"

/* ---- ranges ---- */

enum hop_kind {
        HOP_RANGE,
        HOP_COUNT,
        HOP_DELRANGE,
};

/* Plans the hop from rc->pos: the run of tablets on the shard owning pos,
 * up to the first tablet of another shard or the range's end. 0 or
 * -ENOMEM. */
static int hop_plan(struct row_cmd *rc)
{
        const struct eng_catalog_table *t = rc->t;
        const struct net_tbl_bounds *b = &rc->range.b;
        uint8_t small[256], *ik = small;
        size_t len = ENG_TABLE_ID_BYTES + rc->pos_len;
        uint32_t i, j;

        if (len > sizeof(small) && !(ik = malloc(len)))
                return -ENOMEM;
        be32_put(ik, t->id);
        if (rc->pos_len)
                memcpy(ik + ENG_TABLE_ID_BYTES, rc->pos, rc->pos_len);
        i = eng_catalog_route_ikey(t, ik, len);
        if (ik != small)
                free(ik);
        rc->hop_shard = t->tablets[i].shard;
        for (j = i + 1; j < t->n_tablets && t->tablets[j].shard == rc->hop_shard; j++)
                ;
        rc->hop_open = j == t->n_tablets;
        if (!rc->hop_open) {
                rc->hop_end = eng_catalog_tablet_start(t, j) + ENG_TABLE_ID_BYTES;
                rc->hop_end_len = t->tablets[j].start_len - ENG_TABLE_ID_BYTES;
        }
        rc->last_hop = true;
        if (b->end_open)
                rc->last_hop = rc->hop_open;
        else if (rc->hop_open || eng_key_cmp(b->end, b->end_len, rc->hop_end, rc->hop_end_len) <= 0)
                rc->hop_end = b->end, rc->hop_end_len = b->end_len, rc->hop_open = false;
        else
                rc->last_hop = false;
        return 0;
}

/* The reverse hop to rc->pos (exclusive; pos_open: the table's end): the
 * run of tablets on the shard owning the last position before it, down to
 * the first tablet of another shard or the range's start. 0 or -ENOMEM. */
static int hop_plan_rev(struct row_cmd *rc)
{
        const struct eng_catalog_table *t = rc->t;
        const struct net_tbl_bounds *b = &rc->range.b;
        uint8_t small[256], *ik = small;
        size_t len = ENG_TABLE_ID_BYTES + rc->pos_len;
        uint32_t i = t->n_tablets - 1, j;

        if (!rc->pos_open) {
                if (len > sizeof(small) && !(ik = malloc(len)))
                        return -ENOMEM;
                be32_put(ik, t->id);
                memcpy(ik + ENG_TABLE_ID_BYTES, rc->pos, rc->pos_len);
                i = eng_catalog_route_ikey(t, ik, len);
                /* An end exactly at a tablet's start: the rows before it
                 * are the tablet below's. */
                if (i > 0 && eng_key_cmp(ik, len, eng_catalog_tablet_start(t, i),
                                         t->tablets[i].start_len) == 0)
                        i--;
                if (ik != small)
                        free(ik);
        }
        rc->hop_shard = t->tablets[i].shard;
        for (j = i; j > 0 && t->tablets[j - 1].shard == rc->hop_shard; j--)
                ;
        rc->hop_end = eng_catalog_tablet_start(t, j) + ENG_TABLE_ID_BYTES;
        rc->hop_end_len = t->tablets[j].start_len - ENG_TABLE_ID_BYTES;
        rc->hop_open = false;
        rc->last_hop = eng_key_cmp(rc->hop_end, rc->hop_end_len, b->start, b->start_len) <= 0;
        if (rc->last_hop) {
                rc->hop_end = b->start;
                rc->hop_end_len = b->start_len;
        }
        return 0;
}

/* A hop's scan state: the child's info. */
struct hop {
        const struct row_cmd *rc;
        enum hop_kind kind;
        uint32_t limit;
        uint64_t n;
        int res;
        bool more;
        uint8_t *resume;                /* heap, the child's: the next row's position */
        size_t resume_len;
        uint8_t *dels;                  /* DELRANGE: len-prefixed keys */
        size_t dels_len, dels_cap;
        uint32_t n_dels;
        bool foreign;                   /* stopped at another shard's tablet: resume is its bound */
        bool take_read;                 /* count a read of the range's partition first */
};

static int hop_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct net_req *req = sc->ctx;
        struct hop *h = req->info;

        if (h->kind == HOP_RANGE && h->n == h->limit) {
                /* The row past a full page: the next page's cursor. */
                h->resume = malloc(it->pos_len ? it->pos_len : 1);
                if (!h->resume)
                        return -ENOMEM;
                memcpy(h->resume, it->pos, it->pos_len);
                h->resume_len = it->pos_len;
                h->more = true;
                return 0;
        }
        h->n++;
        if (h->kind == HOP_RANGE)
                return net_tbl_row_write(req->out, h->rc->t, it->pos, it->pos_len, it->value,
                                         it->value_len) < 0 ? -ENOMEM : 0;
        if (h->kind == HOP_DELRANGE) {
                size_t need = 4 + it->key_len;

                if (h->dels_len + need > h->dels_cap) {
                        size_t cap = (h->dels_cap + need) * 2;
                        uint8_t *d = realloc(h->dels, cap);

                        if (!d)
                                return -ENOMEM;
                        h->dels = d;
                        h->dels_cap = cap;
                }
                memcpy(h->dels + h->dels_len, &it->key_len, 4);
                memcpy(h->dels + h->dels_len + 4, it->key, it->key_len);
                h->dels_len += need;
                h->n_dels++;
        }
        return 0;
}

static void hop_del_done(struct net_req *req, int res)
{
        struct hop *h = req->info;

        if (res < 0)
                h->res = res;
}

/* The scan ended with res: keep its resume; DELRANGE deletes what it saw. */
static int hop_scanned(struct net_req *req, int res)
{
        struct hop *h = req->info;
        struct eng_mutation *m;
        size_t at = 0;
        int r;

        h->res = res;
        /* A full page's cursor row (hop_item) stands: the next page
         * starts there, wherever its tablet is by then. */
        h->foreign = res == 0 && req->sc.foreign && !(h->kind == HOP_RANGE && h->more);
        if (res == 0 && req->sc.more && (h->kind != HOP_RANGE || h->foreign)) {
                h->more = true;
                h->resume = malloc(req->sc.resume_len ? req->sc.resume_len : 1);
                if (h->resume) {
                        memcpy(h->resume, req->sc.resume, req->sc.resume_len);
                        h->resume_len = req->sc.resume_len;
                } else {
                        h->res = -ENOMEM;
                }
        }
        eng_scan_release(&req->sc);
        if (h->res < 0 || h->kind != HOP_DELRANGE || !h->n_dels)
                return NET_CMD_DONE;
        m = calloc(h->n_dels, sizeof(*m));
        if (!m) {
                h->res = -ENOMEM;
                return NET_CMD_DONE;
        }
        for (uint32_t i = 0; i < h->n_dels; i++) {
                uint32_t len;

                memcpy(&len, h->dels + at, 4);
                m[i] = (struct eng_mutation){ .kind = ENG_MUT_DEL, .table = h->rc->t->id,
                                              .key = h->dels + at + 4, .key_len = len };
                at += 4 + len;
        }
        r = net_req_write(req, m, h->n_dels, hop_del_done);
        free(m);
        return r;
}

static void hop_scan_cb(struct eng_scan *sc, int res)
{
        struct net_req *req = sc->ctx;

        if (hop_scanned(req, res) == NET_CMD_DONE)
                net_req_complete(req);
}

static int exec_hop(struct net_req *req)
{
        struct hop *h = req->info;
        const struct row_cmd *rc = h->rc;
        int r;

        /* Afresh: a hop routed again after a moved tablet refused its
         * deletes (net_req_moved) runs again from the start. */
        free(h->resume);
        free(h->dels);
        h->resume = h->dels = NULL;
        h->resume_len = h->dels_len = h->dels_cap = 0;
        h->n = h->n_dels = 0;
        h->more = h->foreign = false;
        h->res = 0;
        memset(&req->sc, 0, sizeof(req->sc));
        if (h->take_read) {
                r = eng_shard_rate_take(req->exec->eng, rc->t->id, rc->range.b.start,
                                        (uint32_t)rc->range.b.start_len, ENG_RATELIMIT_READ);
                if (r < 0)
                        return hop_scanned(req, r);
        }
        req->sc.item = hop_item;
        req->sc.done = hop_scan_cb;
        req->sc.ctx = req;
        req->sc.stop_at_foreign = true; /* the hop is this shard's by the origin's catalog */
        /* A range reads one row past the page, for the cursor (hop_item):
         * a cursor is always a row's position. */
        if (rc->range.rev) {
                req->sc.reverse = true;
                r = eng_shard_scan(req->exec->eng, rc->t->id, rc->hop_end,
                                   (uint32_t)rc->hop_end_len, rc->pos_open ? NULL : rc->pos,
                                   (uint32_t)rc->pos_len, h->limit + 1, &req->sc);
        } else {
                r = eng_shard_scan(req->exec->eng, rc->t->id, rc->pos, (uint32_t)rc->pos_len,
                                   rc->hop_open ? NULL : rc->hop_end, (uint32_t)rc->hop_end_len,
                                   h->limit + (h->kind == HOP_RANGE), &req->sc);
        }
        if (r == 1)
                return NET_CMD_PENDING;
        return hop_scanned(req, r);
}

static const struct net_cmd_def def_exec_hop = { "row.range", -2, NET_CMD_READONLY, 0, 0, 0,
                                                 exec_hop, NULL };

static void hop_gather(struct net_req *req);

/* Starts the hop from rc->pos. Returns what the handler returns. */
static int hop_start(struct net_req *req, enum hop_kind kind)
{
        struct row_cmd *rc = req->info;
        struct hop *h = calloc(1, sizeof(*h));

        if (!h || (rc->range.rev ? hop_plan_rev(rc) : hop_plan(rc)) < 0) {
                free(h);
                return net_row_reply_err(req, "out of memory");
        }
        h->rc = rc;
        h->kind = kind;
        h->take_read = rc->take_read;
        rc->take_read = false;
        h->limit = kind == HOP_RANGE ? (uint32_t)(rc->range.limit - rc->n) : ROW_HOP_ROWS;
        return net_req_one_child(req, &def_exec_hop, rc->hop_shard, h, hop_gather);
}

/* Moves the walk to pos (len bytes, copied). 0 or -ENOMEM. */
static int walk_to(struct row_cmd *rc, const uint8_t *pos, size_t len)
{
        uint8_t *p = malloc(len ? len : 1);

        if (!p)
                return -ENOMEM;
        memcpy(p, pos, len);
        free(rc->pos);
        rc->pos = p;
        rc->pos_len = len;
        return 0;
}

static void range_reply(struct net_req *req)
{
        struct row_cmd *rc = req->info;
        char *cur = NULL;
        size_t len = 1;

        if (rc->next) {
                cur = malloc(NET_TBL_CURSOR_SIZE(rc->next_len));
                if (!cur) {
                        net_resp_add_error(req->out, "ERR out of memory", 17);
                        return;
                }
                len = net_tbl_cursor_format(rc->t->id, rc->next, rc->next_len, rc->range.rev, cur,
                                            NET_TBL_CURSOR_SIZE(rc->next_len));
        }
        net_resp_add_array(req->out, 2);
        net_resp_add_bulk(req->out, cur ? cur : NET_TBL_CURSOR_START, len);
        net_resp_add_array(req->out, rc->n);
        net_out_move(req->out, &rc->rows);
        free(cur);
}

static void replan_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct row_cmd *rc = container_of(t, struct row_cmd, replan);
        struct net_req *req = rc->req;

        (void)loop;
        if (hop_start(req, (enum hop_kind)rc->replan_kind) == NET_CMD_DONE) {
                net_row_cmd_free(rc);
                net_req_complete(req);
        }
}

/* Hop h stopped on shard `was` at a tablet another shard owns now: the
 * walk goes on from h's resume by the origin's newest catalog. 0 (going
 * on), or <0 with a reply written. */
static int hop_replan(struct net_req *req, struct hop *h, uint32_t was)
{
        struct row_cmd *rc = req->info;
        struct eng_catalog *c = eng_shard_catalog(req->origin->eng);
        const struct eng_catalog_table *t;
        bool stuck;

        if (eng_catalog_table_by_id(c, rc->t->id, &t) < 0) {
                net_resp_add_errorf(req->out, "ERR no table %s (dropped meanwhile)", rc->t->path);
                return -1;
        }
        eng_catalog_unref(rc->snap);
        rc->snap = eng_catalog_ref(c);
        rc->t = t;
        if (rc->range.rev && !h->resume_len) {
                rc->pos_open = true;    /* the table's end */
        } else if (walk_to(rc, h->resume, h->resume_len) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return -1;
        } else {
                rc->pos_open = false;
        }
        if ((rc->range.rev ? hop_plan_rev(rc) : hop_plan(rc)) < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return -1;
        }
        stuck = rc->hop_shard == was && h->n == 0 && h->n_dels == 0;
        if (stuck && ++rc->replans > 10000) {
                net_resp_add_errorf(req->out, "TRYAGAIN the range's tablets have been moving "
                                    "between shards for 10 s");
                return -1;
        }
        if (!stuck) {
                if (hop_start(req, h->kind) == NET_CMD_DONE)
                        return -1;      /* it replied: out of memory */
                return 0;
        }
        rc->req = req;
        rc->replan_kind = (int)h->kind;
        rx_timer_init(&rc->replan, replan_fire, "net:range replan");
        rx_timer_arm_after(req->origin->loop, &rc->replan, 1000 * 1000);
        req->children_left++;           /* the parent waits for the timer */
        return 0;
}

/* A hop is back: take its rows, then go on, or reply. */
static void hop_gather(struct net_req *req)
{
        struct row_cmd *rc = req->info;
        struct net_req *c = req->children[0];
        struct hop *h = c->info;
        enum hop_kind kind = h->kind;
        int r = 0;

        /* A child refused (-LOADING) replied its error; a hop's engine
         * error is in h->res. */
        if (net_child_error(req, c) || h->res < 0) {
                if (h->res < 0)
                        net_reply_engine_err(req, h->res);
                free(h->resume);
                free(h->dels);
                net_row_cmd_free(rc);
                return;
        }
        rc->n += kind == HOP_DELRANGE ? h->n_dels : h->n;
        if (kind == HOP_RANGE)
                net_out_move(&rc->rows, &c->own);
        if (h->foreign) {
                /* The replan's new hop frees this one (h with it). */
                struct hop was = *h;

                h->resume = NULL;
                free(h->dels);
                h->dels = NULL;
                r = hop_replan(req, &was, c->exec ? c->exec->id : UINT32_MAX);
                free(was.resume);
                if (r < 0)
                        net_row_cmd_free(rc);
                return;
        }
        if (h->more) {
                /* RANGE: the page is full and the next row is known. */
                r = kind == HOP_RANGE ? 0 : walk_to(rc, h->resume, h->resume_len);
                if (kind == HOP_RANGE && (rc->next = h->resume)) {
                        rc->next_len = h->resume_len;
                        h->resume = NULL;
                }
        } else if (rc->last_hop) {
                free(h->resume);
                free(h->dels);
                goto reply;
        } else {
                /* A page full at a hop's end: the next hop only looks for
                 * the row past it, the cursor. */
                r = walk_to(rc, rc->hop_end, rc->hop_end_len);
                rc->pos_open = false;
        }
        free(h->resume);
        free(h->dels);
        if (r < 0) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                net_row_cmd_free(rc);
                return;
        }
        if (kind == HOP_RANGE && rc->next)
                goto reply;
        if (hop_start(req, kind) == NET_CMD_DONE)
                net_row_cmd_free(rc);       /* it replied: out of memory */
        return;
reply:
        if (kind == HOP_RANGE)
                range_reply(req);
        else
                net_resp_add_int(req->out, (int64_t)rc->n);
        net_row_cmd_free(rc);
}

/* Whether the range lies within one partition (for the rate limits, a
 * hashed table's hash prefix): a hashed table's range with bounds, which
 * share the hash (tbl_range.c). */
static bool one_partition(const struct row_cmd *rc)
{
        return rc->t->mode == ENG_CATALOG_HASHED && !rc->range.b.end_open &&
               rc->range.b.start_len >= ENG_HASH_BYTES;
}

/* Starts a walk of the range parsed into rc->range from its start. A
 * RANGE or COUNT within one partition counts as one read of it (each call,
 * so each page); a DELRANGE's deletes count as writes. */
static int walk_start(struct net_req *req, enum hop_kind kind)
{
        struct row_cmd *rc = req->info;
        const struct net_tbl_bounds *b = &rc->range.b;
        int r;

        rc->take_read = kind != HOP_DELRANGE && one_partition(rc);
        /* Forward from the range's start; in reverse down from its end. */
        rc->pos_open = rc->range.rev && b->end_open;
        if (rc->pos_open)
                r = walk_to(rc, (const uint8_t *)"", 0);
        else if (rc->range.rev)
                r = walk_to(rc, b->end, b->end_len);
        else
                r = walk_to(rc, b->start, b->start_len);
        if (r < 0) {
                net_row_cmd_free(rc);
                return net_row_reply_err(req, "out of memory");
        }
        if (kind == HOP_RANGE) {
                net_resp_out_init(&rc->rows, 4096);
                net_resp_out_set_proto(&rc->rows, req->proto);
                rc->rows_init = true;
        }
        r = hop_start(req, kind);
        if (r == NET_CMD_DONE)
                net_row_cmd_free(rc);
        return r;
}

/* ROW.RANGE (with LIMIT, REV and CURSOR), ROW.COUNT and ROW.DELRANGE
 * (bounds only): parse, then walk. */
static int range_cmd(struct net_req *req, enum hop_kind kind)
{
        struct net_tbl_limits lim = net_row_limits(req);
        char err[NET_TBL_ERR_MAX];
        struct row_cmd *rc;
        int r;

        if (net_row_cmd_new(req) < 0)
                return NET_CMD_DONE;
        rc = req->info;
        if (kind == HOP_RANGE)
                r = net_tbl_range_parse(rc->t, req->argv + 2, req->argc - 2, &lim, &rc->range, err,
                                        sizeof(err));
        else
                r = net_tbl_bounds_parse(rc->t, req->argv + 2, req->argc - 2, &lim, &rc->range.b,
                                         err, sizeof(err));
        if (r < 0) {
                net_row_cmd_free(rc);
                return net_row_reply_err(req, err);
        }
        return walk_start(req, kind);
}

int net_cmd_row_range(struct net_req *req)
{
        return range_cmd(req, HOP_RANGE);
}

int net_cmd_row_count(struct net_req *req)
{
        return range_cmd(req, HOP_COUNT);
}

int net_cmd_row_delrange(struct net_req *req)
{
        return range_cmd(req, HOP_DELRANGE);
}
