/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Incremental RESP request parser (protocol: docs/protocol.md).
 *
 * Accepts what a Redis server accepts from a client: arrays of bulk strings
 * (`*N\r\n$len\r\n...\r\n`) and inline commands (a line of words with
 * Redis-like quoting). The caller feeds the bytes it received, in fragments
 * of any size; each call returns at most one command. A command that lies
 * wholly inside the caller's buffer is returned zero-copy (its arguments
 * point into that buffer); the bytes of a command that spans calls are
 * copied once into a per-connection stash, bounded by the limits. Every
 * byte is examined O(1) times: a length line is judged from O(1) running
 * state, an inline line is searched for its newline once.
 *
 * Nothing is allocated from an untrusted length: the argument array grows
 * as arguments arrive, the stash as bytes arrive.
 *
 * After a protocol error the parser is dead: every later call fails the
 * same way; net_resp_parser_error() gives the text (exact Redis wording
 * where Redis has one) for the server's `-ERR <text>` before it closes.
 *
 * Pure, no I/O. A parser belongs to one connection and so to one shard.
 */
#ifndef SCREE_NET_RESP_PARSE_H
#define SCREE_NET_RESP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Defaults, as in Redis: proto-max-bulk-len, the old multibulk cap, the
 * inline limit (PROTO_INLINE_MAX_SIZE) and client-query-buffer-limit. */
#define NET_RESP_DEFAULT_MAX_BULK_BYTES (512ull << 20)
#define NET_RESP_DEFAULT_MAX_ARRAY_LEN (1024u * 1024u)
#define NET_RESP_DEFAULT_MAX_INLINE_BYTES (64u << 10)
#define NET_RESP_DEFAULT_MAX_CMD_BYTES (1ull << 30)

/* What an unauthenticated connection may send (Redis's values). */
#define NET_RESP_UNAUTH_MAX_ARRAY_LEN 10u
#define NET_RESP_UNAUTH_MAX_BULK_BYTES 16384u

struct net_resp_limits {
        uint64_t max_bulk_bytes;        /* one bulk argument's length */
        uint64_t max_array_len;         /* arguments of one array request */
        uint64_t max_inline_bytes;      /* an inline line; also a length line */
        uint64_t max_cmd_bytes;         /* every byte of one command, headers included */
};

/* One argument: len bytes at ptr, binary-safe, not NUL-terminated. */
struct net_arg {
        const char *ptr;
        size_t len;
};

/* A parsed command: argc >= 1 arguments. Borrowed; see net_resp_parse(). */
struct net_cmd {
        size_t argc;
        const struct net_arg *argv;
};

/* Caller-embedded; the fields are private to resp_parse.c. */
struct net_resp_parser {
        struct net_resp_limits lim;
        uint8_t phase;
        uint8_t nflags;                 /* running judgement of a length line */
        bool unauthenticated;
        bool release_stash;             /* the last command lay in the stash */
        char line_first;                /* first byte of a bulk length line */
        uint64_t num;                   /* digits of the length line so far */
        uint64_t line_bytes;            /* bytes of the current line so far */
        uint64_t cmd_bytes;             /* bytes of the current command so far */
        uint64_t args_left;             /* array arguments still to come */
        uint64_t bulk_left;             /* bytes of the current bulk still to come */
        size_t argc, arg_cap;
        struct net_arg *argv;
        size_t *arg_off;                /* offset of each argument in the command */
        char *stash;                    /* bytes of a command that spans calls */
        size_t stash_len, stash_cap;
        char *words;                    /* an inline command's decoded words */
        size_t words_cap;
        const char *err;
        char err_buf[48];
};

/*
 * Fills *ret_lim with the defaults above. Any thread.
 */
void net_resp_limits_default(struct net_resp_limits *ret_lim);

/*
 * Initializes p with a copy of *lim (borrowed; NULL means the defaults).
 * Allocates nothing. REQUIRES: every limit >= 1. Shard-local.
 */
void net_resp_parser_init(struct net_resp_parser *p, const struct net_resp_limits *lim);

/* Frees what p holds. p may be half-used or dead; NULL is a no-op. Shard-local. */
void net_resp_parser_fini(struct net_resp_parser *p);

/*
 * Unauthenticated connections get Redis's tighter limits (an array of at
 * most 10 arguments, bulks of at most 16384 bytes) with Redis's texts
 * ("Protocol error: unauthenticated multibulk length" / "... bulk length").
 * Default: authenticated. Takes effect from the next length line. Shard-local.
 */
void net_resp_parser_set_authenticated(struct net_resp_parser *p, bool authenticated);

/*
 * Parses the len bytes at buf (borrowed), continuing the command a
 * previous call left unfinished.
 *
 * Returns:
 *   > 0  a command is in *ret_cmd; that many bytes of buf were used. Call
 *        again with the rest of buf.
 *   0    every byte of buf was used (anything unfinished is kept in the
 *        parser) and no command is complete: feed more input.
 *   -SCREE_EPROTO  protocol error; the parser is dead from now on (and stays
 *        so); net_resp_parser_error() says why. Commands returned before
 *        the error were valid.
 *   -ENOMEM  the stash or the argument array could not grow; the parser is
 *        dead.
 *
 * *ret_cmd is written only when > 0 is returned. Its argv and the bytes it
 * points at are borrowed, valid until the next call on p (or its fini) --
 * and, when they point into buf, while buf is: the caller keeps buf alive
 * until it is done with the command. Empty inline lines, `*0` and negative
 * array lengths are skipped, as Redis does. Shard-local.
 */
ssize_t net_resp_parse(struct net_resp_parser *p, const char *buf, size_t len,
                       struct net_cmd *ret_cmd);

/* True once the parser has failed. Shard-local. */
bool net_resp_parser_is_dead(const struct net_resp_parser *p);

/*
 * The text of the error that killed p, without "ERR " and free of CR, LF
 * and NUL (e.g. "Protocol error: invalid bulk length"); NULL while p is
 * alive. Borrowed, valid until fini. Shard-local.
 */
const char *net_resp_parser_error(const struct net_resp_parser *p);

/*
 * Bytes of an unfinished command the parser holds (copied from earlier
 * calls), for the server's bound on buffered input. Shard-local.
 */
size_t net_resp_parser_buffered_bytes(const struct net_resp_parser *p);

/* Heap bytes the parser holds now (stash, argument array, inline words). Shard-local. */
size_t net_resp_parser_mem_bytes(const struct net_resp_parser *p);

#endif
