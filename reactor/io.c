/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File and socket operations on the shard's ring; see io.h for the contract.
 * Each submit gets an SQE (flushing the SQ once if it is full), preps it with
 * the op as user_data and leaves it queued: the loop submits queued SQEs once
 * per iteration, so many ops share one io_uring_enter. Completions are
 * dispatched by rx_uring_reap (uring.c). Shard-local.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>

#include <scree/scree_errors.h>

#include "reactor/loop_int.h"
#include "reactor/uring_int.h"

static const char *const kind_names[RX_OP_MAX] = {
        [RX_OP_NOP] = "io:nop",         [RX_OP_OPEN] = "io:open",
        [RX_OP_READ] = "io:read",       [RX_OP_WRITE] = "io:write",
        [RX_OP_FSYNC] = "io:fsync",     [RX_OP_FDATASYNC] = "io:fdatasync",
        [RX_OP_FALLOCATE] = "io:fallocate", [RX_OP_CLOSE] = "io:close",
        [RX_OP_ACCEPT] = "io:accept",   [RX_OP_RECV] = "io:recv",
        [RX_OP_SEND] = "io:send",       [RX_OP_UNLINK] = "io:unlink",
        [RX_OP_RENAME] = "io:rename",   [RX_OP_SENDMSG] = "io:sendmsg",
        [RX_OP_MADVISE] = "io:madvise", [RX_OP_WAKE] = "io:wake",
        [RX_OP_LINK] = "io:link",
};

const char *rx_op_kind_name(enum rx_op_kind kind)
{
        return kind >= 0 && kind < RX_OP_MAX ? kind_names[kind] : "io:invalid";
}

void rx_loop_set_fault(struct rx_loop *loop, rx_fault_fn fn, void *ctx)
{
        loop->fault = fn;
        loop->fault_ctx = ctx;
}

/*
 * Returns an SQE for op, or NULL with *ret_err set. When the fault hook
 * injects an error the SQE is already prepped as a NOP that delivers it.
 */
static struct io_uring_sqe *op_sqe(struct rx_loop *loop, struct rx_op *op, enum rx_op_kind kind,
                                   rx_op_cb cb, int *ret_err)
{
        struct io_uring *ring = &loop->uring->ring;
        struct io_uring_sqe *sqe;
        int inj = 0;

        if (unlikely(atomic_load_explicit(&loop->stop, memory_order_relaxed))) {
                *ret_err = -SCREE_ESHUTDOWN;
                return NULL;
        }
        sqe = io_uring_get_sqe(ring);
        if (unlikely(!sqe)) {
                io_uring_submit(ring);
                sqe = io_uring_get_sqe(ring);
                if (!sqe) {
                        *ret_err = -SCREE_EFULL;
                        return NULL;
                }
        }
        /* Only once the op will surely be submitted, so a hook that counts
         * or consumes faults never spends one on a refused submit. */
        if (unlikely(loop->fault != NULL) && kind != RX_OP_WAKE)
                inj = loop->fault(loop->fault_ctx, kind, op);
        op->cb = cb;
        op->kind = (uint8_t)kind;
        op->injected = inj < 0 ? inj : 0;
        io_uring_sqe_set_data(sqe, op);
        loop->uring->in_flight++;
        loop->stats.io_submitted++;
        if (inj < 0) {
                io_uring_prep_nop(sqe);
                io_uring_sqe_set_data(sqe, op);
                return NULL;    /* *ret_err stays 0: submitted as a NOP */
        }
        return sqe;
}

/* Preps with PREP unless the op was already turned into a fault NOP. */
#define SUBMIT(loop, op, kind, cb, PREP)                                  \
        do {                                                              \
                int err_ = 0;                                             \
                struct io_uring_sqe *sqe = op_sqe(loop, op, kind, cb, &err_); \
                if (!sqe)                                                 \
                        return err_;                                      \
                PREP;                                                     \
                io_uring_sqe_set_data(sqe, op);                           \
                return 0;                                                 \
        } while (0)

int rx_nop(struct rx_loop *loop, struct rx_op *op, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_NOP, cb, io_uring_prep_nop(sqe));
}

int rx_file_open(struct rx_loop *loop, struct rx_op *op, const char *path, int flags, mode_t mode,
                 rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_OPEN, cb,
               io_uring_prep_openat(sqe, AT_FDCWD, path, flags | O_CLOEXEC, mode));
}

int rx_file_read(struct rx_loop *loop, struct rx_op *op, int fd, void *buf, uint32_t len,
                 uint64_t off, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_READ, cb, io_uring_prep_read(sqe, fd, buf, len, off));
}

int rx_file_write(struct rx_loop *loop, struct rx_op *op, int fd, const void *buf, uint32_t len,
                  uint64_t off, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_WRITE, cb, io_uring_prep_write(sqe, fd, buf, len, off));
}

int rx_file_fsync(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_FSYNC, cb, io_uring_prep_fsync(sqe, fd, 0));
}

int rx_file_fdatasync(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_FDATASYNC, cb, io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC));
}

int rx_file_fallocate(struct rx_loop *loop, struct rx_op *op, int fd, int mode, uint64_t off,
                      uint64_t len, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_FALLOCATE, cb, io_uring_prep_fallocate(sqe, fd, mode, off, len));
}

int rx_file_unlink(struct rx_loop *loop, struct rx_op *op, const char *path, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_UNLINK, cb, io_uring_prep_unlinkat(sqe, AT_FDCWD, path, 0));
}

int rx_file_rename(struct rx_loop *loop, struct rx_op *op, const char *old_path, const char *new_path,
                   rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_RENAME, cb,
               io_uring_prep_renameat(sqe, AT_FDCWD, old_path, AT_FDCWD, new_path, 0));
}

int rx_file_link(struct rx_loop *loop, struct rx_op *op, const char *old_path, const char *new_path,
                 rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_LINK, cb,
               io_uring_prep_linkat(sqe, AT_FDCWD, old_path, AT_FDCWD, new_path, 0));
}

int rx_fd_close(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_CLOSE, cb, io_uring_prep_close(sqe, fd));
}

int rx_sock_accept(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_ACCEPT, cb, io_uring_prep_accept(sqe, fd, NULL, NULL, SOCK_CLOEXEC));
}

int rx_sock_recv(struct rx_loop *loop, struct rx_op *op, int fd, void *buf, uint32_t len,
                 rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_RECV, cb, io_uring_prep_recv(sqe, fd, buf, len, 0));
}

int rx_sock_send(struct rx_loop *loop, struct rx_op *op, int fd, const void *buf, uint32_t len,
                 rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_SEND, cb, io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL));
}

int rx_sock_sendmsg(struct rx_loop *loop, struct rx_op *op, int fd, const struct msghdr *msg,
                    rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_SENDMSG, cb, io_uring_prep_sendmsg(sqe, fd, msg, MSG_NOSIGNAL));
}

int rx_mem_madvise(struct rx_loop *loop, struct rx_op *op, void *addr, uint32_t len, int advice,
                   rx_op_cb cb)
{
        SUBMIT(loop, op, RX_OP_MADVISE, cb, io_uring_prep_madvise(sqe, addr, len, advice));
}

int rx_loop_arm_wake(struct rx_loop *loop, rx_op_cb cb)
{
        SUBMIT(loop, &loop->wake_op, RX_OP_WAKE, cb,
               io_uring_prep_read(sqe, loop->wake_fd, &loop->wake_buf, sizeof(loop->wake_buf), 0));
}
