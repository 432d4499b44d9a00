/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress's reply scanner: finds where each RESP reply a server sends
 * ends, without building it. A load generator only needs to count replies,
 * match them in order to its requests, and tell errors (`-...`) and nils
 * (`$-1`, `*-1`, RESP3 `_`) apart from values, so nothing is copied: bulk
 * bodies are skipped as they arrive, lines are judged in place.
 *
 * Understands RESP2 and RESP3 replies: simple strings, errors, integers,
 * bulk strings, arrays, and RESP3's null, double, boolean, big number,
 * verbatim string, blob error, map, set, attribute and push types
 * (aggregates nested up to STRESS_REPLY_MAX_DEPTH).
 *
 * Incremental: the caller feeds whatever it read, in fragments of any
 * size; a line cut by a read stays in the caller's buffer (the scanner
 * says how much it used) and is fed again with what follows. Pure, no I/O;
 * one scanner per connection.
 */
#ifndef SCREE_PERF_SCREE_STRESS_REPLY_H
#define SCREE_PERF_SCREE_STRESS_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STRESS_REPLY_MAX_DEPTH 8u
/* The longest line (type byte to CRLF) accepted: error texts, numbers. */
#define STRESS_REPLY_MAX_LINE 65536u

/* Caller-embedded; zero it (or stress_reply_init) to start. Private fields. */
struct stress_reply_scanner {
        uint64_t left[STRESS_REPLY_MAX_DEPTH];  /* elements still due per open aggregate */
        unsigned depth;                         /* open aggregates */
        unsigned attr;                          /* bit per level: an attribute */
        uint64_t bulk_left;                     /* body bytes (and CRLF) still to skip */
        bool is_error, is_nil;                  /* of the reply being scanned */
};

/* A finished top-level reply. */
struct stress_reply {
        bool is_error;          /* `-...` or a blob error `!...` */
        bool is_nil;            /* a null reply: `$-1`, `*-1`, `_` */
        /* is_error: the text of a simple error (without '-'), borrowed from
         * the buffer given to the call that finished it, valid while that
         * buffer is; NULL for a blob error. */
        const char *err;
        size_t err_len;
};

void stress_reply_init(struct stress_reply_scanner *s);

/*
 * Scans the len bytes at buf (borrowed), continuing where the previous
 * call stopped. Stops after the first reply that completes.
 *
 * Returns the bytes of buf used (0..len) and:
 *   *ret_done true: a reply completed; *ret describes it. Call again with
 *     the rest of buf.
 *   *ret_done false: every complete part was used; the unused bytes (fewer
 *     than a line) must be fed again, followed by more input.
 * or -EPROTO for bytes that are not RESP (a bad type byte, a bad length,
 * a line over STRESS_REPLY_MAX_LINE, nesting over STRESS_REPLY_MAX_DEPTH);
 * the connection is then useless.
 * *ret is written only when *ret_done is set. Any thread; pure.
 */
ssize_t stress_reply_scan(struct stress_reply_scanner *s, const char *buf, size_t len,
                          bool *ret_done, struct stress_reply *ret);

#endif
