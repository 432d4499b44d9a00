/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Minimal leveled logging to stderr, one line per call (a single write(2), so
 * lines from different shards never interleave mid-line) -- or, once a
 * program embedding the library installed one (log_sink_set), to its
 * callback, one call per line. log_file_open()
 * points stderr itself at a file (the logfile setting), so that everything
 * else the process writes there -- an assertion's report, a sanitizer's --
 * lands in the same file; calling it again with the same path after the
 * file was renamed starts a new one (log rotation on SIGHUP).
 *
 * reactor/ and engine/ log at debug level at most; net/main.c and tools/
 * decide what the user sees. log_level is set once at start-up, before any
 * shard thread exists, and only read afterwards. Any thread.
 */
#ifndef SCREE_BASE_LOG_H
#define SCREE_BASE_LOG_H

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARN,
        LOG_LEVEL_INFO,
        LOG_LEVEL_DEBUG,
        LOG_LEVEL_MAX,
        LOG_LEVEL_INVALID = -1,
};

extern enum log_level log_level;

__attribute__((format(printf, 2, 3))) void log_write(enum log_level level, const char *fmt, ...);

/*
 * Opens path (created 0644 if missing, appended to) and makes it the
 * process's stderr, where every later line goes. The switch is one dup2(2),
 * atomic for writers on other threads: each line goes whole to the old file
 * or whole to the new one. Returns 0, or -errno (nothing changed: the log
 * goes on where it went). Any thread, but one caller at a time.
 */
int log_file_open(const char *path);

/*
 * Sends every later line to fn(arg, level, message) instead of stderr:
 * message is the formatted text alone (no time, level or newline),
 * borrowed for the call. fn NULL: back to stderr. fn runs on the thread
 * that logs (any shard's or the caller's), possibly on several at once.
 * Not synchronised with log_write: call it while no other thread logs.
 */
void log_sink_set(void (*fn)(void *arg, enum log_level level, const char *message), void *arg);

/* Parses "error", "warn", "info" or "debug"; LOG_LEVEL_INVALID otherwise. */
enum log_level log_level_parse(const char *s);

#define log_error(...) log_write(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warn(...) log_write(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_info(...) log_write(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...)                                         \
        do {                                                   \
                if (log_level >= LOG_LEVEL_DEBUG)              \
                        log_write(LOG_LEVEL_DEBUG, __VA_ARGS__); \
        } while (0)

#endif
