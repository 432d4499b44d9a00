/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Responses (docs/proxy.md, "Responses"): from a stored object (a hit, or
 * a collapsed request answered from another's fetch) as iovecs pointing
 * into the object, with the proxy's lines (Age, X-Cache, Content-Length,
 * Connection) in between; a 304 when a conditional request matches it;
 * the proxy's own short texts (errors, PURGE, /metrics); and the bytes a
 * fetch streams. Each leaves the txn READY (or STREAM) and its
 * connection queued for writing. Worker thread only.
 */
#ifndef SCREE_PROXY_RESPOND_H
#define SCREE_PROXY_RESPOND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct px_txn;

#define PX_NO_AGE UINT64_MAX

/*
 * Answers t from a stored response (data, len: borrowed, kept alive by
 * the caller until t is freed -- t->value or t->obj). 0, or -EINVAL when
 * the bytes are not a stored response (nothing done).
 */
int px_respond_object(struct px_txn *t, const void *data, size_t len);

/* Answers t with status and a body (copied) of type ctype (NULL:
 * text/plain). */
void px_respond_text(struct px_txn *t, unsigned status, const char *ctype, const char *body,
                     size_t len);

/* Answers t with status and its reason as text. */
void px_respond_error(struct px_txn *t, unsigned status);

/*
 * Writes the proxy's lines for t's response into dst (cap bytes): Age
 * (age_s; none for PX_NO_AGE), X-Cache (unless t has none), and Connection when the client
 * needs told (close, or keep-alive to HTTP/1.0). Returns the length.
 */
size_t px_respond_lines(const struct px_txn *t, char *dst, size_t cap, uint64_t age_s);

/* Appends streamed bytes (copied) to t's output; t becomes STREAM. 0 or
 * -ENOMEM. */
int px_stream_add(struct px_txn *t, const void *p, size_t n);

/* The stream is complete (ok) or broken (the connection is closed once
 * what was streamed is written). */
void px_stream_end(struct px_txn *t, bool ok);

/* Bytes streamed to t not yet written. */
size_t px_stream_unsent(const struct px_txn *t);

#endif
