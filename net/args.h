/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Parsing command arguments the way Redis judges them: strict integers
 * (no spaces, no '+', no leading zeros, within int64), option words
 * without case, and the options of SET and EXPIRE with Redis's exact
 * error texts (returned without the "ERR " the reply adds).
 *
 * Pure; any thread.
 */
#ifndef SCREE_NET_ARGS_H
#define SCREE_NET_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/resp_parse.h"

#define NET_ERR_NOT_INT "value is not an integer or out of range"
#define NET_ERR_SYNTAX "syntax error"
/* APPEND or SETRANGE whose result would pass --max-value-bytes (Redis names
 * its own limit, proto-max-bulk-len, which --max-value-bytes stands for). */
#define NET_ERR_STRING_MAX "string exceeds maximum allowed size (proto-max-bulk-len)"

/* Parses a strict decimal int64. Returns 0 and *ret, or -EINVAL. */
int net_arg_i64(const struct net_arg *a, int64_t *ret);

/* Formats v into buf (at least 21 bytes); returns the length. */
size_t net_fmt_i64(char *buf, int64_t v);

/* True if a equals the NUL-terminated word lit without ASCII case. */
bool net_arg_is(const struct net_arg *a, const char *lit);

/*
 * Converts a relative (unit_ms 1000 or 1, added to now_ms) or absolute
 * expiry time to wall-clock ms. Returns 0 and *ret_ms, or -ERANGE when
 * the arithmetic overflows. v may be <= 0; the result is then <= now_ms
 * (clamped to 0 below zero: already expired).
 */
int net_expiry_ms(int64_t v, uint64_t unit_ms, bool absolute, uint64_t now_ms, uint64_t *ret_ms);

enum net_set_flag {
        NET_SET_NX = 1u << 0,
        NET_SET_XX = 1u << 1,
        NET_SET_GET = 1u << 2,
        NET_SET_KEEPTTL = 1u << 3,
        NET_SET_EXPIRY = 1u << 4,       /* EX, PX, EXAT or PXAT given */
};

struct net_set_opts {
        uint32_t flags;                 /* enum net_set_flag */
        uint64_t expiry_ms;             /* with NET_SET_EXPIRY: wall clock */
};

/*
 * Parses SET's options, argv[0..argc) being what follows the value.
 * Returns NULL and *ret, or the error text: NET_ERR_SYNTAX (unknown or
 * conflicting options, a missing number), NET_ERR_NOT_INT, or "invalid
 * expire time in 'set' command" (zero, negative or overflowing time).
 */
const char *net_set_opts_parse(const struct net_arg *argv, size_t argc, uint64_t now_ms,
                               struct net_set_opts *ret);

enum net_expire_flag {
        NET_EXPIRE_NX = 1u << 0,        /* only if the key has no expiry */
        NET_EXPIRE_XX = 1u << 1,        /* only if it has one */
        NET_EXPIRE_GT = 1u << 2,        /* only if later than the current one */
        NET_EXPIRE_LT = 1u << 3,        /* only if earlier */
};

/*
 * Parses EXPIRE's options (argv[0..argc) after the time). Returns NULL
 * and *ret_flags, or the error text ("Unsupported option X" is written
 * into err_buf of err_len bytes and returned).
 */
const char *net_expire_opts_parse(const struct net_arg *argv, size_t argc, uint32_t *ret_flags,
                                  char *err_buf, size_t err_len);

/* Whether an expiry change is allowed by flags: cur_ms is the key's expiry
 * (0 = none), new_ms the new one. Pure. */
bool net_expire_allowed(uint32_t flags, uint64_t cur_ms, uint64_t new_ms);

#endif
