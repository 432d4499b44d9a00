/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by ROW.*'s files (cmd_row.c: point operations and writes;
 * row_range.c: ranges): a row command's plan and its helpers. Origin
 * shard. Not for use outside them.
 */
#ifndef SCREE_NET_ROW_INT_H
#define SCREE_NET_ROW_INT_H

#include "net/cmd.h"
#include "net/tbl_args.h"

/* Rows a ROW.COUNT or ROW.DELRANGE hop walks at most before it yields. */
#define ROW_HOP_ROWS 4096u

/* The plan of a row command: the parent request's info. */
struct row_cmd {
        struct eng_catalog *snap;       /* held until the reply */
        const struct eng_catalog_table *t;
        uint64_t now_ms;
        struct net_tbl_ops ops;         /* PUT, DEL, WRITE, GET (one op, its key) */
        /* ranges */
        struct net_tbl_range range;     /* COUNT and DELRANGE: only range.b */
        /* Where the walk goes on (heap): forward, the next start; in
         * reverse (range.rev), the next exclusive end, pos_open: none,
         * the table's end. */
        uint8_t *pos;
        size_t pos_len;
        bool pos_open;
        /* The hop's other bound: forward its end (hop_open: the table's
         * end), in reverse its start (a range start or a tablet's). */
        const uint8_t *hop_end;
        size_t hop_end_len;
        bool hop_open, last_hop;        /* ...; the hop ends the range */
        uint32_t hop_shard;
        uint64_t n;                     /* rows given, counted or deleted */
        /* RANGE and COUNT within one partition: the next hop counts the
         * call as one read of it (the rate limits; its first hop). */
        bool take_read;
        struct net_resp_out rows;       /* RANGE: the rows so far */
        bool rows_init;
        uint8_t *next;                  /* RANGE: the next row's position, once the page is full */
        size_t next_len;
        /* A hop that met a tablet gone to another shard (engine/shard.h,
         * stop_at_foreign): the walk goes on from its bound by the
         * origin's newest catalog, after a pause if that still names the
         * same shard (its install of the move has not landed). */
        struct rx_timer replan;
        struct net_req *req;
        int replan_kind;
        uint32_t replans;
};

/* Frees what rc holds (rc itself goes with the request's info); twice is
 * harmless. */
void net_row_cmd_free(struct row_cmd *rc);

/* Writes "-ERR msg"; returns NET_CMD_DONE. */
int net_row_reply_err(struct net_req *req, const char *msg);

/* The server's key and value limits. */
struct net_tbl_limits net_row_limits(const struct net_req *req);

/* Sets up req->info for the table named by argv[1]. 0, or a reply written. */
int net_row_cmd_new(struct net_req *req);

#endif
