/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_uring setup with feature probing, plus submit, reap and wait.
 *
 * Setup tries the best flag set first and falls back one step at a time:
 *   SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN | SUBMIT_ALL  (6.1+)
 *   COOP_TASKRUN | SUBMIT_ALL                                  (5.19+)
 *   none
 * With DEFER_TASKRUN completions are only posted when this thread enters the
 * kernel with GETEVENTS: rx_uring_wait and rx_uring_collect do; a plain
 * submit does not. TASKRUN_FLAG is left off on purpose: with it liburing's
 * submit and peek enter the kernel whenever a completion is pending, which
 * turns the loop into a syscall poller; on a VM that busy vCPU cost 13-25%
 * of 4K random-read IOPS against blocking in the ring (docs/design.md,
 * "TASKRUN_FLAG").
 * Required: IORING_FEAT_NODROP and EXT_ARG (5.11) and the opcodes io.c uses;
 * anything missing is -SCREE_EUNSUPPORTED rather than a later surprise.
 * Shard-local (SINGLE_ISSUER binds the ring to the creating thread).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/time.h"
#include "reactor/loop_int.h"
#include "reactor/uring.h"
#include "reactor/uring_int.h"

static const unsigned flag_sets[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN |
                IORING_SETUP_SUBMIT_ALL,
        IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SUBMIT_ALL,
        0,
};

static const int required_ops[] = {
        IORING_OP_NOP,   IORING_OP_OPENAT, IORING_OP_READ, IORING_OP_WRITE,
        IORING_OP_FSYNC, IORING_OP_FALLOCATE, IORING_OP_CLOSE, IORING_OP_ACCEPT,
        IORING_OP_RECV,  IORING_OP_SEND, IORING_OP_UNLINKAT, IORING_OP_RENAMEAT,
};

static int check_ops(struct io_uring *ring, struct rx_uring_features *f)
{
        struct io_uring_probe *p = io_uring_get_probe_ring(ring);
        int r = 0;

        if (!p)
                return -SCREE_EUNSUPPORTED;
        for (size_t i = 0; i < sizeof(required_ops) / sizeof(required_ops[0]); i++)
                if (!io_uring_opcode_supported(p, required_ops[i]))
                        r = -SCREE_EUNSUPPORTED;
        f->msg_ring = io_uring_opcode_supported(p, IORING_OP_MSG_RING);
        io_uring_free_probe(p);
        return r;
}

static int setup_ring(struct io_uring *ring, uint32_t entries, struct rx_uring_features *f)
{
        struct io_uring_params params;
        int r = -EINVAL;

        for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
                memset(&params, 0, sizeof(params));
                params.flags = flag_sets[i];
                r = io_uring_queue_init_params(entries, ring, &params);
                if (r != -EINVAL)
                        break;  /* EINVAL = flags unknown to this kernel: try fewer */
        }
        if (r < 0)
                return r;
        f->setup_flags = params.flags;
        f->kernel_features = params.features;
        f->single_issuer = params.flags & IORING_SETUP_SINGLE_ISSUER;
        f->defer_taskrun = params.flags & IORING_SETUP_DEFER_TASKRUN;
        f->coop_taskrun = params.flags & IORING_SETUP_COOP_TASKRUN;
        f->submit_all = params.flags & IORING_SETUP_SUBMIT_ALL;
        return 0;
}

int rx_uring_new(uint32_t entries, struct rx_uring **ret, struct rx_uring_features *ret_feat)
{
        struct rx_uring_features f;
        struct rx_uring *u = calloc(1, sizeof(*u));
        int r;

        if (!u)
                return -ENOMEM;
        memset(&f, 0, sizeof(f));
        r = setup_ring(&u->ring, entries, &f);
        if (r < 0) {
                free(u);
                return r;
        }
        r = check_ops(&u->ring, &f);
        if (r == 0 && (!(f.kernel_features & IORING_FEAT_NODROP) ||
                       !(f.kernel_features & IORING_FEAT_EXT_ARG)))
                r = -SCREE_EUNSUPPORTED;
        if (r < 0) {
                io_uring_queue_exit(&u->ring);
                free(u);
                return r;
        }
        /* Saves an fd lookup on every io_uring_enter; optional. */
        f.registered_ring_fd = io_uring_register_ring_fd(&u->ring) == 1;
        *ret = u;
        *ret_feat = f;
        return 0;
}

void rx_uring_free(struct rx_uring *u)
{
        if (!u)
                return;
        io_uring_queue_exit(&u->ring);
        free(u);
}

unsigned rx_uring_pending(const struct rx_uring *u)
{
        return io_uring_sq_ready(&u->ring);
}

unsigned rx_uring_in_flight(const struct rx_uring *u)
{
        return u->in_flight;
}

static int transient_ok(int r)
{
        return r == -EINTR || r == -EAGAIN || r == -EBUSY ? 0 : r;
}

int rx_uring_flush(struct rx_uring *u)
{
        if (io_uring_sq_ready(&u->ring) == 0)
                return 0;
        return transient_ok(io_uring_submit(&u->ring));
}

int rx_uring_collect(struct rx_uring *u)
{
        if (!u->in_flight)
                return 0;
        return transient_ok(io_uring_get_events(&u->ring));
}

unsigned rx_uring_reap(struct rx_loop *loop, unsigned max)
{
        struct rx_uring *u = loop->uring;
        struct io_uring_cqe *cqes[64];
        unsigned total = 0;

        while (total < max) {
                unsigned n = io_uring_peek_batch_cqe(&u->ring, cqes, 64);
                uint64_t prev;

                if (n == 0)
                        break;
                prev = time_coarse_ns();
                for (unsigned i = 0; i < n; i++) {
                        struct rx_op *op = io_uring_cqe_get_data(cqes[i]);
                        int res = cqes[i]->res;
                        /* op may be freed by its callback: name it first. */
                        const char *name = rx_op_kind_name((enum rx_op_kind)op->kind);

                        /* Consume before the callback: it may submit and reap. */
                        io_uring_cqe_seen(&u->ring, cqes[i]);
                        u->in_flight--;
                        if (unlikely(op->injected)) {
                                res = op->injected;
                                op->injected = 0;
                        }
                        op->cb(loop, op, res);
                        rx_loop_account(loop, name, &prev, time_coarse_ns());
                }
                total += n;
                loop->stats.io_completed += n;
        }
        return total;
}

int rx_uring_wait(struct rx_uring *u, uint64_t timeout_ns)
{
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts;
        int r;

        if (timeout_ns == UINT64_MAX) {
                r = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, NULL, NULL);
        } else {
                ts.tv_sec = (long long)(timeout_ns / NS_PER_SEC);
                ts.tv_nsec = (long long)(timeout_ns % NS_PER_SEC);
                r = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
        }
        if (r == -ETIME || r == -EINTR || r == -EAGAIN || r == -EBUSY)
                return 0;
        return r < 0 ? r : 0;
}

static void drain_op_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        (void)loop;
        (void)op;
        (void)res;
}

void rx_uring_drain(struct rx_loop *loop)
{
        struct rx_uring *u = loop->uring;
        struct rx_op cancel = { .cb = drain_op_done, .kind = RX_OP_NOP };
        struct io_uring_sqe *sqe;

        if (!u->in_flight)
                return;
        sqe = io_uring_get_sqe(&u->ring);
        if (!sqe) {
                io_uring_submit(&u->ring);
                sqe = io_uring_get_sqe(&u->ring);
        }
        if (sqe) {
                /* One request cancels every other request in the ring (5.19+). */
                io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
                io_uring_sqe_set_data(sqe, &cancel);
                u->in_flight++;
        }
        while (u->in_flight) {
                int r = io_uring_submit_and_wait(&u->ring, 1);

                if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME)
                        break;  /* the ring itself failed: nothing more will arrive */
                rx_uring_reap(loop, UINT32_MAX);
        }
}

void rx_uring_features_format(const struct rx_uring_features *f, char *buf, unsigned len)
{
        snprintf(buf, len, "io_uring: single_issuer=%s defer_taskrun=%s coop_taskrun=%s "
                           "submit_all=%s registered_ring_fd=%s msg_ring=%s",
                 f->single_issuer ? "yes" : "no", f->defer_taskrun ? "yes" : "no",
                 f->coop_taskrun ? "yes" : "no", f->submit_all ? "yes" : "no",
                 f->registered_ring_fd ? "yes" : "no", f->msg_ring ? "yes" : "no");
}

const char *rx_loop_setup_hint(int err)
{
        switch (err < 0 ? -err : err) {
        case ENOSYS:
                return "io_uring is not available in this kernel (Linux 5.19 or newer is needed)";
        case EPERM:
        case EACCES:
                return "io_uring is not permitted: it is disabled by sysctl kernel.io_uring_disabled "
                       "or blocked by a seccomp profile (in a container, allow io_uring_setup, "
                       "e.g. docker --security-opt seccomp=unconfined)";
        case ENOMEM:
                return "not enough locked memory for the io_uring rings: raise RLIMIT_MEMLOCK "
                       "(ulimit -l) or use a kernel >= 5.12";
        case EMFILE:
        case ENFILE:
                return "too many open files: raise the file descriptor limit (ulimit -n)";
        case SCREE_EUNSUPPORTED:
                return "the kernel's io_uring lacks an operation scree needs "
                       "(Linux 5.19 or newer is needed)";
        default:
                return "io_uring could not be set up";
        }
}
