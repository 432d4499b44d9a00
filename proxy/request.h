/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client requests: http_parser's callbacks that fill the request being
 * parsed on a connection (c->cur), the checks made once its headers are
 * in (limits, Host, the headers that decide caching), and the request
 * sent to the origin for it (docs/proxy.md, "Requests").
 *
 * Limits: the request line and headers together at most --max-header
 * bytes and PX_MAX_HEADERS fields (431), a body at most --max-body bytes
 * (413, as soon as Content-Length says so), a Host in HTTP/1.1 (400).
 * Worker thread only.
 */
#ifndef SCREE_PROXY_REQUEST_H
#define SCREE_PROXY_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include <http_parser.h>

struct px_buf;
struct px_req;

/* The callbacks for a connection's parser (parser.data is the conn). */
extern const http_parser_settings px_req_settings;

/* The request's target (path and query) as keyed, len in *ret_len. */
const char *px_req_target(const struct px_req *r, size_t *ret_len);

/*
 * Appends to out the request to send the origin for r: method (may
 * differ from r's: a HEAD fetched as GET to be stored), the target, Host,
 * r's end-to-end headers (hop-by-hop ones and those Connection names
 * dropped; with for_store also the conditional and Range ones, so the
 * origin answers in full), X-Forwarded-For with peer added, and r's body
 * with its length. 0 or -ENOMEM.
 */
int px_req_upstream(const struct px_req *r, unsigned method, bool for_store, const char *peer,
                    struct px_buf *out);

/* Empties r for another request, keeping some memory; frees it all. */
void px_req_reset(struct px_req *r);
void px_req_fini(struct px_req *r);

#endif
