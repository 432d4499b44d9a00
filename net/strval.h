/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pure helpers of the string commands that have exact Redis-visible
 * semantics: INCRBYFLOAT's number parsing and formatting (a long double,
 * written "%.17Lf" with trailing zeros cut, so never with an exponent;
 * see docs/protocol.md) and GETRANGE's index arithmetic.
 *
 * Pure; any thread.
 */
#ifndef SCREE_NET_STRVAL_H
#define SCREE_NET_STRVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for any finite long double written by net_ld_format, with its NUL
 * (a value whose text would not fit is refused). */
#define NET_LD_MAX 5120

/*
 * Parses s[0..len) as INCRBYFLOAT takes a float: the whole string,
 * strtold syntax, no leading space, not NaN, no overflow or underflow
 * to zero, at most NET_LD_MAX - 1 bytes. "inf" itself parses (the caller
 * refuses an infinite result). Returns 0
 * and *ret, or -EINVAL.
 */
int net_ld_parse(const char *s, size_t len, long double *ret);

/*
 * Writes v into buf (NET_LD_MAX bytes) as "%.17Lf" with trailing zeros
 * (and then a trailing '.') removed, "-0" written "0". Returns the length,
 * or -EINVAL if v is not finite or the text does not fit.
 */
int net_ld_format(char *buf, long double v);

/*
 * GETRANGE's window: clamps [start, end] (negative: from the end) over a
 * string of len bytes. Returns true with *ret_off and *ret_n (the bytes to
 * reply), or false for the empty reply.
 */
bool net_range_clamp(int64_t start, int64_t end, size_t len, size_t *ret_off, size_t *ret_n);

#endif
