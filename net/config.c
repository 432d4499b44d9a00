/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree's settings table, the value types (parse, check, show), and
 * get/set/copy over both tables (config_int.h); see config.h. Redis's
 * names are in config_compat.c, files and flags in config_file.c.
 *
 * A value is parsed into a struct val (a number, or a canonical text for
 * strings and Redis settings) before anything is stored, so a bad value
 * changes nothing, and a restart-only setting can compare the value it is
 * given with the one it has.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/check.h"
#include "net/config.h"
#include "net/config_int.h"

static const char *const sync_words[] = { "batch", "periodic", NULL };
static const char *const level_words[] = { "error", "warn", "info", "debug", NULL };
static const char *const debug_words[] = { "no", "yes", "local", NULL };

static int check_bind(const char *value, const char *cur, char *out, size_t len, char *err,
                      size_t err_len);

#define OFF(f) offsetof(struct scree_config, f)
#define MIB (UINT64_C(1) << 20)
#define RT CFG_F_RUNTIME

static const struct cfg_def defs[] = {
        { "port", CFG_UINT, 0, OFF(port), "6379", 1, 65535, .help =
          "TCP port every shard listens on (SO_REUSEPORT)" },
        { "bind", CFG_STRING, CFG_F_MULTI, OFF(bind), "127.0.0.1", .check = check_bind, .help =
          "addresses to listen on, blank-separated (IPv4 or IPv6; * = every IPv4 one, ::* = "
          "every IPv6 one; a leading - skips one the host lacks)" },
        { "dir", CFG_STRING, 0, OFF(dir), "./data", .help =
          "data directory (one subdirectory per shard)" },
        { "smp", CFG_UINT, 0, OFF(smp), "0", 0, 256, .help = "shards (threads); 0 = one per CPU" },
        { "memory", CFG_SIZE, 0, OFF(memory), "1GiB", 16 * MIB, UINT64_MAX, .help =
          "memory budget of all shards: half for memtables, a quarter for the block cache, the "
          "rest headroom for the process (clients' buffers: --maxmemory-clients)" },
        { "prefault", CFG_BOOL, 0, OFF(prefault), "yes", .help =
          "fault the memtables' half and the block cache's quarter of --memory in at start-up "
          "(no more: whole 2 MiB blocks per shard, rounded down), in the background, so no write "
          "or cache fill waits for fresh memory" },
        { "salvage", CFG_BOOL, 0, OFF(salvage), "no", .help =
          "start even if the commit log holds damaged records: skip them, each logged, and lose "
          "the writes in them (docs/server.md, \"A damaged commit log\")" },
        { "tablet-merge-after", CFG_UINT, 0, OFF(tablet_merge_after_s), "600", 1, 86400 * 30,
          .help = "seconds two neighbouring tablets of a table that splits by size or load stay "
          "cold (at most 100 operations a second each) before they merge, if small "
          "(docs/tables.md \"Tablets\")" },
        { "tablet-balancer", CFG_BOOL, RT, OFF(tablet_balancer), "yes", .help =
          "move tablets of tables between shards to even out their load, size and counts "
          "(BALANCER PAUSE stops it until RESUME; docs/tables.md \"Balancing\")" },
        { "commitlog-sync", CFG_ENUM, 0, OFF(sync), "batch", .words = sync_words, .help =
          "batch: a write is acknowledged once durable; periodic: at once, synced every period" },
        { "commitlog-sync-period-ms", CFG_UINT, 0, OFF(sync_period_ms), "10", 1, 60000, .help =
          "periodic mode: how often the commit log is synced" },
        { "requirepass", CFG_STRING, RT | CFG_F_SECRET, OFF(requirepass), "", .help =
          "password clients must AUTH with (empty = none)" },
        { "protected-mode", CFG_BOOL, RT, OFF(protected_mode), "yes", .help =
          "while no password is set, refuse clients that do not connect from a loopback address "
          "(-DENIED), as Redis does" },
        { "maxclients", CFG_UINT, RT, OFF(maxclients), "10000", 1, 1000000, .help =
          "connections accepted at most (all shards)" },
        { "max-key-bytes", CFG_SIZE, 0, OFF(max_key_bytes), "2048", 1, 32768, .help =
          "longest key accepted" },
        { "max-value-bytes", CFG_SIZE, 0, OFF(max_value_bytes), "8MiB", 1, 16 * MIB, .help =
          "longest value accepted (Redis's proto-max-bulk-len)" },
        { "metrics-port", CFG_UINT, 0, OFF(metrics_port), "0", 0, 65535, .help =
          "Prometheus metrics port (0 = off)" },
        { "log-level", CFG_ENUM, RT, OFF(log_level), "info", .words = level_words, .help =
          "error|warn|info|debug" },
        { "logfile", CFG_STRING, 0, OFF(logfile), "", .help =
          "append the log to this file (empty = stderr); SIGHUP reopens it, for log rotation" },
        { "idle-poll-us", CFG_UINT, 0, OFF(idle_poll_us), "50", 0, 1000000, .help =
          "how long an idle shard spins before it sleeps" },
        { "timeout", CFG_UINT, RT, OFF(timeout_s), "0", 0, 86400 * 365, .help =
          "close a client idle this many seconds (0 = never)" },
        { "slowlog-log-slower-than", CFG_INT, RT, OFF(slowlog_slower_than_us), "10000",
          (uint64_t)INT64_C(-1), (uint64_t)INT64_MAX, .help =
          "SLOWLOG (and LATENCY's command event, from 1 ms) records commands slower than this "
          "many microseconds (-1 = none)" },
        { "slowlog-max-len", CFG_UINT, RT, OFF(slowlog_max_len), "128", 0, 1000000, .help =
          "SLOWLOG entries kept per shard" },
        { "maxmemory-clients", CFG_PCT, RT, OFF(maxmemory_clients), "10%", 0, UINT64_MAX, .help =
          "memory all clients' buffers may hold together (N% of --memory, or a size; 0 = no "
          "limit): above it the client holding the most is closed; a percent gives each shard "
          "at least 64 MiB and one longest command" },
        { "multi-max-commands", CFG_UINT, RT, OFF(multi_max_commands), "100000", 1, UINT32_MAX,
          .help = "commands one MULTI may queue" },
        { "multi-max-bytes", CFG_SIZE, RT, OFF(multi_max_bytes), "32MiB", 4096, UINT64_MAX,
          .help = "memory one MULTI's queued commands may hold" },
        { "enable-debug-command", CFG_ENUM, 0, OFF(debug_command), "local", .words = debug_words,
          .help = "who may run DEBUG: no one, every client (yes), or clients on a loopback "
          "address (local). scree's DEBUG has only harmless subcommands, hence local by default "
          "(Redis: no)" },
};

#define N_DEFS (sizeof(defs) / sizeof(defs[0]))

/* A parsed value: num for scree's numeric settings, else text (heap, the
 * canonical form). */
struct val {
        uint64_t num;
        char *text;
};

void cfg_err(char *err, size_t len, const char *fmt, ...)
{
        va_list ap;

        if (!len)
                return;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
}

const struct cfg_def *cfg_def_at(size_t i)
{
        if (i < N_DEFS)
                return &defs[i];
        i -= N_DEFS;
        return i < cfg_redis_n ? &cfg_redis_defs[i] : NULL;
}

static size_t def_index(const struct cfg_def *d)
{
        return d >= defs && d < defs + N_DEFS ? (size_t)(d - defs)
                                               : N_DEFS + (size_t)(d - cfg_redis_defs);
}

const struct cfg_def *cfg_def_find(const char *name)
{
        const struct cfg_def *d;

        for (size_t i = 0; (d = cfg_def_at(i)); i++)
                if (!strcasecmp(d->name, name))
                        return d;
        return NULL;
}

const struct cfg_def *cfg_def_target(const struct cfg_def *d)
{
        const struct cfg_def *t = d->alias_of ? cfg_def_find(d->alias_of) : d;

        SCREE_ASSERT(t && !t->alias_of);
        return t ? t : d;       /* every alias names a setting (test_config checks the table) */
}

const char *cfg_name(size_t i)
{
        const struct cfg_def *d = cfg_def_at(i);

        return d ? d->name : NULL;
}

bool cfg_is_hidden(size_t i)
{
        const struct cfg_def *d = cfg_def_at(i);

        return d && (d->flags & CFG_F_HIDDEN);
}

int cfg_index(const char *name)
{
        const struct cfg_def *d = cfg_def_find(name);

        return d ? (int)def_index(cfg_def_target(d)) : -ENOENT;
}

/* ---- parsing ---- */

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
static int parse_pct(const char *s, uint64_t *ret, char *err, size_t err_len)
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
        if (parse_uint(num, &v) < 0 || v < 1)
                return -EINVAL;
        if (v > 100) {
                /* Redis's words: clients and its test suite match them. */
                cfg_err(err, err_len, "percentage argument must be less or equal to 100");
                return -ERANGE;
        }
        *ret = CFG_PERCENT | v;
        return 0;
}

uint64_t cfg_clients_limit_bytes(const struct scree_config *c, uint32_t n_shards)
{
        uint64_t v = c->maxmemory_clients, floor;

        if (n_shards == 0)
                n_shards = 1;
        if (!(v & CFG_PERCENT))
                return v / n_shards;
        v &= ~CFG_PERCENT;
        if (!v)
                return 0;
        v = (c->memory / 100 * v + c->memory % 100 * v / 100) / n_shards; /* exact, no overflow */
        floor = cfg_max_cmd_bytes(c) + (UINT64_C(1) << 20);
        if (floor < CFG_CLIENTS_SHARD_FLOOR)
                floor = CFG_CLIENTS_SHARD_FLOOR;
        return v > floor ? v : floor;
}

uint64_t cfg_max_cmd_bytes(const struct scree_config *c)
{
        uint64_t big = c->max_value_bytes * 4 + (UINT64_C(1) << 20);

        return big > (UINT64_C(64) << 20) ? big : UINT64_C(64) << 20;
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
        for (size_t i = 0; d->syn && d->syn[i].word; i++) {
                if (!strcasecmp(s, d->syn[i].word)) {
                        *ret = d->syn[i].value;
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

/* The number v of setting d (numeric or enum) as CONFIG GET shows it. */
static void show_num(const struct cfg_def *d, uint64_t v, char *buf, size_t len)
{
        switch (d->type) {
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
}

/* Parses a number-typed value of d into *ret. Returns 0 or -EINVAL (err set). */
static int parse_num(const struct cfg_def *d, const struct cfg_def *named, const char *value,
                     uint64_t *ret, char *err, size_t err_len)
{
        char want[160];
        int r = -EINVAL;

        switch (d->type) {
        case CFG_UINT:
                r = parse_uint(value, ret);
                break;
        case CFG_INT:
                r = parse_int(d, value, ret);
                break;
        case CFG_SIZE:
                r = cfg_parse_size(value, ret);
                break;
        case CFG_BOOL:
                r = parse_bool(value, ret);
                break;
        case CFG_PCT:
                r = parse_pct(value, ret, err, err_len);
                if (r == -ERANGE)
                        return -EINVAL;
                break;
        case CFG_ENUM:
                r = parse_enum(d, value, ret);
                break;
        case CFG_STRING:
                break;
        }
        if (r == 0 && (d->type == CFG_UINT || d->type == CFG_SIZE) && (*ret < d->min || *ret > d->max))
                r = -EINVAL;
        if (r == 0)
                return 0;
        expected(d, want, sizeof(want));
        cfg_err(err, err_len, "invalid value '%s' for '%s': expected %s", value, named->name, want);
        return -EINVAL;
}

/* ---- values: where they live ---- */

static size_t redis_slot_of(const struct cfg_def *t)
{
        size_t slot = (size_t)(t - cfg_redis_defs);

        SCREE_ASSERT((t->flags & CFG_F_REDIS) && slot < CFG_REDIS_SLOTS);
        return slot;
}

static char **redis_slot(struct scree_config *c, const struct cfg_def *t)
{
        return &c->redis[redis_slot_of(t)];
}

static bool is_text(const struct cfg_def *t)
{
        return t->type == CFG_STRING || (t->flags & CFG_F_REDIS);
}

/* The type description values of `named` parse with: its own words when
 * an alias has some (loglevel), else its target's. */
static const struct cfg_def *parser_of(const struct cfg_def *named)
{
        return named->words ? named : cfg_def_target(named);
}

/* Writes the value of the setting `named` in c as CONFIG GET shows it. */
static void show(const struct scree_config *c, const struct cfg_def *named, char *buf, size_t len)
{
        const struct cfg_def *t = cfg_def_target(named);
        const char *text;

        if (t->flags & CFG_F_REDIS) {
                text = c->redis[redis_slot_of(t)];
                if (!text && t->derive) {
                        t->derive(c, buf, len);
                        return;
                }
                snprintf(buf, len, "%s", text && !(t->flags & CFG_F_FIXED) ? text : t->dflt);
        } else if (t->type == CFG_STRING) {
                snprintf(buf, len, "%s", *(char *const *)((const char *)c + t->off));
        } else {
                show_num(parser_of(named), *(const uint64_t *)((const char *)c + t->off), buf, len);
        }
}

/* Parses value for the setting `named` in c into v (text: heap). Returns
 * 0, -EINVAL (err set) or -ENOMEM. */
static int parse_val(const struct scree_config *c, const struct cfg_def *named, const char *value,
                     struct val *v, char *err, size_t err_len)
{
        const struct cfg_def *t = cfg_def_target(named), *p = parser_of(named);
        char buf[CFG_VALUE_MAX];
        int r;

        v->text = NULL;
        if (p->type == CFG_STRING && p->check) {
                char cur[CFG_VALUE_MAX];

                show(c, named, cur, sizeof(cur));
                r = p->check(value, cur, buf, sizeof(buf), err, err_len);
                if (r < 0)
                        return r;
                value = buf;
        } else if (p->type != CFG_STRING) {
                r = parse_num(p, named, value, &v->num, err, err_len);
                if (r < 0)
                        return r;
                if (!is_text(t))
                        return 0;
                show_num(p, v->num, buf, sizeof(buf));
                value = buf;
        }
        v->text = strdup(value);
        return v->text ? 0 : -ENOMEM;
}

/* Stores v (taking its text) as the value of t, a target. */
static void store(struct scree_config *c, const struct cfg_def *t, struct val *v)
{
        char **slot;

        if (t->flags & CFG_F_REDIS)
                slot = redis_slot(c, t);
        else if (t->type == CFG_STRING)
                slot = (char **)((char *)c + t->off);
        else {
                *(uint64_t *)((char *)c + t->off) = v->num;
                return;
        }
        free(*slot);
        *slot = v->text;
        v->text = NULL;
}

/* True if v is the value `named` has in c. */
static bool same_val(const struct scree_config *c, const struct cfg_def *named, const struct val *v)
{
        char cur[CFG_VALUE_MAX], mine[64];

        show(c, named, cur, sizeof(cur));
        if (v->text)
                return !strcmp(cur, v->text);
        show_num(parser_of(named), v->num, mine, sizeof(mine));
        return !strcmp(cur, mine);
}

/* True if v is the default of `named` (for a Redis setting with a derived
 * default: what it derives from c). */
static bool is_default(const struct scree_config *c, const struct cfg_def *named,
                       const struct val *v)
{
        const struct cfg_def *t = cfg_def_target(named);

        if (t->derive) {
                char d[64];

                t->derive(c, d, sizeof(d));
                return v->text && !strcmp(v->text, d);
        }
        return v->text && !strcmp(v->text, t->dflt);
}

int cfg_set(struct scree_config *c, const char *name, const char *value, bool runtime, char *err,
            size_t err_len)
{
        const struct cfg_def *d = cfg_def_find(name), *t;
        struct val v;
        int r;

        if (!d) {
                cfg_err(err, err_len, "unknown setting '%s'", name);
                return -EINVAL;
        }
        t = cfg_def_target(d);
        r = parse_val(c, d, value, &v, err, err_len);
        if (r < 0)
                return r;
        if ((t->flags & CFG_F_OFF_ONLY) && !is_default(c, d, &v)) {
                cfg_err(err, err_len, "'%s %s' is not supported: %s", d->name, value, t->help);
                r = -EINVAL;
        } else if (runtime && !(t->flags & CFG_F_RUNTIME) && !same_val(c, d, &v)) {
                /* Redis's words, with scree's reason. */
                cfg_err(err, err_len, "can't set immutable config ('%s' is read only at start; "
                        "restart with it)", d->name);
                r = -EINVAL;
        } else if (!(t->flags & CFG_F_FIXED)) {
                store(c, t, &v);
        }
        free(v.text);
        return r;
}

void cfg_swap(struct scree_config *a, struct scree_config *b, int k)
{
        const struct cfg_def *t = cfg_def_at((size_t)k);
        char **pa, **pb, *s;
        uint64_t *na, *nb, n;

        SCREE_ASSERT(t && !t->alias_of);
        if (!t)
                return;         /* k from cfg_index: a setting's */
        if (t->flags & CFG_F_REDIS) {
                pa = redis_slot(a, t);
                pb = redis_slot(b, t);
        } else if (t->type == CFG_STRING) {
                pa = (char **)((char *)a + t->off);
                pb = (char **)((char *)b + t->off);
        } else {
                na = (uint64_t *)((char *)a + t->off);
                nb = (uint64_t *)((char *)b + t->off);
                n = *na;
                *na = *nb;
                *nb = n;
                return;
        }
        s = *pa;
        *pa = *pb;
        *pb = s;
}

int cfg_get(const struct scree_config *c, const char *name, char *buf, size_t len)
{
        const struct cfg_def *d = cfg_def_find(name);

        if (!d || !len)
                return -ENOENT;
        show(c, d, buf, len);
        return 0;
}

/* ---- life cycle ---- */

int cfg_init(struct scree_config *c)
{
        SCREE_VERIFY(cfg_redis_n <= CFG_REDIS_SLOTS && N_DEFS + cfg_redis_n <= CFG_MAX_SETTINGS);
        memset(c, 0, sizeof(*c));
        for (size_t i = 0; i < N_DEFS; i++) {
                struct val v;

                if (parse_val(c, &defs[i], defs[i].dflt, &v, NULL, 0) < 0) {
                        cfg_fini(c);
                        return -ENOMEM; /* the defaults parse: only strdup can fail */
                }
                store(c, &defs[i], &v);
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
        for (size_t i = 0; i < CFG_REDIS_SLOTS; i++) {
                free(c->redis[i]);
                c->redis[i] = NULL;
        }
}

int cfg_copy(struct scree_config *dst, const struct scree_config *src)
{
        bool ok = true;

        *dst = *src;
        for (size_t i = 0; i < N_DEFS; i++) {
                char **d = (char **)((char *)dst + defs[i].off);

                if (defs[i].type != CFG_STRING)
                        continue;
                *d = strdup(*d);
                ok = ok && *d;
        }
        for (size_t i = 0; i < CFG_REDIS_SLOTS; i++) {
                if (!dst->redis[i])
                        continue;
                dst->redis[i] = strdup(dst->redis[i]);
                ok = ok && dst->redis[i];
        }
        if (ok)
                return 0;
        cfg_fini(dst);
        memset(dst, 0, sizeof(*dst));
        return -ENOMEM;
}

/* ---- bind ---- */

bool cfg_bind_next(const char **pos, char *addr, size_t len, bool *ret_optional)
{
        const char *p = *pos, *end;
        size_t n;

        while (isspace((unsigned char)*p))
                p++;
        if (!*p)
                return false;
        *ret_optional = *p == '-';
        p += *ret_optional;
        for (end = p; *end && !isspace((unsigned char)*end); end++)
                ;
        n = (size_t)(end - p);
        if (n == 1 && *p == '*')
                snprintf(addr, len, "0.0.0.0");
        else if (n == 3 && !strncmp(p, "::*", 3))
                snprintf(addr, len, "::");
        else
                snprintf(addr, len, "%.*s", (int)n, p);
        *pos = end;
        return true;
}

/* A bind list: 1 to CFG_BIND_MAX addresses, kept blank-separated. */
static int check_bind(const char *value, const char *cur, char *out, size_t len, char *err,
                      size_t err_len)
{
        const char *p = value, *word = value;
        char addr[64], bin[16];
        size_t n = 0, o = 0;
        bool opt;

        (void)cur;
        while (cfg_bind_next(&p, addr, sizeof(addr), &opt)) {
                if (inet_pton(AF_INET, addr, bin) != 1 && inet_pton(AF_INET6, addr, bin) != 1) {
                        cfg_err(err, err_len, "bind: '%s' is not an IPv4 or IPv6 address (nor * "
                                "or ::*)", addr);
                        return -EINVAL;
                }
                if (++n > CFG_BIND_MAX) {
                        cfg_err(err, err_len, "bind: more than %d addresses", CFG_BIND_MAX);
                        return -EINVAL;
                }
                while (isspace((unsigned char)*word))
                        word++;
                o += (size_t)snprintf(out + o, o < len ? len - o : 0, "%s%.*s", n > 1 ? " " : "",
                                      (int)(p - word), word);
                word = p;
        }
        if (!n || o >= len) {
                cfg_err(err, err_len, n ? "bind: list too long" : "bind: no address given");
                return -EINVAL;
        }
        return 0;
}
