/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A client connection: lives on the shard that accepted it and is
 * touched only there. It receives into a 16 KiB buffer (one recv in
 * flight at most), parses commands with net_resp_parse (a command that
 * spans receives is held by the parser, bounded by its limits), turns
 * each into a request (cmd.h) queued FIFO on the connection, and sends
 * what the replies wrote into its net_resp_out with one sendmsg at a time.
 *
 * Pipeline order: the request at the head of the queue writes straight
 * into the connection's output; a request behind it, or one running on
 * another shard, writes into its own buffer, appended when it reaches
 * the head. Backpressure: while the unsent output, the replies waiting
 * behind the head and the replies expected from the requests in flight
 * (their count times a running estimate of one reply's size) are over
 * NET_CONN_MAX_OUT_BYTES, or the queue is over its limit, the connection
 * stops parsing and receiving; it resumes once they drain.
 *
 * Client memory (maxmemory-clients): each connection counts what it holds
 * beyond its fixed buffers -- unsent output, finished replies waiting
 * behind the head, the parser's partial command, the MULTI queue -- into
 * its shard's total (no shared counter: each shard has the share
 * limit / shards of the whole). Past that share the shard closes the
 * connection holding the most, and counts it (INFO evicted_clients);
 * a connection with CLIENT NO-EVICT on counts but is never the one closed.
 *
 * CLIENT REPLY OFF|SKIP: the reply of a muted command is still made (in
 * its request's own buffer, so pipeline order holds) and dropped when it
 * reaches the head instead of being sent.
 *
 * Closing (peer gone, QUIT, protocol error, server stop): no new command
 * is parsed; the connection is freed once no recv or send is in flight
 * and every request has come back (requests on other shards reply to a
 * live connection, always).
 */
#ifndef SCREE_NET_CONN_H
#define SCREE_NET_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net/resp_parse.h"
#include "net/resp_write.h"
#include "reactor/io.h"

struct net_req;
struct net_shard;

#define NET_CONN_RECV_BYTES (16u << 10)
#define NET_CONN_MAX_OUT_BYTES (1u << 20)       /* stop reading above this backlog */
#define NET_CONN_MAX_QUEUED 256u                /* requests waiting for a reply */
/* The first estimate of a reply's size: a new connection has at most four
 * requests in flight elsewhere until its replies show they are small. */
#define NET_CONN_REPLY_EST_BYTES (256u << 10)
#define NET_CONN_IOV 64

struct net_conn {
        struct net_conn *prev, *next;   /* the shard's list */
        struct net_shard *sh;
        int fd;
        uint64_t id;
        struct rx_op recv_op, send_op;
        char *ibuf;                     /* NET_CONN_RECV_BYTES */
        size_t ipos, ilen;              /* unparsed bytes: ibuf[ipos..ilen) */
        struct net_resp_parser parser;
        struct net_resp_out out;
        struct iovec iov[NET_CONN_IOV];
        struct msghdr msg;
        struct net_req *q_head, *q_tail;
        uint32_t n_queued;
        size_t held_bytes;              /* replies of finished requests behind the head */
        size_t reply_est;               /* running estimate of one reply's bytes */
        size_t mem_counted;             /* what sh->client_mem_bytes holds for c */
        uint8_t proto;                  /* 2 or 3 */
        uint8_t db;                     /* SELECTed database, 0..NET_DBS-1 */
        bool recv_busy, send_busy;
        bool authed;
        bool eof;                       /* the peer closed its side */
        bool closing;                   /* no more input; free when idle */
        bool in_input;                  /* inside the parse loop (no re-entry, no free) */
        /* CLIENT REPLY (cmd_client.c): OFF, or SKIP for the next command;
         * mute: the command being dispatched gets no reply */
        bool reply_off, reply_skip, mute;
        bool no_evict;                  /* CLIENT NO-EVICT on: never closed for maxmemory-clients */
        size_t cmd_wire_bytes;          /* the command being dispatched, as received */
        bool keep_open;                 /* the socket outlives c (net_conn_keep_open) */
        char *name;                     /* CLIENT SETNAME; heap or NULL */
        char *lib_name, *lib_ver;       /* CLIENT SETINFO */
        uint64_t created_ms;
        uint64_t last_ms;               /* last input (CLIENT LIST idle=, --timeout); coarse */
        uint64_t input_ns;              /* time_now_ns() when the current input arrived:
                                         * the start of every command parsed from it */
        char addr[56], laddr[56];       /* "ip:port" of the peer and of our side */
        char last_cmd[40];              /* CLIENT LIST cmd=: "get", "client|list" */
        /* transactions (cmd_multi.c) */
        struct net_req *barrier;        /* running; nothing after it is parsed until done */
        bool in_multi, multi_dirty;
        struct net_req *mq_head, *mq_tail;      /* commands queued by MULTI */
        uint32_t n_mq;
        size_t mq_bytes;                /* memory of the queued commands */
        struct net_watch *watch;        /* WATCHed keys */
        uint32_t n_watch, cap_watch;
};

#define NET_CONN_LINE_MAX 1024

/*
 * Writes c's CLIENT LIST line (with its '\n') into buf (NET_CONN_LINE_MAX
 * bytes) and returns its length: Redis 7.0's fields in its order. asker
 * (borrowed; may be NULL) is the request of the CLIENT LIST or INFO: when
 * it is c's own, qbuf counts its bytes, as Redis's query buffer still holds
 * the command it runs. Shard-local.
 */
size_t net_conn_describe(const struct net_conn *c, const struct net_req *asker, uint64_t now_ms,
                         char *buf);

/* Closes every connection of sh idle for timeout_ms or more with no
 * request in flight (--timeout). Returns how many. Shard-local. */
unsigned net_conn_sweep_idle(struct net_shard *sh, uint64_t now_ms, uint64_t timeout_ms);

/* Starts serving fd (taken) on shard sh. On -ENOMEM fd is closed. Shard-local. */
int net_conn_open(struct net_shard *sh, int fd);

/* Starts closing c (server stop): see above. Shard-local. */
void net_conn_close(struct net_conn *c);

/* Called when request req of c finished (its reply is written). Shard-local. */
void net_conn_req_done(struct net_conn *c, struct net_req *req);

/* QUIT or a fatal error: no more commands; close once the replies so far
 * are sent. Shard-local. */
void net_conn_close_after_reply(struct net_conn *c);

/*
 * SHUTDOWN: c's socket stays open until the process exits, whenever c
 * itself is closed and freed (its socket fd is duplicated, and the copy
 * is never closed: the exit closes it), so the client sees it close only
 * once the server is gone. Closing c then only shuts its reading side,
 * to end the recv in flight. Returns 0, or -errno (no fd left: c closes
 * as any other). Shard-local.
 */
int net_conn_keep_open(struct net_conn *c);

/* Queues req (made for c) behind c's earlier requests and starts it. A
 * request that takes a lock set (multi-key commands, WATCH, EXEC) is a
 * barrier: no later command is parsed until it is done, so later commands
 * see its effects (pipeline order). Shard-local. */
void net_conn_start(struct net_conn *c, struct net_req *req);

/* Where a reply decided at dispatch goes: returns the output to write it
 * into and *ret_req (NULL, or a finished request to pass to
 * net_conn_reply_end once written), or NULL on ENOMEM (c is then killed).
 * Shard-local. */
struct net_resp_out *net_conn_reply_slot(struct net_conn *c, struct net_req **ret_req);
void net_conn_reply_end(struct net_conn *c, struct net_req *req);

/* Writes text as c's reply at dispatch, through the two above: an error
 * when it starts with '-' (the rest is its text), else a simple string. */
void net_conn_reply_text(struct net_conn *c, const char *text);

/* The buffer memory c holds now (see above; 0 once closing). Shard-local. */
size_t net_conn_mem_bytes(const struct net_conn *c);

/* Switches c and its later replies to protocol 2 or 3. Shard-local. */
void net_conn_set_proto(struct net_conn *c, uint8_t proto);

#endif
