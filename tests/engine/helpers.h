/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Set-up shared by the engine tests that do real I/O: a loop on this
 * thread and a fault-injecting fs over it (skipping the test when io_uring
 * is unavailable). Criterion forks per test, so each test gets its own.
 */
#ifndef SCREE_TESTS_ENGINE_HELPERS_H
#define SCREE_TESTS_ENGINE_HELPERS_H

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

#endif
