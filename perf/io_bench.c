/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_bench: 4 KiB O_DIRECT random writes or reads through the reactor at a
 * fixed queue depth, to compare the reactor's I/O path with fio (see
 * perf/io_vs_fio).
 *
 * One standalone loop on the main thread. qd requests are submitted at start;
 * each completion records its latency (submit to callback) and resubmits the
 * same request at a new random 4 KiB-aligned offset (xorshift64*), so exactly
 * qd ops stay in flight. A timer ends the run after --seconds and --ops caps
 * the op count; the in-flight ops then drain and the loop stops. The file is
 * first filled with written data up to --size-mb, so reads never hit holes.
 *
 * Output: one line (or a JSON object with --json) with IOPS, MB/s (10^6
 * bytes) and p50/p99 latency from a log-linear histogram (~1.5% buckets).
 * Any I/O error or short transfer is fatal: message on stderr, exit 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/mem.h"
#include "base/time.h"
#include "perf/hist.h"
#include "perf/args.h"
#include "perf/rng.h"
#include "reactor/io.h"
#include "reactor/loop.h"

#define BS_BYTES 4096u
#define FILL_CHUNK_BYTES (1u << 20)
#define MAX_QD 4096u
#define OPS_PER_SEC_CAP UINT64_C(10000000)      /* default --ops: far above any device */

struct bench_opts {
        const char *path;
        uint64_t size_bytes;
        uint64_t max_ops;
        unsigned qd;
        unsigned seconds;
        bool write;
        bool json;
        bool poll;              /* loop never sleeps: busy-polls the ring */
        bool verbose;
};

struct bench;

struct bench_req {
        struct rx_op op;
        struct bench *b;
        uint8_t *buf;
        uint64_t off;
        uint64_t submit_ns;
};

struct bench {
        const struct bench_opts *o;
        struct rx_loop *loop;
        int fd;
        uint64_t n_blocks;
        uint64_t rng;
        struct bench_req *reqs;
        unsigned in_flight;
        uint64_t submitted, completed;
        bool draining;
        int err;
        uint64_t start_ns, end_ns;
        struct rx_timer stop_timer;
        struct hist lat;
};

static void usage(FILE *f)
{
        fprintf(f, "usage: io_bench --file PATH --size-mb N --qd N --seconds S "
                   "--mode randwrite|randread [--ops N] [--poll] [--json] [--verbose]\n"
                   "  4 KiB O_DIRECT random I/O through the reactor at a fixed queue depth.\n"
                   "  --ops caps the op count (default: seconds * 10M); --poll busy-polls.\n");
}

static int parse_mode(const char *s, bool *ret_write)
{
        if (strcmp(s, "randwrite") == 0)
                *ret_write = true;
        else if (strcmp(s, "randread") == 0)
                *ret_write = false;
        else
                return -EINVAL;
        return 0;
}

static int parse_opt(struct bench_opts *o, int c, const char *arg, bool *have_mode)
{
        uint64_t v = 0;
        int r = 0;

        switch (c) {
        case 'f': o->path = arg; break;
        case 's': r = perf_parse_u64(arg, 1, UINT64_C(1) << 24, &v); o->size_bytes = v << 20; break;
        case 'q': r = perf_parse_u64(arg, 1, MAX_QD, &v); o->qd = (unsigned)v; break;
        case 't': r = perf_parse_u64(arg, 1, 86400, &v); o->seconds = (unsigned)v; break;
        case 'n': r = perf_parse_u64(arg, 1, UINT64_MAX, &v); o->max_ops = v; break;
        case 'm': r = parse_mode(arg, &o->write); *have_mode = r == 0; break;
        case 'j': o->json = true; break;
        case 'p': o->poll = true; break;
        case 'v': o->verbose = true; break;
        default: r = -EINVAL; break;
        }
        return r;
}

static int parse_args(int argc, char **argv, struct bench_opts *o)
{
        static const struct option longopts[] = {
                { "file", required_argument, NULL, 'f' },    { "size-mb", required_argument, NULL, 's' },
                { "qd", required_argument, NULL, 'q' },      { "seconds", required_argument, NULL, 't' },
                { "mode", required_argument, NULL, 'm' },    { "ops", required_argument, NULL, 'n' },
                { "json", no_argument, NULL, 'j' },          { "poll", no_argument, NULL, 'p' },
                { "verbose", no_argument, NULL, 'v' },       { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        bool have_mode = false;
        int c;

        memset(o, 0, sizeof(*o));
        o->qd = 32;
        o->seconds = 5;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                if (c == 'h') {
                        usage(stdout);
                        exit(0);
                }
                if (parse_opt(o, c, optarg, &have_mode) < 0) {
                        fprintf(stderr, "io_bench: bad option or value%s%s\n",
                                optarg ? ": " : "", optarg ? optarg : "");
                        return -EINVAL;
                }
        }
        if (!o->path || !o->size_bytes || !have_mode || optind != argc)
                return -EINVAL;
        if (!o->max_ops)
                o->max_ops = (uint64_t)o->seconds * OPS_PER_SEC_CAP;
        return 0;
}

/* Writes non-zero data from `from` up to `to` so that reads find real blocks. */
static int fill_file(int fd, uint64_t from, uint64_t to)
{
        uint8_t *buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, FILL_CHUNK_BYTES);
        uint64_t seed = 0x9e3779b97f4a7c15u;
        int r = 0;

        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < FILL_CHUNK_BYTES / sizeof(uint64_t); i++)
                ((uint64_t *)(void *)buf)[i] = xorshift64s(&seed);
        for (uint64_t off = from; off < to && r == 0; off += FILL_CHUNK_BYTES) {
                size_t len = to - off < FILL_CHUNK_BYTES ? (size_t)(to - off) : FILL_CHUNK_BYTES;
                ssize_t n = pwrite(fd, buf, len, (off_t)off);

                if (n < 0)
                        r = -errno;
                else if (n != (ssize_t)len)
                        r = -ENOSPC;    /* a short write: the filesystem is full */
        }
        if (r == 0 && fdatasync(fd) < 0)
                r = -errno;
        mem_free_aligned(buf);
        return r;
}

/* Opens path with O_DIRECT and makes sure it holds size_bytes of written data. */
static int prepare_file(const struct bench_opts *o, int *ret_fd)
{
        struct stat st;
        uint64_t have;
        int fd = open(o->path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
        int r;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto fail;
        }
        /* Round down: a partial last chunk may be short. A sparse file (fewer
         * blocks than its size) is rewritten whole: reads must not hit holes. */
        have = (uint64_t)st.st_size & ~(uint64_t)(FILL_CHUNK_BYTES - 1);
        if ((uint64_t)st.st_blocks * 512 < o->size_bytes)
                have = 0;
        if (have < o->size_bytes) {
                r = fill_file(fd, have, o->size_bytes);
                if (r < 0)
                        goto fail;
        }
        *ret_fd = fd;
        return 0;
fail:
        close(fd);
        return r;
}

static void on_io(struct rx_loop *loop, struct rx_op *op, int res);

static int req_submit(struct bench *b, struct bench_req *q)
{
        int r;

        q->off = (xorshift64s(&b->rng) % b->n_blocks) * BS_BYTES;
        q->submit_ns = time_now_ns();
        if (b->o->write)
                r = rx_file_write(b->loop, &q->op, b->fd, q->buf, BS_BYTES, q->off, on_io);
        else
                r = rx_file_read(b->loop, &q->op, b->fd, q->buf, BS_BYTES, q->off, on_io);
        if (r < 0)
                return r;
        b->in_flight++;
        b->submitted++;
        return 0;
}

/* Stops issuing; the loop stops once the last op in flight completes. */
static void bench_drain(struct bench *b)
{
        if (!b->draining) {
                b->draining = true;
                rx_timer_cancel(b->loop, &b->stop_timer);
        }
        if (b->in_flight == 0) {
                b->end_ns = time_now_ns();
                rx_loop_stop(b->loop);
        }
}

/* res is the failed op's result: -errno, or a short byte count. */
static void bench_fail(struct bench *b, struct bench_req *q, int res)
{
        const char *what = b->o->write ? "write" : "read";

        if (!b->err) {
                b->err = res < 0 ? res : -EIO;
                if (res < 0)
                        fprintf(stderr, "io_bench: %s at offset %" PRIu64 " failed: %s\n", what,
                                q->off, scree_strerror(res));
                else
                        fprintf(stderr, "io_bench: short %s at offset %" PRIu64 ": %d of %u bytes\n",
                                what, q->off, res, BS_BYTES);
        }
        bench_drain(b);
}

static void on_io(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct bench_req *q = container_of(op, struct bench_req, op);
        struct bench *b = q->b;
        int r;

        (void)loop;
        b->in_flight--;
        if (res != (int)BS_BYTES) {
                bench_fail(b, q, res);
                return;
        }
        hist_add(&b->lat, time_now_ns() - q->submit_ns);
        b->completed++;
        if (b->draining || b->submitted >= b->o->max_ops) {
                bench_drain(b);
                return;
        }
        r = req_submit(b, q);
        if (r < 0)
                bench_fail(b, q, r);
}

static void on_stop_timer(struct rx_loop *loop, struct rx_timer *t)
{
        struct bench *b = container_of(t, struct bench, stop_timer);

        (void)loop;
        bench_drain(b);
}

static int reqs_new(struct bench *b)
{
        b->reqs = calloc(b->o->qd, sizeof(*b->reqs));
        if (!b->reqs)
                return -ENOMEM;
        for (unsigned i = 0; i < b->o->qd; i++) {
                struct bench_req *q = &b->reqs[i];

                q->b = b;
                q->buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, BS_BYTES);
                if (!q->buf)
                        return -ENOMEM;
                for (unsigned j = 0; j < BS_BYTES / sizeof(uint64_t); j++)
                        ((uint64_t *)(void *)q->buf)[j] = xorshift64s(&b->rng);
        }
        return 0;
}

static void reqs_free(struct bench *b)
{
        if (!b->reqs)
                return;
        for (unsigned i = 0; i < b->o->qd; i++)
                mem_free_aligned(b->reqs[i].buf);
        free(b->reqs);
}

/* Submits the first qd ops and runs the loop until they drained. */
static int bench_run(struct bench *b)
{
        int r;

        rx_timer_init(&b->stop_timer, on_stop_timer, "io_bench:stop");
        b->start_ns = time_now_ns();
        r = rx_timer_arm_after(b->loop, &b->stop_timer, (uint64_t)b->o->seconds * NS_PER_SEC);
        for (unsigned i = 0; r == 0 && i < b->o->qd && b->submitted < b->o->max_ops; i++)
                r = req_submit(b, &b->reqs[i]);
        if (r < 0) {
                fprintf(stderr, "io_bench: submit: %s\n", scree_strerror(r));
                return r;
        }
        rx_loop_run(b->loop);
        return b->err;
}

static void report(const struct bench *b)
{
        double secs = (double)(b->end_ns - b->start_ns) / 1e9;
        double iops = secs > 0 ? (double)b->completed / secs : 0;
        double mbps = iops * BS_BYTES / 1e6;
        double p50 = (double)hist_quantile(&b->lat, 0.50) / 1e3;
        double p99 = (double)hist_quantile(&b->lat, 0.99) / 1e3;
        const char *mode = b->o->write ? "randwrite" : "randread";

        if (b->o->json)
                printf("{\"mode\":\"%s\",\"qd\":%u,\"bs\":%u,\"ops\":%" PRIu64 ",\"seconds\":%.3f,"
                       "\"iops\":%.0f,\"mbps\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
                       mode, b->o->qd, BS_BYTES, b->completed, secs, iops, mbps, p50, p99);
        else
                printf("io_bench mode=%s qd=%u bs=%u iops=%.0f mbps=%.1f p50_us=%.1f p99_us=%.1f\n",
                       mode, b->o->qd, BS_BYTES, iops, mbps, p50, p99);
}

static void report_loop(const struct bench *b)
{
        const struct rx_loop_stats *s = rx_loop_stats(b->loop);
        char feat[256];

        rx_uring_features_format(rx_loop_features(b->loop), feat, sizeof(feat));
        fprintf(stderr, "%s\nloop: iterations=%" PRIu64 " sleeps=%" PRIu64 " io_submitted=%" PRIu64
                        " io_completed=%" PRIu64 " busy_ms=%" PRIu64 " idle_ms=%" PRIu64 "\n",
                feat, s->iterations, s->sleeps, s->io_submitted, s->io_completed,
                s->busy_ns / NS_PER_MS, s->idle_ns / NS_PER_MS);
}

static int bench_setup(struct bench *b, const struct bench_opts *o)
{
        struct rx_loop_opts lo = { .never_sleep = o->poll };
        int r;

        memset(b, 0, sizeof(*b));
        b->o = o;
        b->fd = -1;
        b->n_blocks = o->size_bytes / BS_BYTES;
        b->rng = time_now_ns() | 1;
        lo.ring_entries = o->qd > RX_LOOP_DEFAULT_RING_ENTRIES ? o->qd : 0;
        r = prepare_file(o, &b->fd);
        if (r < 0) {
                fprintf(stderr, "io_bench: preparing %s (%" PRIu64 " MiB): %s\n", o->path,
                        o->size_bytes >> 20, strerror(-r));
                return r;
        }
        r = rx_loop_new(&lo, &b->loop);
        if (r < 0) {
                fprintf(stderr, "io_bench: rx_loop_new: %s (%s)\n", scree_strerror(r),
                        rx_loop_setup_hint(r));
                return r;
        }
        r = reqs_new(b);
        if (r < 0)
                fprintf(stderr, "io_bench: out of memory\n");
        return r;
}

int main(int argc, char **argv)
{
        struct bench_opts o;
        struct bench *b = NULL;
        int r;

        if (parse_args(argc, argv, &o) < 0) {
                usage(stderr);
                return 2;
        }
        b = malloc(sizeof(*b));         /* the histogram is ~30 KiB: keep it off the stack */
        if (!b)
                return 1;
        r = bench_setup(b, &o);
        if (r == 0)
                r = bench_run(b);
        if (r == 0)
                report(b);
        if (r == 0 && o.verbose)
                report_loop(b);
        rx_loop_free(b->loop);         /* first: it cancels what is still in flight */
        reqs_free(b);
        if (b->fd >= 0)
                close(b->fd);
        free(b);
        return r == 0 ? 0 : 1;
}
