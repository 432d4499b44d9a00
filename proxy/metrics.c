/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters and the Prometheus text exposition (metrics.h): every
 * worker's counters summed, the origin latency histogram with cumulative
 * buckets, and the engine's own counters (scree_stats) as
 * scree_proxy_engine_*.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/buf.h"
#include "proxy/metrics.h"
#include "proxy/proxy_int.h"

/* Upper bounds of the latency buckets, microseconds. */
static const uint64_t lat_bound_us[PX_LAT_BUCKETS] = {
        1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000,
        10000000,
};

void px_stats_latency(struct px_stats *s, uint64_t ns)
{
        uint64_t us = ns / 1000;
        unsigned i = 0;

        while (i < PX_LAT_BUCKETS && us > lat_bound_us[i])
                i++;
        PX_STAT_INC(s->lat[i]);
        PX_STAT_ADD(s->lat_sum_us, us);
}

void px_stats_status(struct px_stats *s, unsigned status)
{
        unsigned k = status / 100;

        if (k >= 1 && k <= 5)
                PX_STAT_INC(s->status[k]);
}

/* The sum over every worker of the counter at offset off in px_stats. */
static uint64_t sum(const struct px_shared *sh, size_t off)
{
        uint64_t v = 0;

        for (unsigned i = 0; i < sh->n_workers; i++) {
                const _Atomic uint64_t *c =
                        (const _Atomic uint64_t *)(const void *)((const char *)&sh->workers[i]->stats + off);

                v += atomic_load_explicit(c, memory_order_relaxed);
        }
        return v;
}

#define SUM(field) sum(sh, offsetof(struct px_stats, field))

struct metric {
        const char *name, *type, *help;
        size_t off;
};

static const struct metric scalar[] = {
        { "scree_proxy_requests_total", "counter", "Requests parsed.",
          offsetof(struct px_stats, requests) },
        { "scree_proxy_cache_hits_total", "counter", "Requests answered from the cache.",
          offsetof(struct px_stats, hits) },
        { "scree_proxy_cache_misses_total", "counter",
          "Cacheable requests fetched from the origin.", offsetof(struct px_stats, misses) },
        { "scree_proxy_cache_bypasses_total", "counter",
          "Requests passed to the origin without the cache (method, no-cache, no-store, "
          "Authorization, Range).", offsetof(struct px_stats, bypasses) },
        { "scree_proxy_cache_collapsed_total", "counter",
          "Misses answered from another request's origin fetch.",
          offsetof(struct px_stats, collapsed) },
        { "scree_proxy_collapsed_waiting", "gauge",
          "Requests waiting now for another request's origin fetch.",
          offsetof(struct px_stats, waiting) },
        { "scree_proxy_purges_total", "counter", "PURGE requests.",
          offsetof(struct px_stats, purges) },
        { "scree_proxy_purged_objects_total", "counter", "Objects PURGE deleted.",
          offsetof(struct px_stats, purged) },
        { "scree_proxy_origin_requests_total", "counter", "Requests sent to the origins.",
          offsetof(struct px_stats, origin_requests) },
        { "scree_proxy_origin_errors_total", "counter",
          "Origin failures: refused or failed connections, timeouts, bad or broken responses.",
          offsetof(struct px_stats, origin_errors) },
        { "scree_proxy_stores_total", "counter", "Responses stored in the cache.",
          offsetof(struct px_stats, stores) },
        { "scree_proxy_store_errors_total", "counter", "Stores the cache refused.",
          offsetof(struct px_stats, store_errors) },
        { "scree_proxy_not_stored_total", "counter",
          "Responses to cacheable requests not stored (rules, size).",
          offsetof(struct px_stats, not_stored) },
        { "scree_proxy_cache_errors_total", "counter",
          "Cache reads that failed (answered from the origin).",
          offsetof(struct px_stats, cache_errors) },
        { "scree_proxy_bad_requests_total", "counter", "Requests refused (400, 413, 431, 501).",
          offsetof(struct px_stats, bad_requests) },
        { "scree_proxy_timeouts_total", "counter",
          "Client connections closed by a header, idle or write timeout.",
          offsetof(struct px_stats, timeouts) },
        { "scree_proxy_connections", "gauge", "Client connections open.",
          offsetof(struct px_stats, conns) },
        { "scree_proxy_connections_accepted_total", "counter", "Client connections accepted.",
          offsetof(struct px_stats, accepted) },
};

static int header(struct px_buf *out, const char *name, const char *type, const char *help)
{
        return px_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int render_own(const struct px_shared *sh, struct px_buf *out)
{
        uint64_t cum = 0;
        int e = 0;

        for (size_t i = 0; e == 0 && i < sizeof(scalar) / sizeof(scalar[0]); i++) {
                e = header(out, scalar[i].name, scalar[i].type, scalar[i].help);
                if (e == 0)
                        e = px_buf_printf(out, "%s %llu\n", scalar[i].name,
                                          (unsigned long long)sum(sh, scalar[i].off));
        }
        if (e == 0)
                e = header(out, "scree_proxy_served_bytes_total", "counter",
                           "Response bytes sent, by where they came from.");
        if (e == 0)
                e = px_buf_printf(out,
                                  "scree_proxy_served_bytes_total{source=\"cache\"} %llu\n"
                                  "scree_proxy_served_bytes_total{source=\"origin\"} %llu\n",
                                  (unsigned long long)SUM(bytes_cache),
                                  (unsigned long long)SUM(bytes_origin));
        if (e == 0)
                e = header(out, "scree_proxy_responses_total", "counter",
                           "Responses by status class.");
        for (unsigned k = 1; e == 0 && k <= 5; k++)
                e = px_buf_printf(out, "scree_proxy_responses_total{code=\"%uxx\"} %llu\n", k,
                                  (unsigned long long)SUM(status[k]));
        if (e == 0)
                e = header(out, "scree_proxy_origin_duration_seconds", "histogram",
                           "Origin exchanges, request sent to response complete.");
        for (unsigned i = 0; e == 0 && i <= PX_LAT_BUCKETS; i++) {
                cum += sum(sh, offsetof(struct px_stats, lat) + i * sizeof(uint64_t));
                if (i < PX_LAT_BUCKETS)
                        e = px_buf_printf(out,
                                          "scree_proxy_origin_duration_seconds_bucket{le=\"%llu.%06llu\"} %llu\n",
                                          (unsigned long long)(lat_bound_us[i] / 1000000),
                                          (unsigned long long)(lat_bound_us[i] % 1000000),
                                          (unsigned long long)cum);
                else
                        e = px_buf_printf(out,
                                          "scree_proxy_origin_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                                          "scree_proxy_origin_duration_seconds_sum %llu.%06llu\n"
                                          "scree_proxy_origin_duration_seconds_count %llu\n",
                                          (unsigned long long)cum,
                                          (unsigned long long)(SUM(lat_sum_us) / 1000000),
                                          (unsigned long long)(SUM(lat_sum_us) % 1000000),
                                          (unsigned long long)cum);
        }
        return e;
}

struct engine_out {
        struct px_buf *out;
        int e;
};

static void engine_stat(void *arg, const char *name, uint64_t value)
{
        struct engine_out *eo = arg;
        char clean[96];
        size_t n = 0;

        for (const char *p = name; *p && n < sizeof(clean) - 1; p++)
                clean[n++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                                     (*p >= '0' && *p <= '9') ? *p : '_';
        clean[n] = 0;
        if (eo->e == 0)
                eo->e = px_buf_printf(eo->out, "# TYPE scree_proxy_engine_%s untyped\n"
                                      "scree_proxy_engine_%s %llu\n", clean, clean,
                                      (unsigned long long)value);
}

int px_metrics_render(const struct px_shared *sh, struct px_buf *out)
{
        struct engine_out eo = { .out = out };
        int e = px_buf_printf(out, "# HELP scree_proxy_info The proxy's version and layout.\n"
                              "# TYPE scree_proxy_info gauge\n"
                              "scree_proxy_info{version=\"%s\",threads=\"%u\",shards=\"%u\"} 1\n",
                              SCREE_VERSION, sh->n_workers, scree_shards(sh->db));

        if (e == 0)
                e = render_own(sh, out);
        if (e == 0)
                scree_stats(sh->db, engine_stat, &eo);
        return e ? e : eo.e;
}
