/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internals shared by the settings' files: config.c (scree's own settings,
 * value types, get/set), config_compat.c (Redis's setting names) and
 * config_file.c (config files and flags). One cfg_def describes a setting;
 * the settings are the two tables one after the other, scree's first, so
 * an index below CFG_MAX_SETTINGS names one setting for good.
 *
 * Storage: a scree setting lives in its field of struct scree_config
 * (`off`); a Redis-compatibility setting in c->redis[slot] as its
 * canonical text (NULL: its default, or what `derive` computes). An alias
 * has no storage: it reads and writes its target's.
 */
#ifndef SCREE_NET_CONFIG_INT_H
#define SCREE_NET_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/config.h"

enum cfg_type {
        CFG_UINT,
        CFG_INT,                        /* int64_t; min and max hold int64 values */
        CFG_SIZE,
        CFG_BOOL,
        CFG_ENUM,
        CFG_STRING,
        CFG_PCT,                        /* a size, or N% of memory (CFG_PERCENT | N) */
};

enum cfg_flag {
        CFG_F_RUNTIME = 1u << 0,        /* CONFIG SET may change it */
        CFG_F_SECRET = 1u << 1,         /* --help shows no default */
        CFG_F_REDIS = 1u << 2,          /* stored in c->redis[slot] */
        CFG_F_NOOP = 1u << 3,           /* accepted, has no effect: warned at start */
        CFG_F_OFF_ONLY = 1u << 4,       /* scree lacks the feature: only the default is accepted */
        CFG_F_FIXED = 1u << 5,          /* always shows its default; another value is a no-op */
        CFG_F_HIDDEN = 1u << 6,         /* CONFIG GET shows it only by its exact name */
        CFG_F_MULTI = 1u << 7,          /* takes several words in a file or after a flag */
};

struct scree_config;

/* Checks and canonicalizes a string setting's value: writes the text to
 * store into out (NUL-terminated, len bytes at most). cur is the value it
 * replaces (for settings whose value merges). Returns 0, or -EINVAL with
 * the reason in err. */
typedef int (*cfg_check_fn)(const char *value, const char *cur, char *out, size_t len, char *err,
                            size_t err_len);

/* The value a Redis setting shows while unset, computed from c. */
typedef void (*cfg_derive_fn)(const struct scree_config *c, char *buf, size_t len);

/* An extra word an enum accepts for value `value` (Redis's names). */
struct cfg_syn {
        const char *word;
        uint64_t value;
};

struct cfg_def {
        const char *name;
        enum cfg_type type;
        uint32_t flags;                 /* enum cfg_flag */
        size_t off;                     /* scree: the field; Redis: the slot in c->redis */
        const char *dflt;
        uint64_t min, max;              /* uint, int, size */
        const char *const *words;       /* enum: NULL-terminated; index = value */
        const struct cfg_syn *syn;      /* enum: more accepted words, {NULL} ends */
        const char *alias_of;           /* stored as this setting (its type unless words) */
        const char *help;               /* --help; for OFF_ONLY and FIXED: why */
        cfg_check_fn check;             /* string: validates and canonicalizes */
        cfg_derive_fn derive;           /* Redis: the value while unset */
};

/* The Redis-compatibility table (config_compat.c). */
extern const struct cfg_def cfg_redis_defs[];
extern const size_t cfg_redis_n;

/* The setting at index i of both tables (scree's, then Redis's), or NULL. */
const struct cfg_def *cfg_def_at(size_t i);

/* The setting called name (case-insensitive), aliases not resolved, or NULL. */
const struct cfg_def *cfg_def_find(const char *name);

/* The setting d stores into: d, or the target of an alias. */
const struct cfg_def *cfg_def_target(const struct cfg_def *d);

/* Writes printf-style into err when err_len > 0. */
void cfg_err(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
