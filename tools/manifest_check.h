/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-tool's manifest inspector (format: docs/format/manifest.md), and
 * the cross-checks between a manifest and the files of its directory.
 *
 * The file is read whole with plain pread and walked with the engine's
 * reader (eng_manifest_reader_*): the header, then every record's framing
 * and checksums. The endings are the commit log's: a clean end, a torn
 * tail (an edit whose write never completed: start-up drops it; reported,
 * not corruption), and corruption (damage in bytes a later record says were
 * durable, an unknown record type). The first record must be the SNAPSHOT,
 * every later one an EDIT that applies to the state before it (the
 * engine's own validation), and the final state must pass
 * eng_manifest_state_check.
 *
 * The cross-checks (struct tool_manifest_xref) hold a directory's files to
 * the state, as start-up would: every SSTable the manifest names must exist
 * with its recorded size; SSTables it does not name, and commit-log
 * segments older than the oldest it needs, are unreferenced -- start-up
 * deletes them -- which is not corruption. Single-threaded; offline.
 */
#ifndef SCREE_TOOLS_MANIFEST_CHECK_H
#define SCREE_TOOLS_MANIFEST_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/manifest_format.h"

struct tool_report;

struct tool_manifest_opts {
        bool print;             /* every record, the ending and the state to stdout */
};

/*
 * Checks the manifest at path (borrowed), printing it as o says. Returns 0
 * (clean end or torn tail; rep->note says which and summarizes the state)
 * and, if ret_state is not NULL, the state start-up would use in *ret_state
 * (free with eng_manifest_state_fini); -SCREE_ECORRUPT; or another negative
 * error when the file could not be checked (unreadable, a newer format
 * version, no memory). *ret_state is written only on 0. Every problem is in
 * *rep and on stderr.
 */
int tool_manifest_check(const char *path, const struct tool_manifest_opts *o, struct tool_report *rep,
                        struct eng_manifest_state *ret_state);

/* A directory's manifest state, and which of its tables were found. */
struct tool_manifest_xref {
        struct eng_manifest_state state;
        bool *found;                    /* per table of state */
};

enum tool_ref {
        TOOL_REF_NAMED,                 /* a file the manifest needs */
        TOOL_REF_UNREFERENCED,          /* a table or segment start-up deletes */
        TOOL_REF_OTHER,                 /* a file the manifest says nothing about */
        TOOL_REF_MAX,
        TOOL_REF_INVALID = -1,
};

/* Takes the arrays of *state (zeroing it). Returns 0 or -ENOMEM (*state
 * untouched). Free with tool_manifest_xref_fini. */
int tool_manifest_xref_init(struct tool_manifest_xref *x, struct eng_manifest_state *state);

/* Frees x's state. Accepts a zeroed x. */
void tool_manifest_xref_fini(struct tool_manifest_xref *x);

/*
 * Where the directory entry `name` (a file of size_bytes) stands against the
 * manifest. Names <16 hex digits>.sst and .log are judged; others are
 * TOOL_REF_OTHER. A named table is marked found and its size checked:
 * a mismatch is corruption, recorded in rep. For TOOL_REF_UNREFERENCED,
 * why (why_len bytes) says why start-up deletes it.
 */
enum tool_ref tool_manifest_xref_file(struct tool_manifest_xref *x, const char *name, uint64_t size_bytes,
                                      struct tool_report *rep, char *why, size_t why_len);

#endif
