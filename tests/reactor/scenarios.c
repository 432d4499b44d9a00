/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scenario bodies; see scenarios.h. State shared with shard threads lives in
 * file statics that shards write and the caller reads after rx_smp_free()
 * joined them (the join orders those accesses).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "reactor/msgq.h"
#include "reactor/smp.h"
#include "tests/reactor/scenarios.h"

/* ---- SPSC and MPSC on plain threads ---- */

struct spsc_xfer {
        struct rx_spsc q;
        uint64_t n;
};

static void *spsc_producer(void *arg)
{
        struct spsc_xfer *x = arg;

        for (uint64_t i = 1; i <= x->n;) {
                if (rx_spsc_push(&x->q, (void *)(uintptr_t)i) == 0) {
                        if ((++i & 15) == 0)
                                rx_spsc_publish(&x->q);
                } else {
                        rx_spsc_publish(&x->q);
                        cpu_relax();
                }
        }
        rx_spsc_publish(&x->q);
        return NULL;
}

uint64_t scenario_spsc_transfer(uint64_t n, uint32_t capacity)
{
        struct spsc_xfer x = { .n = n };
        uint64_t expect = 1, bad = 0;
        pthread_t prod;
        void *out[64];

        if (rx_spsc_init(&x.q, capacity) < 0)
                return n;
        pthread_create(&prod, NULL, spsc_producer, &x);
        while (expect <= n) {
                unsigned got = rx_spsc_pop_n(&x.q, out, 64);

                for (unsigned i = 0; i < got; i++, expect++)
                        bad += (uint64_t)(uintptr_t)out[i] != expect;
                if (got == 0)
                        cpu_relax();
        }
        pthread_join(prod, NULL);
        bad += !rx_spsc_is_empty(&x.q);
        rx_spsc_fini(&x.q);
        return bad;
}

struct mnode {
        struct rx_mpsc_node node;
        uint32_t producer, seq;
};

struct mpsc_producer {
        struct rx_mpsc *q;
        struct mnode *nodes;
        uint32_t n;
};

static void *mpsc_produce(void *arg)
{
        struct mpsc_producer *p = arg;

        for (uint32_t i = 0; i < p->n; i++)
                rx_mpsc_push(p->q, &p->nodes[i].node);
        return NULL;
}

uint64_t scenario_mpsc_transfer(unsigned producers, uint32_t per)
{
        struct rx_mpsc q;
        struct mpsc_producer *prod = calloc(producers, sizeof(*prod));
        pthread_t *th = calloc(producers, sizeof(*th));
        uint32_t *next = calloc(producers, sizeof(*next));
        uint64_t total = 0, bad = 0;

        rx_mpsc_init(&q);
        for (unsigned p = 0; p < producers; p++) {
                prod[p] = (struct mpsc_producer){ .q = &q, .n = per,
                                                  .nodes = calloc(per, sizeof(struct mnode)) };
                for (uint32_t i = 0; i < per; i++)
                        prod[p].nodes[i] = (struct mnode){ .producer = p, .seq = i };
                pthread_create(&th[p], NULL, mpsc_produce, &prod[p]);
        }
        while (total < (uint64_t)producers * per) {
                struct rx_mpsc_node *n = rx_mpsc_take_all(&q);

                if (!n)
                        cpu_relax();
                for (; n; n = n->next, total++) {
                        struct mnode *m = (struct mnode *)n;

                        bad += m->seq != next[m->producer];
                        next[m->producer] = m->seq + 1;
                }
        }
        for (unsigned p = 0; p < producers; p++) {
                pthread_join(th[p], NULL);
                bad += next[p] != per;
                free(prod[p].nodes);
        }
        bad += !rx_mpsc_is_empty(&q);
        free(prod);
        free(th);
        free(next);
        return bad;
}

/* ---- sequence-numbered messages between shards ---- */

struct seq_msg {
        struct rx_msg m;
        uint64_t seq;
};

static struct {
        struct seq_params p;
        struct seq_result *r;
        struct seq_msg *pool[SCENARIO_MAX_SHARDS][SCENARIO_MAX_SHARDS];
        uint64_t next_send[SCENARIO_MAX_SHARDS][SCENARIO_MAX_SHARDS];
        uint64_t expect[SCENARIO_MAX_SHARDS][SCENARIO_MAX_SHARDS];      /* [to][from] */
        uint64_t bad[SCENARIO_MAX_SHARDS];                              /* by receiver */
        uint64_t full[SCENARIO_MAX_SHARDS];
        unsigned pairs_finished[SCENARIO_MAX_SHARDS];
        _Atomic unsigned shards_finished;
} S;

static int seq_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct seq_msg *sm = (struct seq_msg *)m;
        unsigned to = rx_loop_shard_id(dst);

        S.bad[to] += sm->seq != S.expect[to][m->from];
        S.expect[to][m->from] = sm->seq + 1;
        return 0;
}

static void finish_shard(struct rx_loop *loop)
{
        S.full[rx_loop_shard_id(loop)] = rx_smp_stats(loop)->ring_full;
        if (atomic_fetch_add(&S.shards_finished, 1) + 1 == S.p.n_shards)
                rx_smp_stop(rx_loop_smp(loop));
}

static void seq_done(struct rx_loop *src, struct rx_msg *m)
{
        struct seq_msg *sm = (struct seq_msg *)m;
        unsigned from = rx_loop_shard_id(src), to = m->to;

        if (++S.r->replies[from][to] < S.p.per_pair) {
                if (S.next_send[from][to] < S.p.per_pair) {
                        sm->seq = S.next_send[from][to]++;
                        rx_smp_submit(src, to, &sm->m);
                }
                return;
        }
        if (++S.pairs_finished[from] == (S.p.all_pairs ? S.p.n_shards : 1))
                finish_shard(src);
}

static void start_pair(struct rx_loop *loop, unsigned to)
{
        unsigned from = rx_loop_shard_id(loop);
        struct seq_msg *pool = calloc(S.p.window, sizeof(*pool));

        S.pool[from][to] = pool;
        for (unsigned i = 0; i < S.p.window && S.next_send[from][to] < S.p.per_pair; i++) {
                pool[i].m = (struct rx_msg){ .run = seq_run, .done = seq_done, .name = "seq" };
                pool[i].seq = S.next_send[from][to]++;
                rx_smp_submit(loop, to, &pool[i].m);
        }
}

static void seq_start(struct rx_loop *loop, void *arg)
{
        (void)arg;
        if (S.p.all_pairs) {
                for (unsigned to = 0; to < S.p.n_shards; to++)
                        start_pair(loop, to);
        } else if (rx_loop_shard_id(loop) == 0) {
                start_pair(loop, 1);
        } else {
                finish_shard(loop);     /* receivers only */
        }
}

void scenario_smp_seq(const struct seq_params *p, struct seq_result *r)
{
        struct rx_smp_opts o = { .n_shards = p->n_shards, .on_start = seq_start,
                                 .queue_capacity = p->queue_capacity, .batch = p->batch,
                                 .loop = { .idle_poll_ns = p->idle_poll_ns } };
        struct rx_smp *smp;

        memset(&S, 0, sizeof(S));
        memset(r, 0, sizeof(*r));
        S.p = *p;
        S.r = r;
        r->rc = p->n_shards <= SCENARIO_MAX_SHARDS ? rx_smp_new(&o, &smp) : -EINVAL;
        if (r->rc < 0)
                return;
        rx_smp_free(smp);
        for (unsigned a = 0; a < SCENARIO_MAX_SHARDS; a++) {
                r->bad_order += S.bad[a];
                r->ring_full += S.full[a];
                for (unsigned b = 0; b < SCENARIO_MAX_SHARDS; b++) {
                        r->received[a][b] = S.expect[b][a];
                        free(S.pool[a][b]);
                }
        }
}

/* ---- foreign threads ---- */

enum { ALIEN_WINDOW = 256 };

static uint8_t *alien_runs;     /* [id]: times a shard ran request id */

static void count_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        uint64_t id = (uint64_t)(uintptr_t)req->ctx;

        (void)loop;
        alien_runs[id]++;
        rx_alien_complete(req, (int64_t)id);
}

struct foreign {
        struct rx_smp *smp;
        uint64_t base, per;
        uint8_t *seen;
        uint64_t wrong;
};

/* Keeps ALIEN_WINDOW requests in flight, recycling the oldest once done. */
static void *foreign_main(void *arg)
{
        struct foreign *f = arg;
        struct rx_alien_req *w = calloc(ALIEN_WINDOW, sizeof(*w));
        uint64_t submitted = 0, completed = 0;
        unsigned n = rx_smp_count(f->smp);

        while (completed < f->per) {
                if (submitted < f->per && submitted - completed < ALIEN_WINDOW) {
                        uint64_t id = f->base + submitted;
                        struct rx_alien_req *q = &w[submitted % ALIEN_WINDOW];

                        *q = (struct rx_alien_req){ .run = count_run, .ctx = (void *)(uintptr_t)id };
                        if (rx_smp_alien_submit(f->smp, (unsigned)(id % n), q) != 0)
                                break;
                        submitted++;
                        continue;
                }
                uint64_t id = (uint64_t)rx_alien_wait(&w[completed % ALIEN_WINDOW]);

                if (id == f->base + completed)
                        f->seen[id]++;
                else
                        f->wrong++;
                completed++;
        }
        free(w);
        return NULL;
}

void scenario_alien_flood(unsigned n_shards, unsigned threads, uint64_t per, struct alien_result *r)
{
        struct rx_smp_opts o = { .n_shards = n_shards };
        struct foreign *f = calloc(threads, sizeof(*f));
        pthread_t *th = calloc(threads, sizeof(*th));
        uint8_t *seen;
        struct rx_smp *smp;

        memset(r, 0, sizeof(*r));
        r->total = per * threads;
        alien_runs = calloc(r->total, 1);
        seen = calloc(r->total, 1);
        r->rc = rx_smp_new(&o, &smp);
        if (r->rc == 0) {
                for (unsigned t = 0; t < threads; t++) {
                        f[t] = (struct foreign){ .smp = smp, .base = t * per, .per = per, .seen = seen };
                        pthread_create(&th[t], NULL, foreign_main, &f[t]);
                }
                for (unsigned t = 0; t < threads; t++) {
                        pthread_join(th[t], NULL);
                        r->wrong_results += f[t].wrong;
                }
                rx_smp_stop(smp);
                rx_smp_free(smp);
                for (uint64_t i = 0; i < r->total; i++) {
                        r->bad_runs += alien_runs[i] != 1;
                        r->bad_completions += seen[i] != 1;
                }
        }
        free(alien_runs);
        free(seen);
        free(f);
        free(th);
}
