/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The command line (config.h): getopt_long over the options docs/proxy.md
 * lists, each value checked here so that a bad one stops the program
 * before it opens anything, with a message naming the option; and the
 * options the cache's database is opened with.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree.h>

#include "proxy/config.h"

static const char usage[] =
        "Usage: scree-proxy --origin HOST:PORT [--origin ...] --dir DIR [options]\n"
        "An HTTP/1.1 caching reverse proxy that keeps its cache in scree.\n"
        "\n"
        "  --listen HOST:PORT       where clients connect (default 127.0.0.1:8080;\n"
        "                           port 0 picks a free one, printed at start)\n"
        "  --origin HOST:PORT       an origin server; repeat for several (round\n"
        "                           robin, the next one when one fails)\n"
        "  --dir DIR                the cache's scree database directory\n"
        "  --threads N              worker threads (default: the CPUs the shards\n"
        "                           leave, at least 1)\n"
        "  --shards N               scree shard threads (default: as DIR was made,\n"
        "                           else half the CPUs, at least 1)\n"
        "  --memory SIZE            scree's memory budget (default 1g)\n"
        "  --default-ttl SECONDS    freshness of responses that give none (default 60;\n"
        "                           0: store only responses that give one)\n"
        "  --max-object SIZE        largest body cached (default 8m, at most 15.75m);\n"
        "                           larger ones pass through\n"
        "  --metrics-port [HOST:]PORT  serve GET /metrics (Prometheus text) there\n"
        "  --sync periodic|batch    scree commit-log sync (default periodic: fast;\n"
        "                           batch: every stored object is on disk first)\n"
        "  --max-header SIZE        request line and headers limit (default 16k; 431)\n"
        "  --max-body SIZE          request body limit (default 1m; 413)\n"
        "  --header-timeout SECONDS time to receive a request's headers (default 10)\n"
        "  --idle-timeout SECONDS   keep-alive idle time and write stall limit (default 60)\n"
        "  --origin-timeout SECONDS origin connect and response inactivity (default 30)\n"
        "  --purge-from local|any|none  who may send PURGE (default local: loopback)\n"
        "  --idle-poll-us N         how long an idle shard polls before it sleeps,\n"
        "                           1..1000000 (default 1; higher: quicker wake-ups\n"
        "                           for more CPU)\n"
        "  --help, --version\n"
        "\n"
        "Sizes take k, m, g (KiB, MiB, GiB). See docs/proxy.md.\n";

enum {
        OPT_LISTEN = 256, OPT_ORIGIN, OPT_DIR, OPT_THREADS, OPT_SHARDS, OPT_MEMORY,
        OPT_DEFAULT_TTL, OPT_MAX_OBJECT, OPT_METRICS_PORT, OPT_SYNC, OPT_MAX_HEADER,
        OPT_MAX_BODY, OPT_HEADER_TIMEOUT, OPT_IDLE_TIMEOUT, OPT_ORIGIN_TIMEOUT, OPT_PURGE_FROM,
        OPT_IDLE_POLL_US, OPT_HELP, OPT_VERSION,
};

static const struct option options[] = {
        { "listen", required_argument, NULL, OPT_LISTEN },
        { "origin", required_argument, NULL, OPT_ORIGIN },
        { "dir", required_argument, NULL, OPT_DIR },
        { "threads", required_argument, NULL, OPT_THREADS },
        { "shards", required_argument, NULL, OPT_SHARDS },
        { "memory", required_argument, NULL, OPT_MEMORY },
        { "default-ttl", required_argument, NULL, OPT_DEFAULT_TTL },
        { "max-object", required_argument, NULL, OPT_MAX_OBJECT },
        { "metrics-port", required_argument, NULL, OPT_METRICS_PORT },
        { "sync", required_argument, NULL, OPT_SYNC },
        { "max-header", required_argument, NULL, OPT_MAX_HEADER },
        { "max-body", required_argument, NULL, OPT_MAX_BODY },
        { "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
        { "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
        { "origin-timeout", required_argument, NULL, OPT_ORIGIN_TIMEOUT },
        { "purge-from", required_argument, NULL, OPT_PURGE_FROM },
        { "idle-poll-us", required_argument, NULL, OPT_IDLE_POLL_US },
        { "help", no_argument, NULL, OPT_HELP },
        { "version", no_argument, NULL, OPT_VERSION },
        { NULL, 0, NULL, 0 },
};

static int fail(char *err, size_t err_len, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t err_len, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

int px_hostport_parse(const char *s, struct px_hostport *ret)
{
        const char *colon = strrchr(s, ':');
        const char *host = s, *host_end = colon;
        char *end;
        unsigned long port;

        if (!colon) {
                host = "127.0.0.1";
                host_end = host + strlen(host);
                colon = s - 1;
        } else if (colon == s) {
                host = "127.0.0.1";
                host_end = host + strlen(host);
        } else if (s[0] == '[') {
                if (colon[-1] != ']')
                        return -EINVAL;
                host = s + 1;
                host_end = colon - 1;
        } else if (memchr(s, ':', (size_t)(colon - s))) {
                return -EINVAL;         /* a bare IPv6 address needs [] */
        }
        errno = 0;
        port = strtoul(colon + 1, &end, 10);
        if (errno || end == colon + 1 || *end || port > 65535 || colon[1] == '-' ||
            host_end <= host || (size_t)(host_end - host) >= sizeof(ret->host))
                return -EINVAL;
        memcpy(ret->host, host, (size_t)(host_end - host));
        ret->host[host_end - host] = 0;
        ret->port = (uint16_t)port;
        return 0;
}

/* A size: digits, then k/m/g (binary) with an optional b/ib. */
static int size_parse(const char *s, uint64_t *ret)
{
        char *end;
        unsigned long long v;
        uint64_t mul = 1;

        errno = 0;
        if (!*s || *s == '-')
                return -EINVAL;
        v = strtoull(s, &end, 10);
        if (errno || end == s)
                return -EINVAL;
        switch (*end | 0x20) {
        case 'k': mul = 1ull << 10; end++; break;
        case 'm': mul = 1ull << 20; end++; break;
        case 'g': mul = 1ull << 30; end++; break;
        default: break;
        }
        if (mul > 1 && (*end | 0x20) == 'i')
                end++;
        if (mul > 1 && (*end | 0x20) == 'b')
                end++;
        if (*end || v > UINT64_MAX / mul)
                return -EINVAL;
        *ret = v * mul;
        return 0;
}

/* Seconds (decimals allowed) as nanoseconds, 0 < value <= a day. */
static int seconds_parse(const char *s, uint64_t *ret_ns)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v > 0) || v > 86400)
                return -EINVAL;
        *ret_ns = (uint64_t)(v * 1e9);
        return 0;
}

static int count_parse(const char *s, unsigned lo, unsigned hi, unsigned *ret)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || *s == '-' || v < lo || v > hi)
                return -EINVAL;
        *ret = (unsigned)v;
        return 0;
}

static void defaults(struct px_config *c)
{
        *c = (struct px_config){
                .listen = { .host = "127.0.0.1", .port = 8080 },
                .default_ttl_s = 60,
                .max_object_bytes = 8u << 20,
                .max_header_bytes = 16u << 10,
                .max_body_bytes = 1u << 20,
                .header_timeout_ns = 10ull * 1000000000,
                .idle_timeout_ns = 60ull * 1000000000,
                .origin_timeout_ns = 30ull * 1000000000,
                .idle_poll_us = PX_IDLE_POLL_US,
        };
}

/* One option (opt, its value arg) into c. 0 or -EINVAL with err. */
static int one(struct px_config *c, int opt, const char *arg, char *err, size_t n)
{
        uint64_t v;

        switch (opt) {
        case OPT_LISTEN:
                if (px_hostport_parse(arg, &c->listen) < 0)
                        return fail(err, n, "--listen %s: want HOST:PORT", arg);
                return 0;
        case OPT_ORIGIN:
                if (c->n_origins == PX_MAX_ORIGINS)
                        return fail(err, n, "at most %d --origin", PX_MAX_ORIGINS);
                if (px_hostport_parse(arg, &c->origins[c->n_origins]) < 0 ||
                    c->origins[c->n_origins].port == 0)
                        return fail(err, n, "--origin %s: want HOST:PORT", arg);
                c->n_origins++;
                return 0;
        case OPT_DIR:
                if (!*arg)
                        return fail(err, n, "--dir: an empty path");
                c->dir = arg;
                return 0;
        case OPT_THREADS:
                if (count_parse(arg, 1, 1024, &c->threads) < 0)
                        return fail(err, n, "--threads %s: want 1..1024", arg);
                return 0;
        case OPT_SHARDS:
                if (count_parse(arg, 1, 256, &c->shards) < 0)
                        return fail(err, n, "--shards %s: want 1..256", arg);
                return 0;
        case OPT_MEMORY:
                if (size_parse(arg, &v) < 0)
                        return fail(err, n, "--memory %s: want a size (e.g. 512m)", arg);
                c->memory = arg;
                return 0;
        case OPT_DEFAULT_TTL:
                if (size_parse(arg, &c->default_ttl_s) < 0 || strpbrk(arg, "kKmMgG") ||
                    c->default_ttl_s > 10ull * 365 * 86400)
                        return fail(err, n, "--default-ttl %s: want seconds, 0..315360000", arg);
                return 0;
        case OPT_MAX_OBJECT:
                if (size_parse(arg, &c->max_object_bytes) < 0 ||
                    c->max_object_bytes > PX_MAX_OBJECT_LIMIT)
                        return fail(err, n, "--max-object %s: want a size up to %llu bytes",
                                    arg, (unsigned long long)PX_MAX_OBJECT_LIMIT);
                return 0;
        case OPT_METRICS_PORT:
                if (px_hostport_parse(arg, &c->metrics_at) < 0)
                        return fail(err, n, "--metrics-port %s: want [HOST:]PORT", arg);
                c->metrics = true;
                return 0;
        case OPT_SYNC:
                if (strcmp(arg, "batch") && strcmp(arg, "periodic"))
                        return fail(err, n, "--sync %s: want batch or periodic", arg);
                c->sync_batch = strcmp(arg, "batch") == 0;
                return 0;
        case OPT_MAX_HEADER:
                if (size_parse(arg, &c->max_header_bytes) < 0 || c->max_header_bytes < 256 ||
                    c->max_header_bytes > (1u << 20))
                        return fail(err, n, "--max-header %s: want 256 bytes to 1m", arg);
                return 0;
        case OPT_MAX_BODY:
                if (size_parse(arg, &c->max_body_bytes) < 0 || c->max_body_bytes > (1ull << 30))
                        return fail(err, n, "--max-body %s: want a size up to 1g", arg);
                return 0;
        case OPT_HEADER_TIMEOUT:
                if (seconds_parse(arg, &c->header_timeout_ns) < 0)
                        return fail(err, n, "--header-timeout %s: want seconds (0, 86400]", arg);
                return 0;
        case OPT_IDLE_TIMEOUT:
                if (seconds_parse(arg, &c->idle_timeout_ns) < 0)
                        return fail(err, n, "--idle-timeout %s: want seconds (0, 86400]", arg);
                return 0;
        case OPT_ORIGIN_TIMEOUT:
                if (seconds_parse(arg, &c->origin_timeout_ns) < 0)
                        return fail(err, n, "--origin-timeout %s: want seconds (0, 86400]", arg);
                return 0;
        case OPT_PURGE_FROM:
                if (!strcmp(arg, "local"))
                        c->purge_from = PX_PURGE_LOCAL;
                else if (!strcmp(arg, "any"))
                        c->purge_from = PX_PURGE_ANY;
                else if (!strcmp(arg, "none"))
                        c->purge_from = PX_PURGE_NONE;
                else
                        return fail(err, n, "--purge-from %s: want local, any or none", arg);
                return 0;
        case OPT_IDLE_POLL_US:
                if (count_parse(arg, 1, 1000000, &c->idle_poll_us) < 0)
                        return fail(err, n, "--idle-poll-us %s: want 1..1000000", arg);
                return 0;
        default:
                return fail(err, n, "unknown option (see --help)");
        }
}

int px_config_parse(int argc, char **argv, struct px_config *cfg, char *err, size_t err_len)
{
        struct px_config c;
        int opt;

        defaults(&c);
        opterr = 0;
        optind = 1;
        while ((opt = getopt_long(argc, argv, ":", options, NULL)) != -1) {
                if (opt == OPT_HELP) {
                        fputs(usage, stdout);
                        return 1;
                }
                if (opt == OPT_VERSION) {
                        printf("scree-proxy %s\n", SCREE_VERSION);
                        return 1;
                }
                if (opt == ':')
                        return fail(err, err_len, "%s needs a value", argv[optind - 1]);
                if (opt == '?')
                        return fail(err, err_len, "unknown option %s (see --help)",
                                    argv[optind - 1]);
                if (one(&c, opt, optarg, err, err_len) < 0)
                        return -EINVAL;
        }
        if (optind < argc)
                return fail(err, err_len, "unexpected argument '%s' (see --help)", argv[optind]);
        if (c.n_origins == 0)
                return fail(err, err_len, "no --origin given (see --help)");
        if (!c.dir)
                return fail(err, err_len, "no --dir given: where the cache lives (see --help)");
        *cfg = c;
        return 0;
}

int px_config_db_options(const struct px_config *cfg, unsigned shards, scree_options *o)
{
        char v[32];
        int r;

        /* shards 0: the count the cache was made with */
        snprintf(v, sizeof(v), "%u", shards);
        r = shards ? scree_options_set(o, "smp", v) : 0;
        if (r == 0 && cfg->memory)
                r = scree_options_set(o, "memory", cfg->memory);
        if (r == 0)
                r = scree_options_set(o, "commitlog-sync", cfg->sync_batch ? "batch" : "periodic");
        snprintf(v, sizeof(v), "%llu", (unsigned long long)(cfg->max_object_bytes + 256 * 1024));
        if (r == 0)
                r = scree_options_set(o, "max-value-bytes", v);
        snprintf(v, sizeof(v), "%u", cfg->idle_poll_us);
        if (r == 0)
                r = scree_options_set(o, "idle-poll-us", v);
        return r;
}
