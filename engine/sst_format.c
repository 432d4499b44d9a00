/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable entries, handles, properties and footer; see sst_format.h and
 * docs/format/sst.md for the byte layout this file implements.
 */
#include <string.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "base/varint.h"
#include "engine/block.h"
#include "engine/sst_format.h"

static_assert(sizeof(ENG_SST_MAGIC) - 1 == 8, "magic is 8 bytes");
static_assert(ENG_SST_FOOTER_USED <= ENG_SST_FOOTER_BYTES, "footer fits its page");

unsigned eng_sst_entry_meta_encode(const struct eng_entry *e, uint8_t *meta)
{
        unsigned n = 1;

        meta[0] = (uint8_t)((unsigned)e->kind & ENG_SST_KIND_MASK);
        n += varint_put_u64(meta + n, e->seq);
        if (e->expiry_ms) {
                meta[0] |= ENG_SST_HAS_EXPIRY;
                n += varint_put_u64(meta + n, e->expiry_ms);
        }
        return n;
}

int eng_sst_entry_decode(const uint8_t *key, size_t key_len, const uint8_t *v, size_t v_len,
                         struct eng_entry *ret)
{
        size_t off = 1;
        ssize_t n;
        uint8_t flags;
        uint64_t expiry = 0;

        if (v_len < 2)
                return -SCREE_ECORRUPT;
        flags = v[0];
        if ((flags & ~(ENG_SST_KIND_MASK | ENG_SST_HAS_EXPIRY)) ||
            ((flags & ENG_SST_KIND_MASK) != ENG_ENTRY_VALUE && (flags & ENG_SST_KIND_MASK) !=
             ENG_ENTRY_TOMBSTONE))
                return -SCREE_ECORRUPT;
        if ((n = varint_get_u64(v + off, v_len - off, &ret->seq)) <= 0)
                return -SCREE_ECORRUPT;
        off += (size_t)n;
        if (flags & ENG_SST_HAS_EXPIRY) {
                if ((n = varint_get_u64(v + off, v_len - off, &expiry)) <= 0 || expiry == 0)
                        return -SCREE_ECORRUPT;
                off += (size_t)n;
        }
        ret->key = key;
        ret->key_len = (uint32_t)key_len;
        ret->kind = (enum eng_entry_kind)(flags & ENG_SST_KIND_MASK);
        ret->expiry_ms = expiry;
        ret->value = v + off;
        ret->value_len = (uint32_t)(v_len - off);
        return 0;
}

unsigned eng_sst_handle_encode(const struct eng_sst_handle *h, uint8_t *dst)
{
        unsigned n = varint_put_u64(dst, h->offset);

        return n + varint_put_u64(dst + n, h->size);
}

static int page_aligned(uint64_t v)
{
        return v % ENG_BLOCK_PAGE_BYTES == 0;
}

int eng_sst_handle_decode(const uint8_t *p, size_t len, struct eng_sst_handle *ret)
{
        uint64_t off, size;
        ssize_t n, m;

        if ((n = varint_get_u64(p, len, &off)) <= 0)
                return -SCREE_ECORRUPT;
        if ((m = varint_get_u64(p + n, len - (size_t)n, &size)) <= 0 || (size_t)(n + m) != len)
                return -SCREE_ECORRUPT;
        if (!page_aligned(off) || !page_aligned(size) || size == 0 || size > ENG_BLOCK_MAX_BYTES)
                return -SCREE_ECORRUPT;
        ret->offset = off;
        ret->size = (uint32_t)size;
        return 0;
}

/* Footer: magic 8 | version 4 | reserved 4 | file_id 8 | index off 8 |
 * bloom off 8 | props off 8 | index size 4 | bloom size 4 | props size 4 |
 * reserved 4 | checksum 8 (of bytes 0..63, seed 0). */
void eng_sst_footer_encode(const struct eng_sst_footer *f, uint8_t *page)
{
        memset(page, 0, ENG_SST_FOOTER_BYTES);
        memcpy(page, ENG_SST_MAGIC, 8);
        le32_put(page + 8, ENG_SST_VERSION);
        le64_put(page + 16, f->file_id);
        le64_put(page + 24, f->index.offset);
        le64_put(page + 32, f->bloom.offset);
        le64_put(page + 40, f->props.offset);
        le32_put(page + 48, f->index.size);
        le32_put(page + 52, f->bloom.size);
        le32_put(page + 56, f->props.size);
        le64_put(page + 64, checksum64(page, 64, 0));
}

static int handle_ok(const struct eng_sst_handle *h, uint64_t start, uint64_t end)
{
        return page_aligned(h->offset) && page_aligned(h->size) && h->size > 0 &&
               h->size <= ENG_BLOCK_MAX_BYTES && h->offset >= start && h->offset + h->size <= end;
}

int eng_sst_footer_parse(const uint8_t *page, struct eng_sst_footer *ret)
{
        if (memcmp(page, ENG_SST_MAGIC, 8) || le64_get(page + 64) != checksum64(page, 64, 0))
                return -SCREE_ECORRUPT;
        if (le32_get(page + 8) != ENG_SST_VERSION)
                return -SCREE_EUNSUPPORTED;
        ret->file_id = le64_get(page + 16);
        ret->index.offset = le64_get(page + 24);
        ret->bloom.offset = le64_get(page + 32);
        ret->props.offset = le64_get(page + 40);
        ret->index.size = le32_get(page + 48);
        ret->bloom.size = le32_get(page + 52);
        ret->props.size = le32_get(page + 56);
        return 0;
}

int eng_sst_footer_decode(const uint8_t *page, uint64_t file_size, uint64_t file_id,
                          struct eng_sst_footer *ret)
{
        struct eng_sst_footer f;
        uint64_t footer_off;
        int r;

        if (file_size < ENG_SST_FOOTER_BYTES || !page_aligned(file_size))
                return -SCREE_ECORRUPT;
        if ((r = eng_sst_footer_parse(page, &f)) < 0)
                return r;
        footer_off = file_size - ENG_SST_FOOTER_BYTES;
        /* index, bloom and props are adjacent and end at the footer. */
        if (f.file_id != file_id || !handle_ok(&f.index, 0, footer_off) ||
            f.bloom.offset != f.index.offset + f.index.size || !handle_ok(&f.bloom, 0, footer_off) ||
            f.props.offset != f.bloom.offset + f.bloom.size || !handle_ok(&f.props, 0, footer_off) ||
            f.props.offset + f.props.size != footer_off)
                return -SCREE_ECORRUPT;
        *ret = f;
        return 0;
}

void eng_sst_props_add_entry(struct eng_sst_props *p, const struct eng_entry *e)
{
        if (p->n_entries == 0 || e->seq < p->min_seq)
                p->min_seq = e->seq;
        if (p->n_entries == 0 || e->seq > p->max_seq)
                p->max_seq = e->seq;
        if (e->expiry_ms) {
                if (p->n_expiring == 0 || e->expiry_ms < p->min_expiry_ms)
                        p->min_expiry_ms = e->expiry_ms;
                if (e->expiry_ms > p->max_expiry_ms)
                        p->max_expiry_ms = e->expiry_ms;
                p->n_expiring++;
        }
        p->n_entries++;
        p->n_tombstones += e->kind == ENG_ENTRY_TOMBSTONE;
        p->raw_key_bytes += e->key_len;
        p->raw_value_bytes += e->value_len;
}

size_t eng_sst_props_size(const struct eng_sst_props *p)
{
        return ENG_SST_PROPS_FIXED + p->smallest_len + p->largest_len;
}

size_t eng_sst_props_encode(const struct eng_sst_props *p, uint8_t *dst)
{
        const uint64_t fields[] = { p->n_entries, p->n_tombstones, p->n_expiring, p->n_data_blocks,
                                    p->raw_key_bytes, p->raw_value_bytes, p->min_seq, p->max_seq,
                                    p->min_expiry_ms, p->max_expiry_ms };
        uint8_t *q = dst;

        le64_put(q, p->file_id);
        le32_put(q + 8, p->tablet);
        le32_put(q + 12, 0);
        q += 16;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++, q += 8)
                le64_put(q, fields[i]);
        le32_put(q, p->smallest_len);
        le32_put(q + 4, p->largest_len);
        q += 8;
        if (p->smallest_len)
                memcpy(q, p->smallest, p->smallest_len);
        q += p->smallest_len;
        if (p->largest_len)
                memcpy(q, p->largest, p->largest_len);
        return eng_sst_props_size(p);
}

int eng_sst_props_decode(const uint8_t *src, size_t len, struct eng_sst_props *ret)
{
        struct eng_sst_props p;
        uint64_t *fields[] = { &p.n_entries, &p.n_tombstones, &p.n_expiring, &p.n_data_blocks,
                               &p.raw_key_bytes, &p.raw_value_bytes, &p.min_seq, &p.max_seq,
                               &p.min_expiry_ms, &p.max_expiry_ms };
        const uint8_t *q = src;

        if (len < ENG_SST_PROPS_FIXED)
                return -SCREE_ECORRUPT;
        p.file_id = le64_get(q);
        p.tablet = le32_get(q + 8);
        q += 16;
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++, q += 8)
                *fields[i] = le64_get(q);
        p.smallest_len = le32_get(q);
        p.largest_len = le32_get(q + 4);
        q += 8;
        if ((uint64_t)p.smallest_len + p.largest_len != len - ENG_SST_PROPS_FIXED ||
            p.n_tombstones > p.n_entries || p.n_expiring > p.n_entries || p.min_seq > p.max_seq ||
            p.min_expiry_ms > p.max_expiry_ms)
                return -SCREE_ECORRUPT;
        p.smallest = q;
        p.largest = q + p.smallest_len;
        *ret = p;
        return 0;
}
