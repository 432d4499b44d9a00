/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress: a multi-threaded load generator for any server that speaks
 * RESP (scree, redis-server, ...). Options overlap redis-benchmark's where
 * they can (-h -p -a -c -P -n -r -d); the workload is a SET:GET ratio, a
 * YCSB mix (A-F) or one command given after the options (as
 * redis-benchmark's), over a key distribution (perf/keydist.h), run closed loop
 * or open loop at a fixed rate with latency from the intended send time.
 * docs/benchmarks.md ("scree-stress") describes the method.
 *
 * The main thread parses the options, starts the workers
 * (perf/scree_stress_worker.h), times the pre-load and the run between
 * barriers, draws the progress line on stderr when it is a terminal, and
 * prints the results (perf/scree_stress_report.h). Exit status: 0 done, 1
 * a fatal error (cannot connect, connection dropped, AUTH refused, an error
 * reply with --stop-on-error, errors while pre-loading), 2 bad options.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/time.h"
#include "perf/args.h"
#include "perf/scree_stress_report.h"
#include "perf/scree_stress_worker.h"

#define DEFAULT_REQUESTS 100000u
#define MAX_THREADS 256u
#define MAX_CONNS 100000u
#define MAX_VALUE_BYTES (64u << 20)

struct cli {
        struct stress_cfg cfg;
        const char *host, *port;
        const char *timeseries;
        enum stress_format format;
        enum keydist_kind dist;
        double theta;
        bool have_n, quiet;
};

static struct stress_shared *g_shared;      /* for the SIGINT handler */

static void usage(FILE *f)
{
        fprintf(f,
                "usage: scree-stress [options] [-- COMMAND WORD...]\n"
                "  -h HOST             server (default 127.0.0.1)    -p PORT   (default 6379)\n"
                "  -a PASSWORD         AUTH on every connection\n"
                "  --threads N         worker threads, each with its share of the connections (default 2)\n"
                "  -c N                connections in all (default 50)\n"
                "  -P N                pipeline: operations in flight per connection (default 1)\n"
                "  --ratio S:G         SET:GET mix (default 1:10), e.g. 1:0 only SETs\n"
                "  --ycsb A..F         a YCSB core workload instead (read=GET, update=SET, insert=SET of a\n"
                "                      new key, scan=MGET of 1..--scan-length keys, rmw=GET then SET)\n"
                "  --distribution D    uniform|zipfian|latest|sequential|gaussian (default uniform; YCSB:\n"
                "                      the workload's own)   --theta X   zipfian/latest exponent (0.99)\n"
                "  -r N                keyspace: keys 0..N-1 (default 1000000)\n"
                "  --key-prefix S      (default key:); keys are S + the number in 12 digits\n"
                "  --key-offset N      add N to every key's number (e.g. a sequential load's next part)\n"
                "  --key-scatter       write number i as (i * 618033988749) mod 10^12: consecutive\n"
                "                      numbers spread evenly over an ordered key space, one to one\n"
                "  -d N                value size in bytes (default 100)\n"
                "  -n N                operations in all (default %u unless --duration)\n"
                "  --duration SECS     run this long (with -n: whichever comes first)\n"
                "  --rate OPS          open loop: this many ops/s in all, latency from the intended\n"
                "                      send time   --poisson   exponential gaps instead of even ones\n"
                "  --load              SET every key of the keyspace first (not measured)\n"
                "  --load-pipeline N   pipeline of the pre-load (default 64)\n"
                "  --scan-length N     YCSB scan: most keys per MGET (default 100)\n"
                "  --json | --csv      machine-readable results on stdout\n"
                "  --timeseries FILE   per-second ops, errors, p50 and p99 as CSV\n"
                "  --stop-on-error     an error reply is fatal   --seed N   --quiet (no progress line)\n"
                "  COMMAND WORD...     send this command as every operation instead of SET and GET,\n"
                "                      __key__ replaced by a drawn key and __data__ by the value; as\n"
                "                      in redis-benchmark, options end at its first word (or at --)\n",
                DEFAULT_REQUESTS);
}

static int parse_u32(const char *s, uint32_t min, uint32_t max, unsigned *ret)
{
        uint64_t v;
        int r = perf_parse_u64(s, min, max, &v);

        if (r == 0)
                *ret = (unsigned)v;
        return r;
}

static int parse_double(const char *s, double min, double max, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= min && v <= max))
                return -EINVAL;
        *ret = v;
        return 0;
}

static int parse_ratio(struct stress_cfg *cfg, const char *s)
{
        char buf[64], *colon;

        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        colon = strchr(buf, ':');
        if (!colon)
                return -EINVAL;
        *colon = '\0';
        if (parse_u32(buf, 0, 1000000, &cfg->set_weight) < 0 ||
            parse_u32(colon + 1, 0, 1000000, &cfg->get_weight) < 0)
                return -EINVAL;
        return cfg->set_weight + cfg->get_weight > 0 ? 0 : -EINVAL;
}

static int parse_opt(struct cli *c, int ch, const char *arg)
{
        struct stress_cfg *cfg = &c->cfg;
        double secs;
        int r;

        switch (ch) {
        case 'h': c->host = arg; return 0;
        case 'p': c->port = arg; return perf_parse_u64(arg, 1, 65535, &(uint64_t){ 0 });
        case 'a': cfg->password = arg; return 0;
        case 'T': return parse_u32(arg, 1, MAX_THREADS, &cfg->threads);
        case 'c': return parse_u32(arg, 1, MAX_CONNS, &cfg->conns);
        case 'P': return parse_u32(arg, 1, 1u << 20, &cfg->pipeline);
        case 'R': return parse_ratio(cfg, arg);
        case 'Y': cfg->mix = strlen(arg) == 1 ? ycsb_mix_get(arg[0]) : NULL; return cfg->mix ? 0 : -EINVAL;
        case 'D': c->dist = keydist_parse(arg); return c->dist == KEYDIST_INVALID ? -EINVAL : 0;
        case 't': return parse_double(arg, 1e-9, 1 - 1e-9, &c->theta);
        case 'r': return perf_parse_u64(arg, 1, UINT64_C(1) << 40, &cfg->keyspace);
        case 'k': cfg->key_prefix = arg; return strlen(arg) <= 200 ? 0 : -EINVAL;
        case 'K': return perf_parse_u64(arg, 0, UINT64_C(1) << 40, &cfg->key_offset);
        case 'X': cfg->key_scatter = true; return 0;
        case 'd': return parse_u32(arg, 0, MAX_VALUE_BYTES, &cfg->value_size);
        case 'n': c->have_n = true; return perf_parse_u64(arg, 1, UINT64_MAX - 1, &cfg->requests);
        case 'u':
                r = parse_double(arg, 0.001, 1e7, &secs);
                cfg->duration_ns = (uint64_t)(secs * 1e9);
                return r;
        case 'q': return parse_double(arg, 0.001, 1e9, &cfg->rate);
        case 'o': cfg->poisson = true; return 0;
        case 'l': cfg->load = true; return 0;
        case 'L': return parse_u32(arg, 1, 1u << 16, &cfg->load_pipeline);
        case 's': return parse_u32(arg, 1, 100000, &cfg->scan_max);
        case 'j': c->format = STRESS_FORMAT_JSON; return 0;
        case 'v': c->format = STRESS_FORMAT_CSV; return 0;
        case 'S': c->timeseries = arg; return 0;
        case 'e': cfg->stop_on_error = true; return 0;
        case 'z': return perf_parse_u64(arg, 1, UINT64_MAX, &cfg->seed);
        case 'Q': c->quiet = true; return 0;
        default: return -EINVAL;
        }
}

static void defaults(struct cli *c)
{
        memset(c, 0, sizeof(*c));
        c->host = "127.0.0.1";
        c->port = "6379";
        c->dist = KEYDIST_INVALID;      /* the workload's own */
        c->theta = KEYDIST_DEFAULT_THETA;
        c->cfg = (struct stress_cfg){
                .threads = 2, .conns = 50, .pipeline = 1, .set_weight = 1, .get_weight = 10,
                .keyspace = 1000000, .key_prefix = "key:", .value_size = 100, .scan_max = 100,
                .requests = DEFAULT_REQUESTS, .load_pipeline = 64, .seed = 301,
        };
}

/* Option combinations; fills in what follows from them. Returns a message or NULL. */
static const char *check(struct cli *c, bool ratio_given, int n_formats)
{
        struct stress_cfg *cfg = &c->cfg;
        enum keydist_kind k = c->dist;

        if (ratio_given && cfg->mix)
                return "--ratio and --ycsb exclude each other";
        if (cfg->cmd_argc && (ratio_given || cfg->mix))
                return "a command excludes --ratio and --ycsb";
        if (n_formats > 1)
                return "--json and --csv exclude each other";
        if (cfg->poisson && cfg->rate <= 0)
                return "--poisson needs --rate";
        if (cfg->duration_ns && !c->have_n)
                cfg->requests = UINT64_MAX;
        if (cfg->threads > cfg->conns)
                cfg->threads = cfg->conns;      /* every thread has a connection */
        if (k == KEYDIST_INVALID)
                k = cfg->mix ? cfg->mix->dist : KEYDIST_UNIFORM;
        if (keydist_init(&cfg->dist, k, cfg->keyspace, c->theta) < 0)
                return "bad --distribution, --theta or -r";
        return NULL;
}

static int parse_args(int argc, char **argv, struct cli *c)
{
        static const struct option longopts[] = {
                { "threads", required_argument, NULL, 'T' },    { "ratio", required_argument, NULL, 'R' },
                { "ycsb", required_argument, NULL, 'Y' },       { "distribution", required_argument, NULL, 'D' },
                { "theta", required_argument, NULL, 't' },      { "key-prefix", required_argument, NULL, 'k' },
                { "duration", required_argument, NULL, 'u' },   { "rate", required_argument, NULL, 'q' },
                { "poisson", no_argument, NULL, 'o' },          { "load", no_argument, NULL, 'l' },
                { "load-pipeline", required_argument, NULL, 'L' }, { "scan-length", required_argument, NULL, 's' },
                { "json", no_argument, NULL, 'j' },             { "csv", no_argument, NULL, 'v' },
                { "timeseries", required_argument, NULL, 'S' }, { "stop-on-error", no_argument, NULL, 'e' },
                { "seed", required_argument, NULL, 'z' },       { "quiet", no_argument, NULL, 'Q' },
                { "key-offset", required_argument, NULL, 'K' }, { "key-scatter", no_argument, NULL, 'X' },
                { "help", no_argument, NULL, 'H' },
                { NULL, 0, NULL, 0 },
        };
        const char *msg;
        bool ratio_given = false;
        int ch, n_formats = 0;

        defaults(c);
        /* "+": options end at the first word that is not one, as in
         * redis-benchmark, so a command's own words are never taken for
         * options (SET k -c 5 is a command of four words). */
        while ((ch = getopt_long(argc, argv, "+h:p:a:c:P:r:d:n:", longopts, NULL)) != -1) {
                if (ch == 'H') {
                        usage(stdout);
                        exit(0);
                }
                ratio_given |= ch == 'R';
                n_formats += ch == 'j' || ch == 'v';
                if (ch == '?' || ch == ':')
                        return -EINVAL;         /* getopt said why */
                if (parse_opt(c, ch, optarg) < 0) {
                        fprintf(stderr, "scree-stress: bad value for %s: %s\n",
                                argv[optind - 1] == optarg ? argv[optind - 2] : argv[optind - 1], optarg);
                        return -EINVAL;
                }
        }
        /* What follows the options is a command to send (after "--" if its
         * first word starts with '-'). */
        c->cfg.cmd_argv = argv + optind;
        c->cfg.cmd_argc = (unsigned)(argc - optind);
        msg = check(c, ratio_given, n_formats);
        if (msg) {
                fprintf(stderr, "scree-stress: %s\n", msg);
                return -EINVAL;
        }
        return 0;
}

/* ---- running ---- */

static int resolve(struct cli *c)
{
        struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
        struct stress_cfg *cfg = &c->cfg;
        int r = getaddrinfo(c->host, c->port, &hints, &ai);

        snprintf(cfg->target, sizeof(cfg->target), strchr(c->host, ':') ? "[%s]:%s" : "%s:%s", c->host,
                 c->port);
        if (r != 0) {
                fprintf(stderr, "scree-stress: %s: %s\n", cfg->target, gai_strerror(r));
                return -EINVAL;
        }
        memcpy(&cfg->addr, ai->ai_addr, ai->ai_addrlen);
        cfg->addr_len = ai->ai_addrlen;
        freeaddrinfo(ai);
        return 0;
}

static void on_sigint(int sig)
{
        (void)sig;
        if (g_shared)
                atomic_store(&g_shared->stop, true);
}

/* Splits the connections, the requests and the keyspace among the workers. */
static void plan(const struct stress_cfg *cfg, struct stress_shared *sh, struct stress_worker *w)
{
        for (unsigned i = 0; i < cfg->threads; i++) {
                unsigned first = (unsigned)((uint64_t)cfg->conns * i / cfg->threads);
                unsigned end = (unsigned)((uint64_t)cfg->conns * (i + 1) / cfg->threads);
                uint64_t k0 = cfg->keyspace * i / cfg->threads, k1 = cfg->keyspace * (i + 1) / cfg->threads;

                w[i].sh = sh;
                w[i].id = i;
                w[i].conn_first = first;
                w[i].n_conns = end - first;
                /* in proportion to the connections, so open-loop threads end together */
                w[i].quota = cfg->requests == UINT64_MAX ? UINT64_MAX :
                             (uint64_t)((long double)cfg->requests * end / cfg->conns) -
                             (uint64_t)((long double)cfg->requests * first / cfg->conns);
                w[i].load_first = k0;
                w[i].load_count = k1 - k0;
        }
}

static bool all_finished(const struct stress_worker *w, unsigned n)
{
        for (unsigned i = 0; i < n; i++)
                if (!atomic_load(&w[i].finished))
                        return false;
        return true;
}

/* Redraws the progress line about once a second until every worker ends. */
static void progress(const struct cli *c, const struct stress_worker *w, uint64_t start_ns)
{
        bool show = !c->quiet && isatty(STDERR_FILENO);
        uint64_t last_ops = 0, last_ns = start_ns, next_ns = start_ns + NS_PER_SEC;

        while (!all_finished(w, c->cfg.threads)) {
                uint64_t now = time_now_ns(), ops = 0, errs = 0;

                usleep(50000);
                if (!show || now < next_ns)
                        continue;
                for (unsigned i = 0; i < c->cfg.threads; i++) {
                        ops += atomic_load_explicit(&w[i].progress_ops, memory_order_relaxed);
                        errs += atomic_load_explicit(&w[i].progress_errors, memory_order_relaxed);
                }
                fprintf(stderr, "\rscree-stress: %5.0f s %12" PRIu64 " ops %10.0f ops/s now %8" PRIu64 " errors ",
                        (double)(now - start_ns) / 1e9, ops,
                        (double)(ops - last_ops) * 1e9 / (double)(now - last_ns), errs);
                last_ops = ops;
                last_ns = now;
                next_ns = now + NS_PER_SEC;
        }
        if (show && next_ns > start_ns + NS_PER_SEC)
                fprintf(stderr, "\r%78s\r", "");
}

static void print_config(const struct cli *c)
{
        const struct stress_cfg *cfg = &c->cfg;

        if (c->format != STRESS_FORMAT_TEXT)
                return;
        printf("# scree-stress: %s, %u connections on %u threads, pipeline %u, ", cfg->target, cfg->conns,
               cfg->threads, cfg->pipeline);
        if (cfg->rate > 0)
                printf("open loop at %.0f ops/s (%s gaps), ", cfg->rate, cfg->poisson ? "Poisson" : "even");
        else
                printf("closed loop, ");
        if (cfg->mix)
                printf("YCSB %c", cfg->mix->name);
        else if (cfg->cmd_argc)
                printf("command %s (%u words)", cfg->cmd_argv[0], cfg->cmd_argc);
        else
                printf("SET:GET %u:%u", cfg->set_weight, cfg->get_weight);
        printf(", %s over %" PRIu64 " keys, %u-byte values\n", keydist_name(cfg->dist.kind), cfg->keyspace,
               cfg->value_size);
        fflush(stdout);
}

/* Runs the workers through their phases; fills s's timings. Returns 0 or -1 (sh->err says why). */
static int run(struct cli *c, struct stress_shared *sh, struct stress_worker *w, struct stress_summary *s)
{
        const struct stress_cfg *cfg = &c->cfg;
        unsigned started = 0;
        uint64_t t0, end = 0;
        int r = 0;

        for (; started < cfg->threads && r == 0; started++)
                r = stress_worker_start(&w[started]);
        if (r < 0) {
                /* nothing started waits on a barrier that cannot fill: give up at once */
                fprintf(stderr, "scree-stress: starting threads: %s\n", strerror(-r));
                exit(1);
        }
        pthread_barrier_wait(&sh->barrier);             /* connected */
        t0 = time_now_ns();
        if (cfg->load) {
                pthread_barrier_wait(&sh->barrier);     /* loaded */
                s->loaded = true;
                s->load_secs = (double)(time_now_ns() - t0) / 1e9;
                for (unsigned i = 0; i < cfg->threads; i++) {
                        s->load_keys += w[i].loaded;
                        s->load_errors += w[i].load_errors;
                }
                if (s->load_errors)
                        stress_fail(sh, "pre-load: %" PRIu64 " SETs failed, the first with: %s", s->load_errors,
                                    sh->first_error_reply);
        }
        sh->start_ns = time_now_ns();
        pthread_barrier_wait(&sh->barrier);             /* go */
        progress(c, w, sh->start_ns);
        for (unsigned i = 0; i < cfg->threads; i++) {
                stress_worker_join(&w[i]);
                end = w[i].end_ns > end ? w[i].end_ns : end;
        }
        s->secs = end > sh->start_ns ? (double)(end - sh->start_ns) / 1e9 : 0;
        s->interrupted = atomic_load(&sh->stop);
        return atomic_load(&sh->abort) ? -1 : 0;
}

static char *make_value(uint32_t n)
{
        char *v = malloc(n ? n : 1);

        if (v)
                memset(v, 'x', n);
        return v;
}

int main(int argc, char **argv)
{
        static struct stress_shared sh = { .err_set = ATOMIC_FLAG_INIT, .error_reply_set = ATOMIC_FLAG_INIT,
                                           .ack_lock = PTHREAD_MUTEX_INITIALIZER };
        struct stress_worker *w = NULL;
        struct stress_summary *s = NULL;
        char *value = NULL;
        struct cli c;
        int r;

        if (parse_args(argc, argv, &c) < 0) {
                fprintf(stderr, "scree-stress: try --help\n");
                return 2;
        }
        if (resolve(&c) < 0)
                return 1;
        value = make_value(c.cfg.value_size);
        w = calloc(c.cfg.threads, sizeof(*w));
        s = calloc(1, sizeof(*s));
        if (!value || !w || !s || pthread_barrier_init(&sh.barrier, NULL, c.cfg.threads + 1) != 0) {
                fprintf(stderr, "scree-stress: out of memory\n");
                return 1;
        }
        c.cfg.value = value;
        c.cfg.timeseries = c.timeseries != NULL;
        sh.cfg = &c.cfg;
        g_shared = &sh;
        signal(SIGINT, on_sigint);
        signal(SIGPIPE, SIG_IGN);
        plan(&c.cfg, &sh, w);
        print_config(&c);
        r = run(&c, &sh, w, s);
        if (r < 0) {
                fprintf(stderr, "scree-stress: %s\n", sh.err);
        } else {
                s->first_error = atomic_flag_test_and_set(&sh.error_reply_set) ? sh.first_error_reply : NULL;
                stress_summary_merge(s, &c.cfg, w, c.cfg.threads);
                stress_report_print(stdout, c.format, &c.cfg, s);
                if (s->first_error)
                        fprintf(stderr, "scree-stress: %" PRIu64 " error replies, the first: %s\n", s->all.errors,
                                s->first_error);
                if (c.timeseries && (r = stress_report_timeseries(c.timeseries, w, c.cfg.threads)) < 0)
                        fprintf(stderr, "scree-stress: writing %s: %s\n", c.timeseries, strerror(-r));
        }
        for (unsigned i = 0; i < c.cfg.threads; i++)
                stress_worker_fini(&w[i]);
        pthread_barrier_destroy(&sh.barrier);
        free(s);
        free(w);
        free(value);
        return r < 0 ? 1 : 0;
}
