/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Log lines: "<wall time> <level> [shard k] message\n" written with one
 * write(2) to stderr so concurrent shards never interleave within a line;
 * log_file_open() swaps the file behind stderr; log_sink_set() hands the
 * lines to a callback instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "base/time.h"

enum log_level log_level = LOG_LEVEL_INFO;

static const char *const level_names[LOG_LEVEL_MAX] = { "error", "warn", "info", "debug" };

/* The sink (NULL: stderr). Atomic so that a reader on another thread is
 * no data race; fn is stored last and loaded first, so a reader that
 * sees a new fn sees its arg. */
static _Atomic(void (*)(void *, enum log_level, const char *)) sink_fn;
static _Atomic(void *) sink_arg;

void log_sink_set(void (*fn)(void *arg, enum log_level level, const char *message), void *arg)
{
        atomic_store_explicit(&sink_arg, arg, memory_order_relaxed);
        atomic_store_explicit(&sink_fn, fn, memory_order_release);
}

enum log_level log_level_parse(const char *s)
{
        for (int i = 0; i < LOG_LEVEL_MAX; i++)
                if (strcmp(s, level_names[i]) == 0)
                        return (enum log_level)i;
        return LOG_LEVEL_INVALID;
}

int log_file_open(const char *path)
{
        int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644), r = 0;

        if (fd < 0)
                return -errno;
        if (fd != STDERR_FILENO) {
                if (dup2(fd, STDERR_FILENO) < 0)
                        r = -errno;
                close(fd);
        }
        return r;
}

void log_write(enum log_level level, const char *fmt, ...)
{
        void (*fn)(void *, enum log_level, const char *);
        char line[1024];
        uint64_t now;
        struct tm tm;
        time_t secs;
        size_t n;
        va_list ap;
        int r;

        if (level > log_level || level < 0 || level >= LOG_LEVEL_MAX)
                return;
        if ((fn = atomic_load_explicit(&sink_fn, memory_order_acquire))) {
                va_start(ap, fmt);
                if (vsnprintf(line, sizeof(line), fmt, ap) < 0)       /* cut to fit */
                        line[0] = 0;
                va_end(ap);
                fn(atomic_load_explicit(&sink_arg, memory_order_relaxed), level, line);
                return;
        }
        now = time_wall_ns();
        secs = (time_t)(now / NS_PER_SEC);
        gmtime_r(&secs, &tm);
        n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
        if (check_current_shard >= 0)
                r = snprintf(line + n, sizeof(line) - n, ".%03uZ %-5s [shard %d] ",
                             (unsigned)(now % NS_PER_SEC / NS_PER_MS), level_names[level],
                             check_current_shard);
        else
                r = snprintf(line + n, sizeof(line) - n, ".%03uZ %-5s ",
                             (unsigned)(now % NS_PER_SEC / NS_PER_MS), level_names[level]);
        n += (size_t)r;
        va_start(ap, fmt);
        r = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
        va_end(ap);
        n = r < 0 ? n : (n + (size_t)r < sizeof(line) - 1 ? n + (size_t)r : sizeof(line) - 2);
        line[n++] = '\n';
        if (write(STDERR_FILENO, line, n) < 0)
                return;
}
