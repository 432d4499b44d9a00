/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shard threads and the messaging between them; see smp.h for the model.
 *
 * Layout: req[a*n+b] carries requests from a to b (producer a, consumer b);
 * resp[b*n+a] carries b's replies to a (producer b, consumer a). Every shard
 * keeps two backlogs per destination (requests, replies): submit appends
 * there, and flush moves as much as fits into the ring and publishes once.
 * Messages to oneself never touch a ring: the poller runs them from the
 * backlog, so run/done still happen from the loop and never inside submit.
 *
 * The poller runs at the top of each loop iteration: inbound requests and
 * replies from every peer (a bounded number per ring), the own-shard
 * backlogs, the foreign inbox, then a flush of every backlog.
 *
 * Start-up and teardown use a mutex and condition variable (never on the
 * request path). rx_smp_free is the one place that frees another thread's
 * objects, after every shard thread has exited.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#if SCREE_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "base/check.h"
#include "base/time.h"
#include "reactor/loop_int.h"
#include "reactor/smp.h"

#define POP_BATCH 64u
#define MAX_POP_PER_RING 256u

struct backlog {
        struct rx_msg *head, *tail;
        uint32_t n;
};

struct shard {
        struct rx_smp *smp;
        unsigned id;
        int cpu;
        pthread_t thread;
        bool thread_started;
        int err;
        struct rx_loop *loop;
        struct rx_poller poller;
        struct backlog *out_req;        /* [n], by destination */
        struct backlog *out_resp;       /* [n], by destination */
        struct rx_smp_stats stats;
        struct rx_mpsc alien;           /* own cache line: foreign threads CAS it */
        _Atomic bool closed;            /* the loop has exited: fail foreign requests */
} cacheline_aligned;

struct rx_smp {
        unsigned n;
        struct rx_smp_opts opts;
        struct shard *shards;
        struct rx_spsc *req;
        struct rx_spsc *resp;
        int *cpus;
        _Atomic bool stopping;

        pthread_mutex_t mu;
        pthread_cond_t cv;
        unsigned n_ready;
        int first_err;
        bool go, abort;
};

enum { ALIEN_PENDING, ALIEN_WAITING, ALIEN_DONE };

static inline struct shard *shard_of(const struct rx_loop *loop)
{
        return &loop->smp->shards[loop->shard_id];
}

static void backlog_append(struct backlog *b, struct rx_msg *m)
{
        m->next = NULL;
        if (b->tail)
                b->tail->next = m;
        else
                b->head = m;
        b->tail = m;
        b->n++;
}

/* Detaches the whole list (for own-shard delivery). */
static struct rx_msg *backlog_take(struct backlog *b)
{
        struct rx_msg *m = b->head;

        b->head = b->tail = NULL;
        b->n = 0;
        return m;
}

/* Moves what fits from b into q, publishes once, and wakes dst if it sleeps. */
static void flush_one(struct shard *s, struct backlog *b, struct rx_spsc *q, unsigned dst)
{
        while (b->head) {
                struct rx_msg *m = b->head, *next = m->next;  /* read before the push */

                if (rx_spsc_push(q, m) < 0) {
                        s->stats.ring_full++;
                        break;
                }
                b->head = next;
                b->n--;
        }
        if (!b->head)
                b->tail = NULL;
        if (rx_spsc_publish(q)) {
                full_barrier();
                if (rx_loop_wake(s->smp->shards[dst].loop))
                        s->loop->stats.wakeups_sent++;
        }
}

static void flush_all(struct shard *s)
{
        struct rx_smp *smp = s->smp;
        unsigned n = smp->n;

        for (unsigned d = 0; d < n; d++) {
                if (d == s->id)
                        continue;
                if (s->out_req[d].head)
                        flush_one(s, &s->out_req[d], &smp->req[s->id * n + d], d);
                if (s->out_resp[d].head)
                        flush_one(s, &s->out_resp[d], &smp->resp[s->id * n + d], d);
        }
}

/* Runs a request here and queues its reply unless the handler deferred it. */
static void run_request(struct shard *s, struct rx_msg *m)
{
        if (m->run(s->loop, m) != RX_MSG_DEFERRED)
                backlog_append(&s->out_resp[m->from], m);
}

static unsigned drain_ring(struct shard *s, struct rx_spsc *q, bool requests)
{
        void *batch[POP_BATCH];
        unsigned total = 0, got;
        uint64_t prev = time_coarse_ns();

        do {
                got = rx_spsc_pop_n(q, batch, POP_BATCH);
                for (unsigned i = 0; i < got; i++) {
                        struct rx_msg *m = batch[i];
                        const char *name = m->name;     /* done may free m */

                        if (i + 2 < got)
                                __builtin_prefetch(batch[i + 2]);
                        if (requests)
                                run_request(s, m);
                        else
                                m->done(s->loop, m);
                        rx_loop_account(s->loop, name, &prev, time_coarse_ns());
                }
                total += got;
        } while (got == POP_BATCH && total < MAX_POP_PER_RING);
        if (requests)
                s->stats.received += total;
        else
                s->stats.completed += total;
        return total;
}

static unsigned run_local(struct shard *s)
{
        struct rx_msg *m = backlog_take(&s->out_req[s->id]), *next;
        unsigned n = 0;
        uint64_t prev = time_coarse_ns();

        for (; m; m = next, n++) {
                const char *name = m->name;

                next = m->next;         /* run_request relinks m */
                s->stats.received++;
                run_request(s, m);
                rx_loop_account(s->loop, name, &prev, time_coarse_ns());
        }
        for (m = backlog_take(&s->out_resp[s->id]); m; m = next, n++) {
                const char *name = m->name;     /* done may free m */

                next = m->next;
                s->stats.completed++;
                m->done(s->loop, m);
                rx_loop_account(s->loop, name, &prev, time_coarse_ns());
        }
        return n;
}

static unsigned drain_alien(struct shard *s)
{
        struct rx_mpsc_node *node = rx_mpsc_take_all(&s->alien), *next;
        unsigned n = 0;
        uint64_t prev = time_coarse_ns();

        for (; node; node = next, n++) {
                struct rx_alien_req *req = container_of(node, struct rx_alien_req, node);

                next = node->next;      /* req may be freed once completed */
                req->run(s->loop, req);
                rx_loop_account(s->loop, "alien", &prev, time_coarse_ns());
        }
        s->stats.alien_received += n;
        return n;
}

static unsigned smp_poll(struct rx_loop *loop, struct rx_poller *p)
{
        struct shard *s = container_of(p, struct shard, poller);
        struct rx_smp *smp = s->smp;
        unsigned n = smp->n, work = 0;

        for (unsigned peer = 0; peer < n; peer++) {
                if (peer == s->id)
                        continue;
                work += drain_ring(s, &smp->req[peer * n + s->id], true);
                work += drain_ring(s, &smp->resp[peer * n + s->id], false);
        }
        work += run_local(s);
        if (!rx_mpsc_is_empty(&s->alien))
                work += drain_alien(s);
        flush_all(s);
        return work;
}

static bool smp_has_work(struct rx_loop *loop, struct rx_poller *p)
{
        struct shard *s = container_of(p, struct shard, poller);
        struct rx_smp *smp = s->smp;
        unsigned n = smp->n;

        if (!rx_mpsc_is_empty(&s->alien))
                return true;
        for (unsigned peer = 0; peer < n; peer++) {
                if (s->out_req[peer].head || s->out_resp[peer].head)
                        return true;
                if (peer == s->id)
                        continue;
                if (!rx_spsc_is_empty(&smp->req[peer * n + s->id]) ||
                    !rx_spsc_is_empty(&smp->resp[peer * n + s->id]))
                        return true;
        }
        return false;
}

int rx_smp_submit(struct rx_loop *src, unsigned to, struct rx_msg *m)
{
        struct shard *s;

        SCREE_ASSERT_SHARD(src);
        if (!src->smp || to >= src->smp->n)
                return -EINVAL;
        s = shard_of(src);
        m->from = (uint16_t)s->id;
        m->to = (uint16_t)to;
        backlog_append(&s->out_req[to], m);
        s->stats.sent++;
        if (to != s->id && s->out_req[to].n >= s->smp->opts.batch)
                flush_one(s, &s->out_req[to], &s->smp->req[s->id * s->smp->n + to], to);
        return 0;
}

void rx_smp_reply(struct rx_loop *dst, struct rx_msg *m)
{
        struct shard *s = shard_of(dst);
        unsigned to = m->from;

        SCREE_ASSERT_SHARD(dst);
        backlog_append(&s->out_resp[to], m);
        if (to != s->id && s->out_resp[to].n >= s->smp->opts.batch)
                flush_one(s, &s->out_resp[to], &s->smp->resp[s->id * s->smp->n + to], to);
}

void rx_smp_flush(struct rx_loop *src)
{
        flush_all(shard_of(src));
}

const struct rx_smp_stats *rx_smp_stats(const struct rx_loop *loop)
{
        return &shard_of(loop)->stats;
}

unsigned rx_smp_count(const struct rx_smp *smp)
{
        return smp->n;
}

struct rx_loop *rx_smp_loop(const struct rx_smp *smp, unsigned i)
{
        return i < smp->n ? smp->shards[i].loop : NULL;
}

struct rx_smp *rx_loop_smp(const struct rx_loop *loop)
{
        return loop->smp;
}

/* ---- run a function elsewhere, map-reduce ---- */

struct call_msg {
        struct rx_msg m;
        rx_call_fn fn;
        rx_result_fn done;
        void *arg;
        int64_t result;
};

static int call_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct call_msg *c = container_of(m, struct call_msg, m);

        c->result = c->fn(dst, c->arg);
        return 0;
}

static void call_done(struct rx_loop *src, struct rx_msg *m)
{
        struct call_msg *c = container_of(m, struct call_msg, m);

        c->done(src, c->result, c->arg);
        free(c);
}

int rx_smp_call(struct rx_loop *src, unsigned to, rx_call_fn fn, rx_result_fn done, void *arg)
{
        struct call_msg *c;
        int r;

        if (!src->smp || to >= src->smp->n)
                return -EINVAL;
        c = malloc(sizeof(*c));
        if (!c)
                return -ENOMEM;
        *c = (struct call_msg){ .m = { .run = call_run, .done = call_done, .name = "smp:call" },
                                .fn = fn, .done = done, .arg = arg };
        r = rx_smp_submit(src, to, &c->m);
        if (r < 0)
                free(c);
        return r;
}

struct mr_msg {
        struct rx_msg m;
        struct map_reduce *mr;
        int64_t result;
};

struct map_reduce {
        rx_call_fn map;
        rx_reduce_fn reduce;
        rx_result_fn done;
        void *arg;
        int64_t acc;
        unsigned remaining;
        struct mr_msg msgs[];
};

static int mr_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct mr_msg *mm = container_of(m, struct mr_msg, m);

        mm->result = mm->mr->map(dst, mm->mr->arg);
        return 0;
}

static void mr_done(struct rx_loop *src, struct rx_msg *m)
{
        struct mr_msg *mm = container_of(m, struct mr_msg, m);
        struct map_reduce *mr = mm->mr;

        mr->acc = mr->reduce(mr->acc, mm->result, mr->arg);
        if (--mr->remaining == 0) {
                mr->done(src, mr->acc, mr->arg);
                free(mr);
        }
}

int rx_smp_map_reduce(struct rx_loop *src, rx_call_fn map, rx_reduce_fn reduce, int64_t init,
                      rx_result_fn done, void *arg)
{
        unsigned n = src->smp ? src->smp->n : 0;
        struct map_reduce *mr;

        if (n == 0)
                return -EINVAL;
        mr = malloc(sizeof(*mr) + n * sizeof(mr->msgs[0]));
        if (!mr)
                return -ENOMEM;
        *mr = (struct map_reduce){ .map = map, .reduce = reduce, .done = done, .arg = arg,
                                   .acc = init, .remaining = n };
        for (unsigned i = 0; i < n; i++) {
                mr->msgs[i] = (struct mr_msg){
                        .m = { .run = mr_run, .done = mr_done, .name = "smp:map" }, .mr = mr };
                rx_smp_submit(src, i, &mr->msgs[i].m);
        }
        return 0;
}

/* ---- foreign threads ---- */

static void fail_alien_leftovers(struct shard *s);

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
        return syscall(SYS_futex, (uint32_t *)(uintptr_t)addr, op, val, NULL, NULL, 0);
}

int rx_smp_alien_submit(struct rx_smp *smp, unsigned shard, struct rx_alien_req *req)
{
        struct shard *s;

        if (shard >= smp->n)
                return -EINVAL;
        if (atomic_load_explicit(&smp->stopping, memory_order_acquire))
                return -SCREE_ESHUTDOWN;
        s = &smp->shards[shard];
        atomic_store_explicit(&req->state, ALIEN_PENDING, memory_order_relaxed);
        rx_mpsc_push(&s->alien, &req->node);
        full_barrier();
        /* Dekker with shard_main's exit: either the shard's final drain sees
         * our push, or we see `closed` and fail what is left ourselves (the
         * take is one exchange, so each request is failed exactly once). */
        if (atomic_load_explicit(&s->closed, memory_order_seq_cst)) {
                fail_alien_leftovers(s);
                return 0;
        }
        rx_loop_wake(s->loop);
        return 0;
}

void rx_alien_complete(struct rx_alien_req *req, int64_t result)
{
        uint32_t old;

        req->result = result;
        if (req->complete) {
                req->complete(req);
                return;
        }
        old = atomic_exchange_explicit(&req->state, ALIEN_DONE, memory_order_acq_rel);
        /* The waiter may free req as soon as it sees DONE; a wake on a reused
         * address is a spurious wakeup, which futex waiters tolerate. */
        if (old == ALIEN_WAITING)
                futex(&req->state, FUTEX_WAKE_PRIVATE, INT_MAX);
}

bool rx_alien_is_done(struct rx_alien_req *req)
{
        return atomic_load_explicit(&req->state, memory_order_acquire) == ALIEN_DONE;
}

/*
 * How long rx_alien_wait spins before it sleeps, per waiting thread, in
 * pauses (~30 ns each on the machines measured). A shard answers a read
 * in a few microseconds, well inside the longest spin; a durable write
 * answers after an fdatasync, a millisecond later, and a thread that spun
 * through the whole budget for it each time burnt CPUs the shard and the
 * disk's workers needed (16 blocking durable writers on 2 CPUs spun away
 * a third of the machine). So the budget halves, down to
 * RX_ALIEN_SPIN_MIN, once answers came long after the spin gave up (the
 * caller slept ALIEN_SLEPT_LONG_NS or more) ALIEN_LONG_STREAK times in a
 * row, and again on each slow answer after those; it doubles back, up to
 * RX_ALIEN_SPIN_MAX, each time the spin caught one or the caller slept
 * only briefly. The streak keeps the odd
 * slow answer (a flush's turn on the shard) from cutting the spin of a
 * thread whose answers are fast: halving it on every such answer made
 * the next ones miss the spin and took 11% off blocking writes.
 */
#define ALIEN_SLEPT_LONG_NS (200 * NS_PER_US)
#define ALIEN_LONG_STREAK 4u

_Static_assert((RX_ALIEN_SPIN_MAX & (RX_ALIEN_SPIN_MAX - 1)) == 0 &&
                       RX_ALIEN_SPIN_MAX % RX_ALIEN_SPIN_MIN == 0,
               "the spin halves from MAX to MIN and doubles back in powers of two");

static _Thread_local uint32_t alien_spin = RX_ALIEN_SPIN_MAX;
static _Thread_local uint32_t alien_long;       /* long sleeps in a row */

static void alien_spin_more(void)
{
        alien_long = 0;
        alien_spin = alien_spin * 2 < RX_ALIEN_SPIN_MAX ? alien_spin * 2 : RX_ALIEN_SPIN_MAX;
}

uint32_t rx_alien_spin_budget(void)
{
        return alien_spin;
}

int64_t rx_alien_wait(struct rx_alien_req *req)
{
        uint32_t expected = ALIEN_PENDING;
        uint64_t slept;

        for (uint32_t i = 0; i < alien_spin; i++) {
                if (rx_alien_is_done(req)) {
                        alien_spin_more();
                        return req->result;
                }
                cpu_relax();
        }
        slept = time_now_ns();
        atomic_compare_exchange_strong_explicit(&req->state, &expected, ALIEN_WAITING,
                                                memory_order_acq_rel, memory_order_acquire);
        while (!rx_alien_is_done(req))
                futex(&req->state, FUTEX_WAIT_PRIVATE, ALIEN_WAITING);
        slept = time_now_ns() - slept;
        if (slept < ALIEN_SLEPT_LONG_NS)
                alien_spin_more();
        else if (++alien_long >= ALIEN_LONG_STREAK && alien_spin / 2 >= RX_ALIEN_SPIN_MIN)
                alien_spin /= 2;
        return req->result;
}

/* ---- threads, start-up and teardown ---- */

static void use_own_arena(void)
{
#if SCREE_HAVE_JEMALLOC
        unsigned arena;
        size_t sz = sizeof(arena);

        if (mallctl("arenas.create", &arena, &sz, NULL, 0) == 0)
                mallctl("thread.arena", NULL, NULL, &arena, sizeof(arena));
#endif
}

static int pin(int cpu)
{
        cpu_set_t set;

        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void fail_alien_leftovers(struct shard *s)
{
        struct rx_mpsc_node *node = rx_mpsc_take_all(&s->alien), *next;

        for (; node; node = next) {
                next = node->next;
                rx_alien_complete(container_of(node, struct rx_alien_req, node), -SCREE_ESHUTDOWN);
        }
}

/* Reports this shard's set-up result and waits for the verdict. Returns true
 * to run, false if any shard failed. */
static bool report_ready(struct shard *s, int err)
{
        struct rx_smp *smp = s->smp;
        bool go;

        pthread_mutex_lock(&smp->mu);
        s->err = err;
        if (err < 0 && smp->first_err == 0)
                smp->first_err = err;
        smp->n_ready++;
        pthread_cond_broadcast(&smp->cv);
        while (!smp->go && !smp->abort)
                pthread_cond_wait(&smp->cv, &smp->mu);
        go = smp->go;
        pthread_mutex_unlock(&smp->mu);
        return go;
}

static void *shard_main(void *arg)
{
        struct shard *s = arg;
        struct rx_smp *smp = s->smp;
        int r = 0;

        check_current_shard = (int)s->id;
        if (!smp->opts.no_pin)
                r = pin(s->cpu);
        use_own_arena();
        if (r == 0)
                r = rx_loop_new(&smp->opts.loop, &s->loop);
        if (r == 0) {
                s->loop->shard_id = s->id;
                s->loop->smp = smp;
                s->poller.poll = smp_poll;
                s->poller.has_work = smp_has_work;
                rx_loop_add_poller(s->loop, &s->poller);
        }
        if (!report_ready(s, r))
                return NULL;
        if (smp->opts.on_start)
                smp->opts.on_start(s->loop, smp->opts.arg);
        rx_loop_run(s->loop);
        /* Nothing will drain the inbox any more: fail what is queued, and make
         * submitters that race with this fail their own (see alien_submit). */
        atomic_store_explicit(&s->closed, true, memory_order_seq_cst);
        full_barrier();
        fail_alien_leftovers(s);
        return NULL;
}

/* Cache-line aligned and zeroed, so teardown can walk a half-built group. */
static void *zalloc_aligned(size_t size)
{
        void *p = aligned_alloc(CACHELINE_BYTES, size);

        if (p)
                memset(p, 0, size);
        return p;
}

static int smp_alloc(struct rx_smp *smp, unsigned n)
{
        smp->shards = zalloc_aligned(n * sizeof(struct shard));
        smp->req = zalloc_aligned((size_t)n * n * sizeof(struct rx_spsc));
        smp->resp = zalloc_aligned((size_t)n * n * sizeof(struct rx_spsc));
        if (!smp->shards || !smp->req || !smp->resp)
                return -ENOMEM;
        for (unsigned a = 0; a < n; a++) {
                struct shard *s = &smp->shards[a];

                s->smp = smp;
                s->id = a;
                s->cpu = smp->cpus[a];
                rx_mpsc_init(&s->alien);
                s->out_req = calloc(n, sizeof(struct backlog));
                s->out_resp = calloc(n, sizeof(struct backlog));
                if (!s->out_req || !s->out_resp)
                        return -ENOMEM;
                for (unsigned b = 0; b < n; b++) {
                        int r;

                        if (a == b)
                                continue;
                        r = rx_spsc_init(&smp->req[a * n + b], smp->opts.queue_capacity);
                        if (r == 0)
                                r = rx_spsc_init(&smp->resp[a * n + b], smp->opts.queue_capacity);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Fills smp->cpus: shard i runs on the i-th CPU of the affinity mask, round robin. */
static int pick_cpus(struct rx_smp *smp, unsigned *n)
{
        cpu_set_t set;
        int avail[CPU_SETSIZE], n_avail = 0;

        if (sched_getaffinity(0, sizeof(set), &set) < 0)
                return -errno;
        for (int c = 0; c < CPU_SETSIZE; c++)
                if (CPU_ISSET(c, &set))
                        avail[n_avail++] = c;
        if (n_avail == 0)
                return -EINVAL;
        if (*n == 0)
                *n = (unsigned)n_avail;
        if (*n > SCREE_MAX_SHARDS || *n > UINT16_MAX)
                return -EINVAL;
        smp->cpus = calloc(*n, sizeof(int));
        if (!smp->cpus)
                return -ENOMEM;
        for (unsigned i = 0; i < *n; i++)
                smp->cpus[i] = avail[i % (unsigned)n_avail];
        return 0;
}

static int start_threads(struct rx_smp *smp)
{
        unsigned started = 0;
        int r = 0;

        for (unsigned i = 0; i < smp->n; i++) {
                struct shard *s = &smp->shards[i];

                r = -pthread_create(&s->thread, NULL, shard_main, s);
                if (r < 0)
                        break;
                s->thread_started = true;
                started++;
        }
        pthread_mutex_lock(&smp->mu);
        if (r < 0 && smp->first_err == 0)
                smp->first_err = r;
        /* Wait for every started shard, even on failure: until they report,
         * they are still writing their loop pointers. */
        while (smp->n_ready < started)
                pthread_cond_wait(&smp->cv, &smp->mu);
        r = smp->first_err;
        smp->go = r == 0;
        smp->abort = r != 0;
        pthread_cond_broadcast(&smp->cv);
        pthread_mutex_unlock(&smp->mu);
        return r;
}

int rx_smp_new(const struct rx_smp_opts *opts, struct rx_smp **ret_smp)
{
        struct rx_smp *smp = calloc(1, sizeof(*smp));
        unsigned n = opts ? opts->n_shards : 0;
        int r;

        if (!smp)
                return -ENOMEM;
        if (opts)
                smp->opts = *opts;
        if (!smp->opts.queue_capacity)
                smp->opts.queue_capacity = RX_SMP_DEFAULT_QUEUE_CAPACITY;
        if (!smp->opts.batch)
                smp->opts.batch = RX_SMP_DEFAULT_BATCH;
        atomic_init(&smp->stopping, false);
        pthread_mutex_init(&smp->mu, NULL);
        pthread_cond_init(&smp->cv, NULL);
        r = pick_cpus(smp, &n);
        if (r < 0)
                goto fail;
        smp->n = n;
        r = smp_alloc(smp, n);
        if (r < 0)
                goto fail;
        r = start_threads(smp);
        if (r < 0)
                goto fail;
        *ret_smp = smp;
        return 0;
fail:
        rx_smp_stop(smp);
        rx_smp_free(smp);
        return r;
}

void rx_smp_stop(struct rx_smp *smp)
{
        atomic_store_explicit(&smp->stopping, true, memory_order_seq_cst);
        for (unsigned i = 0; smp->shards && i < smp->n; i++)
                if (smp->shards[i].loop)
                        rx_loop_stop(smp->shards[i].loop);
}

void rx_smp_free(struct rx_smp *smp)
{
        if (!smp)
                return;
        for (unsigned i = 0; smp->shards && i < smp->n; i++)
                if (smp->shards[i].thread_started)
                        pthread_join(smp->shards[i].thread, NULL);
        for (unsigned i = 0; smp->shards && i < smp->n; i++) {
                struct shard *s = &smp->shards[i];

                fail_alien_leftovers(s);
                rx_loop_free(s->loop);
                free(s->out_req);
                free(s->out_resp);
        }
        for (unsigned i = 0; smp->req && smp->resp && i < smp->n * smp->n; i++) {
                rx_spsc_fini(&smp->req[i]);
                rx_spsc_fini(&smp->resp[i]);
        }
        free(smp->req);
        free(smp->resp);
        free(smp->shards);
        free(smp->cpus);
        pthread_mutex_destroy(&smp->mu);
        pthread_cond_destroy(&smp->cv);
        free(smp);
}
