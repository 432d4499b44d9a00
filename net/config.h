/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's settings: one table of names, types, defaults, limits and
 * help texts, read from a config file (Redis's syntax: `name value...`
 * lines, quotes, `include`), then from command-line flags (`--name value`
 * or `--name=value`; flags win), and read and changed at run time by
 * CONFIG GET/SET (only the settings marked runtime change; the others
 * accept only the value they have).
 *
 * Redis's setting names are known too (config_compat.c, docs/server.md,
 * "Redis settings"): a few are scree settings or aliases of one
 * (loglevel, proto-max-bulk-len), most have no meaning for scree and are
 * accepted, kept (CONFIG GET shows what was set) and warned about once at
 * start; those naming a feature scree lacks (tls-port, cluster-enabled,
 * replicaof, ...) accept only their "off" value. Unknown names are errors.
 *
 * Value syntax by type:
 *   uint      decimal, within the setting's limits;
 *   int       the same with an optional '-';
 *   size      a number with an optional suffix, case-insensitive, Redis's
 *             way: k/m/g/t are powers of 1000, kb/mb/gb/tb and
 *             kib/mib/gib/tib powers of 1024 (64MiB, 64mb, 1g);
 *   bool      yes/no (also true/false, on/off, 1/0); a flag alone
 *             (`--salvage`, last or followed by another flag) is yes;
 *   enum      one of the listed words;
 *   string    anything; in a file, "..." (with \n, \xHH... escapes) or
 *             '...' quote a value with spaces or an empty one;
 *   pct       a size as above, or N% (1 to 100) of --memory, as Redis's
 *             maxmemory-clients takes a percent of maxmemory.
 * Errors name the setting (and the file and line) and say what is
 * expected; a cfg_set that fails changes nothing.
 *
 * Not thread-safe: the main thread parses before the shards start; later
 * each shard changes only its own copy (CONFIG SET, cmd_server.c).
 */
#ifndef SCREE_NET_CONFIG_H
#define SCREE_NET_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cfg_sync {
        CFG_SYNC_BATCH = 0,
        CFG_SYNC_PERIODIC = 1,
};

/* enable-debug-command: who may run DEBUG. */
enum cfg_debug {
        CFG_DEBUG_NO = 0,
        CFG_DEBUG_YES = 1,
        CFG_DEBUG_LOCAL = 2,            /* clients on a loopback address */
};

/* Slots for Redis's settings (config_compat.c has fewer). */
#define CFG_REDIS_SLOTS 192

/* Settings and aliases, scree's and Redis's: cfg_index is below this. */
#define CFG_MAX_SETTINGS 256

/* Receives a start-up warning (a setting with no effect), one line. */
typedef void (*cfg_warn_fn)(void *ctx, const char *msg);

struct scree_config {
        uint64_t port;
        char *bind;
        char *dir;
        uint64_t smp;                   /* 0 = one shard per CPU */
        uint64_t memory;                /* bytes, all shards: memtables and block cache */
        uint64_t sync;                  /* enum cfg_sync */
        uint64_t sync_period_ms;
        char *requirepass;              /* "" = none */
        uint64_t protected_mode;        /* bool: refuse non-loopback clients while no password */
        uint64_t maxclients;
        uint64_t max_key_bytes, max_value_bytes;
        uint64_t metrics_port;          /* 0 = none */
        uint64_t log_level;             /* enum log_level */
        char *logfile;                  /* "" = stderr; reopened on SIGHUP */
        uint64_t idle_poll_us;
        uint64_t timeout_s;             /* idle client timeout; 0 = never */
        int64_t slowlog_slower_than_us; /* SLOWLOG threshold; -1 = off */
        uint64_t slowlog_max_len;       /* SLOWLOG entries per shard */
        uint64_t prefault;              /* bool: memtable memory faulted in at start-up */
        uint64_t salvage;               /* bool: start past damaged commit-log records */
        uint64_t tablet_merge_after_s;  /* cold seconds before neighbouring tablets merge */
        uint64_t tablet_balancer;       /* bool: the balancer moves tablets between shards */
        uint64_t maxmemory_clients;     /* bytes, or CFG_PERCENT | percent of memory; 0 = off */
        uint64_t multi_max_commands;    /* commands one MULTI may queue */
        uint64_t multi_max_bytes;       /* bytes one MULTI's queue may hold */
        uint64_t debug_command;         /* enum cfg_debug: who may run DEBUG */
        /* Redis's settings that scree keeps but does not use: each one's
         * canonical value as set, NULL while it has its default. */
        char *redis[CFG_REDIS_SLOTS];
};

/* A percent-or-size setting holding a percent (of --memory) sets this bit. */
#define CFG_PERCENT (UINT64_C(1) << 63)

/* Fills c with every default. Returns 0 or -ENOMEM. Free with cfg_fini. */
int cfg_init(struct scree_config *c);

/* Frees the strings of c. Accepts a zeroed config. */
void cfg_fini(struct scree_config *c);

/* Makes dst (not initialized) a deep copy of src. Returns 0 or -ENOMEM
 * (dst then zeroed). Free with cfg_fini. */
int cfg_copy(struct scree_config *dst, const struct scree_config *src);

/* The index of the setting name names (case-insensitive; an alias gives
 * its target's, so two names of one setting have one index), below
 * CFG_MAX_SETTINGS, or -ENOENT. */
int cfg_index(const char *name);

/*
 * Sets name to value (parsed by the setting's type). runtime: a setting
 * that is not runtime accepts only the value it has (a no-op, as CONFIG
 * SET of a restart-only setting to its own value). Returns 0, or -EINVAL
 * with a message in err (unknown name, bad value, "can't set immutable
 * config"), -ENOMEM.
 */
int cfg_set(struct scree_config *c, const char *name, const char *value, bool runtime, char *err,
            size_t err_len);

/* Exchanges the values of setting k (a cfg_index) between a and b: how a
 * shard takes a change prepared in a copy without failing. */
void cfg_swap(struct scree_config *a, struct scree_config *b, int k);

/*
 * Reads a config file in Redis's syntax: `name arg...` lines, '#' starts
 * a comment line, blank lines are skipped; args are split at blanks, "..."
 * and '...' quote them; a repeated name takes the last value (`save`
 * lines add up, `client-output-buffer-limit` lines set one class each);
 * `include PATH` reads PATH there (relative to the current directory, as
 * Redis; wildcards take every match in order). A Redis setting with no
 * effect is accepted and reported once through warn (may be NULL) with
 * its file and line. Returns 0, -errno (with the file named in err), or
 * -EINVAL (err names the file, the line and the problem: unknown name,
 * bad value, a feature scree lacks).
 */
int cfg_load_file(struct scree_config *c, const char *path, cfg_warn_fn warn, void *warn_ctx,
                  char *err, size_t err_len);

/*
 * Parses argv[1..]: an optional config file first (a first argument not
 * starting with "--", as redis-server takes it, or --config FILE
 * anywhere), then every --name value / --name=value on top of it (a
 * setting taking several words takes every argument up to the next
 * flag). Warnings as cfg_load_file. Returns 0, 1 when --help or -h was
 * given (the caller prints cfg_usage), or -EINVAL/-errno with the message
 * in err.
 */
int cfg_parse_args(struct scree_config *c, int argc, char **argv, cfg_warn_fn warn,
                   void *warn_ctx, char *err, size_t err_len);

/* The config file cfg_parse_args reads from argv: argv[1] when it does
 * not start with "--", else the first --config's value; NULL if none.
 * Pure. */
const char *cfg_file_arg(int argc, char **argv);

/* The flags, their defaults and what they do. */
void cfg_usage(FILE *f);

/* Settings in table order, for CONFIG GET with a pattern: the i-th name
 * (aliases included, as Redis lists them), or NULL past the end. */
const char *cfg_name(size_t i);

/* True if the i-th setting is left out of CONFIG GET patterns (Redis's
 * hidden settings: shown only when asked for by name). */
bool cfg_is_hidden(size_t i);

/* Writes the current value of name as CONFIG GET shows it into buf
 * (NUL-terminated, truncated to len). Returns 0 or -ENOENT. */
#define CFG_VALUE_MAX 4096      /* room for any value but a longer string */
int cfg_get(const struct scree_config *c, const char *name, char *buf, size_t len);

/*
 * Walks the addresses of a bind list (c->bind: blank-separated, each an
 * IPv4 or IPv6 address, '*' for every IPv4 one, '::*' for every IPv6
 * one, a '-' prefix marking it optional: skipped where the host lacks
 * it). *pos starts at the list and advances. Returns true with the
 * address in addr (NUL-terminated; '*' given as 0.0.0.0, '::*' as ::)
 * and *ret_optional, false at the end. Pure.
 */
bool cfg_bind_next(const char **pos, char *addr, size_t len, bool *ret_optional);

/* Addresses a bind list may hold at most. */
#define CFG_BIND_MAX 16

/* The bytes the clients of one of n_shards shards may hold together
 * (maxmemory-clients resolved against --memory, split evenly); 0 = no
 * limit. A percent never gives a shard less than CFG_CLIENTS_SHARD_FLOOR,
 * nor less than one longest command and 1 MiB (cfg_max_cmd_bytes): a small
 * --memory must not cut off a client reading one big reply or sending one
 * MSET of the longest values. Pure. */
uint64_t cfg_clients_limit_bytes(const struct scree_config *c, uint32_t n_shards);

#define CFG_CLIENTS_SHARD_FLOOR (UINT64_C(64) << 20)

/* The longest command accepted, every byte of it: room for an MSET of four
 * of the longest values, and never less than 64 MiB. Pure. */
uint64_t cfg_max_cmd_bytes(const struct scree_config *c);

/* Parses a size with the suffixes above. Returns 0 and *ret, or -EINVAL
 * (not a size, or above UINT64_MAX). Pure. */
int cfg_parse_size(const char *s, uint64_t *ret);

#endif
