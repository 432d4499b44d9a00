/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-proxy: an HTTP/1.1 caching reverse proxy on libscree
 * (docs/proxy.md). The main thread parses the command line (bad
 * arguments: a message and exit status 2), resolves the origins, binds
 * one SO_REUSEPORT listening socket per worker (and the metrics one),
 * opens the cache's scree database and its table (/proxy/objects:
 * byte-string keys, ordered), starts the workers (worker.h), prints the
 * line "scree-proxy: listening on HOST:PORT ...", and waits for SIGINT or
 * SIGTERM; then it stops the workers (each closes its connections and
 * waits for its scree operations), closes the table and the database
 * (every acknowledged store is in its commit log) and exits 0. A failure
 * to start exits 1 with a line naming the cause.
 *
 * The shard count of a scree database is fixed when it is made: a cache
 * that exists opens with its own (the library reads it from the catalog),
 * a new one with --shards or half the CPUs.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree.h>

#include "proxy/config.h"
#include "proxy/flight.h"
#include "proxy/origin.h"
#include "proxy/proxy_int.h"
#include "proxy/worker.h"

#define TABLE_DIR "/proxy"
#define TABLE_PATH "/proxy/objects"

static unsigned cpu_count(void)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set) < 0 || CPU_COUNT(&set) < 1)
                return 1;
        return (unsigned)CPU_COUNT(&set);
}

/* A listening socket on hp (port instead of hp's when nonzero). */
static int listen_on(const struct px_hostport *hp, uint16_t port, uint16_t *ret_port)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        char service[8];
        int fd, one = 1, r;

        snprintf(service, sizeof(service), "%u", port ? port : hp->port);
        r = getaddrinfo(hp->host, service, &hints, &ai);
        if (r != 0) {
                fprintf(stderr, "scree-proxy: cannot listen on %s:%u: %s\n", hp->host, hp->port,
                        gai_strerror(r));
                return -EINVAL;
        }
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
            bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 4096) < 0 ||
            getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
                r = -errno;
                fprintf(stderr, "scree-proxy: cannot listen on %s:%u: %s\n", hp->host,
                        port ? port : hp->port, strerror(errno));
                if (fd >= 0)
                        close(fd);
                freeaddrinfo(ai);
                return r;
        }
        freeaddrinfo(ai);
        *ret_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
        return fd;
}

/* Whether DIR holds a scree database already (its catalog). */
static bool cache_exists(const char *dir)
{
        char path[4200];

        snprintf(path, sizeof(path), "%s/CATALOG", dir);
        return access(path, F_OK) == 0;
}

static int db_open(const struct px_config *cfg, unsigned shards, scree_db **ret)
{
        scree_options *o = scree_options_new();
        int r = o ? px_config_db_options(cfg, shards, o) : -ENOMEM;

        if (r == 0)
                r = scree_open(cfg->dir, o, ret);
        scree_options_free(o);
        return r;
}

/* Creates the cache's table if missing and opens it. */
static int table_open(scree_db *db, unsigned shards, scree_table **ret)
{
        scree_table_spec spec = { .path = TABLE_PATH, .n_parts = 0, .tablets = shards };
        scree_table_info info;
        int r;

        r = scree_mkdir(db, TABLE_DIR);
        if (r < 0 && r != -EEXIST)
                return r;
        r = scree_table_create(db, &spec);
        if (r < 0 && r != -EEXIST)
                return r;
        r = scree_table_describe(db, TABLE_PATH, &info);
        if (r == 0 && (info.n_parts != 0 || info.hash_parts != 0)) {
                fprintf(stderr, "scree-proxy: %s is not the proxy's table (byte-string keys)\n",
                        TABLE_PATH);
                return -EINVAL;
        }
        return r < 0 ? r : scree_table_open(db, TABLE_PATH, ret);
}

struct proxy {
        struct px_config cfg;
        struct px_shared sh;
        struct px_origin *origins;
        int *lfds, mfd;
        uint16_t port, metrics_port;
        unsigned shards;
};

/* Whether another socket -- another scree-proxy's SO_REUSEPORT group of
 * the same user included, which would share the port silently -- holds
 * hp's port: a plain bind of it fails then. 0, or -EADDRINUSE (reported). */
static int port_probe(const struct px_hostport *hp)
{
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
        char service[8];
        int fd, one = 1, r = 0;

        if (!hp->port)
                return 0;
        snprintf(service, sizeof(service), "%u", hp->port);
        if (getaddrinfo(hp->host, service, &hints, &ai) != 0)
                return 0;       /* listen_on reports it */
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                        bind(fd, ai->ai_addr, ai->ai_addrlen) < 0) && errno == EADDRINUSE) {
                fprintf(stderr, "scree-proxy: cannot listen on %s:%u: %s\n", hp->host, hp->port,
                        strerror(EADDRINUSE));
                r = -EADDRINUSE;
        }
        if (fd >= 0)
                close(fd);
        freeaddrinfo(ai);
        return r;
}

static int listeners_open(struct proxy *p)
{
        unsigned n = p->sh.n_workers;

        if (port_probe(&p->cfg.listen) < 0)
                return -EADDRINUSE;

        p->lfds = calloc(n, sizeof(*p->lfds));
        if (!p->lfds)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                p->lfds[i] = -1;
        for (unsigned i = 0; i < n; i++) {
                p->lfds[i] = listen_on(&p->cfg.listen, p->port, &p->port);
                if (p->lfds[i] < 0)
                        return p->lfds[i];
        }
        p->mfd = -1;
        if (p->cfg.metrics) {
                p->mfd = listen_on(&p->cfg.metrics_at, 0, &p->metrics_port);
                if (p->mfd < 0)
                        return p->mfd;
        }
        return 0;
}

/* The shard count to ask for: --shards, else for a new cache half the
 * CPUs, else 0 (the cache's own; a --shards that contradicts it is
 * refused by the library with a message). */
static int shards_pick(struct proxy *p)
{
        const struct px_config *cfg = &p->cfg;
        unsigned half = cpu_count() / 2;

        p->shards = cfg->shards ? cfg->shards : cache_exists(cfg->dir) ? 0 : half ? half : 1;
        return 0;
}

/* Opens the database and its table; 0 or an error (reported). */
static int cache_open(struct proxy *p)
{
        const struct px_config *cfg = &p->cfg;
        int r;

        r = db_open(cfg, p->shards, &p->sh.db);
        if (r == -EINVAL && cfg->shards && cache_exists(cfg->dir)) {
                fprintf(stderr, "scree-proxy: %s was made with another --shards (%s); leave "
                        "--shards out to open it with its own\n", cfg->dir, scree_last_error());
                return r;
        }
        if (r < 0) {
                fprintf(stderr, "scree-proxy: cannot open the cache in %s: %s\n", cfg->dir,
                        *scree_last_error() ? scree_last_error() : scree_strerror(r));
                return r;
        }
        p->shards = scree_shards(p->sh.db);
        r = table_open(p->sh.db, p->shards, &p->sh.table);
        if (r < 0)
                fprintf(stderr, "scree-proxy: cannot open table %s: %s\n", TABLE_PATH,
                        *scree_last_error() ? scree_last_error() : scree_strerror(r));
        return r;
}

static int workers_start(struct proxy *p)
{
        struct px_shared *sh = &p->sh;
        int r;

        sh->workers = calloc(sh->n_workers, sizeof(*sh->workers));
        sh->flights = px_flights_new();
        if (!sh->workers || !sh->flights)
                return -ENOMEM;
        for (unsigned i = 0; i < sh->n_workers; i++) {
                r = px_worker_new(sh, i, p->lfds[i], i == 0 ? p->mfd : -1, &sh->workers[i]);
                p->lfds[i] = -1;
                if (i == 0)
                        p->mfd = -1;
                if (r < 0) {
                        fprintf(stderr, "scree-proxy: cannot make worker %u: %s\n", i,
                                scree_strerror(r));
                        return r;
                }
        }
        for (unsigned i = 0; i < sh->n_workers; i++) {
                r = px_worker_start(sh->workers[i]);
                if (r < 0) {
                        fprintf(stderr, "scree-proxy: cannot start a thread: %s\n", strerror(-r));
                        sh->n_workers = i;
                        return r;
                }
        }
        return 0;
}

static void stop(struct proxy *p, bool started)
{
        struct px_shared *sh = &p->sh;

        atomic_store(&sh->stop, true);
        for (unsigned i = 0; started && sh->workers && i < sh->n_workers; i++)
                px_worker_wake(sh->workers[i]);
        for (unsigned i = 0; started && sh->workers && i < sh->n_workers; i++)
                px_worker_join(sh->workers[i]);
        for (unsigned i = 0; sh->workers && i < sh->n_workers; i++)
                px_worker_free(sh->workers[i]);
        free(sh->workers);
        px_flights_free(sh->flights);
        for (unsigned i = 0; p->lfds && i < sh->n_workers; i++)
                if (p->lfds[i] >= 0)
                        close(p->lfds[i]);
        if (p->mfd >= 0)
                close(p->mfd);
        free(p->lfds);
        scree_table_close(sh->table);
        if (sh->db && scree_close(sh->db) < 0)
                fprintf(stderr, "scree-proxy: closing the cache: %s\n", scree_last_error());
        free(p->origins);
}

/* The start line, in one write: tests and scripts wait for it whole. */
static void announce(const struct proxy *p)
{
        char line[8192], metrics[300] = "";
        int n;

        if (p->cfg.metrics)
                snprintf(metrics, sizeof(metrics), "metrics on %s:%u, ", p->cfg.metrics_at.host,
                         p->metrics_port);
        n = snprintf(line, sizeof(line),
                     "scree-proxy: listening on %s:%u (%u threads), %scache in %s (%u shards, %s "
                     "sync), %u origin%s\n", p->cfg.listen.host, p->port, p->sh.n_workers,
                     metrics, p->cfg.dir, p->shards, p->cfg.sync_batch ? "batch" : "periodic",
                     p->sh.n_origins, p->sh.n_origins > 1 ? "s" : "");
        if (n > 0)
                (void)!write(STDERR_FILENO, line,
                             (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

int main(int argc, char **argv)
{
        static struct proxy p = { .mfd = -1 };
        char err[512];
        sigset_t sigs;
        int r, sig;

        r = px_config_parse(argc, argv, &p.cfg, err, sizeof(err));
        if (r != 0) {
                if (r < 0)
                        fprintf(stderr, "scree-proxy: %s\n", err);
                return r < 0 ? 2 : 0;
        }
        if (px_origins_resolve(&p.cfg, &p.origins) < 0)
                return 2;
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);        /* the threads inherit it */
        if (shards_pick(&p) < 0)
                return 2;
        p.sh = (struct px_shared){ .cfg = &p.cfg, .origins = p.origins,
                                   .n_origins = p.cfg.n_origins };
        if (port_probe(&p.cfg.listen) < 0 || cache_open(&p) < 0) {
                stop(&p, true);
                return 1;
        }
        /* By default the workers and the shards share the CPUs (the
         * shards: the cache's own, known once it is open). */
        p.sh.n_workers = p.cfg.threads ? p.cfg.threads
                                       : cpu_count() > p.shards ? cpu_count() - p.shards : 1;
        if (listeners_open(&p) < 0 || workers_start(&p) < 0) {
                stop(&p, true);
                return 1;
        }
        announce(&p);
        do
                r = sigwait(&sigs, &sig);
        while (r == EINTR);
        fprintf(stderr, "scree-proxy: stopping (signal %d)\n", sig);
        stop(&p, true);
        return 0;
}
