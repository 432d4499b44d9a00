/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What scree-bench's engines share; see bench_run.h: results, pacing,
 * the workers' generators, and the data directory.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/mem.h"
#include "base/time.h"
#include "perf/bench_run.h"

void bench_result_begin(struct bench_result *r, uint64_t t0_ns)
{
        struct hist *sec = r->sec;
        size_t cap = r->cap_sec;

        memset(r, 0, offsetof(struct bench_result, sec));
        if (sec)
                memset(sec, 0, cap * sizeof(*sec));
        r->n_sec = 0;
        r->t0_ns = t0_ns;
        r->start_ns = time_now_ns();
        atomic_store_explicit(&r->progress, 0, memory_order_relaxed);
        r->err = 0;
}

/* The histogram of second s (since t0), growing the series to hold it. */
static struct hist *second(struct bench_result *r, uint64_t s)
{
        if (s >= r->cap_sec) {
                size_t old = r->cap_sec;
                struct hist *v = mem_grow(r->sec, &r->cap_sec, s + 1, sizeof(*v));

                if (!v)
                        return NULL;
                memset(v + old, 0, (r->cap_sec - old) * sizeof(*v));
                r->sec = v;
        }
        if (s >= r->n_sec)
                r->n_sec = s + 1;
        return &r->sec[s];
}

int bench_result_add(struct bench_result *r, enum bench_opc cls, uint64_t start_ns,
                     uint64_t end_ns, bool series)
{
        uint64_t ns = end_ns > start_ns ? end_ns - start_ns : 0;

        hist_add(&r->lat, ns);
        hist_add(&r->by_cls[cls], ns);
        r->ops++;
        atomic_store_explicit(&r->progress, r->ops, memory_order_relaxed);
        if (series) {
                struct hist *h = second(r, end_ns > r->t0_ns ? (end_ns - r->t0_ns) / NS_PER_SEC : 0);

                if (!h)
                        return -ENOMEM;
                hist_add(h, ns);
        }
        return 0;
}

void bench_result_fail(struct bench_result *r, unsigned worker, enum bench_workload w, int err)
{
        if (err >= 0 || r->err)
                return;
        r->err = err;
        fprintf(stderr, "scree-bench: worker %u: %s failed: %s\n", worker, bench_workload_name(w),
                scree_strerror(err));
}

void bench_result_fini(struct bench_result *r)
{
        if (!r)
                return;
        free(r->sec);
        r->sec = NULL;
        r->n_sec = r->cap_sec = 0;
}

void bench_pace_init(struct bench_pace *p, const struct bench_opts *o, enum bench_workload w,
                     uint64_t n_keys, uint64_t t0_ns)
{
        uint64_t secs = o->duration ? o->duration : o->max_seconds;

        memset(p, 0, sizeof(*p));
        p->t0_ns = t0_ns;
        p->deadline_ns = t0_ns + secs * NS_PER_SEC;
        if (o->duration)
                p->target = n_keys ? UINT64_MAX : 0;
        else if (bench_workload_writes(w) || !n_keys)
                p->target = n_keys;
        else    /* the read count shared out like the keys */
                p->target = (o->reads * n_keys + o->k.num - 1) / o->k.num;
        if (o->rate)
                p->interval_ns = (uint64_t)o->k.workers * NS_PER_SEC / o->rate;
        if (o->write_rate)
                p->bg_interval_ns = (uint64_t)o->k.workers * NS_PER_SEC / o->write_rate;
}

void bench_thread_precise_timers(void)
{
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
}

int bench_engine_workers_new(struct bench_engine *e)
{
        e->gen = calloc(e->n, sizeof(*e->gen));
        e->res = calloc(e->n, sizeof(*e->res));
        if (!e->gen || !e->res)
                return -ENOMEM;
        for (unsigned i = 0; i < e->n; i++) {
                e->gen[i] = bench_gen_new(&e->o->k, i);
                e->res[i] = calloc(1, sizeof(*e->res[i]));
                if (!e->gen[i] || !e->res[i])
                        return -ENOMEM;
        }
        return 0;
}

void bench_engine_workers_free(struct bench_engine *e)
{
        for (unsigned i = 0; i < e->n; i++) {
                if (e->gen)
                        bench_gen_free(e->gen[i]);
                if (e->res) {
                        bench_result_fini(e->res[i]);
                        free(e->res[i]);
                }
        }
        free(e->gen);
        free(e->res);
        e->gen = NULL;
        e->res = NULL;
}

/* Removes dir's files and subdirectories (not dir itself). */
static int dir_empty(const char *dir)
{
        char path[PATH_MAX];
        struct dirent *de;
        DIR *d = opendir(dir);

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                struct stat st;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
                        dir_empty(path);
                        rmdir(path);
                } else {
                        unlink(path);
                }
        }
        closedir(d);
        return 0;
}

int bench_dir_prepare(const char *parent, const char *dir, bool use_existing)
{
        if (mkdir(parent, 0755) < 0 && errno != EEXIST)
                return -errno;
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return use_existing ? 0 : dir_empty(dir);
}

uint64_t bench_dir_bytes(const char *dir)
{
        char path[PATH_MAX];
        struct dirent *de;
        uint64_t sum = 0;
        DIR *d = opendir(dir);

        if (!d)
                return 0;
        while ((de = readdir(d))) {
                struct stat st;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
                if (lstat(path, &st) < 0)
                        continue;
                if (S_ISDIR(st.st_mode))
                        sum += bench_dir_bytes(path);
                else
                        sum += (uint64_t)st.st_blocks * 512;
        }
        closedir(d);
        return sum;
}
