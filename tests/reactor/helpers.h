/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers for the reactor tests. SCREE_TEST_SCALE (env, default 1)
 * divides the big message counts, for slow builds such as ThreadSanitizer.
 */
#ifndef SCREE_TESTS_REACTOR_HELPERS_H
#define SCREE_TESTS_REACTOR_HELPERS_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

static inline uint64_t test_scaled(uint64_t n)
{
        const char *s = getenv("SCREE_TEST_SCALE");
        uint64_t div = s ? strtoull(s, NULL, 10) : 1;

        if (div == 0)
                div = 1;
        return n / div ? n / div : 1;
}

/* Skips the test when the kernel or sandbox refuses io_uring. */
#define SKIP_IF_NO_URING(r)                                                   \
        do {                                                                  \
                if ((r) == -ENOSYS || (r) == -EPERM || (r) == -SCREE_EUNSUPPORTED) \
                        cr_skip_test("io_uring unavailable");                 \
        } while (0)

#endif
