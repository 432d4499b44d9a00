/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Log lines: "<wall time> <level> [shard k] message\n" written with one
 * write(2) to stderr so concurrent shards never interleave within a line;
 * log_file_open() swaps the file behind stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"
#include "base/time.h"

enum log_level log_level = LOG_LEVEL_INFO;

static const char *const level_names[LOG_LEVEL_MAX] = { "error", "warn", "info", "debug" };

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
        char line[1024];
        uint64_t now = time_wall_ns();
        struct tm tm;
        time_t secs = (time_t)(now / NS_PER_SEC);
        size_t n;
        va_list ap;
        int r;

        if (level > log_level || level < 0 || level >= LOG_LEVEL_MAX)
                return;
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
