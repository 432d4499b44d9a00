/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for reactor/io.h: file and socket ops through a standalone loop.
 *
 * Each test creates its own loop on the test thread (Criterion forks per
 * test), submits ops whose callbacks form a small state machine, and runs the
 * loop until a callback calls rx_loop_stop. Files live in a fresh mkdtemp
 * directory under /var/tmp (O_DIRECT needs a real filesystem, not tmpfs).
 * What is checked: results reach the callback as byte counts or -errno, each
 * callback runs exactly once and never inside its submit call, a stopped loop
 * refuses submissions, and injected faults follow the same contract.
 * Timing is never asserted.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "reactor/io.h"
#include "reactor/loop.h"
#include "tests/tmpdir.h"

#define BLOCK_BYTES 4096u

static char test_dir[PATH_MAX];
static char mnt_dir[PATH_MAX];          /* tmpfs mount point, if a test made one */

static void setup(void)
{
        tmpdir_make(test_dir, sizeof(test_dir), "io");
        mnt_dir[0] = '\0';
}

static void teardown(void)
{
        if (mnt_dir[0])
                umount2(mnt_dir, MNT_DETACH);
        tmpdir_remove(test_dir);
}

TestSuite(io, .init = setup, .fini = teardown, .timeout = 20);

static struct rx_loop *loop_new_or_skip(const struct rx_loop_opts *opts)
{
        struct rx_loop *loop = NULL;
        int r = rx_loop_new(opts, &loop);

        if (r == -ENOSYS || r == -EPERM)
                cr_skip_test("io_uring unavailable");
        cr_assert(eq(int, r, 0), "rx_loop_new: %s", rx_loop_setup_hint(r));
        return loop;
}

static void path_in_dir(char *buf, const char *dir, const char *name)
{
        int n = snprintf(buf, PATH_MAX, "%s/%s", dir, name);

        cr_assert(lt(int, n, PATH_MAX), "path too long: %s/%s", dir, name);
}

/*
 * A batch of independent ops: each records its result and how often its
 * callback ran; the loop stops when the last expected completion arrives.
 */
struct batch {
        unsigned outstanding;
        unsigned completions;
        bool in_submit;                 /* true while a submit call runs */
        bool cb_in_submit;              /* a callback ran while in_submit */
};

struct batch_op {
        struct rx_op op;
        int res;
        unsigned calls;
};

static void batch_op_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct batch_op *b = container_of(op, struct batch_op, op);
        struct batch *bt = op->ctx;

        b->res = res;
        b->calls++;
        bt->completions++;
        if (bt->in_submit)
                bt->cb_in_submit = true;
        /* Callbacks inside submit or run twice would end the count early. */
        cr_assert(gt(u32, bt->outstanding, 0), "completion with nothing outstanding");
        if (--bt->outstanding == 0)
                rx_loop_stop(loop);
}

static void batch_op_init(struct batch_op *b, struct batch *bt)
{
        memset(b, 0, sizeof(*b));
        b->op.ctx = bt;
        b->res = INT_MIN;
}

/* Counts a submit result: 0 means one more completion to wait for. */
static void batch_expect(struct batch *bt, int submit_result)
{
        cr_assert(eq(int, submit_result, 0), "submit: %s", scree_strerror(submit_result));
        bt->outstanding++;
}

static void batch_run(struct rx_loop *loop, struct batch *bt)
{
        if (bt->outstanding)
                rx_loop_run(loop);
        cr_assert(eq(u32, bt->outstanding, 0));
}

/* ---- O_DIRECT round trip ---------------------------------------------- */

#define RT_BLOCKS 8u

enum rt_step { RT_OPEN, RT_FALLOCATE, RT_WRITE, RT_FDATASYNC, RT_FSYNC, RT_READ, RT_CLOSE, RT_DONE };

struct roundtrip {
        struct rx_op op;                /* open, fallocate, syncs, close */
        struct rx_op blk[RT_BLOCKS];    /* one per block, for writes and reads */
        enum rt_step step;
        unsigned pending;
        int fd;
        char path[PATH_MAX];
        uint8_t *wbuf, *rbuf;
};

static void rt_next(struct rx_loop *loop, struct rx_op *op, int res);

static void rt_submit_blocks(struct rx_loop *loop, struct roundtrip *rt)
{
        rt->pending = RT_BLOCKS;
        for (unsigned i = 0; i < RT_BLOCKS; i++) {
                uint64_t off = (uint64_t)i * BLOCK_BYTES;
                int r;

                rt->blk[i].ctx = rt;
                if (rt->step == RT_WRITE)
                        r = rx_file_write(loop, &rt->blk[i], rt->fd, rt->wbuf + off, BLOCK_BYTES,
                                          off, rt_next);
                else
                        r = rx_file_read(loop, &rt->blk[i], rt->fd, rt->rbuf + off, BLOCK_BYTES,
                                         off, rt_next);
                cr_assert(eq(int, r, 0), "block submit %u: %s", i, scree_strerror(r));
        }
}

/* Advances the machine once the current step's result(s) arrived. */
static void rt_advance(struct rx_loop *loop, struct roundtrip *rt)
{
        int r = 0;

        rt->step++;
        switch (rt->step) {
        case RT_FALLOCATE:
                r = rx_file_fallocate(loop, &rt->op, rt->fd, 0, 0, RT_BLOCKS * BLOCK_BYTES, rt_next);
                break;
        case RT_WRITE:
        case RT_READ:
                rt_submit_blocks(loop, rt);
                break;
        case RT_FDATASYNC:
                r = rx_file_fdatasync(loop, &rt->op, rt->fd, rt_next);
                break;
        case RT_FSYNC:
                r = rx_file_fsync(loop, &rt->op, rt->fd, rt_next);
                break;
        case RT_CLOSE:
                cr_assert(eq(int, memcmp(rt->wbuf, rt->rbuf, RT_BLOCKS * BLOCK_BYTES), 0),
                          "data read back differs from data written");
                r = rx_fd_close(loop, &rt->op, rt->fd, rt_next);
                break;
        default:
                rx_loop_stop(loop);
                break;
        }
        cr_assert(eq(int, r, 0), "submit at step %d: %s", (int)rt->step, scree_strerror(r));
}

static void rt_next(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct roundtrip *rt = op->ctx;

        cr_assert(ge(int, res, 0), "step %d failed: %s", (int)rt->step, strerror(-res));
        if (rt->step == RT_OPEN) {
                rt->fd = res;
                cr_assert(ne(int, fcntl(res, F_GETFL) & O_DIRECT, 0), "O_DIRECT was dropped");
        }
        if (rt->step == RT_WRITE || rt->step == RT_READ) {
                cr_assert(eq(int, res, (int)BLOCK_BYTES), "short I/O at step %d", (int)rt->step);
                if (--rt->pending > 0)
                        return;
        } else if (rt->step != RT_OPEN) {
                cr_assert(eq(int, res, 0), "step %d returned %d", (int)rt->step, res);
        }
        rt_advance(loop, rt);
}

Test(io, direct_write_sync_read_round_trip_returns_written_data)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct roundtrip rt = { .step = RT_OPEN, .fd = -1 };
        int r;

        rt.wbuf = mem_alloc_aligned(MEM_DIRECT_ALIGN, RT_BLOCKS * BLOCK_BYTES);
        rt.rbuf = mem_alloc_aligned(MEM_DIRECT_ALIGN, RT_BLOCKS * BLOCK_BYTES);
        cr_assert(ne(ptr, rt.wbuf, NULL));
        cr_assert(ne(ptr, rt.rbuf, NULL));
        for (unsigned i = 0; i < RT_BLOCKS * BLOCK_BYTES; i++)
                rt.wbuf[i] = (uint8_t)(i * 7 + i / BLOCK_BYTES);
        memset(rt.rbuf, 0xee, RT_BLOCKS * BLOCK_BYTES);
        path_in_dir(rt.path, test_dir, "roundtrip.dat");
        rt.op.ctx = &rt;
        r = rx_file_open(loop, &rt.op, rt.path, O_CREAT | O_RDWR | O_DIRECT, 0600, rt_next);
        cr_assert(eq(int, r, 0), "open submit: %s", scree_strerror(r));
        rx_loop_run(loop);
        cr_assert(eq(int, (int)rt.step, (int)RT_DONE));
        cr_expect(eq(int, fcntl(rt.fd, F_GETFD), -1), "fd still open after rx_fd_close");
        rx_loop_free(loop);
        mem_free_aligned(rt.wbuf);
        mem_free_aligned(rt.rbuf);
}

/* ---- short reads ------------------------------------------------------ */

Test(io, direct_read_past_eof_is_short_then_zero)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct batch bt = { 0 };
        struct batch_op at0, at8k;
        char path[PATH_MAX], data[5000];
        uint8_t *buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, 2 * 8192);
        int fd;

        cr_assert(ne(ptr, buf, NULL));
        path_in_dir(path, test_dir, "short.dat");
        fd = open(path, O_CREAT | O_WRONLY, 0600);
        cr_assert(ge(int, fd, 0));
        memset(data, 'x', sizeof(data));
        cr_assert(eq(sz, (size_t)pwrite(fd, data, sizeof(data), 0), sizeof(data)));
        close(fd);
        fd = open(path, O_RDONLY | O_DIRECT);
        cr_assert(ge(int, fd, 0), "open O_DIRECT: %s", strerror(errno));

        batch_op_init(&at0, &bt);
        batch_op_init(&at8k, &bt);
        batch_expect(&bt, rx_file_read(loop, &at0.op, fd, buf, 8192, 0, batch_op_done));
        batch_expect(&bt, rx_file_read(loop, &at8k.op, fd, buf + 8192, 8192, 8192,
                                       batch_op_done));
        batch_run(loop, &bt);
        cr_expect(eq(int, at0.res, 5000));
        cr_expect(eq(int, memcmp(buf, data, sizeof(data)), 0), "short read returned wrong bytes");
        cr_expect(eq(int, at8k.res, 0));
        close(fd);
        rx_loop_free(loop);
        mem_free_aligned(buf);
}

/* ---- errors ------------------------------------------------------------ */

Test(io, errors_reach_callback_as_negative_errno)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct batch bt = { 0 };
        struct batch_op rd_badfd, wr_badfd, wr_full, open_missing, wr_misaligned;
        char missing[PATH_MAX], path[PATH_MAX], small[64] = "abc";
        uint8_t *buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, BLOCK_BYTES);
        int bad_fd = 12345, full_fd, direct_fd;

        cr_assert(ne(ptr, buf, NULL));
        memset(buf, 'd', BLOCK_BYTES);
        close(bad_fd);
        cr_assert(eq(int, fcntl(bad_fd, F_GETFD), -1), "fd %d is open", bad_fd);
        full_fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
        cr_assert(ge(int, full_fd, 0), "/dev/full: %s", strerror(errno));
        path_in_dir(missing, test_dir, "no/such/file");
        path_in_dir(path, test_dir, "direct.dat");
        direct_fd = open(path, O_CREAT | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
        cr_assert(ge(int, direct_fd, 0), "open O_DIRECT: %s", strerror(errno));

        struct batch_op *all[] = { &rd_badfd, &wr_badfd, &wr_full, &open_missing, &wr_misaligned };
        for (size_t i = 0; i < ARRAY_SIZE(all); i++)
                batch_op_init(all[i], &bt);
        batch_expect(&bt, rx_file_read(loop, &rd_badfd.op, bad_fd, small, sizeof(small), 0,
                                       batch_op_done));
        batch_expect(&bt, rx_file_write(loop, &wr_badfd.op, bad_fd, small, sizeof(small), 0,
                                        batch_op_done));
        batch_expect(&bt, rx_file_write(loop, &wr_full.op, full_fd, small, sizeof(small), 0,
                                        batch_op_done));
        batch_expect(&bt, rx_file_open(loop, &open_missing.op, missing, O_RDONLY, 0,
                                       batch_op_done));
        /* Offset 1 is misaligned for every block device, whatever its DMA alignment. */
        batch_expect(&bt, rx_file_write(loop, &wr_misaligned.op, direct_fd, buf, BLOCK_BYTES, 1,
                                        batch_op_done));
        batch_run(loop, &bt);
        cr_expect(eq(int, rd_badfd.res, -EBADF));
        cr_expect(eq(int, wr_badfd.res, -EBADF));
        cr_expect(eq(int, wr_full.res, -ENOSPC));
        cr_expect(eq(int, open_missing.res, -ENOENT));
        cr_expect(eq(int, wr_misaligned.res, -EINVAL));
        close(full_fd);
        close(direct_fd);
        rx_loop_free(loop);
        mem_free_aligned(buf);
}

/* ---- namespace ops ------------------------------------------------------ */

static bool file_exists(const char *path)
{
        return access(path, F_OK) == 0;
}

static void write_small_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        cr_assert(not(eq(ptr, f, NULL)), "%s: %s", path, strerror(errno));
        fputs(text, f);
        fclose(f);
}

Test(io, rename_replaces_the_target_and_unlink_removes_a_name)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct batch bt = { 0 };
        struct batch_op ren, unl, ren_missing, unl_missing;
        char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], missing[PATH_MAX], text[8] = { 0 };
        FILE *f;

        path_in_dir(a, test_dir, "a");
        path_in_dir(b, test_dir, "b");
        path_in_dir(c, test_dir, "c");
        path_in_dir(missing, test_dir, "missing");
        write_small_file(a, "new");
        write_small_file(b, "old");
        write_small_file(c, "gone");
        struct batch_op *all[] = { &ren, &unl, &ren_missing, &unl_missing };
        for (size_t i = 0; i < ARRAY_SIZE(all); i++)
                batch_op_init(all[i], &bt);
        batch_expect(&bt, rx_file_rename(loop, &ren.op, a, b, batch_op_done));
        batch_expect(&bt, rx_file_unlink(loop, &unl.op, c, batch_op_done));
        batch_expect(&bt, rx_file_rename(loop, &ren_missing.op, missing, c, batch_op_done));
        batch_expect(&bt, rx_file_unlink(loop, &unl_missing.op, missing, batch_op_done));
        cr_assert(eq(u32, bt.completions, 0), "called back inside a submit call");
        batch_run(loop, &bt);
        cr_expect(eq(int, ren.res, 0));
        cr_expect(eq(int, unl.res, 0));
        cr_expect(eq(int, ren_missing.res, -ENOENT));
        cr_expect(eq(int, unl_missing.res, -ENOENT));
        cr_expect(eq(int, file_exists(a), false));
        cr_expect(eq(int, file_exists(c), false));
        f = fopen(b, "r");
        cr_assert(not(eq(ptr, f, NULL)));
        cr_expect(not(eq(ptr, fgets(text, sizeof(text), f), NULL)));
        fclose(f);
        cr_expect(eq(str, text, "new"), "rename must replace the old target");
        rx_loop_free(loop);
}

/* ---- a real full filesystem ------------------------------------------- */

/* Mounts a 64 KiB tmpfs in a private mount namespace, or skips the test. */
static void mount_small_tmpfs(void)
{
        path_in_dir(mnt_dir, test_dir, "tmpfs-XXXXXX");
        cr_assert(ne(ptr, mkdtemp(mnt_dir), NULL), "mkdtemp: %s", strerror(errno));
        if (unshare(CLONE_NEWNS) < 0) {
                mnt_dir[0] = '\0';
                if (errno == EPERM)
                        cr_skip_test("unshare(CLONE_NEWNS) not permitted: needs CAP_SYS_ADMIN");
                cr_fatal("unshare: %s", strerror(errno));
        }
        cr_assert(eq(int, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0),
                  "make mounts private: %s", strerror(errno));
        if (mount("scree-test", mnt_dir, "tmpfs", 0, "size=64k") < 0) {
                int e = errno;

                mnt_dir[0] = '\0';
                if (e == EPERM)
                        cr_skip_test("mounting tmpfs not permitted");
                cr_fatal("mount tmpfs: %s", strerror(e));
        }
}

/* Writes 4 KiB blocks one after another until one fails (or 64 succeeded). */
struct filler {
        struct rx_op op;
        int fd;
        unsigned written;
        int err;
        uint8_t buf[BLOCK_BYTES];
};

static void filler_next(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct filler *f = container_of(op, struct filler, op);
        int r;

        if (res < 0 || f->written == 64) {
                f->err = res;
                rx_loop_stop(loop);
                return;
        }
        if (res > 0)
                f->written++;
        r = rx_file_write(loop, &f->op, f->fd, f->buf, BLOCK_BYTES,
                          (uint64_t)f->written * BLOCK_BYTES, filler_next);
        cr_assert(eq(int, r, 0), "write submit: %s", scree_strerror(r));
}

Test(io, full_filesystem_reports_enospc_for_fallocate_and_write)
{
        struct rx_loop *loop;
        struct batch bt = { 0 };
        struct batch_op falloc;
        struct filler f = { .err = 0 };
        char path[PATH_MAX];
        int fd;

        /* Before rx_loop_new: the ring's io-wq workers take the mount
         * namespace the ring's task had when they were created. */
        mount_small_tmpfs();
        loop = loop_new_or_skip(NULL);
        path_in_dir(path, mnt_dir, "big.dat");
        fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        cr_assert(ge(int, fd, 0), "open on tmpfs: %s", strerror(errno));

        batch_op_init(&falloc, &bt);
        batch_expect(&bt, rx_file_fallocate(loop, &falloc.op, fd, 0, 0, 1 << 20, batch_op_done));
        batch_run(loop, &bt);
        cr_expect(eq(int, falloc.res, -ENOSPC));
        rx_loop_free(loop);

        loop = loop_new_or_skip(NULL);
        f.fd = fd;
        memset(f.buf, 'f', sizeof(f.buf));
        filler_next(loop, &f.op, 0);
        rx_loop_run(loop);
        cr_expect(eq(int, f.err, -ENOSPC), "written %u blocks", f.written);
        cr_expect(le(u32, f.written, 16), "64 KiB tmpfs took %u blocks", f.written);
        close(fd);
        rx_loop_free(loop);
}

/* ---- injected faults ---------------------------------------------------- */

struct fault_ctx {
        unsigned fdatasync_hooked;
        unsigned other_hooked;
};

static int fail_fdatasync(void *ctx, enum rx_op_kind kind, const struct rx_op *op)
{
        struct fault_ctx *fc = ctx;

        (void)op;
        if (kind != RX_OP_FDATASYNC) {
                fc->other_hooked++;
                return 0;
        }
        fc->fdatasync_hooked++;
        return -EIO;
}

Test(io, injected_fdatasync_fault_reaches_callback_later_and_other_ops_work)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct fault_ctx fc = { 0 };
        struct batch bt = { 0 };
        struct batch_op wr, dsync, fsync_op, rd;
        char path[PATH_MAX], data[100] = "payload", back[100] = "";
        int fd;

        path_in_dir(path, test_dir, "fault.dat");
        fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(sz, (size_t)pwrite(fd, data, sizeof(data), 0), sizeof(data)));
        rx_loop_set_fault(loop, fail_fdatasync, &fc);
        batch_op_init(&wr, &bt);
        batch_op_init(&dsync, &bt);
        batch_op_init(&fsync_op, &bt);
        batch_op_init(&rd, &bt);
        bt.in_submit = true;
        batch_expect(&bt, rx_file_write(loop, &wr.op, fd, data, sizeof(data), 100, batch_op_done));
        batch_expect(&bt, rx_file_fdatasync(loop, &dsync.op, fd, batch_op_done));
        cr_assert(eq(u32, dsync.calls, 0), "fault callback ran inside the submit call");
        batch_expect(&bt, rx_file_fsync(loop, &fsync_op.op, fd, batch_op_done));
        batch_expect(&bt, rx_file_read(loop, &rd.op, fd, back, sizeof(back), 0, batch_op_done));
        bt.in_submit = false;
        batch_run(loop, &bt);
        cr_expect(eq(int, (int)bt.cb_in_submit, 0), "a callback ran inside a submit call");
        cr_expect(eq(int, dsync.res, -EIO));
        cr_expect(eq(u32, dsync.calls, 1));
        cr_expect(eq(int, wr.res, (int)sizeof(data)));
        cr_expect(eq(int, fsync_op.res, 0));
        cr_expect(eq(int, rd.res, (int)sizeof(back)));
        cr_expect(eq(str, back, data));
        cr_expect(eq(u32, fc.fdatasync_hooked, 1));
        cr_expect(eq(u32, fc.other_hooked, 3));
        close(fd);
        rx_loop_free(loop);
}

/* ---- exactly once, never inside submit ---------------------------------- */

#define N_NOPS 100u

static void submit_nops(struct rx_loop *loop, struct batch *bt, struct batch_op *ops, unsigned n)
{
        bt->in_submit = true;
        for (unsigned i = 0; i < n; i++) {
                batch_op_init(&ops[i], bt);
                batch_expect(bt, rx_nop(loop, &ops[i].op, batch_op_done));
        }
        bt->in_submit = false;
}

Test(io, nop_callbacks_run_exactly_once_and_never_inside_submit)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct batch bt = { 0 };
        struct batch_op ops[N_NOPS];

        submit_nops(loop, &bt, ops, N_NOPS);
        cr_assert(eq(u32, bt.completions, 0), "callbacks ran before the loop did");
        batch_run(loop, &bt);
        cr_expect(eq(int, (int)bt.cb_in_submit, 0));
        cr_expect(eq(u32, bt.completions, N_NOPS));
        for (unsigned i = 0; i < N_NOPS; i++) {
                cr_expect(eq(u32, ops[i].calls, 1), "op %u ran %u times", i, ops[i].calls);
                cr_expect(eq(int, ops[i].res, 0));
        }
        rx_loop_free(loop);
}

Test(io, more_ops_than_ring_entries_each_complete_exactly_once)
{
        struct rx_loop_opts opts = { .ring_entries = 8 };
        struct rx_loop *loop = loop_new_or_skip(&opts);
        struct batch bt = { 0 };
        struct batch_op ops[N_NOPS];

        /* The SQ holds 8 and the CQ 16: submits flush a full SQ and the
         * completions overflow the CQ, which the kernel must keep (NODROP). */
        submit_nops(loop, &bt, ops, N_NOPS);
        cr_assert(eq(u32, bt.completions, 0));
        batch_run(loop, &bt);
        for (unsigned i = 0; i < N_NOPS; i++)
                cr_expect(eq(u32, ops[i].calls, 1), "op %u ran %u times", i, ops[i].calls);
        rx_loop_free(loop);
}

/* ---- memory advice ------------------------------------------------------- */

Test(io, madvise_populates_memory_off_the_thread_and_reports_bad_advice)
{
        enum { PAGES = 64 };
        struct rx_loop *loop = loop_new_or_skip(NULL);
        size_t page = (size_t)sysconf(_SC_PAGESIZE), len = PAGES * page;
        unsigned char resident[PAGES];
        struct batch bt = { 0 };
        struct batch_op ops[2];
        uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        cr_assert(not(eq(ptr, p, MAP_FAILED)));
        cr_assert(eq(int, mincore(p, len, resident), 0));
        cr_expect(eq(u8, resident[PAGES / 2] & 1, 0), "fresh memory is not resident yet");
        for (unsigned i = 0; i < 2; i++)
                batch_op_init(&ops[i], &bt);
        batch_expect(&bt, rx_mem_madvise(loop, &ops[0].op, p, (uint32_t)len, 23 /* MADV_POPULATE_WRITE */,
                                         batch_op_done));
        batch_expect(&bt, rx_mem_madvise(loop, &ops[1].op, p, (uint32_t)len, 12345, batch_op_done));
        batch_run(loop, &bt);
        if (ops[0].res == -EINVAL)
                cr_skip_test("MADV_POPULATE_WRITE needs Linux 5.14");
        cr_expect(eq(int, ops[0].res, 0));
        cr_expect(eq(int, ops[1].res, -EINVAL), "an unknown advice is -EINVAL");
        cr_assert(eq(int, mincore(p, len, resident), 0));
        for (unsigned i = 0; i < PAGES; i++)
                cr_expect(eq(u8, resident[i] & 1, 1), "page %u not populated", i);
        munmap(p, len);
        rx_loop_free(loop);
}

/* ---- callback ownership --------------------------------------------------- */

static void free_own_op(struct rx_loop *loop, struct rx_op *op, int res)
{
        unsigned *calls = op->ctx;

        (void)res;
        (*calls)++;
        free(op);               /* allowed: the reactor is done with op once cb runs */
        rx_loop_stop(loop);
}

Test(io, callback_may_free_its_op)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct rx_op *op = calloc(1, sizeof(*op));
        unsigned calls = 0;

        cr_assert(ne(ptr, op, NULL));
        op->ctx = &calls;
        cr_assert(eq(int, rx_nop(loop, op, free_own_op), 0));
        rx_loop_run(loop);
        cr_expect(eq(u32, calls, 1));
        rx_loop_free(loop);
}

/* ---- shutdown ------------------------------------------------------------ */

static void count_call(struct rx_loop *loop, struct rx_op *op, int res)
{
        unsigned *calls = op->ctx;

        (void)loop;
        (void)res;
        (*calls)++;
}

struct stop_then_submit {
        struct rx_op first, second;
        int second_submit;
        unsigned second_calls;
};

static void stop_and_submit(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct stop_then_submit *s = container_of(op, struct stop_then_submit, first);

        (void)res;
        rx_loop_stop(loop);
        s->second.ctx = &s->second_calls;
        s->second_submit = rx_nop(loop, &s->second, count_call);
}

Test(io, submit_after_stop_fails_with_eshutdown_and_never_calls_back)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct stop_then_submit s = { .second_submit = INT_MIN };
        struct rx_op late = { 0 };
        unsigned late_calls = 0;

        /* Stopped from inside a callback while the loop runs... */
        cr_assert(eq(int, rx_nop(loop, &s.first, stop_and_submit), 0));
        rx_loop_run(loop);
        cr_expect(eq(int, s.second_submit, -SCREE_ESHUTDOWN));
        /* ...and after it returned: every kind of submit is refused. */
        late.ctx = &late_calls;
        cr_expect(eq(int, rx_nop(loop, &late, count_call), -SCREE_ESHUTDOWN));
        cr_expect(eq(int, rx_file_fsync(loop, &late, 0, count_call), -SCREE_ESHUTDOWN));
        rx_loop_run(loop);
        cr_expect(eq(u32, s.second_calls, 0));
        cr_expect(eq(u32, late_calls, 0));
        rx_loop_free(loop);
}

/* ---- sockets ------------------------------------------------------------- */

struct client {
        pthread_t thread;
        struct rx_loop *loop;           /* stopped on failure so the test ends */
        uint16_t port;
        bool send_ping;                 /* false: connect and close at once */
        char reply[16];
        int err;                        /* errno of the first failure, or 0 */
};

static int client_fail(struct client *c, int fd)
{
        c->err = errno ? errno : EIO;
        if (fd >= 0)
                close(fd);
        rx_loop_stop(c->loop);
        return -1;
}

static int client_talk(struct client *c, int fd)
{
        size_t got = 0;

        if (send(fd, "ping", 4, MSG_NOSIGNAL) != 4)
                return client_fail(c, fd);
        while (got < 4) {
                ssize_t n = recv(fd, c->reply + got, sizeof(c->reply) - 1 - got, 0);

                if (n <= 0)
                        return client_fail(c, fd);
                got += (size_t)n;
        }
        return 0;
}

static void *client_main(void *arg)
{
        struct client *c = arg;
        struct sockaddr_in sa = { .sin_family = AF_INET };
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        sa.sin_port = htons(c->port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                client_fail(c, fd);
                return NULL;
        }
        if (c->send_ping && client_talk(c, fd) < 0)
                return NULL;
        close(fd);
        return NULL;
}

static int listen_loopback(uint16_t *ret_port)
{
        struct sockaddr_in sa = { .sin_family = AF_INET };
        socklen_t len = sizeof(sa);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        cr_assert(ge(int, fd, 0), "socket: %s", strerror(errno));
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        cr_assert(eq(int, bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0), "bind: %s",
                  strerror(errno));
        cr_assert(eq(int, listen(fd, 4), 0), "listen: %s", strerror(errno));
        cr_assert(eq(int, getsockname(fd, (struct sockaddr *)&sa, &len), 0));
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

enum srv_step { SRV_ACCEPT, SRV_RECV, SRV_SEND, SRV_CLOSE, SRV_DONE };

/* The loop's side: runs the steps of plan in order, one op at a time. */
struct server {
        struct rx_op op;
        const enum srv_step *plan;
        unsigned at;
        int listen_fd, conn_fd;
        int results[8];
        char buf[16];
};

static void srv_next(struct rx_loop *loop, struct rx_op *op, int res);

static int srv_submit(struct rx_loop *loop, struct server *s)
{
        switch (s->plan[s->at]) {
        case SRV_ACCEPT:
                return rx_sock_accept(loop, &s->op, s->listen_fd, srv_next);
        case SRV_RECV:
                return rx_sock_recv(loop, &s->op, s->conn_fd, s->buf, sizeof(s->buf) - 1, srv_next);
        case SRV_SEND:
                return rx_sock_send(loop, &s->op, s->conn_fd, "pong", 4, srv_next);
        case SRV_CLOSE:
                return rx_fd_close(loop, &s->op, s->conn_fd, srv_next);
        default:
                rx_loop_stop(loop);
                return 0;
        }
}

static void srv_next(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct server *s = container_of(op, struct server, op);
        int r;

        s->results[s->at] = res;
        if (res < 0) {
                rx_loop_stop(loop);
                return;
        }
        if (s->plan[s->at] == SRV_ACCEPT)
                s->conn_fd = res;
        s->at++;
        r = srv_submit(loop, s);
        cr_assert(eq(int, r, 0), "submit step %u: %s", s->at, scree_strerror(r));
}

/* Runs plan against a client thread; returns with the client joined. */
static void serve(struct server *s, struct client *c, const enum srv_step *plan)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        int r;

        memset(s, 0, sizeof(*s));
        s->plan = plan;
        s->conn_fd = -1;
        s->listen_fd = listen_loopback(&c->port);
        c->loop = loop;
        cr_assert(eq(int, rx_sock_accept(loop, &s->op, s->listen_fd, srv_next), 0));
        r = pthread_create(&c->thread, NULL, client_main, c);
        cr_assert(eq(int, r, 0), "pthread_create: %s", strerror(r));
        rx_loop_run(loop);
        pthread_join(c->thread, NULL);
        close(s->listen_fd);
        rx_loop_free(loop);
}

Test(io, socket_accept_recv_send_close_serves_a_client)
{
        static const enum srv_step plan[] = { SRV_ACCEPT, SRV_RECV, SRV_SEND, SRV_RECV,
                                              SRV_CLOSE, SRV_DONE };
        struct client c = { .send_ping = true };
        struct server s;

        serve(&s, &c, plan);
        cr_assert(eq(int, c.err, 0), "client: %s", strerror(c.err));
        cr_assert(eq(u32, s.at, 5), "stopped at step %u with %d", s.at, s.results[s.at]);
        cr_expect(ge(int, s.results[0], 0));
        cr_expect(eq(int, s.results[1], 4));
        cr_expect(eq(str, s.buf, "ping"));
        cr_expect(eq(int, s.results[2], 4));
        cr_expect(eq(str, c.reply, "pong"));
        cr_expect(eq(int, s.results[3], 0), "recv after the client closed");
        cr_expect(eq(int, s.results[4], 0));
}

Test(io, sock_recv_returns_zero_when_peer_closes)
{
        static const enum srv_step plan[] = { SRV_ACCEPT, SRV_RECV, SRV_CLOSE, SRV_DONE };
        struct client c = { .send_ping = false };
        struct server s;

        serve(&s, &c, plan);
        cr_assert(eq(int, c.err, 0), "client: %s", strerror(c.err));
        cr_assert(eq(u32, s.at, 3), "stopped at step %u with %d", s.at, s.results[s.at]);
        cr_expect(eq(int, s.results[1], 0));
        cr_expect(eq(int, s.results[2], 0));
}

/* ---- ops in flight when the loop stops ------------------------------- */

/*
 * Regression: rx_loop_free returned while O_DIRECT reads were still writing
 * into the caller's buffers. Now rx_loop_run cancels and waits for every op
 * before it returns, and each callback runs exactly once: with its result,
 * or -ECANCELED. The recv below never gets data, so without the cancel the
 * loop could not return at all.
 */
#define DRAIN_READS 16u
#define DRAIN_BYTES (1u << 20)

struct drain_op {
        struct rx_op op;
        int res;
        unsigned calls;
};

static struct drain_op drain_ops[DRAIN_READS + 1];

static void drain_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct drain_op *d = container_of(op, struct drain_op, op);

        d->res = res;
        d->calls++;
        rx_loop_stop(loop);     /* stop at the first completion */
}

Test(io, ops_in_flight_when_the_loop_stops_call_back_once_before_run_returns)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        char path[PATH_MAX];
        uint8_t *bufs = mem_alloc_aligned(BLOCK_BYTES, (size_t)DRAIN_READS * DRAIN_BYTES);
        char byte;
        int fd, sp[2];

        cr_assert(not(eq(ptr, bufs, NULL)));
        path_in_dir(path, test_dir, "drain");
        fd = open(path, O_CREAT | O_RDWR, 0600);
        cr_assert(ge(int, fd, 0));
        memset(bufs, 0xab, (size_t)DRAIN_READS * DRAIN_BYTES);
        cr_assert(eq(i64, (int64_t)pwrite(fd, bufs, (size_t)DRAIN_READS * DRAIN_BYTES, 0),
                     (int64_t)DRAIN_READS * DRAIN_BYTES));
        cr_assert(eq(int, fdatasync(fd), 0));
        close(fd);
        fd = open(path, O_RDONLY | O_DIRECT);
        cr_assert(ge(int, fd, 0));
        cr_assert(eq(int, socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0));
        for (unsigned i = 0; i < DRAIN_READS; i++)
                cr_assert(eq(int, rx_file_read(loop, &drain_ops[i].op, fd, bufs + (size_t)i * DRAIN_BYTES,
                                               DRAIN_BYTES, (uint64_t)i * DRAIN_BYTES, drain_done), 0));
        cr_assert(eq(int, rx_sock_recv(loop, &drain_ops[DRAIN_READS].op, sp[0], &byte, 1, drain_done), 0));
        rx_loop_run(loop);
        for (unsigned i = 0; i <= DRAIN_READS; i++) {
                cr_expect(eq(u32, drain_ops[i].calls, 1), "op %u called back %u times", i,
                          drain_ops[i].calls);
                if (i < DRAIN_READS && drain_ops[i].res != -ECANCELED)
                        cr_expect(eq(int, drain_ops[i].res, (int)DRAIN_BYTES));
        }
        cr_expect(eq(int, drain_ops[DRAIN_READS].res, -ECANCELED), "the idle recv was not cancelled");
        /* Nothing may write into the buffers any more. */
        memset(bufs, 0, (size_t)DRAIN_READS * DRAIN_BYTES);
        usleep(20 * 1000);
        for (size_t i = 0; i < (size_t)DRAIN_READS * DRAIN_BYTES; i += 4096)
                cr_assert(eq(u8, bufs[i], 0), "buffer written after rx_loop_run returned");
        rx_loop_free(loop);
        close(fd);
        close(sp[0]);
        close(sp[1]);
        mem_free_aligned(bufs);
}

/* ---- sendmsg ------------------------------------------------------------- */

struct sendmsg_state {
        struct rx_op op;
        int res;
        unsigned calls;
};

static void sendmsg_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct sendmsg_state *s = container_of(op, struct sendmsg_state, op);

        s->res = res;
        s->calls++;
        rx_loop_stop(loop);
}

Test(io, sock_sendmsg_sends_every_iovec_in_order)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct iovec iov[3] = { { "+OK\r\n", 5 }, { "", 0 }, { ":42\r\n", 5 } };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 3 };
        struct sendmsg_state s = { 0 };
        char got[16] = "";
        int sp[2];

        cr_assert(eq(int, socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0));
        cr_assert(eq(int, rx_sock_sendmsg(loop, &s.op, sp[0], &msg, sendmsg_done), 0));
        cr_expect(eq(u32, s.calls, 0), "never calls back inside the submit");
        rx_loop_run(loop);
        cr_expect(eq(u32, s.calls, 1));
        cr_expect(eq(int, s.res, 10));
        cr_expect(eq(int, (int)recv(sp[1], got, sizeof(got) - 1, 0), 10));
        cr_expect(eq(str, got, "+OK\r\n:42\r\n"));
        close(sp[0]);
        close(sp[1]);
        rx_loop_free(loop);
}

Test(io, sock_sendmsg_to_a_closed_peer_reports_epipe)
{
        struct rx_loop *loop = loop_new_or_skip(NULL);
        struct iovec iov[1] = { { "x", 1 } };
        struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 1 };
        struct sendmsg_state s = { 0 };
        int sp[2];

        cr_assert(eq(int, socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0));
        close(sp[1]);
        cr_assert(eq(int, rx_sock_sendmsg(loop, &s.op, sp[0], &msg, sendmsg_done), 0));
        rx_loop_run(loop);
        cr_expect(eq(u32, s.calls, 1));
        cr_expect(eq(int, s.res, -EPIPE), "no SIGPIPE: MSG_NOSIGNAL");
        close(sp[0]);
        rx_loop_free(loop);
}
