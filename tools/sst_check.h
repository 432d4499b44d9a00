/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-tool's SSTable inspector (format: docs/format/sst.md). Reads a
 * table with plain pread and checks all of it with the engine's decoders:
 * the footer; the index, bloom and properties blocks; that the index tiles
 * the data region and the engine's reader accepts the table; every data
 * block's checksum; that every entry decodes, in (key ascending, newest seq
 * first) order across blocks, with each block's last key equal to its
 * index key and every key in the bloom filter; and that the properties
 * match what the blocks hold (counts, seq and expiry bounds, key range).
 * Single-threaded; offline.
 */
#ifndef SCREE_TOOLS_SST_CHECK_H
#define SCREE_TOOLS_SST_CHECK_H

#include <stdbool.h>
#include <stdint.h>

struct tool_report;

struct tool_sst_opts {
        bool print;             /* footer, properties and index to stdout */
        bool entries;           /* and every entry (with print) */
        bool has_file_id;       /* use file_id, else take it from the name */
        uint64_t file_id;       /* seeds every checksum */
};

/*
 * Checks the table at path (borrowed), printing it as o says. Stops at the
 * first corruption. Returns 0 (rep->note summarizes), -SCREE_ECORRUPT, or
 * another negative error when the file could not be checked (unreadable, no
 * file id, a newer format version); every problem is in *rep and on stderr.
 */
int tool_sst_check(const char *path, const struct tool_sst_opts *o, struct tool_report *rep);

#endif
