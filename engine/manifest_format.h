/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest format: the per-shard record of its durable state -- the
 * SSTables of each tablet, how far each tablet has flushed, the next file
 * id and the oldest commit-log segment still needed. Tablets are named by
 * their catalog tablet id (engine/catalog.h; global, never reused), and a
 * state holds an entry only for the tablets it knows: sparse, sorted by id.
 * Pure (base/ and pure engine code only), so every failure mode is
 * testable without a ring. Bytes: docs/format/manifest.md.
 *
 * A manifest file is a 32-byte header (magic "screeMAN", version, salt,
 * checksum), one SNAPSHOT record holding a whole state, then EDIT records,
 * each applied on top of the state before it. Records are framed like
 * commit-log records: a header with its own checksum, verified before its
 * length is trusted, a payload checksum, and synced_upto, the file offset
 * known durable when the record was written. Both checksums are seeded with
 * the file's salt, so bytes from any other file never verify. The reader
 * tells a torn tail (records whose write never completed: cut) from
 * corruption (damage in bytes a later record says were durable) as the
 * commit log does.
 *
 * Writing always writes version 3: each tablet entry carries its table
 * and its internal-key range, and one SSTable file may be named by
 * several tablets (a split's children share their parent's files until
 * compaction separates them). Versions 2 and 1 still read: their entries
 * decode unranged (eng_manifest_tablet_is_ranged), and the shard gives
 * them their ranges from its catalog (eng_manifest_state_fill_ranges)
 * before it writes the next file, which must be fully ranged. Version 1
 * files (tablets numbered 0..n-1 within the shard, by the static map of
 * engine/tablet.h) have their numbers made catalog ids as they are decoded
 * (manifest_v1.c).
 *
 * A state owns its arrays and its tablets' keys (init/copy/fini); an
 * edit borrows everything. Applying an edit validates all of it first and
 * changes nothing on error. States and edits: manifest_state.c; ranges
 * and relayout: manifest_range.c; payloads, framing and the reader:
 * manifest_format.c. Pure functions; any thread, one state per thread at
 * a time.
 */
#ifndef SCREE_ENGINE_MANIFEST_FORMAT_H
#define SCREE_ENGINE_MANIFEST_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ENG_MANIFEST_MAGIC "screeMAN"          /* 8 bytes, no NUL */
#define ENG_MANIFEST_VERSION 3u                 /* the one written */
#define ENG_MANIFEST_VERSION_UNRANGED 2u        /* still read: tablets without table or range */
#define ENG_MANIFEST_VERSION_STATIC 1u          /* still read: tablets by static local number */
#define ENG_MANIFEST_HEADER_BYTES 32u
#define ENG_MANIFEST_RECORD_HEADER_BYTES 32u
#define ENG_MANIFEST_RECORD_ALIGN 8u
#define ENG_MANIFEST_MAX_PAYLOAD_BYTES (1u << 30)

enum eng_manifest_record_type {
        ENG_MANIFEST_RECORD_SNAPSHOT = 1,       /* a whole state; the first record, only there */
        ENG_MANIFEST_RECORD_EDIT = 2,           /* one edit of the state before it */
        /* No payload, synced_upto its own offset: everything before it was
         * durable. manifest.c writes one behind the last edit once that
         * edit's append is synced, so damage to it reads as damage, not as
         * a torn tail; the reader checks it and skips it. */
        ENG_MANIFEST_RECORD_MARK = 3,
        ENG_MANIFEST_RECORD_TYPE_MAX,
        ENG_MANIFEST_RECORD_TYPE_INVALID = 0,
};

/* An SSTable of a tablet. (tablet, file_id) is unique in a state; a file
 * id may be named by several tablets (shared: a split's children read
 * their own key range of their parent's files), always with the same
 * size and seqs. */
struct eng_manifest_table {
        uint32_t tablet;                /* catalog tablet id */
        uint64_t file_id;               /* file is <dir>/<16 hex digits of file_id>.sst */
        uint64_t file_size;
        uint64_t min_seq, max_seq;      /* a tablet's tables have disjoint seq ranges;
                                         * newest = highest max_seq */
};

struct eng_manifest_layout {            /* checked at start-up: refuse to open with a different layout */
        uint32_t shard, n_shards, tablets_per_shard;
};

struct eng_manifest_tablet {
        uint32_t id;                    /* catalog tablet id */
        uint32_t table;                 /* catalog table id; 0 when unranged */
        uint64_t flushed_seq;           /* every entry with seq <= this is in its SSTables */
        /* Its internal-key range [start, end), as struct eng_tablet's:
         * start begins with the table id (4 bytes, big-endian) and end is
         * at most the next table's first key, (table + 1) as 4 bytes. In a
         * state both point into its key arena (valid until the state
         * changes); in an edit or a wanted layout they are borrowed.
         * Unranged (start_len 0; table 0, start and end NULL, end_len 0):
         * an entry read from a version 1 or 2 file, which had no ranges. */
        const uint8_t *start, *end;
        uint32_t start_len, end_len;
};

/* Whether t has a range (every entry of a version 3 file does). */
static inline bool eng_manifest_tablet_is_ranged(const struct eng_manifest_tablet *t)
{
        return t->start_len != 0;
}

struct eng_manifest_state {
        struct eng_manifest_layout layout;
        uint64_t next_file_id;          /* ids below are used (SSTables) */
        uint64_t log_segment;           /* oldest commit-log segment still needed by some tablet */
        uint32_t n_tablets;
        struct eng_manifest_tablet *tablets;    /* sorted by id, unique; owned by the state */
        struct eng_manifest_table *tables;
        size_t n_tables;                /* owned by the state */
        /* Every ranged tablet's start and end, back to back; owned. Made
         * anew whenever entries are created (copy, decode, an edit with
         * new tablets, filling ranges), so entries never point into freed
         * memory; a dropped entry's bytes stay until then. */
        uint8_t *keys;
};

struct eng_manifest_edit {              /* everything borrowed; zero/NULL fields mean "unchanged" */
        const struct eng_manifest_tablet *new_tablets;  /* entries created, with range and seq */
        uint32_t n_new_tablets;
        const struct eng_manifest_table *added;
        uint32_t n_added;
        const struct eng_manifest_table *removed;       /* matched by tablet+file_id */
        uint32_t n_removed;
        const uint32_t *flushed_tablets;
        const uint64_t *flushed_seqs;
        uint32_t n_flushed;
        const uint32_t *dropped_tablets;        /* their entries go, after the tables change */
        uint32_t n_dropped;
        uint64_t next_file_id;          /* 0 = unchanged; must not go backwards */
        uint64_t log_segment;           /* 0 = unchanged; must not go backwards */
        /* Decoded from a version 1 or 2 file, whose rule it keeps: a table
         * added to, or a seq flushed for, a tablet without an entry creates
         * the entry, unranged. Never encoded; version 3 edits create
         * entries only through new_tablets. */
        bool implicit_entries;
};

/* ---- states ---- */

/* Makes an empty state in caller storage: layout, no tablets, no tables,
 * ids 0. Allocates nothing; eng_manifest_state_fini it all the same. */
void eng_manifest_state_init(struct eng_manifest_state *s, const struct eng_manifest_layout *layout);

/* The flushed seq of tablet_id: 0 when s has no entry for it. */
uint64_t eng_manifest_flushed_seq(const struct eng_manifest_state *s, uint32_t tablet_id);

/* Whether s has an entry for tablet_id. */
bool eng_manifest_has_tablet(const struct eng_manifest_state *s, uint32_t tablet_id);

/* Whether some table of s (of any tablet) is file file_id: while one is,
 * the file must stay on disk and its cached blocks may still be read. */
bool eng_manifest_names_file(const struct eng_manifest_state *s, uint64_t file_id);

/* Whether every entry of s has its range: a state eng_manifest_create
 * and the writer accept. */
bool eng_manifest_state_is_ranged(const struct eng_manifest_state *s);

/* Deep copy of src into dst (caller storage, not initialized). Returns 0 or
 * -ENOMEM (*dst untouched). Free with eng_manifest_state_fini. */
int eng_manifest_state_copy(struct eng_manifest_state *dst, const struct eng_manifest_state *src);

/* Frees the arrays of s and zeroes it. Accepts a zeroed state. */
void eng_manifest_state_fini(struct eng_manifest_state *s);

/*
 * Checks the invariants of a whole state: tablet ids sorted and unique;
 * every ranged entry well formed -- start at least the 4 bytes of its
 * table id and starting with them, start < end <= (table + 1) as 4
 * bytes, table below UINT32_MAX -- and every unranged one all zero but
 * for id and flushed seq; ranges of different entries disjoint; every
 * table's tablet has an entry, min_seq <= max_seq, file_id below
 * next_file_id; (tablet, file_id) unique, and the tables naming one file
 * id agree on its size and seqs; the arrays are present when their
 * counts are not zero. Unranged entries pass (a state read from a version
 * 1 or 2 file). Returns 0, -SCREE_ECORRUPT, or -ENOMEM.
 */
int eng_manifest_state_check(const struct eng_manifest_state *s);

/*
 * Applies e to s, in this order:
 *   1. e's new tablets get their entries (id, table, range, flushed seq;
 *      keys copied into s);
 *   2. removed tables go (matched by tablet and file id);
 *   3. added tables are appended, in their order, after the survivors
 *      (which keep theirs); adding one raises next_file_id past its id;
 *   4. flushed seqs are set, in e's order;
 *   5. dropped tablets' entries go;
 *   6. next_file_id and log_segment are set when nonzero.
 * So one edit expresses a split of P into A and B: A and B new, P's
 * tables added to A and to B (same file ids: shared), removed from P, and
 * P dropped; a merge likewise. Every step refers to the state the steps
 * before it made: a table added to or a seq flushed for a tablet needs
 * its entry (made before e or by step 1; e->implicit_entries: made
 * unranged if missing, the rule of versions 1 and 2).
 *
 * Returns 0; -SCREE_ECORRUPT if e does not apply -- a new tablet whose id
 * has an entry (or is new twice in e), that is unranged or whose range is
 * malformed (see eng_manifest_state_check); a removed table that is not
 * there (or removed twice); an added (tablet, file_id) already there (or
 * added twice), or with min_seq > max_seq, or with another size or seqs
 * than a table of s or of e naming the same file; a table added to or a
 * seq flushed for a tablet without an entry; a flushed seq going
 * backwards; a dropped tablet without an entry before e, dropped twice,
 * also flushed in e, or with a table left after steps 2 and 3; ranges
 * that overlap once e is applied; next_file_id or log_segment going
 * backwards; or -ENOMEM. On error s is unchanged.
 */
int eng_manifest_state_apply(struct eng_manifest_state *s, const struct eng_manifest_edit *e);

/*
 * Gives the unranged entries of s their table and range: for each entry
 * of ranges (n of them, borrowed; flushed seqs ignored) whose id has an
 * unranged entry in s, that entry takes its table and range (copied).
 * Entries of s already ranged, and ids s has no entry for, are left as
 * they are; unranged entries ranges does not name stay unranged. Returns
 * 0; -EINVAL if an entry of ranges is malformed or s would then fail
 * eng_manifest_state_check (overlapping ranges); -ENOMEM. On error s is
 * unchanged. For the open of a version 1 or 2 file: the catalog knows
 * every live tablet's range.
 */
int eng_manifest_state_fill_ranges(struct eng_manifest_state *s, const struct eng_manifest_tablet *ranges,
                                   uint32_t n);

/*
 * The edit that changes the tablets of s into want (n_want entries,
 * borrowed: the tablets this shard owns per its catalog -- id, table,
 * range; flushed seqs ignored), for the open after a catalog change the
 * manifest did not follow yet (a crash between the two):
 *   - a wanted tablet s has: unchanged;
 *   - a tablet of s not wanted (an orphan) is dropped: its tables removed,
 *     its entry dropped;
 *   - a wanted tablet s lacks is created, with every table of every
 *     orphan of the same table whose range overlaps its own (the same
 *     file ids: shared; a file named by several such orphans once) and,
 *     as flushed seq, the lowest of those orphans' (0 if none overlaps).
 * Why the lowest is right: the new tablet's keys were its sources' (the
 * overlapping orphans), and every commit-log entry of theirs at or below
 * the lowest flushed seq is in the tables it inherits. A split has
 * exactly one source. A merge's may differ (shard_merge.c): a replay
 * from the lowest repeats, for a source that flushed further, only
 * versions its tables hold already -- harmless, as every read takes the
 * newest version of a key and a compaction keeps one.
 * An unranged orphan (a version 1 or 2 entry the catalog no longer has:
 * a dropped table's) overlaps nothing.
 *
 * *ret's arrays are in one allocation returned in *ret_mem (NULL when the
 * edit is empty: s already matches), freed by the caller with free();
 * its new tablets' keys are borrowed from want. Both written only on
 * success. Returns 0; -EINVAL (want has an unranged or malformed entry,
 * an id twice or overlapping ranges); -SCREE_ECORRUPT (a wanted tablet
 * whose entry in s has another table or range); -ENOMEM.
 */
int eng_manifest_relayout(const struct eng_manifest_state *s, const struct eng_manifest_tablet *want,
                          uint32_t n_want, struct eng_manifest_edit *ret, void **ret_mem);

/* ---- payloads ---- */

/* Bytes of a snapshot payload of s (version ENG_MANIFEST_VERSION). */
size_t eng_manifest_snapshot_size(const struct eng_manifest_state *s);

/* Encodes s into the eng_manifest_snapshot_size(s) bytes at dst.
 * REQUIRES: eng_manifest_state_is_ranged(s). */
void eng_manifest_snapshot_encode(void *dst, const struct eng_manifest_state *s);

/*
 * Decodes a snapshot payload of a file of the given version (its header's)
 * into *ret (written only on success; free with eng_manifest_state_fini).
 * Versions 1 and 2: every entry is unranged. Version 1: each tablet
 * number l is the static map's local tablet l of
 * the snapshot's own layout and becomes eng_tablet_static_id(layout,
 * shard, l); tablets with flushed seq 0 and no table get no entry.
 * Returns 0, -SCREE_ECORRUPT (length does not match the counts, nonzero
 * reserved bytes, the state fails eng_manifest_state_check; version 1: an
 * invalid layout or a tablet number outside it), -SCREE_EUNSUPPORTED
 * (another version) or -ENOMEM.
 */
int eng_manifest_snapshot_decode(const void *src, size_t len, uint32_t version,
                                 struct eng_manifest_state *ret);

/* Bytes of an edit payload of e (version ENG_MANIFEST_VERSION). */
size_t eng_manifest_edit_size(const struct eng_manifest_edit *e);

/* Encodes e into the eng_manifest_edit_size(e) bytes at dst.
 * REQUIRES: !e->implicit_entries. */
void eng_manifest_edit_encode(void *dst, const struct eng_manifest_edit *e);

/*
 * Decodes an edit payload of a file of the given version. layout
 * (borrowed) is the file's, from its snapshot: version 1 converts tablet
 * numbers with it as eng_manifest_snapshot_decode does (unused, may be
 * NULL, for versions 2 and 3). *ret's arrays, and its new tablets' keys,
 * point into one allocation returned in *ret_mem (NULL when all counts
 * are 0): the caller frees it with free() when done with *ret. Versions
 * 1 and 2 set e->implicit_entries. Both are written only on success. Returns
 * 0, -SCREE_ECORRUPT (length does not match the counts, nonzero reserved
 * bytes; version 1: an invalid layout or a tablet number outside it),
 * -SCREE_EUNSUPPORTED (another version) or -ENOMEM.
 */
int eng_manifest_edit_decode(const void *src, size_t len, uint32_t version,
                             const struct eng_manifest_layout *layout, struct eng_manifest_edit *ret,
                             void **ret_mem);

/* ---- file header and records ---- */

/* Writes a file header with salt (the seed of every record checksum in the
 * file; chosen different for every file) into ENG_MANIFEST_HEADER_BYTES at dst. */
void eng_manifest_header_encode(void *dst, uint64_t salt);

/* Verifies a file header and returns its salt and format version (1 to
 * ENG_MANIFEST_VERSION). Returns 0, -SCREE_ECORRUPT (short, bad magic or
 * checksum, nonzero reserved, version 0) or -SCREE_EUNSUPPORTED (a newer
 * version). The outputs are written only on success. */
int eng_manifest_header_decode(const void *src, size_t len, uint64_t *ret_salt,
                               uint32_t *ret_version);

/* Bytes a record with a payload of len bytes takes, padding included. */
static inline size_t eng_manifest_record_size(size_t len)
{
        size_t n = ENG_MANIFEST_RECORD_HEADER_BYTES + len;

        return (n + ENG_MANIFEST_RECORD_ALIGN - 1) & ~(size_t)(ENG_MANIFEST_RECORD_ALIGN - 1);
}

/* Encodes a record at dst (room for eng_manifest_record_size(len) bytes),
 * zero-filling the padding. synced_upto: the file offset known durable now.
 * payload is borrowed. REQUIRES: len <= ENG_MANIFEST_MAX_PAYLOAD_BYTES.
 * Returns the bytes written. */
size_t eng_manifest_record_encode(void *dst, uint64_t salt, enum eng_manifest_record_type type,
                                  uint64_t synced_upto, const void *payload, size_t len);

/* The same for a payload of len bytes already in place at
 * dst + ENG_MANIFEST_RECORD_HEADER_BYTES (encoded there to save a copy):
 * writes the header and the padding. Returns the bytes of the record. */
size_t eng_manifest_record_seal(void *dst, uint64_t salt, enum eng_manifest_record_type type,
                                uint64_t synced_upto, size_t len);

/* A decoded record; payload is borrowed from the reader's buffer. */
struct eng_manifest_record {
        enum eng_manifest_record_type type;
        uint64_t synced_upto;
        const uint8_t *payload;
        uint32_t len;
        size_t offset;                  /* of the record header in the file */
};

/* Reads one manifest file held in memory (borrowed for the reader's life). */
struct eng_manifest_reader {
        const uint8_t *buf;
        size_t len;
        uint64_t salt;
        uint32_t version;               /* the file's: decode its payloads with it */
        size_t off;                     /* next record; after the end: where valid data ends */
        bool torn;                      /* the end was not clean: a cut record was dropped */
        size_t bad_off;                 /* on an error: offset of the bad header or record */
};

/* Starts reading a file: verifies its header (see eng_manifest_header_decode
 * for the returns; r->bad_off is 0 then). */
int eng_manifest_reader_init(struct eng_manifest_reader *r, const void *buf, size_t len);

/*
 * Returns 1 and *ret (valid while buf is) for the next record; 0 at the end
 * (r->off is where valid data ends, r->torn whether a cut record was
 * dropped there); -SCREE_ECORRUPT if a record is damaged although a later
 * record says it was durable, or verifies but has an unknown type, nonzero
 * flags or a length above ENG_MANIFEST_MAX_PAYLOAD_BYTES (r->bad_off names it).
 */
int eng_manifest_reader_next(struct eng_manifest_reader *r, struct eng_manifest_record *ret);

/*
 * Reads a whole file into *ret (written only on success; free with
 * eng_manifest_state_fini): the header, the snapshot, and every edit
 * applied in order. Returns 0 (r->off: bytes of valid data, r->torn: a
 * torn tail was cut), -SCREE_ECORRUPT (as eng_manifest_reader_next, or no
 * snapshot first, a snapshot later, a payload that does not decode or an
 * edit that does not apply; r->bad_off names it), -SCREE_EUNSUPPORTED, or
 * -ENOMEM.
 */
int eng_manifest_read(struct eng_manifest_reader *r, const void *buf, size_t len,
                      struct eng_manifest_state *ret);

#endif
