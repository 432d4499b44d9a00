/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Transactions (txn.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/conn.h"
#include "proxy/fetch.h"
#include "proxy/flight.h"
#include "proxy/object.h"
#include "proxy/proxy_int.h"
#include "proxy/request.h"
#include "proxy/respond.h"
#include "proxy/txn.h"

#define TXN_RECYCLE 256

struct px_txn *px_txn_new(struct px_worker *w, struct px_conn *c)
{
        struct px_txn *t = w->txn_free;

        if (t) {
                w->txn_free = t->next;
                w->n_txn_free--;
        } else {
                t = calloc(1, sizeof(*t));
                if (!t)
                        return NULL;
        }
        t->next = NULL;
        t->conn = c;
        t->w = w;
        t->state = PX_TXN_PARSING;
        return t;
}

/* Zeroes t but for the memory of its buffers. */
static void clear(struct px_txn *t)
{
        struct px_req req = t->req;
        struct px_buf out = t->out;

        px_req_reset(&req);
        if (out.cap > 64 * 1024)
                px_buf_free(&out);
        out.len = 0;
        memset(t, 0, sizeof(*t));
        t->req = req;
        t->out = out;
}

void px_txn_free(struct px_txn *t)
{
        struct px_worker *w = t->w;

        if (t->fetch)
                px_fetch_detach(t->fetch);
        if (t->wait) {
                t->wait->txn = NULL;    /* its record comes back through the inbox */
                PX_STAT_DEC(w->stats.waiting);
        }
        scree_value_free(t->value);
        px_obj_unref(t->obj);
        if (w->n_txn_free < TXN_RECYCLE) {
                clear(t);
                t->next = w->txn_free;
                w->txn_free = t;
                w->n_txn_free++;
                return;
        }
        px_req_fini(&t->req);
        px_buf_free(&t->out);
        free(t);
}

void px_txn_orphan(struct px_txn *t)
{
        t->conn = NULL;
        t->next = NULL;
        if (!t->op_inflight)
                px_txn_free(t);
}

void px_txn_cache_free(struct px_worker *w)
{
        while (w->txn_free) {
                struct px_txn *t = w->txn_free;

                w->txn_free = t->next;
                px_req_fini(&t->req);
                px_buf_free(&t->out);
                free(t);
        }
        w->n_txn_free = 0;
}

/* ---- starting ---- */

/* To the origin when t reaches the head; store: its response may be
 * stored (a no-cache refresh). */
static void bypass(struct px_txn *t, bool store)
{
        t->xcache = PX_X_BYPASS;
        t->store = store;
        t->state = PX_TXN_FETCH;
        PX_STAT_INC(t->w->stats.bypasses);
        if (t == t->conn->head)
                px_conn_advance(t->conn);
}

static void lookup(struct px_txn *t)
{
        struct px_worker *w = t->w;
        int r = scree_get_async(w->cq, w->sh->table, t->req.key.p, t->req.key.len, t);

        if (r < 0) {
                /* A key the table refuses (too long): uncached. */
                PX_STAT_INC(w->stats.cache_errors);
                bypass(t, false);
                return;
        }
        t->cacheable = t->store = t->collapse = true;
        t->op_inflight = true;
        t->state = PX_TXN_LOOKUP;
}

static void purge(struct px_txn *t)
{
        struct px_worker *w = t->w;
        const struct px_buf *k = &t->req.key;
        size_t tlen;
        const char *target = px_req_target(&t->req, &tlen);
        bool prefix = tlen > 0 && target[tlen - 1] == '*';
        scree_range rg = { .start = k->p, .start_len = prefix ? k->len - 1 : k->len };

        PX_STAT_INC(w->stats.purges);
        if (!t->conn->purge_ok) {
                px_respond_error(t, 403);
                return;
        }
        t->out.len = 0;
        if (px_buf_reserve(&t->out, k->len + 1) < 0) {
                px_respond_error(t, 503);
                return;
        }
        if (prefix) {
                rg.end_len = px_key_successor(k->p, rg.start_len, t->out.p);
        } else {
                memcpy(t->out.p, k->p, k->len);
                t->out.p[k->len] = 0;   /* key 0x00: the first key after key */
                rg.end_len = k->len + 1;
        }
        rg.end = rg.end_len ? t->out.p : NULL;
        if (scree_delete_range_async(w->cq, w->sh->table, &rg, t) < 0) {
                px_respond_error(t, 500);
                return;
        }
        t->op_inflight = true;
        t->state = PX_TXN_PURGE;
}

static void metrics_answer(struct px_txn *t)
{
        size_t tlen;
        const char *target = px_req_target(&t->req, &tlen);
        struct px_buf b = { 0 };

        if (t->req.method != HTTP_GET && t->req.method != HTTP_HEAD) {
                px_respond_error(t, 405);
                return;
        }
        if (tlen < 8 || memcmp(target, "/metrics", 8) != 0 || (tlen > 8 && target[8] != '?')) {
                px_respond_error(t, 404);
                return;
        }
        if (px_metrics_render(t->w->sh, &b) < 0)
                px_respond_error(t, 503);
        else
                px_respond_text(t, 200, "text/plain; version=0.0.4; charset=utf-8", b.p, b.len);
        px_buf_free(&b);
}

void px_txn_start(struct px_txn *t)
{
        const struct px_req *r = &t->req;

        if (t->conn->metrics)
                metrics_answer(t);
        else if (r->method == HTTP_PURGE)
                purge(t);
        else if (r->method != HTTP_GET && r->method != HTTP_HEAD)
                bypass(t, false);
        else if (r->flags & (PX_REQ_NO_STORE | PX_REQ_AUTH | PX_REQ_RANGE))
                bypass(t, false);
        else if (r->flags & PX_REQ_NO_CACHE)
                bypass(t, true);
        else
                lookup(t);
}

/* ---- misses ---- */

static void start_fetch(struct px_txn *t, struct px_flight *lead)
{
        struct px_worker *w = t->w;

        if (t->xcache == PX_X_MISS)
                PX_STAT_INC(w->stats.misses);
        if (px_fetch_start(t, lead) < 0) {
                if (lead)
                        px_flight_release(w->sh->flights, lead, PX_FLIGHT_RETRY, 0, w);
                px_respond_error(t, 503);
        }
}

/* Answers t from obj (a reference t now holds), as a collapsed request. */
static void answer_collapsed(struct px_txn *t, struct px_obj *obj)
{
        t->obj = obj;
        t->xcache = PX_X_HIT;
        if (px_respond_object(t, obj->data, obj->len) < 0) {
                px_respond_error(t, 502);
                return;
        }
        PX_STAT_INC(t->w->stats.collapsed);
}

void px_txn_fetch(struct px_txn *t)
{
        struct px_worker *w = t->w;
        struct px_flight *lead = NULL;
        struct px_obj *obj = NULL;
        struct px_wait *wt;
        int r;

        if (t->relookup) {
                t->relookup = false;
                lookup(t);
                return;
        }
        if (!t->collapse) {
                start_fetch(t, NULL);
                return;
        }
        wt = malloc(sizeof(*wt));
        if (!wt) {
                px_respond_error(t, 503);
                return;
        }
        *wt = (struct px_wait){ .w = w, .txn = t };
        r = px_flight_join(w->sh->flights, t->req.key.p, t->req.key.len, wt, &lead, &obj);
        if (r == PX_JOIN_WAIT) {
                t->wait = wt;
                t->state = PX_TXN_WAIT;
                PX_STAT_INC(w->stats.waiting);
                return;
        }
        free(wt);
        if (r == PX_JOIN_LEAD)
                start_fetch(t, lead);
        else if (r == PX_JOIN_OBJECT)
                answer_collapsed(t, obj);
        else
                px_respond_error(t, 503);
}

void px_txn_on_flight(struct px_worker *w, struct px_wait *wt)
{
        struct px_txn *t = wt->txn;

        if (!t) {
                px_obj_unref(wt->obj);
                free(wt);
                return;
        }
        t->wait = NULL;
        PX_STAT_DEC(w->stats.waiting);
        if (wt->outcome == PX_FLIGHT_OBJECT) {
                answer_collapsed(t, wt->obj);
        } else if (wt->outcome == PX_FLIGHT_ERROR) {
                px_respond_error(t, wt->status);
        } else {
                /* Not shareable: fetch it alone (t is its queue's head). */
                t->collapse = false;
                t->state = PX_TXN_FETCH;
                px_conn_advance(t->conn);
        }
        free(wt);
}

/* ---- completions ---- */

static void lookup_done(struct px_txn *t, int res, scree_value *value)
{
        struct px_worker *w = t->w;

        t->op_inflight = false;
        if (!t->conn) {
                scree_value_free(value);
                px_txn_free(t);
                return;
        }
        if (res == 0) {
                t->value = value;
                t->xcache = PX_X_HIT;
                if (px_respond_object(t, scree_value_data(value), scree_value_len(value)) == 0) {
                        PX_STAT_INC(w->stats.hits);
                        return;
                }
                scree_value_free(value);        /* not a stored response: refetch it */
                t->value = NULL;
                PX_STAT_INC(w->stats.cache_errors);
        } else if (res != -SCREE_ENOTFOUND) {
                PX_STAT_INC(w->stats.cache_errors);
        }
        t->xcache = PX_X_MISS;
        t->state = PX_TXN_FETCH;
        if (t == t->conn->head)
                px_conn_advance(t->conn);
        else
                t->relookup = res == -SCREE_ENOTFOUND; /* a request ahead may fetch it */
}

static void purge_done(struct px_txn *t, int res, uint64_t count)
{
        size_t tlen;
        const char *target;
        char body[64];
        int n;

        t->op_inflight = false;
        if (!t->conn) {
                px_txn_free(t);
                return;
        }
        if (res < 0) {
                px_respond_error(t, 500);
                return;
        }
        PX_STAT_ADD(t->w->stats.purged, count);
        target = px_req_target(&t->req, &tlen);
        if (count == 0 && !(tlen > 0 && target[tlen - 1] == '*')) {
                px_respond_text(t, 404, NULL, "not cached\n", 11);
                return;
        }
        n = snprintf(body, sizeof(body), "purged %llu\n", (unsigned long long)count);
        px_respond_text(t, 200, NULL, body, (size_t)n);
}

void px_txn_on_cq(struct px_worker *w, const scree_completion *c)
{
        switch (c->op) {
        case SCREE_OP_GET:
                lookup_done(c->tag, c->res, c->value);
                break;
        case SCREE_OP_DELETE_RANGE:
                purge_done(c->tag, c->res, c->count);
                break;
        case SCREE_OP_PUT:
                px_fetch_on_stored(w, c);
                break;
        default:
                break;
        }
}
