/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: Redis 7.0's arguments and
 * errors; the stop itself is SIGTERM's (main.c, server.h): every
 * connection closed once its commands are back, then every engine shard
 * closed, so every acknowledged write is on disk, and exit status 0.
 *
 * The handler runs on the connection's shard (NET_CMD_LOCAL). It only
 * asks: it sets srv->shutdown_asked, which the main thread polls with its
 * signals, and ends its own connection without a reply. The client's
 * socket is kept open until the process exits (net_conn_keep_open), so
 * the client sees it close, as with Redis, once the server is gone and
 * its data directory free for the next start.
 *
 * The options change nothing here and are accepted for compatibility:
 * there is no snapshot for SAVE to write or NOSAVE to skip (the commit
 * log and the SSTables are the data: NOSAVE loses nothing), no replica
 * for NOW to stop waiting for, and nothing FORCE could override (an
 * engine that fails to close is logged and the exit status is 1). So a
 * shutdown never waits, and ABORT never finds one it could cancel.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "net/cmd.h"
#include "net/conn.h"
#include "net/server.h"

#define SHUT_NOSAVE (1u << 0)
#define SHUT_SAVE (1u << 1)
#define SHUT_NOW (1u << 2)
#define SHUT_FORCE (1u << 3)
#define SHUT_ABORT (1u << 4)

/* The options in argv[1..): 0 and *ret_flags, or -1 on a word that is not
 * one or a combination Redis refuses (ABORT with anything, SAVE with
 * NOSAVE). */
static int shutdown_opts(const struct net_req *req, uint32_t *ret_flags)
{
        static const char *const words[] = { "nosave", "save", "now", "force", "abort" };
        uint32_t f = 0;

        for (size_t i = 1; i < req->argc; i++) {
                size_t w = 0;

                while (w < 5 && !net_arg_is(&req->argv[i], words[w]))
                        w++;
                if (w == 5)
                        return -1;
                f |= 1u << w;
        }
        if (((f & SHUT_ABORT) && f != SHUT_ABORT) || ((f & SHUT_SAVE) && (f & SHUT_NOSAVE)))
                return -1;
        *ret_flags = f;
        return 0;
}

int net_cmd_shutdown(struct net_req *req)
{
        struct net_conn *c = req->conn;
        uint32_t f;

        if (shutdown_opts(req, &f) < 0) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
                return NET_CMD_DONE;
        }
        if (f & SHUT_ABORT) {
                net_resp_add_errorf(req->out, "ERR No shutdown in progress.");
                return NET_CMD_DONE;
        }
        log_info("User requested shutdown: SHUTDOWN%s%s%s%s from client id=%llu addr=%s",
                 f & SHUT_NOSAVE ? " NOSAVE" : "", f & SHUT_SAVE ? " SAVE" : "",
                 f & SHUT_NOW ? " NOW" : "", f & SHUT_FORCE ? " FORCE" : "",
                 (unsigned long long)c->id, c->addr);
        /* Without a spare fd the client sees its socket close now, before
         * the engines are: the stop itself is the same. */
        (void)net_conn_keep_open(c);
        net_conn_close_after_reply(c);          /* nothing after it runs */
        atomic_store(&req->origin->srv->shutdown_asked, true);
        return NET_CMD_DONE;                    /* no reply, as Redis */
}
