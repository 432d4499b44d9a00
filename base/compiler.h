/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Compiler helpers used everywhere: branch hints, cache-line size, container_of,
 * prefetching, a CPU pause for spin loops, and the one full memory barrier the queues
 * need. Header-only, dependency-free.
 */
#ifndef SCREE_BASE_COMPILER_H
#define SCREE_BASE_COMPILER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* 64 bytes on every x86-64 and most arm64 parts; indices shared by two cores
 * are padded to this so that the two writers never share a line. */
#define CACHELINE_BYTES 64
#define cacheline_aligned __attribute__((aligned(CACHELINE_BYTES)))

#define container_of(ptr, type, member) \
        ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Starts bringing the n cache lines from p on into the CPU's cache, for a
 * load expected soon. Only a hint: p may be anywhere, even unmapped or
 * past its object (the addresses are formed as integers, and a prefetch
 * never faults).
 */
static inline void prefetch_lines(const void *p, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                __builtin_prefetch((const void *)((uintptr_t)p + (uintptr_t)i * CACHELINE_BYTES));
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#else
        __asm__ __volatile__("" ::: "memory");
#endif
}

/*
 * Full barrier (orders earlier stores before later loads), for the Dekker
 * handshake between a producer and a consumer about to sleep.
 * ThreadSanitizer does not model atomic_thread_fence, so under TSan a
 * seq_cst RMW on a thread-local dummy stands in: a locked RMW is a full
 * barrier on x86, and being thread-local it creates no happens-before edge
 * that could hide a real race from TSan.
 */
#if defined(SCREE_TSAN)
static inline void full_barrier(void)
{
        static _Thread_local _Atomic int dummy;

        atomic_fetch_add_explicit(&dummy, 0, memory_order_seq_cst);
}
#else
static inline void full_barrier(void)
{
        atomic_thread_fence(memory_order_seq_cst);
}
#endif

#endif
