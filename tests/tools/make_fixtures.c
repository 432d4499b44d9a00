/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixture generator for the scree-tool tests (test_scree_tool.py):
 *   make_fixtures DIR [FORGE]
 * writes into DIR a valid SSTable, 00000000000000a1.sst (built with the
 * engine's builder), a valid commit-log segment, 0000000000000003.log
 * (built with the WAL encoders), and a MANIFEST naming both (built with the
 * manifest encoders), and prints on stdout one JSON object with what they
 * hold, for the test to check the tool's output against.
 *
 * With FORGE "empty" the table holds no entries. Any other FORGE makes the
 * table wrong in a way only a bug could, with every checksum redone so
 * that only the tool's deeper checks can find it:
 *   props  the properties claim one entry more than the blocks hold
 *   bloom  the bloom filter has no bit set: it misses every key
 *   order  in data block 0, an older version gets the newer one's seq
 * FORGE "badedit" leaves the table alone and makes the manifest's second
 * edit remove a table that is not there, its checksums good. FORGE
 * "marked" leaves the table alone and ends the segment with the writer's
 * sync mark after the last record (a log left idle or closed cleanly),
 * and the manifest with the writer's sync mark after its last edit.
 *
 * Table: key "bin\x00\xff\x01" then "key00000".."key00399"; every 10th key
 * has 3 versions, every 7th key's newest version is a tombstone, every
 * 5th key expires. Seqs stay in 128..16383 (2-byte varints) so the order
 * forgery rewrites one in place. Segment: 12 records in groups of 3, each
 * record's synced_upto the start of its group (what a group commit
 * writes), then zeros to 64 KiB. Manifest: shard 1 of 2, 8 tablets; a
 * snapshot with no table, then 3 edits, each written and synced alone (its
 * synced_upto is its own offset): the table (tablet 7) with log segment 3
 * and next file id 0xa2; tablet 2 flushed to seq 50; tablet 0 flushed to
 * seq 60.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/mem.h"
#include "base/varint.h"
#include "engine/block.h"
#include "engine/bloom.h"
#include "engine/manifest_format.h"
#include "engine/sst_builder.h"
#include "engine/sst_format.h"
#include "engine/wal_format.h"

#define FILE_ID 0xa1u
#define N_KEYS 400u
#define SEGMENT 3u
#define SHARD 1u
#define N_RECORDS 12u
#define GROUP 3u
#define SEGMENT_BYTES (64u << 10)

struct image {
        uint8_t *bytes;
        size_t len;
};

/* What the manifest says of the table. */
static uint64_t table_min_seq, table_max_seq;

static void die(const char *what)
{
        fprintf(stderr, "make_fixtures: %s: %s\n", what, strerror(errno));
        exit(1);
}

static void write_file(const char *dir, const char *name, const void *p, size_t len)
{
        char path[4096];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, p, len) != (ssize_t)len || close(fd) < 0)
                die(path);
}

static void print_hex(const char *label, const uint8_t *p, size_t len)
{
        printf("\"%s\": \"", label);
        for (size_t i = 0; i < len; i++)
                printf("%02x", p[i]);
        printf("\"");
}

/* ---- the table ---- */

static void print_props(const struct eng_sst_props *p, size_t size)
{
        printf("\"size\": %zu, \"entries\": %llu, \"tombstones\": %llu, \"expiring\": %llu, "
               "\"blocks\": %llu, \"min_seq\": %llu, \"max_seq\": %llu, ", size,
               (unsigned long long)p->n_entries, (unsigned long long)p->n_tombstones,
               (unsigned long long)p->n_expiring, (unsigned long long)p->n_data_blocks,
               (unsigned long long)p->min_seq, (unsigned long long)p->max_seq);
        print_hex("smallest", p->smallest, p->smallest_len);
        printf(", ");
        print_hex("largest", p->largest, p->largest_len);
}

static void take(struct eng_sst_builder *b, struct image *img)
{
        uint8_t *buf;
        size_t len;
        uint64_t off;

        eng_sst_builder_take(b, &buf, &len, &off);
        if (!len)
                return;
        if (off != img->len || !(img->bytes = realloc(img->bytes, img->len + len)))
                die("chunk");
        memcpy(img->bytes + img->len, buf, len);
        img->len += len;
        mem_free_aligned(buf);
}

static void add(struct eng_sst_builder *b, struct image *img, const char *key, size_t key_len,
                unsigned n, unsigned version, uint64_t seq)
{
        char v[80];
        int vl = snprintf(v, sizeof(v), "value-%u-%u-\x01-then-enough-text-to-pass-32-bytes", n,
                          version);
        struct eng_entry e = { .key = (const uint8_t *)key, .key_len = (uint32_t)key_len,
                               .value = (const uint8_t *)v, .value_len = (uint32_t)vl,
                               .seq = seq, .kind = ENG_ENTRY_VALUE };

        if (version == 0 && n % 7 == 0) {
                e.kind = ENG_ENTRY_TOMBSTONE;
                e.value_len = 0;
        }
        if (n % 5 == 0)
                e.expiry_ms = 1700000000000ull + n;
        if (eng_sst_builder_add(b, &e) < 0)
                die("builder add");
        if (eng_sst_builder_ready(b) >= 16384)
                take(b, img);
}

static struct image build_table(bool empty)
{
        struct eng_sst_builder_opts o = { .file_id = FILE_ID, .tablet = 7 };
        struct eng_sst_builder *b;
        struct image img = { 0 };
        uint64_t seq = 16000;
        char key[16];

        if (eng_sst_builder_new(&o, &b) < 0)
                die("builder");
        if (!empty)
                add(b, &img, "bin\x00\xff\x01", 6, 1, 1, seq--);
        for (unsigned n = 0; n < (empty ? 0 : N_KEYS); n++) {
                snprintf(key, sizeof(key), "key%05u", n);
                for (unsigned v = 0; v < (n % 10 == 0 ? 3u : 1u); v++)
                        add(b, &img, key, 8, n, v, seq--);
        }
        if (eng_sst_builder_finish(b) < 0)
                die("builder finish");
        take(b, &img);
        print_props(eng_sst_builder_props(b), img.len);
        table_min_seq = eng_sst_builder_props(b)->min_seq;
        table_max_seq = eng_sst_builder_props(b)->max_seq;
        if (table_min_seq > table_max_seq)     /* no entries */
                table_min_seq = table_max_seq = 0;
        eng_sst_builder_free(b);
        return img;
}

/* ---- forgeries: change a block's content, then reseal it ---- */

/* The content of the block at h (verified), for editing in place. */
static uint8_t *content_at(struct image *img, struct eng_sst_handle h, enum eng_block_type type,
                           size_t *ret_len)
{
        const uint8_t *c;

        if (eng_block_open(img->bytes + h.offset, h.size, type, eng_block_seed(FILE_ID, h.offset),
                           &c, ret_len) < 0)
                die("forge: block does not verify");
        return img->bytes + (c - img->bytes);
}

static void reseal(struct image *img, struct eng_sst_handle h, enum eng_block_type type,
                   size_t len)
{
        eng_block_seal(img->bytes + h.offset, len, type, eng_block_seed(FILE_ID, h.offset));
}

static void forge_props(struct image *img, const struct eng_sst_footer *f)
{
        size_t len;
        uint8_t *c = content_at(img, f->props, ENG_BLOCK_PROPS, &len), *copy = malloc(len);
        struct eng_sst_props p;

        /* Decoded from a copy: the keys must not be copied over themselves. */
        if (!copy)
                die("forge: props");
        memcpy(copy, c, len);
        if (eng_sst_props_decode(copy, len, &p) < 0)
                die("forge: props");
        p.n_entries++;
        eng_sst_props_encode(&p, c);
        free(copy);
        reseal(img, f->props, ENG_BLOCK_PROPS, len);
}

static void forge_bloom(struct image *img, const struct eng_sst_footer *f)
{
        size_t len;
        uint8_t *c = content_at(img, f->bloom, ENG_BLOCK_BLOOM, &len);

        memset(c + ENG_BLOOM_META_BYTES, 0, len - ENG_BLOOM_META_BYTES);
        reseal(img, f->bloom, ENG_BLOCK_BLOOM, len);
}

/* Gives the second of two versions of one key in data block 0 the first's seq. */
static void forge_order(struct image *img, const struct eng_sst_footer *f)
{
        struct eng_sst_handle h = { .offset = 0, .size = ENG_BLOCK_PAGE_BYTES };
        struct eng_block_iter it;
        struct eng_entry e, prev = { 0 };
        uint8_t prev_key[16];
        size_t len;
        uint8_t *c = content_at(img, h, ENG_BLOCK_DATA, &len);

        (void)f;
        if (eng_block_iter_init(&it, c, len) < 0)
                die("forge: block 0");
        for (eng_block_iter_seek_first(&it); it.valid; eng_block_iter_next(&it)) {
                if (eng_sst_entry_decode(it.key, it.key_len, it.value, it.value_len, &e) < 0)
                        die("forge: entry");
                if (prev.seq && e.key_len == prev.key_len && !memcmp(prev_key, e.key, e.key_len)) {
                        varint_put_u64(c + (it.value - c) + 1, prev.seq);
                        eng_block_iter_fini(&it);
                        reseal(img, h, ENG_BLOCK_DATA, len);
                        return;
                }
                prev = e;
                if (e.key_len <= sizeof(prev_key))
                        memcpy(prev_key, e.key, e.key_len);
        }
        die("forge: no two versions of a key in block 0");
}

static void forge(struct image *img, const char *how)
{
        struct eng_sst_footer f;

        if (eng_sst_footer_decode(img->bytes + img->len - ENG_SST_FOOTER_BYTES, img->len, FILE_ID,
                                  &f) < 0)
                die("forge: footer");
        if (!strcmp(how, "props"))
                forge_props(img, &f);
        else if (!strcmp(how, "bloom"))
                forge_bloom(img, &f);
        else if (!strcmp(how, "order"))
                forge_order(img, &f);
        else
                die("unknown forgery");
}

/* ---- the commit-log segment ---- */

static void write_segment(const char *dir, bool marked)
{
        uint8_t *seg = calloc(1, SEGMENT_BYTES);
        size_t off = ENG_WAL_SEGMENT_HEADER_BYTES, group_start = off;
        char payload[64];

        if (!seg)
                die("segment");
        eng_wal_segment_header_encode(seg, SHARD, SEGMENT);
        printf("\"wal\": {\"name\": \"%016x.log\", \"size\": %u, \"offsets\": [", SEGMENT,
               SEGMENT_BYTES);
        for (unsigned i = 0; i < N_RECORDS; i++) {
                int len = snprintf(payload, sizeof(payload), "batch %u of the fixture", i);

                if (i % GROUP == 0)
                        group_start = off;
                printf("%s%zu", i ? ", " : "", off);
                off += eng_wal_record_encode(seg + off, SEGMENT, ENG_WAL_RECORD_BATCH, 100 + i,
                                             group_start, payload, (uint32_t)len);
        }
        if (marked) {
                /* The writer's sync mark: the last group is durable. */
                printf("], \"mark\": %zu", off);
                off += eng_wal_record_encode(seg + off, SEGMENT, ENG_WAL_RECORD_MARK, 100 + N_RECORDS - 1,
                                             off, NULL, 0);
        } else {
                printf("]");
        }
        printf(", \"end\": %zu, \"first_seq\": 100}", off);
        snprintf(payload, sizeof(payload), "%016x.log", SEGMENT);
        write_file(dir, payload, seg, SEGMENT_BYTES);
        free(seg);
}

/* ---- the manifest ---- */

#define MANIFEST_SALT 0x5eedu
#define MANIFEST_N_TABLETS 8u          /* tablets per shard of the layout */

/* Appends one record of an edit at *off in buf, synced_upto its own offset. */
static void put_edit(uint8_t *buf, size_t *off, const struct eng_manifest_edit *e)
{
        size_t len = eng_manifest_edit_size(e);
        uint8_t *payload = malloc(len ? len : 1);

        if (!payload)
                die("manifest edit");
        eng_manifest_edit_encode(payload, e);
        printf(", %zu", *off);
        *off += eng_manifest_record_encode(buf + *off, MANIFEST_SALT, ENG_MANIFEST_RECORD_EDIT, *off,
                                           payload, len);
        free(payload);
}

static void write_manifest(const char *dir, uint64_t table_size, bool bad_edit, bool marked)
{
        const struct eng_manifest_layout layout = { .shard = SHARD, .n_shards = 2,
                                                    .tablets_per_shard = MANIFEST_N_TABLETS };
        const struct eng_manifest_table t = { .tablet = 7, .file_id = FILE_ID, .file_size = table_size,
                                              .min_seq = table_min_seq, .max_seq = table_max_seq };
        const struct eng_manifest_table ghost = { .tablet = 3, .file_id = 0x99 };
        const uint32_t tablets[] = { 2, 0 };
        const uint64_t seqs[] = { 50, 60 };
        /* Table 0's key ranges [00, 40), [40, 80) and [c0, table 1) (the
         * hash's first byte): tablets 0 and 2 known from the start, 7
         * made with its first table. */
        static const uint8_t k00[] = { 0, 0, 0, 0 }, k40[] = { 0, 0, 0, 0, 0x40 },
                             k80[] = { 0, 0, 0, 0, 0x80 }, kc0[] = { 0, 0, 0, 0, 0xc0 },
                             k1[] = { 0, 0, 0, 1 };
        struct eng_manifest_tablet known[] = {
                { .id = 0, .start = k00, .start_len = 4, .end = k40, .end_len = 5 },
                { .id = 2, .start = k40, .start_len = 5, .end = k80, .end_len = 5 },
        };
        const struct eng_manifest_tablet seven = { .id = 7, .start = kc0, .start_len = 5,
                                                   .end = k1, .end_len = 4 };
        struct eng_manifest_state st;
        uint8_t *buf = calloc(1, 4096), *snap;
        size_t off = ENG_MANIFEST_HEADER_BYTES, len;

        if (!buf)
                die("manifest");
        eng_manifest_state_init(&st, &layout);
        st.tablets = known;
        st.n_tablets = 2;
        st.next_file_id = 0xa0;
        st.log_segment = 1;
        len = eng_manifest_snapshot_size(&st);
        if (!(snap = malloc(len)))
                die("manifest");
        eng_manifest_snapshot_encode(snap, &st);
        eng_manifest_header_encode(buf, MANIFEST_SALT);
        printf("\"manifest\": {\"offsets\": [%zu", off);
        off += eng_manifest_record_encode(buf + off, MANIFEST_SALT, ENG_MANIFEST_RECORD_SNAPSHOT, 0,
                                          snap, len);
        put_edit(buf, &off, &(struct eng_manifest_edit){ .new_tablets = &seven, .n_new_tablets = 1,
                                                          .added = &t, .n_added = 1,
                                                          .next_file_id = 0xa2, .log_segment = SEGMENT });
        put_edit(buf, &off, &(struct eng_manifest_edit){ .flushed_tablets = &tablets[0],
                                                          .flushed_seqs = &seqs[0], .n_flushed = 1,
                                                          .removed = bad_edit ? &ghost : NULL,
                                                          .n_removed = bad_edit ? 1 : 0 });
        put_edit(buf, &off, &(struct eng_manifest_edit){ .flushed_tablets = &tablets[1],
                                                          .flushed_seqs = &seqs[1], .n_flushed = 1 });
        if (marked) {
                printf("], \"mark\": %zu", off);
                off += eng_manifest_record_encode(buf + off, MANIFEST_SALT, ENG_MANIFEST_RECORD_MARK, off,
                                                  NULL, 0);
        } else {
                printf("]");
        }
        printf(", \"size\": %zu, \"table_size\": %llu}", off, (unsigned long long)table_size);
        write_file(dir, "MANIFEST", buf, off);
        free(snap);
        free(buf);
}

int main(int argc, char **argv)
{
        const char *how = argc == 3 ? argv[2] : "";
        struct image img;
        char name[32];

        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: make_fixtures DIR [empty|props|bloom|order|badedit|marked]\n");
                return 2;
        }
        printf("{\"sst\": {\"name\": \"%016x.sst\", ", FILE_ID);
        img = build_table(!strcmp(how, "empty"));
        if (*how && strcmp(how, "empty") != 0 && strcmp(how, "badedit") != 0 && strcmp(how, "marked") != 0)
                forge(&img, how);
        snprintf(name, sizeof(name), "%016x.sst", FILE_ID);
        write_file(argv[1], name, img.bytes, img.len);
        free(img.bytes);
        printf("}, ");
        write_segment(argv[1], !strcmp(how, "marked"));
        printf(", ");
        write_manifest(argv[1], img.len, !strcmp(how, "badedit"), !strcmp(how, "marked"));
        printf("}\n");
        return 0;
}
