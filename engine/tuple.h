/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Composite keys: a key is a tuple of typed parts -- signed and unsigned
 * 64-bit integers, byte strings, and NULL -- encoded so that the encodings
 * compare as bytes (eng_key_cmp) the way the tuples compare part by part:
 * NULL before every value, integers by value, byte strings as unsigned
 * bytes (a shorter string before its extensions), and a tuple before its
 * extensions. So a range over a prefix of the parts is one contiguous key
 * range: all rows of (user 42, t1 <= ts <= t2, ...) lie between
 * encode(42, t1) and eng_tuple_prefix_end(encode(42, t2)).
 *
 * The layout, byte by byte, is in docs/format/tuple.md. Every part is
 * self-delimiting, so a tuple needs no count and a prefix of an encoding
 * at a part boundary is the encoding of the prefix tuple.
 *
 * Pure functions, no allocation; any thread.
 */
#ifndef SCREE_ENGINE_TUPLE_H
#define SCREE_ENGINE_TUPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum eng_tuple_type {
        ENG_TUPLE_NULL = 0,
        ENG_TUPLE_I64 = 1,
        ENG_TUPLE_U64 = 2,
        ENG_TUPLE_BYTES = 3,
};

/* The tag byte that starts each part's encoding. Their order puts NULL
 * before every value; a column holds one type (or NULL), so the order of
 * the value tags among themselves only decides between columns that mix
 * types, which a table's schema does not allow. */
#define ENG_TUPLE_TAG_NULL 0x01
#define ENG_TUPLE_TAG_I64 0x10
#define ENG_TUPLE_TAG_U64 0x11
#define ENG_TUPLE_TAG_BYTES 0x20
/* Never starts a part: appended to an encoding, it sorts after every
 * extension of it (eng_tuple_prefix_end). */
#define ENG_TUPLE_AFTER 0xff

/* A part. For BYTES, p and len are borrowed (by encode: for the call; by
 * decode: they point into its scratch buffer). */
struct eng_tuple_part {
        enum eng_tuple_type type;
        union {
                int64_t i64;
                uint64_t u64;
                struct {
                        const void *p;
                        uint32_t len;
                } bytes;
        } v;
};

/* "i64", "u64", "bytes", "null" (or "unknown"): the type's name as the
 * catalog's messages and the protocol spell it. */
const char *eng_tuple_type_name(enum eng_tuple_type type);

/* The bytes part's encoding takes: 1 for NULL, 9 for an integer, and for
 * bytes 1 + len + (number of 0x00 bytes in it) + 2. Returns 0 for an
 * unknown type. */
size_t eng_tuple_part_size(const struct eng_tuple_part *part);

/*
 * Encodes parts[0..n) into dst (cap bytes). Returns 0 and *ret_len, or
 * -EINVAL (an unknown type), -ENOSPC (cap too small: *ret_len is then the
 * size needed). dst may be NULL when cap is 0 (to size a buffer).
 */
int eng_tuple_encode(const struct eng_tuple_part *parts, size_t n, uint8_t *dst, size_t cap,
                     size_t *ret_len);

/*
 * Decodes an encoding (len bytes at src) into at most max parts. A BYTES
 * part's bytes are unescaped into scratch (scratch_cap bytes; len is always
 * enough) and the part points there. Returns the number of parts, or
 * -EINVAL when src is not a whole encoding (an unknown tag, a truncated
 * integer, a bad escape, a string without its terminator) or holds more
 * than max parts.
 */
int eng_tuple_decode(const uint8_t *src, size_t len, struct eng_tuple_part *parts, size_t max,
                     uint8_t *scratch, size_t scratch_cap);

/*
 * Compares two tuples part by part as their encodings compare (the model
 * the encoding implements): NULL first, integers by value, bytes as
 * unsigned bytes, a proper prefix first. Parts of different value types
 * compare by their tags. <0, 0, >0.
 */
int eng_tuple_cmp(const struct eng_tuple_part *a, size_t na, const struct eng_tuple_part *b,
                  size_t nb);

/*
 * The bytes of the first k parts of an encoding (len bytes at src): what a
 * hashed table hashes when its hash covers a prefix of the key's parts (so
 * that rows sharing those parts share a hash and a range read within them
 * is one key range). Returns the byte count (0 for k == 0), or -EINVAL if
 * src holds fewer than k parts or is malformed before their end.
 */
long eng_tuple_parts_len(const uint8_t *src, size_t len, size_t k);

/* The smallest key after every encoding that starts with the len bytes of
 * prefix (an encoding of whole parts): prefix + ENG_TUPLE_AFTER, written
 * to dst (cap >= len + 1). Returns len + 1, or 0 if cap is too small. */
size_t eng_tuple_prefix_end(const uint8_t *prefix, size_t len, uint8_t *dst, size_t cap);

#endif
