/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's shards (see server.h): listening sockets made by the main
 * thread, accepting and engine life on each shard, and the two-phase
 * shutdown driven by foreign requests from the main thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/log.h"
#include "base/time.h"
#include "engine/catalog.h"
#include "engine/datadir.h"
#include "engine/fs.h"
#include "engine/shard.h"
#include "engine/xtxn_resolve.h"
#include "net/cmd.h"
#include "net/conn.h"
#include "net/metrics.h"
#include "net/metrics_http.h"
#include "net/slowlog.h"
#include "net/xwrite.h"
#include "net/server.h"
#include "reactor/io.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

#define LISTEN_BACKLOG 511

/* ---- main thread: set-up ---- */

static int make_dir(const char *path, char *err, size_t err_len)
{
        if (mkdir(path, 0755) == 0 || errno == EEXIST)
                return 0;
        snprintf(err, err_len, "cannot create directory %s: %s", path, strerror(errno));
        return -errno;
}

static int sockaddr_of(const char *host, uint16_t port, struct sockaddr_storage *ss,
                       socklen_t *len)
{
        struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

        memset(ss, 0, sizeof(*ss));
        if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
                a4->sin_family = AF_INET;
                a4->sin_port = htons(port);
                *len = sizeof(*a4);
                return 0;
        }
        if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
                a6->sin6_family = AF_INET6;
                a6->sin6_port = htons(port);
                *len = sizeof(*a6);
                return 0;
        }
        return -EINVAL;
}

/*
 * A socket bound to host:port; reuseport: with SO_REUSEPORT, so that every
 * shard binds the same port. Another process's SO_REUSEPORT sockets would
 * share the port silently, so the first shard first binds without it: that
 * fails with EADDRINUSE if anything listens there.
 */
static int listen_on(const char *host, uint16_t port, bool probe, char *err, size_t err_len)
{
        struct sockaddr_storage ss;
        socklen_t len;
        int fd, one = 1, r;

        if (sockaddr_of(host, port, &ss, &len) < 0) {
                snprintf(err, err_len, "bind: '%s' is not an IPv4 or IPv6 address", host);
                return -EINVAL;
        }
        fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                goto fail;
        /* An IPv6 socket takes IPv6 only, so that "::" and "0.0.0.0" can
         * both be bound (bind * ::*), as in Redis. */
        if ((ss.ss_family == AF_INET6 &&
             setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0) ||
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            (!probe && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0) ||
            bind(fd, (struct sockaddr *)&ss, len) < 0 ||
            (!probe && listen(fd, LISTEN_BACKLOG) < 0))
                goto fail;
        if (probe) {
                close(fd);
                return 0;
        }
        return fd;
fail:
        r = -errno;
        snprintf(err, err_len, "cannot listen on %s:%u: %s", host, port, strerror(errno));
        if (fd >= 0)
                close(fd);
        return r;
}

/*
 * A port whose last holder was just killed stays bound for a while after
 * its process is gone (tens of ms measured; the listener is freed when
 * the dead process's io_uring finishes tearing down, which holds it for
 * its accept in flight), and SO_REUSEADDR does not help with a listening
 * socket. So a busy port is probed again until PROBE_WAIT_NS have passed
 * before the start is refused.
 */
#define PROBE_WAIT_NS (2 * NS_PER_SEC)
#define PROBE_RETRY_NS (5 * NS_PER_MS)

static int port_probe(const char *host, uint16_t port, char *err, size_t err_len)
{
        uint64_t deadline = time_now_ns() + PROBE_WAIT_NS;
        int r;

        while ((r = listen_on(host, port, true, err, err_len)) == -EADDRINUSE &&
               time_now_ns() < deadline) {
                struct timespec ts = time_ns_to_timespec(PROBE_RETRY_NS);

                nanosleep(&ts, NULL);
        }
        return r;
}

/* The first address listened on (the metrics port's). */
static const char *first_addr(const struct net_server *srv)
{
        for (unsigned i = 0; i < srv->n_binds; i++)
                if (!srv->binds[i].skipped)
                        return srv->binds[i].addr;
        return NULL;
}

/* An optional address the host lacks (no such interface, no IPv6) is
 * skipped, as in Redis; a busy port is not. */
static bool host_lacks(int err)
{
        return err == -EADDRNOTAVAIL || err == -EAFNOSUPPORT;
}

/* Reads cfg->bind into srv->binds and probes the ports first: a busy
 * port refuses the start before it touches the data directory. */
static int ports_probe(struct net_server *srv, char *err, size_t err_len)
{
        const struct scree_config *cfg = srv->cfg;
        const char *pos = cfg->bind;
        struct net_bind *b;
        int r = 0;

        while (srv->n_binds < CFG_BIND_MAX) {
                b = &srv->binds[srv->n_binds];
                if (!cfg_bind_next(&pos, b->addr, sizeof(b->addr), &b->optional))
                        break;
                srv->n_binds++;
                r = port_probe(b->addr, (uint16_t)cfg->port, err, err_len);
                if (r < 0 && b->optional && host_lacks(r)) {
                        b->skipped = true;
                        b->skip_err = r;
                        r = 0;
                }
                if (r < 0)
                        return r;
        }
        if (!first_addr(srv)) {
                snprintf(err, err_len, "bind '%s': no address to listen on", cfg->bind);
                return -EADDRNOTAVAIL;
        }
        if (cfg->metrics_port)
                r = port_probe(first_addr(srv), (uint16_t)cfg->metrics_port, err, err_len);
        return r;
}

/* Takes <dir>/LOCK before anything in <dir> is created or changed: a
 * second server on one directory would delete the first one's log. */
static int dir_lock(struct net_server *srv, char *err, size_t err_len)
{
        const char *dir = srv->cfg->dir;
        pid_t holder = 0;
        int r = eng_datadir_lock(&srv->lock, dir, &holder);

        if (r == -EWOULDBLOCK && holder > 0)
                snprintf(err, err_len, "data directory %s is in use by process %ld (lock file %s)",
                         dir, (long)holder, srv->lock.path);
        else if (r == -EWOULDBLOCK)
                snprintf(err, err_len, "data directory %s is in use by another process (lock file %s)",
                         dir, srv->lock.path);
        else if (r < 0)
                snprintf(err, err_len, "cannot lock data directory %s: %s", dir, strerror(-r));
        return r;
}

/*
 * Checks each shard directory that has a manifest against the layout this
 * start would open it with, as the engine will, but before any shard
 * creates a file: otherwise a shard whose directory is new (--smp grew)
 * would make its log while another refuses the start.
 */
static int layout_check(const struct net_server *srv, char *err, size_t err_len)
{
        char dir[4096];

        for (unsigned i = 0; i < srv->n_shards; i++) {
                struct eng_manifest_layout got;
                int r;

                snprintf(dir, sizeof(dir), "%s/shard-%u", srv->cfg->dir, i);
                r = eng_datadir_layout_read(dir, &got);
                if (r == -SCREE_ENOTFOUND)
                        continue;
                if (r < 0) {
                        snprintf(err, err_len, "cannot read %s/MANIFEST: %s%s", dir,
                                 scree_strerror(r),
                                 r == -SCREE_ECORRUPT ? " (see scree-tool verify)" : "");
                        return r;
                }
                if (got.shard != i || got.n_shards != srv->n_shards ||
                    got.tablets_per_shard != ENG_SHARD_DEFAULT_TABLETS) {
                        snprintf(err, err_len, "%s was made as shard %u of %u with %u tablets per "
                                 "shard, not shard %u of %u with %u: the directory holds data "
                                 "written with another --smp (or another layout); start with "
                                 "--smp %u, or use another --dir", dir, got.shard, got.n_shards,
                                 got.tablets_per_shard, i, srv->n_shards,
                                 ENG_SHARD_DEFAULT_TABLETS, got.n_shards);
                        return -EINVAL;
                }
        }
        return 0;
}

/* A listening socket per address not skipped, for shard sh. */
static int listeners_new(struct net_shard *sh, char *err, size_t err_len)
{
        const struct net_server *srv = sh->srv;

        sh->ls = calloc(srv->n_binds, sizeof(*sh->ls));
        if (!sh->ls)
                return -ENOMEM;
        for (unsigned k = 0; k < srv->n_binds; k++)
                sh->ls[k] = (struct net_listener){ .sh = sh, .fd = -1 };
        for (unsigned k = 0; k < srv->n_binds; k++) {
                if (srv->binds[k].skipped)
                        continue;
                sh->ls[k].fd = listen_on(srv->binds[k].addr, (uint16_t)srv->cfg->port, false, err,
                                         err_len);
                if (sh->ls[k].fd < 0)
                        return sh->ls[k].fd;
        }
        return 0;
}

static int shards_new(struct net_server *srv, char *err, size_t err_len)
{
        const struct scree_config *cfg = srv->cfg;
        struct stat st;
        int r;

        for (unsigned i = 0; i < srv->n_shards; i++) {
                struct net_shard *sh = calloc(1, sizeof(*sh));

                if (!sh)
                        return -ENOMEM;
                srv->shards[i] = sh;
                sh->srv = srv;
                sh->id = i;
                net_intent_init(&sh->intents);
                for (unsigned d = 0; d < NET_DBS; d++)  /* the initial catalog's ids */
                        sh->db_table[d] = d == 0 ? ENG_TABLE_DEFAULT : d + 1;
                if (cfg_copy(&sh->cfg, cfg) < 0)
                        return -ENOMEM;
                snprintf(sh->dir, sizeof(sh->dir), "%s/shard-%u", cfg->dir, i);
                sh->made_dir = stat(sh->dir, &st) < 0 && errno == ENOENT;
                r = make_dir(sh->dir, err, err_len);
                if (r < 0) {
                        sh->made_dir = false;
                        return r;
                }
                r = listeners_new(sh, err, err_len);
                if (r < 0)
                        return r;
        }
        if (cfg->metrics_port) {
                srv->metrics_fd = listen_on(first_addr(srv), (uint16_t)cfg->metrics_port, false,
                                            err, err_len);
                if (srv->metrics_fd < 0)
                        return srv->metrics_fd;
        }
        return 0;
}

static struct eng_shard *engine_of(struct rx_loop *loop)
{
        return net_shard_of(loop)->eng;
}

/* After a catalog change: SWAPDB gives the databases new tables. */
static void dbs_refresh(struct rx_loop *loop, void *arg)
{
        (void)arg;
        net_shard_dbs_refresh(net_shard_of(loop));
}

/* Whether a shard's engine took a write (its data needs the catalog). */
static bool engines_wrote(const struct net_server *srv)
{
        for (unsigned i = 0; srv->shards && i < srv->n_shards; i++)
                if (srv->shards[i] && srv->shards[i]->engine_wrote)
                        return true;
        return false;
}

int net_server_new(struct scree_config *cfg, unsigned n_shards, struct net_server **ret,
                   char *err, size_t err_len)
{
        struct net_server *srv = calloc(1, sizeof(*srv));
        int r = -ENOMEM;

        if (!srv)
                goto fail;
        srv->metrics_fd = -1;
        srv->lock.fd = -1;      /* before any goto fail: free closes fds >= 0 */
        srv->shards = calloc(n_shards, sizeof(*srv->shards));
        if (!srv->shards)
                goto fail;
        srv->cfg = cfg;
        srv->n_shards = n_shards;
        srv->eng_shards = (struct eng_shards){ .n = n_shards, .of = engine_of };
        srv->cat = (struct eng_catsvc){ .shards = &srv->eng_shards, .installed = dbs_refresh };
        srv->start_ns = time_now_ns();
        srv->start_wall_ms = time_wall_ns() / NS_PER_MS;
        atomic_store(&srv->lastsave_s, srv->start_wall_ms / 1000);
        srv->max_key_bytes = cfg->max_key_bytes;
        srv->max_value_bytes = cfg->max_value_bytes;
        r = eng_tablet_map_init(&srv->map, n_shards, ENG_SHARD_DEFAULT_TABLETS);
        if (r < 0) {
                snprintf(err, err_len, "bad shard count %u", n_shards);
                goto fail;
        }
        /* Every check that can refuse the start comes before the first
         * change to the directory; what a later failure made is undone. */
        r = ports_probe(srv, err, err_len);
        if (r < 0)
                goto fail;
        r = dir_lock(srv, err, err_len);
        if (r < 0)
                goto fail;
        r = layout_check(srv, err, err_len);
        if (r < 0)
                goto fail;
        r = eng_catsvc_load(&srv->cat, cfg->dir, ENG_SHARD_DEFAULT_TABLETS, "--smp", &srv->cat_made,
                            err, err_len);
        if (r < 0)
                goto fail;
        r = shards_new(srv, err, err_len);
        if (r < 0)
                goto fail;
        *ret = srv;
        return 0;
fail:
        if (r == -ENOMEM)
                snprintf(err, err_len, "out of memory");
        net_server_undo(srv);
        net_server_free(srv);
        return r;
}

void net_server_undo(struct net_server *srv)
{
        if (!srv)
                return;
        for (unsigned i = 0; srv->shards && i < srv->n_shards; i++) {
                struct net_shard *sh = srv->shards[i];

                /* A shard that took a write may have acknowledged it: keep. */
                if (sh && sh->made_dir && !sh->engine_wrote) {
                        eng_datadir_remove_made(sh->dir);
                        sh->made_dir = false;
                }
        }
        if (srv->cat_made && !engines_wrote(srv)) {
                eng_catsvc_undo(srv->cfg->dir);
                srv->cat_made = false;
        }
        eng_datadir_unlock(&srv->lock, true);
}

void net_server_free(struct net_server *srv)
{
        if (!srv)
                return;
        for (unsigned i = 0; srv->shards && i < srv->n_shards; i++) {
                struct net_shard *sh = srv->shards[i];

                if (!sh)
                        continue;
                for (unsigned k = 0; sh->ls && k < srv->n_binds; k++)
                        if (sh->ls[k].fd >= 0)
                                close(sh->ls[k].fd);
                free(sh->ls);
                net_slowlog_free(sh->slowlog);
                net_intent_fini(&sh->intents);
                cfg_fini(&sh->cfg);
                net_cmd_metrics_fini(sh->metrics);
                free(sh->metrics);
                free(sh);
        }
        net_metrics_http_free(srv->metrics_http);
        if (srv->metrics_fd >= 0)
                close(srv->metrics_fd);
        eng_datadir_unlock(&srv->lock, false);
        eng_catalog_unref(srv->cat.head);
        free(srv->shards);
        free(srv);
}

/* ---- on the shards ---- */

struct net_shard *net_shard_of(struct rx_loop *loop)
{
        return rx_loop_user(loop);
}

void net_shard_dbs_refresh(struct net_shard *sh)
{
        const struct eng_catalog *c = sh->eng ? eng_shard_catalog(sh->eng) : NULL;
        char path[32];

        for (unsigned d = 0; c && d < NET_DBS; d++) {
                const struct eng_catalog_table *t;

                snprintf(path, sizeof(path), "/redis/db%u", d);
                if (eng_catalog_lookup(c, path, &t) == 0)
                        sh->db_table[d] = t->id;
        }
}

unsigned net_server_owner(const struct net_server *srv, const void *key, size_t len)
{
        return eng_tablet_of_key(&srv->map, ENG_TABLE_DEFAULT, key, len).shard;
}

void net_shard_conn_link(struct net_shard *sh, struct net_conn *c)
{
        c->prev = NULL;
        c->next = sh->conns;
        if (sh->conns)
                sh->conns->prev = c;
        sh->conns = c;
        sh->n_conns++;
}

void net_shard_conn_unlink(struct net_shard *sh, struct net_conn *c)
{
        if (c->prev)
                c->prev->next = c->next;
        else
                sh->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        sh->n_conns--;
}

static void accept_arm(struct net_listener *l);
static void accept_arm_all(struct net_shard *sh);

/* Once a second: close idle connections (--timeout), sample ops/sec and
 * bytes/sec, and the memory INFO's used_memory_peak follows. */
static void shard_tick(struct rx_loop *loop, struct rx_timer *t)
{
        struct net_shard *sh = container_of(t, struct net_shard, tick);
        uint64_t timeout_s = sh->cfg.timeout_s;

        if (timeout_s)
                net_conn_sweep_idle(sh, net_now_ms(), timeout_s * 1000);
        sh->ops_per_sec = sh->n_commands - sh->tick_commands;
        sh->tick_commands = sh->n_commands;
        sh->in_bps = sh->net_in_bytes - sh->tick_in_bytes;
        sh->out_bps = sh->net_out_bytes - sh->tick_out_bytes;
        sh->tick_in_bytes = sh->net_in_bytes;
        sh->tick_out_bytes = sh->net_out_bytes;
        net_info_tick(sh);
        if (sh->id == 0) {
                eng_catsvc_tick(&sh->srv->cat, sh->all_ready);
                net_balancer_tick(sh);
        }
        net_tablet_tick(sh);
        if (!sh->stopping)
                rx_timer_arm_after(loop, &sh->tick, NS_PER_SEC);
}

/* Redis's protected-mode refusal, with scree's steps where Redis's name
 * its own (CONFIG REWRITE, the password of an ACL user). */
static const char denied[] =
        "-DENIED Redis is running in protected mode because protected mode is enabled and no "
        "password is set for the default user. In this mode connections are only accepted from "
        "the loopback interface. If you want to connect from external computers to Redis you "
        "may adopt one of the following solutions: 1) Just disable protected mode sending the "
        "command 'CONFIG SET protected-mode no' from the loopback interface by connecting to "
        "Redis from the same host the server is running, however MAKE SURE Redis is not "
        "publicly accessible from internet if you do so. Add 'protected-mode no' to the "
        "configuration file to make this change permanent. 2) Alternatively you can just "
        "disable the protected mode by editing the configuration file, and setting the "
        "protected mode option to 'no', and then restarting the server. 3) If you started the "
        "server manually just for testing, restart it with the '--protected-mode no' option. "
        "4) Set up an authentication password for the default user with 'requirepass' "
        "('--requirepass' or 'CONFIG SET requirepass'). NOTE: You only need to do one of the "
        "above things in order for the server to start accepting connections from the "
        "outside.\r\n";

bool net_addr_is_loopback(const struct sockaddr_storage *ss)
{
        static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *a = (const void *)ss;

                return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
        }
        if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *a = (const void *)ss;
                const uint8_t *b = a->sin6_addr.s6_addr;

                return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
                       (!memcmp(b, v4mapped, sizeof(v4mapped)) && b[12] == 127);
        }
        return ss->ss_family == AF_UNIX;
}

/* Protected mode (Redis's): while no password is set, only clients on a
 * loopback address are served; any other gets -DENIED and is closed. */
static bool client_protected_out(struct net_shard *sh, int fd)
{
        struct sockaddr_storage ss;
        socklen_t len = sizeof(ss);

        if (!sh->cfg.protected_mode || sh->cfg.requirepass[0])
                return false;
        memset(&ss, 0, sizeof(ss));
        if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0 || net_addr_is_loopback(&ss))
                return false;   /* a peer already gone fails its first recv */
        /* A fresh socket's send buffer takes the ~1 KiB at once. */
        (void)!send(fd, denied, sizeof(denied) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        return true;
}

static bool client_admit(struct net_shard *sh, int fd)
{
        static const char full[] = "-ERR max number of clients reached\r\n";
        struct net_server *srv = sh->srv;
        uint64_t max = sh->cfg.maxclients, n;

        if (client_protected_out(sh, fd)) {
                atomic_fetch_add_explicit(&srv->rejected_connections, 1, memory_order_relaxed);
                close(fd);
                return false;
        }
        n = atomic_fetch_add_explicit(&srv->clients, 1, memory_order_relaxed);
        if (n < max)
                return true;
        atomic_fetch_sub_explicit(&srv->clients, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&srv->rejected_connections, 1, memory_order_relaxed);
        /* A fresh socket's send buffer always takes these few bytes. */
        (void)!send(fd, full, sizeof(full) - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        close(fd);
        return false;
}

static void on_accept(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct net_listener *l = op->ctx;
        struct net_shard *sh = l->sh;

        l->accepting = false;
        if (res >= 0) {
                if (sh->stopping) {
                        close(res);
                        return;
                }
                if (client_admit(sh, res)) {
                        atomic_fetch_add_explicit(&sh->srv->total_connections, 1,
                                                  memory_order_relaxed);
                        sh->n_accepted++;
                        net_conn_open(sh, res);
                }
                accept_arm(l);
                return;
        }
        if (sh->stopping || res == -ECANCELED)
                return;
        /* EMFILE, ENFILE, ENOBUFS...: try again a little later. */
        rx_timer_arm_after(loop, &sh->accept_retry, 10 * NS_PER_MS);
}

static void accept_retry(struct rx_loop *loop, struct rx_timer *t)
{
        (void)loop;
        accept_arm_all(container_of(t, struct net_shard, accept_retry));
}

static void accept_arm(struct net_listener *l)
{
        struct net_shard *sh = l->sh;

        if (l->accepting || sh->stopping || l->fd < 0)
                return;
        l->op.ctx = l;
        if (rx_sock_accept(sh->loop, &l->op, l->fd, on_accept) == 0)
                l->accepting = true;
        else if (!rx_timer_is_armed(&sh->accept_retry))
                rx_timer_arm_after(sh->loop, &sh->accept_retry, 10 * NS_PER_MS);
}

static void accept_arm_all(struct net_shard *sh)
{
        for (unsigned k = 0; k < sh->srv->n_binds; k++)
                accept_arm(&sh->ls[k]);
}

static void engine_closed(void *arg, int res);

static void resolved(void *arg)
{
        struct net_server *srv = arg;

        atomic_store(&srv->xtxn_resolved, true);
}

static int64_t resolve_on_shard0(struct rx_loop *dst, void *arg)
{
        struct net_server *srv = arg;

        eng_xtxn_resolve(dst, &srv->eng_shards, resolved, srv);
        return 0;
}

static void resolve_started(struct rx_loop *src, int64_t result, void *arg)
{
        (void)src;
        (void)result;
        (void)arg;
}

static void engine_opened(void *arg, int res, struct eng_shard *s)
{
        struct net_shard *sh = arg;

        if (res < 0) {
                atomic_store(&sh->open_err, res);
                atomic_store(&sh->state, NET_SHARD_FAILED);
        } else {
                sh->eng = s;
                net_shard_dbs_refresh(sh);
                atomic_store(&sh->state, NET_SHARD_READY);
                /* The last engine to open starts the resolution of what
                 * the last stop left in doubt, on shard 0. */
                if (atomic_fetch_add(&sh->srv->shards_ready, 1) + 1 == sh->srv->n_shards &&
                    rx_smp_call(sh->loop, 0, resolve_on_shard0, resolve_started, sh->srv) < 0) {
                        log_error("no memory to resolve the cross-shard writes left in doubt; "
                                  "their keys stay held until the next start");
                        atomic_store(&sh->srv->xtxn_resolved, true);
                }
        }
        if (sh->close_wanted) {
                if (!sh->eng || eng_shard_close(sh->eng, engine_closed, sh) < 0)
                        engine_closed(sh, res < 0 ? 0 : -EIO);
        }
}

static void engine_open(struct net_shard *sh)
{
        const struct scree_config *cfg = sh->srv->cfg;
        unsigned n = sh->srv->n_shards;
        struct eng_shard_opts o = {
                .dir = sh->dir,
                .shard = sh->id,
                .n_shards = n,
                .sync = cfg->sync == CFG_SYNC_PERIODIC ? ENG_WAL_SYNC_PERIODIC : ENG_WAL_SYNC_BATCH,
                .period_ns = cfg->sync_period_ms * NS_PER_MS,
                /* Half the memory for memtables, a quarter for the block
                 * cache, the rest for connections and buffers. */
                .memtable_budget = (size_t)(cfg->memory / 2 / n),
                .cache_bytes = (size_t)(cfg->memory / 4 / n),
                .prefault_memtables = cfg->prefault != 0,
                .salvage = cfg->salvage != 0,
                .salvage_hint = "--salvage (config file: salvage yes)",
                .merge_after_secs = (uint32_t)cfg->tablet_merge_after_s,
                /* Shard 0 changes it only once every shard is open. */
                .catalog = sh->srv->cat.head,
        };
        int r;

        sh->fs = eng_fs_direct_new(sh->loop);
        r = sh->fs ? eng_shard_open(sh->loop, sh->fs, &o, engine_opened, sh) : -ENOMEM;
        if (r == 0 && sh->id == 0)
                r = eng_catsvc_start(&sh->srv->cat, sh->loop, sh->fs, cfg->dir);
        if (r < 0) {
                atomic_store(&sh->open_err, r);
                atomic_store(&sh->state, NET_SHARD_FAILED);
        }
}

void net_shard_start(struct rx_loop *loop, void *arg)
{
        struct net_server *srv = arg;
        struct net_shard *sh = srv->shards[rx_loop_shard_id(loop)];

        sh->loop = loop;
        rx_loop_set_user(loop, sh);
        rx_timer_init(&sh->accept_retry, accept_retry, "net:accept_retry");
        rx_timer_init(&sh->tick, shard_tick, "net:tick");
        sh->slowlog = net_slowlog_new();
        sh->metrics = calloc(1, sizeof(*sh->metrics));
        if (sh->metrics && net_cmd_metrics_init(sh->metrics) < 0) {
                free(sh->metrics);
                sh->metrics = NULL;
        }
        if (sh->id == 0 && srv->metrics_fd >= 0)
                (void)net_metrics_http_start(sh, srv->metrics_fd, &srv->metrics_http);
        rx_timer_arm_after(loop, &sh->tick, NS_PER_SEC);
        accept_arm_all(sh);
        engine_open(sh);
}

/* ---- shutdown, on the shards ---- */

static void stop_conns_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct net_shard *sh = net_shard_of(loop);
        struct net_conn *c, *next;

        sh->stopping = true;
        rx_timer_cancel(loop, &sh->accept_retry);
        rx_timer_cancel(loop, &sh->tick);
        for (unsigned k = 0; k < sh->srv->n_binds; k++)
                if (sh->ls[k].fd >= 0)
                        shutdown(sh->ls[k].fd, SHUT_RDWR);      /* ends the accept in flight */
        if (sh->id == 0)
                net_metrics_http_stop(sh->srv->metrics_http);
        sh->stop_req = req;
        for (c = sh->conns; c; c = next) {
                next = c->next;
                net_conn_close(c);
        }
        if (!sh->conns)
                net_shard_conns_gone(sh);
}

void net_shard_conns_gone(struct net_shard *sh)
{
        struct rx_alien_req *req = sh->stop_req;

        sh->stop_req = NULL;
        if (req)
                rx_alien_complete(req, 0);
}

static void engine_closed(void *arg, int res)
{
        struct net_shard *sh = arg;
        struct rx_alien_req *req = sh->stop_req;

        sh->eng = NULL;
        eng_fs_free(sh->fs);
        sh->fs = NULL;
        atomic_store(&sh->state, NET_SHARD_CLOSED);
        sh->stop_req = NULL;
        if (req)
                rx_alien_complete(req, res);
}

static void close_engine(struct net_shard *sh);

/* Shard 0's catalog store is closed: its engine's turn. */
static void catalog_closed(void *arg, int res)
{
        struct net_shard *sh = arg;

        if (res < 0)
                log_warn("closing the catalog: %s", scree_strerror(res));
        close_engine(sh);
}

static void close_engine_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct net_shard *sh = net_shard_of(loop);

        sh->stop_req = req;
        /* The store writes through the engine's fs: it closes first. */
        if (sh->id == 0 && eng_catsvc_stop(&sh->srv->cat, catalog_closed, sh) == 0)
                return;
        close_engine(sh);
}

static void close_engine(struct net_shard *sh)
{
        int state = atomic_load(&sh->state);

        if (state == NET_SHARD_READY)
                sh->engine_wrote = eng_shard_stats(sh->eng)->writes > 0;
        if (state == NET_SHARD_LOADING) {
                sh->close_wanted = true;        /* engine_opened closes it */
                return;
        }
        if (state != NET_SHARD_READY || eng_shard_close(sh->eng, engine_closed, sh) < 0)
                engine_closed(sh, state == NET_SHARD_READY ? -EIO : 0);
}

static int on_shard(struct net_server *srv, unsigned i,
                    void (*run)(struct rx_loop *, struct rx_alien_req *))
{
        struct rx_alien_req req = { .run = run };

        if (rx_smp_alien_submit(srv->smp, i, &req) < 0)
                return -SCREE_ESHUTDOWN;
        return (int)rx_alien_wait(&req);
}

int net_server_stop_conns(struct net_server *srv, unsigned i)
{
        return on_shard(srv, i, stop_conns_run);
}

int net_server_close_engine(struct net_server *srv, unsigned i)
{
        return on_shard(srv, i, close_engine_run);
}
