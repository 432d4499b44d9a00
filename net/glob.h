/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glob-style pattern matching, as CONFIG GET (and later KEYS and SCAN
 * MATCH) take it: `*` any run of bytes, `?` any one byte, `[abc]`, `[a-z]`
 * and `[^...]` a class, `\x` the byte x itself. Binary-safe (lengths, not
 * NUL). A `*` backtracks only to its last position, so matching is
 * O(pattern * string) at worst, never exponential.
 *
 * Pure; any thread.
 */
#ifndef SCREE_NET_GLOB_H
#define SCREE_NET_GLOB_H

#include <stdbool.h>
#include <stddef.h>

/* True if the whole of s[0..slen) matches pat[0..plen). nocase: ASCII
 * letters compare without case. Both borrowed for the call. */
bool net_glob_match(const char *pat, size_t plen, const char *s, size_t slen, bool nocase);

#endif
