/* SPDX-License-Identifier: Apache-2.0 */
/*
 * disk-floor: scree's I/O mix without the engine, to tell what the disk
 * itself does to the reads' latency under a write load (docs/PERFORMANCE.md,
 * "At 10M keys": reads under writes, and the disk's floor).
 *
 * One pinned reactor per shard (rx_smp), each running, through its own
 * io_uring, what a shard of readwhilewriting sends to the disk:
 *   - the readers: 4 KiB O_DIRECT reads at random offsets of one shared
 *     file, one at a time (--inflight 1), latency from submission to the
 *     callback;
 *   - the log: every --log-period-ms a --log-kib write into a recycled,
 *     preallocated segment, then an fdatasync (periodic sync);
 *   - table writes: --table-mbps (per shard) in --chunk-kib O_DIRECT writes,
 *     one at a time, to new 16 MiB files, each fdatasynced when full and
 *     then removed (flushes and compactions);
 *   - compaction reads: --compaction-read-mbps (per shard) of sequential
 *     --chunk-kib reads of the shared file, one at a time.
 * Writes and reads are paced to their byte rates from the start of the run.
 *
 * A read counts as "during a log sync" when any shard's fdatasync was in
 * flight at its submission or completion, or started between the two; the
 * report splits the reads' percentiles that way, which is what shows whether
 * the device's flushes are what costs the reads.
 *
 * Files live in --dir: "reads" (--file-mb, kept between runs and rewritten
 * only when too small), and the shards' log and table files (removed at the
 * end). Opening, closing and removing the table files are plain system
 * calls on the shard's thread; everything else goes through its ring. Any
 * I/O error is fatal: message on stderr, exit 1; bad options exit 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
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
#include "perf/args.h"
#include "perf/hist.h"
#include "perf/rng.h"
#include "reactor/io.h"
#include "reactor/loop.h"
#include "reactor/smp.h"

#define READ_BYTES 4096u
#define LOG_SEGMENT_BYTES (64u << 20)
#define TABLE_FILE_BYTES (16u << 20)
#define FILL_CHUNK_BYTES (1u << 20)
#define MAX_SHARDS 64u
#define PATH_BYTES 512u

struct floor_opts {
        unsigned shards, seconds;
        const char *dir;
        uint64_t file_bytes;
        uint32_t log_bytes, log_period_ms;
        uint32_t chunk_bytes;
        uint64_t table_rate, cread_rate;        /* bytes/s per shard; 0 = none */
};

/* What every shard shares: the device-wide count of log syncs in flight
 * (and how many have started), so each read can tell whether it met one. */
struct floor {
        const struct floor_opts *o;
        struct floor_shard *shards;
        _Atomic int syncs_in_flight;
        _Atomic uint64_t syncs_started;
        _Atomic unsigned done;
        uint64_t t0_ns, end_ns;
};

/* A paced byte stream: a job whose next op is due when bytes/rate has passed. */
struct pace {
        uint64_t rate, bytes;
        struct rx_timer timer;
        struct rx_op op;
        uint8_t *buf;
        uint64_t off;
};

struct floor_shard {
        struct floor *f;
        struct rx_loop *loop;
        unsigned id;
        int read_fd, log_fd, table_fd;
        uint64_t rng;
        unsigned in_flight;             /* ops and armed timers */
        int err;
        /* the reader */
        struct rx_op read_op;
        uint8_t *read_buf;
        uint64_t read_start_ns, read_epoch;
        bool read_met_sync;
        /* the log */
        struct rx_op log_op;
        struct rx_timer log_timer;
        uint8_t *log_buf;
        uint64_t log_off, log_start_ns, log_n;
        /* table writes and compaction reads */
        struct pace table, cread;
        unsigned table_files;
        char table_path[PATH_BYTES];
        struct hist reads_sync, reads_quiet, log_lat;
};

static void usage(FILE *f)
{
        fprintf(f,
                "usage: disk-floor [options]  (scree's I/O mix without the engine)\n"
                "  --shards N               pinned reactors (default 2)\n"
                "  --seconds S              run time (default 20)\n"
                "  --dir DIR                (default /var/tmp/scree-disk-floor)\n"
                "  --file-mb N              the readers' file (default 4096)\n"
                "  --log-kib N              log write per sync (default 64)\n"
                "  --log-period-ms N        log write + fdatasync period, 0 = no log (default 10)\n"
                "  --table-mbps N           table writes per shard, MB/s (default 0)\n"
                "  --compaction-read-mbps N sequential reads per shard, MB/s (default 0)\n"
                "  --chunk-kib N            table write and compaction read size (default 256)\n");
}

static int parse_opt(struct floor_opts *o, int c, const char *arg)
{
        uint64_t v = 0;
        int r;

        switch (c) {
        case 'n': r = perf_parse_u64(arg, 1, MAX_SHARDS, &v); o->shards = (unsigned)v; break;
        case 't': r = perf_parse_u64(arg, 1, 86400, &v); o->seconds = (unsigned)v; break;
        case 'd': r = 0; o->dir = arg; break;
        case 'f': r = perf_parse_u64(arg, 1, UINT64_C(1) << 24, &v); o->file_bytes = v << 20; break;
        case 'l': r = perf_parse_u64(arg, 4, LOG_SEGMENT_BYTES >> 10, &v); o->log_bytes = (uint32_t)v << 10; break;
        case 'p': r = perf_parse_u64(arg, 0, 60000, &v); o->log_period_ms = (uint32_t)v; break;
        case 'w': r = perf_parse_u64(arg, 0, 100000, &v); o->table_rate = v * 1000000; break;
        case 'r': r = perf_parse_u64(arg, 0, 100000, &v); o->cread_rate = v * 1000000; break;
        case 'c': r = perf_parse_u64(arg, 4, TABLE_FILE_BYTES >> 10, &v); o->chunk_bytes = (uint32_t)v << 10; break;
        default: r = -EINVAL; break;
        }
        if (r == 0 && (c == 'l' || c == 'c') && v % 4 != 0)
                r = -EINVAL;            /* O_DIRECT: whole 4 KiB pages */
        return r;
}

static int parse_args(int argc, char **argv, struct floor_opts *o)
{
        static const struct option longopts[] = {
                { "shards", required_argument, NULL, 'n' },
                { "seconds", required_argument, NULL, 't' },
                { "dir", required_argument, NULL, 'd' },
                { "file-mb", required_argument, NULL, 'f' },
                { "log-kib", required_argument, NULL, 'l' },
                { "log-period-ms", required_argument, NULL, 'p' },
                { "table-mbps", required_argument, NULL, 'w' },
                { "compaction-read-mbps", required_argument, NULL, 'r' },
                { "chunk-kib", required_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                { NULL, 0, NULL, 0 },
        };
        int c, idx = 0;

        *o = (struct floor_opts){ .shards = 2, .seconds = 20, .dir = "/var/tmp/scree-disk-floor",
                                  .file_bytes = UINT64_C(4096) << 20, .log_bytes = 64u << 10,
                                  .log_period_ms = 10, .chunk_bytes = 256u << 10 };
        while ((c = getopt_long(argc, argv, "", longopts, &idx)) != -1) {
                if (c == 'h') {
                        usage(stdout);
                        exit(0);
                }
                if (parse_opt(o, c, optarg) < 0) {
                        if (c != '?')
                                fprintf(stderr, "disk-floor: bad value '%s' for --%s\n", optarg,
                                        longopts[idx].name);
                        usage(stderr);
                        return -EINVAL;
                }
        }
        if (optind != argc || o->chunk_bytes > o->file_bytes) {
                if (optind == argc)
                        fprintf(stderr, "disk-floor: --chunk-kib is larger than --file-mb\n");
                usage(stderr);
                return -EINVAL;
        }
        return 0;
}

/* ---- on the shards' threads ---- */

static void fail(struct floor_shard *s, const char *what, int res)
{
        if (!s->err) {
                fprintf(stderr, "disk-floor: shard %u: %s: %s\n", s->id, what,
                        res < 0 ? strerror(-res) : "short transfer");
                s->err = res < 0 ? res : -EIO;
        }
}

static bool running(const struct floor_shard *s)
{
        return !s->err && time_now_ns() < s->f->end_ns;
}

/* One op or timer fewer; the shard is done once none is left. */
static void settle(struct floor_shard *s)
{
        if (--s->in_flight == 0)
                atomic_fetch_add(&s->f->done, 1);
}

static void read_submit(struct floor_shard *s);

static void read_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct floor_shard *s = container_of(op, struct floor_shard, read_op);
        uint64_t d = time_now_ns() - s->read_start_ns;
        bool met = s->read_met_sync || atomic_load(&s->f->syncs_in_flight) > 0 ||
                   atomic_load(&s->f->syncs_started) != s->read_epoch;

        (void)loop;
        if (res != (int)READ_BYTES)
                fail(s, "read", res);
        hist_add(met ? &s->reads_sync : &s->reads_quiet, d);
        read_submit(s);
        settle(s);
}

static void read_submit(struct floor_shard *s)
{
        uint64_t blocks = s->f->o->file_bytes / READ_BYTES;
        uint64_t off = xorshift64s(&s->rng) % blocks * READ_BYTES;
        int r;

        if (!running(s))
                return;
        s->read_epoch = atomic_load(&s->f->syncs_started);
        s->read_met_sync = atomic_load(&s->f->syncs_in_flight) > 0;
        s->read_start_ns = time_now_ns();
        r = rx_file_read(s->loop, &s->read_op, s->read_fd, s->read_buf, READ_BYTES, off, read_done);
        if (r < 0) {
                fail(s, "read submit", r);
                return;
        }
        s->in_flight++;
}

static void log_arm(struct floor_shard *s);

static void log_synced(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct floor_shard *s = container_of(op, struct floor_shard, log_op);

        (void)loop;
        atomic_fetch_sub(&s->f->syncs_in_flight, 1);
        if (res != 0)
                fail(s, "log fdatasync", res);
        hist_add(&s->log_lat, time_now_ns() - s->log_start_ns);
        log_arm(s);
        settle(s);
}

static void log_written(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct floor_shard *s = container_of(op, struct floor_shard, log_op);
        int r;

        (void)loop;
        if (res != (int)s->f->o->log_bytes) {
                fail(s, "log write", res);
                settle(s);
                return;
        }
        atomic_fetch_add(&s->f->syncs_in_flight, 1);
        atomic_fetch_add(&s->f->syncs_started, 1);
        r = rx_file_fdatasync(s->loop, &s->log_op, s->log_fd, log_synced);
        if (r < 0) {
                atomic_fetch_sub(&s->f->syncs_in_flight, 1);
                fail(s, "log fdatasync submit", r);
                settle(s);
        }
}

static void log_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct floor_shard *s = container_of(t, struct floor_shard, log_timer);
        uint32_t len = s->f->o->log_bytes;
        int r = 0;

        (void)loop;
        s->log_start_ns = time_now_ns();
        if (!s->err)
                r = rx_file_write(s->loop, &s->log_op, s->log_fd, s->log_buf, len, s->log_off, log_written);
        if (r < 0 || s->err) {
                fail(s, "log write submit", r);
                settle(s);
                return;
        }
        s->log_off = (s->log_off + len) % (LOG_SEGMENT_BYTES / len * len);
}

/* The next log write is due a period after the last one was (a sync that
 * outlasts the period starts the next at once, as scree's periodic mode). */
static void log_arm(struct floor_shard *s)
{
        uint64_t due = s->f->t0_ns + ++s->log_n * s->f->o->log_period_ms * UINT64_C(1000000);

        if (due >= s->f->end_ns || s->err)
                return;
        if (rx_timer_arm_at(s->loop, &s->log_timer, due) < 0) {
                fail(s, "log timer", -ENOMEM);
                return;
        }
        s->in_flight++;
}

/* Arms p's timer for its next op (when bytes/rate has passed since t0);
 * returns false when the run is over. */
static bool pace_arm(struct floor_shard *s, struct pace *p)
{
        uint64_t due = s->f->t0_ns + (uint64_t)((double)p->bytes * 1e9 / (double)p->rate);

        if (due >= s->f->end_ns || s->err)
                return false;
        if (rx_timer_arm_at(s->loop, &p->timer, due) < 0) {
                fail(s, "pace timer", -ENOMEM);
                return false;
        }
        s->in_flight++;
        return true;
}

static void table_next_file(struct floor_shard *s)
{
        if (s->table_fd >= 0) {
                close(s->table_fd);
                unlink(s->table_path);
        }
        snprintf(s->table_path, sizeof(s->table_path), "%s/table-%u-%u", s->f->o->dir, s->id,
                 s->table_files++);
        s->table_fd = open(s->table_path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
        if (s->table_fd < 0)
                fail(s, "table open", -errno);
        s->table.off = 0;
}

static void table_synced(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct floor_shard *s = container_of(op, struct floor_shard, table.op);

        (void)loop;
        if (res != 0)
                fail(s, "table fdatasync", res);
        table_next_file(s);
        pace_arm(s, &s->table);
        settle(s);
}

static void table_written(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct floor_shard *s = container_of(op, struct floor_shard, table.op);
        int r;

        (void)loop;
        if (res != (int)s->f->o->chunk_bytes)
                fail(s, "table write", res);
        s->table.off += s->f->o->chunk_bytes;
        s->table.bytes += s->f->o->chunk_bytes;
        if (s->table.off + s->f->o->chunk_bytes > TABLE_FILE_BYTES && !s->err) {
                r = rx_file_fdatasync(s->loop, &s->table.op, s->table_fd, table_synced);
                if (r == 0)
                        return;
                fail(s, "table fdatasync submit", r);
        }
        pace_arm(s, &s->table);
        settle(s);
}

static void table_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct floor_shard *s = container_of(t, struct floor_shard, table.timer);
        int r = -EBADF;

        (void)loop;
        if (s->table_fd >= 0 && !s->err)
                r = rx_file_write(s->loop, &s->table.op, s->table_fd, s->table.buf,
                                  s->f->o->chunk_bytes, s->table.off, table_written);
        if (r < 0) {
                fail(s, "table write submit", r);
                settle(s);
        }
}

static void cread_done(struct rx_loop *loop, struct rx_op *op, int res)
{
        struct floor_shard *s = container_of(op, struct floor_shard, cread.op);
        uint32_t len = s->f->o->chunk_bytes;

        (void)loop;
        if (res != (int)len)
                fail(s, "compaction read", res);
        s->cread.bytes += len;
        s->cread.off += len;
        if (s->cread.off + len > s->f->o->file_bytes)
                s->cread.off = 0;
        pace_arm(s, &s->cread);
        settle(s);
}

static void cread_fire(struct rx_loop *loop, struct rx_timer *t)
{
        struct floor_shard *s = container_of(t, struct floor_shard, cread.timer);
        int r = -ECANCELED;

        (void)loop;
        if (!s->err)
                r = rx_file_read(s->loop, &s->cread.op, s->read_fd, s->cread.buf,
                                 s->f->o->chunk_bytes, s->cread.off, cread_done);
        if (r < 0) {
                fail(s, "compaction read submit", r);
                settle(s);
        }
}

static void shard_start(struct rx_loop *loop, void *arg)
{
        struct floor *f = arg;
        struct floor_shard *s = &f->shards[rx_loop_shard_id(loop)];

        s->loop = loop;
        s->in_flight = 1;               /* held until every job has started */
        rx_timer_init(&s->log_timer, log_fire, "disk-floor log");
        rx_timer_init(&s->table.timer, table_fire, "disk-floor table");
        rx_timer_init(&s->cread.timer, cread_fire, "disk-floor compaction read");
        read_submit(s);
        if (f->o->log_period_ms)
                log_arm(s);
        if (s->table.rate)
                pace_arm(s, &s->table);
        if (s->cread.rate)
                pace_arm(s, &s->cread);
        settle(s);
}

/* ---- setup and report, on the main thread ---- */

/* Writes [0, len) of fd in 1 MiB O_DIRECT writes, from `from` on. */
static int fill(int fd, uint64_t from, uint64_t len)
{
        uint8_t *buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, FILL_CHUNK_BYTES);
        int r = 0;

        if (!buf)
                return -ENOMEM;
        memset(buf, 0x5c, FILL_CHUNK_BYTES);
        for (uint64_t off = from; off < len && r == 0; off += FILL_CHUNK_BYTES) {
                uint64_t n = len - off < FILL_CHUNK_BYTES ? len - off : FILL_CHUNK_BYTES;
                ssize_t w = pwrite(fd, buf, n, (off_t)off);

                if (w != (ssize_t)n)
                        r = w < 0 ? -errno : -EIO;
        }
        mem_free_aligned(buf);
        return r == 0 && fdatasync(fd) < 0 ? -errno : r;
}

/* Opens path with O_DIRECT, written up to len (kept if already that long). */
static int open_filled(const char *path, uint64_t len, int *ret)
{
        struct stat st;
        int fd = open(path, O_RDWR | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
        int r = 0;

        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if ((uint64_t)st.st_size < len)
                r = fill(fd, (uint64_t)st.st_size / FILL_CHUNK_BYTES * FILL_CHUNK_BYTES, len);
        if (r < 0) {
                close(fd);
                return r;
        }
        *ret = fd;
        return 0;
}

static int shard_setup(struct floor *f, struct floor_shard *s, unsigned id)
{
        const struct floor_opts *o = f->o;
        char path[PATH_BYTES];
        int r;

        s->f = f;
        s->id = id;
        s->read_fd = s->log_fd = s->table_fd = -1;
        s->rng = UINT64_C(0x9E3779B97F4A7C15) * (id + 1);
        s->table.rate = o->table_rate;
        s->cread.rate = o->cread_rate;
        s->cread.off = o->file_bytes / o->shards * id / o->chunk_bytes * o->chunk_bytes;
        s->read_buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, READ_BYTES);
        s->log_buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, o->log_bytes);
        s->table.buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, o->chunk_bytes);
        s->cread.buf = mem_alloc_aligned(MEM_DIRECT_ALIGN, o->chunk_bytes);
        if (!s->read_buf || !s->log_buf || !s->table.buf || !s->cread.buf)
                return -ENOMEM;
        memset(s->log_buf, 0x1a, o->log_bytes);
        memset(s->table.buf, 0x2b, o->chunk_bytes);
        snprintf(path, sizeof(path), "%s/reads", o->dir);
        s->read_fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (s->read_fd < 0)
                return -errno;
        /* A log segment already written once, as scree recycles its own. */
        snprintf(path, sizeof(path), "%s/log-%u", o->dir, id);
        r = open_filled(path, o->log_period_ms ? LOG_SEGMENT_BYTES : 0, &s->log_fd);
        if (r == 0 && o->table_rate)
                table_next_file(s);
        return r < 0 ? r : s->err;
}

static void shard_cleanup(struct floor_shard *s)
{
        char path[PATH_BYTES];

        if (s->read_fd >= 0)
                close(s->read_fd);
        if (s->log_fd >= 0) {
                close(s->log_fd);
                snprintf(path, sizeof(path), "%s/log-%u", s->f->o->dir, s->id);
                unlink(path);
        }
        if (s->table_fd >= 0) {
                close(s->table_fd);
                unlink(s->table_path);
        }
        mem_free_aligned(s->read_buf);
        mem_free_aligned(s->log_buf);
        mem_free_aligned(s->table.buf);
        mem_free_aligned(s->cread.buf);
}

static void print_hist(const char *name, const struct hist *h, double secs)
{
        printf("%-22s %9" PRIu64 " %9.0f %7.0f %7.0f %7.0f %8.0f %8.0f\n", name, h->count,
               (double)h->count / secs, hist_quantile(h, 0.5) / 1e3, hist_quantile(h, 0.9) / 1e3,
               hist_quantile(h, 0.99) / 1e3, hist_quantile(h, 0.999) / 1e3, hist_max(h) / 1e3);
}

static void report(const struct floor *f, struct hist *h)
{
        const struct floor_opts *o = f->o;
        double secs = (double)(f->end_ns - f->t0_ns) / 1e9;
        uint64_t table = 0, cread = 0;

        for (unsigned i = 0; i < o->shards; i++) {
                hist_merge(&h[0], &f->shards[i].reads_sync);
                hist_merge(&h[0], &f->shards[i].reads_quiet);
                hist_merge(&h[1], &f->shards[i].reads_sync);
                hist_merge(&h[2], &f->shards[i].reads_quiet);
                hist_merge(&h[3], &f->shards[i].log_lat);
                table += f->shards[i].table.bytes;
                cread += f->shards[i].cread.bytes;
        }
        printf("# disk-floor: shards=%u seconds=%u file=%" PRIu64 "MiB log=%uKiB/%ums table=%" PRIu64
               "MB/s compaction-reads=%" PRIu64 "MB/s chunk=%uKiB (rates per shard)\n",
               o->shards, o->seconds, o->file_bytes >> 20, o->log_bytes >> 10, o->log_period_ms,
               o->table_rate / 1000000, o->cread_rate / 1000000, o->chunk_bytes >> 10);
        printf("%-22s %9s %9s %7s %7s %7s %8s %8s\n", "# op", "count", "ops/s", "p50us", "p90us",
               "p99us", "p999us", "maxus");
        print_hist("reads", &h[0], secs);
        print_hist("reads_during_log_sync", &h[1], secs);
        print_hist("reads_otherwise", &h[2], secs);
        print_hist("log_write_fdatasync", &h[3], secs);
        printf("# %.1f%% of reads met a log sync; table writes %.1f MB/s, compaction reads %.1f MB/s"
               " (all shards)\n", h[0].count ? 100.0 * (double)h[1].count / (double)h[0].count : 0.0,
               (double)table / secs / 1e6, (double)cread / secs / 1e6);
}

static int run(struct floor *f)
{
        struct rx_smp_opts so = { .n_shards = f->o->shards, .on_start = shard_start, .arg = f };
        struct rx_smp *smp;
        int r;

        f->t0_ns = time_now_ns();
        f->end_ns = f->t0_ns + f->o->seconds * UINT64_C(1000000000);
        r = rx_smp_new(&so, &smp);
        if (r < 0) {
                fprintf(stderr, "disk-floor: reactors: %s (%s)\n", scree_strerror(r), rx_loop_setup_hint(r));
                return r;
        }
        while (atomic_load(&f->done) < f->o->shards)
                usleep(10000);
        rx_smp_stop(smp);
        rx_smp_free(smp);
        for (unsigned i = 0; i < f->o->shards; i++)
                if (f->shards[i].err)
                        return f->shards[i].err;
        return 0;
}

int main(int argc, char **argv)
{
        struct floor_opts o;
        struct floor f = { .o = &o };
        struct hist *h = NULL;
        char path[PATH_BYTES];
        int fd = -1, r;

        if (parse_args(argc, argv, &o) < 0)
                return 2;
        if (mkdir(o.dir, 0755) < 0 && errno != EEXIST) {
                fprintf(stderr, "disk-floor: mkdir %s: %s\n", o.dir, strerror(errno));
                return 1;
        }
        snprintf(path, sizeof(path), "%s/reads", o.dir);
        r = open_filled(path, o.file_bytes, &fd);
        if (fd >= 0)
                close(fd);
        f.shards = calloc(o.shards, sizeof(*f.shards));
        h = calloc(4, sizeof(*h));
        if (r == 0 && (!f.shards || !h))
                r = -ENOMEM;
        for (unsigned i = 0; i < o.shards && r == 0 && f.shards; i++)
                r = shard_setup(&f, &f.shards[i], i);
        if (r < 0)
                fprintf(stderr, "disk-floor: setup in %s: %s\n", o.dir, strerror(-r));
        else
                r = run(&f);
        if (r == 0)
                report(&f, h);
        for (unsigned i = 0; f.shards && i < o.shards; i++)
                if (f.shards[i].f)
                        shard_cleanup(&f.shards[i]);
        free(f.shards);
        free(h);
        return r == 0 ? 0 : 1;
}
