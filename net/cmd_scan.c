/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key iteration: SCAN, KEYS, RANDOMKEY.
 *
 * SCAN's cursor is the next hash to scan from (0: the start; a reply's 0:
 * done). The default table is hashed: a key's position is its 64-bit hash
 * then the key, and its tablets split the hash space evenly, global
 * tablet g going to shard g % n_shards (engine/tablet.h). A call runs one
 * child on the shard owning the cursor's tablet, which scans from the
 * cursor to that tablet's end and stops at a hash boundary once it has
 * COUNT matches or has looked at 10 x COUNT keys; the reply's cursor is
 * the hash of the first key not looked at, or the next tablet's start
 * (a short page: Redis allows it), or 0 after the last tablet. Since every
 * call takes every key of the hashes it passes, a key present for the
 * whole iteration is returned exactly once, whatever is written meanwhile
 * -- unless 64-bit hashes collide in a run longer than the engine bound
 * of one call (10 x COUNT + 64 keys of one hash), where the cursor steps
 * over the hash by one and the rest of that run is skipped.
 *
 * KEYS walks every shard (one child each, yielding between chunks); each
 * child writes its matches as bulk strings, the origin adds the header.
 * RANDOMKEY asks every shard for the first live key at or after a random
 * hash (wrapping around), then picks one of the shards that found one.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "base/time.h"
#include "net/cmd.h"
#include "net/glob.h"
#include "net/server.h"

#define SCAN_STOP (-ECANCELED)          /* the item callback ended the page */
#define SCAN_MAX_COUNT 100000u
#define SCAN_LOOK_FACTOR 10u

struct scan_opts {
        uint64_t cursor;
        uint64_t count;
        const struct net_arg *match;
        bool type_none;                 /* TYPE given and not "string": nothing matches */
};

/*
 * A per-shard child's result, in its req->info (allocated by the origin,
 * written by the child): its reply buffer holds only the keys it found,
 * as bulk strings; the origin writes the headers around them.
 */
struct scan_page {
        int err;                        /* the engine's error, or 0 */
        uint64_t next;                  /* SCAN: the reply's cursor */
        struct scan_opts o;
        uint64_t last_hash, stop_hash;
        uint64_t looked, taken;
        bool any, stopped;
};

static uint64_t rand_u64(void)
{
        static _Thread_local uint64_t x;

        if (!x)
                x = time_now_ns() | 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
}

/* Parses SCAN's arguments. NULL or the error text (without "ERR "). */
static const char *scan_opts_parse(const struct net_req *req, struct scan_opts *o)
{
        const struct net_arg *c = &req->argv[1];
        char *end;
        char buf[24];

        memset(o, 0, sizeof(*o));
        o->count = 10;
        if (c->len == 0 || c->len >= sizeof(buf) || c->ptr[0] < '0' || c->ptr[0] > '9')
                return "invalid cursor";
        memcpy(buf, c->ptr, c->len);
        buf[c->len] = 0;
        errno = 0;
        o->cursor = strtoull(buf, &end, 10);
        if (errno || *end)
                return "invalid cursor";
        for (size_t i = 2; i < req->argc; i += 2) {
                const struct net_arg *a = &req->argv[i], *v = &req->argv[i + 1];
                int64_t n;

                if (i + 1 >= req->argc)
                        return NET_ERR_SYNTAX;
                if (net_arg_is(a, "count")) {
                        if (net_arg_i64(v, &n) < 0)
                                return NET_ERR_NOT_INT;
                        if (n < 1)
                                return NET_ERR_SYNTAX;
                        o->count = (uint64_t)n < SCAN_MAX_COUNT ? (uint64_t)n : SCAN_MAX_COUNT;
                } else if (net_arg_is(a, "match")) {
                        o->match = v;
                } else if (net_arg_is(a, "type")) {
                        o->type_none = !net_arg_is(v, "string");
                } else {
                        return NET_ERR_SYNTAX;
                }
        }
        return NULL;
}

__extension__ typedef unsigned __int128 u128;

/* The global tablet of hash h among n, and the first hash of tablet g
 * (the split of engine/tablet.c). */
static uint32_t tablet_of_hash(uint64_t h, uint32_t n)
{
        return (uint32_t)(((u128)h * n) >> 64);
}

static uint64_t tablet_first_hash(uint32_t g, uint32_t n)
{
        return (uint64_t)((((u128)g << 64) + n - 1) / n);
}

static bool key_matches(const struct scan_opts *o, const uint8_t *key, uint32_t len)
{
        return !o->type_none && (!o->match || net_glob_match(o->match->ptr, o->match->len,
                                                             (const char *)key, len, false));
}

/* Writes the key into the child's reply if it matches. 0 or -ENOMEM. */
static int take_key(struct net_req *req, const struct eng_scan_item *it)
{
        struct scan_page *p = req->info;

        if (!key_matches(&p->o, it->key, it->key_len))
                return 0;
        p->taken++;
        return net_resp_add_bulk(req->out, it->key, it->key_len);
}

/* ---- SCAN: the page, on the owning shard ---- */

static int page_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct net_req *req = sc->ctx;
        struct scan_page *p = req->info;
        uint64_t h = be64_get(it->pos);
        bool full = p->taken >= p->o.count || p->looked >= p->o.count * SCAN_LOOK_FACTOR;

        if (p->any && full && h != p->last_hash) {
                p->stopped = true;
                p->stop_hash = h;
                return SCAN_STOP;
        }
        p->any = true;
        p->last_hash = h;
        p->looked++;
        return take_key(req, it);
}

static void page_done(struct net_req *req, int res)
{
        struct scan_page *p = req->info;
        uint64_t cur = p->o.cursor;
        uint32_t n = req->exec->srv->map.n_shards * req->exec->srv->map.tablets_per_shard;
        uint32_t g = tablet_of_hash(cur, n);

        if (res < 0 && res != SCAN_STOP)
                p->err = res;
        else if (p->stopped)
                p->next = p->stop_hash;         /* > cur: hashes ascend from cur */
        else if (req->sc.more)
                p->next = be64_get(req->sc.resume) > cur ? be64_get(req->sc.resume) : cur + 1;
        else
                p->next = g + 1 < n ? tablet_first_hash(g + 1, n) : 0;
        eng_scan_release(&req->sc);
}

static void page_scan_cb(struct eng_scan *sc, int res)
{
        struct net_req *req = sc->ctx;

        page_done(req, res);
        net_req_complete(req);
}

static int net_cmd_shard_scan(struct net_req *req)
{
        struct scan_page *p = req->info;
        uint32_t n = req->exec->srv->map.n_shards * req->exec->srv->map.tablets_per_shard;
        uint32_t g = tablet_of_hash(p->o.cursor, n);
        uint8_t start[8], end[8];
        uint64_t limit = p->o.count * SCAN_LOOK_FACTOR + 64;
        int r;

        be64_put(start, p->o.cursor);
        if (g + 1 < n)
                be64_put(end, tablet_first_hash(g + 1, n));
        memset(&req->sc, 0, sizeof(req->sc));
        req->sc.skip_damaged = true;
        req->sc.item = page_item;
        req->sc.done = page_scan_cb;
        req->sc.ctx = req;
        r = eng_shard_scan(req->exec->eng, req->table, start, sizeof(start),
                           g + 1 < n ? end : NULL, g + 1 < n ? sizeof(end) : 0, (uint32_t)limit,
                           &req->sc);
        if (r == 1)
                return NET_CMD_PENDING;
        page_done(req, r);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_scan = { "scan", -2, NET_CMD_READONLY, 0, 0, 0, net_cmd_shard_scan,
                                                   NULL };

/* True (and the reply written) if child c failed: LOADING or the engine. */
static bool child_failed(struct net_req *req, struct net_req *c)
{
        const struct scan_page *p = c->info;

        if (net_child_error(req, c))
                return true;
        if (!p->err)
                return false;
        net_reply_engine_err(req, p->err);
        return true;
}

static void scan_gather(struct net_req *req)
{
        struct net_req *c = req->children[0];
        const struct scan_page *p = c->info;
        char num[24];

        if (child_failed(req, c))
                return;
        snprintf(num, sizeof(num), "%llu", (unsigned long long)p->next);
        net_resp_add_array(req->out, 2);
        net_resp_add_bulk(req->out, num, strlen(num));
        net_resp_add_array(req->out, p->taken);
        net_out_move(req->out, &c->own);
}

/* A child of req on shard `shard` running def, with a zeroed scan_page. */
static struct net_req *page_child(struct net_req *req, const struct net_cmd_def *def,
                                  unsigned shard)
{
        struct net_req *c = net_req_child(req, def, req->argv, 1, (int)shard);

        if (c && !(c->info = calloc(1, sizeof(struct scan_page)))) {
                net_req_free(c);
                return NULL;
        }
        return c;
}

static int reply_oom(struct net_req *req)
{
        net_resp_add_error(req->out, "ERR out of memory", 17);
        return NET_CMD_DONE;
}

int net_cmd_scan(struct net_req *req)
{
        const struct eng_tablet_map *m = &req->exec->srv->map;
        struct scan_opts o;
        const char *err = scan_opts_parse(req, &o);
        uint32_t g;

        if (err) {
                net_resp_add_errorf(req->out, "ERR %s", err);
                return NET_CMD_DONE;
        }
        g = tablet_of_hash(o.cursor, m->n_shards * m->tablets_per_shard);
        req->children = calloc(1, sizeof(*req->children));
        if (!req->children || !(req->children[0] = page_child(req, &def_shard_scan,
                                                              g % m->n_shards)))
                return reply_oom(req);
        req->n_children = 1;
        ((struct scan_page *)req->children[0]->info)->o = o;
        return net_req_fan_out(req, scan_gather);
}

/* ---- KEYS ---- */

static int keys_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        return take_key(sc->ctx, it);
}

static void keys_then(struct net_req *req, int res)
{
        struct scan_page *p = req->info;

        if (res < 0)
                p->err = res;
}

static int net_cmd_shard_keys(struct net_req *req)
{
        return net_req_walk(req, keys_item, true, keys_then);
}

static const struct net_cmd_def def_shard_keys = { "keys", 2, NET_CMD_READONLY, 0, 0, 0, net_cmd_shard_keys,
                                                   NULL };

static void keys_gather(struct net_req *req)
{
        uint64_t n = 0;

        for (uint32_t i = 0; i < req->n_children; i++) {
                if (child_failed(req, req->children[i]))
                        return;
                n += ((const struct scan_page *)req->children[i]->info)->taken;
        }
        net_resp_add_array(req->out, n);
        for (uint32_t i = 0; i < req->n_children; i++)
                net_out_move(req->out, &req->children[i]->own);
}

/* Starts one page_child per shard, each with opts o, gathered by gather. */
static int each_shard(struct net_req *req, const struct net_cmd_def *def,
                      const struct scan_opts *o, void (*gather)(struct net_req *))
{
        unsigned n = req->exec->srv->n_shards;

        req->children = calloc(n, sizeof(*req->children));
        if (!req->children)
                return reply_oom(req);
        for (unsigned i = 0; i < n; i++) {
                struct net_req *c = page_child(req, def, i);

                if (!c)
                        return reply_oom(req);
                ((struct scan_page *)c->info)->o = *o;
                req->children[req->n_children++] = c;
        }
        return net_req_fan_out(req, gather);
}

int net_cmd_keys(struct net_req *req)
{
        struct scan_opts o = { .match = &req->argv[1] };

        return each_shard(req, &def_shard_keys, &o, keys_gather);
}

/* ---- RANDOMKEY ---- */

static int random_step(struct net_req *req);

static int random_item(struct eng_scan *sc, const struct eng_scan_item *it)
{
        struct net_req *req = sc->ctx;
        struct scan_page *p = req->info;

        p->taken = 1;
        return net_resp_add_bulk(req->out, it->key, it->key_len);
}

/* After a scan of one key: found, wrap around once, or nothing here. */
static int random_scanned(struct net_req *req, int res)
{
        struct scan_page *p = req->info;

        eng_scan_release(&req->sc);
        if (res < 0)
                p->err = res;
        else if (!p->taken && p->o.cursor != 0) {
                p->o.cursor = 0;
                return random_step(req);
        }
        return NET_CMD_DONE;
}

static void random_cb(struct eng_scan *sc, int res)
{
        struct net_req *req = sc->ctx;

        if (random_scanned(req, res) == NET_CMD_DONE)
                net_req_complete(req);
}

static int random_step(struct net_req *req)
{
        struct scan_page *p = req->info;
        uint8_t start[8];
        int r;

        be64_put(start, p->o.cursor);
        memset(&req->sc, 0, sizeof(req->sc));
        req->sc.skip_damaged = true;
        req->sc.item = random_item;
        req->sc.done = random_cb;
        req->sc.ctx = req;
        r = eng_shard_scan(req->exec->eng, req->table, start, sizeof(start), NULL, 0, 1,
                           &req->sc);
        if (r == 1)
                return NET_CMD_PENDING;
        return random_scanned(req, r);
}

static int net_cmd_shard_random(struct net_req *req)
{
        struct scan_page *p = req->info;

        p->o.cursor = rand_u64();
        return random_step(req);
}

static const struct net_cmd_def def_shard_random = { "randomkey", 1, NET_CMD_READONLY, 0, 0, 0,
                                                     net_cmd_shard_random, NULL };

static void random_gather(struct net_req *req)
{
        uint32_t n = req->n_children, first = (uint32_t)(rand_u64() % n);

        for (uint32_t i = 0; i < n; i++)
                if (child_failed(req, req->children[i]))
                        return;
        for (uint32_t i = 0; i < n; i++) {
                struct net_req *c = req->children[(first + i) % n];

                if (((const struct scan_page *)c->info)->taken) {
                        net_out_move(req->out, &c->own);
                        return;
                }
        }
        net_resp_add_null(req->out);
}

int net_cmd_randomkey(struct net_req *req)
{
        struct scan_opts o = { .count = 1 };

        return each_shard(req, &def_shard_random, &o, random_gather);
}
