/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Commit-log segment inspector; see wal_check.h and docs/format/wal.md.
 * The segment is read whole (segments are preallocated, 32 MiB by
 * default) because the engine's reader looks ahead of a damaged record for
 * a later one that vouches for it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "engine/wal_format.h"
#include "tools/inspect.h"
#include "tools/wal_check.h"

struct wal {
        const struct tool_wal_opts *o;
        struct tool_report *rep;
        struct tool_file f;
        uint8_t *buf;                   /* the whole file */
        struct eng_wal_segment_info info;
        uint64_t n_records, first_seq, last_seq;
        unsigned n_damaged;
};

static const char *damage_text(enum eng_wal_damage kind)
{
        switch (kind) {
        case ENG_WAL_DAMAGE_DURABLE:
                return "damaged record in bytes a later record says were durable";
        case ENG_WAL_DAMAGE_TYPE:
                return "record of an unknown type";
        case ENG_WAL_DAMAGE_SEQ:
                return "record whose seq is not above the previous record's";
        default:
                return "corrupt record";
        }
}

static int read_header(struct wal *w, const char *path)
{
        uint64_t size = w->f.size, named;
        int r;

        if (size < ENG_WAL_SEGMENT_HEADER_BYTES)
                return tool_corrupt(w->rep, size, "file of %" PRIu64 " bytes is shorter than the "
                                    "%u-byte segment header", size, ENG_WAL_SEGMENT_HEADER_BYTES);
        if (size > SIZE_MAX || !(w->buf = malloc((size_t)size)))
                return tool_fail(w->rep, 0, -ENOMEM, "no memory to read %" PRIu64 " bytes", size);
        if ((r = tool_file_read(&w->f, 0, w->buf, (size_t)size, w->rep)) < 0)
                return r;
        if (memcmp(w->buf, ENG_WAL_MAGIC, strlen(ENG_WAL_MAGIC)) != 0)
                return tool_corrupt(w->rep, 0, "segment header: bad magic (not a commit-log "
                                    "segment)");
        if (eng_wal_segment_header_decode(w->buf, (size_t)size, &w->info) < 0)
                return tool_corrupt(w->rep, 0, "segment header: checksum mismatch or unknown "
                                    "version");
        if (tool_name_id(path, ".log", &named) == 0 && named != w->info.segment)
                return tool_corrupt(w->rep, 16, "segment header: segment %#" PRIx64 ", the file "
                                    "name says %#" PRIx64, w->info.segment, named);
        if (w->o->print)
                printf("segment %s: %" PRIu64 " bytes\nheader: version %u, shard %u, segment %#"
                       PRIx64 "\n", path, size, w->info.version, w->info.shard,
                       w->info.segment);
        return 0;
}

static void on_record(struct wal *w, const struct eng_wal_record *rec)
{
        if (w->n_records++ == 0)
                w->first_seq = rec->seq;
        w->last_seq = rec->seq;
        if (!w->o->records)
                return;
        printf("record at %zu: seq %" PRIu64 ", type ", rec->offset, rec->seq);
        switch (rec->type) {
        case ENG_WAL_RECORD_BATCH:    printf("batch"); break;
        case ENG_WAL_RECORD_PREPARE:  printf("prepare"); break;
        case ENG_WAL_RECORD_COMMIT:   printf("commit"); break;
        case ENG_WAL_RECORD_DECISION: printf("decision"); break;
        case ENG_WAL_RECORD_ABORT:    printf("abort"); break;
        case ENG_WAL_RECORD_FORGET:   printf("forget"); break;
        default:                      printf("%d", (int)rec->type); break;
        }
        printf(", length %u, synced_upto %" PRIu64 "\n", rec->len, rec->synced_upto);
}

/* The reader found corruption: report it, and where reading resumes.
 * Returns 1 if a valid record follows, 0 if none does. */
static int on_damage(struct wal *w, struct eng_wal_reader *r)
{
        size_t bad = r->bad_off;
        const char *what = damage_text(r->bad_kind);
        int more = eng_wal_reader_skip_damage(r);

        w->n_damaged++;
        if (more)
                tool_corrupt(w->rep, bad, "%s; the next valid record is at %zu", what, r->off);
        else
                tool_corrupt(w->rep, bad, "%s; no valid record follows", what);
        if (!w->o->print)
                return more;
        printf("corruption at %zu: %s\n", bad, what);
        if (more)
                printf("resumed at %zu: the next valid record\n", r->off);
        else
                printf("end: no valid record follows (%" PRIu64 " records before)\n",
                       w->n_records);
        return more;
}

static void note_end(struct wal *w, const struct eng_wal_reader *r)
{
        char seqs[64] = "";

        if (w->n_records)
                snprintf(seqs, sizeof(seqs), ", seq %" PRIu64 "..%" PRIu64, w->first_seq,
                         w->last_seq);
        tool_note(w->rep, "%s at %zu (%" PRIu64 " records%s)",
                  r->torn ? "torn tail" : "clean end", r->off, w->n_records, seqs);
        if (w->o->print)
                printf("end: %s%s\n", w->rep->note,
                       r->torn ? "; a record cut before it was synced: the log ends here" : "");
}

static void walk(struct wal *w)
{
        struct eng_wal_reader r;
        struct eng_wal_record rec;
        int n;

        eng_wal_reader_init(&r, w->buf, (size_t)w->f.size, w->info.segment);
        /* Ends: every record advances r.off, and every salvage moves past bad_off. */
        for (;;) {
                n = eng_wal_reader_next(&r, &rec);
                if (n == 1)
                        on_record(w, &rec);
                else if (n == 0)
                        break;
                else if (!on_damage(w, &r))
                        return;
        }
        note_end(w, &r);
}

int tool_wal_check(const char *path, const struct tool_wal_opts *o, struct tool_report *rep)
{
        struct wal w = { .o = o, .rep = rep, .f = { .fd = -1 } };
        int r;

        if ((r = tool_file_open(&w.f, path, rep)) == 0 && (r = read_header(&w, path)) == 0) {
                walk(&w);
                r = w.n_damaged ? -SCREE_ECORRUPT : 0;
        }
        tool_file_close(&w.f);
        free(w.buf);
        return r;
}
