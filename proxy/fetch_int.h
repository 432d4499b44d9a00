/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fetch's state, shared by fetch.c (connections, sending, reading,
 * retries, the end) and fetch_head.c (the response's head: whether and
 * how long to store it, and the head the client gets).
 */
#ifndef SCREE_PROXY_FETCH_INT_H
#define SCREE_PROXY_FETCH_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <http_parser.h>

#include "proxy/buf.h"
#include "proxy/fields.h"
#include "proxy/list.h"

/* How the body reaches the client. */
enum px_framing {
        PX_FRAME_NONE = 0,      /* no body (HEAD, 204, 304) */
        PX_FRAME_LENGTH,        /* Content-Length, bytes as they come */
        PX_FRAME_CHUNKED,       /* re-chunked: the origin gave no length */
        PX_FRAME_CLOSE,         /* HTTP/1.0 client, no length: ends at the close */
};

#define PX_MAX_RESPONSE_HEAD (64 * 1024)

struct px_fetch {
        struct px_list link;            /* w->fetches, then w->dead_fetches */
        struct px_worker *w;
        struct px_txn *sink;            /* the request it answers; NULL once gone */
        struct px_flight *flight;       /* led, not yet published or released */
        struct px_upconn *uc;
        struct px_buf req;              /* the request to send */
        size_t req_off;
        struct px_buf key;              /* the cache key */
        unsigned first_origin, tries;
        bool idempotent, upstream_head, client_head, store;
        bool sent_any, got_any, headers_done, interim, done, paused, discard, extra, ended;
        enum px_framing framing;
        http_parser parser;
        struct px_fields rf;            /* the response's reason phrase, then its fields */
        uint32_t reason_len;
        size_t head_bytes;
        unsigned status;
        struct px_obj *obj;             /* the copy to store, NULL when not storing */
        uint32_t head_len, age_s;
        uint64_t ttl_ms, body_len;
        uint64_t t0_ns;
};

/* The response head is in (fetch_head.c): decides storing, streams the
 * client's head. 0, or -1 (the response cannot be used: 502). */
int px_fetch_head(struct px_fetch *f);

/* Stops storing f's response (too big, out of memory): its waiters
 * fetch for themselves. */
void px_fetch_drop_copy(struct px_fetch *f);

#endif
