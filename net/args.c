/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Argument parsing with Redis's judgement and error texts (see args.h).
 * Everything here is pure and table-tested in tests/net/test_args.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "net/args.h"

int net_arg_i64(const struct net_arg *a, int64_t *ret)
{
        const char *p = a->ptr;
        size_t n = a->len, i = 0;
        bool neg = false;
        uint64_t v = 0, max;

        if (n == 0 || n > 20)
                return -EINVAL;
        if (p[0] == '-') {
                neg = true;
                i = 1;
                if (n == 1)
                        return -EINVAL;
        }
        if (p[i] == '0' && n > i + 1)
                return -EINVAL;                 /* leading zeros */
        max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        for (; i < n; i++) {
                unsigned d = (unsigned char)p[i] - '0';

                if (d > 9 || v > (max - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        if (neg && v == 0)
                return -EINVAL;                 /* "-0" */
        *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
        return 0;
}

size_t net_fmt_i64(char *buf, int64_t v)
{
        return (size_t)snprintf(buf, 21, "%lld", (long long)v);
}

bool net_arg_is(const struct net_arg *a, const char *lit)
{
        size_t n = strlen(lit);

        return a->len == n && strncasecmp(a->ptr, lit, n) == 0;
}

int net_expiry_ms(int64_t v, uint64_t unit_ms, bool absolute, uint64_t now_ms, uint64_t *ret_ms)
{
        int64_t ms, base = absolute ? 0 : (int64_t)now_ms;

        if (__builtin_mul_overflow(v, (int64_t)unit_ms, &ms) ||
            __builtin_add_overflow(ms, base, &ms))
                return -ERANGE;
        *ret_ms = ms < 0 ? 0 : (uint64_t)ms;
        return 0;
}

static const char E_SET_EXPIRE[] = "invalid expire time in 'set' command";

/* EX/PX/EXAT/PXAT with its number at *a. */
static const char *set_expiry(const struct net_arg *word, const struct net_arg *a, uint64_t now_ms,
                              struct net_set_opts *o)
{
        bool px = net_arg_is(word, "px") || net_arg_is(word, "pxat");
        bool at = net_arg_is(word, "exat") || net_arg_is(word, "pxat");
        int64_t v;

        if (net_arg_i64(a, &v) < 0)
                return NET_ERR_NOT_INT;
        if (v <= 0 || net_expiry_ms(v, px ? 1 : 1000, at, now_ms, &o->expiry_ms) < 0)
                return E_SET_EXPIRE;
        if (o->expiry_ms == 0)
                o->expiry_ms = 1;               /* 0 means "never" to the engine */
        o->flags |= NET_SET_EXPIRY;
        return NULL;
}

const char *net_set_opts_parse(const struct net_arg *argv, size_t argc, uint64_t now_ms,
                               struct net_set_opts *ret)
{
        struct net_set_opts o = { 0 };

        for (size_t i = 0; i < argc; i++) {
                const struct net_arg *w = &argv[i];
                uint32_t f = o.flags;

                if (net_arg_is(w, "nx") && !(f & NET_SET_XX)) {
                        o.flags |= NET_SET_NX;
                } else if (net_arg_is(w, "xx") && !(f & NET_SET_NX)) {
                        o.flags |= NET_SET_XX;
                } else if (net_arg_is(w, "get")) {
                        o.flags |= NET_SET_GET;
                } else if (net_arg_is(w, "keepttl") && !(f & NET_SET_EXPIRY)) {
                        o.flags |= NET_SET_KEEPTTL;
                } else if ((net_arg_is(w, "ex") || net_arg_is(w, "px") || net_arg_is(w, "exat") ||
                            net_arg_is(w, "pxat")) &&
                           !(f & (NET_SET_EXPIRY | NET_SET_KEEPTTL)) && i + 1 < argc) {
                        const char *err = set_expiry(w, &argv[i + 1], now_ms, &o);

                        if (err)
                                return err;
                        i++;
                } else {
                        return NET_ERR_SYNTAX;
                }
        }
        *ret = o;
        return NULL;
}

const char *net_expire_opts_parse(const struct net_arg *argv, size_t argc, uint32_t *ret_flags,
                                  char *err_buf, size_t err_len)
{
        uint32_t f = 0;

        for (size_t i = 0; i < argc; i++) {
                if (net_arg_is(&argv[i], "nx"))
                        f |= NET_EXPIRE_NX;
                else if (net_arg_is(&argv[i], "xx"))
                        f |= NET_EXPIRE_XX;
                else if (net_arg_is(&argv[i], "gt"))
                        f |= NET_EXPIRE_GT;
                else if (net_arg_is(&argv[i], "lt"))
                        f |= NET_EXPIRE_LT;
                else {
                        snprintf(err_buf, err_len, "Unsupported option %.*s",
                                 (int)(argv[i].len > 64 ? 64 : argv[i].len), argv[i].ptr);
                        return err_buf;
                }
        }
        if ((f & NET_EXPIRE_NX) && (f & (NET_EXPIRE_XX | NET_EXPIRE_GT | NET_EXPIRE_LT)))
                return "NX and XX, GT or LT options at the same time are not compatible";
        if ((f & NET_EXPIRE_GT) && (f & NET_EXPIRE_LT))
                return "GT and LT options at the same time are not compatible";
        *ret_flags = f;
        return NULL;
}

bool net_expire_allowed(uint32_t flags, uint64_t cur_ms, uint64_t new_ms)
{
        /* A key without an expiry counts as an infinite TTL for GT and LT. */
        if ((flags & NET_EXPIRE_NX) && cur_ms != 0)
                return false;
        if ((flags & NET_EXPIRE_XX) && cur_ms == 0)
                return false;
        if ((flags & NET_EXPIRE_GT) && (cur_ms == 0 || new_ms <= cur_ms))
                return false;
        if ((flags & NET_EXPIRE_LT) && cur_ms != 0 && new_ms >= cur_ms)
                return false;
        return true;
}
