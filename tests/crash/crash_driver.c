/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's driver (crash_test.h): round after round it starts the
 * writer on the same directory with a pipe on its stdout, SIGKILLs it at a
 * seeded random moment -- while it starts and recovers, while it reads
 * back, or while it writes -- and feeds every line it printed to the
 * checker (crash_model.h). The read-back at the start of each round checks
 * the recovery from the previous kill; a last writer started with --check
 * reads everything back once more and closes the shard cleanly.
 *
 * Only the writer processes this driver started are ever signalled, by
 * their pid. The scratch directory is removed on success and kept (and
 * named) on failure.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/time.h"
#include "tests/crash/crash_model.h"
#include "tests/crash/crash_test.h"

#define READY_WAIT_NS (30 * NS_PER_SEC)         /* a read-back that takes longer is killed */
#define CHECK_WAIT_NS (120 * NS_PER_SEC)

struct driver {
        char dir[PATH_MAX];
        bool own_dir;
        uint64_t seed, rounds, max_ms, inflight, periodic_ms;
        bool expect_violation;
        struct crash_model *m;
        uint64_t total_acked;
        char why[1024];
};

/* One writer's life, as seen through its output. */
struct run {
        uint32_t round;
        bool check;
        pid_t pid;
        int fd;
        uint64_t start_ns, ready_ns, kill_after_ns, end_ns;
        bool kill_from_ready, ready, eof;
        uint64_t acks, keys, replayed;
        struct crash_model_info kept;   /* of the last tail, after the read-back */
        int verdict;                    /* 0, or CRASH_EXIT_* with d->why */
        char buf[8192];
        size_t len;
};

/* ---- the writer's lines ---- */

/* Fills d->why with "what: detail" (detail may be NULL) and returns code. */
static int violation(struct driver *d, int code, const char *what, const char *detail)
{
        snprintf(d->why, sizeof(d->why), "%s%s%.300s", what, detail ? ": " : "", detail ? detail : "");
        return code;
}

static int line_state(struct driver *d, struct run *r, const char *line)
{
        unsigned key;
        char val[32];
        struct crash_state st = { 0 };

        if (sscanf(line, "S %u %31s", &key, val) != 2)
                return violation(d, CRASH_EXIT_USAGE, "bad line", line);
        if (strcmp(val, "-") != 0) {
                st.present = true;
                st.ver = strtoull(val, NULL, 16);
        }
        r->keys++;
        return crash_model_observe(d->m, key, st, d->why, sizeof(d->why)) < 0 ?
               CRASH_EXIT_VIOLATION : 0;
}

static int line_ready(struct driver *d, struct run *r)
{
        if (r->ready)
                return violation(d, CRASH_EXIT_USAGE, "ready twice", NULL);
        if (crash_model_dump_end(d->m, true, d->why, sizeof(d->why)) < 0)
                return CRASH_EXIT_VIOLATION;
        crash_model_info(d->m, &r->kept);
        r->ready = true;
        r->ready_ns = time_now_ns();
        if (!r->check)
                crash_model_round_begin(d->m, r->round);
        return 0;
}

static int line_ack(struct driver *d, struct run *r, const char *line)
{
        unsigned long long index;
        unsigned k0, k1;
        char letter;

        if (!r->ready || r->check || sscanf(line, "A %llu %c %u %u", &index, &letter, &k0, &k1) != 4)
                return violation(d, CRASH_EXIT_USAGE, "unexpected line", line);
        r->acks++;
        return crash_model_ack(d->m, index, letter, k0, k1, d->why, sizeof(d->why)) < 0 ?
               CRASH_EXIT_USAGE : 0;
}

static int on_line(struct driver *d, struct run *r, const char *line)
{
        switch (line[0]) {
        case 'O':
                r->replayed = strtoull(line + 1, NULL, 10);
                return 0;
        case 'S':
                return line_state(d, r, line);
        case 'G':
                r->keys++;
                return violation(d, CRASH_EXIT_VIOLATION, "a value read back is wrong: key", line + 2);
        case 'R':
                return line_ready(d, r);
        case 'A':
                return line_ack(d, r, line);
        default:
                return violation(d, CRASH_EXIT_USAGE, "unexpected line", line);
        }
}

/* Reads what is there (blocking if wait); feeds whole lines to the checker
 * until the first verdict. Sets r->eof at end of file. */
static void read_some(struct driver *d, struct run *r)
{
        ssize_t n = read(r->fd, r->buf + r->len, sizeof(r->buf) - 1 - r->len);
        char *line, *nl;

        if (n < 0 && errno == EINTR)
                return;
        if (n <= 0) {
                r->eof = true;
                return;
        }
        r->len += (size_t)n;
        r->buf[r->len] = 0;
        line = r->buf;
        while (!r->verdict && (nl = strchr(line, '\n'))) {
                *nl = 0;
                r->verdict = on_line(d, r, line);
                line = nl + 1;
        }
        r->len -= (size_t)(line - r->buf);
        memmove(r->buf, line, r->len);
        if (r->len == sizeof(r->buf) - 1 && !r->verdict)
                r->verdict = violation(d, CRASH_EXIT_USAGE, "line too long", NULL);
}

/* ---- one writer ---- */

static int spawn(struct driver *d, struct run *r)
{
        char round[24], seed[24], inflight[24], period[24];
        char *argv[16];
        int p[2], n = 0;

        snprintf(round, sizeof(round), "%u", r->round);
        snprintf(seed, sizeof(seed), "%" PRIu64, d->seed);
        snprintf(inflight, sizeof(inflight), "%" PRIu64, d->inflight);
        snprintf(period, sizeof(period), "%" PRIu64, d->periodic_ms);
        argv[n++] = "crash_test";
        argv[n++] = "writer";
        argv[n++] = d->dir;
        argv[n++] = "--seed";
        argv[n++] = seed;
        argv[n++] = "--round";
        argv[n++] = round;
        argv[n++] = "--inflight";
        argv[n++] = inflight;
        argv[n++] = "--periodic-ms";
        argv[n++] = period;
        if (r->check)
                argv[n++] = "--check";
        argv[n] = NULL;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        r->start_ns = time_now_ns();
        r->pid = fork();
        if (r->pid < 0) {
                close(p[0]);
                close(p[1]);
                return -errno;
        }
        if (r->pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);       /* never outlive the driver */
                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(127);
                execv("/proc/self/exe", argv);
                _exit(127);
        }
        close(p[1]);
        r->fd = p[0];
        return 0;
}

static uint64_t kill_deadline(const struct run *r)
{
        if (r->check)
                return r->start_ns + CHECK_WAIT_NS;
        if (!r->kill_from_ready)
                return r->start_ns + r->kill_after_ns;
        return r->ready ? r->ready_ns + r->kill_after_ns : r->start_ns + READY_WAIT_NS;
}

/* Reads the writer's output until its kill moment, a verdict or its exit. */
static void watch(struct driver *d, struct run *r)
{
        while (!r->eof && !r->verdict) {
                uint64_t now = time_now_ns(), until = kill_deadline(r);
                struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

                if (now >= until)
                        return;
                if (poll(&pfd, 1, (int)((until - now + NS_PER_MS - 1) / NS_PER_MS)) > 0)
                        read_some(d, r);
        }
}

/* SIGKILLs the writer (ours, by pid), reads the rest and reaps it. Returns
 * 0, or CRASH_EXIT_ENGINE if it died any other way than the kill or a
 * clean exit. */
static int finish(struct driver *d, struct run *r)
{
        int status;

        r->end_ns = time_now_ns();
        kill(r->pid, SIGKILL);          /* not yet reaped: the pid is still ours */
        while (!r->eof && !r->verdict)
                read_some(d, r);
        close(r->fd);
        while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !r->check)
                return 0;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        if (WIFEXITED(status))
                snprintf(d->why, sizeof(d->why), "the writer exited with status %d (see its stderr)",
                         WEXITSTATUS(status));
        else
                snprintf(d->why, sizeof(d->why), "the writer died of signal %d", WTERMSIG(status));
        return CRASH_EXIT_ENGINE;
}

/* Seeded kill moment: 15% during start-up and recovery, 15% anywhere in the
 * first max_ms, else 20..max_ms after the read-back, while writing. */
static void plan_kill(const struct driver *d, struct run *r)
{
        uint64_t h = crash_mix(d->seed ^ crash_mix(r->round));
        unsigned pct = (unsigned)(h % 100);

        h >>= 8;
        if (pct < 15) {
                r->kill_after_ns = h % (15 * NS_PER_MS);
        } else if (pct < 30) {
                r->kill_after_ns = h % (d->max_ms * NS_PER_MS);
        } else {
                r->kill_from_ready = true;
                r->kill_after_ns = 20 * NS_PER_MS + h % ((d->max_ms - 20 + 1) * NS_PER_MS);
        }
}

static unsigned count_files(const char *dir, const char *suffix)
{
        DIR *dh = opendir(dir);
        struct dirent *de;
        size_t sl = strlen(suffix);
        unsigned n = 0;

        while (dh && (de = readdir(dh))) {
                size_t len = strlen(de->d_name);

                n += len > sl && strcmp(de->d_name + len - sl, suffix) == 0;
        }
        if (dh)
                closedir(dh);
        return n;
}

static void print_round(struct driver *d, const struct run *r)
{
        const char *how = r->check ? "checked" : !r->kill_from_ready ? "killed from start" :
                          r->ready ? "killed while writing" : "killed waiting for read-back";
        uint64_t from = r->kill_from_ready && r->ready ? r->ready_ns : r->start_ns;

        printf("round %u: %s after %" PRIu64 " ms; read back %" PRIu64 " keys%s (replayed %"
               PRIu64 "; of %" PRIu64 " unacked writes %" PRIu64 "..%" PRIu64 " kept); %" PRIu64
               " writes acked (%" PRIu64 " in all); %u sst, %u log\n",
               r->round, how, (r->end_ns - from) / NS_PER_MS, r->keys, r->ready ? "" : " (cut)",
               r->replayed, r->kept.dumped_tail, r->kept.dumped_min, r->kept.dumped_max, r->acks,
               d->total_acked, count_files(d->dir, ".sst"), count_files(d->dir, ".log"));
        fflush(stdout);
}

/* Runs one writer to its kill (or, with check, to its clean exit). */
static int run_writer(struct driver *d, uint32_t round, bool check)
{
        struct run r = { .round = round, .check = check };
        int err;

        crash_model_dump_begin(d->m);
        if (!check)
                plan_kill(d, &r);
        err = spawn(d, &r);
        if (err < 0) {
                snprintf(d->why, sizeof(d->why), "starting the writer: %s", strerror(-err));
                return CRASH_EXIT_USAGE;
        }
        watch(d, &r);
        err = finish(d, &r);
        if (r.verdict)
                return r.verdict;
        if (err)
                return err;
        if (check && !r.ready)
                return violation(d, CRASH_EXIT_ENGINE, "the check did not read every key", NULL);
        if (!r.ready) {
                err = crash_model_dump_end(d->m, false, d->why, sizeof(d->why));
                crash_model_info(d->m, &r.kept);
        }
        else if (!check)
                err = crash_model_round_end(d->m, r.acks + d->inflight, d->why, sizeof(d->why));
        if (err < 0)
                return CRASH_EXIT_VIOLATION;
        d->total_acked += r.acks;
        print_round(d, &r);
        return 0;
}

/* ---- set-up ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static uint64_t env_or(const char *name, uint64_t v)
{
        const char *s = getenv(name);

        return s && *s ? strtoull(s, NULL, 10) : v;
}

static int parse(struct driver *d, int argc, char **argv)
{
        const char *dir = crash_arg_str(argc, argv, "dir");

        d->rounds = 15;
        d->seed = 1;
        d->max_ms = 300;
        d->inflight = CRASH_DEFAULT_INFLIGHT;
        if (!crash_arg_u64(argc, argv, "rounds", &d->rounds) ||
            !crash_arg_u64(argc, argv, "seed", &d->seed) ||
            !crash_arg_u64(argc, argv, "max-ms", &d->max_ms) ||
            !crash_arg_u64(argc, argv, "inflight", &d->inflight) ||
            !crash_arg_u64(argc, argv, "unsafe-periodic-ms", &d->periodic_ms))
                return -1;
        d->rounds = env_or("CRASH_ROUNDS", d->rounds);
        d->seed = env_or("CRASH_SEED", d->seed);
        d->max_ms = env_or("CRASH_MAX_MS", d->max_ms);
        d->expect_violation = crash_arg_flag(argc, argv, "expect-violation");
        if (d->rounds == 0 || d->rounds >= UINT32_MAX - 1 || d->max_ms < 20 || d->inflight == 0 ||
            d->inflight > 4096)
                return -1;
        if (dir) {
                snprintf(d->dir, sizeof(d->dir), "%s", dir);
                return 0;
        }
        snprintf(d->dir, sizeof(d->dir), "/var/tmp/scree-crash-XXXXXX");
        if (!mkdtemp(d->dir)) {
                perror("mkdtemp");
                return -1;
        }
        d->own_dir = true;
        return 0;
}

static int verdict(struct driver *d, int code, uint64_t round)
{
        if (d->expect_violation) {
                if (code == CRASH_EXIT_VIOLATION) {
                        printf("expected violation found in round %" PRIu64 ": %s\n", round, d->why);
                        code = 0;
                } else if (code == 0) {
                        printf("no violation found, though writes were acknowledged early\n");
                        code = CRASH_EXIT_VIOLATION;
                }
        } else if (code) {
                fprintf(stderr, "crash_test: %s in round %" PRIu64 " (seed %" PRIu64 "): %s\n",
                        code == CRASH_EXIT_VIOLATION ? "VIOLATION" : "FAILED", round, d->seed,
                        d->why);
        }
        if (code == 0 && d->own_dir)
                nftw(d->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        else if (code)
                fprintf(stderr, "crash_test: data kept in %s\n", d->dir);
        crash_model_free(d->m);
        return code;
}

int crash_driver_main(int argc, char **argv)
{
        static struct driver d;
        uint64_t round;
        int code = 0;

        if (parse(&d, argc, argv) < 0) {
                fprintf(stderr, "usage: crash_test run [--dir DIR] [--rounds N] [--seed S] "
                        "[--max-ms M (>= 20)] [--inflight W] [--unsafe-periodic-ms N "
                        "--expect-violation]\n  env CRASH_ROUNDS, CRASH_SEED, CRASH_MAX_MS override\n");
                return CRASH_EXIT_USAGE;
        }
        d.m = crash_model_new(d.seed, CRASH_N_KEYS);
        if (!d.m)
                return CRASH_EXIT_USAGE;
        printf("crash_test: %" PRIu64 " rounds, seed %" PRIu64 ", kill within %" PRIu64 " ms, "
               "%" PRIu64 " writes in flight, %s, dir %s\n", d.rounds, d.seed, d.max_ms, d.inflight,
               d.periodic_ms ? "UNSAFE periodic sync" : "batch sync", d.dir);
        fflush(stdout);
        for (round = 1; round <= d.rounds && !code; round++)
                code = run_writer(&d, (uint32_t)round, false);
        if (code)
                return verdict(&d, code, round - 1);
        code = run_writer(&d, (uint32_t)round, true);       /* the final check */
        if (!code)
                printf("crash_test: %" PRIu64 " rounds, %" PRIu64 " acknowledged writes, all kept\n",
                       d.rounds, d.total_acked);
        return verdict(&d, code, round);
}
