/* SPDX-License-Identifier: Apache-2.0 */
/*
 * DIR.* and TABLE.*: the catalog of tables over the protocol
 * (docs/tables.md). Changes go to shard 0 (catalog_svc.h) and are answered
 * once every shard has them; lists and descriptions read the origin
 * shard's snapshot, which holds every change answered before.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "engine/catalog.h"
#include "engine/catalog_svc.h"
#include "net/cmd.h"
#include "net/server.h"
#include "net/tbl_args.h"

enum tbl_kind {
        TBL_MKDIR,
        TBL_RMDIR,
        TBL_CREATE,
        TBL_DROP,
        TBL_ALTER,
};

/* A change in flight, owned by the origin's request until it is answered. */
struct tbl_change {
        struct eng_cat_change ch;
        struct net_req *req;
        enum tbl_kind kind;
        char path[ENG_CATALOG_MAX_PATH + 1];
        struct net_tbl_create create;
};

static int reply_err(struct net_req *req, const char *msg)
{
        net_resp_add_errorf(req->out, "ERR %s", msg);
        return NET_CMD_DONE;
}

/* The snapshot the origin routes by (every shard is open: data commands
 * run only then). */
static struct eng_catalog *origin_catalog(const struct net_req *req)
{
        return eng_shard_catalog(req->origin->eng);
}

/* ---- changes ---- */

static int alter_fn(struct tbl_change *tc, const struct eng_catalog *cur, struct eng_catalog **ret)
{
        const struct net_req *req = tc->req;
        const struct eng_catalog_table *t;
        struct eng_catalog_options o;
        int r;

        if (eng_catalog_lookup(cur, tc->path, &t) < 0) {
                snprintf(tc->ch.err, sizeof(tc->ch.err), "no table %.200s", tc->path);
                return -SCREE_ENOTFOUND;
        }
        if (t->key_format == ENG_CATALOG_KEYS_RAW) {
                /* The Redis commands set their own TTLs; nothing reads these. */
                snprintf(tc->ch.err, sizeof(tc->ch.err), "table %.200s holds the Redis keyspace: "
                         "it takes no options", tc->path);
                return -EPERM;
        }
        /* Over the options the table has now, on the shard that orders
         * the changes: two ALTERs never lose each other's settings. */
        r = net_tbl_options_parse(&t->options, req->argv + 2, req->argc - 2, &o, tc->ch.err,
                                  sizeof(tc->ch.err));
        if (r < 0)
                return r;
        return eng_catalog_alter_table(cur, tc->path, &o, ret, tc->ch.err, sizeof(tc->ch.err));
}

/* Whether path is one of the numbered databases' tables (/redis/db0..15):
 * SELECT, SWAPDB and MOVE find them by these names, so they stay. */
static bool is_redis_db(const char *path)
{
        char name[32];

        for (unsigned d = 0; d < NET_DBS; d++) {
                snprintf(name, sizeof(name), "/redis/db%u", d);
                if (strcmp(path, name) == 0)
                        return true;
        }
        return false;
}

static int change_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                     struct eng_catalog **ret)
{
        struct tbl_change *tc = container_of(ch, struct tbl_change, ch);
        char *err = ch->err;
        size_t el = sizeof(ch->err);

        switch (tc->kind) {
        case TBL_MKDIR:
                return eng_catalog_mkdir(cur, tc->path, ret, err, el);
        case TBL_RMDIR:
                return eng_catalog_rmdir(cur, tc->path, ret, err, el);
        case TBL_CREATE:
                if (strncmp(tc->create.spec.path, "/redis/", 7) == 0) {
                        snprintf(err, el, "/redis holds the Redis databases (db0..db15): "
                                 "create tables elsewhere");
                        return -EPERM;
                }
                return eng_catalog_create_table(cur, &tc->create.spec, ret, NULL, err, el);
        case TBL_DROP:
                if (is_redis_db(tc->path)) {
                        snprintf(err, el, "table %.150s is a Redis database: FLUSHDB empties it, "
                                 "it cannot be dropped", tc->path);
                        return -EPERM;
                }
                return eng_catalog_drop_table(cur, tc->path, ret, err, el);
        case TBL_ALTER:
                return alter_fn(tc, cur, ret);
        }
        return -EINVAL;
}

static void change_done(struct eng_cat_change *ch)
{
        struct tbl_change *tc = container_of(ch, struct tbl_change, ch);
        struct net_req *req = tc->req;

        if (ch->res < 0)
                net_resp_add_errorf(req->out, "ERR %s", ch->err);
        else
                net_resp_add_simple(req->out, "OK", 2);
        net_tbl_create_fini(&tc->create);
        free(tc);
        net_req_complete(req);
}

/* Sends the change of kind on argv[1]'s path. */
static int change_start(struct net_req *req, enum tbl_kind kind)
{
        struct tbl_change *tc = calloc(1, sizeof(*tc));
        char err[NET_TBL_ERR_MAX];
        int r;

        if (!tc)
                return reply_err(req, "out of memory");
        tc->req = req;
        tc->kind = kind;
        if (kind == TBL_CREATE)
                r = net_tbl_create_parse(req->argv + 1, req->argc - 1, &tc->create, err, sizeof(err));
        else
                r = net_tbl_path(&req->argv[1], tc->path, sizeof(tc->path), err, sizeof(err));
        if (r < 0) {
                net_tbl_create_fini(&tc->create);
                free(tc);
                return reply_err(req, err);
        }
        tc->ch = (struct eng_cat_change){ .fn = change_fn, .done = change_done };
        net_cat_submit(req->origin, &tc->ch);
        return NET_CMD_PENDING;
}

int net_cmd_dir_create(struct net_req *req)
{
        return change_start(req, TBL_MKDIR);
}

int net_cmd_dir_drop(struct net_req *req)
{
        return change_start(req, TBL_RMDIR);
}

int net_cmd_table_create(struct net_req *req)
{
        return change_start(req, TBL_CREATE);
}

int net_cmd_table_drop(struct net_req *req)
{
        return change_start(req, TBL_DROP);
}

int net_cmd_table_alter(struct net_req *req)
{
        if (req->argc % 2)
                return reply_err(req, "TABLE.ALTER takes a path and option-value pairs");
        return change_start(req, TBL_ALTER);
}

/* ---- lists ---- */

int net_cmd_dir_list(struct net_req *req)
{
        const struct eng_catalog *c = origin_catalog(req);
        char path[ENG_CATALOG_MAX_PATH + 1] = "/", err[NET_TBL_ERR_MAX];
        struct eng_catalog_entry *e = NULL;
        long n;

        if (req->argc > 2)
                return reply_err(req, "DIR.LIST takes at most one path");
        if (req->argc == 2 && net_tbl_path(&req->argv[1], path, sizeof(path), err, sizeof(err)) < 0)
                return reply_err(req, err);
        n = eng_catalog_list(c, path, NULL, 0, err, sizeof(err));
        if (n > 0 && !(e = calloc((size_t)n, sizeof(*e))))
                return reply_err(req, "out of memory");
        if (n > 0)
                n = eng_catalog_list(c, path, e, (size_t)n, err, sizeof(err));
        if (n < 0) {
                free(e);
                return reply_err(req, err);
        }
        net_tbl_dir_list_write(req->out, e, (size_t)n);
        free(e);
        return NET_CMD_DONE;
}

static int path_cmp(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int net_cmd_table_list(struct net_req *req)
{
        const struct eng_catalog *c = origin_catalog(req);
        char dir[ENG_CATALOG_MAX_PATH + 1] = "/", err[NET_TBL_ERR_MAX];
        uint32_t n = 0, nt = eng_catalog_n_tables(c);
        const char **paths;

        if (req->argc > 2)
                return reply_err(req, "TABLE.LIST takes at most one directory");
        if (req->argc == 2) {
                if (net_tbl_path(&req->argv[1], dir, sizeof(dir), err, sizeof(err)) < 0)
                        return reply_err(req, err);
                if (!eng_catalog_is_dir(c, dir)) {
                        net_resp_add_errorf(req->out, "ERR no directory %s", dir);
                        return NET_CMD_DONE;
                }
        }
        paths = calloc(nt ? nt : 1, sizeof(*paths));
        if (!paths)
                return reply_err(req, "out of memory");
        for (uint32_t i = 0; i < nt; i++)
                if (net_tbl_path_is_under(eng_catalog_table_at(c, i)->path, dir))
                        paths[n++] = eng_catalog_table_at(c, i)->path;
        qsort(paths, n, sizeof(*paths), path_cmp);      /* as DIR.LIST: by name */
        net_resp_add_array(req->out, n);
        for (uint32_t i = 0; i < n; i++)
                net_resp_add_bulk(req->out, paths[i], strlen(paths[i]));
        free(paths);
        return NET_CMD_DONE;
}

/* ---- TABLE.DESCRIBE: the catalog's view plus each shard's sizes ---- */

/* The parent's: the snapshot described, held while the shards answer. */
struct describe {
        struct eng_catalog *snap;
        const struct eng_catalog_table *t;
};

/* A shard's answer. */
struct describe_part {
        uint32_t n;
        struct eng_tablet_stats st[];
};

static int net_cmd_shard_describe(struct net_req *req)
{
        const struct describe *d = req->parent->info;
        struct describe_part *p = req->info;

        p->n = eng_shard_table_stats(req->exec->eng, d->t->id, p->st, d->t->n_tablets);
        if (p->n > d->t->n_tablets)
                p->n = d->t->n_tablets;
        net_resp_add_simple(req->out, "OK", 2);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_describe = {
        "table.describe", -2, NET_CMD_READONLY, 0, 0, 0, net_cmd_shard_describe, NULL,
};

static void describe_gather(struct net_req *req)
{
        struct describe *d = req->info;
        const struct eng_catalog_table *t = d->t;
        struct net_tbl_tablet_stats *st = calloc(t->n_tablets ? t->n_tablets : 1, sizeof(*st));

        if (!st) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
        } else {
                for (uint32_t i = 0; i < req->n_children; i++) {
                        const struct describe_part *p = req->children[i]->info;

                        if (net_child_error(req, req->children[i]))
                                goto out;
                        for (uint32_t k = 0; k < p->n; k++)
                                for (uint32_t j = 0; j < t->n_tablets; j++)
                                        if (t->tablets[j].id == p->st[k].id)
                                                st[j] = (struct net_tbl_tablet_stats){
                                                        .bytes = p->st[k].bytes,
                                                        .rows = p->st[k].rows,
                                                        .reads_ps = p->st[k].reads_ps,
                                                        .writes_ps = p->st[k].writes_ps,
                                                        .read_bytes_ps = p->st[k].read_bytes_ps,
                                                        .write_bytes_ps = p->st[k].write_bytes_ps,
                                                        .n_hot = p->st[k].n_hot,
                                                        .hot = p->st[k].hot,
                                                };
                }
                if (net_tbl_describe_write(req->out, t, st) < 0)
                        net_resp_add_error(req->out, "ERR out of memory", 17);
        }
out:
        free(st);
        eng_catalog_unref(d->snap);
        d->snap = NULL;
}

int net_cmd_table_describe(struct net_req *req)
{
        struct eng_catalog *c = origin_catalog(req);
        char path[ENG_CATALOG_MAX_PATH + 1], err[NET_TBL_ERR_MAX];
        const struct eng_catalog_table *t;
        struct describe *d;

        if (net_tbl_path(&req->argv[1], path, sizeof(path), err, sizeof(err)) < 0)
                return reply_err(req, err);
        if (eng_catalog_lookup(c, path, &t) < 0) {
                net_resp_add_errorf(req->out, "ERR no table %s", path);
                return NET_CMD_DONE;
        }
        d = calloc(1, sizeof(*d));
        if (!d)
                return reply_err(req, "out of memory");
        d->snap = eng_catalog_ref(c);
        d->t = t;
        req->info = d;
        return net_req_each_shard(req, &def_shard_describe,
                                  sizeof(struct describe_part) +
                                          t->n_tablets * sizeof(struct eng_tablet_stats),
                                  describe_gather);
}
