/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Time: one unit everywhere, u64 nanoseconds of CLOCK_MONOTONIC. The vDSO
 * makes time_now_ns() a ~20 ns call with no syscall. Any thread.
 */
#ifndef SCREE_BASE_TIME_H
#define SCREE_BASE_TIME_H

#include <stdint.h>
#include <time.h>

#define NS_PER_US UINT64_C(1000)
#define NS_PER_MS UINT64_C(1000000)
#define NS_PER_SEC UINT64_C(1000000000)

static inline uint64_t time_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/*
 * CLOCK_MONOTONIC_COARSE: the time at the last scheduler tick (1-4 ms
 * resolution) for ~3 ns instead of ~25 ns on a VM's kvm-clock. For coarse
 * checks on hot paths, such as spotting 25 ms stalls per message.
 */
static inline uint64_t time_coarse_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Wall-clock time (CLOCK_REALTIME) in ns since the epoch, for TTLs and logs. */
static inline uint64_t time_wall_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* CPU time the calling thread used (CLOCK_THREAD_CPUTIME_ID). */
static inline uint64_t time_thread_cpu_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME_COARSE: wall-clock time at the last tick, for second-
 * resolution bookkeeping on hot paths (a client's idle time). */
static inline uint64_t time_wall_coarse_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME_COARSE, &ts);
        return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static inline struct timespec time_ns_to_timespec(uint64_t ns)
{
        struct timespec ts = { .tv_sec = (time_t)(ns / NS_PER_SEC), .tv_nsec = (long)(ns % NS_PER_SEC) };

        return ts;
}

#endif
