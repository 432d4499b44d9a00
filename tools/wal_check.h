/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-tool's commit-log segment inspector (format: docs/format/wal.md).
 * Reads a whole segment with plain pread and walks it with the engine's
 * reader (eng_wal_reader_*), which tells the three endings apart: a clean
 * end (zeros), a torn tail (a record cut by a power cut before it was
 * synced: the normal end after a crash, not an error), and corruption
 * (damage in bytes a later record says were durable, an unknown record
 * type, seq going backwards). After corruption it goes on from the next
 * valid record, so it can say what follows the damage. Single-threaded;
 * offline.
 */
#ifndef SCREE_TOOLS_WAL_CHECK_H
#define SCREE_TOOLS_WAL_CHECK_H

#include <stdbool.h>

struct tool_report;

struct tool_wal_opts {
        bool print;             /* header and ending to stdout */
        bool records;           /* and one line per record (with print) */
};

/*
 * Checks the segment at path (borrowed), printing it as o says. The
 * segment id comes from the header; a name of the form <16 hex
 * digits>.log must agree with it. Returns 0 (clean end or torn tail;
 * rep->note says which), -SCREE_ECORRUPT, or another negative error when
 * the file could not be read; every problem is in *rep and on stderr.
 */
int tool_wal_check(const char *path, const struct tool_wal_opts *o, struct tool_report *rep);

#endif
