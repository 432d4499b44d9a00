/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree_options: the library's settings by name (scree.h); the thread's
 * last error message, which every failing call sets (api_fail); the
 * process's log callback (base/log.h underneath).
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/check.h"
#include "base/log.h"
#include "engine/api/api_int.h"
#include "engine/tablet.h"

#define MIB (UINT64_C(1) << 20)

static _Thread_local char last_error[API_ERR_BYTES];

SCREE_API const char *scree_last_error(void)
{
        return last_error;
}

int api_fail(int err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(last_error, sizeof(last_error), fmt, ap);
        va_end(ap);
        return err;
}

const char *api_res_message(enum api_op op, int res)
{
        switch (res) {
        case -ENOSPC:
                return "the disk is full: nothing was acknowledged (writes go on once space "
                       "returns)";
        case -SCREE_ERATELIMIT:
                return "the key's partition is over its table's per-partition rate limit: "
                       "nothing done";
        case -SCREE_ESHUTDOWN:
                return "the database is closing (scree_close began)";
        case -SCREE_ENOTFOUND:
                return op == API_OP_GET ? "no such key (absent or expired)"
                                        : "the table was dropped";
        case -ENOBUFS:
                return "the value is longer than the buffer (*ret_len is its length)";
        case -ENOMEM:
                return "out of memory";
        case -SCREE_ECORRUPT:
                return "damaged data on disk (the log names the file)";
        case -EIO:
                return "an I/O error (the log says more)";
        case -SCREE_EMOVED:
                return "the key's tablet kept moving";
        default:
                return scree_strerror(res);
        }
}

int api_off_shard(void)
{
        if (check_current_shard < 0)
                return 0;
        return api_fail(-SCREE_EONSHARD, "a blocking scree call on shard %d's thread (from an "
                        "update function?): use the asynchronous form", check_current_shard);
}

SCREE_API int scree_api_version(void)
{
        return SCREE_API_VERSION;
}

SCREE_API const char *scree_version(void)
{
        return SCREE_VERSION;
}

enum opt_kind { K_UINT, K_SIZE, K_BOOL, K_SYNC };

struct opt_def {
        const char *name;
        enum opt_kind kind;
        size_t off;
        uint64_t lo, hi;
};

#define OFF(f) offsetof(struct api_opts, f)

static const struct opt_def defs[] = {
        { "smp", K_UINT, OFF(smp), 0, ENG_CATALOG_MAX_SHARDS },
        { "memory", K_SIZE, OFF(memory), 16 * MIB, UINT64_MAX },
        { "cache-size", K_SIZE, OFF(cache), 0, UINT64_MAX },
        { "commitlog-sync", K_SYNC, OFF(periodic), 0, 1 },
        { "commitlog-sync-period-ms", K_UINT, OFF(period_ms), 1, 60000 },
        { "max-key-bytes", K_SIZE, OFF(max_key_bytes), 1, ENG_MAX_USER_KEY_BYTES },
        { "max-value-bytes", K_SIZE, OFF(max_value_bytes), 1, ENG_MAX_VALUE_BYTES },
        { "pin", K_BOOL, OFF(pin), 0, 1 },
        { "prefault", K_BOOL, OFF(prefault), 0, 1 },
        { "salvage", K_BOOL, OFF(salvage), 0, 1 },
        { "idle-poll-us", K_UINT, OFF(idle_poll_us), 1, 1000000 },
};

static const struct opt_def *def_find(const char *name)
{
        for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
                if (strcasecmp(defs[i].name, name) == 0)
                        return &defs[i];
        return NULL;
}

SCREE_API scree_options *scree_options_new(void)
{
        scree_options *o = calloc(1, sizeof(*o));

        if (!o)
                return NULL;
        o->o = (struct api_opts){ .memory = 1024 * MIB, .period_ms = 10,
                                  .max_key_bytes = ENG_MAX_USER_KEY_BYTES,
                                  .max_value_bytes = 8 * MIB, .pin = true, .idle_poll_us = 50 };
        return o;
}

SCREE_API void scree_options_free(scree_options *o)
{
        free(o);
}

/* A number with an optional k/m/g/t suffix (kb, kib, ... too; powers of
 * 1024) when size. */
static int num_parse(const char *v, bool size, uint64_t *ret)
{
        static const char *const units[] = { "k", "m", "g", "t" };
        char *end;
        unsigned shift = 0;
        uint64_t n;

        if (!*v || *v == '-' || *v == '+')
                return -EINVAL;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno || end == v)
                return -EINVAL;
        if (*end) {
                if (!size)
                        return -EINVAL;
                for (unsigned i = 0; i < 4 && !shift; i++) {
                        size_t l = strlen(units[i]);

                        if (strncasecmp(end, units[i], l) == 0 &&
                            (!end[l] || strcasecmp(end + l, "b") == 0 || strcasecmp(end + l, "ib") == 0))
                                shift = 10 * (i + 1);
                }
                if (!shift || n > UINT64_MAX >> shift)
                        return -EINVAL;
        }
        *ret = n << shift;
        return 0;
}

static int bool_parse(const char *v, bool *ret)
{
        if (!strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcmp(v, "1"))
                *ret = true;
        else if (!strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcmp(v, "0"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

SCREE_API int scree_options_set(scree_options *o, const char *name, const char *value)
{
        const struct opt_def *d = name ? def_find(name) : NULL;
        char *field;
        uint64_t n = 0;

        if (!o || !value)
                return api_fail(-EINVAL, "scree_options_set needs options and a value");
        if (!d)
                return api_fail(-EINVAL, "unknown option '%s' (options: smp, memory, cache-size, "
                                "commitlog-sync, commitlog-sync-period-ms, max-key-bytes, "
                                "max-value-bytes, pin, prefault, salvage, idle-poll-us)",
                                name ? name : "(null)");
        field = (char *)&o->o + d->off;
        switch (d->kind) {
        case K_BOOL:
                if (bool_parse(value, (bool *)field) < 0)
                        return api_fail(-EINVAL, "%s must be yes or no, got '%.40s'", d->name,
                                        value);
                return 0;
        case K_SYNC:
                if (strcasecmp(value, "batch") && strcasecmp(value, "periodic"))
                        return api_fail(-EINVAL, "commitlog-sync must be batch or periodic, got "
                                        "'%.40s'", value);
                *(bool *)field = strcasecmp(value, "periodic") == 0;
                return 0;
        case K_UINT:
        case K_SIZE:
                if (num_parse(value, d->kind == K_SIZE, &n) < 0 || n < d->lo || n > d->hi)
                        return api_fail(-EINVAL, "%s must be %s from %" PRIu64 " to %" PRIu64
                                        ", got '%.40s'", d->name,
                                        d->kind == K_SIZE ? "a size" : "an integer", d->lo, d->hi,
                                        value);
                if (d->off == OFF(period_ms) || d->off == OFF(idle_poll_us))
                        *(uint32_t *)field = (uint32_t)n;
                else if (d->off == OFF(smp))
                        *(unsigned *)field = (unsigned)n;
                else
                        *(uint64_t *)field = n;
                return 0;
        }
        return api_fail(-EINVAL, "option %s has no known kind", d->name);
}

SCREE_API int scree_options_get(const scree_options *o, const char *name, char *buf, size_t cap)
{
        const struct opt_def *d = name ? def_find(name) : NULL;
        const char *field;
        uint64_t n;
        int len;

        if (!o || (!buf && cap))
                return api_fail(-EINVAL, "scree_options_get needs options and a buffer");
        if (!d)
                return api_fail(-EINVAL, "unknown option '%s'", name ? name : "(null)");
        field = (const char *)&o->o + d->off;
        if (d->kind == K_BOOL)
                len = snprintf(buf, cap, "%s", *(const bool *)field ? "yes" : "no");
        else if (d->kind == K_SYNC)
                len = snprintf(buf, cap, "%s", *(const bool *)field ? "periodic" : "batch");
        else {
                if (d->off == OFF(period_ms) || d->off == OFF(idle_poll_us))
                        n = *(const uint32_t *)field;
                else if (d->off == OFF(smp))
                        n = *(const unsigned *)field;
                else
                        n = *(const uint64_t *)field;
                len = snprintf(buf, cap, "%" PRIu64, n);
        }
        if (len < 0 || (size_t)len >= cap)
                return api_fail(-ENOSPC, "option %s's value takes %d bytes and a NUL; the buffer "
                                "has %zu", d->name, len, cap);
        return len;
}

/* The library's levels are the log module's. */
static_assert(SCREE_LOG_ERROR == LOG_LEVEL_ERROR && SCREE_LOG_WARN == LOG_LEVEL_WARN &&
               SCREE_LOG_INFO == LOG_LEVEL_INFO && SCREE_LOG_DEBUG == LOG_LEVEL_DEBUG,
               "scree.h's log levels are base/log.h's");

static scree_log_fn user_log;

/* The log module's sink: hands the line to the program's function. */
static void log_to_user(void *arg, enum log_level level, const char *message)
{
        user_log(arg, (int)level, message);
}

SCREE_API int scree_set_log(scree_log_fn fn, void *arg)
{
        if (api_dbs_open())
                return api_fail(-EBUSY, "scree_set_log while a database is open: its threads may "
                                "be logging; set it before scree_open or after scree_close");
        user_log = fn;
        log_sink_set(fn ? log_to_user : NULL, arg);
        return 0;
}
