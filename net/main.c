/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree's main program: reads the settings (config file, then flags; see
 * config.h), makes the server (ports probed, the data directory locked and
 * checked, then listening sockets and shard directories: server.h),
 * starts one shard per CPU (or --smp N), each opening its engine shard
 * and serving the connections it accepts (server.h), and waits for
 * SIGINT/SIGTERM or a client's SHUTDOWN (cmd_shutdown.c); SIGHUP reopens
 * the log file (logfile, base/log.h). Stopping closes every connection
 * once its commands are back, then closes every engine shard, so every
 * acknowledged write is on disk. If a shard's engine cannot open (a
 * corrupt file, a directory made with another --smp) or io_uring cannot
 * be set up, it exits with status 1 and a line naming the cause, having
 * undone what the start made in the data directory (net_server_undo).
 *
 * Threads: the main thread parses, starts the shard group, then waits for
 * signals and drives the shutdown through foreign requests.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <scree/scree_errors.h>

#include "base/log.h"
#include "base/time.h"
#include "net/cmd.h"
#include "net/config.h"
#include "net/latency.h"
#include "net/server.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

static void on_stall(struct rx_loop *loop, const char *name, uint64_t ns)
{
        struct net_shard *sh = net_shard_of(loop);

        log_warn("stall: '%s' ran for %.1f ms without yielding", name, (double)ns / 1e6);
        if (sh)         /* LATENCY's loop-stall event */
                net_latency_add(&sh->latency, NET_LATENCY_LOOP_STALL, time_wall_ns() / NS_PER_SEC,
                                ns / NS_PER_MS);
}

static unsigned cpu_count(void)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set) < 0 || CPU_COUNT(&set) < 1)
                return 1;
        return (unsigned)CPU_COUNT(&set);
}

static const char *open_hint(int err)
{
        if (err == -EINVAL)
                return "the directory holds data written with another --smp (or another layout); "
                       "start with the --smp it was made with, or use another --dir";
        if (err == -SCREE_ECORRUPT)
                return "a file is corrupt; see the lines above, and scree-tool verify (a damaged "
                       "commit log can be skipped with --salvage, losing its damaged records)";
        return "see the lines above";
}

/* Checks the shards' engines: 1 all ready, 0 some still loading, -1 one
 * failed (logged). */
static int engines_state(struct net_server *srv)
{
        int ready = 1;

        for (unsigned i = 0; i < srv->n_shards; i++) {
                struct net_shard *sh = srv->shards[i];
                int st = atomic_load(&sh->state);

                if (st == NET_SHARD_FAILED) {
                        int err = atomic_load(&sh->open_err);

                        log_error("cannot open %s: %s: %s", sh->dir, scree_strerror(err),
                                  open_hint(err));
                        return -1;
                }
                if (st != NET_SHARD_READY)
                        ready = 0;
        }
        return ready && atomic_load(&srv->xtxn_resolved);
}

/* SIGHUP: a log rotator renamed the log file; start a new one under the
 * configured name (the last line of the old file says so). */
static void reopen_log(const char *path)
{
        int r;

        if (!path[0]) {
                log_info("received SIGHUP: the log goes to stderr, no log file to reopen");
                return;
        }
        log_info("received SIGHUP, reopening the log file %s", path);
        r = log_file_open(path);
        if (r < 0)
                log_error("cannot reopen the log file %s: %s; logging on to the file open so far",
                          path, strerror(-r));
        else
                log_info("received SIGHUP, reopened the log file %s", path);
}

/* Waits for a stop signal, a SHUTDOWN (srv->shutdown_asked, polled with
 * the signals) or a failed engine, reopening the log on SIGHUP. Returns 0
 * on a signal or SHUTDOWN, 1 when an engine failed to open (the start is
 * refused). */
static int serve(const sigset_t *set, struct net_server *srv)
{
        uint64_t started = time_now_ns();
        bool ready = false;

        for (;;) {
                struct timespec ts = time_ns_to_timespec(50 * NS_PER_MS);
                int sig, st = engines_state(srv);

                if (st < 0)
                        return 1;
                if (st == 1 && !ready) {
                        ready = true;
                        log_info("ready to accept connections (data loaded in %.1f ms)",
                                 (double)(time_now_ns() - started) / 1e6);
                }
                sig = sigtimedwait(set, NULL, &ts);
                if (sig == SIGHUP) {
                        reopen_log(srv->cfg->logfile);
                } else if (sig > 0) {
                        log_info("received %s, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
                        return 0;
                }
                if (atomic_load(&srv->shutdown_asked)) {
                        log_info("SHUTDOWN received, shutting down");
                        return 0;
                }
        }
}

/* Whether the address text a (IPv4 or IPv6) is a loopback one. */
static bool addr_is_loopback(const char *a)
{
        struct sockaddr_storage ss;
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;

        memset(&ss, 0, sizeof(ss));
        if (inet_pton(AF_INET, a, &a4->sin_addr) == 1)
                ss.ss_family = AF_INET;
        else if (inet_pton(AF_INET6, a, &a6->sin6_addr) == 1)
                ss.ss_family = AF_INET6;
        return net_addr_is_loopback(&ss);
}

/* One warning at start when an address listened on is not a loopback one
 * and no password is set: either protected mode refuses the other hosts,
 * or (protected-mode no) every host that reaches the port has the data. */
static void warn_exposure(const struct net_server *srv)
{
        const struct scree_config *cfg = srv->cfg;
        const char *open = NULL;

        for (unsigned i = 0; i < srv->n_binds && !open; i++)
                if (!srv->binds[i].skipped && !addr_is_loopback(srv->binds[i].addr))
                        open = srv->binds[i].addr;
        if (!open || cfg->requirepass[0])
                return;
        if (cfg->protected_mode)
                log_warn("listening on %s with no password: protected mode is on, so only clients "
                         "connecting from a loopback address are served, others get -DENIED and "
                         "are closed (set requirepass, or protected-mode no to serve every host "
                         "without a password)", open);
        else
                log_warn("listening on %s with no password and protected-mode no: any host that "
                         "can reach port %llu can read, change and delete every key (set "
                         "requirepass)", open, (unsigned long long)cfg->port);
}

static int shut_down(struct net_server *srv)
{
        int rc = 0;

        for (unsigned i = 0; i < srv->n_shards; i++)
                net_server_stop_conns(srv, i);
        for (unsigned i = 0; i < srv->n_shards; i++) {
                int r = net_server_close_engine(srv, i);

                if (r < 0) {
                        log_error("shard %u: closing the engine failed: %s", i, scree_strerror(r));
                        rc = 1;
                }
        }
        return rc;
}

/* The warnings of the settings (a Redis setting with no effect, met in
 * the config file or a flag), kept until the log file is open so that
 * they land there, not on a stderr nobody reads. */
struct cfg_warnings {
        char **msg;
        size_t n;
};

static void on_cfg_warning(void *ctx, const char *msg)
{
        struct cfg_warnings *w = ctx;
        char **grown = realloc(w->msg, (w->n + 1) * sizeof(*grown));
        char *copy = strdup(msg);

        if (grown)
                w->msg = grown;
        if (!grown || !copy) {
                free(copy);
                log_warn("%s", msg);    /* no memory to keep it: now, where the log is */
                return;
        }
        w->msg[w->n++] = copy;
}

/* Logs the kept warnings and forgets them. */
static void cfg_warnings_flush(struct cfg_warnings *w)
{
        for (size_t i = 0; i < w->n; i++) {
                log_warn("%s", w->msg[i]);
                free(w->msg[i]);
        }
        free(w->msg);
        *w = (struct cfg_warnings){ 0 };
}

/* "127.0.0.1:6379, [::1]:6379" into buf; logs the optional addresses
 * skipped. Returns buf. */
static const char *listen_addrs(const struct net_server *srv, char *buf, size_t len)
{
        size_t o = 0;

        buf[0] = 0;
        for (unsigned i = 0; i < srv->n_binds; i++) {
                const struct net_bind *b = &srv->binds[i];
                bool v6 = strchr(b->addr, ':') != NULL;

                if (b->skipped) {
                        log_warn("bind: optional address %s skipped: %s", b->addr,
                                 strerror(-b->skip_err));
                        continue;
                }
                o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s%s%s:%llu",
                                      o ? ", " : "", v6 ? "[" : "", b->addr, v6 ? "]" : "",
                                      (unsigned long long)srv->cfg->port);
        }
        return buf;
}

static int parse(int argc, char **argv, struct scree_config *cfg, struct cfg_warnings *warnings)
{
        char err[512] = "";
        int r;

        if (cfg_init(cfg) < 0)
                return 1;
        r = cfg_parse_args(cfg, argc, argv, on_cfg_warning, warnings, err, sizeof(err));
        if (r == 1) {
                cfg_usage(stdout);
                exit(0);
        }
        if (r < 0) {
                log_error("%s", err);
                return 2;
        }
        log_level = (enum log_level)cfg->log_level;
        return 0;
}

int main(int argc, char **argv)
{
        struct rx_smp_opts so = { .on_start = net_shard_start };
        struct scree_config cfg = { 0 };
        struct cfg_warnings warnings = { 0 };
        struct net_server *srv = NULL;
        struct rx_smp *smp;
        char err[512] = "", addrs[1024];
        unsigned n;
        bool refused;
        sigset_t set;
        int r, rc;

        rc = parse(argc, argv, &cfg, &warnings);
        if (rc) {
                cfg_warnings_flush(&warnings);
                goto out;
        }
        if (cfg.logfile[0] && (r = log_file_open(cfg.logfile)) < 0) {
                cfg_warnings_flush(&warnings);
                log_error("cannot open the log file %s: %s", cfg.logfile, strerror(-r));
                rc = 1;
                goto out;
        }
        cfg_warnings_flush(&warnings);  /* into the log file, if there is one */
        /* Block the stop signals and SIGHUP before any shard thread exists,
         * so that they inherit the mask and only the main thread takes them. */
        sigemptyset(&set);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        n = cfg.smp ? (unsigned)cfg.smp : cpu_count();
        r = net_server_new(&cfg, n, &srv, err, sizeof(err));
        if (r < 0) {
                log_error("cannot start: %s", err);
                rc = 1;
                goto out;
        }
        net_info_init(srv, argc, argv);
        so.arg = srv;
        so.n_shards = n;
        so.loop.idle_poll_ns = cfg.idle_poll_us ? cfg.idle_poll_us * NS_PER_US : 1;
        so.loop.on_stall = on_stall;
        r = rx_smp_new(&so, &smp);
        if (r < 0) {
                log_error("cannot start: %s: %s", scree_strerror(r), rx_loop_setup_hint(r));
                net_server_undo(srv);
                rc = 1;
                goto out;
        }
        srv->smp = smp;
        log_info("scree %s: %u shard(s), listening on %s, data in %s, commit log sync %s",
                 SCREE_VERSION, n, listen_addrs(srv, addrs, sizeof(addrs)), cfg.dir,
                 cfg.sync == CFG_SYNC_PERIODIC ? "periodic" : "batch");
        warn_exposure(srv);
        refused = serve(&set, srv) != 0;
        rc = refused ? 1 : 0;
        if (shut_down(srv) && rc == 0)
                rc = 1;
        rx_smp_stop(smp);
        rx_smp_free(smp);
        if (refused)
                net_server_undo(srv);   /* an engine did not open: leave the dir as it was */
        if (rc == 0)
                log_info("stopped cleanly");
out:
        net_server_free(srv);
        cfg_fini(&cfg);
        return rc;
}
