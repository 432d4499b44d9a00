/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tablet balancer (see balancer.h) and BALANCER STATUS|PAUSE|RESUME.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/catalog.h"
#include "engine/shard.h"
#include "net/balancer.h"
#include "net/cmd.h"
#include "net/server.h"

/* Balancing by load once the shards do this many operations a second
 * together, else by size once they hold this much, else by count. */
#define BAL_LOAD_FLOOR 500u
#define BAL_SIZE_FLOOR (64ull << 20)
/* Uneven: the two shards differ by more than this share of the total
 * (and the floor); a move must leave them at most BAL_GAIN_PCT of that
 * difference apart. */
#define BAL_UNEVEN_PCT 15u
#define BAL_GAIN_PCT 80u
/* After a move: the next round once every shard's per-second figures
 * are from after it; the moved tablet stays put a while. */
#define BAL_PAUSE_NS (2 * NS_PER_SEC)
#define BAL_COOL_NS (30 * NS_PER_SEC)
/* A move is made only when the rounds found the shards uneven this many
 * times in a row (a second apart: one busy second is not a trend). */
#define BAL_STEADY_ROUNDS 3u
/* A move back the way the last one went, within the pause and
 * BAL_FLAP_NS of it, doubles the pause after it (to BAL_MAX_PAUSE_NS at
 * most); the pause and BAL_FLAP_NS without a move bring it back to
 * BAL_PAUSE_NS. */
#define BAL_FLAP_NS (60 * NS_PER_SEC)
#define BAL_MAX_PAUSE_NS (64 * NS_PER_SEC)

struct bal_tablet {
        uint32_t table, tablet, shard;
        uint64_t bytes, ops;
};

struct bal_part {
        struct rx_msg msg;
        struct net_balance_round *r;
        struct bal_tablet *v;
        uint32_t n, cap;
};

struct net_balance_round {
        struct net_shard *sh0;
        unsigned left, n;
        struct bal_part part[];
};

static struct net_balancer *bal_of(struct net_shard *sh)
{
        return &sh->srv->balancer;
}

/* ---- a round: each shard's figures ---- */

/* Whether table t's tablets move (typed keys; the Redis keyspace's go by hash). */
static bool movable(const struct eng_catalog_table *t)
{
        return t->key_format == ENG_CATALOG_KEYS_TUPLE;
}

static void part_fill(struct bal_part *p, struct net_shard *sh)
{
        const struct eng_catalog *c = eng_shard_catalog(sh->eng);
        struct eng_tablet_stats *st = NULL;
        uint32_t cap = 0;

        for (uint32_t i = 0; i < eng_catalog_n_tables(c); i++) {
                const struct eng_catalog_table *t = eng_catalog_table_at(c, i);
                uint32_t n;

                if (!movable(t))
                        continue;
                if (cap < t->n_tablets) {
                        free(st);
                        cap = t->n_tablets;
                        if (!(st = malloc(cap * sizeof(*st))))
                                return;
                }
                n = eng_shard_table_stats(sh->eng, t->id, st, cap);
                for (uint32_t k = 0; k < n && k < cap && p->n < p->cap; k++)
                        p->v[p->n++] = (struct bal_tablet){
                                .table = t->id, .tablet = st[k].id, .shard = sh->id,
                                .bytes = st[k].bytes, .ops = st[k].ops_avg };
        }
        free(st);
}

static int part_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct bal_part *p = container_of(m, struct bal_part, msg);
        struct net_shard *sh = net_shard_of(dst);

        if (sh->eng)
                part_fill(p, sh);
        return 0;
}

static void round_decide(struct net_balance_round *r);

static void part_back(struct rx_loop *src, struct rx_msg *m)
{
        struct bal_part *p = container_of(m, struct bal_part, msg);

        (void)src;
        if (--p->r->left == 0)
                round_decide(p->r);
}

static void round_free(struct net_balance_round *r)
{
        for (unsigned i = 0; i < r->n; i++)
                free(r->part[i].v);
        free(r);
}

/* ---- deciding ---- */

static bool cooling(const struct net_balancer *b, uint32_t tablet, uint64_t now)
{
        for (uint32_t i = 0; i < b->n_cool; i++)
                if (b->cool[i].tablet == tablet && b->cool[i].until_ns > now)
                        return true;
        return false;
}

/* The figure a mode balances: 0 load, 1 size. */
static uint64_t metric(const struct bal_tablet *t, int mode)
{
        return mode == 0 ? t->ops : t->bytes;
}

/* By load or size: the tablet of the busiest shard whose move leaves the
 * two shards closest, if that is close enough. */
static const struct bal_tablet *pick_even(const struct net_balance_round *r,
                                          const struct net_balancer *b, int mode, unsigned *to,
                                          uint64_t now)
{
        uint64_t sum[ENG_CATALOG_MAX_SHARDS] = { 0 }, total = 0, diff, floor, best_gap = UINT64_MAX;
        const struct bal_tablet *best = NULL;
        unsigned hi = 0, lo = 0;

        for (unsigned k = 0; k < r->n; k++)
                for (uint32_t i = 0; i < r->part[k].n; i++)
                        sum[k] += metric(&r->part[k].v[i], mode);
        for (unsigned k = 0; k < r->n; k++) {
                total += sum[k];
                hi = sum[k] > sum[hi] ? k : hi;
                lo = sum[k] < sum[lo] ? k : lo;
        }
        diff = sum[hi] - sum[lo];
        floor = mode == 0 ? BAL_LOAD_FLOOR / 4 : BAL_SIZE_FLOOR / 4;
        if (diff <= total / 100 * BAL_UNEVEN_PCT || diff <= floor)
                return NULL;
        for (uint32_t i = 0; i < r->part[hi].n; i++) {
                const struct bal_tablet *t = &r->part[hi].v[i];
                uint64_t m = metric(t, mode), gap = 2 * m > diff ? 2 * m - diff : diff - 2 * m;

                if (!m || cooling(b, t->tablet, now) || gap >= diff / 100 * BAL_GAIN_PCT ||
                    gap >= best_gap)
                        continue;
                best = t;
                best_gap = gap;
        }
        *to = lo;
        return best;
}

/* Of table's tablets on shard s, the coolest one not moved lately. */
static const struct bal_tablet *coolest(const struct net_balance_round *r,
                                        const struct net_balancer *b, unsigned s, uint32_t table,
                                        uint64_t now)
{
        const struct bal_tablet *best = NULL;

        for (uint32_t k = 0; k < r->part[s].n; k++) {
                const struct bal_tablet *t = &r->part[s].v[k];

                if (t->table != table || cooling(b, t->tablet, now))
                        continue;
                if (!best || t->ops < best->ops || (t->ops == best->ops && t->bytes < best->bytes))
                        best = t;
        }
        return best;
}

/* By count: a table with two more tablets on one shard than on another
 * (ScyllaDB's table balance: each shard a share of every table); its
 * coolest tablet there goes. */
static const struct bal_tablet *pick_count(const struct net_balance_round *r,
                                           const struct net_balancer *b, unsigned *to,
                                           uint64_t now)
{
        for (unsigned s = 0; s < r->n; s++) {
                for (uint32_t k = 0; k < r->part[s].n; k++) {
                        uint32_t table = r->part[s].v[k].table, cnt[ENG_CATALOG_MAX_SHARDS] = { 0 };
                        unsigned lo = 0, hi = 0;
                        const struct bal_tablet *t;

                        for (unsigned q = 0; q < r->n; q++)
                                for (uint32_t j = 0; j < r->part[q].n; j++)
                                        cnt[q] += r->part[q].v[j].table == table;
                        for (unsigned q = 0; q < r->n; q++) {
                                lo = cnt[q] < cnt[lo] ? q : lo;
                                hi = cnt[q] > cnt[hi] ? q : hi;
                        }
                        if (cnt[hi] < cnt[lo] + 2 || !(t = coolest(r, b, hi, table, now)))
                                continue;
                        *to = lo;
                        return t;
                }
        }
        return NULL;
}

uint64_t net_balancer_moved(struct net_balancer *b, uint32_t from, uint32_t to, uint64_t now)
{
        bool recent = b->moves && now - b->last_move_ns < b->pause_ns + BAL_FLAP_NS;

        if (recent && from == b->last_to && to == b->last_from) {
                b->pause_ns = b->pause_ns * 2 > BAL_MAX_PAUSE_NS ? BAL_MAX_PAUSE_NS
                                                                : b->pause_ns * 2;
                log_info("balancer: a move back soon after the last one; the next in %.0f s at "
                         "the earliest", (double)b->pause_ns / NS_PER_SEC);
        } else if (!recent || b->pause_ns < BAL_PAUSE_NS) {
                b->pause_ns = BAL_PAUSE_NS;
        }
        b->last_from = from;
        b->last_to = to;
        b->last_move_ns = now;
        b->moves++;
        return b->pause_ns;
}

bool net_balancer_confirm(struct net_balancer *b, bool found)
{
        b->steady = found ? b->steady + 1 : 0;
        return b->steady >= BAL_STEADY_ROUNDS;
}

static void move_done(struct net_tablet_move *m, int res, const char *err)
{
        struct net_balancer *b = container_of(m, struct net_balancer, move);
        uint64_t now = time_now_ns(), pause = BAL_PAUSE_NS;

        if (res == 0) {
                pause = net_balancer_moved(b, m->from, m->to, now);
                snprintf(b->last, sizeof(b->last), "tablet %u: shard %u to %u (%.1f ms, keys "
                         "held %.1f ms, %u files)", m->tablet, m->from, m->to,
                         (double)m->took_ns / 1e6, (double)m->held_ns / 1e6, m->n_files);
                log_info("balancer: moved %s", b->last);
        } else {
                snprintf(b->last, sizeof(b->last), "tablet %u to shard %u failed: %s", m->tablet,
                         m->to, err);
                log_warn("balancer: %s", b->last);
        }
        b->cool[b->cool_next++ % 64] = (struct net_bal_cool){ .tablet = m->tablet,
                                                              .until_ns = now + BAL_COOL_NS };
        if (b->n_cool < 64)
                b->n_cool++;
        b->next_ns = now + pause;
        b->steady = 0;
        b->busy = false;
}

static void round_decide(struct net_balance_round *r)
{
        struct net_shard *sh0 = r->sh0;
        struct net_balancer *b = bal_of(sh0);
        uint64_t now = time_now_ns(), ops = 0, bytes = 0;
        const struct bal_tablet *t = NULL;
        unsigned to = 0;

        for (unsigned k = 0; k < r->n; k++)
                for (uint32_t i = 0; i < r->part[k].n; i++) {
                        ops += r->part[k].v[i].ops;
                        bytes += r->part[k].v[i].bytes;
                }
        if (!b->paused && !sh0->stopping) {
                /* Load first; size and count where load has nothing to
                 * gain (they move the coolest tablets). */
                if (ops >= BAL_LOAD_FLOOR)
                        t = pick_even(r, b, 0, &to, now);
                if (!t && bytes >= BAL_SIZE_FLOOR && ops < BAL_LOAD_FLOOR)
                        t = pick_even(r, b, 1, &to, now);
                if (!t)
                        t = pick_count(r, b, &to, now);
        }
        if (!net_balancer_confirm(b, t != NULL))
                t = NULL;
        if (!t) {
                b->busy = false;
                round_free(r);
                return;
        }
        b->move = (struct net_tablet_move){ .done = move_done, .table = t->table,
                                            .tablet = t->tablet, .to = to };
        round_free(r);
        net_tablet_move(sh0, &b->move);
}

void net_balancer_tick(struct net_shard *sh0)
{
        struct net_balancer *b = bal_of(sh0);
        unsigned n = sh0->srv->n_shards;
        struct net_balance_round *r;
        uint32_t cap = 0;

        if (b->paused || b->busy || n < 2 || sh0->stopping || net_shard_is_loading(sh0) ||
            time_now_ns() < b->next_ns || !sh0->cfg.tablet_balancer)
                return;
        for (uint32_t i = 0; i < eng_catalog_n_tables(eng_shard_catalog(sh0->eng)); i++) {
                const struct eng_catalog_table *t =
                        eng_catalog_table_at(eng_shard_catalog(sh0->eng), i);

                cap += movable(t) ? t->n_tablets : 0;
        }
        if (!cap || !(r = calloc(1, sizeof(*r) + n * sizeof(r->part[0]))))
                return;
        r->sh0 = sh0;
        r->n = r->left = n;
        for (unsigned k = 0; k < n; k++) {
                struct bal_part *p = &r->part[k];

                p->r = r;
                p->cap = cap + 64;      /* room for what a split made since */
                if (!(p->v = malloc(p->cap * sizeof(*p->v)))) {
                        round_free(r);
                        return;
                }
        }
        b->busy = true;
        for (unsigned k = 0; k < n; k++) {
                r->part[k].msg = (struct rx_msg){ .run = part_run, .done = part_back,
                                                  .name = "balancer figures" };
                rx_smp_submit(sh0->loop, k, &r->part[k].msg);
        }
}

/* ---- BALANCER STATUS | PAUSE | RESUME ---- */

static int exec_balancer(struct net_req *req)
{
        struct net_balancer *b = bal_of(req->exec);
        const struct net_arg *a = &req->argv[1];

        if (net_arg_is(a, "pause") || net_arg_is(a, "resume")) {
                b->paused = net_arg_is(a, "pause");
                log_info("balancer %s", b->paused ? "paused" : "resumed");
                net_resp_add_simple(req->out, "OK", 2);
                return NET_CMD_DONE;
        }
        net_resp_add_map(req->out, 4);
        net_resp_add_bulk(req->out, "state", 5);
        if (!req->exec->cfg.tablet_balancer)
                net_resp_add_bulk(req->out, "off", 3);
        else if (b->paused)
                net_resp_add_bulk(req->out, "paused", 6);
        else
                net_resp_add_bulk(req->out, b->busy ? "moving" : "running",
                                  b->busy ? 6 : 7);
        net_resp_add_bulk(req->out, "moves", 5);
        net_resp_add_int(req->out, (int64_t)b->moves);
        net_resp_add_bulk(req->out, "last", 4);
        net_resp_add_bulk(req->out, b->last, strlen(b->last));
        net_resp_add_bulk(req->out, "seconds-since-last-move", 23);
        net_resp_add_int(req->out, b->last_move_ns ? (int64_t)((time_now_ns() - b->last_move_ns) /
                                                               NS_PER_SEC) : -1);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_exec_balancer = { "balancer", 2, 0, 0, 0, 0, exec_balancer,
                                                      NULL };

static void balancer_gather(struct net_req *req)
{
        net_out_move(req->out, &req->children[0]->own);
}

int net_cmd_balancer(struct net_req *req)
{
        const struct net_arg *a = &req->argv[1];

        if (!net_arg_is(a, "status") && !net_arg_is(a, "pause") && !net_arg_is(a, "resume")) {
                net_resp_add_errorf(req->out, "ERR BALANCER takes STATUS, PAUSE or RESUME");
                return NET_CMD_DONE;
        }
        return net_req_one_child(req, &def_exec_balancer, 0, NULL, balancer_gather);
}
