/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Client connections (docs/proxy.md, "Connections"): reading and parsing
 * requests (several at once when pipelined, up to PX_PIPELINE_MAX
 * queued), writing their responses in order -- every ready response at
 * the head of the queue in one writev -- and the timeouts: a request's
 * headers must arrive within --header-timeout (its body may pause at
 * most that long between reads), an idle keep-alive connection or one
 * whose client stopped reading lives --idle-timeout. After a last
 * response (Connection: close, HTTP/1.0, an error) the connection shuts
 * its sending side and reads what the client still sends for up to
 * PX_LINGER_NS before closing, so the client gets the response rather
 * than a reset. Worker thread only.
 */
#ifndef SCREE_PROXY_CONN_H
#define SCREE_PROXY_CONN_H

#include <stdbool.h>
#include <stdint.h>

struct px_conn;
struct px_worker;
struct sockaddr_storage;

/* Takes accepted socket fd (peer its address) into w; metrics: a
 * connection to the metrics port. On failure fd is closed. */
void px_conn_new(struct px_worker *w, int fd, const struct sockaddr_storage *peer, bool metrics);

/* An epoll event for c. */
void px_conn_on_event(struct px_conn *c, uint32_t events);

/* Queues c for writing at the end of this pass (no-op once closed). */
void px_conn_want_flush(struct px_conn *c);

/* Writes every queued connection's ready responses. */
void px_conn_flush_all(struct px_worker *w);

/* The head of c's queue changed state: starts its fetch if it waits for
 * one, and resumes reading if the queue has room again. */
void px_conn_advance(struct px_conn *c);

/* Closes c now: its requests are dropped (those with an operation in
 * flight are freed when it is back). Freed by px_conn_reap. */
void px_conn_abort(struct px_conn *c);

/* Closes every connection of w. */
void px_conn_close_all(struct px_worker *w);

/* Frees the connections closed during this pass, and the fetches and
 * origin connections that ended. */
void px_conn_reap(struct px_worker *w);

/* For request.c's callbacks: a request starts (0, or -1 with
 * c->err_status), its body advances, it is complete (0 or -1). */
int px_conn_request_begin(struct px_conn *c);
void px_conn_body_progress(struct px_conn *c);
int px_conn_request_end(struct px_conn *c);

#endif
