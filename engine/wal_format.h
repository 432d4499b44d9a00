/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log (WAL) format: segment headers and records, encoded into and
 * decoded from memory. Pure format code (base/ only, no I/O), so every
 * failure mode is testable without a ring. Byte layout: docs/format/wal.md.
 *
 * A segment is a preallocated file: a 4096-byte header block, then records
 * back to back, each starting 8-byte aligned. A record header carries its
 * own checksum, verified before its length is trusted, and a checksum of the
 * payload. Both are seeded with the segment id, so bytes left in a recycled
 * segment by its previous life never verify: they read as the end of the log.
 *
 * Every record also carries synced_upto: the segment offset the writer knew
 * durable (fdatasync completed) when it encoded the record. That is what
 * tells the reader's three endings apart:
 *   - clean end: zeros (the preallocated rest) or bytes that do not verify;
 *   - torn tail: a record cut or half-written, where nothing after it claims
 *     it was durable -- an unsynced write the power cut tore (possibly with
 *     later blocks of the same write intact); the log is cut there;
 *   - corruption: damaged bytes that a later valid record says were already
 *     durable; recovery must refuse them unless told to salvage.
 * The last group commit of a log has no later record; the writer's sync
 * mark (ENG_WAL_RECORD_MARK) is that record for it, so damage there is
 * corruption too (docs/format/wal.md, "Torn or damaged").
 */
#ifndef SCREE_ENGINE_WAL_FORMAT_H
#define SCREE_ENGINE_WAL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ENG_WAL_MAGIC "screeWAL"               /* 8 bytes, no NUL */
/* Version 2 (2026-11, issue 25) added the two-phase-commit record types
 * (PREPARE .. FORGET below); a segment header says 2 so that a scree that
 * knows only version 1 refuses the whole log instead of meeting (or, with
 * salvage, skipping) a record type it does not know. Version 1 segments
 * are still read: they hold BATCH and MARK records only. */
#define ENG_WAL_VERSION 2u
#define ENG_WAL_VERSION_MIN 1u
#define ENG_WAL_SEGMENT_HEADER_BYTES 4096u
#define ENG_WAL_RECORD_HEADER_BYTES 40u
#define ENG_WAL_RECORD_ALIGN 8u

enum eng_wal_record_type {
        ENG_WAL_RECORD_BATCH = 1,       /* payload: one write batch of the engine */
        /* No payload; seq is the last batch's; synced_upto its own offset:
         * everything before it was durable when it was written. wal.c
         * writes one behind the last record once a group commit's sync
         * completed and nothing else waits, so that damage to the last
         * synced record reads as damage, not as a torn tail. The reader
         * checks it and skips it; it is no record of the log. */
        ENG_WAL_RECORD_MARK = 2,
        /* The two-phase commit of a write across shards (shard_xtxn.c;
         * payloads: docs/format/wal.md, "Transaction records"). Each takes
         * a seq of its own but for COMMIT, whose seq is its batch's first
         * like BATCH's. */
        ENG_WAL_RECORD_PREPARE = 3,     /* a participant's part, held, not applied */
        ENG_WAL_RECORD_COMMIT = 4,      /* a write batch that commits a prepared part */
        ENG_WAL_RECORD_DECISION = 5,    /* the coordinator decided commit */
        ENG_WAL_RECORD_ABORT = 6,       /* a participant dropped its prepared part */
        ENG_WAL_RECORD_FORGET = 7,      /* the coordinator's decision is no longer needed */
        ENG_WAL_RECORD_TYPE_MAX,
        ENG_WAL_RECORD_TYPE_INVALID = 0,
};

struct eng_wal_segment_info {
        uint32_t version;
        uint32_t shard;
        uint64_t segment;               /* id, monotonic per shard */
};

/* A decoded record. payload is borrowed from the reader's buffer. */
struct eng_wal_record {
        enum eng_wal_record_type type;
        uint64_t seq;                   /* first sequence number in the batch */
        uint64_t synced_upto;           /* durable prefix of the segment when written */
        const uint8_t *payload;
        uint32_t len;
        size_t offset;                  /* of the record header in the segment */
};

/* Writes a segment header into the ENG_WAL_SEGMENT_HEADER_BYTES at dst. */
void eng_wal_segment_header_encode(void *dst, uint32_t shard, uint64_t segment);

/* Decodes and verifies a segment header from the len bytes at src.
 * Returns 0, or -SCREE_ECORRUPT (short, bad magic, bad checksum, unknown
 * version). *ret is written only on success. */
int eng_wal_segment_header_decode(const void *src, size_t len, struct eng_wal_segment_info *ret);

/* Bytes a record with a payload of len bytes takes, padding included. */
static inline size_t eng_wal_record_size(uint32_t len)
{
        size_t n = ENG_WAL_RECORD_HEADER_BYTES + (size_t)len;

        return (n + ENG_WAL_RECORD_ALIGN - 1) & ~(size_t)(ENG_WAL_RECORD_ALIGN - 1);
}

/* Encodes a record at dst (room for eng_wal_record_size(len) bytes),
 * zero-filling the padding. synced_upto: the offset up to which this segment
 * is known durable now. payload is borrowed. Returns the bytes written. */
size_t eng_wal_record_encode(void *dst, uint64_t segment, enum eng_wal_record_type type,
                             uint64_t seq, uint64_t synced_upto, const void *payload, uint32_t len);

/* What the reader found wrong at bad_off, when it returns -SCREE_ECORRUPT. */
enum eng_wal_damage {
        ENG_WAL_DAMAGE_DURABLE = 1,     /* bytes that are no valid record, although a later
                                         * record says they were durable */
        ENG_WAL_DAMAGE_TYPE,            /* a verifying record of an unknown type */
        ENG_WAL_DAMAGE_SEQ,             /* a verifying record whose seq is not above the last */
        ENG_WAL_DAMAGE_MAX,
        ENG_WAL_DAMAGE_INVALID = 0,     /* no corruption found */
};

/* Reads records from one segment held in memory (borrowed for the reader's
 * life): the whole file, header block included. */
struct eng_wal_reader {
        const uint8_t *buf;
        size_t len;
        uint64_t segment;
        size_t off;                     /* next record; after the end: where appends go */
        size_t mark_off;                /* the last mark read (0: none) */
        uint64_t last_seq;
        bool torn;                      /* the end was not clean zeros: a cut record,
                                         * or leftovers of a recycled segment */
        size_t bad_off;                 /* on corruption: offset of the bad record */
        enum eng_wal_damage bad_kind;   /* on corruption: what is wrong there */
};

/* Starts reading segment `segment` from buf. Records begin after the header block. */
void eng_wal_reader_init(struct eng_wal_reader *r, const void *buf, size_t len, uint64_t segment);

/*
 * Returns 1 and *ret (valid while buf is) for the next batch record (marks
 * are checked and skipped; r->mark_off says where the last one was); 0 at the end
 * of the log (r->off is then where valid data ends and r->torn says whether
 * a cut record was dropped there); -SCREE_ECORRUPT if a record is damaged
 * although a later record says it was durable, or has an unknown type, or a
 * seq that does not increase (r->bad_off names it, r->bad_kind says which).
 * Pure; any thread.
 */
int eng_wal_reader_next(struct eng_wal_reader *r, struct eng_wal_record *ret);

/* Salvage: skips past the damaged record at r->bad_off to the next valid one,
 * so reading can go on. Returns 1 if one was found, 0 if none remains. */
int eng_wal_reader_skip_damage(struct eng_wal_reader *r);

#endif
