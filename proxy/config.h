/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-proxy's settings: the command line (docs/proxy.md, "Running
 * it"), parsed into a struct px_config that the main thread fills once
 * and the workers then only read.
 */
#ifndef SCREE_PROXY_CONFIG_H
#define SCREE_PROXY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <scree/scree.h>

#define PX_MAX_ORIGINS 64
#define PX_HOST_BYTES 256

/* Who may PURGE. */
enum px_purge_from {
        PX_PURGE_LOCAL = 0,     /* loopback peers only (the default) */
        PX_PURGE_ANY,
        PX_PURGE_NONE,
};

struct px_hostport {
        char host[PX_HOST_BYTES];       /* as given, without [] around IPv6 */
        uint16_t port;
};

struct px_config {
        struct px_hostport listen;
        struct px_hostport origins[PX_MAX_ORIGINS];
        unsigned n_origins;
        const char *dir;
        unsigned threads;               /* 0: the CPUs the shards leave, at least 1 */
        unsigned shards;                /* 0: as the directory was made, else half the CPUs */
        const char *memory;             /* NULL: the library's default */
        uint64_t default_ttl_s;
        uint64_t max_object_bytes;
        bool metrics;
        struct px_hostport metrics_at;
        bool sync_batch;
        uint64_t max_header_bytes, max_body_bytes;
        uint64_t header_timeout_ns, idle_timeout_ns, origin_timeout_ns;
        enum px_purge_from purge_from;
        unsigned idle_poll_us;          /* scree's idle-poll-us for the shards */
};

/* The shards' idle polling unless --idle-poll-us says otherwise: as good
 * as none. The workers do the network I/O and the shards only answer
 * reads and writes from memory, so a shard polling between two of them
 * takes the CPU from the workers (and the clients) that would give it
 * work. Measured on 2 CPUs (1 worker, 1 shard, wrk on the same machine):
 * hits of 1 KiB +20% against scree's default of 50 us, hits of 100 KiB
 * even (docs/proxy.md). */
#define PX_IDLE_POLL_US 1u

/* The largest --max-object: the library's value limit less room for the
 * stored head (object.h). */
#define PX_MAX_OBJECT_LIMIT ((uint64_t)16 * 1024 * 1024 - 256 * 1024)

/*
 * Parses argv into *cfg (strings point into argv). Returns 0; 1 when
 * --help or --version printed its text to stdout (exit 0); or -EINVAL
 * with a one-line message in err (err_len bytes) for bad arguments
 * (exit 2).
 */
int px_config_parse(int argc, char **argv, struct px_config *cfg, char *err, size_t err_len);

/*
 * Sets the options scree_open gets from cfg on o (the caller's): shards
 * (0: the count the cache was made with), memory, commit-log sync, the
 * value limit (--max-object and room for the stored head) and the shards'
 * idle polling. 0, or the error scree_options_set gave.
 */
int px_config_db_options(const struct px_config *cfg, unsigned shards, scree_options *o);

/* Parses "host:port", "[v6]:port" or ":port"/"port" (host 127.0.0.1)
 * into *ret. 0 or -EINVAL. */
int px_hostport_parse(const char *s, struct px_hostport *ret);

#endif
