/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Completion queues and the asynchronous row operations (scree.h).
 *
 * A queue is an MPSC inbox (reactor/msgq.h) of finished requests: the
 * shard that answers one pushes it (lock-free) and, if the queue's thread
 * armed the queue when it last found it empty, writes the eventfd once.
 * The queue's thread takes them all with one exchange. So a busy queue
 * costs no system call per completion; an idle one costs one write and
 * one read per wake-up.
 *
 * The protocol: the queue starts armed. Whoever is to write an event
 * counts it in `woken` first; a poll reads the eventfd only when `woken`
 * is ahead of what it read (`drained`) -- so a busy queue makes no system
 * call, and a write that lands after a poll's read is read by the next
 * poll: one spurious wake-up at most, never a descriptor that stays
 * readable with nothing queued. It then takes what was pushed; when it
 * handed everything out it arms the queue again and looks once more (a
 * push between its take and its arming wrote no event: Dekker, with a
 * full fence on both sides); when some remain it writes an event itself
 * so that the descriptor stays readable.
 * A shard counts itself in its `delivering` counter from its push to its
 * write, and scree_cq_free waits for none to be left before it closes the
 * eventfd.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/time.h"
#include "engine/api/req.h"


SCREE_API int scree_cq_new(scree_db *db, scree_cq **ret)
{
        scree_cq *q;

        if (!db || !ret)
                return api_fail(-EINVAL, "scree_cq_new needs a database and somewhere to put "
                                "the queue");
        q = calloc(1, sizeof(*q));
        if (!q)
                return api_fail(-ENOMEM, "out of memory");
        q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (q->efd < 0) {
                int r = -errno;

                free(q);
                return api_fail(r, "no eventfd for a completion queue: %s", scree_strerror(r));
        }
        q->delivering = aligned_alloc(CACHELINE_BYTES, (db->n + 1) * sizeof(*q->delivering));
        if (!q->delivering) {
                close(q->efd);
                free(q);
                return api_fail(-ENOMEM, "out of memory");
        }
        for (unsigned i = 0; i <= db->n; i++)
                atomic_init(&q->delivering[i].n, 0);
        rx_mpsc_init(&q->done);
        atomic_init(&q->armed, true);   /* nothing waits yet: the first push wakes */
        q->db = db;
        atomic_fetch_add(&db->handles, 1);
        *ret = q;
        return 0;
}

SCREE_API int scree_cq_fd(const scree_cq *q)
{
        return q ? q->efd : api_fail(-EINVAL, "no completion queue");
}

SCREE_API uint64_t scree_cq_pending(const scree_cq *q)
{
        return q ? q->pending : 0;
}

void api_cq_submitted(scree_cq *q)
{
        q->pending++;
}

static void wake(scree_cq *q)
{
        uint64_t one = 1;

        atomic_fetch_add_explicit(&q->woken, 1, memory_order_release);
        (void)!write(q->efd, &one, sizeof(one));
}

void api_cq_deliver(struct api_req *rq, int res)
{
        scree_cq *q = rq->cq;

        rq->res = res;
        unsigned me = check_current_shard >= 0 && (unsigned)check_current_shard < q->db->n
                              ? (unsigned)check_current_shard : q->db->n;
        _Atomic uint32_t *busy = &q->delivering[me].n;

        atomic_fetch_add_explicit(busy, 1, memory_order_relaxed);
        rx_mpsc_push(&q->done, &rq->cq_node);   /* rq is the queue's from here */
        /* Dekker with the arming in scree_cq_poll: either it sees this
         * push, or this sees it armed. */
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&q->armed, memory_order_relaxed) &&
            atomic_exchange_explicit(&q->armed, false, memory_order_acq_rel))
                wake(q);
        atomic_fetch_sub_explicit(busy, 1, memory_order_release);
}

/* Requests recycled per queue: a request's engine half stays in the
 * cache of the shard that last ran it, and its head in the queue's
 * thread's, instead of both crossing between cores with every fresh
 * allocation (measured: a fresh calloc'd request cost a cached read on
 * the shard about three times the read itself). */
#define AREQ_INLINE 128u                /* key and value bytes a pooled request holds */
#define AREQ_POOL 1024u                 /* pooled requests kept per queue */

static void areq_free(scree_cq *q, struct api_req *rq)
{
        if (!rq->pooled || q->n_free_reqs >= AREQ_POOL) {
                free(rq);
                return;
        }
        rq->cq_node.next = q->free_reqs ? &q->free_reqs->cq_node : NULL;
        q->free_reqs = rq;
        q->n_free_reqs++;
}

static void pool_free(scree_cq *q)
{
        while (q->free_reqs) {
                struct api_req *rq = q->free_reqs;

                q->free_reqs = rq->cq_node.next
                                       ? container_of(rq->cq_node.next, struct api_req, cq_node)
                                       : NULL;
                free(rq);
        }
        q->n_free_reqs = 0;
}

/* Keeps a completion's message until the next poll. */
static const char *message_keep(scree_cq *q, char *m)
{
        if (!m)
                return "";
        if (q->n_messages == q->messages_cap) {
                size_t cap = q->messages_cap ? q->messages_cap * 2 : 8;
                char **p = realloc(q->messages, cap * sizeof(*p));

                if (!p) {
                        free(m);
                        return "out of memory";
                }
                q->messages = p;
                q->messages_cap = cap;
        }
        q->messages[q->n_messages++] = m;
        return m;
}

static void messages_free(scree_cq *q)
{
        for (size_t i = 0; i < q->n_messages; i++)
                free(q->messages[i]);
        q->n_messages = 0;
}

/* Moves rq's result into c and frees rq. */
static void complete_into(scree_cq *q, struct api_req *rq, scree_completion *c)
{
        *c = (scree_completion){ .tag = rq->tag, .op = (enum scree_op)rq->op, .res = rq->res };
        if (rq->op == API_OP_GET && rq->res == 0)
                c->value = rq->value;
        if (rq->finish)
                rq->finish(rq, c);
        if (rq->message)
                c->message = message_keep(q, rq->message);
        else
                c->message = rq->res < 0 ? api_req_message(rq, rq->res) : "";
        areq_free(q, rq);
}

/* Hands out up to max completions; arm: when it handed everything out,
 * arm the queue (the caller may sleep on efd next). */
static int cq_take(scree_cq *q, scree_completion *out, int max, bool arm)
{
        int n = 0;

        /* Watching the queue: deliveries need not write events. */
        if (!arm && atomic_load_explicit(&q->armed, memory_order_relaxed))
                atomic_store_explicit(&q->armed, false, memory_order_relaxed);
        messages_free(q);
        if (atomic_load_explicit(&q->woken, memory_order_acquire) != q->drained) {
                uint64_t v;

                if (read(q->efd, &v, sizeof(v)) == sizeof(v))  /* clears it */
                        q->drained += v;
        }
        if (!q->backlog)
                q->backlog = rx_mpsc_take_all(&q->done);
        while (n < max && q->backlog) {
                struct rx_mpsc_node *node = q->backlog;

                q->backlog = node->next;
                complete_into(q, container_of(node, struct api_req, cq_node), &out[n++]);
                q->pending--;
        }
        if (q->backlog) {
                wake(q);        /* more wait: keep the descriptor readable */
        } else if (arm) {
                atomic_store_explicit(&q->armed, true, memory_order_relaxed);
                atomic_thread_fence(memory_order_seq_cst);
                /* A push between the take and the arming wrote no event. */
                if (!rx_mpsc_is_empty(&q->done) &&
                    atomic_exchange_explicit(&q->armed, false, memory_order_acq_rel))
                        wake(q);
        }
        return n;
}

/* The arguments of a poll or a wait. 0 or -EINVAL with a message. */
static int take_check(const scree_cq *q, const scree_completion *out, int max)
{
        if (!q || !out || max <= 0)
                return api_fail(-EINVAL, "a poll needs a queue, room for completions and a max of "
                                "1 or more");
        return 0;
}

SCREE_API int scree_cq_poll(scree_cq *q, scree_completion *out, int max)
{
        int r = take_check(q, out, max);

        return r < 0 ? r : cq_take(q, out, max, true);
}

/* How long scree_cq_wait watches the queue before it sleeps on efd: a
 * shard answers a cached read in a few microseconds, and sleeping costs
 * the shard an eventfd write and the thread a wake-up (system calls that
 * cost more than the read on a VM). As the shards' own idle polling. */
#define WAIT_SPIN_NS (50 * NS_PER_US)

/* Watches q's inbox for up to WAIT_SPIN_NS; true if something came. */
static bool spin_for(scree_cq *q, uint64_t deadline)
{
        uint64_t end = time_now_ns() + WAIT_SPIN_NS;

        if (end > deadline)
                end = deadline;
        do {
                for (int i = 0; i < 64; i++) {
                        if (q->backlog || !rx_mpsc_is_empty(&q->done))
                                return true;
                        cpu_relax();
                }
        } while (time_now_ns() < end);
        return false;
}

SCREE_API int scree_cq_wait(scree_cq *q, scree_completion *out, int max, int timeout_ms)
{
        uint64_t deadline = timeout_ms < 0 ? UINT64_MAX
                                           : time_now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
        int r;

        if ((r = api_off_shard()) < 0 || (r = take_check(q, out, max)) < 0)
                return r;
        for (;;) {
                struct pollfd p = { .fd = q->efd, .events = POLLIN };
                uint64_t now;
                int wait_ms, n = cq_take(q, out, max, false);

                if (n != 0 || q->pending == 0)
                        return n;
                if (spin_for(q, deadline))
                        continue;
                n = cq_take(q, out, max, true);         /* arms: then sleep */
                if (n != 0)
                        return n;
                now = time_now_ns();
                if (now >= deadline)
                        return 0;
                wait_ms = deadline == UINT64_MAX ? -1 : (int)((deadline - now) / NS_PER_MS + 1);
                if (poll(&p, 1, wait_ms) < 0 && errno != EINTR)
                        return api_fail(-errno, "polling the queue's descriptor: %s",
                                        strerror(errno));
        }
}

SCREE_API void scree_cq_free(scree_cq *q)
{
        scree_completion c[64];

        if (!q)
                return;
        while (q->pending) {
                int n = scree_cq_wait(q, c, 64, -1);

                for (int i = 0; i < n; i++) {
                        scree_value_free(c[i].value);
                        scree_rows_free(c[i].rows);
                }
                if (n < 0)
                        break;
        }
        /* The last shards to deliver may still be between their push and
         * their write to efd. */
        for (unsigned i = 0; i <= q->db->n; i++)
                while (atomic_load_explicit(&q->delivering[i].n, memory_order_acquire))
                        sched_yield();
        messages_free(q);
        free(q->messages);
        pool_free(q);
        free(q->delivering);
        atomic_fetch_sub(&q->db->handles, 1);
        close(q->efd);
        free(q);
}

/* ---- the simple operations ---- */

/* A request for q with room for extra bytes (key, value): recycled when
 * they fit a pooled one. Its head is zeroed. */
static struct api_req *areq_new(scree_cq *q, void *tag, size_t extra)
{
        bool pooled = extra <= AREQ_INLINE;
        struct api_req *rq = NULL;

        if (!q)
                return NULL;
        if (pooled && q->free_reqs) {
                rq = q->free_reqs;
                q->free_reqs = rq->cq_node.next
                                       ? container_of(rq->cq_node.next, struct api_req, cq_node)
                                       : NULL;
                q->n_free_reqs--;
        } else {
                rq = malloc(sizeof(*rq) + (pooled ? AREQ_INLINE : extra));
        }
        if (!rq)
                return NULL;
        memset(rq, 0, API_REQ_HEAD);
        rq->cq = q;
        rq->tag = tag;
        rq->pooled = pooled;
        return rq;
}

/* Copies key (and value) into rq, checks, routes and sends it. */
static int areq_start(struct api_req *rq, scree_table *t, enum api_op op, const void *key,
                      size_t key_len, const void *value, size_t value_len)
{
        uint8_t *copy = (uint8_t *)(rq + 1);
        unsigned shard;
        int r;

        if (!rq)
                return api_fail(-ENOMEM, "out of memory");
        if (key_len && key)
                memcpy(copy, key, key_len);
        if (value_len)
                memcpy(copy + key_len, value, value_len);
        r = api_req_prep(rq, t, op, key ? copy : NULL, key_len, &shard);
        if (r == 0 && op == API_OP_PUT)
                r = api_value_check(t->db, value, value_len);
        rq->m.value = copy + key_len;
        rq->m.value_len = (uint32_t)value_len;
        if (r == 0)
                r = api_req_send(rq, shard);
        if (r < 0) {
                free(rq);
                return r;
        }
        api_cq_submitted(rq->cq);
        return 0;
}

static size_t extra_bytes(size_t key_len, size_t value_len)
{
        return key_len + value_len;
}

/* The arguments every asynchronous row operation checks before it
 * copies anything. 0 or -EINVAL with a message. */
static int async_check(const scree_cq *q, const scree_table *t, const void *key, size_t key_len,
                       const void *value, size_t value_len)
{
        int r;

        if (!q || !t || (t->db != q->db))
                return api_fail(-EINVAL, "an asynchronous call needs a queue and a table of its "
                                "database");
        if ((r = api_key_check(t, key, key_len)) < 0)
                return r;
        return api_value_check(t->db, value, value_len);
}

SCREE_API int scree_put_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                              const void *value, size_t value_len, uint64_t ttl_ms, void *tag)
{
        struct api_req *rq;
        int r;

        if ((r = async_check(q, t, key, key_len, value, value_len)) < 0 ||
            (r = api_ttl_check(ttl_ms)) < 0)
                return r;
        rq = areq_new(q, tag, extra_bytes(key_len, value_len));
        if (rq) {
                rq->m.kind = ENG_MUT_PUT;
                rq->m.expiry_ms = api_expiry(ttl_ms);
        }
        return areq_start(rq, t, API_OP_PUT, key, key_len, value, value_len);
}

/* A new request for an operation on one key (no value), checked. */
static int key_req(scree_cq *q, scree_table *t, const void *key, size_t key_len, void *tag,
                   struct api_req **ret)
{
        int r;

        if ((r = async_check(q, t, key, key_len, NULL, 0)) < 0)
                return r;
        if (!(*ret = areq_new(q, tag, key_len))) {
                (void)api_fail(-ENOMEM, "out of memory");
                return -ENOMEM; /* spelled out: -O3 warns that api_fail might return >= 0 */
        }
        return 0;
}

SCREE_API int scree_del_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                              void *tag)
{
        struct api_req *rq;
        int r = key_req(q, t, key, key_len, tag, &rq);

        if (r < 0)
                return r;
        rq->m.kind = ENG_MUT_DEL;
        return areq_start(rq, t, API_OP_DEL, key, key_len, NULL, 0);
}

SCREE_API int scree_get_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                              void *tag)
{
        struct api_req *rq;
        int r = key_req(q, t, key, key_len, tag, &rq);

        if (r < 0)
                return r;
        rq->want_value = true;
        return areq_start(rq, t, API_OP_GET, key, key_len, NULL, 0);
}

SCREE_API int scree_update_async(scree_cq *q, scree_table *t, const void *key, size_t key_len,
                                 scree_update_fn fn, void *arg, void *tag)
{
        struct api_req *rq;
        int r;

        if (!fn)
                return api_fail(-EINVAL, "an update needs its function");
        if ((r = key_req(q, t, key, key_len, tag, &rq)) < 0)
                return r;
        rq->fn = fn;
        rq->fn_arg = arg;
        return areq_start(rq, t, API_OP_UPDATE, key, key_len, NULL, 0);
}
