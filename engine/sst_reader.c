/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable reader; see sst_reader.h and docs/format/sst.md. The index block
 * is decoded once at open into sorted arrays (one key buffer plus offsets),
 * so a lookup is a binary search without re-parsing varints.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "base/mem.h"
#include "engine/bloom.h"
#include "engine/sst_reader.h"

struct eng_sst_reader {
        unsigned refs;
        uint64_t file_id, file_size;
        struct eng_sst_footer footer;
        uint8_t *meta;                  /* [index.offset, footer); aligned */
        struct eng_sst_props props;     /* keys point into meta */
        struct eng_bloom bloom;         /* points into meta */
        uint32_t n_blocks;
        struct eng_sst_handle *handles;
        uint32_t *key_off;              /* n_blocks + 1 offsets into keys */
        uint8_t *keys;
        size_t handles_cap, key_off_cap, keys_cap, keys_len;    /* while loading */
        /* find_block's first pass: every index key shares its first
         * pfx_skip bytes (those of the first and the last); pfx[i] is
         * key i's next 8 bytes, big-endian, zero-padded (key_prefix). A
         * seek's binary search then reads one dense array, and compares
         * whole keys only among blocks whose prefixes tie. */
        uint64_t *pfx;
        uint32_t pfx_skip;
};

/* The 8 bytes of key after skip, big-endian, zero-padded: for keys that
 * share their first skip bytes, a < b between prefixes means a < b between
 * the keys (a zero pad stands where a key ends, before its extensions). */
static uint64_t key_prefix(const uint8_t *key, size_t len, size_t skip)
{
        uint64_t v = 0;

        if (len >= skip + 8)
                return be64_get(key + skip);
        for (size_t i = skip; i < skip + 8; i++)
                v = v << 8 | (i < len ? key[i] : 0);
        return v;
}

int eng_sst_meta_range(const uint8_t *footer_page, uint64_t file_size, uint64_t file_id,
                       uint64_t *ret_offset, uint32_t *ret_len)
{
        struct eng_sst_footer f;
        int r = eng_sst_footer_decode(footer_page, file_size, file_id, &f);

        if (r < 0)
                return r;
        *ret_offset = f.index.offset;
        *ret_len = f.index.size + f.bloom.size + f.props.size;
        return 0;
}

/* Opens a meta block (offset relative to the file) inside r->meta. */
static int open_meta(const struct eng_sst_reader *r, const struct eng_sst_handle *h,
                     enum eng_block_type type, const uint8_t **ret, size_t *ret_len)
{
        const uint8_t *page = r->meta + (h->offset - r->footer.index.offset);

        return eng_block_open(page, h->size, type, eng_block_seed(r->file_id, h->offset), ret,
                              ret_len);
}

static int push_index_entry(struct eng_sst_reader *r, const struct eng_block_iter *it)
{
        struct eng_sst_handle h, *hs;
        uint32_t i = r->n_blocks, *ko;
        uint8_t *k;

        if (eng_sst_handle_decode(it->value, it->value_len, &h) < 0)
                return -SCREE_ECORRUPT;
        /* Data blocks tile [0, index.offset) in order. */
        if (h.offset != (i ? r->handles[i - 1].offset + r->handles[i - 1].size : 0))
                return -SCREE_ECORRUPT;
        if (!(hs = mem_grow(r->handles, &r->handles_cap, (size_t)i + 1, sizeof(*hs))))
                return -ENOMEM;
        r->handles = hs;
        if (!(ko = mem_grow(r->key_off, &r->key_off_cap, (size_t)i + 2, sizeof(*ko))))
                return -ENOMEM;
        r->key_off = ko;
        if (!(k = mem_grow(r->keys, &r->keys_cap, r->keys_len + it->key_len, 1)))
                return -ENOMEM;
        r->keys = k;
        memcpy(r->keys + r->keys_len, it->key, it->key_len);
        r->key_off[i] = (uint32_t)r->keys_len;
        r->keys_len += it->key_len;
        r->key_off[i + 1] = (uint32_t)r->keys_len;
        r->handles[i] = h;
        r->n_blocks++;
        return 0;
}

static int load_index(struct eng_sst_reader *r)
{
        const uint8_t *c;
        size_t len;
        struct eng_block_iter it;
        int ret;

        if ((ret = open_meta(r, &r->footer.index, ENG_BLOCK_INDEX, &c, &len)) < 0 ||
            (ret = eng_block_iter_init(&it, c, len)) < 0)
                return ret;
        for (eng_block_iter_seek_first(&it); it.valid && ret == 0; eng_block_iter_next(&it))
                ret = push_index_entry(r, &it);
        if (ret == 0)
                ret = it.err;
        eng_block_iter_fini(&it);
        if (ret == 0 && (r->n_blocks ? r->handles[r->n_blocks - 1].offset +
                                                r->handles[r->n_blocks - 1].size
                                      : 0) != r->footer.index.offset)
                ret = -SCREE_ECORRUPT;
        return ret;
}

static size_t index_key(const struct eng_sst_reader *r, uint32_t i, const uint8_t **ret)
{
        *ret = r->keys + r->key_off[i];
        return r->key_off[i + 1] - r->key_off[i];
}

static int load_prefixes(struct eng_sst_reader *r)
{
        const uint8_t *first, *last;
        size_t first_len, last_len, n;

        if (!r->n_blocks)
                return 0;
        if (!(r->pfx = malloc(r->n_blocks * sizeof(*r->pfx))))
                return -ENOMEM;
        first_len = index_key(r, 0, &first);
        last_len = index_key(r, r->n_blocks - 1, &last);
        n = first_len < last_len ? first_len : last_len;
        while (r->pfx_skip < n && first[r->pfx_skip] == last[r->pfx_skip])
                r->pfx_skip++;
        for (uint32_t i = 0; i < r->n_blocks; i++) {
                const uint8_t *k;
                size_t len = index_key(r, i, &k);

                r->pfx[i] = key_prefix(k, len, r->pfx_skip);
        }
        return 0;
}

static int load_meta(struct eng_sst_reader *r)
{
        const uint8_t *c;
        size_t len;
        int ret;

        if ((ret = load_index(r)) < 0 || (ret = load_prefixes(r)) < 0)
                return ret;
        if ((ret = open_meta(r, &r->footer.bloom, ENG_BLOCK_BLOOM, &c, &len)) < 0 ||
            (ret = eng_bloom_parse(&r->bloom, c, len)) < 0)
                return ret;
        if ((ret = open_meta(r, &r->footer.props, ENG_BLOCK_PROPS, &c, &len)) < 0 ||
            (ret = eng_sst_props_decode(c, len, &r->props)) < 0)
                return ret;
        if (r->props.file_id != r->file_id || r->props.n_data_blocks != r->n_blocks)
                return -SCREE_ECORRUPT;
        return 0;
}

int eng_sst_reader_new(uint64_t file_id, uint64_t file_size, const uint8_t *footer_page,
                       uint8_t *meta_take, struct eng_sst_reader **ret)
{
        struct eng_sst_reader *r = calloc(1, sizeof(*r));
        int err;

        if (!r) {
                mem_free_aligned(meta_take);
                return -ENOMEM;
        }
        r->refs = 1;
        r->file_id = file_id;
        r->file_size = file_size;
        r->meta = meta_take;
        err = eng_sst_footer_decode(footer_page, file_size, file_id, &r->footer);
        if (err == 0)
                err = load_meta(r);
        if (err < 0) {
                eng_sst_reader_unref(r);
                return err;
        }
        *ret = r;
        return 0;
}

void eng_sst_reader_ref(struct eng_sst_reader *r)
{
        r->refs++;
}

void eng_sst_reader_unref(struct eng_sst_reader *r)
{
        if (!r || --r->refs > 0)
                return;
        mem_free_aligned(r->meta);
        free(r->handles);
        free(r->key_off);
        free(r->pfx);
        free(r->keys);
        free(r);
}

uint64_t eng_sst_reader_file_id(const struct eng_sst_reader *r)
{
        return r->file_id;
}

uint64_t eng_sst_reader_file_size(const struct eng_sst_reader *r)
{
        return r->file_size;
}

const struct eng_sst_props *eng_sst_reader_props(const struct eng_sst_reader *r)
{
        return &r->props;
}

uint32_t eng_sst_reader_n_blocks(const struct eng_sst_reader *r)
{
        return r->n_blocks;
}

struct eng_sst_handle eng_sst_reader_block(const struct eng_sst_reader *r, uint32_t i)
{
        return r->handles[i];
}

uint32_t eng_sst_reader_block_last(const struct eng_sst_reader *r, uint32_t i, const uint8_t **ret)
{
        return (uint32_t)index_key(r, i, ret);
}

bool eng_sst_reader_may_contain(const struct eng_sst_reader *r, uint64_t hash)
{
        return eng_bloom_may_contain(&r->bloom, hash);
}

/* The first block in [lo, hi) whose prefix is >= want, or > want if past. */
static uint32_t prefix_bound(const struct eng_sst_reader *r, uint32_t lo, uint32_t hi,
                             uint64_t want, bool past)
{
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (r->pfx[mid] < want || (past && r->pfx[mid] == want))
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

/* The end of the run of prefixes equal to want that starts at lo (lo
 * itself when there is none): galloping, as a run is usually short. */
static uint32_t ties_end(const struct eng_sst_reader *r, uint32_t lo, uint64_t want)
{
        uint64_t step = 1;
        uint32_t n = r->n_blocks;

        if (lo == n || r->pfx[lo] != want)
                return lo;
        while (step < n - lo && r->pfx[lo + step] == want)
                step *= 2;
        return prefix_bound(r, lo + (uint32_t)(step / 2) + 1,
                            step < n - lo ? lo + (uint32_t)step : n, want, true);
}

int eng_sst_reader_find_block(const struct eng_sst_reader *r, const void *key, size_t key_len,
                              uint32_t *ret_block)
{
        uint32_t lo = 0, hi = r->n_blocks;

        if (hi && key_len >= r->pfx_skip && memcmp(key, r->keys, r->pfx_skip) == 0) {
                /* Keys with a smaller prefix are smaller, with a larger larger:
                 * only those whose prefix ties need a whole compare. */
                uint64_t want = key_prefix(key, key_len, r->pfx_skip);

                lo = prefix_bound(r, 0, hi, want, false);
                hi = ties_end(r, lo, want);
        }
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                const uint8_t *k;
                size_t len = index_key(r, mid, &k);

                if (eng_key_cmp(k, len, key, key_len) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == r->n_blocks)
                return -SCREE_ENOTFOUND;
        *ret_block = lo;
        return 0;
}

int eng_sst_data_open(const struct eng_sst_reader *r, uint32_t i, const uint8_t *page, size_t len,
                      const uint8_t **ret_content, size_t *ret_len)
{
        const struct eng_sst_handle *h = &r->handles[i];

        if (len != h->size)
                return -SCREE_ECORRUPT;
        return eng_block_open(page, len, ENG_BLOCK_DATA, eng_block_seed(r->file_id, h->offset),
                              ret_content, ret_len);
}

int eng_sst_data_entry(const struct eng_block_iter *it, struct eng_entry *ret)
{
        return eng_sst_entry_decode(it->key, it->key_len, it->value, it->value_len, ret);
}

int eng_sst_data_get(struct eng_block_iter *it, const void *key, size_t key_len,
                     struct eng_entry *ret)
{
        eng_block_iter_seek(it, key, key_len);
        if (!it->valid)
                return it->err ? -SCREE_ECORRUPT : -SCREE_ENOTFOUND;
        if (eng_key_cmp(it->key, it->key_len, key, key_len) != 0)
                return -SCREE_ENOTFOUND;
        return eng_sst_data_entry(it, ret);
}
