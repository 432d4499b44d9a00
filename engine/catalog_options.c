/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A table's options by name; see catalog_options.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <strings.h>

#include "engine/catalog_options.h"

#define TTL_MAX_S ((UINT64_C(1) << 62) / 1000 - 1)

static const char *const opt_name[ENG_OPT_MAX] = {
        "AUTO-SPLIT-SIZE", "AUTO-SPLIT-LOAD", "SPLIT-SIZE", "SPLIT-LOAD-PERCENT",
        "MIN-TABLETS", "MAX-TABLETS", "DEFAULT-TTL", "COMPACTION",
        "PER-PARTITION-READS", "PER-PARTITION-WRITES",
};

__attribute__((format(printf, 3, 4)))
static int fail(char *err, size_t err_len, const char *fmt, ...)
{
        va_list ap;

        if (err_len) {
                va_start(ap, fmt);
                vsnprintf(err, err_len, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

static bool word_is(const char *w, size_t len, const char *s)
{
        size_t n = 0;

        while (s[n])
                n++;
        return n == len && strncasecmp(w, s, len) == 0;
}

/* A strict decimal u64 (no sign, no leading zeros). */
static int u64_parse(const char *p, size_t len, uint64_t *ret)
{
        uint64_t v = 0;

        if (len == 0 || len > 20 || (p[0] == '0' && len > 1))
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                unsigned d = (unsigned char)p[i] - '0';

                if (d > 9 || v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int eng_catalog_opt_find(const char *name, size_t len)
{
        for (int k = 0; k < ENG_OPT_MAX; k++)
                if (word_is(name, len, opt_name[k]))
                        return k;
        return -1;
}

const char *eng_catalog_opt_name(enum eng_catalog_opt k)
{
        return k < ENG_OPT_MAX ? opt_name[k] : "?";
}

/* An integer from lo to hi for option k. */
static int opt_int(const char *v, size_t len, int k, uint64_t lo, uint64_t hi, uint64_t *ret,
                   char *err, size_t err_len)
{
        if (u64_parse(v, len, ret) < 0 || *ret < lo || *ret > hi)
                return fail(err, err_len, "%s must be an integer from %llu to %llu", opt_name[k],
                            (unsigned long long)lo, (unsigned long long)hi);
        return 0;
}

/* bytes[kb|mb|gb|tb] (powers of 1024, suffix without case), as redis.conf's
 * memory values. */
static int size_parse(const char *v, size_t len, uint64_t *ret, char *err, size_t err_len)
{
        static const char *const sfx[] = { "kb", "mb", "gb", "tb" };
        size_t num = len;
        unsigned shift = 0;
        uint64_t n;
        int shown = (int)(len > 40 ? 40 : len);

        while (num && (v[num - 1] < '0' || v[num - 1] > '9'))
                num--;
        for (unsigned i = 0; i < 4 && num < len; i++)
                if (word_is(v + num, len - num, sfx[i]))
                        shift = 10 * (i + 1);
        if (u64_parse(v, num, &n) < 0 || (num < len && !shift))
                return fail(err, err_len,
                            "SPLIT-SIZE must be a number of bytes, optionally with kb, mb, gb or "
                            "tb, got '%.*s'", shown, v);
        if (shift && n > UINT64_MAX >> shift)
                return fail(err, err_len, "SPLIT-SIZE %.*s is too large", shown, v);
        *ret = n << shift;
        return 0;
}

static int opt_switch(const char *v, size_t len, int k, bool *ret, char *err, size_t err_len)
{
        if (word_is(v, len, "on"))
                *ret = true;
        else if (word_is(v, len, "off"))
                *ret = false;
        else
                return fail(err, err_len, "%s must be on or off", opt_name[k]);
        return 0;
}

int eng_catalog_opt_set(struct eng_catalog_options *o, enum eng_catalog_opt k, const char *v,
                        size_t len, char *err, size_t err_len)
{
        uint64_t n = 0;
        int r = 0;

        switch (k) {
        case ENG_OPT_AUTO_SPLIT_SIZE:
                return opt_switch(v, len, k, &o->split_by_size, err, err_len);
        case ENG_OPT_AUTO_SPLIT_LOAD:
                return opt_switch(v, len, k, &o->split_by_load, err, err_len);
        case ENG_OPT_SPLIT_SIZE:
                return size_parse(v, len, &o->split_size_bytes, err, err_len);
        case ENG_OPT_SPLIT_LOAD_PERCENT:
                r = opt_int(v, len, k, 1, 100, &n, err, err_len);
                o->split_load_percent = (uint32_t)n;
                break;
        case ENG_OPT_MIN_TABLETS:
        case ENG_OPT_MAX_TABLETS:
                r = opt_int(v, len, k, 1, ENG_CATALOG_MAX_TABLETS, &n, err, err_len);
                *(k == ENG_OPT_MIN_TABLETS ? &o->min_tablets : &o->max_tablets) = (uint32_t)n;
                break;
        case ENG_OPT_DEFAULT_TTL:
                r = opt_int(v, len, k, 0, TTL_MAX_S, &n, err, err_len);
                o->default_ttl_ms = n * 1000;
                break;
        case ENG_OPT_COMPACTION:
                if (!word_is(v, len, "size-tiered"))
                        return fail(err, err_len,
                                    "COMPACTION must be size-tiered (the only strategy so far)");
                o->compaction = ENG_CATALOG_COMPACTION_SIZE_TIERED;
                break;
        case ENG_OPT_PARTITION_READS:
        case ENG_OPT_PARTITION_WRITES:
                r = opt_int(v, len, k, 0, UINT32_MAX, &n, err, err_len);
                *(k == ENG_OPT_PARTITION_READS ? &o->partition_reads_per_sec
                                               : &o->partition_writes_per_sec) = (uint32_t)n;
                break;
        default:
                return fail(err, err_len, "unknown option");
        }
        return r;
}

int eng_catalog_opts_check(const struct eng_catalog_options *o, char *err, size_t err_len)
{
        if (o->min_tablets > o->max_tablets)
                return fail(err, err_len, "MIN-TABLETS %u is above MAX-TABLETS %u", o->min_tablets,
                            o->max_tablets);
        return eng_catalog_options_check(o, err, err_len) < 0 ? -EINVAL : 0;
}

int eng_catalog_opt_unknown(const char *word, size_t len, const char *also, char *err,
                            size_t err_len)
{
        return fail(err, err_len,
                    "unknown %soption '%.*s' (options: AUTO-SPLIT-SIZE, AUTO-SPLIT-LOAD, "
                    "SPLIT-SIZE, SPLIT-LOAD-PERCENT, MIN-TABLETS, MAX-TABLETS, DEFAULT-TTL, "
                    "COMPACTION, PER-PARTITION-READS, PER-PARTITION-WRITES)", also,
                    (int)(len > 40 ? 40 : len), word);
}
