/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What scree-tool's per-file inspectors (sst_check.c, wal_check.c) share: a
 * report of what was found in one file, reading a file with plain pread,
 * telling a file's id from its name, and printing bytes escaped.
 *
 * The tool runs offline, single-threaded, against a stopped shard's
 * directory; nothing here touches the reactor. Output convention: stdout
 * carries what the tool found (dumps, verdicts, summaries); every problem
 * also goes to stderr as one line "scree-tool: FILE: offset N: reason".
 */
#ifndef SCREE_TOOLS_INSPECT_H
#define SCREE_TOOLS_INSPECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum tool_verdict {
        TOOL_OK = 1,
        TOOL_CORRUPT,           /* the file's bytes break its format */
        TOOL_ERROR,             /* the file could not be checked: I/O error, no id, ... */
        TOOL_VERDICT_MAX,
        TOOL_VERDICT_INVALID = 0,
};

#define TOOL_TEXT_BYTES 256

/* What one inspection found. The first problem is kept; corruption
 * outranks an error (it is a finding, an error only a failure to look). */
struct tool_report {
        const char *path;               /* borrowed */
        enum tool_verdict verdict;
        uint64_t offset;                /* of the first problem */
        char reason[TOOL_TEXT_BYTES];   /* the first problem */
        char note[TOOL_TEXT_BYTES];     /* for an OK file: a short summary */
};

void tool_report_init(struct tool_report *rep, const char *path);

/* Records corruption at file offset off and prints it to stderr. Returns
 * -SCREE_ECORRUPT, so a checker can `return tool_corrupt(...)`. */
__attribute__((format(printf, 3, 4))) int tool_corrupt(struct tool_report *rep, uint64_t off,
                                                       const char *fmt, ...);

/* Records that the file could not be checked at offset off and prints it
 * to stderr. Returns err (-errno or -SCREE_E*), so a checker can `return
 * tool_fail(...)`. REQUIRES: err < 0. */
__attribute__((format(printf, 4, 5))) int tool_fail(struct tool_report *rep, uint64_t off, int err,
                                                    const char *fmt, ...);

/* Sets the summary of a file found OK. */
__attribute__((format(printf, 2, 3))) void tool_note(struct tool_report *rep, const char *fmt, ...);

/* An open file, read with pread. */
struct tool_file {
        int fd;
        uint64_t size;
        const char *path;               /* borrowed */
};

/* Opens path read-only and learns its size. Returns 0 or -errno (reported
 * in rep). */
int tool_file_open(struct tool_file *f, const char *path, struct tool_report *rep);
void tool_file_close(struct tool_file *f);

/* Reads exactly len bytes at off into buf. Returns 0, -errno, or -EIO when
 * the file ends early (it changed under us); failures are reported in rep. */
int tool_file_read(const struct tool_file *f, uint64_t off, void *buf, size_t len,
                   struct tool_report *rep);

/* The id in a file name "<16 hex digits><suffix>", after any directories.
 * Returns 0 and *ret_id, or -EINVAL for any other name. */
int tool_name_id(const char *path, const char *suffix, uint64_t *ret_id);

/* Prints len bytes quoted: printable ASCII as is, except '"' and '\\' and
 * everything else as \xNN. At most max bytes; "..." after the closing
 * quote says there were more. */
void tool_print_bytes(FILE *out, const void *p, size_t len, size_t max);

#endif
