/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A table's options by name, as TABLE.CREATE / TABLE.ALTER (docs/tables.md)
 * and the library's scree_table_spec spell them: AUTO-SPLIT-SIZE on|off,
 * AUTO-SPLIT-LOAD on|off, SPLIT-SIZE bytes[kb|mb|gb|tb], SPLIT-LOAD-PERCENT
 * 1..100, MIN-TABLETS and MAX-TABLETS 1..65536, DEFAULT-TTL seconds,
 * COMPACTION size-tiered, PER-PARTITION-READS and PER-PARTITION-WRITES
 * (per second, 0: none). Names and words without case. Each value's own
 * range is judged here, so errors name what the user wrote;
 * eng_catalog_options_check has the last word. Pure; any thread.
 */
#ifndef SCREE_ENGINE_CATALOG_OPTIONS_H
#define SCREE_ENGINE_CATALOG_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/catalog.h"

enum eng_catalog_opt {
        ENG_OPT_AUTO_SPLIT_SIZE,
        ENG_OPT_AUTO_SPLIT_LOAD,
        ENG_OPT_SPLIT_SIZE,
        ENG_OPT_SPLIT_LOAD_PERCENT,
        ENG_OPT_MIN_TABLETS,
        ENG_OPT_MAX_TABLETS,
        ENG_OPT_DEFAULT_TTL,
        ENG_OPT_COMPACTION,
        ENG_OPT_PARTITION_READS,
        ENG_OPT_PARTITION_WRITES,
        ENG_OPT_MAX,
};

/* The option named name (len bytes, any case), or -1. */
int eng_catalog_opt_find(const char *name, size_t len);

/* Its name, in capitals. */
const char *eng_catalog_opt_name(enum eng_catalog_opt k);

/* Sets option k of o from its value's text (len bytes). 0, or -EINVAL
 * with a message in err (err_len may be 0). */
int eng_catalog_opt_set(struct eng_catalog_options *o, enum eng_catalog_opt k, const char *val,
                        size_t len, char *err, size_t err_len);

/* The checks across options (MIN-TABLETS <= MAX-TABLETS), then
 * eng_catalog_options_check. 0 or -EINVAL with err. */
int eng_catalog_opts_check(const struct eng_catalog_options *o, char *err, size_t err_len);

/* The message for an unknown option word (len bytes): -EINVAL. also: a
 * word put before "option" ("" or e.g. "key type or "). */
int eng_catalog_opt_unknown(const char *word, size_t len, const char *also, char *err,
                            size_t err_len);

#endif
