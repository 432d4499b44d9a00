/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The settings table and its parsers; see config.h.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/config.h"

enum cfg_type {
        CFG_UINT,
        CFG_INT,                        /* int64_t; min and max hold int64 values */
        CFG_SIZE,
        CFG_BOOL,
        CFG_ENUM,
        CFG_STRING,
        CFG_PCT,                        /* a size, or N% of memory (CFG_PERCENT | N) */
        CFG_COMPAT,                     /* read-only, for clients that ask Redis's names */
};

struct cfg_def {
        const char *name;
        enum cfg_type type;
        size_t off;                     /* in struct scree_config */
        const char *dflt;
        uint64_t min, max;              /* uint, size */
        const char *const *words;       /* enum: the words, NULL-terminated; index = value */
        bool runtime;                   /* CONFIG SET may change it */
        bool secret;                    /* CONFIG GET shows it, --help does not show a default */
        const char *help;
        /* compat: the value, from the rest of the config */
        void (*compat)(const struct scree_config *c, char *buf, size_t len);
};

static const char *const sync_words[] = { "batch", "periodic", NULL };
static const char *const level_words[] = { "error", "warn", "info", "debug", NULL };

static void compat_empty(const struct scree_config *c, char *buf, size_t len)
{
        (void)c;
        snprintf(buf, len, "%s", "");
}

static void compat_yes(const struct scree_config *c, char *buf, size_t len)
{
        (void)c;
        snprintf(buf, len, "yes");
}

static void compat_appendfsync(const struct scree_config *c, char *buf, size_t len)
{
        snprintf(buf, len, "%s", c->sync == CFG_SYNC_BATCH ? "always" : "everysec");
}

static void compat_one(const struct scree_config *c, char *buf, size_t len)
{
        (void)c;
        snprintf(buf, len, "1");
}

static void compat_maxmemory(const struct scree_config *c, char *buf, size_t len)
{
        snprintf(buf, len, "%llu", (unsigned long long)c->memory);
}

#define OFF(f) offsetof(struct scree_config, f)
#define MIB (UINT64_C(1) << 20)

static const struct cfg_def defs[] = {
        { "port", CFG_UINT, OFF(port), "6379", 1, 65535, NULL, false, false,
          "TCP port every shard listens on (SO_REUSEPORT)", NULL },
        { "bind", CFG_STRING, OFF(bind), "127.0.0.1", 0, 0, NULL, false, false,
          "IPv4 address to listen on", NULL },
        { "dir", CFG_STRING, OFF(dir), "./data", 0, 0, NULL, false, false,
          "data directory (one subdirectory per shard)", NULL },
        { "smp", CFG_UINT, OFF(smp), "0", 0, 256, NULL, false, false,
          "shards (threads); 0 = one per CPU", NULL },
        { "memory", CFG_SIZE, OFF(memory), "1GiB", 16 * MIB, UINT64_MAX, NULL, false, false,
          "memory budget of all shards: half memtables, half block cache", NULL },
        { "prefault", CFG_BOOL, OFF(prefault), "yes", 0, 0, NULL, false, false,
          "fault the memtables' half and the cache's quarter of --memory in at start-up, in the "
          "background, so no write or cache fill waits for fresh memory", NULL },
        { "salvage", CFG_BOOL, OFF(salvage), "no", 0, 0, NULL, false, false,
          "start even if the commit log holds damaged records: skip them, each logged, and lose "
          "the writes in them (docs/server.md, \"A damaged commit log\")", NULL },
        { "commitlog-sync", CFG_ENUM, OFF(sync), "batch", 0, 0, sync_words, false, false,
          "batch: a write is acknowledged once durable; periodic: at once, synced every period",
          NULL },
        { "commitlog-sync-period-ms", CFG_UINT, OFF(sync_period_ms), "10", 1, 60000, NULL, false,
          false, "periodic mode: how often the commit log is synced", NULL },
        { "requirepass", CFG_STRING, OFF(requirepass), "", 0, 0, NULL, true, true,
          "password clients must AUTH with (empty = none)", NULL },
        { "maxclients", CFG_UINT, OFF(maxclients), "10000", 1, 1000000, NULL, true, false,
          "connections accepted at most (all shards)", NULL },
        { "max-key-bytes", CFG_SIZE, OFF(max_key_bytes), "2048", 1, 32768, NULL, false, false,
          "longest key accepted", NULL },
        { "max-value-bytes", CFG_SIZE, OFF(max_value_bytes), "8MiB", 1, 16 * MIB, NULL, false,
          false, "longest value accepted", NULL },
        { "metrics-port", CFG_UINT, OFF(metrics_port), "0", 0, 65535, NULL, false, false,
          "Prometheus metrics port (0 = off)", NULL },
        { "log-level", CFG_ENUM, OFF(log_level), "info", 0, 0, level_words, true, false,
          "error|warn|info|debug", NULL },
        { "idle-poll-us", CFG_UINT, OFF(idle_poll_us), "50", 0, 1000000, NULL, false, false,
          "how long an idle shard spins before it sleeps", NULL },
        { "timeout", CFG_UINT, OFF(timeout_s), "0", 0, 86400 * 365, NULL, true, false,
          "close a client idle this many seconds (0 = never)", NULL },
        { "slowlog-log-slower-than", CFG_INT, OFF(slowlog_slower_than_us), "10000",
          (uint64_t)INT64_C(-1), (uint64_t)INT64_MAX, NULL, true, false,
          "SLOWLOG (and LATENCY's command event, from 1 ms) records commands slower than this "
          "many microseconds (-1 = none)", NULL },
        { "slowlog-max-len", CFG_UINT, OFF(slowlog_max_len), "128", 0, 1000000, NULL, true, false,
          "SLOWLOG entries kept per shard", NULL },
        { "maxmemory-clients", CFG_PCT, OFF(maxmemory_clients), "10%", 0, UINT64_MAX, NULL, true,
          false, "memory all clients' buffers may hold together (N% of --memory, or a size; 0 = no "
          "limit): above it the client holding the most is closed", NULL },
        { "multi-max-commands", CFG_UINT, OFF(multi_max_commands), "100000", 1, UINT32_MAX, NULL,
          true, false, "commands one MULTI may queue", NULL },
        { "multi-max-bytes", CFG_SIZE, OFF(multi_max_bytes), "32MiB", 4096, UINT64_MAX, NULL, true,
          false, "memory one MULTI's queued commands may hold", NULL },
        { "maxmemory", CFG_COMPAT, 0, NULL, 0, 0, NULL, false, false, NULL, compat_maxmemory },
        { "save", CFG_COMPAT, 0, NULL, 0, 0, NULL, false, false, NULL, compat_empty },
        { "appendonly", CFG_COMPAT, 0, NULL, 0, 0, NULL, false, false, NULL, compat_yes },
        { "appendfsync", CFG_COMPAT, 0, NULL, 0, 0, NULL, false, false, NULL, compat_appendfsync },
        { "databases", CFG_COMPAT, 0, NULL, 0, 0, NULL, false, false, NULL, compat_one },
};

#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

static void set_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t len, const char *fmt, ...)
{
        va_list ap;

        if (!len)
                return;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
}

static const struct cfg_def *find(const char *name)
{
        for (size_t i = 0; i < N_DEFS; i++)
                if (!strcasecmp(defs[i].name, name))
                        return &defs[i];
        return NULL;
}

const char *cfg_name(size_t i)
{
        return i < N_DEFS ? defs[i].name : NULL;
}

int cfg_parse_size(const char *s, uint64_t *ret)
{
        static const struct {
                const char *suffix;
                uint64_t mul;
        } units[] = {
                { "", 1 }, { "b", 1 },
                { "k", 1000 }, { "kb", 1024 }, { "kib", 1024 },
                { "m", 1000000 }, { "mb", 1 << 20 }, { "mib", 1 << 20 },
                { "g", 1000000000 }, { "gb", 1 << 30 }, { "gib", 1 << 30 },
                { "t", UINT64_C(1000000000000) }, { "tb", UINT64_C(1) << 40 },
                { "tib", UINT64_C(1) << 40 },
        };
        uint64_t v = 0;
        const char *p = s;

        if (!isdigit((unsigned char)*p))
                return -EINVAL;
        for (; isdigit((unsigned char)*p); p++) {
                if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
                        return -EINVAL;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                if (strcasecmp(p, units[i].suffix))
                        continue;
                if (v && units[i].mul > UINT64_MAX / v)
                        return -EINVAL;
                *ret = v * units[i].mul;
                return 0;
        }
        return -EINVAL;
}

static int parse_uint(const char *s, uint64_t *ret)
{
        char *end;

        if (!isdigit((unsigned char)*s))
                return -EINVAL;
        errno = 0;
        *ret = strtoull(s, &end, 10);
        return errno || *end ? -EINVAL : 0;
}

static int parse_int(const struct cfg_def *d, const char *s, uint64_t *ret)
{
        bool neg = *s == '-';
        uint64_t u;
        int64_t v;

        if (parse_uint(s + neg, &u) < 0 || u > (uint64_t)INT64_MAX)
                return -EINVAL;
        v = neg ? -(int64_t)u : (int64_t)u;
        if (v < (int64_t)d->min || v > (int64_t)d->max)
                return -EINVAL;
        *ret = (uint64_t)v;
        return 0;
}

/* A size, or "N%" with N from 1 to 100 (stored as CFG_PERCENT | N). */
static int parse_pct(const char *s, uint64_t *ret)
{
        size_t n = strlen(s);
        char num[24];
        uint64_t v;

        if (n < 2 || s[n - 1] != '%')
                return cfg_parse_size(s, ret) < 0 || (*ret & CFG_PERCENT) ? -EINVAL : 0;
        if (n - 1 >= sizeof(num))
                return -EINVAL;
        memcpy(num, s, n - 1);
        num[n - 1] = 0;
        if (parse_uint(num, &v) < 0 || v < 1 || v > 100)
                return -EINVAL;
        *ret = CFG_PERCENT | v;
        return 0;
}

uint64_t cfg_clients_limit_bytes(const struct scree_config *c, uint32_t n_shards)
{
        uint64_t v = c->maxmemory_clients;

        if (n_shards == 0)
                n_shards = 1;
        if (!(v & CFG_PERCENT))
                return v / n_shards;
        v &= ~CFG_PERCENT;
        if (!v)
                return 0;
        v = (c->memory / 100 * v + c->memory % 100 * v / 100) / n_shards; /* exact, no overflow */
        return v > CFG_CLIENTS_SHARD_FLOOR ? v : CFG_CLIENTS_SHARD_FLOOR;
}

static int parse_bool(const char *s, uint64_t *ret)
{
        static const char *const yes[] = { "yes", "true", "on", "1" }, *const no[] = { "no", "false", "off", "0" };

        for (size_t i = 0; i < 4; i++) {
                if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
                        *ret = !strcasecmp(s, yes[i]);
                        return 0;
                }
        }
        return -EINVAL;
}

static int parse_enum(const struct cfg_def *d, const char *s, uint64_t *ret)
{
        for (uint64_t i = 0; d->words[i]; i++) {
                if (!strcasecmp(s, d->words[i])) {
                        *ret = i;
                        return 0;
                }
        }
        return -EINVAL;
}

/* What a bad value of d should have been. */
static void expected(const struct cfg_def *d, char *buf, size_t len)
{
        size_t n = 0;

        switch (d->type) {
        case CFG_UINT:
                snprintf(buf, len, "a whole number from %llu to %llu", (unsigned long long)d->min,
                         (unsigned long long)d->max);
                break;
        case CFG_INT:
                snprintf(buf, len, "a whole number from %lld to %lld", (long long)d->min,
                         (long long)d->max);
                break;
        case CFG_SIZE:
                if (d->max == UINT64_MAX)
                        snprintf(buf, len, "a size of at least %llu bytes (suffixes k, kb, mb, MiB, g, ...)",
                                 (unsigned long long)d->min);
                else
                        snprintf(buf, len, "a size from %llu to %llu bytes (suffixes k, kb, mb, MiB, g, ...)",
                                 (unsigned long long)d->min, (unsigned long long)d->max);
                break;
        case CFG_BOOL:
                snprintf(buf, len, "yes or no");
                break;
        case CFG_PCT:
                snprintf(buf, len, "a size (suffixes k, kb, mb, MiB, g, ...) or a percent of "
                                   "memory from 1%% to 100%%");
                break;
        case CFG_ENUM:
                buf[0] = 0;
                for (size_t i = 0; d->words[i] && n < len; i++)
                        n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "|" : "", d->words[i]);
                break;
        default:
                snprintf(buf, len, "a value");
                break;
        }
}

static int set_def(struct scree_config *c, const struct cfg_def *d, const char *value, char *err,
                   size_t err_len)
{
        void *field = (char *)c + d->off;
        uint64_t v = 0;
        int r = 0;

        switch (d->type) {
        case CFG_UINT:
                r = parse_uint(value, &v);
                break;
        case CFG_INT:
                r = parse_int(d, value, &v);
                break;
        case CFG_SIZE:
                r = cfg_parse_size(value, &v);
                break;
        case CFG_BOOL:
                r = parse_bool(value, &v);
                break;
        case CFG_PCT:
                r = parse_pct(value, &v);
                break;
        case CFG_ENUM:
                r = parse_enum(d, value, &v);
                break;
        case CFG_STRING: {
                char *copy = strdup(value);

                if (!copy)
                        return -ENOMEM;
                free(*(char **)field);
                *(char **)field = copy;
                return 0;
        }
        case CFG_COMPAT:
                set_err(err, err_len, "'%s' is not a scree setting (it is shown for Redis clients)",
                        d->name);
                return -EINVAL;
        }
        if (r == 0 && (d->type == CFG_UINT || d->type == CFG_SIZE) && (v < d->min || v > d->max))
                r = -EINVAL;
        if (r < 0) {
                char want[160];

                expected(d, want, sizeof(want));
                set_err(err, err_len, "invalid value '%s' for '%s': expected %s", value, d->name, want);
                return -EINVAL;
        }
        *(uint64_t *)field = v;
        return 0;
}

int cfg_set(struct scree_config *c, const char *name, const char *value, bool runtime, char *err,
            size_t err_len)
{
        const struct cfg_def *d = find(name);

        if (!d) {
                set_err(err, err_len, "unknown setting '%s'", name);
                return -EINVAL;
        }
        if (runtime && !d->runtime) {
                set_err(err, err_len, "'%s' cannot change while the server runs (restart with it)",
                        d->name);
                return -EINVAL;
        }
        return set_def(c, d, value, err, err_len);
}

int cfg_init(struct scree_config *c)
{
        memset(c, 0, sizeof(*c));
        for (size_t i = 0; i < N_DEFS; i++) {
                if (defs[i].type == CFG_COMPAT)
                        continue;
                if (set_def(c, &defs[i], defs[i].dflt, NULL, 0) < 0) {
                        cfg_fini(c);
                        return -ENOMEM; /* the defaults parse: only strdup can fail */
                }
        }
        return 0;
}

void cfg_fini(struct scree_config *c)
{
        for (size_t i = 0; i < N_DEFS; i++) {
                if (defs[i].type == CFG_STRING) {
                        char **p = (char **)((char *)c + defs[i].off);

                        free(*p);
                        *p = NULL;
                }
        }
}

int cfg_copy(struct scree_config *dst, const struct scree_config *src)
{
        *dst = *src;
        for (size_t i = 0; i < N_DEFS; i++) {
                if (defs[i].type == CFG_STRING)
                        *(char **)((char *)dst + defs[i].off) = NULL;
        }
        for (size_t i = 0; i < N_DEFS; i++) {
                char **d = (char **)((char *)dst + defs[i].off);

                if (defs[i].type != CFG_STRING)
                        continue;
                *d = strdup(*(char *const *)((const char *)src + defs[i].off));
                if (!*d) {
                        cfg_fini(dst);
                        memset(dst, 0, sizeof(*dst));
                        return -ENOMEM;
                }
        }
        return 0;
}

int cfg_index(const char *name)
{
        const struct cfg_def *d = find(name);

        return d ? (int)(d - defs) : -ENOENT;
}

int cfg_get(const struct scree_config *c, const char *name, char *buf, size_t len)
{
        const struct cfg_def *d = find(name);
        const void *field;
        uint64_t v;

        if (!d || !len)
                return -ENOENT;
        if (d->type == CFG_COMPAT) {
                d->compat(c, buf, len);
                return 0;
        }
        field = (const char *)c + d->off;
        v = d->type == CFG_STRING ? 0 : *(const uint64_t *)field;
        switch (d->type) {
        case CFG_STRING:
                snprintf(buf, len, "%s", *(char *const *)field);
                break;
        case CFG_BOOL:
                snprintf(buf, len, "%s", v ? "yes" : "no");
                break;
        case CFG_ENUM:
                snprintf(buf, len, "%s", d->words[v]);
                break;
        case CFG_INT:
                snprintf(buf, len, "%lld", (long long)v);
                break;
        case CFG_PCT:
                if (v & CFG_PERCENT)
                        snprintf(buf, len, "%llu%%", (unsigned long long)(v & ~CFG_PERCENT));
                else
                        snprintf(buf, len, "%llu", (unsigned long long)v);
                break;
        default:
                snprintf(buf, len, "%llu", (unsigned long long)v);
                break;
        }
        return 0;
}

/* ---- config files ---- */

/* Splits a line into name and value in place: the value may be quoted
 * ("..." or '...'; no escapes). Returns 0 (*name NULL for a blank or
 * comment line) or -EINVAL with what is wrong in *why. */
static int split_line(char *line, char **name, char **value, const char **why)
{
        char *p = line, *v, *end;

        while (isspace((unsigned char)*p))
                p++;
        *name = NULL;
        if (!*p || *p == '#')
                return 0;
        *name = p;
        while (*p && !isspace((unsigned char)*p))
                p++;
        if (!*p) {
                *why = "a name without a value";
                return -EINVAL;
        }
        *p++ = 0;
        while (isspace((unsigned char)*p))
                p++;
        end = p + strlen(p);
        while (end > p && isspace((unsigned char)end[-1]))
                *--end = 0;
        v = p;
        if (*v == '"' || *v == '\'') {
                char q = *v++;
                char *close = strchr(v, q);

                if (!close || close[1]) {
                        *why = "an unbalanced quote";
                        return -EINVAL;
                }
                *close = 0;
        } else if (!*v) {
                *why = "a name without a value";
                return -EINVAL;
        }
        *value = v;
        return 0;
}

int cfg_load_file(struct scree_config *c, const char *path, char *err, size_t err_len)
{
        FILE *f = fopen(path, "r");
        char line[4096];
        unsigned no = 0;
        int r = 0;

        if (!f) {
                r = -errno;
                set_err(err, err_len, "config file %s: %s", path, strerror(errno));
                return r;
        }
        while (r == 0 && fgets(line, sizeof(line), f)) {
                char *name, *value, msg[256];
                const char *why = NULL;
                size_t n = strlen(line);

                no++;
                if (n == sizeof(line) - 1 && line[n - 1] != '\n') {
                        set_err(err, err_len, "%s:%u: line longer than %zu bytes", path, no,
                                sizeof(line) - 2);
                        r = -EINVAL;
                        break;
                }
                if (split_line(line, &name, &value, &why) < 0) {
                        set_err(err, err_len, "%s:%u: %s", path, no, why);
                        r = -EINVAL;
                } else if (name && (r = cfg_set(c, name, value, false, msg, sizeof(msg))) < 0) {
                        set_err(err, err_len, "%s:%u: %s", path, no, msg);
                }
        }
        if (r == 0 && ferror(f)) {
                r = -EIO;
                set_err(err, err_len, "config file %s: read error", path);
        }
        fclose(f);
        return r;
}

/* ---- flags ---- */

const char *cfg_file_arg(int argc, char **argv)
{
        if (argc > 1 && strncmp(argv[1], "--", 2))
                return argv[1];
        for (int k = 1; k + 1 < argc; k++)
                if (!strcmp(argv[k], "--config"))
                        return argv[k + 1];
        return NULL;
}

int cfg_parse_args(struct scree_config *c, int argc, char **argv, char *err, size_t err_len)
{
        int i = 1, r;

        for (int k = 1; k < argc; k++)
                if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
                        return 1;
        if (argc > 1 && strncmp(argv[1], "--", 2)) {
                r = cfg_load_file(c, argv[1], err, err_len);
                if (r < 0)
                        return r;
                i = 2;
        }
        for (int k = i; k + 1 < argc; k++) {
                if (!strcmp(argv[k], "--config")) {
                        r = cfg_load_file(c, argv[k + 1], err, err_len);
                        if (r < 0)
                                return r;
                }
        }
        for (; i < argc; i++) {
                const char *a = argv[i], *eq, *value;
                char name[64], msg[256];

                if (strncmp(a, "--", 2) || !a[2]) {
                        set_err(err, err_len, "unexpected argument '%s' (see --help)", a);
                        return -EINVAL;
                }
                a += 2;
                eq = strchr(a, '=');
                snprintf(name, sizeof(name), "%.*s", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
                if (eq) {
                        value = eq + 1;
                } else if (find(name) && find(name)->type == CFG_BOOL &&
                           (i + 1 == argc || !strncmp(argv[i + 1], "--", 2))) {
                        value = "yes";          /* a bool flag alone: --salvage */
                } else if (i + 1 < argc) {
                        value = argv[++i];
                } else {
                        set_err(err, err_len, "--%s needs a value (see --help)", a);
                        return -EINVAL;
                }
                if (!strcmp(name, "config"))
                        continue;       /* read first, above */
                if (!find(name) || find(name)->type == CFG_COMPAT) {
                        set_err(err, err_len, "unknown flag '--%s' (see --help)", name);
                        return -EINVAL;
                }
                r = cfg_set(c, name, value, false, msg, sizeof(msg));
                if (r < 0) {
                        set_err(err, err_len, "%s", msg);
                        return r;
                }
        }
        return 0;
}

void cfg_usage(FILE *f)
{
        fprintf(f, "usage: scree [CONFIG-FILE] [--name value | --name=value]...\n"
                   "Settings (also in CONFIG-FILE or --config FILE as `name value` lines;\n"
                   "flags win). Sizes: k m g = 1000s, kb mb gb = kib mib gib = 1024s.\n");
        for (size_t i = 0; i < N_DEFS; i++) {
                const struct cfg_def *d = &defs[i];

                if (d->type == CFG_COMPAT)
                        continue;
                fprintf(f, "  --%-26s %s", d->name, d->help);
                if (!d->secret)
                        fprintf(f, " (default %s)", *d->dflt ? d->dflt : "none");
                fprintf(f, "%s\n", d->runtime ? " [CONFIG SET]" : "");
        }
        fprintf(f, "  --%-26s %s\n", "config FILE", "read settings from FILE first");
        fprintf(f, "  --%-26s %s\n", "help", "this text");
}
