/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the shard tests (one test program; each file its own suite):
 * a scratch directory, a loop and a fault-injecting fs per test (Criterion
 * forks per test, so the statics are per test), the shard opened on them,
 * and synchronous wrappers around its calls. Header-only; tests only.
 */
#ifndef SCREE_TESTS_ENGINE_SHARD_HELPERS_H
#define SCREE_TESTS_ENGINE_SHARD_HELPERS_H

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/shard.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

static char dir[PATH_MAX];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_shard *sh;
static struct eng_shard_opts opts;

static inline void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "shard");
        engine_test_loop_fs(&loop, &fs);
        opts = (struct eng_shard_opts){ .dir = dir, .shard = 0, .n_shards = 1,
                                        .segment_bytes = 256 << 10 };
}

static inline void shard_close_sync(void);

static inline void teardown(void)
{
        if (sh)
                shard_close_sync();
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
}


/* ---- synchronous wrappers ---- */

static bool op_done;
static int op_res;

static inline void on_open(void *arg, int res, struct eng_shard *s)
{
        (void)arg;
        op_done = true;
        op_res = res;
        sh = s;
}

static inline int shard_open_sync(void)
{
        op_done = false;
        sh = NULL;
        cr_assert(eq(int, eng_shard_open(loop, fs, &opts, on_open, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &op_done), 0));
        return op_res;
}

static inline void on_closed(void *arg, int res)
{
        (void)arg;
        op_done = true;
        op_res = res;
}

static inline void shard_close_sync(void)
{
        op_done = false;
        cr_assert(eq(int, eng_shard_close(sh, on_closed, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &op_done), 0));
        sh = NULL;
}

/* Closes, and opens again on a fresh fs over the same files. */
static inline int reopen(void)
{
        shard_close_sync();
        eng_fs_free(fs);
        fs = eng_fault_fs_new(loop);
        return shard_open_sync();
}

/* Cuts the power now, then opens again on a fresh fs. */
static inline int power_cut_reopen(bool tear, uint64_t seed)
{
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, tear, seed), 0));
        return reopen();
}

struct wr {
        struct eng_write w;
        bool done;
        int res;
};

static inline void on_write(struct eng_write *w, int res)
{
        struct wr *x = w->ctx;

        cr_assert(not(x->done), "write done twice");
        x->done = true;
        x->res = res;
}

/* Starts a write; returns eng_shard_write's result (x tracks the rest). */
static inline int write_async(struct wr *x, const struct eng_mutation *m, uint32_t n)
{
        int r;

        memset(x, 0, sizeof(*x));
        x->w.done = on_write;
        x->w.ctx = x;
        r = eng_shard_write(sh, m, n, &x->w);
        if (r == 1) {
                x->done = true;
                x->res = 0;
        } else if (r < 0) {
                x->done = true;
                x->res = r;
        }
        return r;
}

static inline int write_sync(const struct eng_mutation *m, uint32_t n)
{
        struct wr x;

        write_async(&x, m, n);
        cr_assert(eq(int, rx_loop_run_until(loop, &x.done), 0));
        return x.res;
}

static inline struct eng_mutation put_m(const char *k, const char *v, uint64_t expiry)
{
        return (struct eng_mutation){ .kind = ENG_MUT_PUT, .table = ENG_TABLE_DEFAULT,
                                      .key = k, .key_len = (uint32_t)strlen(k),
                                      .value = v, .value_len = (uint32_t)strlen(v),
                                      .expiry_ms = expiry };
}

static inline struct eng_mutation del_m(const char *k)
{
        return (struct eng_mutation){ .kind = ENG_MUT_DEL, .table = ENG_TABLE_DEFAULT,
                                      .key = k, .key_len = (uint32_t)strlen(k) };
}

static inline int put_sync(const char *k, const char *v)
{
        struct eng_mutation m = put_m(k, v, 0);

        return write_sync(&m, 1);
}

static inline int del_sync(const char *k)
{
        struct eng_mutation m = del_m(k);

        return write_sync(&m, 1);
}

struct rd {
        struct eng_get g;
        bool done;
        int res;
};

static inline void on_get(struct eng_get *g, int res)
{
        struct rd *x = g->ctx;

        x->done = true;
        x->res = res;
}

/* Looks (t, k) up, waiting for the disk if it has to. Returns 0 (x->g
 * holds the value: eng_get_release it), -SCREE_ENOTFOUND or an error. */
static inline int get_wait(uint32_t t, const void *k, uint32_t len, struct rd *x)
{
        int r;

        *x = (struct rd){ .g = { .done = on_get } };
        x->g.ctx = x;
        r = eng_shard_get(sh, t, k, len, &x->g);
        if (r == 1) {
                cr_assert(eq(int, rx_loop_run_until(loop, &x->done), 0));
                r = x->res;
        }
        return r;
}

/* Reads (t, k) into out (NUL-terminated, cut to cap). Returns 0,
 * -SCREE_ENOTFOUND or an error. */
static inline int get_copy(uint32_t t, const void *k, uint32_t len, char *out, size_t cap)
{
        struct rd x;
        int r = get_wait(t, k, len, &x);

        if (r == 0) {
                size_t n = x.g.value_len < cap - 1 ? x.g.value_len : cap - 1;

                memcpy(out, x.g.value, n);
                out[n] = 0;
                eng_get_release(&x.g);
        }
        return r;
}

/* Reads k of the Redis keyspace's table into out, as get_copy. */
static inline int get_sync(const char *k, char *out, size_t cap)
{
        return get_copy(ENG_TABLE_DEFAULT, k, (uint32_t)strlen(k), out, cap);
}

static inline void expect_value(const char *k, const char *want)
{
        char buf[1024];
        int r = get_sync(k, buf, sizeof(buf));

        if (!want) {
                cr_expect(eq(int, r, -SCREE_ENOTFOUND), "key %s should be absent, got %d", k, r);
                return;
        }
        cr_assert(eq(int, r, 0), "key %s: %d", k, r);
        cr_expect(eq(str, buf, (char *)want), "key %s", k);
}

static inline int flush_sync(void)
{
        op_done = false;
        cr_assert(eq(int, eng_shard_flush(sh, on_closed, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &op_done), 0));
        return op_res;
}

static inline void run_for_ms(unsigned ms)
{
        engine_test_run_for_ms(loop, ms);
}

static inline unsigned count_files(const char *ext)
{
        DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        cr_assert(not(eq(ptr, d, NULL)));
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);

                if (len > 4 && strcmp(de->d_name + len - 4, ext) == 0)
                        n++;
        }
        closedir(d);
        return n;
}

/* ---- read-modify-write: an increment (or set-if-absent) ---- */

struct incr {
        struct eng_rmw r;
        char buf[32];
        bool done, absent_only;
        int res;
};

/* INCR, or SETNX when absent_only: writes "1" only if the key is absent. */
static inline int incr_fn(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct incr *x = arg;
        long v = 0;

        if (cur && x->absent_only)
                return 0;
        if (cur) {
                char tmp[32];
                size_t n = cur->value_len < sizeof(tmp) - 1 ? cur->value_len : sizeof(tmp) - 1;

                memcpy(tmp, cur->value, n);
                tmp[n] = 0;
                v = strtol(tmp, NULL, 10);
        }
        out->value = x->buf;
        out->value_len = (uint32_t)snprintf(x->buf, sizeof(x->buf), "%ld", v + 1);
        return 1;
}

static inline void on_rmw(struct eng_rmw *r, int res)
{
        struct incr *x = r->ctx;

        cr_assert(not(x->done), "rmw done twice");
        x->done = true;
        x->res = res;
}

#endif
