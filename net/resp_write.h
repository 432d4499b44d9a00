/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP reply writer: a connection's output buffer and the reply types of
 * RESP2 and RESP3 (encodings: docs/protocol.md).
 *
 * The buffer is a chain of blocks (chunk_bytes each, 16 KiB by default; a
 * payload bigger than that gets one block of its own size), so replies are
 * appended without reallocating, and the server sends the unsent bytes as
 * an iovec array (io_uring sendmsg/writev) and then consumes what the
 * kernel took. Bytes handed out by net_resp_out_iov() never move or change
 * until consumed: appends only go past them.
 *
 * Every writer takes the connection's protocol version (set with
 * net_resp_out_set_proto) into account: RESP3 types degrade to their RESP2
 * forms (map -> flat array, double -> bulk, boolean -> integer, ...).
 *
 * A deferred aggregate header (KEYS, SCAN: the count is known only at the
 * end) is a slot in the chain whose bytes are written later; the blocks on
 * both sides are shared, nothing is moved. Bytes after an unset slot are not
 * handed out to send.
 *
 * Allocation failure makes the writer fail for good: the failing call
 * returns -ENOMEM, later ones do nothing and return -ENOMEM, and the reply
 * stream is no longer valid, so the server closes the connection
 * (net_resp_out_failed() lets it check once per batch).
 *
 * Pure, no I/O. A writer belongs to one connection and so to one shard.
 */
#ifndef SCREE_NET_RESP_WRITE_H
#define SCREE_NET_RESP_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct iovec;
struct net_out_block;
struct net_out_node;

#define NET_RESP_DEFAULT_CHUNK_BYTES (16u << 10)
/* The longest text net_resp_fmt_double() writes, with its NUL. */
#define NET_RESP_DOUBLE_MAX 32

enum net_resp_proto {
        NET_RESP2 = 2,
        NET_RESP3 = 3,
};

/* Aggregates whose length may be deferred. */
enum net_resp_agg {
        NET_RESP_ARRAY,         /* *N */
        NET_RESP_MAP,           /* %N pairs (RESP2: *2N) */
        NET_RESP_SET,           /* ~N (RESP2: *N) */
        NET_RESP_PUSH,          /* >N (RESP2: *N) */
        NET_RESP_AGG_MAX,
        NET_RESP_AGG_INVALID = -1,
};

/*
 * Error replies by code (INFO errorstats): the code is the text's first
 * word ("ERR", "WRONGTYPE") when a space ends it within 32 bytes, else
 * "ERR", as Redis counts them. Codes past NET_RESP_ERR_CODES are counted
 * in total only. One per shard; a writer given it (net_resp_out_set_errstats)
 * counts every error it writes there.
 */
#define NET_RESP_ERR_CODES 128
#define NET_RESP_ERR_CODE_MAX 32
struct net_resp_errstats {
        uint64_t total;                 /* every error reply */
        uint32_t n_codes;
        uint64_t count[NET_RESP_ERR_CODES];
        char code[NET_RESP_ERR_CODES][NET_RESP_ERR_CODE_MAX];   /* NUL-terminated */
};

/* Counts one error reply of text (len bytes, its code first) in st. Pure. */
void net_resp_errstats_count(struct net_resp_errstats *st, const char *text, size_t len);

/* Caller-embedded; the fields are private to resp_write.c. */
struct net_resp_out {
        struct net_out_node *head, *tail;
        struct net_out_node *free_nodes;        /* recycled nodes */
        struct net_out_block *spare;            /* one recycled block */
        char *wpos, *wend;                      /* free space after the tail */
        size_t pending_bytes;
        size_t mem_bytes;
        size_t chunk_bytes;
        unsigned n_open;                        /* deferred headers not yet set */
        uint32_t n_errors;                      /* error replies written (INFO failed_calls) */
        struct net_resp_errstats *errstats;     /* where they are counted; may be NULL */
        uint8_t proto;
        bool failed;
};

/*
 * Initializes o for RESP2 with blocks of chunk_bytes (0: the default; at
 * least 64). Allocates nothing. Shard-local.
 */
void net_resp_out_init(struct net_resp_out *o, size_t chunk_bytes);

/*
 * Frees every block. REQUIRES: no send of bytes from o is in flight. NULL
 * is a no-op. Shard-local.
 */
void net_resp_out_fini(struct net_resp_out *o);

/* Counts the error replies written to o from now on in st (borrowed, kept;
 * NULL: none). Init and fini clear it. Shard-local (st's shard). */
void net_resp_out_set_errstats(struct net_resp_out *o, struct net_resp_errstats *st);

/* Error replies written to o so far (net_resp_add_error and those noted
 * with net_resp_out_note_error), wrapping at 2^32. Shard-local. */
uint32_t net_resp_out_errors(const struct net_resp_out *o);

/* Notes an error reply that reached o as raw bytes (a child's, copied by
 * the parent): counted in net_resp_out_errors only, as it was counted in
 * errstats where it was written. Shard-local. */
void net_resp_out_note_error(struct net_resp_out *o);

/* Selects the encoding of later replies: NET_RESP2 or NET_RESP3 (HELLO). Shard-local. */
void net_resp_out_set_proto(struct net_resp_out *o, enum net_resp_proto proto);

/* Bytes written and not yet consumed, deferred headers included. Shard-local. */
size_t net_resp_out_pending_bytes(const struct net_resp_out *o);

/* Heap bytes held (blocks and nodes, recycled ones included). Shard-local. */
size_t net_resp_out_mem_bytes(const struct net_resp_out *o);

/*
 * The unsent bytes of o as Redis's CLIENT LIST describes a client's output
 * (a fixed reply buffer, then a list of further buffers): *ret_head_bytes
 * unsent in the oldest block that holds any (obl), *ret_more_blocks the
 * blocks after it that hold unsent bytes (oll), and *ret_more_mem_bytes
 * what those take (omem). All 0 when nothing is pending. Walks the chain:
 * for introspection, not the request path. Shard-local.
 */
void net_resp_out_shape(const struct net_resp_out *o, size_t *ret_head_bytes,
                        size_t *ret_more_blocks, size_t *ret_more_mem_bytes);

/* True once an allocation failed: the stream is broken, close the connection. Shard-local. */
bool net_resp_out_failed(const struct net_resp_out *o);

/*
 * Fills iov[0..max_iov) with the bytes that can be sent now, in order: from
 * the oldest unsent byte up to the first deferred header not yet set.
 * Returns the number of entries filled (0: nothing to send) and, if
 * ret_bytes is not NULL, their total bytes. The memory stays valid and
 * unchanged until net_resp_out_consume() passes it (or fini). Shard-local.
 */
int net_resp_out_iov(const struct net_resp_out *o, struct iovec *iov, int max_iov,
                     size_t *ret_bytes);

/*
 * Drops the n oldest bytes (sent). Fully sent blocks are freed or recycled.
 * REQUIRES: n <= the bytes net_resp_out_iov() can hand out now. Shard-local.
 */
void net_resp_out_consume(struct net_resp_out *o, size_t n);

/*
 * Reply writers. Each appends one complete RESP value (or an aggregate
 * header: the caller then writes exactly its elements) and returns 0, or
 * -ENOMEM (see above). Borrowed arguments are copied. Shard-local.
 */

/* +text (CR and LF inside become spaces; leading and trailing ones are dropped). */
int net_resp_add_simple(struct net_resp_out *o, const char *text, size_t len);

/*
 * -text, sanitized as a simple string. text carries its own code word:
 * "ERR unknown command", "WRONGTYPE ...".
 */
int net_resp_add_error(struct net_resp_out *o, const char *text, size_t len);

/* -text from a printf format (the whole text; see net_resp_add_error). */
int net_resp_add_errorf(struct net_resp_out *o, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* :v */
int net_resp_add_int(struct net_resp_out *o, int64_t v);

/* $len bulk string, binary-safe. */
int net_resp_add_bulk(struct net_resp_out *o, const void *data, size_t len);

/* The null reply: RESP2 $-1 (a missing bulk), RESP3 _. */
int net_resp_add_null(struct net_resp_out *o);

/* The null array: RESP2 *-1, RESP3 _. */
int net_resp_add_null_array(struct net_resp_out *o);

/* An aggregate header of n elements (map: n pairs) of the given kind. */
int net_resp_add_agg(struct net_resp_out *o, enum net_resp_agg kind, uint64_t n);

/* *n, %n, ~n, >n: shorthands of net_resp_add_agg(). */
int net_resp_add_array(struct net_resp_out *o, uint64_t n);
int net_resp_add_map(struct net_resp_out *o, uint64_t n_pairs);
int net_resp_add_set(struct net_resp_out *o, uint64_t n);
int net_resp_add_push(struct net_resp_out *o, uint64_t n);

/* RESP3 ,d; RESP2 a bulk string. Text as net_resp_fmt_double(). */
int net_resp_add_double(struct net_resp_out *o, double d);

/* RESP3 #t / #f; RESP2 :1 / :0. */
int net_resp_add_bool(struct net_resp_out *o, bool b);

/*
 * RESP3 =len\r\nfmt:data (fmt: three bytes, "txt" or "mkd"); RESP2 a bulk
 * string of data alone.
 */
int net_resp_add_verbatim(struct net_resp_out *o, const char fmt[3], const void *data, size_t len);

/*
 * RESP3 (digits; RESP2 a bulk string of them. REQUIRES: digits is an
 * optional '-' and decimal digits.
 */
int net_resp_add_bignum(struct net_resp_out *o, const char *digits, size_t len);

/* Appends bytes that are already valid RESP (shared constant replies). */
int net_resp_add_raw(struct net_resp_out *o, const void *data, size_t len);

/*
 * Reserves a slot for an aggregate header whose count comes later. Returns
 * the slot (borrowed, valid until net_resp_set_deferred() fills it), or
 * NULL on ENOMEM (the writer has failed; net_resp_set_deferred accepts the
 * NULL). Bytes written after the slot are not sent before it is set.
 * Shard-local.
 */
struct net_out_node *net_resp_add_deferred(struct net_resp_out *o);

/* Writes the header of kind with n elements (map: pairs) into slot. Shard-local. */
void net_resp_set_deferred(struct net_resp_out *o, struct net_out_node *slot,
                           enum net_resp_agg kind, uint64_t n);

/*
 * Formats d for a reply into buf (NET_RESP_DOUBLE_MAX bytes), NUL-terminated;
 * returns the length. "nan", "inf", "-inf", "0", "-0"; integral values
 * below 2^62 in magnitude as integers ("3", "-12"); others with the fewest
 * significant digits (15, 16 or 17, "%.*g") that read back as exactly d.
 * Any thread.
 */
size_t net_resp_fmt_double(char *buf, double d);

#endif
