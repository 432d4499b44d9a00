/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the manifest format tests (test_manifest_format.c: states,
 * payloads and edits in memory; test_manifest_file.c: whole files and
 * version 1): a manifest file built in memory the way the writer builds
 * it, the sample edits e1, e2, e3 on top of manifest_sample_state, and
 * reading a file back against them. Header-only; tests only.
 */
#ifndef SCREE_TESTS_ENGINE_MANIFEST_FORMAT_FIXTURE_H
#define SCREE_TESTS_ENGINE_MANIFEST_FORMAT_FIXTURE_H

#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/manifest_format.h"
#include "tests/engine/manifest_helpers.h"

#define SALT UINT64_C(0x5eed5a1700000001)
#define FILE_CAP (64u * 1024u)
#define MAX_RECS 16
#define V3 ENG_MANIFEST_VERSION
#define V2 ENG_MANIFEST_VERSION_UNRANGED

/* A manifest file built in memory the way the writer builds it: records
 * claim durable what the last fb_sync covered. */
struct fbuf {
        uint8_t buf[FILE_CAP];
        size_t len;
        uint64_t salt, synced;
        size_t rec_off[MAX_RECS];
        unsigned n_rec;
};

static inline void fb_init(struct fbuf *fb, uint64_t salt)
{
        memset(fb, 0, sizeof(*fb));
        fb->salt = salt;
        eng_manifest_header_encode(fb->buf, salt);
        fb->len = ENG_MANIFEST_HEADER_BYTES;
}

static inline void fb_record(struct fbuf *fb, enum eng_manifest_record_type type, const void *p, size_t len)
{
        cr_assert(le(sz, fb->len + eng_manifest_record_size(len), FILE_CAP));
        cr_assert(lt(u32, fb->n_rec, MAX_RECS));
        fb->rec_off[fb->n_rec++] = fb->len;
        fb->len += eng_manifest_record_encode(fb->buf + fb->len, fb->salt, type, fb->synced, p, len);
}

static inline void fb_snapshot(struct fbuf *fb, const struct eng_manifest_state *s)
{
        uint8_t p[4096];

        cr_assert(le(sz, eng_manifest_snapshot_size(s), sizeof(p)));
        eng_manifest_snapshot_encode(p, s);
        fb_record(fb, ENG_MANIFEST_RECORD_SNAPSHOT, p, eng_manifest_snapshot_size(s));
}

static inline void fb_edit(struct fbuf *fb, const struct eng_manifest_edit *e)
{
        uint8_t p[4096];

        cr_assert(le(sz, eng_manifest_edit_size(e), sizeof(p)));
        eng_manifest_edit_encode(p, e);
        fb_record(fb, ENG_MANIFEST_RECORD_EDIT, p, eng_manifest_edit_size(e));
}

static inline void fb_sync(struct fbuf *fb)
{
        fb->synced = fb->len;
}

/* Recomputes the header checksum of the record at off after a forged field. */
static inline void reseal(struct fbuf *fb, size_t off)
{
        uint8_t *h = fb->buf + off;

        le64_put(h, checksum64(h + 8, ENG_MANIFEST_RECORD_HEADER_BYTES - 8, fb->salt));
}

/* Reseals the record at off after forging its payload too. */
static inline void reseal_payload(struct fbuf *fb, size_t off)
{
        uint8_t *h = fb->buf + off;

        le64_put(h + 24, checksum64(h + ENG_MANIFEST_RECORD_HEADER_BYTES, le32_get(h + 8), fb->salt));
        reseal(fb, off);
}

/* The sample edits, on top of manifest_sample_state. e1
 * makes T1's entry, [SAMPLE_TABLE, SAMPLE_TABLE|"a"), with its first
 * table and flushed seq. */
static const uint8_t t1_keys[] = { 0, 0, 0, SAMPLE_TABLE, 0, 0, 0, SAMPLE_TABLE, 'a' };
static const struct eng_manifest_tablet e1_new[] = {
        { .id = T1, .table = SAMPLE_TABLE, .start = t1_keys, .start_len = 4, .end = t1_keys + 4,
          .end_len = 5 },
};
static const struct eng_manifest_table e1_added[] = {
        { .tablet = T1, .file_id = 9, .file_size = 4096, .min_seq = 1, .max_seq = 300 },
};
static const uint32_t e1_tablets[] = { T1 };
static const uint64_t e1_seqs[] = { 300 };
static const struct eng_manifest_edit e1 = { .new_tablets = e1_new, .n_new_tablets = 1,
                                             .added = e1_added, .n_added = 1, .flushed_tablets = e1_tablets,
                                             .flushed_seqs = e1_seqs, .n_flushed = 1, .log_segment = 18 };
static const struct eng_manifest_table e2_removed[] = {
        { .tablet = T0, .file_id = 3 },
        { .tablet = T0, .file_id = 8 },
};
static const struct eng_manifest_table e2_added[] = {
        { .tablet = T0, .file_id = 11, .file_size = 16384, .min_seq = 1, .max_seq = 200 },
};
static const struct eng_manifest_edit e2 = { .added = e2_added, .n_added = 1, .removed = e2_removed,
                                             .n_removed = 2, .next_file_id = 12 };
static const uint32_t e3_tablets[] = { T2 };
static const uint64_t e3_seqs[] = { 50 };
static const struct eng_manifest_edit e3 = { .flushed_tablets = e3_tablets, .flushed_seqs = e3_seqs,
                                             .n_flushed = 1 };

/* The sample state with the first n of e1, e2, e3 applied. */
static inline void expected_state(struct eng_manifest_state *s, unsigned n)
{
        const struct eng_manifest_edit *all[] = { &e1, &e2, &e3 };

        manifest_sample_state(s);
        for (unsigned i = 0; i < n; i++)
                cr_assert(eq(int, eng_manifest_state_apply(s, all[i]), 0), "edit %u", i + 1);
}

/* Header, snapshot, then e1, e2, e3, each written and synced on its own. */
static inline void fb_sample(struct fbuf *fb)
{
        struct eng_manifest_state s;

        manifest_sample_state(&s);
        fb_init(fb, SALT);
        fb_snapshot(fb, &s);
        fb_sync(fb);
        fb_edit(fb, &e1);
        fb_sync(fb);
        fb_edit(fb, &e2);
        fb_sync(fb);
        fb_edit(fb, &e3);
        fb_sync(fb);
        eng_manifest_state_fini(&s);
}

/* Reads fb; on success checks the result against the first want_edits
 * edits and frees it. Returns read's result; *r says where it stopped. */
static inline int read_expect(const struct fbuf *fb, size_t len, unsigned want_edits,
                       struct eng_manifest_reader *r)
{
        struct eng_manifest_state got, want;
        int rc = eng_manifest_read(r, fb->buf, len, &got);

        if (rc < 0)
                return rc;
        expected_state(&want, want_edits);
        cr_expect(manifest_state_is_equal(&got, &want), "state differs from %u edits applied", want_edits);
        eng_manifest_state_fini(&got);
        eng_manifest_state_fini(&want);
        return 0;
}

/* Expects reading the first len bytes of fb to fail with want, at bad_off
 * (SIZE_MAX: anywhere). */
static inline void expect_read_fails(const struct fbuf *fb, size_t len, int want, size_t bad_off,
                              const char *what)
{
        struct eng_manifest_reader r;
        struct eng_manifest_state s;

        cr_expect(eq(int, eng_manifest_read(&r, fb->buf, len, &s), want), "%s", what);
        if (bad_off != SIZE_MAX)
                cr_expect(eq(sz, r.bad_off, bad_off), "%s", what);
}

#endif
