/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SAVE, BGSAVE [SCHEDULE] and LASTSAVE. scree has no snapshot file: the
 * commit log and the SSTables are the data. What a save means here is
 * what a Redis user wants from one, "everything written so far is in the
 * data files": every shard seals its memtables and flushes them into
 * SSTables (eng_shard_flush), after which the data no longer depends on
 * the commit log. In batch mode every acknowledged write was durable
 * already; in periodic mode SAVE is the way to make the last period's
 * writes durable now.
 *
 * SAVE replies once every shard's flush has ended (+OK, or the first
 * error); BGSAVE replies at once and the flushes go on in the background,
 * one BGSAVE at a time. LASTSAVE answers the unix time of the last save
 * that ended well (the server's start before any). The state is in
 * struct net_server (atomics: a cold path, and the flushes end on every
 * shard). Both are refused inside MULTI, as Redis's SAVE is.
 */
#include <stdatomic.h>

#include "base/time.h"
#include "net/cmd.h"
#include "net/server.h"

static void saved(struct net_server *srv, bool ok)
{
        atomic_store(&srv->last_save_failed, !ok);
        if (ok)
                atomic_store(&srv->lastsave_s, time_wall_ns() / NS_PER_SEC);
}

/* ---- SAVE ---- */

static void shard_saved(void *arg, int res)
{
        struct net_req *req = arg;

        if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_int(req->out, 0);
        net_req_complete(req);
}

static int shard_save(struct net_req *req)
{
        int r = eng_shard_flush(req->exec->eng, shard_saved, req);

        if (r == 0)
                return NET_CMD_PENDING;
        net_reply_engine_err(req, r);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_save = { "save", 1, NET_CMD_WRITE, 0, 0, 0, shard_save,
                                                   NULL };

static void save_gather(struct net_req *req)
{
        for (uint32_t i = 0; i < req->n_children; i++) {
                if (net_child_error(req, req->children[i])) {
                        saved(req->origin->srv, false);
                        return;
                }
        }
        saved(req->origin->srv, true);
        net_resp_add_simple(req->out, "OK", 2);
}

int net_cmd_save(struct net_req *req)
{
        return net_req_each_shard(req, &def_shard_save, 0, save_gather);
}

/* ---- BGSAVE ---- */

/* One shard's part of the running BGSAVE ended with res. Any shard. */
static void bgsave_part_done(struct net_server *srv, int res)
{
        if (res < 0)
                atomic_store(&srv->bgsave_failed, true);
        if (atomic_fetch_sub(&srv->bgsave_left, 1) == 1)
                saved(srv, !atomic_load(&srv->bgsave_failed));
}

static void shard_bgsaved(void *arg, int res)
{
        bgsave_part_done(arg, res);
}

static int shard_bgsave(struct net_req *req)
{
        struct net_server *srv = req->exec->srv;
        int r = eng_shard_flush(req->exec->eng, shard_bgsaved, srv);

        if (r < 0)
                bgsave_part_done(srv, r);
        net_resp_add_int(req->out, 0);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_bgsave = { "bgsave", 1, NET_CMD_WRITE, 0, 0, 0,
                                                     shard_bgsave, NULL };

static void bgsave_gather(struct net_req *req)
{
        static const char started[] = "Background saving started";

        req->ival = 1;          /* the shards' flushes started */
        net_resp_add_simple(req->out, started, sizeof(started) - 1);
}

int net_cmd_bgsave(struct net_req *req)
{
        struct net_server *srv = req->origin->srv;
        unsigned idle = 0;
        int r;

        if (req->argc > 2 || (req->argc == 2 && !net_arg_is(&req->argv[1], "schedule"))) {
                net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
                return NET_CMD_DONE;
        }
        if (!atomic_compare_exchange_strong(&srv->bgsave_left, &idle, srv->n_shards)) {
                /* SCHEDULE asks for one after the running one: that one
                 * flushes what this would. */
                static const char sched[] = "Background saving scheduled";
                static const char busy[] = "ERR Background save already in progress";

                if (req->argc == 2)
                        net_resp_add_simple(req->out, sched, sizeof(sched) - 1);
                else
                        net_resp_add_error(req->out, busy, sizeof(busy) - 1);
                return NET_CMD_DONE;
        }
        atomic_store(&srv->bgsave_failed, false);
        req->ival = 0;
        r = net_req_each_shard(req, &def_shard_bgsave, 0, bgsave_gather);
        if (r == NET_CMD_DONE && !req->ival)
                atomic_store(&srv->bgsave_left, 0);     /* out of memory: no shard started */
        return r;
}

/* ---- LASTSAVE ---- */

int net_cmd_lastsave(struct net_req *req)
{
        net_resp_add_int(req->out, (int64_t)atomic_load(&req->origin->srv->lastsave_s));
        return NET_CMD_DONE;
}
