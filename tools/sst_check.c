/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SSTable inspector; see sst_check.h and docs/format/sst.md. The steps run
 * in file order of trust: size and footer, then the meta blocks the footer
 * names, then the index walked once to print and check it, then the
 * engine's own reader over the same bytes (so a check the reader gains
 * later cannot be missed here), then the data blocks walked in step with
 * the index. Every step names the unit and offset that failed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/mem.h"
#include "engine/bloom.h"
#include "engine/sst_reader.h"
#include "tools/inspect.h"
#include "tools/sst_check.h"

#define VALUE_PREFIX_BYTES 32

struct sst {
        const struct tool_sst_opts *o;
        struct tool_report *rep;
        struct tool_file f;
        uint64_t file_id;
        uint8_t footer_page[ENG_SST_FOOTER_BYTES];
        struct eng_sst_footer ft;
        uint8_t *meta;                  /* [index offset, footer); aligned */
        uint32_t meta_len;
        const uint8_t *index;           /* index block content, in meta */
        size_t index_len;
        struct eng_sst_props props;     /* keys point into meta */
        struct eng_bloom bloom;         /* points into meta */
        struct eng_sst_reader *reader;
        uint8_t *block;                 /* the data block being checked */
        size_t block_cap;
        struct eng_sst_props seen;      /* recounted from the data blocks */
        uint8_t *first, *last;          /* seen.smallest and seen.largest: the keys of */
        size_t first_cap, last_cap;     /* the first entry and of the last one so far */
        uint64_t last_seq;
};

/* The file offset of byte off of the content of the block at block_off. */
static uint64_t content_off(uint64_t block_off, size_t off)
{
        return block_off + ENG_BLOCK_HEADER_BYTES + off;
}

static void print_key(const char *label, const uint8_t *k, size_t len)
{
        printf("%s", label);
        tool_print_bytes(stdout, k, len, SIZE_MAX);
        putchar('\n');
}

/* ---- footer ---- */

static int file_id_of(struct sst *s, const char *path)
{
        if (s->o->has_file_id) {
                s->file_id = s->o->file_id;
                return 0;
        }
        if (tool_name_id(path, ".sst", &s->file_id) == 0)
                return 0;
        return tool_fail(s->rep, 0, -EINVAL,
                         "cannot tell the file id: the name is not <16 hex digits>.sst "
                         "(give --file-id)");
}

static int check_footer(struct sst *s)
{
        uint64_t size = s->f.size, at = size - ENG_SST_FOOTER_BYTES;
        struct eng_sst_footer f;
        int r;

        if (size < ENG_SST_FOOTER_BYTES || size % ENG_BLOCK_PAGE_BYTES)
                return tool_corrupt(s->rep, size, "file size %" PRIu64 " is not a whole number "
                                    "of 4096-byte pages (truncated?)", size);
        if ((r = tool_file_read(&s->f, at, s->footer_page, ENG_SST_FOOTER_BYTES, s->rep)) < 0)
                return r;
        if (memcmp(s->footer_page, ENG_SST_MAGIC, strlen(ENG_SST_MAGIC)) != 0)
                return tool_corrupt(s->rep, at, "no footer: the last page lacks the magic "
                                    "(truncated, or not an SSTable)");
        r = eng_sst_footer_parse(s->footer_page, &f);
        if (r == -SCREE_EUNSUPPORTED)
                return tool_fail(s->rep, at, r, "footer: a format version newer than %u, "
                                 "which this tool reads", ENG_SST_VERSION);
        if (r < 0)
                return tool_corrupt(s->rep, at, "footer: checksum mismatch");
        if (f.file_id != s->file_id)
                return tool_corrupt(s->rep, at + 16, "footer: file id %#" PRIx64 ", expected %#"
                                    PRIx64 " (from the name, or --file-id)", f.file_id, s->file_id);
        if (eng_sst_footer_decode(s->footer_page, size, s->file_id, &s->ft) < 0)
                return tool_corrupt(s->rep, at, "footer: index, bloom and properties blocks "
                                    "are not adjacent pages ending at the footer");
        return 0;
}

static void print_footer(const struct sst *s)
{
        const struct eng_sst_footer *f = &s->ft;

        printf("footer: version %u, file id %#" PRIx64 "\n", ENG_SST_VERSION, f->file_id);
        printf("  index block      offset %" PRIu64 ", size %u\n", f->index.offset, f->index.size);
        printf("  bloom block      offset %" PRIu64 ", size %u\n", f->bloom.offset, f->bloom.size);
        printf("  properties block offset %" PRIu64 ", size %u\n", f->props.offset, f->props.size);
}

/* ---- meta blocks ---- */

static int open_meta(struct sst *s, const struct eng_sst_handle *h, enum eng_block_type type,
                     const char *name, const uint8_t **ret, size_t *ret_len)
{
        const uint8_t *page = s->meta + (h->offset - s->ft.index.offset);

        if (eng_block_open(page, h->size, type, eng_block_seed(s->file_id, h->offset), ret,
                           ret_len) < 0)
                return tool_corrupt(s->rep, h->offset, "%s block (%u bytes): bad checksum, "
                                    "length or type", name, h->size);
        return 0;
}

static int load_meta(struct sst *s)
{
        const struct eng_sst_footer *f = &s->ft;
        const uint8_t *c;
        size_t len;
        int r;

        s->meta_len = f->index.size + f->bloom.size + f->props.size;
        if (!(s->meta = mem_alloc_aligned(MEM_DIRECT_ALIGN, s->meta_len)))
                return tool_fail(s->rep, f->index.offset, -ENOMEM, "out of memory for the meta "
                                 "region");
        if ((r = tool_file_read(&s->f, f->index.offset, s->meta, s->meta_len, s->rep)) < 0 ||
            (r = open_meta(s, &f->index, ENG_BLOCK_INDEX, "index", &s->index, &s->index_len)) < 0)
                return r;
        if ((r = open_meta(s, &f->bloom, ENG_BLOCK_BLOOM, "bloom", &c, &len)) < 0)
                return r;
        if (eng_bloom_parse(&s->bloom, c, len) < 0)
                return tool_corrupt(s->rep, content_off(f->bloom.offset, 0),
                                    "bloom block: malformed filter header or size");
        if ((r = open_meta(s, &f->props, ENG_BLOCK_PROPS, "properties", &c, &len)) < 0)
                return r;
        if (eng_sst_props_decode(c, len, &s->props) < 0)
                return tool_corrupt(s->rep, content_off(f->props.offset, 0),
                                    "properties block: malformed (lengths or bounds)");
        if (s->props.file_id != s->file_id)
                return tool_corrupt(s->rep, content_off(f->props.offset, 0), "properties: file "
                                    "id %#" PRIx64 ", the footer's is %#" PRIx64,
                                    s->props.file_id, s->file_id);
        return 0;
}

static void print_props(const struct sst *s)
{
        const struct eng_sst_props *p = &s->props;

        printf("properties:\n");
        printf("  tablet           %u\n", p->tablet);
        printf("  entries          %" PRIu64 " (tombstones %" PRIu64 ", with expiry %" PRIu64
               ")\n", p->n_entries, p->n_tombstones, p->n_expiring);
        printf("  data blocks      %" PRIu64 "\n", p->n_data_blocks);
        printf("  raw bytes        keys %" PRIu64 ", values %" PRIu64 "\n", p->raw_key_bytes,
               p->raw_value_bytes);
        printf("  seq              %" PRIu64 " .. %" PRIu64 "\n", p->min_seq, p->max_seq);
        if (p->n_expiring)
                printf("  expiry ms        %" PRIu64 " .. %" PRIu64 "\n", p->min_expiry_ms,
                       p->max_expiry_ms);
        else
                printf("  expiry ms        none\n");
        print_key("  smallest key     ", p->smallest, p->smallest_len);
        print_key("  largest key      ", p->largest, p->largest_len);
}

/* ---- index ---- */

/* Checks index entry i (it stands on it): a handle of the block that starts
 * where the previous one ended. */
static int index_entry(struct sst *s, uint32_t i, const struct eng_block_iter *it, uint64_t *end)
{
        uint64_t at = content_off(s->ft.index.offset, it->off);
        struct eng_sst_handle h;

        if (eng_sst_handle_decode(it->value, it->value_len, &h) < 0)
                return tool_corrupt(s->rep, at, "index entry %u: bad block handle", i);
        if (h.offset != *end)
                return tool_corrupt(s->rep, at, "index entry %u: block at %" PRIu64 ", expected "
                                    "at %" PRIu64 " (blocks tile the data region in order)", i,
                                    h.offset, *end);
        *end = h.offset + h.size;
        if (s->o->print) {
                printf("  block %u: offset %" PRIu64 ", size %u, last key ", i, h.offset, h.size);
                tool_print_bytes(stdout, it->key, it->key_len, SIZE_MAX);
                putchar('\n');
        }
        return 0;
}

static int walk_index(struct sst *s)
{
        uint64_t at = s->ft.index.offset, end = 0;
        struct eng_block_iter it;
        uint32_t n = 0;
        int r = 0;

        if (eng_block_iter_init(&it, s->index, s->index_len) < 0)
                return tool_corrupt(s->rep, at, "index block: bad restart array");
        if (s->o->print)
                printf("index:\n");
        for (eng_block_iter_seek_first(&it); it.valid && r == 0; eng_block_iter_next(&it))
                r = index_entry(s, n++, &it, &end);
        if (r == 0 && it.err)
                r = tool_corrupt(s->rep, content_off(at, it.off), "index entry %u: malformed", n);
        eng_block_iter_fini(&it);
        if (r < 0)
                return r;
        if (end != at)
                return tool_corrupt(s->rep, at, "index: data blocks end at %" PRIu64 ", the "
                                    "index block starts at %" PRIu64, end, at);
        if (n != s->props.n_data_blocks)
                return tool_corrupt(s->rep, at, "index: %u data blocks, the properties say %"
                                    PRIu64, n, s->props.n_data_blocks);
        return 0;
}

/* The engine's reader over a copy of the meta region: whatever it refuses
 * is corrupt, even if a check here missed it. */
static int open_reader(struct sst *s)
{
        uint8_t *copy = mem_alloc_aligned(MEM_DIRECT_ALIGN, s->meta_len);
        int r;

        if (!copy)
                return tool_fail(s->rep, s->ft.index.offset, -ENOMEM, "out of memory for the "
                                 "meta region");
        memcpy(copy, s->meta, s->meta_len);
        r = eng_sst_reader_new(s->file_id, s->f.size, s->footer_page, copy, &s->reader);
        if (r == -ENOMEM)
                return tool_fail(s->rep, s->ft.index.offset, r, "out of memory opening the table");
        if (r < 0)
                return tool_corrupt(s->rep, s->ft.index.offset, "the engine's reader refuses the "
                                    "table: %s", scree_strerror(r));
        return 0;
}

/* ---- data blocks ---- */

static void print_entry(const struct eng_entry *e)
{
        printf("    ");
        tool_print_bytes(stdout, e->key, e->key_len, SIZE_MAX);
        printf(" seq %" PRIu64 " %s expiry ", e->seq,
               e->kind == ENG_ENTRY_TOMBSTONE ? "tombstone" : "value");
        if (e->expiry_ms)
                printf("%" PRIu64, e->expiry_ms);
        else
                printf("none");
        printf(" len %u ", e->value_len);
        tool_print_bytes(stdout, e->value, e->value_len, VALUE_PREFIX_BYTES);
        putchar('\n');
}

/* Copies e's key into *dst; returns the copy or NULL (reported). */
static uint8_t *copy_key(struct sst *s, uint8_t **dst, size_t *cap, const struct eng_entry *e)
{
        uint8_t *p = mem_grow(*dst, cap, e->key_len, 1);

        if (!p) {
                tool_fail(s->rep, 0, -ENOMEM, "out of memory for a key copy");
                return NULL;
        }
        *dst = p;
        if (e->key_len)
                memcpy(p, e->key, e->key_len);
        return p;
}

/* Orders e after the previous entry, looks for it in the bloom filter,
 * counts it and remembers its key. */
static int account_entry(struct sst *s, const struct eng_entry *e, uint32_t blk, uint64_t at)
{
        struct eng_sst_props *p = &s->seen;
        bool first = p->n_entries == 0;

        if (!first && eng_version_cmp(e->key, e->key_len, e->seq, p->largest, p->largest_len,
                                      s->last_seq) <= 0)
                return tool_corrupt(s->rep, at, "data block %u: entry out of order (keys "
                                    "ascending, newest seq first)", blk);
        if ((first || eng_key_cmp(e->key, e->key_len, p->largest, p->largest_len) != 0) &&
            !eng_bloom_may_contain(&s->bloom, eng_bloom_hash(e->key, e->key_len)))
                return tool_corrupt(s->rep, s->ft.bloom.offset, "bloom block: filter misses a "
                                    "key of data block %u", blk);
        if (first) {
                if (!(p->smallest = copy_key(s, &s->first, &s->first_cap, e)))
                        return -ENOMEM;
                p->smallest_len = e->key_len;
        }
        if (!(p->largest = copy_key(s, &s->last, &s->last_cap, e)))
                return -ENOMEM;
        p->largest_len = e->key_len;
        s->last_seq = e->seq;
        eng_sst_props_add_entry(p, e);
        return 0;
}

static int check_entries(struct sst *s, uint32_t blk, uint64_t block_off, const uint8_t *c,
                         size_t len)
{
        struct eng_block_iter it;
        struct eng_entry e;
        int r = 0;

        if (eng_block_iter_init(&it, c, len) < 0)
                return tool_corrupt(s->rep, block_off, "data block %u: bad restart array", blk);
        eng_block_iter_seek_first(&it);
        if (!it.valid && !it.err)
                r = tool_corrupt(s->rep, block_off, "data block %u holds no entries", blk);
        for (; it.valid && r == 0; eng_block_iter_next(&it)) {
                uint64_t at = content_off(block_off, it.off);

                if (eng_sst_data_entry(&it, &e) < 0)
                        r = tool_corrupt(s->rep, at, "data block %u: entry with a bad kind, seq "
                                         "or expiry", blk);
                else if ((r = account_entry(s, &e, blk, at)) == 0 && s->o->entries)
                        print_entry(&e);
        }
        if (r == 0 && it.err)
                r = tool_corrupt(s->rep, content_off(block_off, it.off), "data block %u: "
                                 "malformed entry", blk);
        eng_block_iter_fini(&it);
        return r;
}

/* Data block blk, whose index entry idx stands on. */
static int check_block(struct sst *s, uint32_t blk, const struct eng_block_iter *idx)
{
        struct eng_sst_handle h = eng_sst_reader_block(s->reader, blk);
        uint8_t *buf = mem_grow(s->block, &s->block_cap, h.size, 1);
        const uint8_t *c;
        size_t len;
        int r;

        if (!buf)
                return tool_fail(s->rep, h.offset, -ENOMEM, "out of memory for data block %u",
                                 blk);
        s->block = buf;
        if ((r = tool_file_read(&s->f, h.offset, s->block, h.size, s->rep)) < 0)
                return r;
        if (eng_sst_data_open(s->reader, blk, s->block, h.size, &c, &len) < 0)
                return tool_corrupt(s->rep, h.offset, "data block %u (%u bytes): bad checksum, "
                                    "length or type", blk, h.size);
        if (s->o->entries)
                printf("data block %u: offset %" PRIu64 ", size %u\n", blk, h.offset, h.size);
        if ((r = check_entries(s, blk, h.offset, c, len)) < 0)
                return r;
        if (eng_key_cmp(s->seen.largest, s->seen.largest_len, idx->key, idx->key_len) != 0)
                return tool_corrupt(s->rep, h.offset, "data block %u: its last key differs from "
                                    "its index key", blk);
        return 0;
}

static int check_blocks(struct sst *s)
{
        uint32_t n = eng_sst_reader_n_blocks(s->reader), blk = 0;
        struct eng_block_iter idx;
        int r = 0;

        /* The index verified in walk_index(): n entries that decode. */
        if (eng_block_iter_init(&idx, s->index, s->index_len) < 0)
                return tool_corrupt(s->rep, s->ft.index.offset, "index block: bad restart array");
        eng_block_iter_seek_first(&idx);
        for (; blk < n && idx.valid && r == 0; blk++, eng_block_iter_next(&idx))
                r = check_block(s, blk, &idx);
        eng_block_iter_fini(&idx);
        return r;
}

/* ---- totals ---- */

static int check_totals(struct sst *s)
{
        const struct eng_sst_props *p = &s->props, *q = &s->seen;
        const struct {
                const char *name;
                uint64_t said, found;
        } f[] = {
                { "entries", p->n_entries, q->n_entries },
                { "tombstones", p->n_tombstones, q->n_tombstones },
                { "entries with expiry", p->n_expiring, q->n_expiring },
                { "raw key bytes", p->raw_key_bytes, q->raw_key_bytes },
                { "raw value bytes", p->raw_value_bytes, q->raw_value_bytes },
                { "min seq", p->min_seq, q->min_seq },
                { "max seq", p->max_seq, q->max_seq },
                { "min expiry ms", p->min_expiry_ms, q->min_expiry_ms },
                { "max expiry ms", p->max_expiry_ms, q->max_expiry_ms },
        };
        uint64_t at = content_off(s->ft.props.offset, 0);

        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
                if (f[i].said != f[i].found)
                        return tool_corrupt(s->rep, at, "properties: %s %" PRIu64 ", the data "
                                            "blocks hold %" PRIu64, f[i].name, f[i].said,
                                            f[i].found);
        if (eng_key_cmp(p->smallest, p->smallest_len, q->smallest, q->smallest_len) != 0)
                return tool_corrupt(s->rep, at, "properties: smallest key differs from the "
                                    "first entry's");
        if (eng_key_cmp(p->largest, p->largest_len, q->largest, q->largest_len) != 0)
                return tool_corrupt(s->rep, at, "properties: largest key differs from the last "
                                    "entry's");
        return 0;
}

/* ---- the whole file ---- */

static int check_meta(struct sst *s)
{
        int r;

        if ((r = check_footer(s)) < 0)
                return r;
        if (s->o->print)
                print_footer(s);
        if ((r = load_meta(s)) < 0)
                return r;
        if (s->o->print)
                print_props(s);
        if ((r = walk_index(s)) < 0)
                return r;
        return open_reader(s);
}

int tool_sst_check(const char *path, const struct tool_sst_opts *o, struct tool_report *rep)
{
        struct sst *s = calloc(1, sizeof(*s));
        int r;

        if (!s)
                return tool_fail(rep, 0, -ENOMEM, "out of memory");
        s->o = o;
        s->rep = rep;
        s->f.fd = -1;
        if ((r = file_id_of(s, path)) < 0 || (r = tool_file_open(&s->f, path, rep)) < 0)
                goto out;
        if (o->print)
                printf("sstable %s: %" PRIu64 " bytes, file id %#" PRIx64 "\n", path, s->f.size,
                       s->file_id);
        if ((r = check_meta(s)) < 0 || (r = check_blocks(s)) < 0 || (r = check_totals(s)) < 0)
                goto out;
        tool_note(rep, "%" PRIu64 " entries in %u data blocks", s->seen.n_entries,
                  eng_sst_reader_n_blocks(s->reader));
        if (o->print)
                printf("verified: %s\n", rep->note);
out:
        eng_sst_reader_unref(s->reader);
        tool_file_close(&s->f);
        mem_free_aligned(s->meta);
        free(s->block);
        free(s->first);
        free(s->last);
        free(s);
        return r;
}
