/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Set-up shared by the engine tests that do real I/O: a loop on this
 * thread and a fault-injecting fs over it (skipping the test when io_uring
 * is unavailable). Criterion forks per test, so each test gets its own.
 * Also: damaging a file on disk behind the engine's back.
 */
#ifndef SCREE_TESTS_ENGINE_HELPERS_H
#define SCREE_TESTS_ENGINE_HELPERS_H

#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "engine/fault_fs.h"
#include "reactor/loop.h"
#include "tests/reactor/helpers.h"

static inline void engine_test_loop_fs(struct rx_loop **ret_loop, struct eng_fs **ret_fs)
{
        int r = rx_loop_new(NULL, ret_loop);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        *ret_fs = eng_fault_fs_new(*ret_loop);
        cr_assert(not(eq(ptr, *ret_fs, NULL)));
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
