/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress's worker threads; see scree_stress_worker.h.
 *
 * Each connection holds an output buffer (requests not yet written), an
 * input buffer (bytes of a reply not yet complete), a reply scanner and a
 * ring of the requests in flight, oldest first: a reply completes the
 * oldest. A YCSB read-modify-write is one operation of two requests: its
 * GET goes out first and its SET when the GET's reply arrives, stamped with
 * the operation's original time; it holds one slot of the pipeline
 * throughout.
 *
 * The loop: issue what may be issued (closed loop: fill every connection's
 * window; open loop: every operation whose intended time has come, while
 * the window has room), write, then wait in epoll until a reply arrives or
 * the next intended time (at most 100 ms, to notice abort and stop).
 */
#include "perf/scree_stress_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/time.h"
#include "perf/rng.h"
#include "perf/scree_stress_reply.h"

#define IN_BYTES (STRESS_REPLY_MAX_LINE + 4096u)
#define MAX_WAIT_NS (100 * NS_PER_MS)
#define DRAIN_NS (30 * NS_PER_SEC)      /* replies still missing this long after the end: fatal */
#define CONNECT_TIMEOUT_S 5

/* What a request in flight is for. */
enum pend_kind {
        PEND_OP,        /* an operation of the run: op says which */
        PEND_RMW_GET,   /* the GET of a read-modify-write; its SET follows */
        PEND_LOAD,      /* a pre-load SET */
        PEND_AUTH,
};

struct pend {
        uint64_t t_ns;                  /* intended (open loop) or actual send time */
        uint64_t key;
        uint8_t kind, op;
};

struct conn {
        int fd;
        unsigned num;                   /* global connection number */
        bool want_out;                  /* EPOLLOUT registered */
        char *out;
        size_t out_len, out_off, out_cap;
        char *in;
        size_t in_len;
        struct stress_reply_scanner sc;
        struct pend *q;                 /* ring of q_cap */
        unsigned q_head, q_len, q_cap;
        unsigned ops;                   /* operations in flight (window slots used) */
        double next_ns;                 /* open loop: intended time of the next op */
};

/* The state of one worker thread. */
struct ctx {
        struct stress_worker *w;
        struct stress_shared *sh;
        const struct stress_cfg *cfg;
        int ep;
        struct conn *c;
        unsigned n;
        struct keydist dist;
        uint64_t rng;
        uint64_t pending;               /* requests in flight, all connections */
        uint64_t done, errors;          /* operations completed, error replies */
        bool oom;
        /* the phase */
        bool loading, open_loop;
        bool past_end;                  /* a pass ran at or after deadline_ns */
        unsigned window;
        uint64_t issued, quota, deadline_ns, load_next, load_end;
        double interval_ns;
};

void stress_fail(struct stress_shared *sh, const char *fmt, ...)
{
        va_list ap;

        if (!atomic_flag_test_and_set(&sh->err_set)) {
                va_start(ap, fmt);
                vsnprintf(sh->err, sizeof(sh->err), fmt, ap);
                va_end(ap);
        }
        atomic_store(&sh->abort, true);
}

/* ---- request writing ---- */

static void out_put(struct ctx *x, struct conn *c, const void *p, size_t len)
{
        char *o = mem_grow(c->out, &c->out_cap, c->out_len + len, 1);

        if (!o) {
                x->oom = true;
                return;
        }
        c->out = o;
        memcpy(c->out + c->out_len, p, len);
        c->out_len += len;
}

/* Decimal digits of v, at least min_digits (zero-padded), into buf; returns the length. */
static size_t fmt_u64(char *buf, uint64_t v, unsigned min_digits)
{
        char tmp[24];
        size_t n = 0;

        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        while (n < min_digits)
                tmp[n++] = '0';
        for (size_t i = 0; i < n; i++)
                buf[i] = tmp[n - 1 - i];
        return n;
}

/* `<c><n>\r\n`: an array or bulk header. */
static void put_header(struct ctx *x, struct conn *c, char type, uint64_t n)
{
        char buf[32];
        size_t len;

        buf[0] = type;
        len = 1 + fmt_u64(buf + 1, n, 1);
        buf[len++] = '\r';
        buf[len++] = '\n';
        out_put(x, c, buf, len);
}

static void put_bulk(struct ctx *x, struct conn *c, const char *p, size_t len)
{
        put_header(x, c, '$', len);
        out_put(x, c, p, len);
        out_put(x, c, "\r\n", 2);
}

/* Key i: the prefix and i in at least 12 digits, as redis-benchmark's
 * __rand_int__, so every key of a run has the same length; moved by
 * --key-offset, then scattered by --key-scatter. */
static void put_key(struct ctx *x, struct conn *c, uint64_t i)
{
        char buf[256];
        size_t plen = strlen(x->cfg->key_prefix);

        i += x->cfg->key_offset;
        if (x->cfg->key_scatter) {
                /* (i * MUL) mod 10^12 in 64 bits: both below 2^40, MUL cut at bit 20 */
                uint64_t a = i % STRESS_SCATTER_MOD, hi = STRESS_SCATTER_MUL >> 20,
                         lo = STRESS_SCATTER_MUL & ((1u << 20) - 1);

                i = (((a * hi) % STRESS_SCATTER_MOD << 20) + a * lo) % STRESS_SCATTER_MOD;
        }
        memcpy(buf, x->cfg->key_prefix, plen);
        put_bulk(x, c, buf, plen + fmt_u64(buf + plen, i, 12));
}

static void push_pend(struct conn *c, struct ctx *x, uint64_t t_ns, uint64_t key, int kind, int op)
{
        struct pend *p = &c->q[(c->q_head + c->q_len) % c->q_cap];

        p->t_ns = t_ns;
        p->key = key;
        p->kind = (uint8_t)kind;
        p->op = (uint8_t)op;
        c->q_len++;
        x->pending++;
        x->w->requests += kind != PEND_LOAD && kind != PEND_AUTH;
}

static void send_set(struct ctx *x, struct conn *c, uint64_t key)
{
        put_header(x, c, '*', 3);
        put_bulk(x, c, "SET", 3);
        put_key(x, c, key);
        put_bulk(x, c, x->cfg->value, x->cfg->value_size);
}

static void send_get(struct ctx *x, struct conn *c, uint64_t key)
{
        put_header(x, c, '*', 2);
        put_bulk(x, c, "GET", 3);
        put_key(x, c, key);
}

/* Command mode: the command's words, with the key and the value put in. */
static void send_cmd(struct ctx *x, struct conn *c, uint64_t key)
{
        put_header(x, c, '*', x->cfg->cmd_argc);
        for (unsigned i = 0; i < x->cfg->cmd_argc; i++) {
                const char *wd = x->cfg->cmd_argv[i];

                if (strcmp(wd, "__key__") == 0)
                        put_key(x, c, key);
                else if (strcmp(wd, "__data__") == 0)
                        put_bulk(x, c, x->cfg->value, x->cfg->value_size);
                else
                        put_bulk(x, c, wd, strlen(wd));
        }
}

/* YCSB scan: MGET of up to scan_max consecutive keys from first, inside live. */
static void send_scan(struct ctx *x, struct conn *c, uint64_t first, uint64_t live)
{
        uint64_t n = 1 + xorshift64s(&x->rng) % x->cfg->scan_max;

        if (first >= live)
                first = live - 1;
        if (n > live - first)
                n = live - first;
        put_header(x, c, '*', n + 1);
        put_bulk(x, c, "MGET", 4);
        for (uint64_t i = 0; i < n; i++)
                put_key(x, c, first + i);
}

static uint64_t live_keys(struct ctx *x)
{
        return x->cfg->keyspace + atomic_load_explicit(&x->sh->acked, memory_order_acquire);
}

/* Insert i was answered: advance acked over every answered insert. */
static void insert_acked(struct stress_shared *sh, uint64_t i)
{
        uint64_t a;

        pthread_mutex_lock(&sh->ack_lock);
        a = atomic_load_explicit(&sh->acked, memory_order_relaxed);
        if (i >= a + STRESS_ACK_WINDOW) {
                /* an insert unanswered for 64k others: stop waiting for it */
                memset(sh->ack_ring, 0, sizeof(sh->ack_ring));
                a = i + 1;
        } else if (i >= a) {
                sh->ack_ring[i % STRESS_ACK_WINDOW] = 1;
                while (sh->ack_ring[a % STRESS_ACK_WINDOW]) {
                        sh->ack_ring[a % STRESS_ACK_WINDOW] = 0;
                        a++;
                }
        }
        atomic_store_explicit(&sh->acked, a, memory_order_release);
        pthread_mutex_unlock(&sh->ack_lock);
}

/* One YCSB operation on c. */
static void issue_ycsb(struct ctx *x, struct conn *c, uint64_t t_ns)
{
        enum ycsb_op op = ycsb_next_op(x->cfg->mix, &x->rng);
        uint64_t live = live_keys(x), key;

        if (op == YCSB_INSERT) {
                key = x->cfg->keyspace + atomic_fetch_add_explicit(&x->sh->inserted, 1, memory_order_relaxed);
                send_set(x, c, key);
        } else {
                key = keydist_next(&x->dist, &x->rng, live);
                if (op == YCSB_UPDATE)
                        send_set(x, c, key);
                else if (op == YCSB_SCAN)
                        send_scan(x, c, key, live);
                else
                        send_get(x, c, key);    /* read, and rmw's read */
        }
        push_pend(c, x, t_ns, key, op == YCSB_RMW ? PEND_RMW_GET : PEND_OP, op);
}

/* Issues one operation on c, stamped t_ns. */
static void issue(struct ctx *x, struct conn *c, uint64_t t_ns)
{
        uint64_t key;
        unsigned w;
        int op;

        c->ops++;
        x->issued++;
        if (x->loading) {
                key = x->load_next++;
                send_set(x, c, key);
                push_pend(c, x, t_ns, key, PEND_LOAD, 0);
                return;
        }
        if (x->cfg->mix) {
                issue_ycsb(x, c, t_ns);
                return;
        }
        if (x->cfg->cmd_argc) {
                key = keydist_next(&x->dist, &x->rng, x->cfg->keyspace);
                send_cmd(x, c, key);
                push_pend(c, x, t_ns, key, PEND_OP, STRESS_OP_CMD);
                return;
        }
        w = x->cfg->set_weight + x->cfg->get_weight;
        op = xorshift64s(&x->rng) % w < x->cfg->set_weight ? STRESS_OP_SET : STRESS_OP_GET;
        key = keydist_next(&x->dist, &x->rng, x->cfg->keyspace);
        if (op == STRESS_OP_SET)
                send_set(x, c, key);
        else
                send_get(x, c, key);
        push_pend(c, x, t_ns, key, PEND_OP, op);
}

/* ---- replies ---- */

static void note_error_reply(struct ctx *x, const struct stress_reply *rp)
{
        struct stress_shared *sh = x->sh;
        int len = rp->err ? (int)(rp->err_len < 120 ? rp->err_len : 120) : 0;

        if (!atomic_flag_test_and_set(&sh->error_reply_set))
                snprintf(sh->first_error_reply, sizeof(sh->first_error_reply), "%.*s",
                         len, rp->err ? rp->err : "(blob error)");
        if (x->cfg->stop_on_error)
                stress_fail(sh, "error reply (--stop-on-error): %.*s", len, rp->err ? rp->err : "(blob error)");
}

static void record(struct ctx *x, const struct pend *p, const struct stress_reply *rp, uint64_t now)
{
        struct stress_op_stats *s = &x->w->op[p->op];
        uint64_t lat = now > p->t_ns ? now - p->t_ns : 0;
        struct stress_worker *w = x->w;

        s->ops++;
        s->errors += rp->is_error;
        s->misses += rp->is_nil;
        s->max_ns = lat > s->max_ns ? lat : s->max_ns;
        hist_add(&s->lat, lat);
        w->end_ns = now;
        if (x->cfg->timeseries) {
                size_t sec = (size_t)((now - x->sh->start_ns) / NS_PER_SEC);
                struct stress_second *v;

                if (sec >= w->n_secs) {
                        v = mem_grow(w->secs, &w->secs_cap, sec + 1, sizeof(*v));
                        if (!v) {
                                x->oom = true;
                                return;
                        }
                        memset(v + w->n_secs, 0, (sec + 1 - w->n_secs) * sizeof(*v));
                        w->secs = v;
                        w->n_secs = sec + 1;
                }
                w->secs[sec].ops++;
                w->secs[sec].errors += rp->is_error;
                hist_add(&w->secs[sec].lat, lat);
        }
}

/* The oldest request of c has its reply rp. */
static int on_reply(struct ctx *x, struct conn *c, const struct stress_reply *rp, uint64_t now)
{
        struct pend p;

        if (c->q_len == 0) {
                stress_fail(x->sh, "connection %u: a reply with no request in flight", c->num);
                return -EPROTO;
        }
        p = c->q[c->q_head];
        c->q_head = (c->q_head + 1) % c->q_cap;
        c->q_len--;
        x->pending--;
        if (p.kind == PEND_AUTH) {
                if (rp->is_error)
                        stress_fail(x->sh, "AUTH refused: %.*s", (int)rp->err_len, rp->err ? rp->err : "");
                return rp->is_error ? -EACCES : 0;
        }
        if (rp->is_error)
                note_error_reply(x, rp);
        if (p.kind == PEND_RMW_GET && !rp->is_error) {
                send_set(x, c, p.key);          /* the write half, same slot and stamp */
                push_pend(c, x, p.t_ns, p.key, PEND_OP, p.op);
                return 0;
        }
        if (x->cfg->mix && p.op == YCSB_INSERT && p.kind == PEND_OP)
                insert_acked(x->sh, p.key - x->cfg->keyspace);
        c->ops--;
        x->done++;
        x->errors += rp->is_error;
        if (p.kind == PEND_LOAD) {
                x->w->loaded++;
                x->w->load_errors += rp->is_error;
        } else {
                record(x, &p, rp, now);
        }
        return 0;
}

/* Scans c's input for whole replies. */
static int scan_input(struct ctx *x, struct conn *c, uint64_t now)
{
        size_t off = 0;
        int r = 0;

        while (off < c->in_len && r == 0) {
                struct stress_reply rp;
                bool done;
                ssize_t used = stress_reply_scan(&c->sc, c->in + off, c->in_len - off, &done, &rp);

                if (used < 0) {
                        stress_fail(x->sh, "connection %u: the server's reply is not RESP", c->num);
                        return (int)used;
                }
                off += (size_t)used;
                if (!done)
                        break;
                r = on_reply(x, c, &rp, now);
        }
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        return r;
}

static int conn_read(struct ctx *x, struct conn *c)
{
        for (;;) {
                size_t room = IN_BYTES - c->in_len;
                ssize_t n = read(c->fd, c->in + c->in_len, room);
                int r;

                if (n == 0) {
                        stress_fail(x->sh, "connection %u: closed by the server with %u requests in flight",
                                    c->num, c->q_len);
                        return -ECONNRESET;
                }
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return 0;
                        stress_fail(x->sh, "connection %u: %s", c->num, strerror(errno));
                        return -errno;
                }
                c->in_len += (size_t)n;
                r = scan_input(x, c, time_now_ns());
                if (r < 0 || (size_t)n < room)
                        return r;
        }
}

static int set_events(struct ctx *x, struct conn *c, bool out)
{
        struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0u), .data.ptr = c };

        if (c->want_out == out)
                return 0;
        c->want_out = out;
        if (epoll_ctl(x->ep, EPOLL_CTL_MOD, c->fd, &ev) < 0) {
                stress_fail(x->sh, "epoll_ctl: %s", strerror(errno));
                return -errno;
        }
        return 0;
}

static int conn_flush(struct ctx *x, struct conn *c)
{
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                return set_events(x, c, true);
                        stress_fail(x->sh, "connection %u: %s", c->num, strerror(errno));
                        return -errno;
                }
                c->out_off += (size_t)n;
        }
        c->out_off = c->out_len = 0;
        return set_events(x, c, false);
}

/* ---- the loop ---- */

/* May another operation start now? */
static bool may_issue(const struct ctx *x, uint64_t now)
{
        if (atomic_load_explicit(&x->sh->stop, memory_order_relaxed))
                return false;
        if (x->loading)
                return x->load_next < x->load_end;
        /* open loop: one pass after the end still sends what was due before it */
        return x->issued < x->quota && (now < x->deadline_ns || (x->open_loop && !x->past_end));
}

/* The gap to c's next intended time. */
static double next_gap(struct ctx *x)
{
        if (!x->cfg->poisson)
                return x->interval_ns;
        return -log(1.0 - keydist_unit(&x->rng)) * x->interval_ns;
}

/*
 * Issues what c may issue now and writes it. Returns 0 or a fatal error;
 * *wake_ns lowers to c's next intended time when it waits for one.
 */
static int conn_fill(struct ctx *x, struct conn *c, uint64_t now, uint64_t *wake_ns)
{
        while (c->ops < x->window && may_issue(x, now)) {
                if (x->open_loop) {
                        if (c->next_ns >= (double)x->deadline_ns) {
                                break;
                        }
                        if (c->next_ns > (double)now) {
                                if ((uint64_t)c->next_ns < *wake_ns)
                                        *wake_ns = (uint64_t)c->next_ns;
                                break;
                        }
                        issue(x, c, (uint64_t)c->next_ns);
                        c->next_ns += next_gap(x);
                } else {
                        issue(x, c, now);
                }
        }
        if (x->oom) {
                stress_fail(x->sh, "out of memory");
                return -ENOMEM;
        }
        return c->out_len > c->out_off && !c->want_out ? conn_flush(x, c) : 0;
}

static int wait_events(struct ctx *x, uint64_t now, uint64_t wake_ns)
{
        struct epoll_event ev[64];
        uint64_t wait_ns = wake_ns > now ? wake_ns - now : 0;
        struct timespec ts = time_ns_to_timespec(wait_ns < MAX_WAIT_NS ? wait_ns : MAX_WAIT_NS);
        int n = epoll_pwait2(x->ep, ev, 64, &ts, NULL), r = 0;

        if (n < 0) {
                if (errno == EINTR)
                        return 0;
                stress_fail(x->sh, "epoll_pwait2: %s", strerror(errno));
                return -errno;
        }
        for (int i = 0; i < n && r == 0; i++) {
                struct conn *c = ev[i].data.ptr;

                if (ev[i].events & EPOLLOUT)
                        r = conn_flush(x, c);
                if (r == 0 && ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                        r = conn_read(x, c);
        }
        return r;
}

/* Counts the open loop's operations that were due by end_ns but never sent. */
static void count_late(struct ctx *x, uint64_t end_ns)
{
        if (!x->open_loop || x->loading || x->issued >= x->quota)
                return;
        for (unsigned i = 0; i < x->n; i++) {
                double due = (double)end_ns - x->c[i].next_ns;

                if (due > 0)
                        x->w->late += (uint64_t)ceil(due / x->interval_ns);
        }
}

/*
 * Runs the phase set up in x until nothing more may be issued and every
 * reply is in. Returns 0, or a fatal error (recorded in sh).
 */
static int run_phase(struct ctx *x)
{
        uint64_t drain_from = 0;
        int r = 0;

        while (r == 0) {
                uint64_t now = time_now_ns(), wake_ns = now + MAX_WAIT_NS;

                if (atomic_load_explicit(&x->sh->abort, memory_order_relaxed))
                        return -ECANCELED;
                for (unsigned i = 0; i < x->n && r == 0; i++)
                        r = conn_fill(x, &x->c[i], now, &wake_ns);
                if (r < 0)
                        return r;
                x->past_end = now >= x->deadline_ns;
                atomic_store_explicit(&x->w->progress_ops, x->done, memory_order_relaxed);
                atomic_store_explicit(&x->w->progress_errors, x->errors, memory_order_relaxed);
                if (!may_issue(x, now)) {
                        if (!drain_from) {
                                drain_from = now;
                                count_late(x, now < x->deadline_ns ? now : x->deadline_ns);
                        }
                        if (x->pending == 0)
                                break;
                        if (now - drain_from > DRAIN_NS) {
                                stress_fail(x->sh, "%" PRIu64 " replies still missing %u s after the last request",
                                            x->pending, (unsigned)(DRAIN_NS / NS_PER_SEC));
                                return -ETIMEDOUT;
                        }
                }
                r = wait_events(x, now, wake_ns);
        }
        return r;
}

/* ---- set-up and phases ---- */

static int conn_open(struct ctx *x, struct conn *c)
{
        const struct stress_cfg *cfg = x->cfg;
        struct timeval tv = { .tv_sec = CONNECT_TIMEOUT_S };
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
        int one = 1;

        c->fd = socket(cfg->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (c->fd < 0)
                goto fail;
        /* connect() gives up after SO_SNDTIMEO */
        if (setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
            connect(c->fd, (const struct sockaddr *)&cfg->addr, cfg->addr_len) < 0)
                goto fail;
        if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0 ||
            fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK) < 0 ||
            epoll_ctl(x->ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
                goto fail;
        return 0;
fail:
        stress_fail(x->sh, "connecting to %s (connection %u): %s", cfg->target, c->num, strerror(errno));
        return -errno;
}

static void ctx_fini(struct ctx *x)
{
        for (unsigned i = 0; x->c && i < x->n; i++) {
                if (x->c[i].fd >= 0)
                        close(x->c[i].fd);
                free(x->c[i].out);
                free(x->c[i].in);
                free(x->c[i].q);
        }
        free(x->c);
        if (x->ep >= 0)
                close(x->ep);
}

static int ctx_init(struct ctx *x, struct stress_worker *w)
{
        const struct stress_cfg *cfg = w->sh->cfg;
        unsigned window = cfg->pipeline > cfg->load_pipeline ? cfg->pipeline : cfg->load_pipeline;

        memset(x, 0, sizeof(*x));
        x->w = w;
        x->sh = w->sh;
        x->cfg = cfg;
        x->dist = cfg->dist;
        x->rng = (cfg->seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (w->id + 1))) | 1;
        x->n = w->n_conns;
        x->ep = epoll_create1(EPOLL_CLOEXEC);
        x->c = calloc(x->n, sizeof(*x->c));
        for (unsigned i = 0; x->c && i < x->n; i++)
                x->c[i].fd = -1;
        if (x->ep < 0 || !x->c) {
                stress_fail(x->sh, "setting up worker %u: %s", w->id, strerror(x->c ? errno : ENOMEM));
                return -ENOMEM;
        }
        for (unsigned i = 0; i < x->n; i++) {
                struct conn *c = &x->c[i];

                c->num = w->conn_first + i;
                c->q_cap = 2 * window + 2;
                c->q = calloc(c->q_cap, sizeof(*c->q));
                c->in = malloc(IN_BYTES);
                if (!c->q || !c->in) {
                        stress_fail(x->sh, "out of memory");
                        return -ENOMEM;
                }
                if (conn_open(x, c) < 0)
                        return -ECONNREFUSED;
        }
        return 0;
}

/* AUTH on every connection; the replies must all be +OK. */
static int auth_all(struct ctx *x)
{
        const char *pw = x->cfg->password;

        for (unsigned i = 0; i < x->n; i++) {
                struct conn *c = &x->c[i];

                put_header(x, c, '*', 2);
                put_bulk(x, c, "AUTH", 4);
                put_bulk(x, c, pw, strlen(pw));
                push_pend(c, x, 0, 0, PEND_AUTH, 0);
        }
        x->loading = false;
        x->quota = 0;           /* issue nothing: only write and collect */
        return run_phase(x);
}

static int load_phase(struct ctx *x)
{
        x->loading = true;
        x->open_loop = false;
        x->window = x->cfg->load_pipeline;
        x->load_next = x->w->load_first;
        x->load_end = x->w->load_first + x->w->load_count;
        return run_phase(x);
}

static int measure_phase(struct ctx *x)
{
        const struct stress_cfg *cfg = x->cfg;
        uint64_t start = x->sh->start_ns;

        x->loading = false;
        x->issued = x->done = x->errors = 0;
        x->open_loop = cfg->rate > 0;
        x->window = cfg->pipeline;
        x->quota = x->w->quota;
        x->deadline_ns = cfg->duration_ns ? start + cfg->duration_ns : UINT64_MAX;
        if (x->dist.kind == KEYDIST_SEQUENTIAL)
                x->dist.cursor = cfg->keyspace * x->w->id / cfg->threads;
        if (x->open_loop) {
                /* each connection rate / conns, staggered so they do not send together */
                x->interval_ns = (double)cfg->conns * 1e9 / cfg->rate;
                for (unsigned i = 0; i < x->n; i++)
                        x->c[i].next_ns = (double)start + (cfg->poisson ? next_gap(x) :
                                          (double)x->c[i].num * 1e9 / cfg->rate);
        }
        x->w->end_ns = start;
        return run_phase(x);
}

static void *worker_main(void *arg)
{
        struct stress_worker *w = arg;
        struct stress_shared *sh = w->sh;
        struct ctx x;
        int r = ctx_init(&x, w);

        if (r == 0 && sh->cfg->password)
                r = auth_all(&x);
        pthread_barrier_wait(&sh->barrier);             /* connected */
        if (sh->cfg->load) {
                if (r == 0 && !atomic_load(&sh->abort))
                        r = load_phase(&x);
                pthread_barrier_wait(&sh->barrier);     /* loaded */
        }
        pthread_barrier_wait(&sh->barrier);             /* sh->start_ns is set */
        if (r == 0 && !atomic_load(&sh->abort))
                measure_phase(&x);
        ctx_fini(&x);
        atomic_store(&w->finished, true);
        return NULL;
}

int stress_worker_start(struct stress_worker *w)
{
        return -pthread_create(&w->tid, NULL, worker_main, w);
}

void stress_worker_join(struct stress_worker *w)
{
        pthread_join(w->tid, NULL);
}

void stress_worker_fini(struct stress_worker *w)
{
        if (!w)
                return;
        free(w->secs);
        w->secs = NULL;
        w->n_secs = w->secs_cap = 0;
}
