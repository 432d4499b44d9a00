/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What scree-proxy stores: cache keys, the stored form of a response,
 * and the shared, reference-counted buffer that holds one in memory
 * (docs/proxy.md, "Storage").
 *
 * Key. The table's keys are plain byte strings (a table of no parts):
 * host, one 0x00 byte, then the request target (path and query) as the
 * client sent it. A host never holds 0x00 (px_host_is_valid), so every
 * key of a host starts with host 0x00, and the keys whose target starts
 * with a prefix p are exactly [host 0x00 p, successor(host 0x00 p)):
 * one range, as PURGE of a prefix needs. HEAD and GET share the key (a
 * HEAD is answered from the stored GET).
 *
 * Value, little-endian:
 *   0   u32 magic "SPX1"
 *   4   u16 status
 *   6   u16 flags (0)
 *   8   u32 head_len: the status line and the header lines to replay,
 *           each ending CRLF, without the empty line
 *   12  u32 age_s: the Age the origin reported
 *   16  u64 stored_ms: wall-clock time the response arrived
 *   24  u64 body_len
 *   32  head bytes, then body bytes (de-chunked)
 * A hit writes the head and body straight from the value the library
 * returned, with the Age, X-Cache and Content-Length lines in between.
 */
#ifndef SCREE_PROXY_OBJECT_H
#define SCREE_PROXY_OBJECT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PX_OBJ_MAGIC 0x31585053u        /* "SPX1" */
#define PX_OBJ_HDR_BYTES 32

struct px_obj_view {
        unsigned status;
        uint32_t age_s;
        uint64_t stored_ms;
        const char *head;       /* head_len bytes */
        size_t head_len;
        const char *body;       /* body_len bytes */
        size_t body_len;
};

/* Writes the 32-byte header of a stored response into dst. Pure. */
void px_obj_hdr_encode(void *dst, unsigned status, uint32_t head_len, uint32_t age_s,
                       uint64_t stored_ms, uint64_t body_len);

/*
 * Reads a stored response (len bytes at data, borrowed): 0 and *ret
 * (pointing into data), or -EINVAL when it is not one (bad magic, lengths
 * that do not add up to len). Pure.
 */
int px_obj_decode(const void *data, size_t len, struct px_obj_view *ret);

/*
 * Finds header name (NUL-terminated, any case) in a head block (status
 * line then header lines, len bytes): its value without surrounding
 * blanks, length in *ret_len, or NULL. Pure.
 */
const char *px_head_find(const char *head, size_t len, const char *name, size_t *ret_len);

/* Whether host (len bytes) is a Host value the proxy keys by: 1..255
 * bytes of letters, digits and . - _ : [ ]. Pure. */
bool px_host_is_valid(const char *host, size_t len);

/* Writes host 0x00 target into dst (host_len + 1 + target_len bytes);
 * returns that length. Pure. */
size_t px_key_build(char *dst, const char *host, size_t host_len, const char *target,
                    size_t target_len);

/*
 * Writes into dst the smallest byte string greater than every string
 * that starts with p (len bytes): p without its trailing 0xFF bytes, its
 * last byte plus one. Returns its length, or 0 when p is all 0xFF (no
 * such string: the range is unbounded). dst has room for len bytes. Pure.
 */
size_t px_key_successor(const char *p, size_t len, char *dst);

/*
 * A response in memory, shared by the threads that answer from it: the
 * stored form (above) in data[0, len). Made and filled by one thread;
 * read-only once a second reference exists.
 */
struct px_obj {
        atomic_uint refs;
        size_t len, cap;
        char data[];
};

/* A new object with room for cap bytes and one reference, or NULL. */
struct px_obj *px_obj_new(size_t cap);

/* Appends n bytes (borrowed) to *o, moving it to grow it: only while the
 * caller holds the only reference. 0, or -ENOMEM (*o unchanged). */
int px_obj_add(struct px_obj **o, const void *p, size_t n);

/* Takes a reference; returns o. Any thread. */
struct px_obj *px_obj_ref(struct px_obj *o);

/* Drops a reference, freeing o with the last. Accepts NULL. Any thread. */
void px_obj_unref(struct px_obj *o);

#endif
