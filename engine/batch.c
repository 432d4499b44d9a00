/* SPDX-License-Identifier: Apache-2.0 */
/* Write batches; see batch.h for the encoding. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "base/mem.h"
#include "base/varint.h"
#include "engine/batch.h"

#define KIND_MASK 0x03u
#define HAS_EXPIRY 0x04u

void eng_batch_init(struct eng_batch *b)
{
        memset(b, 0, sizeof(*b));
}

void eng_batch_fini(struct eng_batch *b)
{
        free(b->buf);
        eng_batch_init(b);
}

void eng_batch_clear(struct eng_batch *b)
{
        b->len = 0;
        b->count = 0;
}

/* Room for extra more bytes after the header and the entries so far;
 * returns where they go (the header is reserved on first use), or NULL. */
static uint8_t *batch_reserve(struct eng_batch *b, size_t extra)
{
        size_t need = (b->len ? b->len : ENG_BATCH_HEADER_BYTES) + extra;
        uint8_t *buf = mem_grow(b->buf, &b->cap, need, 1);

        if (!buf)
                return NULL;
        b->buf = buf;
        if (!b->len)
                b->len = ENG_BATCH_HEADER_BYTES;
        return b->buf + b->len;
}

int eng_batch_add(struct eng_batch *b, const struct eng_entry *e)
{
        if (e->kind != ENG_ENTRY_VALUE && e->kind != ENG_ENTRY_TOMBSTONE)
                return -EINVAL;
        uint8_t *p = batch_reserve(b, 1 + 3 * VARINT_MAX_BYTES + (size_t)e->key_len + e->value_len);

        if (!p)
                return -ENOMEM;
        *p = (uint8_t)e->kind;
        if (e->expiry_ms)
                *p |= HAS_EXPIRY;
        p++;
        p += varint_put_u64(p, e->key_len);
        memcpy(p, e->key, e->key_len);
        p += e->key_len;
        if (e->kind == ENG_ENTRY_VALUE) {
                p += varint_put_u64(p, e->value_len);
                if (e->value_len)
                        memcpy(p, e->value, e->value_len);
                p += e->value_len;
        }
        if (e->expiry_ms)
                p += varint_put_u64(p, e->expiry_ms);
        b->len = (size_t)(p - b->buf);
        le32_put(b->buf, ++b->count);
        return 0;
}

int eng_batch_append(struct eng_batch *b, const void *payload, size_t len)
{
        size_t body = len - ENG_BATCH_HEADER_BYTES;
        uint8_t *p = batch_reserve(b, body);

        if (!p)
                return -ENOMEM;
        memcpy(p, (const uint8_t *)payload + ENG_BATCH_HEADER_BYTES, body);
        b->len += body;
        b->count += le32_get(payload);
        le32_put(b->buf, b->count);
        return 0;
}

int eng_batch_iter_init(struct eng_batch_iter *it, const void *payload, size_t len,
                        uint64_t first_seq)
{
        if (len < ENG_BATCH_HEADER_BYTES)
                return -SCREE_ECORRUPT;
        it->p = (const uint8_t *)payload + ENG_BATCH_HEADER_BYTES;
        it->end = (const uint8_t *)payload + len;
        it->left = le32_get(payload);
        it->seq = first_seq;
        return it->left ? 0 : -SCREE_ECORRUPT;
}

/* Reads a varint length and that many bytes. */
static int get_bytes(struct eng_batch_iter *it, const uint8_t **ret, uint32_t *ret_len)
{
        uint64_t n;
        ssize_t k = varint_get_u64(it->p, (size_t)(it->end - it->p), &n);

        if (k <= 0 || n > (size_t)(it->end - it->p - k) || n > UINT32_MAX)
                return -SCREE_ECORRUPT;
        *ret = it->p + k;
        *ret_len = (uint32_t)n;
        it->p += k + (ssize_t)n;
        return 0;
}

int eng_batch_iter_next(struct eng_batch_iter *it, struct eng_entry *ret)
{
        if (!it->left)
                return it->p == it->end ? 0 : -SCREE_ECORRUPT;
        if (it->p >= it->end)
                return -SCREE_ECORRUPT;
        uint8_t flags = *it->p++;
        unsigned kind = flags & KIND_MASK;

        if ((flags & ~(KIND_MASK | HAS_EXPIRY)) ||
            (kind != ENG_ENTRY_VALUE && kind != ENG_ENTRY_TOMBSTONE))
                return -SCREE_ECORRUPT;
        memset(ret, 0, sizeof(*ret));
        ret->kind = (enum eng_entry_kind)kind;
        if (get_bytes(it, &ret->key, &ret->key_len))
                return -SCREE_ECORRUPT;
        if (kind == ENG_ENTRY_VALUE && get_bytes(it, &ret->value, &ret->value_len))
                return -SCREE_ECORRUPT;
        if (flags & HAS_EXPIRY) {
                ssize_t k = varint_get_u64(it->p, (size_t)(it->end - it->p), &ret->expiry_ms);

                if (k <= 0 || ret->expiry_ms == 0)
                        return -SCREE_ECORRUPT;
                it->p += k;
        }
        ret->seq = it->seq++;
        it->left--;
        return 1;
}
