/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Manifest inspector and directory cross-checks; see manifest_check.h and
 * docs/format/manifest.md. The walk mirrors eng_manifest_read() record by
 * record, so it can print each record and name the one that fails; the
 * rules (what decodes, what applies) are the engine's own functions.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "engine/manifest_format.h"
#include "tools/inspect.h"
#include "tools/manifest_check.h"

struct man {
        const struct tool_manifest_opts *o;
        struct tool_report *rep;
        struct tool_file f;
        uint8_t *buf;                   /* the whole file */
        struct eng_manifest_reader r;
        struct eng_manifest_state st;
        uint64_t n_edits;
        bool has_snapshot;
};

/* ---- printing ---- */

static void print_added(const struct eng_manifest_table *t)
{
        printf("    add table %#" PRIx64 ": tablet %u, %" PRIu64 " bytes, seq %" PRIu64 "..%" PRIu64 "\n",
               t->file_id, t->tablet, t->file_size, t->min_seq, t->max_seq);
}

static void print_key(const uint8_t *k, uint32_t len)
{
        for (uint32_t i = 0; i < len; i++)
                printf("%02x", k[i]);
}

/* ", table T, [start, end)" in hex, or ", unranged"; then a newline. */
static void print_range(const struct eng_manifest_tablet *t)
{
        if (!eng_manifest_tablet_is_ranged(t)) {
                printf(", unranged\n");
                return;
        }
        printf(", table %u, [", t->table);
        print_key(t->start, t->start_len);
        printf(", ");
        print_key(t->end, t->end_len);
        printf(")\n");
}

static void print_edit(const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_new_tablets; i++) {
                printf("    new tablet %u: flushed seq %" PRIu64, e->new_tablets[i].id,
                       e->new_tablets[i].flushed_seq);
                print_range(&e->new_tablets[i]);
        }
        for (uint32_t i = 0; i < e->n_added; i++)
                print_added(&e->added[i]);
        for (uint32_t i = 0; i < e->n_removed; i++)
                printf("    remove table %#" PRIx64 ": tablet %u\n", e->removed[i].file_id,
                       e->removed[i].tablet);
        for (uint32_t i = 0; i < e->n_flushed; i++)
                printf("    tablet %u flushed to seq %" PRIu64 "\n", e->flushed_tablets[i],
                       e->flushed_seqs[i]);
        for (uint32_t i = 0; i < e->n_dropped; i++)
                printf("    drop tablet %u\n", e->dropped_tablets[i]);
        if (e->next_file_id)
                printf("    next file id %#" PRIx64 "\n", e->next_file_id);
        if (e->log_segment)
                printf("    log segment %#" PRIx64 "\n", e->log_segment);
}

static void print_state(const struct eng_manifest_state *s)
{
        const struct eng_manifest_layout *l = &s->layout;

        printf("state:\n  layout           shard %u of %u, %u tablets per shard\n"
               "  next file id     %#" PRIx64 "\n  log segment      %#" PRIx64 "\n"
               "  tables           %zu, in %u tablets\n",
               l->shard, l->n_shards, l->tablets_per_shard, s->next_file_id, s->log_segment,
               s->n_tables, s->n_tablets);
        for (uint32_t t = 0; t < s->n_tablets; t++) {
                uint32_t id = s->tablets[t].id;

                printf("  tablet %u: flushed seq %" PRIu64, id, s->tablets[t].flushed_seq);
                print_range(&s->tablets[t]);
                for (size_t i = 0; i < s->n_tables; i++)
                        if (s->tables[i].tablet == id)
                                printf("    table %#" PRIx64 ": %" PRIu64 " bytes, seq %" PRIu64 "..%"
                                       PRIu64 "\n", s->tables[i].file_id, s->tables[i].file_size,
                                       s->tables[i].min_seq, s->tables[i].max_seq);
        }
}

/* ---- the walk ---- */

static int read_file(struct man *m)
{
        uint64_t size = m->f.size;
        int r;

        if (size < ENG_MANIFEST_HEADER_BYTES)
                return tool_corrupt(m->rep, 0, "file of %" PRIu64 " bytes is shorter than the %u-byte "
                                    "header", size, ENG_MANIFEST_HEADER_BYTES);
        if (size > SIZE_MAX || !(m->buf = malloc((size_t)size)))
                return tool_fail(m->rep, 0, -ENOMEM, "no memory to read %" PRIu64 " bytes", size);
        if ((r = tool_file_read(&m->f, 0, m->buf, (size_t)size, m->rep)) < 0)
                return r;
        r = eng_manifest_reader_init(&m->r, m->buf, (size_t)size);
        if (r == -SCREE_EUNSUPPORTED)
                return tool_fail(m->rep, 0, r, "header: a newer format version");
        if (r < 0)
                return tool_corrupt(m->rep, 0, "header: bad magic, checksum or version (not a manifest?)");
        if (m->o->print)
                printf("manifest %s: %" PRIu64 " bytes, version %u%s, salt %#" PRIx64 "\n",
                       m->rep->path, size, m->r.version,
                       m->r.version < ENG_MANIFEST_VERSION ? " (tablets read as catalog ids)" : "",
                       m->r.salt);
        return 0;
}

static int on_snapshot(struct man *m, const struct eng_manifest_record *rec)
{
        int r;

        if (m->has_snapshot)
                return tool_corrupt(m->rep, rec->offset, "a second snapshot record");
        r = eng_manifest_snapshot_decode(rec->payload, rec->len, m->r.version, &m->st);
        if (r == -ENOMEM)
                return tool_fail(m->rep, rec->offset, r, "no memory for the snapshot");
        if (r < 0)
                return tool_corrupt(m->rep, rec->offset, "snapshot: payload does not match its "
                                    "counts, or its state is invalid");
        m->has_snapshot = true;
        if (m->o->print)
                printf("record at %zu: snapshot, length %u, synced_upto %" PRIu64 ", tables %zu\n",
                       rec->offset, rec->len, rec->synced_upto, m->st.n_tables);
        return 0;
}

static int on_edit(struct man *m, const struct eng_manifest_record *rec)
{
        struct eng_manifest_edit e;
        void *mem = NULL;
        int r;

        if (!m->has_snapshot)
                return tool_corrupt(m->rep, rec->offset, "the first record is not a snapshot");
        r = eng_manifest_edit_decode(rec->payload, rec->len, m->r.version, &m->st.layout, &e, &mem);
        if (r == 0) {
                if (m->o->print) {
                        printf("record at %zu: edit, length %u, synced_upto %" PRIu64 "\n",
                               rec->offset, rec->len, rec->synced_upto);
                        print_edit(&e);
                }
                r = eng_manifest_state_apply(&m->st, &e);
                free(mem);
                if (r == 0) {
                        m->n_edits++;
                        return 0;
                }
                if (r != -ENOMEM)
                        return tool_corrupt(m->rep, rec->offset, "edit %" PRIu64 " does not apply to "
                                            "the state before it", m->n_edits + 1);
        }
        if (r == -ENOMEM)
                return tool_fail(m->rep, rec->offset, r, "no memory for an edit");
        return tool_corrupt(m->rep, rec->offset, "edit: payload does not match its counts");
}

static void note_end(struct man *m)
{
        const struct eng_manifest_state *s = &m->st;

        tool_note(m->rep, "%s at %zu (snapshot and %" PRIu64 " edits; tables %zu, next file id %#"
                  PRIx64 ", log segment %#" PRIx64 ")", m->r.torn ? "torn tail" : "clean end", m->r.off,
                  m->n_edits, s->n_tables, s->next_file_id, s->log_segment);
        if (!m->o->print)
                return;
        printf("end: %s%s\n", m->rep->note,
               m->r.torn ? "; an edit cut before it was synced: start-up drops it" : "");
        print_state(s);
}

static int walk(struct man *m)
{
        struct eng_manifest_record rec;
        int n, r;

        /* Ends: every record advances m->r.off. */
        while ((n = eng_manifest_reader_next(&m->r, &rec)) == 1) {
                r = rec.type == ENG_MANIFEST_RECORD_SNAPSHOT ? on_snapshot(m, &rec) : on_edit(m, &rec);
                if (r < 0)
                        return r;
        }
        if (n < 0)
                return tool_corrupt(m->rep, m->r.bad_off, "damaged record in bytes a later record says "
                                    "were durable, or a record of an unknown type");
        if (!m->has_snapshot)
                return tool_corrupt(m->rep, ENG_MANIFEST_HEADER_BYTES, "no snapshot record%s",
                                    m->r.torn ? " (it is damaged)" : "");
        if (eng_manifest_state_check(&m->st) < 0)
                return tool_corrupt(m->rep, m->r.off, "the final state is invalid");
        note_end(m);
        return 0;
}

int tool_manifest_check(const char *path, const struct tool_manifest_opts *o, struct tool_report *rep,
                        struct eng_manifest_state *ret_state)
{
        struct man m = { .o = o, .rep = rep, .f = { .fd = -1 } };
        int r;

        if ((r = tool_file_open(&m.f, path, rep)) == 0 && (r = read_file(&m)) == 0)
                r = walk(&m);
        tool_file_close(&m.f);
        free(m.buf);
        if (r == 0 && ret_state)
                *ret_state = m.st;
        else
                eng_manifest_state_fini(&m.st);
        return r;
}

/* ---- cross-checks with the directory ---- */

int tool_manifest_xref_init(struct tool_manifest_xref *x, struct eng_manifest_state *state)
{
        x->found = calloc(state->n_tables ? state->n_tables : 1, sizeof(*x->found));
        if (!x->found)
                return -ENOMEM;
        x->state = *state;
        memset(state, 0, sizeof(*state));
        return 0;
}

void tool_manifest_xref_fini(struct tool_manifest_xref *x)
{
        eng_manifest_state_fini(&x->state);
        free(x->found);
        x->found = NULL;
}

/* Every table naming file id is found (several tablets may share a file). */
static enum tool_ref xref_table(struct tool_manifest_xref *x, uint64_t id, uint64_t size,
                                struct tool_report *rep, char *why, size_t why_len)
{
        bool named = false;

        for (size_t i = 0; i < x->state.n_tables; i++) {
                const struct eng_manifest_table *t = &x->state.tables[i];

                if (t->file_id != id)
                        continue;
                x->found[i] = true;
                if (!named && size != t->file_size)
                        tool_corrupt(rep, 0, "size %" PRIu64 " bytes, the manifest says %" PRIu64, size,
                                     t->file_size);
                named = true;
        }
        if (named)
                return TOOL_REF_NAMED;
        snprintf(why, why_len, "the manifest does not name it");
        return TOOL_REF_UNREFERENCED;
}

enum tool_ref tool_manifest_xref_file(struct tool_manifest_xref *x, const char *name, uint64_t size_bytes,
                                      struct tool_report *rep, char *why, size_t why_len)
{
        uint64_t id;

        if (tool_name_id(name, ".sst", &id) == 0)
                return xref_table(x, id, size_bytes, rep, why, why_len);
        if (tool_name_id(name, ".log", &id) < 0)
                return TOOL_REF_OTHER;
        if (id >= x->state.log_segment)
                return TOOL_REF_NAMED;
        snprintf(why, why_len, "older than segment %#" PRIx64 ", the oldest the manifest needs",
                 x->state.log_segment);
        return TOOL_REF_UNREFERENCED;
}
