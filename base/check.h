/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Assertions.
 *
 * SCREE_ASSERT(x): programmer errors; compiled in unless NDEBUG (release
 * builds). SCREE_VERIFY(x): always on, only for cheap checks whose failure
 * would otherwise corrupt data. Both print file, line and the calling
 * thread's shard id (or "off-shard"), then abort.
 *
 * Corrupt input (disk or wire) is never asserted on: it is an error return.
 */
#ifndef SCREE_BASE_CHECK_H
#define SCREE_BASE_CHECK_H

#include "base/compiler.h"

/* Shard id of the calling thread, or -1 on a non-shard thread. Set by the
 * reactor when a shard thread starts. */
extern _Thread_local int check_current_shard;

__attribute__((noreturn, cold)) void check_fail(const char *expr, const char *file, int line);

#define SCREE_VERIFY(x)                                          \
        do {                                                     \
                if (unlikely(!(x)))                              \
                        check_fail(#x, __FILE__, __LINE__);      \
        } while (0)

#ifdef NDEBUG
#define SCREE_ASSERT(x) ((void)sizeof(!(x)))
#else
#define SCREE_ASSERT(x) SCREE_VERIFY(x)
#endif

/* Objects that belong to one shard record owner_shard; touching them from
 * another thread is a bug that the developer build catches. */
#if defined(SCREE_SHARD_ASSERTS) && !defined(NDEBUG)
#define SCREE_ASSERT_SHARD(obj) SCREE_VERIFY((obj)->owner_shard == check_current_shard)
#else
#define SCREE_ASSERT_SHARD(obj) ((void)(obj))
#endif

#endif
