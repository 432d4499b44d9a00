/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Set-up shared by the engine tests that do real I/O: a loop on this
 * thread and a fault-injecting fs over it (skipping the test when io_uring
 * is unavailable). Criterion forks per test, so each test gets its own.
 * Also: reading an SSTable block (or waiting for a read in flight),
 * waiting for an iterator's move, and damaging a file on disk behind the
 * engine's back.
 */
#ifndef SCREE_TESTS_ENGINE_HELPERS_H
#define SCREE_TESTS_ENGINE_HELPERS_H

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/compiler.h"
#include "engine/block_cache.h"
#include "engine/fault_fs.h"
#include "engine/sst_io.h"
#include "reactor/loop.h"
#include "reactor/timer.h"
#include "tests/reactor/helpers.h"

static inline void engine_test_loop_fs(struct rx_loop **ret_loop, struct eng_fs **ret_fs)
{
        int r = rx_loop_new(NULL, ret_loop);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        *ret_fs = eng_fault_fs_new(*ret_loop);
        cr_assert(not(eq(ptr, *ret_fs, NULL)));
}

/* Runs l for about ms milliseconds: only to give something that must not
 * happen the chance to; to wait for an event use TEST_RUN_UNTIL
 * (tests/reactor/helpers.h). */
static inline void engine_test_run_for_ms(struct rx_loop *l, unsigned ms)
{
        test_run_for_ns(l, (uint64_t)ms * NS_PER_MS);
}

/* engine_test_loop_fs, and a block cache of cache_bytes. */
static inline void engine_test_io_init(struct rx_loop **ret_loop, struct eng_fs **ret_fs,
                                       struct eng_block_cache **ret_cache, size_t cache_bytes)
{
        engine_test_loop_fs(ret_loop, ret_fs);
        cr_assert(eq(int, eng_block_cache_new(cache_bytes, ret_cache), 0));
}

/* Checks that no block is still pinned, lets every operation in flight
 * call back (so deferred frees happen and ASan sees no leak), then frees
 * the cache, the fs and the loop. */
static inline void engine_test_io_fini(struct rx_loop *loop, struct eng_fs *fs,
                                       struct eng_block_cache *cache)
{
        cr_expect(eq(u64, eng_block_cache_stats(cache)->pins, 0), "a block is still pinned");
        rx_loop_stop(loop);
        rx_loop_run(loop);
        eng_block_cache_free(cache);
        eng_fs_free(fs);
        rx_loop_free(loop);
}

struct engine_test_block_wait {
        struct eng_sst_block_read rq;
        bool done;
        int res;
};

static inline void engine_test_block_done(struct eng_sst_block_read *rq, int res)
{
        struct engine_test_block_wait *bw = container_of(rq, struct engine_test_block_wait, rq);

        bw->done = true;
        bw->res = res;
}

/*
 * Reads data block index of t with a request of the test's own and
 * releases it: 1 on a cache hit, else the read's result. A read of the
 * block in flight is joined, and calls back to its owner first, so this
 * also waits for a read someone else started.
 */
static inline int engine_test_read_block(struct rx_loop *loop, struct eng_sst_table *t,
                                         uint32_t index)
{
        struct engine_test_block_wait bw = { .rq = { .done = engine_test_block_done } };
        int r = eng_sst_table_read_block(t, index, &bw.rq);

        if (r == 0) {
                cr_assert(eq(int, rx_loop_run_until(loop, &bw.done), 0));
                r = bw.res;
        }
        if (r >= 0)
                eng_block_cache_release(eng_sst_table_cache(t), bw.rq.block);
        return r;
}

/* A move of one of the engine's iterators, which may call back later. */
struct engine_test_move {
        bool done;
        int res, calls;
};

/* Moves that returned ENG_SST_PENDING and waited for their callback. */
static unsigned engine_test_moves_waited;

/* What a move's callback does with its result. */
static inline void engine_test_move_done(struct engine_test_move *w, int res)
{
        w->done = true;
        w->res = res;
        w->calls++;
}

/* The result of a move that returned r: r, or when that is
 * ENG_SST_PENDING, what its one callback reported, running l until then. */
static inline int engine_test_move_finish(struct rx_loop *l, int r, struct engine_test_move *w)
{
        if (r != ENG_SST_PENDING)
                return r;
        engine_test_moves_waited++;
        cr_assert(eq(int, rx_loop_run_until(l, &w->done), 0));
        cr_assert(eq(int, w->calls, 1));
        return w->res;
}

/* Flips one bit of the byte at off in the file at path, durably. */
static inline void engine_test_flip_byte(const char *path, uint64_t off)
{
        int fd = open(path, O_RDWR);
        uint8_t b;

        cr_assert(ge(int, fd, 0));
        cr_assert(eq(sz, (size_t)pread(fd, &b, 1, (off_t)off), 1));
        b ^= 0x20;
        cr_assert(eq(sz, (size_t)pwrite(fd, &b, 1, (off_t)off), 1));
        fsync(fd);
        close(fd);
}

#endif
