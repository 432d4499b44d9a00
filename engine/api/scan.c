/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Range reads and range deletes (scree.h). A range walks the table's
 * tablets in key order, one hop per run of neighbouring tablets on one
 * shard, each hop a shard scan clipped to the run (stop_at_foreign: a
 * tablet that moved ends the hop, the next one is planned again). Rows
 * come back in key order whatever the layout, and a page's cursor is a
 * key position, so it stays right however the tablets lie by the next
 * page.
 *
 * Each hop is one request (req.h); its result runs scan_step on the
 * shard that answered, which plans the next hop by that shard's catalog
 * and sends it, or ends the operation: into the caller's completion
 * queue, or waking the synchronous caller. A range delete deletes each
 * hop's keys on its shard right after the hop's scan (a write of
 * tombstones, atomic per hop).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/endian.h"
#include "engine/api/req.h"
#include "engine/key.h"
#include "engine/tablet.h"

#define DEL_HOP_ROWS 1024u      /* keys a range delete deletes per hop */
#define ITER_PAGE_ROWS 256u

struct row {
        size_t koff, klen, voff, vlen;
        uint64_t expiry_ms;
};

struct scree_rows {
        size_t n, cap;
        struct row *idx;
        uint8_t *bytes;
        size_t len, bytes_cap;
        uint8_t *cursor;                /* NULL: the range is done */
        size_t cursor_len;
};

/* Positions are internal keys without the table id (shard.h, scans). */
struct scan_op {
        uint32_t table;
        bool reverse, del;
        uint32_t limit;
        uint8_t *start, *end;           /* the range's; NULL: open */
        uint32_t start_len, end_len;
        uint8_t *pos;                   /* the next hop starts (reverse: ends) here; NULL: open */
        uint32_t pos_len;
        /* the hop in flight: [hop_lo, hop_hi), each NULL when open */
        uint8_t *hop_lo, *hop_hi;
        uint32_t hop_lo_len, hop_hi_len;
        bool last_hop;
        scree_rows *rows;
        uint64_t deleted;
        struct eng_mutation *dels;      /* a range delete's hop */
        uint32_t n_dels;
        struct rx_alien_req *waiter;    /* the synchronous caller's */
        int res;
};

/* ---- rows ---- */

/* Rows a page sizes itself for at its first row, at most, and the bytes. */
#define ROWS_FIRST_MAX 1024u
#define ROWS_FIRST_MAX_BYTES (1u << 20)

/* Grows rows to take one more row of `need` bytes; `expect` rows are
 * expected in all (the page's limit): the first row sizes the page for
 * them, so a page of 100 rows is not copied over as it doubles. */
static int rows_reserve(scree_rows *rows, size_t need, uint32_t expect)
{
        uint32_t first = expect < ROWS_FIRST_MAX ? expect : ROWS_FIRST_MAX;

        if (rows->n == rows->cap) {
                size_t cap = rows->cap ? rows->cap * 2 : first > 64 ? first : 64;
                struct row *idx = realloc(rows->idx, cap * sizeof(*idx));

                if (!idx)
                        return -ENOMEM;
                rows->idx = idx;
                rows->cap = cap;
        }
        if (rows->len + need > rows->bytes_cap) {
                size_t cap = rows->bytes_cap;
                uint8_t *p;

                if (!cap)
                        cap = need * first > ROWS_FIRST_MAX_BYTES ? ROWS_FIRST_MAX_BYTES
                            : need * first > 4096 ? need * first : 4096;
                while (cap < rows->len + need)
                        cap *= 2;
                if (!(p = realloc(rows->bytes, cap)))
                        return -ENOMEM;
                rows->bytes = p;
                rows->bytes_cap = cap;
        }
        return 0;
}

static int rows_add(scree_rows *rows, const struct eng_scan_item *it, bool keys_only,
                    uint32_t expect)
{
        size_t need = it->key_len + (keys_only ? 0 : it->value_len);

        if (rows_reserve(rows, need, expect) < 0)
                return -ENOMEM;
        rows->idx[rows->n++] = (struct row){ .koff = rows->len, .klen = it->key_len,
                                             .voff = rows->len + it->key_len,
                                             .vlen = keys_only ? 0 : it->value_len,
                                             .expiry_ms = it->expiry_ms };
        memcpy(rows->bytes + rows->len, it->key, it->key_len);
        if (!keys_only)
                memcpy(rows->bytes + rows->len + it->key_len, it->value, it->value_len);
        rows->len += need;
        return 0;
}

SCREE_API size_t scree_rows_count(const scree_rows *rows)
{
        return rows ? rows->n : 0;
}

SCREE_API const void *scree_rows_key(const scree_rows *rows, size_t i, size_t *ret_len)
{
        if (!rows || i >= rows->n)
                return NULL;
        if (ret_len)
                *ret_len = rows->idx[i].klen;
        return rows->bytes + rows->idx[i].koff;
}

SCREE_API const void *scree_rows_value(const scree_rows *rows, size_t i, size_t *ret_len)
{
        if (!rows || i >= rows->n)
                return NULL;
        if (ret_len)
                *ret_len = rows->idx[i].vlen;
        return rows->bytes + rows->idx[i].voff;
}

SCREE_API uint64_t scree_rows_expiry_ms(const scree_rows *rows, size_t i)
{
        return rows && i < rows->n ? rows->idx[i].expiry_ms : 0;
}

SCREE_API const void *scree_rows_cursor(const scree_rows *rows, size_t *ret_len)
{
        if (ret_len)
                *ret_len = rows ? rows->cursor_len : 0;
        return rows ? rows->cursor : NULL;
}

SCREE_API void scree_rows_free(scree_rows *rows)
{
        if (!rows)
                return;
        free(rows->idx);
        free(rows->bytes);
        free(rows->cursor);
        free(rows);
}

/* ---- the operation's state ---- */

static void op_free(struct scan_op *op)
{
        if (!op)
                return;
        free(op->start);
        free(op->end);
        free(op->pos);
        free(op->hop_lo);
        free(op->hop_hi);
        free(op->dels);
        scree_rows_free(op->rows);
        free(op);
}

static int copy_to(uint8_t **dst, uint32_t *dst_len, const uint8_t *src, size_t len)
{
        uint8_t *p = malloc(len ? len : 1);

        if (!p)
                return -ENOMEM;
        memcpy(p, src, len);
        free(*dst);
        *dst = p;
        *dst_len = (uint32_t)len;
        return 0;
}

static void clear(uint8_t **p, uint32_t *len)
{
        free(*p);
        *p = NULL;
        *len = 0;
}

/* ---- planning a hop ---- */

/* The tablet index of position pos (len bytes) in t: 0 and *ret, or
 * -ENOMEM. */
static int route_pos(const struct eng_catalog_table *t, const uint8_t *pos, uint32_t len,
                     uint32_t *ret)
{
        uint8_t small[256], *ik = small;
        size_t n = ENG_TABLE_ID_BYTES + len;

        if (n > sizeof(small) && !(ik = malloc(n)))
                return -ENOMEM;
        be32_put(ik, t->id);
        memcpy(ik + ENG_TABLE_ID_BYTES, pos, len);
        *ret = eng_catalog_route_ikey(t, ik, n);
        if (ik != small)
                free(ik);
        return 0;
}

static const uint8_t *tablet_pos(const struct eng_catalog_table *t, uint32_t i, uint32_t *len)
{
        *len = t->tablets[i].start_len - ENG_TABLE_ID_BYTES;
        return eng_catalog_tablet_start(t, i) + ENG_TABLE_ID_BYTES;
}

/* a < b as positions; NULL a is -inf (lo) and NULL b +inf (hi). */
static int pos_cmp(const uint8_t *a, uint32_t al, const uint8_t *b, uint32_t bl)
{
        return eng_key_cmp(a, al, b, bl);
}

/* Plans the forward hop from op->pos: the shard owning it, up to the
 * first tablet of another shard or the range's end. */
static int plan_fwd(struct scan_op *op, const struct eng_catalog_table *t, unsigned *shard)
{
        uint32_t i = 0, j, hl;
        const uint8_t *h;

        if (op->pos && route_pos(t, op->pos, op->pos_len, &i) < 0)
                return -ENOMEM;
        *shard = t->tablets[i].shard;
        for (j = i + 1; j < t->n_tablets && t->tablets[j].shard == *shard; j++)
                ;
        if (op->pos ? copy_to(&op->hop_lo, &op->hop_lo_len, op->pos, op->pos_len) < 0 : 0)
                return -ENOMEM;
        if (!op->pos)
                clear(&op->hop_lo, &op->hop_lo_len);
        op->last_hop = j == t->n_tablets;
        if (!op->last_hop) {
                h = tablet_pos(t, j, &hl);
                if (op->end && pos_cmp(op->end, op->end_len, h, hl) <= 0)
                        op->last_hop = true;
                else
                        return copy_to(&op->hop_hi, &op->hop_hi_len, h, hl);
        }
        if (op->end)
                return copy_to(&op->hop_hi, &op->hop_hi_len, op->end, op->end_len);
        clear(&op->hop_hi, &op->hop_hi_len);
        return 0;
}

/* Plans the reverse hop down to op->pos (exclusive; NULL: the table's
 * end): the shard owning the last position before it, down to the first
 * tablet of another shard or the range's start. */
static int plan_rev(struct scan_op *op, const struct eng_catalog_table *t, unsigned *shard)
{
        uint32_t i = t->n_tablets - 1, j, hl;
        const uint8_t *h;

        if (op->pos) {
                if (route_pos(t, op->pos, op->pos_len, &i) < 0)
                        return -ENOMEM;
                h = tablet_pos(t, i, &hl);
                if (i > 0 && pos_cmp(op->pos, op->pos_len, h, hl) <= 0)
                        i--;
        }
        *shard = t->tablets[i].shard;
        for (j = i; j > 0 && t->tablets[j - 1].shard == *shard; j--)
                ;
        if (op->pos ? copy_to(&op->hop_hi, &op->hop_hi_len, op->pos, op->pos_len) < 0 : 0)
                return -ENOMEM;
        if (!op->pos)
                clear(&op->hop_hi, &op->hop_hi_len);
        op->last_hop = j == 0;
        if (!op->last_hop) {
                h = tablet_pos(t, j, &hl);
                if (op->start && pos_cmp(op->start, op->start_len, h, hl) >= 0)
                        op->last_hop = true;
                else
                        return copy_to(&op->hop_lo, &op->hop_lo_len, h, hl);
        }
        if (op->start)
                return copy_to(&op->hop_lo, &op->hop_lo_len, op->start, op->start_len);
        clear(&op->hop_lo, &op->hop_lo_len);
        return 0;
}

/* ---- a hop, on its shard ---- */

static int hop_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct api_req *rq = sc->ctx;
        struct scan_op *op = rq->state;

        return rows_add(op->rows, it, op->del, op->limit);
}

/* The deletes of a range delete's hop, written on the hop's shard. */
static void dels_written(struct eng_write *w, int res)
{
        struct api_req *rq = w->ctx;

        api_req_end(rq, res < 0 ? res : 0);
}

static int dels_write(struct api_req *rq, struct eng_shard *eng)
{
        struct scan_op *op = rq->state;
        scree_rows *rows = op->rows;
        int r;

        if (rows->n == 0)
                return 0;
        free(op->dels);
        op->dels = calloc(rows->n, sizeof(*op->dels));
        if (!op->dels)
                return -ENOMEM;
        for (size_t i = 0; i < rows->n; i++)
                op->dels[i] = (struct eng_mutation){ .kind = ENG_MUT_DEL, .table = op->table,
                                                     .key = rows->bytes + rows->idx[i].koff,
                                                     .key_len = (uint32_t)rows->idx[i].klen };
        op->n_dels = (uint32_t)rows->n;
        rq->u.w = (struct eng_write){ .done = dels_written, .ctx = rq };
        r = eng_shard_write(eng, op->dels, op->n_dels, &rq->u.w);
        return r == 0 ? 1 : r == 1 ? 0 : r;
}

/* The hop's scan ended (res): the next position, then a delete's writes. */
static void hop_scanned(struct api_req *rq, int res)
{
        struct scan_op *op = rq->state;
        struct eng_scan *sc = &rq->u.sc;
        struct eng_shard *eng = api_engine_of(rq->loop);

        if (res == 0 && sc->more) {
                /* forward: the next entry's position (inclusive); reverse:
                 * the last given (the next hop's exclusive end) -- or the
                 * bound of a tablet that moved away. */
                res = copy_to(&op->pos, &op->pos_len, sc->resume, sc->resume_len);
                op->last_hop = false;
        } else if (res == 0) {
                /* this hop is done: the next starts at its far end */
                uint8_t *far = op->reverse ? op->hop_lo : op->hop_hi;
                uint32_t far_len = op->reverse ? op->hop_lo_len : op->hop_hi_len;

                if (far)
                        res = copy_to(&op->pos, &op->pos_len, far, far_len);
                else
                        clear(&op->pos, &op->pos_len);
        }
        eng_scan_release(sc);
        if (res == 0 && op->del && eng && (res = dels_write(rq, eng)) == 1)
                return;         /* dels_written ends it */
        api_req_end(rq, res);
}

static void hop_done(struct eng_scan *sc, int res)
{
        hop_scanned(sc->ctx, res);
}

static void hop_run(struct rx_loop *loop, struct rx_alien_req *ar)
{
        struct api_req *rq = container_of(ar, struct api_req, ar);
        struct scan_op *op = rq->state;
        struct eng_shard *eng = api_engine_of(loop);
        uint32_t want = op->limit - (uint32_t)op->rows->n;
        int r;

        rq->loop = loop;
        if (!eng) {
                api_req_end(rq, -SCREE_ESHUTDOWN);
                return;
        }
        rq->u.sc = (struct eng_scan){ .item = hop_item, .done = hop_done, .ctx = rq,
                                      .reverse = op->reverse, .stop_at_foreign = true };
        r = eng_shard_scan(eng, op->table, op->hop_lo, op->hop_lo_len, op->hop_hi,
                           op->hop_hi_len, want, &rq->u.sc);
        if (r == 1)
                return;
        hop_scanned(rq, r);
}

/* ---- stepping from hop to hop ---- */

static void op_end(struct api_req *rq, int res);

/* Plans and sends the next hop by catalog c. 0 or <0. */
static int hop_send(struct api_req *rq, const struct eng_catalog *c)
{
        struct scan_op *op = rq->state;
        const struct eng_catalog_table *t;
        unsigned shard;
        int r;

        if (eng_catalog_table_by_id(c, op->table, &t) < 0)
                return -SCREE_ENOTFOUND;
        r = op->reverse ? plan_rev(op, t, &shard) : plan_fwd(op, t, &shard);
        if (r < 0)
                return r;
        rq->run = hop_run;
        return api_req_send(rq, shard);
}

/* Whether the walk is over: the last hop ended without more, or the
 * position passed the range's far bound. */
static bool walk_over(const struct scan_op *op)
{
        if (!op->pos)
                return true;
        if (op->reverse)
                return op->start && pos_cmp(op->pos, op->pos_len, op->start, op->start_len) <= 0;
        return op->end && pos_cmp(op->pos, op->pos_len, op->end, op->end_len) >= 0;
}

/* A hop's result, on the shard that answered it (or the closing thread). */
static void scan_step(struct api_req *rq, int res)
{
        struct scan_op *op = rq->state;
        struct eng_shard *eng = rq->loop ? api_engine_of(rq->loop) : NULL;

        if (res < 0 || !eng) {
                op_end(rq, res < 0 ? res : -SCREE_ESHUTDOWN);
                return;
        }
        if (op->del) {
                op->deleted += op->rows->n;
                op->rows->n = 0;
                op->rows->len = 0;
        }
        if (walk_over(op) || (!op->del && op->rows->n >= op->limit)) {
                op_end(rq, 0);
                return;
        }
        res = hop_send(rq, eng_shard_catalog(eng));
        if (res < 0)
                op_end(rq, res);
}

/* The page's cursor: where the next page starts, unless the walk is over. */
static int cursor_set(struct scan_op *op)
{
        scree_rows *rows = op->rows;

        if (walk_over(op))
                return 0;
        rows->cursor = malloc(op->pos_len ? op->pos_len : 1);
        if (!rows->cursor)
                return -ENOMEM;
        memcpy(rows->cursor, op->pos, op->pos_len);
        rows->cursor_len = op->pos_len;
        return 0;
}

static void op_end(struct api_req *rq, int res)
{
        struct scan_op *op = rq->state;

        if (res == 0 && !op->del)
                res = cursor_set(op);
        op->res = res;
        if (op->waiter) {
                rx_alien_complete(op->waiter, res);
                return;
        }
        api_cq_deliver(rq, res);
}

/* The completion's results, on the queue's thread. */
static void op_finish(struct api_req *rq, scree_completion *c)
{
        struct scan_op *op = rq->state;

        if (c->res == 0 && !op->del) {
                c->rows = op->rows;
                op->rows = NULL;
        }
        c->count = op->deleted;
        op_free(op);
}

/* ---- starting ---- */

/* A bound's position in t (hashed: its hash, then the key). */
static int bound_pos(const struct eng_catalog_table *t, const void *key, size_t len,
                     uint8_t **ret, uint32_t *ret_len)
{
        size_t n = eng_catalog_ikey_size(t, len);
        uint8_t *ik = malloc(n);
        long got;
        int r;

        if (!ik)
                return -ENOMEM;
        got = eng_catalog_ikey_encode(t, key, len, ik);
        if (got < 0) {
                free(ik);
                return api_fail(-EINVAL, "a bound of a table hashed on %u part(s) needs them whole",
                                t->hash_parts);
        }
        r = copy_to(ret, ret_len, ik + ENG_TABLE_ID_BYTES, (size_t)got - ENG_TABLE_ID_BYTES);
        free(ik);
        return r;
}

static int bounds_set(struct scan_op *op, const struct eng_catalog_table *t, const scree_range *r)
{
        int res;

        if ((r->start && !r->start_len) || (r->end && !r->end_len) ||
            r->start_len > ENG_MAX_USER_KEY_BYTES || r->end_len > ENG_MAX_USER_KEY_BYTES)
                return api_fail(-EINVAL, "a bound is 1 to %u bytes, or NULL",
                                ENG_MAX_USER_KEY_BYTES);
        if (t->mode == ENG_CATALOG_HASHED && (!r->start != !r->end))
                return api_fail(-EINVAL, "a range of a hashed table gives both bounds (within "
                                "one value of its hash parts) or neither");
        if (r->start && (res = bound_pos(t, r->start, r->start_len, &op->start, &op->start_len)) < 0)
                return res;
        if (r->end && (res = bound_pos(t, r->end, r->end_len, &op->end, &op->end_len)) < 0)
                return res;
        if (t->mode == ENG_CATALOG_HASHED && op->start && memcmp(op->start, op->end, 8) != 0)
                return api_fail(-EINVAL, "the bounds of a range of a hashed table begin with the "
                                "same hash parts");
        return 0;
}

static int op_new(scree_table *tbl, const scree_range *r, const void *cursor, size_t cursor_len,
                  uint32_t limit, bool del, struct scan_op **ret)
{
        const struct eng_catalog_table *t;
        struct scan_op *op = NULL;
        const uint8_t *from;
        uint32_t from_len;
        int res;

        if (!tbl || !r || (!del && limit == 0))
                return api_fail(-EINVAL, "a range read needs a table, a range and a limit of 1 or "
                                "more");
        if (cursor_len > ENG_MAX_USER_KEY_BYTES + 8 || (cursor && !cursor_len) ||
            (!cursor && cursor_len))
                return api_fail(-EINVAL, "not a cursor of this range");
        if (eng_catalog_table_by_id(api_catalog(tbl->db), tbl->id, &t) < 0)
                return api_fail(-SCREE_ENOTFOUND, "the table was dropped");
        op = calloc(1, sizeof(*op));
        if (!op || !(op->rows = calloc(1, sizeof(*op->rows)))) {
                free(op);
                return api_fail(-ENOMEM, "out of memory");
        }
        op->table = tbl->id;
        op->reverse = r->reverse && !del;
        op->del = del;
        op->limit = del ? DEL_HOP_ROWS : limit;
        res = bounds_set(op, t, r);
        from = cursor ? cursor : op->reverse ? op->end : op->start;
        from_len = cursor ? (uint32_t)cursor_len : op->reverse ? op->end_len : op->start_len;
        if (res == 0 && from)
                res = copy_to(&op->pos, &op->pos_len, from, from_len);
        if (res < 0) {
                op_free(op);
                return res == -ENOMEM ? api_fail(res, "out of memory") : res;
        }
        *ret = op;
        return 0;
}

/* Runs op (kind) to its end on the shards, the caller waiting. 0 or <0
 * with its message. */
static int op_run_sync(scree_table *t, struct scan_op *op, enum api_op kind)
{
        struct rx_alien_req waiter = { 0 };     /* a one-shot event: never submitted */
        struct api_req rq = { .db = t->db, .op = kind, .state = op, .step = scan_step };
        int r;

        op->waiter = &waiter;
        r = hop_send(&rq, api_catalog(t->db));
        if (r == 0)
                r = (int)rx_alien_wait(&waiter);
        if (r < 0)
                api_fail(r, "%s", api_res_message(kind, r));
        return r;
}

SCREE_API int scree_scan(scree_table *t, const scree_range *r, const void *cursor,
                         size_t cursor_len, uint32_t limit, scree_rows **ret)
{
        struct scan_op *op = NULL;
        int res;

        if (!ret)
                return api_fail(-EINVAL, "scree_scan needs somewhere to put the rows");
        if ((res = api_off_shard()) < 0 ||
            (res = op_new(t, r, cursor, cursor_len, limit, false, &op)) < 0)
                return res;
        if (!op)        /* never (op_new set it): for the compiler */
                return api_fail(-ENOMEM, "out of memory");
        res = op_run_sync(t, op, API_OP_SCAN);
        if (res == 0) {
                *ret = op->rows;
                op->rows = NULL;
        }
        op_free(op);
        return res;
}

SCREE_API int scree_delete_range(scree_table *t, const scree_range *r, uint64_t *ret_deleted)
{
        struct scan_op *op = NULL;
        int res;

        if ((res = api_off_shard()) < 0 || (res = op_new(t, r, NULL, 0, 0, true, &op)) < 0)
                return res;
        if (!op)        /* never (op_new set it): for the compiler */
                return api_fail(-ENOMEM, "out of memory");
        res = op_run_sync(t, op, API_OP_DELETE_RANGE);
        if (ret_deleted)
                *ret_deleted = op->deleted;
        op_free(op);
        return res;
}

static int op_start_async(scree_cq *q, scree_table *t, struct scan_op *op, enum api_op kind,
                          void *tag)
{
        struct api_req *rq = calloc(1, sizeof(*rq));
        int r;

        if (!rq) {
                op_free(op);
                return api_fail(-ENOMEM, "out of memory");
        }
        *rq = (struct api_req){ .db = t->db, .op = kind, .cq = q, .tag = tag, .state = op,
                                .step = scan_step, .finish = op_finish };
        r = hop_send(rq, api_catalog(t->db));
        if (r < 0) {
                op_free(op);
                free(rq);
                return api_fail(r, "%s", api_res_message(kind, r));
        }
        api_cq_submitted(q);
        return 0;
}

SCREE_API int scree_scan_async(scree_cq *q, scree_table *t, const scree_range *r,
                               const void *cursor, size_t cursor_len, uint32_t limit, void *tag)
{
        struct scan_op *op = NULL;
        int res;

        if (!q)
                return api_fail(-EINVAL, "no completion queue");
        if ((res = op_new(t, r, cursor, cursor_len, limit, false, &op)) < 0)
                return res;
        return op_start_async(q, t, op, API_OP_SCAN, tag);
}

SCREE_API int scree_delete_range_async(scree_cq *q, scree_table *t, const scree_range *r,
                                       void *tag)
{
        struct scan_op *op = NULL;
        int res;

        if (!q)
                return api_fail(-EINVAL, "no completion queue");
        if ((res = op_new(t, r, NULL, 0, 0, true, &op)) < 0)
                return res;
        return op_start_async(q, t, op, API_OP_DELETE_RANGE, tag);
}

/* ---- iterators ---- */

struct scree_iter {
        scree_table *t;
        scree_range r;
        uint8_t *bounds;                /* r's start and end, copied */
        scree_rows *page;
        size_t at;                      /* the current row + 1 in page */
        bool done;
};

SCREE_API int scree_iter_new(scree_table *t, const scree_range *r, scree_iter **ret)
{
        scree_iter *it;

        if (!t || !r || !ret)
                return api_fail(-EINVAL, "an iterator needs a table, a range and somewhere to put "
                                "it");
        it = calloc(1, sizeof(*it));
        if (!it || !(it->bounds = malloc(r->start_len + r->end_len + 1))) {
                free(it);
                return api_fail(-ENOMEM, "out of memory");
        }
        it->t = t;
        it->r = *r;
        if (r->start) {
                memcpy(it->bounds, r->start, r->start_len);
                it->r.start = it->bounds;
        }
        if (r->end) {
                memcpy(it->bounds + r->start_len, r->end, r->end_len);
                it->r.end = it->bounds + r->start_len;
        }
        *ret = it;
        return 0;
}

SCREE_API int scree_iter_next(scree_iter *it)
{
        if (!it)
                return api_fail(-EINVAL, "no iterator");
        while (!it->done) {
                scree_rows *next = NULL;
                const void *cur;
                size_t cur_len = 0;
                int r;

                if (it->page && it->at < it->page->n) {
                        it->at++;
                        return 1;
                }
                cur = it->page ? scree_rows_cursor(it->page, &cur_len) : NULL;
                if (it->page && !cur) {
                        it->done = true;
                        break;
                }
                r = scree_scan(it->t, &it->r, cur, cur_len, ITER_PAGE_ROWS, &next);
                scree_rows_free(it->page);
                it->page = next;
                it->at = 0;
                if (r < 0) {
                        it->done = true;
                        return r;
                }
        }
        return 0;
}

SCREE_API const void *scree_iter_key(const scree_iter *it, size_t *ret_len)
{
        if (!it || !it->page || it->at == 0)
                return NULL;
        return scree_rows_key(it->page, it->at - 1, ret_len);
}

SCREE_API const void *scree_iter_value(const scree_iter *it, size_t *ret_len)
{
        if (!it || !it->page || it->at == 0)
                return NULL;
        return scree_rows_value(it->page, it->at - 1, ret_len);
}

SCREE_API void scree_iter_free(scree_iter *it)
{
        if (!it)
                return;
        scree_rows_free(it->page);
        free(it->bounds);
        free(it);
}
