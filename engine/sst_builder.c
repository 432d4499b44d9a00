/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable builder; see sst_builder.h and docs/format/sst.md. Data blocks
 * are cut before an entry that would push the sealed block past block_bytes
 * (an entry too big for any block gets a block of its own, several pages).
 * The index maps each data block's last key to its handle, so the first
 * index key >= a search key names the block holding its newest version
 * (a key's older versions may run on into the following blocks).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/mem.h"
#include "engine/block.h"
#include "engine/bloom.h"
#include "engine/sst_builder.h"

struct eng_sst_builder {
        struct eng_sst_builder_opts o;
        struct eng_block_builder data, index;
        struct eng_bloom_builder bloom;
        uint8_t *out;                   /* pages not yet taken; aligned */
        size_t out_len, out_cap;
        uint64_t out_offset;            /* file offset of out[0] */
        uint64_t file_size;
        uint8_t *last_key, *first_key;
        uint32_t last_len, first_len;
        size_t last_cap, first_cap;
        uint64_t last_seq;
        struct eng_sst_props props;
        bool finished;
};

int eng_sst_builder_new(const struct eng_sst_builder_opts *o, struct eng_sst_builder **ret)
{
        struct eng_sst_builder *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        b->o = *o;
        if (!b->o.block_bytes)
                b->o.block_bytes = ENG_BLOCK_PAGE_BYTES;
        eng_block_builder_init(&b->data, b->o.restart_interval);
        eng_block_builder_init(&b->index, 1);
        eng_bloom_builder_init(&b->bloom, b->o.bits_per_key);
        b->props.file_id = o->file_id;
        b->props.tablet = o->tablet;
        *ret = b;
        return 0;
}

void eng_sst_builder_free(struct eng_sst_builder *b)
{
        if (!b)
                return;
        eng_block_builder_fini(&b->data);
        eng_block_builder_fini(&b->index);
        eng_bloom_builder_fini(&b->bloom);
        mem_free_aligned(b->out);
        free(b->last_key);
        free(b->first_key);
        free(b);
}

/* Makes room for n more output bytes. */
static int reserve(struct eng_sst_builder *b, size_t n)
{
        size_t cap = b->out_cap ? b->out_cap : 256u << 10;
        uint8_t *p;

        if (b->out_len + n <= b->out_cap)
                return 0;
        while (cap < b->out_len + n)
                cap *= 2;
        p = mem_alloc_aligned(MEM_DIRECT_ALIGN, cap);
        if (!p)
                return -ENOMEM;
        if (b->out_len)
                memcpy(p, b->out, b->out_len);
        mem_free_aligned(b->out);
        b->out = p;
        b->out_cap = cap;
        return 0;
}

/* Appends a sealed block whose content the callback writes. */
static int emit_block(struct eng_sst_builder *b, size_t content_len, enum eng_block_type type,
                      void (*fill)(struct eng_sst_builder *b, uint8_t *dst),
                      struct eng_sst_handle *ret)
{
        size_t sealed = eng_block_sealed_size(content_len);
        uint8_t *page;
        int r;

        if (sealed > ENG_BLOCK_MAX_BYTES)
                return -E2BIG;
        if ((r = reserve(b, sealed)) < 0)
                return r;
        page = b->out + b->out_len;
        fill(b, page + ENG_BLOCK_HEADER_BYTES);
        eng_block_seal(page, content_len, type, eng_block_seed(b->o.file_id, b->file_size));
        ret->offset = b->file_size;
        ret->size = (uint32_t)sealed;
        b->out_len += sealed;
        b->file_size += sealed;
        return 0;
}

static void fill_data(struct eng_sst_builder *b, uint8_t *dst)
{
        eng_block_builder_finish(&b->data, dst);
}

static int flush_data(struct eng_sst_builder *b)
{
        struct eng_sst_handle h;
        uint8_t enc[2 * 10];
        int r;

        if (eng_block_builder_is_empty(&b->data))
                return 0;
        r = emit_block(b, eng_block_builder_size(&b->data), ENG_BLOCK_DATA, fill_data, &h);
        if (r < 0)
                return r;
        r = eng_block_builder_add(&b->index, b->last_key, b->last_len, enc,
                                  eng_sst_handle_encode(&h, enc));
        if (r < 0)
                return r;
        eng_block_builder_reset(&b->data);
        b->props.n_data_blocks++;
        return 0;
}

static int check_entry(const struct eng_sst_builder *b, const struct eng_entry *e)
{
        int c;

        if ((e->kind != ENG_ENTRY_VALUE && e->kind != ENG_ENTRY_TOMBSTONE) ||
            e->key_len > ENG_SST_MAX_KEY_BYTES || e->value_len > ENG_SST_MAX_VALUE_BYTES)
                return -EINVAL;
        if (b->props.n_entries == 0)
                return 0;
        c = eng_version_cmp(e->key, e->key_len, e->seq, b->last_key, b->last_len, b->last_seq);
        return c > 0 ? 0 : -EINVAL;
}

static int copy_key(uint8_t **dst, size_t *cap, const struct eng_entry *e)
{
        uint8_t *p = mem_grow(*dst, cap, e->key_len, 1);

        if (!p)
                return -ENOMEM;
        *dst = p;
        if (e->key_len)
                memcpy(*dst, e->key, e->key_len);
        return 0;
}

/* Records e's key as the last (and maybe first) key; adds it to the bloom
 * if it is a new key rather than an older version. */
static int track_key(struct eng_sst_builder *b, const struct eng_entry *e)
{
        bool new_key = b->props.n_entries == 0 ||
                       eng_key_cmp(e->key, e->key_len, b->last_key, b->last_len) != 0;
        int r;

        if (!new_key)
                return 0;
        if ((r = eng_bloom_builder_add(&b->bloom, eng_bloom_hash(e->key, e->key_len))) < 0)
                return r;
        if (b->props.n_entries == 0) {
                if ((r = copy_key(&b->first_key, &b->first_cap, e)) < 0)
                        return r;
                b->first_len = e->key_len;
        }
        if ((r = copy_key(&b->last_key, &b->last_cap, e)) < 0)
                return r;
        b->last_len = e->key_len;
        b->props.smallest = b->first_key;
        b->props.smallest_len = b->first_len;
        b->props.largest = b->last_key;
        b->props.largest_len = b->last_len;
        return 0;
}

int eng_sst_builder_add(struct eng_sst_builder *b, const struct eng_entry *e)
{
        uint8_t meta[ENG_SST_ENTRY_META_MAX];
        unsigned mlen = eng_sst_entry_meta_encode(e, meta);
        size_t limit = b->o.block_bytes - ENG_BLOCK_HEADER_BYTES;
        int r;

        SCREE_ASSERT(!b->finished);
        if ((r = check_entry(b, e)) < 0)
                return r;
        if (!eng_block_builder_is_empty(&b->data) &&
            eng_block_builder_size_with(&b->data, e->key_len, mlen + e->value_len) > limit &&
            (r = flush_data(b)) < 0)
                return r;
        /* The key goes into the block before track_key overwrites last_key,
         * which flush_data above used as the finished block's index key. */
        r = eng_block_builder_add2(&b->data, e->key, e->key_len, meta, mlen, e->value, e->value_len);
        if (r < 0 || (r = track_key(b, e)) < 0)
                return r;
        b->last_seq = e->seq;
        eng_sst_props_add_entry(&b->props, e);
        return 0;
}

size_t eng_sst_builder_ready(const struct eng_sst_builder *b)
{
        return b->out_len;
}

void eng_sst_builder_take(struct eng_sst_builder *b, uint8_t **ret_buf, size_t *ret_len,
                          uint64_t *ret_offset)
{
        *ret_offset = b->out_offset;
        *ret_len = b->out_len;
        *ret_buf = b->out_len ? b->out : NULL;
        if (b->out_len) {
                b->out = NULL;
                b->out_cap = 0;
        }
        b->out_offset += b->out_len;
        b->out_len = 0;
}

static void fill_index(struct eng_sst_builder *b, uint8_t *dst)
{
        eng_block_builder_finish(&b->index, dst);
}

static void fill_bloom(struct eng_sst_builder *b, uint8_t *dst)
{
        eng_bloom_builder_encode(&b->bloom, dst);
}

static void fill_props(struct eng_sst_builder *b, uint8_t *dst)
{
        eng_sst_props_encode(eng_sst_builder_props(b), dst);
}

int eng_sst_builder_finish(struct eng_sst_builder *b)
{
        struct eng_sst_footer f = { .file_id = b->o.file_id };
        int r;

        if ((r = flush_data(b)) < 0 ||
            (r = emit_block(b, eng_block_builder_size(&b->index), ENG_BLOCK_INDEX, fill_index,
                            &f.index)) < 0 ||
            (r = emit_block(b, eng_bloom_builder_size(&b->bloom), ENG_BLOCK_BLOOM, fill_bloom,
                            &f.bloom)) < 0 ||
            (r = emit_block(b, eng_sst_props_size(eng_sst_builder_props(b)), ENG_BLOCK_PROPS,
                            fill_props, &f.props)) < 0)
                return r;
        if ((r = reserve(b, ENG_SST_FOOTER_BYTES)) < 0)
                return r;
        eng_sst_footer_encode(&f, b->out + b->out_len);
        b->out_len += ENG_SST_FOOTER_BYTES;
        b->file_size += ENG_SST_FOOTER_BYTES;
        b->finished = true;
        return 0;
}

uint64_t eng_sst_builder_file_size(const struct eng_sst_builder *b)
{
        return b->file_size;
}

const struct eng_sst_props *eng_sst_builder_props(const struct eng_sst_builder *b)
{
        return &b->props;
}
