/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Redis 7.0's setting names (config_int.h, docs/server.md "Redis
 * settings"), so that a stock redis.conf starts scree and clients and
 * test suites that set Redis's settings work. Each is one of:
 *   - an alias of a scree setting (loglevel, proto-max-bulk-len): reads
 *     and writes it;
 *   - a no-op (CFG_F_NOOP): scree has no use for it (encodings, RDB and
 *     AOF files, eviction, replication tuning...). Its value is checked
 *     as Redis would, kept per shard and shown by CONFIG GET, and a
 *     config file or flag giving it gets one warning at start;
 *   - off-only (CFG_F_OFF_ONLY): a feature scree lacks (TLS, cluster,
 *     replication, unix socket, ACL file): its "off" value is accepted,
 *     anything else refused, so nothing that changes how clients connect
 *     or who may is silently ignored.
 * Redis's aliases (slaveof, hash-max-ziplist-entries...) share their
 * target's value. The values live in scree_config.redis[] as canonical
 * text, slot = position in this table.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/config.h"
#include "net/config_int.h"

/* ---- checks of Redis's multi-word values ---- */

/* Splits s at blanks into at most max words (pointers into copy, which
 * must hold strlen(s)+1 bytes). Returns the count, or -1 if above max. */
static int words_of(const char *s, char *copy, char **w, int max)
{
        char *save = NULL;
        int n = 0;

        strcpy(copy, s);
        /* strtok_r: every shard checks CONFIG SET's values at once. */
        for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n == max)
                        return -1;
                w[n++] = t;
        }
        return n;
}

static bool is_count(const char *s, long long lo, long long hi, long long *ret)
{
        char *end;
        long long v;

        if (!*s)
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || *end || v < lo || v > hi)
                return false;
        *ret = v;
        return true;
}

/* save: "" or pairs "seconds changes" (RDB snapshots: scree has none). */
static int check_save(const char *value, const char *cur, char *out, size_t len, char *err,
                      size_t err_len)
{
        char copy[512], *w[64];
        int n = strlen(value) < sizeof(copy) ? words_of(value, copy, w, 64) : -1;
        size_t o = 0;
        long long v;

        (void)cur;
        if (n < 0 || n % 2)
                goto bad;
        out[0] = 0;
        for (int i = 0; i < n; i++) {
                if (!is_count(w[i], 1, INT32_MAX, &v) && !(i % 2 && is_count(w[i], 0, 0, &v)))
                        goto bad;
                o += (size_t)snprintf(out + o, len - o, "%s%lld", i ? " " : "", v);
        }
        return 0;
bad:
        cfg_err(err, err_len, "Invalid save parameters: expected pairs of <seconds> <changes>, "
                "or \"\"");
        return -EINVAL;
}

static const char *const cobl_class[] = { "normal", "slave", "pubsub" };

/* client-output-buffer-limit: <class> <hard> <soft> <soft-seconds>...; the
 * classes given change, the others keep their value in cur. */
static int check_cobl(const char *value, const char *cur, char *out, size_t len, char *err,
                      size_t err_len)
{
        unsigned long long lim[3][3] = { { 0 } };
        char copy[512], *w[64];
        int n = strlen(value) < sizeof(copy) ? words_of(value, copy, w, 64) : -1;
        size_t o = 0;

        if (n <= 0 || n % 4) {
                cfg_err(err, err_len, "Wrong number of arguments in buffer limit configuration.");
                return -EINVAL;
        }
        if (cur && strcmp(cur, value) && check_cobl(cur, NULL, out, len, NULL, 0) == 0)
                sscanf(out, "%*s %llu %llu %llu %*s %llu %llu %llu %*s %llu %llu %llu", &lim[0][0],
                       &lim[0][1], &lim[0][2], &lim[1][0], &lim[1][1], &lim[1][2], &lim[2][0],
                       &lim[2][1], &lim[2][2]);
        for (int i = 0; i < n; i += 4) {
                int k = !strcasecmp(w[i], "normal") ? 0
                        : !strcasecmp(w[i], "replica") || !strcasecmp(w[i], "slave") ? 1
                        : !strcasecmp(w[i], "pubsub") ? 2 : -1;
                uint64_t hard, soft;
                long long secs;

                if (k < 0) {
                        cfg_err(err, err_len, "Invalid client class specified in buffer limit "
                                "configuration.");
                        return -EINVAL;
                }
                if (cfg_parse_size(w[i + 1], &hard) < 0 || cfg_parse_size(w[i + 2], &soft) < 0 ||
                    !is_count(w[i + 3], 0, INT64_MAX, &secs)) {
                        cfg_err(err, err_len, "Error in hard, soft or soft_seconds setting in "
                                "buffer limit configuration.");
                        return -EINVAL;
                }
                lim[k][0] = hard;
                lim[k][1] = soft;
                lim[k][2] = (unsigned long long)secs;
        }
        for (int k = 0; k < 3; k++)
                o += (size_t)snprintf(out + o, len - o, "%s%s %llu %llu %llu", k ? " " : "",
                                      cobl_class[k], lim[k][0], lim[k][1], lim[k][2]);
        return 0;
}

/* oom-score-adj-values: three numbers from -2000 to 2000. */
static int check_oom_values(const char *value, const char *cur, char *out, size_t len, char *err,
                            size_t err_len)
{
        char copy[128], *w[3];
        int n = strlen(value) < sizeof(copy) ? words_of(value, copy, w, 3) : -1;
        long long v[3];

        (void)cur;
        for (int i = 0; i < n; i++)
                if (!is_count(w[i], -2000, 2000, &v[i]))
                        n = -1;
        if (n != 3) {
                cfg_err(err, err_len, "expected three numbers from -2000 to 2000");
                return -EINVAL;
        }
        snprintf(out, len, "%lld %lld %lld", v[0], v[1], v[2]);
        return 0;
}

/* notify-keyspace-events: Redis's class letters, shown in Redis's order. */
static int check_notify(const char *value, const char *cur, char *out, size_t len, char *err,
                        size_t err_len)
{
        static const char all[] = "g$lshzxetd", order[] = "g$lshzxetdKEmn";
        bool on[sizeof(order)] = { false };
        size_t o = 0, n_all = 0;

        (void)cur;
        for (const char *p = value; *p; p++) {
                const char *at = *p == 'A' ? NULL : strchr(order, *p);

                if (*p == 'A') {
                        for (size_t i = 0; all[i]; i++)
                                on[i] = true;
                } else if (!at) {
                        cfg_err(err, err_len, "Invalid event class character '%c': use letters "
                                "of 'Ag$lshzxeKEtmdn'", *p);
                        return -EINVAL;
                } else {
                        on[at - order] = true;
                }
        }
        for (size_t i = 0; all[i]; i++)
                n_all += on[i];
        if (n_all == sizeof(all) - 1 && o + 1 < len)
                out[o++] = 'A';
        for (size_t i = 0; order[i] && o + 1 < len; i++)
                if (on[i] && (n_all != sizeof(all) - 1 || i >= sizeof(all) - 1))
                        out[o++] = order[i];
        out[o] = 0;
        return 0;
}

/* latency-tracking-info-percentiles: numbers from 0 to 100. */
static int check_percentiles(const char *value, const char *cur, char *out, size_t len, char *err,
                             size_t err_len)
{
        char copy[256], *w[16], *end;
        int n = strlen(value) < sizeof(copy) ? words_of(value, copy, w, 16) : -1;
        size_t o = 0;

        (void)cur;
        out[0] = 0;
        for (int i = 0; i < n; i++) {
                double v = strtod(w[i], &end);

                if (*end || !(v >= 0 && v <= 100))
                        n = -1;
                else
                        o += (size_t)snprintf(out + o, len - o, "%s%g", i ? " " : "", v);
        }
        if (n < 0) {
                cfg_err(err, err_len, "expected up to 16 percentiles from 0 to 100");
                return -EINVAL;
        }
        return 0;
}

/* shutdown-on-sigint/-sigterm: default, or save|nosave, now, force. */
static int check_shutdown(const char *value, const char *cur, char *out, size_t len, char *err,
                          size_t err_len)
{
        static const char *const flag[] = { "save", "nosave", "now", "force" };
        char copy[128], *w[8];
        int n = strlen(value) < sizeof(copy) ? words_of(value, copy, w, 8) : -1;
        bool on[4] = { false }, dflt = false;
        size_t o = 0;

        (void)cur;
        for (int i = 0; i < n; i++) {
                size_t k = 0;

                while (k < 4 && strcasecmp(w[i], flag[k]))
                        k++;
                if (k < 4)
                        on[k] = true;
                else if (!strcasecmp(w[i], "default"))
                        dflt = true;
                else
                        n = -1;
        }
        if (n <= 0 || (on[0] && on[1]) || (dflt && n > 1)) {
                cfg_err(err, err_len, "argument(s) must be one of the following: default, save, "
                        "nosave, now, force");
                return -EINVAL;
        }
        out[0] = 0;
        for (size_t k = 0; k < 4; k++)
                if (on[k])
                        o += (size_t)snprintf(out + o, len - o, "%s%s", o ? " " : "", flag[k]);
        if (!o)
                snprintf(out, len, "default");
        return 0;
}

/* replicaof: only "" (none), also spelt "no one" as REPLICAOF takes it. */
static int check_replicaof(const char *value, const char *cur, char *out, size_t len, char *err,
                           size_t err_len)
{
        (void)cur;
        (void)err;
        (void)err_len;
        snprintf(out, len, "%s", !strcasecmp(value, "no one") ? "" : value);
        return 0;
}

/* ---- defaults computed from scree's settings ---- */

static void derive_maxmemory(const struct scree_config *c, char *buf, size_t len)
{
        snprintf(buf, len, "%llu", (unsigned long long)c->memory);
}

static void derive_appendfsync(const struct scree_config *c, char *buf, size_t len)
{
        snprintf(buf, len, "%s", c->sync == CFG_SYNC_BATCH ? "always" : "everysec");
}

/* ---- the table ---- */

static const char *const level_words[] = { "error", "warning", "notice", "debug", NULL };
static const struct cfg_syn level_syn[] = {
        { "warn", 1 }, { "info", 2 }, { "verbose", 3 }, { NULL, 0 },
};
static const char *const fsync_words[] = { "always", "everysec", "no", NULL };
static const char *const policy_words[] = {
        "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
        "allkeys-lfu", "allkeys-random", "noeviction", NULL,
};
static const char *const pubsub_words[] = { "allchannels", "resetchannels", NULL };
static const char *const endpoint_words[] = { "ip", "hostname", "unknown-endpoint", NULL };
static const char *const protected_words[] = { "no", "yes", "local", NULL };
static const char *const oom_words[] = { "no", "yes", "relative", "absolute", NULL };
static const char *const propagation_words[] = { "ignore", "panic", "panic-on-replicas", NULL };
static const char *const diskless_words[] = { "disabled", "on-empty-db", "swapdb", NULL };
static const char *const sanitize_words[] = { "no", "yes", "clients", NULL };
static const char *const supervised_words[] = { "no", "upstart", "systemd", "auto", NULL };
static const char *const tls_auth_words[] = { "no", "yes", "optional", NULL };

#define NOOP (CFG_F_REDIS | CFG_F_NOOP | CFG_F_RUNTIME)        /* CONFIG SET may change it */
#define NOOP_RO (CFG_F_REDIS | CFG_F_NOOP)                     /* Redis reads it at start only */
#define OFF_ONLY (CFG_F_REDIS | CFG_F_OFF_ONLY)
#define IMAX ((uint64_t)INT64_MAX)
#define B(n, d, f) { .name = n, .type = CFG_BOOL, .flags = f, .dflt = d }
#define I(n, d, lo, hi, f) { .name = n, .type = CFG_INT, .flags = f, .dflt = d, \
                             .min = (uint64_t)(int64_t)(lo), .max = (uint64_t)(hi) }
#define M(n, d, lo, f) { .name = n, .type = CFG_SIZE, .flags = f, .dflt = d, .min = lo, \
                         .max = UINT64_MAX }
#define E(n, d, w, f) { .name = n, .type = CFG_ENUM, .flags = f, .dflt = d, .words = w }
#define S(n, d, f) { .name = n, .type = CFG_STRING, .flags = f, .dflt = d }
#define X(n, d, fn, f) { .name = n, .type = CFG_STRING, .flags = (f) | CFG_F_MULTI, .dflt = d, \
                         .check = fn }
#define ALIAS(n, t) { .name = n, .type = CFG_STRING, .alias_of = t }

const struct cfg_def cfg_redis_defs[] = {
        /* Aliases of scree settings. */
        { .name = "loglevel", .type = CFG_ENUM, .words = level_words, .syn = level_syn,
          .alias_of = "log-level" },
        ALIAS("proto-max-bulk-len", "max-value-bytes"),
        /* Persistence: scree logs every write to its commit log
         * (commitlog-sync); it has no RDB snapshots nor AOF files. */
        { .name = "save", .type = CFG_STRING, .flags = NOOP | CFG_F_MULTI, .dflt = "",
          .check = check_save, .help = "scree takes no snapshots, every write is in its commit log" },
        { .name = "appendonly", .type = CFG_BOOL, .flags = NOOP, .dflt = "yes",
          .help = "scree logs every write to its commit log, always" },
        { .name = "appendfsync", .type = CFG_ENUM, .flags = NOOP, .dflt = "always",
          .words = fsync_words, .derive = derive_appendfsync,
          .help = "the commit log syncs as commitlog-sync says" },
        S("appendfilename", "appendonly.aof", NOOP_RO),
        S("appenddirname", "appendonlydir", NOOP_RO),
        S("dbfilename", "dump.rdb", NOOP),
        B("rdbcompression", "yes", NOOP),
        B("rdbchecksum", "yes", NOOP_RO),
        B("rdb-del-sync-files", "no", NOOP),
        B("rdb-save-incremental-fsync", "yes", NOOP),
        B("stop-writes-on-bgsave-error", "yes", NOOP),
        B("no-appendfsync-on-rewrite", "no", NOOP),
        I("auto-aof-rewrite-percentage", "100", 0, INT32_MAX, NOOP),
        M("auto-aof-rewrite-min-size", "67108864", 0, NOOP),
        B("aof-load-truncated", "yes", NOOP),
        B("aof-use-rdb-preamble", "yes", NOOP),
        B("aof-rewrite-incremental-fsync", "yes", NOOP),
        B("aof-timestamp-enabled", "no", NOOP),
        B("aof-disable-auto-gc", "no", NOOP),
        /* Memory: scree's is bounded by --memory; data lives on disk. */
        { .name = "maxmemory", .type = CFG_SIZE, .flags = NOOP, .dflt = "0", .max = UINT64_MAX,
          .derive = derive_maxmemory,
          .help = "scree's memory is bounded by --memory, its data lives on disk" },
        { .name = "maxmemory-policy", .type = CFG_ENUM, .flags = NOOP, .dflt = "noeviction",
          .words = policy_words, .help = "scree never evicts keys" },
        I("maxmemory-samples", "5", 1, 64, NOOP),
        I("maxmemory-eviction-tenacity", "10", 0, 100, NOOP),
        M("client-query-buffer-limit", "1073741824", 1 << 20, NOOP),
        X("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub "
          "33554432 8388608 60", check_cobl, NOOP),
        B("lazyfree-lazy-eviction", "no", NOOP),
        B("lazyfree-lazy-expire", "no", NOOP),
        B("lazyfree-lazy-server-del", "no", NOOP),
        B("lazyfree-lazy-user-del", "no", NOOP),
        B("lazyfree-lazy-user-flush", "no", NOOP),
        B("activedefrag", "no", NOOP),
        M("active-defrag-ignore-bytes", "104857600", 1, NOOP),
        I("active-defrag-threshold-lower", "10", 0, 1000, NOOP),
        I("active-defrag-threshold-upper", "100", 0, 1000, NOOP),
        I("active-defrag-cycle-min", "1", 1, 99, NOOP),
        I("active-defrag-cycle-max", "25", 1, 99, NOOP),
        I("active-defrag-max-scan-fields", "1000", 1, IMAX, NOOP),
        B("jemalloc-bg-thread", "yes", NOOP),
        B("activerehashing", "yes", NOOP),
        I("active-expire-effort", "1", 1, 10, NOOP),
        I("lfu-log-factor", "10", 0, INT32_MAX, NOOP),
        I("lfu-decay-time", "1", 0, INT32_MAX, NOOP),
        B("disable-thp", "yes", NOOP_RO),
        E("oom-score-adj", "no", oom_words, NOOP),
        X("oom-score-adj-values", "0 200 800", check_oom_values, NOOP),
        /* Encodings of types scree stores as strings or lacks. */
        I("hash-max-listpack-entries", "512", 0, IMAX, NOOP),
        I("hash-max-listpack-value", "64", 0, IMAX, NOOP),
        ALIAS("hash-max-ziplist-entries", "hash-max-listpack-entries"),
        ALIAS("hash-max-ziplist-value", "hash-max-listpack-value"),
        I("list-max-listpack-size", "-2", INT32_MIN, INT32_MAX, NOOP),
        ALIAS("list-max-ziplist-size", "list-max-listpack-size"),
        I("list-compress-depth", "0", 0, INT32_MAX, NOOP),
        I("set-max-intset-entries", "512", 0, IMAX, NOOP),
        I("zset-max-listpack-entries", "128", 0, IMAX, NOOP),
        I("zset-max-listpack-value", "64", 0, IMAX, NOOP),
        ALIAS("zset-max-ziplist-entries", "zset-max-listpack-entries"),
        ALIAS("zset-max-ziplist-value", "zset-max-listpack-value"),
        M("hll-sparse-max-bytes", "3000", 0, NOOP),
        M("stream-node-max-bytes", "4096", 0, NOOP),
        I("stream-node-max-entries", "100", 0, IMAX, NOOP),
        /* Scripting, notifications, tracking, latency: features scree lacks
         * whose settings clients set anyway. */
        I("busy-reply-threshold", "5000", 0, IMAX, NOOP),
        ALIAS("lua-time-limit", "busy-reply-threshold"),
        X("notify-keyspace-events", "", check_notify, NOOP),
        I("tracking-table-max-keys", "1000000", 0, IMAX, NOOP),
        I("latency-monitor-threshold", "0", 0, IMAX, NOOP),
        B("latency-tracking", "yes", NOOP),
        X("latency-tracking-info-percentiles", "50 99 99.9", check_percentiles, NOOP),
        I("acllog-max-len", "128", 0, IMAX, NOOP),
        E("acl-pubsub-default", "resetchannels", pubsub_words, NOOP),
        /* The process: scree runs in the foreground and logs to stderr. */
        { .name = "daemonize", .type = CFG_BOOL, .flags = NOOP_RO, .dflt = "no",
          .help = "scree runs in the foreground (start it from a supervisor)" },
        E("supervised", "no", supervised_words, NOOP_RO),
        { .name = "pidfile", .type = CFG_STRING, .flags = NOOP_RO, .dflt = "",
          .help = "scree writes no pid file (its data directory's LOCK holds its pid)" },
        { .name = "syslog-enabled", .type = CFG_BOOL, .flags = NOOP_RO, .dflt = "no",
          .help = "scree logs to standard error or its logfile" },
        S("syslog-ident", "redis", NOOP_RO),
        S("syslog-facility", "local0", NOOP_RO),
        B("always-show-logo", "no", NOOP_RO),
        B("set-proc-title", "yes", NOOP_RO),
        S("proc-title-template", "{title} {listen-addr} {server-mode}", NOOP),
        B("crash-log-enabled", "yes", NOOP),
        B("crash-memcheck-enabled", "yes", NOOP),
        I("hz", "10", 1, 500, NOOP),
        B("dynamic-hz", "yes", NOOP),
        { .name = "io-threads", .type = CFG_INT, .flags = NOOP_RO, .dflt = "1", .min = 1,
          .max = 128, .help = "each shard does its own I/O (--smp sets the shards)" },
        B("io-threads-do-reads", "no", NOOP_RO),
        S("server_cpulist", "", NOOP_RO),
        S("bio_cpulist", "", NOOP_RO),
        S("aof_rewrite_cpulist", "", NOOP_RO),
        S("bgsave_cpulist", "", NOOP_RO),
        X("shutdown-on-sigint", "default", check_shutdown, NOOP),
        X("shutdown-on-sigterm", "default", check_shutdown, NOOP),
        I("shutdown-timeout", "10", 0, INT32_MAX, NOOP),
        E("enable-protected-configs", "no", protected_words, NOOP_RO),
        E("enable-module-command", "no", protected_words, NOOP_RO),
        S("ignore-warnings", "", NOOP),
        E("sanitize-dump-payload", "no", sanitize_words, NOOP),
        E("propagation-error-behavior", "ignore", propagation_words, NOOP),
        /* The network. */
        { .name = "databases", .type = CFG_INT, .flags = NOOP_RO | CFG_F_FIXED, .dflt = "16",
          .min = 1, .max = INT32_MAX, .help = "scree serves 16 databases (SELECT 0..15)" },
        I("tcp-backlog", "511", 0, INT32_MAX, NOOP_RO),
        I("tcp-keepalive", "300", 0, INT32_MAX, NOOP),
        S("bind-source-addr", "", NOOP),
        I("socket-mark-id", "0", 0, UINT32_MAX, NOOP_RO),
        { .name = "unixsocket", .type = CFG_STRING, .flags = OFF_ONLY, .dflt = "",
          .help = "scree listens on TCP only" },
        I("unixsocketperm", "0", 0, 0777, NOOP_RO),
        { .name = "aclfile", .type = CFG_STRING, .flags = OFF_ONLY, .dflt = "",
          .help = "scree has no ACL users (only requirepass)" },
        { .name = "tls-port", .type = CFG_INT, .flags = OFF_ONLY, .dflt = "0", .max = 65535,
          .help = "scree has no TLS" },
        E("tls-auth-clients", "yes", tls_auth_words, NOOP),
        S("tls-cert-file", "", NOOP),
        S("tls-key-file", "", NOOP),
        S("tls-key-file-pass", "", NOOP | CFG_F_SECRET),
        S("tls-client-cert-file", "", NOOP),
        S("tls-client-key-file", "", NOOP),
        S("tls-client-key-file-pass", "", NOOP | CFG_F_SECRET),
        S("tls-dh-params-file", "", NOOP),
        S("tls-ca-cert-file", "", NOOP),
        S("tls-ca-cert-dir", "", NOOP),
        S("tls-protocols", "", NOOP),
        S("tls-ciphers", "", NOOP),
        S("tls-ciphersuites", "", NOOP),
        B("tls-prefer-server-ciphers", "no", NOOP),
        B("tls-session-caching", "yes", NOOP),
        I("tls-session-cache-size", "20480", 0, INT32_MAX, NOOP),
        I("tls-session-cache-timeout", "300", 0, INT32_MAX, NOOP),
        B("tls-replication", "no", NOOP),
        B("tls-cluster", "no", NOOP),
        /* Replication: scree is always a lone master. */
        { .name = "replicaof", .type = CFG_STRING, .flags = OFF_ONLY | CFG_F_MULTI, .dflt = "",
          .check = check_replicaof, .help = "scree has no replication" },
        ALIAS("slaveof", "replicaof"),
        S("masterauth", "", NOOP | CFG_F_SECRET),
        S("masteruser", "", NOOP),
        B("replica-serve-stale-data", "yes", NOOP),
        ALIAS("slave-serve-stale-data", "replica-serve-stale-data"),
        B("replica-read-only", "yes", NOOP),
        ALIAS("slave-read-only", "replica-read-only"),
        B("replica-lazy-flush", "no", NOOP),
        ALIAS("slave-lazy-flush", "replica-lazy-flush"),
        I("replica-priority", "100", 0, INT32_MAX, NOOP),
        ALIAS("slave-priority", "replica-priority"),
        B("replica-ignore-maxmemory", "yes", NOOP),
        ALIAS("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
        S("replica-announce-ip", "", NOOP),
        ALIAS("slave-announce-ip", "replica-announce-ip"),
        I("replica-announce-port", "0", 0, 65535, NOOP),
        ALIAS("slave-announce-port", "replica-announce-port"),
        B("replica-announced", "yes", NOOP),
        B("replica-ignore-disk-write-errors", "no", NOOP),
        I("min-replicas-to-write", "0", 0, INT32_MAX, NOOP),
        ALIAS("min-slaves-to-write", "min-replicas-to-write"),
        I("min-replicas-max-lag", "10", 0, INT32_MAX, NOOP),
        ALIAS("min-slaves-max-lag", "min-replicas-max-lag"),
        M("repl-backlog-size", "1048576", 1, NOOP),
        I("repl-backlog-ttl", "3600", 0, INT32_MAX, NOOP),
        I("repl-timeout", "60", 1, INT32_MAX, NOOP),
        I("repl-ping-replica-period", "10", 1, INT32_MAX, NOOP),
        ALIAS("repl-ping-slave-period", "repl-ping-replica-period"),
        B("repl-disable-tcp-nodelay", "no", NOOP),
        B("repl-diskless-sync", "yes", NOOP),
        I("repl-diskless-sync-delay", "5", 0, INT32_MAX, NOOP),
        I("repl-diskless-sync-max-replicas", "0", 0, INT32_MAX, NOOP),
        E("repl-diskless-load", "disabled", diskless_words, NOOP),
        /* Cluster: scree is not a Redis Cluster node. */
        { .name = "cluster-enabled", .type = CFG_BOOL, .flags = OFF_ONLY, .dflt = "no",
          .help = "scree has no cluster mode (it shards inside one server)" },
        S("cluster-config-file", "nodes.conf", NOOP_RO),
        I("cluster-port", "0", 0, 65535, NOOP_RO),
        I("cluster-node-timeout", "15000", 0, IMAX, NOOP),
        I("cluster-migration-barrier", "1", 0, INT32_MAX, NOOP),
        B("cluster-allow-replica-migration", "yes", NOOP),
        I("cluster-replica-validity-factor", "10", 0, INT32_MAX, NOOP),
        ALIAS("cluster-slave-validity-factor", "cluster-replica-validity-factor"),
        B("cluster-replica-no-failover", "no", NOOP),
        ALIAS("cluster-slave-no-failover", "cluster-replica-no-failover"),
        B("cluster-require-full-coverage", "yes", NOOP),
        B("cluster-allow-reads-when-down", "no", NOOP),
        B("cluster-allow-pubsubshard-when-down", "yes", NOOP),
        S("cluster-announce-ip", "", NOOP),
        S("cluster-announce-hostname", "", NOOP),
        I("cluster-announce-port", "0", 0, 65535, NOOP),
        I("cluster-announce-bus-port", "0", 0, 65535, NOOP),
        I("cluster-announce-tls-port", "0", 0, 65535, NOOP),
        E("cluster-preferred-endpoint-type", "ip", endpoint_words, NOOP),
        M("cluster-link-sendbuf-limit", "0", 0, NOOP),
        /* Redis's hidden (debugging) settings: CONFIG GET shows them only
         * by name. */
        I("key-load-delay", "0", INT32_MIN, INT32_MAX, NOOP | CFG_F_HIDDEN),
        I("rdb-key-save-delay", "0", INT32_MIN, INT32_MAX, NOOP | CFG_F_HIDDEN),
        M("loading-process-events-interval-bytes", "2097152", 1024, NOOP | CFG_F_HIDDEN),
};

const size_t cfg_redis_n = sizeof(cfg_redis_defs) / sizeof(cfg_redis_defs[0]);
