/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Order-preserving tuple keys; see tuple.h and docs/format/tuple.md.
 *
 * Integers are big-endian, a signed one with its sign bit flipped, so that
 * bytes compare as values. A byte string escapes each 0x00 as 0x00 0xFF
 * and ends with 0x00 0x01: the terminator sorts before any byte that could
 * continue the string (0x01 < 0xFF for an escaped zero, 0x00 < any other
 * byte), so a string sorts before its extensions whatever part follows.
 */
#include <errno.h>
#include <string.h>

#include "base/endian.h"
#include "engine/tuple.h"

#define SIGN_FLIP (UINT64_C(1) << 63)
#define ESC 0xff
#define END 0x01

static size_t zeros_in(const uint8_t *p, size_t len)
{
        size_t n = 0;
        const uint8_t *z;

        while (len && (z = memchr(p, 0, len))) {
                n++;
                len -= (size_t)(z - p) + 1;
                p = z + 1;
        }
        return n;
}

size_t eng_tuple_part_size(const struct eng_tuple_part *part)
{
        switch (part->type) {
        case ENG_TUPLE_NULL:
                return 1;
        case ENG_TUPLE_I64:
        case ENG_TUPLE_U64:
                return 9;
        case ENG_TUPLE_BYTES:
                return 3 + part->v.bytes.len + zeros_in(part->v.bytes.p, part->v.bytes.len);
        }
        return 0;
}

/* Writes part at dst (room for eng_tuple_part_size bytes); returns them. */
static size_t put_part(const struct eng_tuple_part *part, uint8_t *dst)
{
        const uint8_t *s = part->v.bytes.p;
        size_t o = 1;

        switch (part->type) {
        case ENG_TUPLE_NULL:
                dst[0] = ENG_TUPLE_TAG_NULL;
                return 1;
        case ENG_TUPLE_I64:
                dst[0] = ENG_TUPLE_TAG_I64;
                be64_put(dst + 1, (uint64_t)part->v.i64 ^ SIGN_FLIP);
                return 9;
        case ENG_TUPLE_U64:
                dst[0] = ENG_TUPLE_TAG_U64;
                be64_put(dst + 1, part->v.u64);
                return 9;
        case ENG_TUPLE_BYTES:
                dst[0] = ENG_TUPLE_TAG_BYTES;
                for (uint32_t i = 0; i < part->v.bytes.len; i++) {
                        dst[o++] = s[i];
                        if (s[i] == 0)
                                dst[o++] = ESC;
                }
                dst[o++] = 0;
                dst[o++] = END;
                return o;
        }
        return 0;
}

int eng_tuple_encode(const struct eng_tuple_part *parts, size_t n, uint8_t *dst, size_t cap,
                     size_t *ret_len)
{
        size_t need = 0, o = 0;

        for (size_t i = 0; i < n; i++) {
                size_t s = eng_tuple_part_size(&parts[i]);

                if (!s)
                        return -EINVAL;
                need += s;
        }
        *ret_len = need;
        if (need > cap)
                return -ENOSPC;
        for (size_t i = 0; i < n; i++)
                o += put_part(&parts[i], dst + o);
        return 0;
}

/* Decodes a byte string's body at src[*off..len) into scratch at *sc.
 * 0, or -EINVAL. */
static int get_bytes(const uint8_t *src, size_t len, size_t *off, uint8_t *scratch,
                     size_t scratch_cap, size_t *sc)
{
        size_t o = *off;

        for (;;) {
                if (o >= len)
                        return -EINVAL;         /* no terminator */
                if (src[o] != 0) {
                        if (*sc >= scratch_cap)
                                return -EINVAL;
                        scratch[(*sc)++] = src[o++];
                        continue;
                }
                if (o + 1 >= len)
                        return -EINVAL;
                if (src[o + 1] == END) {
                        *off = o + 2;
                        return 0;
                }
                if (src[o + 1] != ESC || *sc >= scratch_cap)
                        return -EINVAL;
                scratch[(*sc)++] = 0;
                o += 2;
        }
}

int eng_tuple_decode(const uint8_t *src, size_t len, struct eng_tuple_part *parts, size_t max,
                     uint8_t *scratch, size_t scratch_cap)
{
        size_t off = 0, sc = 0;
        int n = 0;

        while (off < len) {
                struct eng_tuple_part *p = &parts[n];
                uint8_t tag = src[off++];
                size_t start;

                if ((size_t)n == max)
                        return -EINVAL;
                switch (tag) {
                case ENG_TUPLE_TAG_NULL:
                        p->type = ENG_TUPLE_NULL;
                        break;
                case ENG_TUPLE_TAG_I64:
                case ENG_TUPLE_TAG_U64:
                        if (len - off < 8)
                                return -EINVAL;
                        p->type = tag == ENG_TUPLE_TAG_I64 ? ENG_TUPLE_I64 : ENG_TUPLE_U64;
                        p->v.u64 = be64_get(src + off);
                        if (tag == ENG_TUPLE_TAG_I64)
                                p->v.i64 = (int64_t)(p->v.u64 ^ SIGN_FLIP);
                        off += 8;
                        break;
                case ENG_TUPLE_TAG_BYTES:
                        start = sc;
                        if (get_bytes(src, len, &off, scratch, scratch_cap, &sc) < 0)
                                return -EINVAL;
                        p->type = ENG_TUPLE_BYTES;
                        p->v.bytes.p = scratch + start;
                        p->v.bytes.len = (uint32_t)(sc - start);
                        break;
                default:
                        return -EINVAL;
                }
                n++;
        }
        return n;
}

static int tag_of(enum eng_tuple_type t)
{
        static const int tags[] = { ENG_TUPLE_TAG_NULL, ENG_TUPLE_TAG_I64, ENG_TUPLE_TAG_U64,
                                    ENG_TUPLE_TAG_BYTES };

        return tags[t];
}

static int part_cmp(const struct eng_tuple_part *a, const struct eng_tuple_part *b)
{
        uint32_t n;
        int c;

        if (a->type != b->type)
                return tag_of(a->type) < tag_of(b->type) ? -1 : 1;
        switch (a->type) {
        case ENG_TUPLE_I64:
                return a->v.i64 < b->v.i64 ? -1 : a->v.i64 > b->v.i64;
        case ENG_TUPLE_U64:
                return a->v.u64 < b->v.u64 ? -1 : a->v.u64 > b->v.u64;
        case ENG_TUPLE_BYTES:
                n = a->v.bytes.len < b->v.bytes.len ? a->v.bytes.len : b->v.bytes.len;
                c = n ? memcmp(a->v.bytes.p, b->v.bytes.p, n) : 0;
                if (c)
                        return c < 0 ? -1 : 1;
                return a->v.bytes.len < b->v.bytes.len ? -1 : a->v.bytes.len > b->v.bytes.len;
        case ENG_TUPLE_NULL:
                break;
        }
        return 0;
}

int eng_tuple_cmp(const struct eng_tuple_part *a, size_t na, const struct eng_tuple_part *b,
                  size_t nb)
{
        size_t n = na < nb ? na : nb;

        for (size_t i = 0; i < n; i++) {
                int c = part_cmp(&a[i], &b[i]);

                if (c)
                        return c;
        }
        return na < nb ? -1 : na > nb;
}

/* The bytes of the part at src[off..len), or 0 if malformed. */
static size_t part_len(const uint8_t *src, size_t len, size_t off)
{
        size_t o = off + 1;

        switch (src[off]) {
        case ENG_TUPLE_TAG_NULL:
                return 1;
        case ENG_TUPLE_TAG_I64:
        case ENG_TUPLE_TAG_U64:
                return len - off >= 9 ? 9 : 0;
        case ENG_TUPLE_TAG_BYTES:
                for (; o + 1 < len; o++) {
                        if (src[o] != 0)
                                continue;
                        if (src[o + 1] == END)
                                return o + 2 - off;
                        if (src[o + 1] != ESC)
                                return 0;
                        o++;
                }
                return 0;
        default:
                return 0;
        }
}

long eng_tuple_parts_len(const uint8_t *src, size_t len, size_t k)
{
        size_t off = 0;

        for (size_t i = 0; i < k; i++) {
                size_t n = off < len ? part_len(src, len, off) : 0;

                if (!n)
                        return -EINVAL;
                off += n;
        }
        return (long)off;
}

size_t eng_tuple_prefix_end(const uint8_t *prefix, size_t len, uint8_t *dst, size_t cap)
{
        if (cap < len + 1)
                return 0;
        memmove(dst, prefix, len);
        dst[len] = ENG_TUPLE_AFTER;
        return len + 1;
}

const char *eng_tuple_type_name(enum eng_tuple_type type)
{
        switch (type) {
        case ENG_TUPLE_I64:
                return "i64";
        case ENG_TUPLE_U64:
                return "u64";
        case ENG_TUPLE_BYTES:
                return "bytes";
        case ENG_TUPLE_NULL:
                return "null";
        }
        return "unknown";
}
