/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Asynchronous file and socket operations through the shard's io_uring.
 *
 * The contract (libuv's): every rx_* submit function either returns 0, and
 * then cb runs exactly once, later, on the loop's thread, from the loop --
 * never inside the submit call -- or returns a negative error, and then cb
 * never runs. The op, and every buffer and path passed with it, stay owned
 * by the caller and must stay valid until cb runs.
 *
 * Results reach cb as the syscall's result: >= 0 on success (bytes, fd),
 * -errno on failure. Short reads and writes are the caller's to handle.
 * For O_DIRECT files, buffers, lengths and offsets must be aligned to
 * MEM_DIRECT_ALIGN (base/mem.h); the kernel answers -EINVAL otherwise.
 *
 * Submit errors: -SCREE_ESHUTDOWN after rx_loop_stop, -SCREE_EFULL if the
 * submission queue stays full after flushing it (retry later).
 *
 * A fault hook (tests only) can make any op complete with a chosen error
 * instead of reaching the kernel; the completion is still delivered from the
 * loop, through a NOP, so the contract holds for injected faults too.
 * Shard-local.
 */
#ifndef SCREE_REACTOR_IO_H
#define SCREE_REACTOR_IO_H

#include <stdint.h>
#include <sys/types.h>

struct msghdr;
struct rx_loop;
struct rx_op;

enum rx_op_kind {
        RX_OP_NOP,
        RX_OP_OPEN,
        RX_OP_READ,
        RX_OP_WRITE,
        RX_OP_FSYNC,
        RX_OP_FDATASYNC,
        RX_OP_FALLOCATE,
        RX_OP_CLOSE,
        RX_OP_ACCEPT,
        RX_OP_RECV,
        RX_OP_SEND,
        RX_OP_UNLINK,
        RX_OP_RENAME,
        RX_OP_LINK,
        RX_OP_SENDMSG,
        RX_OP_MADVISE,
        RX_OP_WAKE,             /* internal: the loop's eventfd read */
        RX_OP_MAX,
        RX_OP_INVALID = -1,
};

typedef void (*rx_op_cb)(struct rx_loop *loop, struct rx_op *op, int res);

/*
 * Returns 0 to let op proceed, or a negative errno to complete it with that
 * result instead. Called inside the submit function, on the loop's thread.
 */
typedef int (*rx_fault_fn)(void *ctx, enum rx_op_kind kind, const struct rx_op *op);

/* Caller-provided, usually embedded in a larger request (container_of). */
struct rx_op {
        rx_op_cb cb;
        void *ctx;              /* the caller's; the reactor never touches it */
        int32_t injected;       /* fault hook result, internal */
        uint8_t kind;           /* enum rx_op_kind, set by the submit call */
};

/* Static name of an op kind ("read", "fsync", ...). */
const char *rx_op_kind_name(enum rx_op_kind kind);

/* Installs (or with fn NULL removes) a fault hook on loop. Tests only. */
void rx_loop_set_fault(struct rx_loop *loop, rx_fault_fn fn, void *ctx);

/* Completes with 0 on the next reap; useful to defer work one iteration. */
int rx_nop(struct rx_loop *loop, struct rx_op *op, rx_op_cb cb);

/* openat(AT_FDCWD, path, flags | O_CLOEXEC, mode); res is the new fd. */
int rx_file_open(struct rx_loop *loop, struct rx_op *op, const char *path, int flags,
                 mode_t mode, rx_op_cb cb);
/* pread/pwrite of len bytes at off; res is the byte count (short at EOF). */
int rx_file_read(struct rx_loop *loop, struct rx_op *op, int fd, void *buf, uint32_t len,
                 uint64_t off, rx_op_cb cb);
int rx_file_write(struct rx_loop *loop, struct rx_op *op, int fd, const void *buf, uint32_t len,
                  uint64_t off, rx_op_cb cb);
int rx_file_fsync(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb);
int rx_file_fdatasync(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb);
/* fallocate(fd, mode, off, len). */
int rx_file_fallocate(struct rx_loop *loop, struct rx_op *op, int fd, int mode, uint64_t off,
                      uint64_t len, rx_op_cb cb);
/* unlinkat(AT_FDCWD, path, 0): removes a file's name. */
int rx_file_unlink(struct rx_loop *loop, struct rx_op *op, const char *path, rx_op_cb cb);
/* renameat(AT_FDCWD, old_path, AT_FDCWD, new_path): atomically replaces
 * new_path if it exists. Durable only once the directory is fsynced. */
int rx_file_rename(struct rx_loop *loop, struct rx_op *op, const char *old_path,
                   const char *new_path, rx_op_cb cb);
/* linkat(AT_FDCWD, old_path, AT_FDCWD, new_path, 0): a second name for a
 * file (same file system). Durable only once new_path's directory is
 * fsynced. */
int rx_file_link(struct rx_loop *loop, struct rx_op *op, const char *old_path,
                 const char *new_path, rx_op_cb cb);
/* close(fd) for files and sockets alike. */
int rx_fd_close(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb);

/* accept4(fd, NULL, NULL, SOCK_CLOEXEC); res is the connected fd. */
int rx_sock_accept(struct rx_loop *loop, struct rx_op *op, int fd, rx_op_cb cb);
/* recv(fd, buf, len, 0); res 0 means the peer closed. */
int rx_sock_recv(struct rx_loop *loop, struct rx_op *op, int fd, void *buf, uint32_t len,
                 rx_op_cb cb);
/* send(fd, buf, len, MSG_NOSIGNAL); res may be short. */
int rx_sock_send(struct rx_loop *loop, struct rx_op *op, int fd, const void *buf, uint32_t len,
                 rx_op_cb cb);
/* sendmsg(fd, msg, MSG_NOSIGNAL): several buffers in one op (a pipeline's
 * replies). msg, its iovec array and every buffer it names are borrowed
 * until cb runs. res is the byte count, which may be short (stopping
 * inside any buffer). */
int rx_sock_sendmsg(struct rx_loop *loop, struct rx_op *op, int fd, const struct msghdr *msg,
                    rx_op_cb cb);

/* madvise(addr, len, advice) on this process's memory, on an io-wq
 * worker (the kernel always runs it there), so slow advice such as
 * MADV_POPULATE_WRITE -- fault every page in now -- costs the shard's
 * thread nothing. [addr, addr + len) must stay mapped until cb runs. */
int rx_mem_madvise(struct rx_loop *loop, struct rx_op *op, void *addr, uint32_t len, int advice,
                   rx_op_cb cb);

#endif
