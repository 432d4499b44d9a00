/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable builder and reader (engine/sst_builder.h, sst_reader.h) over an
 * in-memory file image: every entry read back by point lookup and in order,
 * versions and tombstones and expiry kept, properties right, blocks cut near
 * 4 KiB and big entries alone, the bloom rejecting most absent keys, order
 * violations refused; and the failure modes: truncated file, bad checksums
 * anywhere, bad lengths, wrong file id, a newer version, unknown block type.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "base/mem.h"
#include "engine/bloom.h"
#include "engine/key.h"
#include "engine/sst_builder.h"
#include "engine/sst_reader.h"

TestSuite(sst, .timeout = 30);

struct image {
        uint8_t *bytes;
        size_t len;
};

static void append_taken(struct eng_sst_builder *b, struct image *img)
{
        uint8_t *buf;
        size_t len;
        uint64_t off;

        eng_sst_builder_take(b, &buf, &len, &off);
        cr_assert(eq(u64, off, img->len), "chunks come in file order");
        if (!len)
                return;
        cr_assert(eq(sz, len % 4096, 0));
        img->bytes = realloc(img->bytes, img->len + len);
        memcpy(img->bytes + img->len, buf, len);
        img->len += len;
        mem_free_aligned(buf);
}

/* Entry i: key "key%08u" of i/versions, seq descending within a key; every
 * 7th key's newest version is a tombstone, every 5th has an expiry. */
static void entry_of(unsigned i, unsigned versions, char *k, char *v, struct eng_entry *e)
{
        unsigned key = i / versions, ver = i % versions;
        int kl = snprintf(k, 32, "key%08u", key);
        int vl = snprintf(v, 64, "value-%u-%u-padding-to-make-it-longer", key, ver);

        *e = (struct eng_entry){ .key = (const uint8_t *)k, .key_len = (uint32_t)kl,
                                 .value = (const uint8_t *)v, .value_len = (uint32_t)vl,
                                 .seq = 1000000 - i, .kind = ENG_ENTRY_VALUE };
        if (ver == 0 && key % 7 == 0) {
                e->kind = ENG_ENTRY_TOMBSTONE;
                e->value_len = 0;
        }
        if (key % 5 == 0)
                e->expiry_ms = 1700000000000ull + key;
}

static struct image build(unsigned n, unsigned versions, uint64_t file_id)
{
        struct eng_sst_builder_opts o = { .file_id = file_id, .tablet = 3 };
        struct eng_sst_builder *b;
        struct image img = { 0 };

        cr_assert(eq(int, eng_sst_builder_new(&o, &b), 0));
        for (unsigned i = 0; i < n; i++) {
                char k[32], v[64];
                struct eng_entry e;

                entry_of(i, versions, k, v, &e);
                cr_assert(eq(int, eng_sst_builder_add(b, &e), 0), "entry %u", i);
                if (eng_sst_builder_ready(b) >= 64 * 1024)
                        append_taken(b, &img);
        }
        cr_assert(eq(int, eng_sst_builder_finish(b), 0));
        append_taken(b, &img);
        cr_assert(eq(u64, eng_sst_builder_file_size(b), img.len));
        eng_sst_builder_free(b);
        return img;
}

static int open_image(const struct image *img, uint64_t file_id, struct eng_sst_reader **ret)
{
        const uint8_t *footer = img->bytes + img->len - ENG_SST_FOOTER_BYTES;
        uint64_t off;
        uint32_t len;
        uint8_t *meta;
        int r;

        if (img->len < ENG_SST_FOOTER_BYTES)
                return eng_sst_meta_range(img->bytes, img->len, file_id, &off, &len);
        r = eng_sst_meta_range(footer, img->len, file_id, &off, &len);
        if (r < 0)
                return r;
        meta = mem_alloc_aligned(MEM_DIRECT_ALIGN, len);
        memcpy(meta, img->bytes + off, len);
        return eng_sst_reader_new(file_id, img->len, footer, meta, ret);
}

static void expect_entry(const struct eng_entry *got, const struct eng_entry *want)
{
        cr_assert(eq(u32, got->key_len, want->key_len));
        cr_assert(eq(int, memcmp(got->key, want->key, want->key_len), 0));
        cr_assert(eq(u64, got->seq, want->seq));
        cr_assert(eq(int, (int)got->kind, (int)want->kind));
        cr_assert(eq(u64, got->expiry_ms, want->expiry_ms));
        cr_assert(eq(u32, got->value_len, want->value_len));
        cr_assert(eq(int, memcmp(got->value, want->value, want->value_len), 0));
}

/* Point lookup as the I/O layer does it: bloom, index, block, search. */
static int lookup(const struct eng_sst_reader *r, const struct image *img, const char *key,
                  struct eng_block_iter *it, struct eng_entry *ret)
{
        size_t klen = strlen(key);
        struct eng_sst_handle h;
        const uint8_t *c;
        size_t clen;
        uint32_t blk;
        int err;

        if (!eng_sst_reader_may_contain(r, eng_bloom_hash(key, klen)))
                return -SCREE_ENOTFOUND;
        if ((err = eng_sst_reader_find_block(r, key, klen, &blk)) < 0)
                return err;
        h = eng_sst_reader_block(r, blk);
        if ((err = eng_sst_data_open(r, blk, img->bytes + h.offset, h.size, &c, &clen)) < 0)
                return err;
        eng_block_iter_fini(it);
        if ((err = eng_block_iter_init(it, c, clen)) < 0)
                return err;
        return eng_sst_data_get(it, key, klen, ret);
}

Test(sst, every_key_reads_back_newest_version_first_with_kind_and_expiry)
{
        enum { N = 20000, V = 2 };
        struct image img = build(N, V, 42);
        struct eng_sst_reader *r;
        struct eng_block_iter it = { 0 };

        cr_assert(eq(int, open_image(&img, 42, &r), 0));
        for (unsigned i = 0; i < N; i += V) {
                char k[32], v[64];
                struct eng_entry want, got;

                entry_of(i, V, k, v, &want);
                cr_assert(eq(int, lookup(r, &img, k, &it, &got), 0), "%s", k);
                expect_entry(&got, &want);
        }
        eng_block_iter_fini(&it);
        eng_sst_reader_unref(r);
        free(img.bytes);
}

Test(sst, a_full_scan_returns_every_version_in_order)
{
        enum { N = 9001, V = 3 };
        struct image img = build(N, V, 7);
        struct eng_sst_reader *r;
        unsigned i = 0;

        cr_assert(eq(int, open_image(&img, 7, &r), 0));
        for (uint32_t b = 0; b < eng_sst_reader_n_blocks(r); b++) {
                struct eng_sst_handle h = eng_sst_reader_block(r, b);
                struct eng_block_iter it;
                const uint8_t *c;
                size_t clen;

                cr_assert(eq(int, eng_sst_data_open(r, b, img.bytes + h.offset, h.size, &c, &clen), 0));
                cr_assert(eq(u32, h.size, 4096), "small entries: one-page blocks");
                cr_assert(eq(int, eng_block_iter_init(&it, c, clen), 0));
                for (eng_block_iter_seek_first(&it); it.valid; eng_block_iter_next(&it), i++) {
                        char k[32], v[64];
                        struct eng_entry want, got;

                        entry_of(i, V, k, v, &want);
                        cr_assert(eq(int, eng_sst_data_entry(&it, &got), 0), "entry %u", i);
                        expect_entry(&got, &want);
                }
                cr_assert(eq(int, it.err, 0));
                eng_block_iter_fini(&it);
        }
        cr_assert(eq(u32, i, N));
        eng_sst_reader_unref(r);
        free(img.bytes);
}

Test(sst, properties_describe_the_table)
{
        enum { N = 3000, V = 3 };
        struct image img = build(N, V, 9);
        struct eng_sst_reader *r;
        const struct eng_sst_props *p;
        uint64_t tomb = 0, exp = 0;

        for (unsigned key = 0; key < N / V; key++) {
                tomb += key % 7 == 0;
                exp += key % 5 == 0 ? V : 0;
        }
        cr_assert(eq(int, open_image(&img, 9, &r), 0));
        p = eng_sst_reader_props(r);
        cr_expect(eq(u64, p->file_id, 9));
        cr_expect(eq(u32, p->tablet, 3));
        cr_expect(eq(u64, p->n_entries, N));
        cr_expect(eq(u64, p->n_tombstones, tomb));
        cr_expect(eq(u64, p->n_expiring, exp));
        cr_expect(eq(u64, p->n_data_blocks, eng_sst_reader_n_blocks(r)));
        cr_expect(eq(u64, p->min_seq, 1000000 - (N - 1)));
        cr_expect(eq(u64, p->max_seq, 1000000));
        cr_expect(eq(u64, p->min_expiry_ms, 1700000000000ull));
        cr_expect(eq(u64, p->max_expiry_ms, 1700000000000ull + 995));
        cr_expect(eq(u32, p->smallest_len, 11));
        cr_expect(eq(int, memcmp(p->smallest, "key00000000", 11), 0));
        cr_expect(eq(int, memcmp(p->largest, "key00000999", 11), 0));
        eng_sst_reader_unref(r);
        free(img.bytes);
}

Test(sst, absent_keys_are_not_found_and_the_bloom_rejects_most)
{
        struct image img = build(10000, 1, 5);
        struct eng_sst_reader *r;
        struct eng_block_iter it = { 0 };
        struct eng_entry e;
        unsigned passed_bloom = 0;

        cr_assert(eq(int, open_image(&img, 5, &r), 0));
        for (unsigned i = 0; i < 10000; i++) {
                char k[32];

                snprintf(k, sizeof(k), "key%08ux", i);  /* between present keys */
                passed_bloom += eng_sst_reader_may_contain(r, eng_bloom_hash(k, strlen(k)));
                cr_assert(eq(int, lookup(r, &img, k, &it, &e), -SCREE_ENOTFOUND));
        }
        cr_expect(lt(u32, passed_bloom, 300), "%u of 10000 passed the bloom", passed_bloom);
        cr_assert(eq(int, lookup(r, &img, "zzz", &it, &e), -SCREE_ENOTFOUND));
        cr_assert(eq(int, eng_sst_reader_find_block(r, "zzz", 3, &(uint32_t){ 0 }), -SCREE_ENOTFOUND));
        eng_block_iter_fini(&it);
        eng_sst_reader_unref(r);
        free(img.bytes);
}

Test(sst, an_entry_bigger_than_a_block_gets_a_block_of_its_own)
{
        struct eng_sst_builder_opts o = { .file_id = 1 };
        struct eng_sst_builder *b;
        struct eng_sst_reader *r;
        struct image img = { 0 };
        struct eng_block_iter it = { 0 };
        struct eng_entry e, got;
        size_t big = 100000;
        char *v = malloc(big);

        memset(v, 'x', big);
        cr_assert(eq(int, eng_sst_builder_new(&o, &b), 0));
        e = (struct eng_entry){ .key = (const uint8_t *)"a", .key_len = 1, .value = (const uint8_t *)"1",
                                .value_len = 1, .seq = 1, .kind = ENG_ENTRY_VALUE };
        cr_assert(eq(int, eng_sst_builder_add(b, &e), 0));
        e.key = (const uint8_t *)"b";
        e.value = (const uint8_t *)v;
        e.value_len = (uint32_t)big;
        cr_assert(eq(int, eng_sst_builder_add(b, &e), 0));
        e.key = (const uint8_t *)"c";
        e.value_len = 1;
        cr_assert(eq(int, eng_sst_builder_add(b, &e), 0));
        cr_assert(eq(int, eng_sst_builder_finish(b), 0));
        append_taken(b, &img);
        eng_sst_builder_free(b);

        cr_assert(eq(int, open_image(&img, 1, &r), 0));
        cr_assert(eq(u32, eng_sst_reader_n_blocks(r), 3));
        cr_expect(eq(u32, eng_sst_reader_block(r, 1).size, 25 * 4096));
        cr_assert(eq(int, lookup(r, &img, "b", &it, &got), 0));
        cr_assert(eq(u32, got.value_len, big));
        cr_assert(eq(int, lookup(r, &img, "c", &it, &got), 0));
        eng_block_iter_fini(&it);
        eng_sst_reader_unref(r);
        free(img.bytes);
        free(v);
}

Test(sst, out_of_order_or_invalid_entries_are_refused)
{
        struct eng_sst_builder_opts o = { .file_id = 1 };
        struct eng_sst_builder *b;
        struct eng_entry e = { .key = (const uint8_t *)"m", .key_len = 1, .seq = 10,
                               .kind = ENG_ENTRY_VALUE };

        cr_assert(eq(int, eng_sst_builder_new(&o, &b), 0));
        cr_assert(eq(int, eng_sst_builder_add(b, &e), 0));
        cr_expect(eq(int, eng_sst_builder_add(b, &e), -EINVAL), "same key and seq");
        e.seq = 11;
        cr_expect(eq(int, eng_sst_builder_add(b, &e), -EINVAL), "same key, newer seq after older");
        e.key = (const uint8_t *)"a";
        e.seq = 1;
        cr_expect(eq(int, eng_sst_builder_add(b, &e), -EINVAL), "smaller key");
        e.key = (const uint8_t *)"n";
        e.kind = ENG_ENTRY_KIND_INVALID;
        cr_expect(eq(int, eng_sst_builder_add(b, &e), -EINVAL), "bad kind");
        e.kind = ENG_ENTRY_VALUE;
        e.key_len = ENG_SST_MAX_KEY_BYTES + 1;
        cr_expect(eq(int, eng_sst_builder_add(b, &e), -EINVAL), "key too long");
        e.key_len = 1;
        e.seq = 9;
        e.key = (const uint8_t *)"m";
        cr_expect(eq(int, eng_sst_builder_add(b, &e), 0), "older version of the same key");
        eng_sst_builder_free(b);
}

Test(sst, an_empty_table_is_valid)
{
        struct image img = build(0, 1, 3);
        struct eng_sst_reader *r;

        cr_assert(eq(sz, img.len, 4 * 4096), "index, bloom, props, footer");
        cr_assert(eq(int, open_image(&img, 3, &r), 0));
        cr_expect(eq(u32, eng_sst_reader_n_blocks(r), 0));
        cr_expect(eq(int, eng_sst_reader_find_block(r, "a", 1, &(uint32_t){ 0 }), -SCREE_ENOTFOUND));
        eng_sst_reader_unref(r);
        free(img.bytes);
}

/* A key of group g (find_block_keys): bytes with zeros in them, so that
 * keys ending early and keys going on with zero bytes both occur. */
struct raw_key {
        uint8_t b[32];
        uint32_t len;
        unsigned versions;
};

static struct raw_key raw(const void *bytes, size_t len, unsigned versions)
{
        struct raw_key k = { .len = (uint32_t)len, .versions = versions };

        memcpy(k.b, bytes, len);
        return k;
}

/* Sorted, distinct: 400 keys alike for 12 bytes past the shared "tb/"
 * (their index prefixes tie), keys that differ only by trailing zero
 * bytes, one key of 200 versions over several blocks, then 1000 more. */
static size_t find_block_keys(struct raw_key *out)
{
        size_t n = 0;
        char s[32];

        for (unsigned i = 0; i < 400; i++)
                out[n++] = raw(s, (size_t)snprintf(s, sizeof(s), "tb/aaaaaaaaaaaa%04u", i), 1);
        out[n++] = raw("tb/b", 4, 30);
        out[n++] = raw("tb/b\0", 5, 30);
        out[n++] = raw("tb/b\0\0", 6, 30);
        out[n++] = raw("tb/b\0\0\0\0\0\0\0\0\0\0", 14, 30);
        out[n++] = raw("tb/b\x01", 5, 30);
        out[n++] = raw("tb/m", 4, 200);
        for (unsigned i = 0; i < 1000; i++)
                out[n++] = raw(s, (size_t)snprintf(s, sizeof(s), "tb/z%05u", i), 1);
        return n;
}

/* What find_block must answer: the first block whose last key is >= key. */
static int find_block_slowly(const struct eng_sst_reader *r, const uint8_t *key, size_t len,
                             uint32_t *ret)
{
        for (uint32_t i = 0; i < eng_sst_reader_n_blocks(r); i++) {
                const uint8_t *last;
                uint32_t last_len = eng_sst_reader_block_last(r, i, &last);

                if (eng_key_cmp(last, last_len, key, len) >= 0) {
                        *ret = i;
                        return 0;
                }
        }
        return -SCREE_ENOTFOUND;
}

static void expect_found_as_slowly(const struct eng_sst_reader *r, const uint8_t *key, size_t len)
{
        uint32_t got = UINT32_MAX, want = UINT32_MAX;
        int rw = find_block_slowly(r, key, len, &want);

        cr_assert(eq(int, eng_sst_reader_find_block(r, key, len, &got), rw), "key of %zu bytes", len);
        cr_assert(eq(u32, got, want), "key of %zu bytes", len);
}

Test(sst, find_block_agrees_with_a_linear_search_where_key_prefixes_tie)
{
        static struct raw_key keys[1500];
        size_t n = find_block_keys(keys);
        struct eng_sst_builder_opts o = { .file_id = 9 };
        struct eng_sst_builder *b;
        struct eng_sst_reader *r;
        struct image img = { 0 };
        uint64_t seq = 1000000;
        char v[150];
        static const char *const outside[] = { "", "t", "ta", "tb", "tb/", "tc", "tb/\xff\xff" };

        memset(v, 'v', sizeof(v));
        cr_assert(eq(int, eng_sst_builder_new(&o, &b), 0));
        for (size_t i = 0; i < n; i++) {
                for (unsigned ver = 0; ver < keys[i].versions; ver++) {
                        struct eng_entry e = { .key = keys[i].b, .key_len = keys[i].len,
                                               .value = (const uint8_t *)v, .value_len = sizeof(v),
                                               .seq = seq--, .kind = ENG_ENTRY_VALUE };

                        cr_assert(eq(int, eng_sst_builder_add(b, &e), 0), "key %zu", i);
                }
                if (eng_sst_builder_ready(b) >= 64 * 1024)
                        append_taken(b, &img);
        }
        cr_assert(eq(int, eng_sst_builder_finish(b), 0));
        append_taken(b, &img);
        eng_sst_builder_free(b);
        cr_assert(eq(int, open_image(&img, 9, &r), 0));
        cr_assert(gt(u32, eng_sst_reader_n_blocks(r), 60));
        for (size_t i = 0; i < n; i++) {
                uint8_t k[40];
                size_t len = keys[i].len;

                memcpy(k, keys[i].b, len);
                expect_found_as_slowly(r, k, len);
                expect_found_as_slowly(r, k, len - 1);
                k[len] = 0;
                expect_found_as_slowly(r, k, len + 1);
                k[len] = 0xff;
                expect_found_as_slowly(r, k, len + 1);
                memset(k + len, 0, 9);
                expect_found_as_slowly(r, k, len + 9);
        }
        for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
                expect_found_as_slowly(r, (const uint8_t *)outside[i], strlen(outside[i]));
        eng_sst_reader_unref(r);
        free(img.bytes);
}

/* ---- failure modes ---- */

Test(sst, a_truncated_file_is_corrupt)
{
        struct image img = build(2000, 1, 4);
        struct eng_sst_reader *r;
        size_t full = img.len;

        img.len = full - 4096;  /* lost the footer: the last page is props */
        cr_expect(eq(int, open_image(&img, 4, &r), -SCREE_ECORRUPT));
        img.len = full - 100;   /* not page-aligned */
        cr_expect(eq(int, open_image(&img, 4, &r), -SCREE_ECORRUPT));
        img.len = 4000;
        cr_expect(eq(int, open_image(&img, 4, &r), -SCREE_ECORRUPT));
        free(img.bytes);
}

Test(sst, a_flipped_bit_in_any_meta_page_or_the_footer_is_corrupt)
{
        struct image img = build(3000, 1, 8);
        struct eng_sst_reader *r;
        uint64_t meta_off;
        uint32_t meta_len;

        cr_assert(eq(int, open_image(&img, 8, &r), 0));
        eng_sst_reader_unref(r);
        cr_assert(eq(int, eng_sst_meta_range(img.bytes + img.len - 4096, img.len, 8, &meta_off,
                                             &meta_len), 0));
        /* Every used byte of index, bloom, props and footer: sample each page. */
        for (size_t off = meta_off; off < img.len; off += 61) {
                uint8_t *p = img.bytes + off;
                int err;

                if (off >= img.len - 4096 + 72)
                        break;  /* the footer's unused tail */
                *p ^= 0x01;
                err = open_image(&img, 8, &r);
                *p ^= 0x01;
                if (err == 0) {
                        /* A flip in a block's zero padding is not covered by
                         * its checksum and is harmless. */
                        eng_sst_reader_unref(r);
                        continue;
                }
                cr_assert(eq(int, err, -SCREE_ECORRUPT), "flip at %zu gave %d", off, err);
        }
        free(img.bytes);
}

Test(sst, a_flipped_bit_in_a_data_block_is_caught_when_the_block_is_read)
{
        struct image img = build(3000, 1, 8);
        struct eng_sst_reader *r;
        struct eng_sst_handle h;
        const uint8_t *c;
        size_t clen;

        cr_assert(eq(int, open_image(&img, 8, &r), 0));
        h = eng_sst_reader_block(r, 2);
        img.bytes[h.offset + 100] ^= 0x40;
        cr_expect(eq(int, eng_sst_data_open(r, 2, img.bytes + h.offset, h.size, &c, &clen),
                     -SCREE_ECORRUPT));
        /* A block read from the wrong offset fails its seeded checksum. */
        h = eng_sst_reader_block(r, 3);
        cr_expect(eq(int, eng_sst_data_open(r, 4, img.bytes + h.offset, h.size, &c, &clen),
                     -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_sst_data_open(r, 3, img.bytes + h.offset, h.size - 4096 + 4096 * 2, &c,
                                            &clen), -SCREE_ECORRUPT), "wrong length");
        eng_sst_reader_unref(r);
        free(img.bytes);
}

Test(sst, wrong_file_id_newer_version_and_bad_magic_are_refused)
{
        struct image img = build(500, 1, 11);
        struct eng_sst_reader *r;
        uint8_t *footer = img.bytes + img.len - 4096;

        cr_expect(eq(int, open_image(&img, 12, &r), -SCREE_ECORRUPT), "another file's id");
        footer[8] = 2;  /* version 2, checksum redone */
        le64_put(footer + 64, checksum64(footer, 64, 0));
        cr_expect(eq(int, open_image(&img, 11, &r), -SCREE_EUNSUPPORTED));
        footer[0] = 'X';
        cr_expect(eq(int, open_image(&img, 11, &r), -SCREE_ECORRUPT));
        free(img.bytes);
}

Test(sst, footer_parse_reads_the_stored_fields_without_checking_them_against_a_file)
{
        struct image img = build(500, 1, 11);
        uint8_t *footer = img.bytes + img.len - 4096;
        struct eng_sst_footer f, g;

        cr_assert(eq(int, eng_sst_footer_decode(footer, img.len, 11, &f), 0));
        cr_assert(eq(int, eng_sst_footer_parse(footer, &g), 0));
        cr_expect(eq(u64, g.file_id, 11));
        cr_expect(eq(u64, g.index.offset, f.index.offset));
        cr_expect(eq(u32, g.index.size, f.index.size));
        cr_expect(eq(u64, g.bloom.offset, f.bloom.offset));
        cr_expect(eq(u32, g.bloom.size, f.bloom.size));
        cr_expect(eq(u64, g.props.offset, f.props.offset));
        cr_expect(eq(u32, g.props.size, f.props.size));
        /* Another file's id and a size the blocks do not fit: parse does not care. */
        cr_expect(eq(int, eng_sst_footer_decode(footer, img.len, 12, &f), -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_sst_footer_decode(footer, img.len + 4096, 11, &f), -SCREE_ECORRUPT));
        cr_expect(eq(int, eng_sst_footer_parse(footer, &g), 0));
        footer[70] ^= 1;        /* the stored checksum */
        cr_expect(eq(int, eng_sst_footer_parse(footer, &g), -SCREE_ECORRUPT));
        footer[70] ^= 1;
        footer[8] = 2;          /* version 2, checksum redone */
        le64_put(footer + 64, checksum64(footer, 64, 0));
        cr_expect(eq(int, eng_sst_footer_parse(footer, &g), -SCREE_EUNSUPPORTED));
        footer[0] = 'X';
        cr_expect(eq(int, eng_sst_footer_parse(footer, &g), -SCREE_ECORRUPT));
        free(img.bytes);
}

Test(sst, a_block_of_an_unknown_type_is_corrupt)
{
        uint8_t page[4096] = { 0 };
        const uint8_t *c;
        size_t clen;
        uint64_t seed = eng_block_seed(1, 0);

        eng_block_seal(page, 10, (enum eng_block_type)9, seed);
        for (int t = ENG_BLOCK_DATA; t < ENG_BLOCK_TYPE_MAX; t++)
                cr_expect(eq(int, eng_block_open(page, sizeof(page), (enum eng_block_type)t, seed, &c,
                                                 &clen), -SCREE_ECORRUPT));
}
