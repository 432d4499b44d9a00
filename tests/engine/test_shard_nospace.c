/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A full disk through the fault-injecting fs (issue 23, "Disk full"): a
 * commit-log segment that cannot be made, or a log write that runs out of
 * space, fails the writes waiting for it with -ENOSPC and later ones at
 * once; once space returns the shard takes writes again by itself, no
 * restart, with every acknowledged write there, also after a reopen. A
 * close on a full disk succeeds, and a start that finds no space fails
 * leaving the directory as it was (names and sizes). The real-disk
 * counterpart is tests/integration/test_nospace.py.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/shard.h"
#include "tests/engine/helpers.h"
#include "tests/tmpdir.h"

#include "tests/engine/shard_helpers.h"

TestSuite(shard_nospace, .init = setup, .fini = teardown, .timeout = 120);

#define N_KEYS 4000

static bool acked[N_KEYS];

static void kv(int i, char *k, size_t klen, char *v, size_t vlen)
{
        snprintf(k, klen, "key%05d", i);
        snprintf(v, vlen, "value-%05d-%0900d", i, i);
}

/* Puts keys from *next on until one fails; returns its error (0: none
 * failed below upto). */
static int put_until_failure(int *next, int upto)
{
        char k[32], v[1024];

        for (; *next < upto && *next < N_KEYS; (*next)++) {
                int r;

                kv(*next, k, sizeof(k), v, sizeof(v));
                r = put_sync(k, v);
                if (r < 0) {
                        (*next)++;
                        return r;
                }
                acked[*next] = true;
        }
        return 0;
}

static int put_sync_i(int i)
{
        char k[32], v[1024];
        int r;

        kv(i, k, sizeof(k), v, sizeof(v));
        r = put_sync(k, v);
        acked[i] = r == 0;
        return r;
}

static void expect_acked(int upto)
{
        char k[32], v[1024];

        for (int i = 0; i < upto; i++) {
                if (!acked[i])
                        continue;
                kv(i, k, sizeof(k), v, sizeof(v));
                expect_value(k, v);
        }
}

static int close_res(void)
{
        op_done = false;
        cr_assert(eq(int, eng_shard_close(sh, on_closed, NULL), 0));
        cr_assert(eq(int, rx_loop_run_until(loop, &op_done), 0));
        sh = NULL;
        return op_res;
}

/* Space returns: the shard leaves its no-space state by itself (the log's
 * retry timer), and the next write is acknowledged. */
static void space_returns(int *next)
{
        char k[32], v[1024];

        eng_fault_fs_fail(fs, ENG_FS_WRITE, 0, 0);
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, 0, 0);
        TEST_RUN_UNTIL(loop, !eng_shard_is_full(sh));
        kv(*next, k, sizeof(k), v, sizeof(v));
        cr_assert(eq(int, put_sync(k, v), 0), "writes resume without a restart");
        acked[(*next)++] = true;
        cr_expect(eq(int, eng_shard_error(sh), 0));
}

/* Regression (issue 23): a segment that could not be made stopped the
 * shard's writes until a restart. */
Test(shard_nospace, a_segment_that_cannot_be_made_fails_writes_until_space_returns)
{
        int next = 0, first_failed, r;
        char k[32], v[1024];

        cr_assert(eq(int, shard_open_sync(), 0));
        cr_assert(eq(int, put_sync("first", "1"), 0));
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, ENOSPC, -1);
        r = put_until_failure(&next, N_KEYS);
        cr_assert(eq(int, r, -ENOSPC), "the log ran into the segment it could not make");
        first_failed = next - 1;
        cr_expect(gt(int, first_failed, 0));
        cr_expect(eng_shard_is_full(sh));
        cr_expect(eq(int, eng_shard_error(sh), 0), "not a permanent error");
        /* Fails fast now, and reads go on. */
        kv(next, k, sizeof(k), v, sizeof(v));
        cr_expect(eq(int, put_sync(k, v), -ENOSPC));
        next++;
        expect_value("first", "1");
        /* No half-made segment is left while it waits. */
        cr_expect(le(u32, count_files(".log"), 3));
        space_returns(&next);
        cr_assert(eq(int, put_until_failure(&next, next + 600), 0), "into new segments");
        expect_acked(next);
        cr_assert(eq(int, close_res(), 0));
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_acked(next);
        expect_value("first", "1");
}

/* A log write that runs out of space (a short write, or ENOSPC) fails its
 * group; the retry writes the same bytes again once space returns. */
Test(shard_nospace, a_log_write_out_of_space_fails_its_writes_until_space_returns)
{
        int next = 0, r;
        char k[32], v[1024];

        cr_assert(eq(int, shard_open_sync(), 0));
        for (; next < 100; next++)
                cr_assert(eq(int, put_sync_i(next), 0));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        r = put_until_failure(&next, N_KEYS);
        cr_assert(eq(int, r, -ENOSPC));
        cr_expect(eng_shard_is_full(sh));
        cr_expect(eq(int, eng_shard_error(sh), 0), "not a permanent error");
        kv(next, k, sizeof(k), v, sizeof(v));
        cr_expect(eq(int, put_sync(k, v), -ENOSPC), "fails fast while full");
        next++;
        space_returns(&next);
        cr_assert(eq(int, put_until_failure(&next, next + 600), 0), "into new segments");
        cr_assert(eq(int, close_res(), 0));
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_acked(next);
}

static void on_flushed(void *arg, int res)
{
        (void)arg;
        op_done = true;
        op_res = res;
}

/* A clean close on a full disk succeeds, and keeps every acknowledged
 * write (regression: the close failed with ENOSPC, the server exited 1). */
Test(shard_nospace, a_close_on_a_full_disk_succeeds_and_keeps_every_acknowledged_write)
{
        int next = 0;

        opts.memtable_budget = 1 << 20;         /* flushes run, and fail */
        cr_assert(eq(int, shard_open_sync(), 0));
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, ENOSPC, -1);
        cr_assert(eq(int, put_until_failure(&next, N_KEYS), -ENOSPC));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        /* A flush waiting for space does not hold the close. */
        op_done = false;
        cr_assert(eq(int, eng_shard_flush(sh, on_flushed, NULL), 0));
        cr_assert(eq(int, close_res(), 0));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, 0, 0);
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, 0, 0);
        eng_fs_free(fs);
        fs = eng_fault_fs_new(loop);
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_acked(next);
}

/* Names and sizes of the files in dir, one "name size" line each, sorted. */
static char *dir_listing(void)
{
        struct dirent **names;
        int n = scandir(dir, &names, NULL, alphasort);
        size_t cap = 64 + (size_t)(n > 0 ? n : 0) * 300, len = 0;
        char *out = calloc(1, cap), path[PATH_MAX + 300];
        struct stat st;

        cr_assert(ge(int, n, 0));
        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
                if (names[i]->d_name[0] != '.' && stat(path, &st) == 0)
                        len += (size_t)snprintf(out + len, cap - len, "%s %lld\n", names[i]->d_name,
                                                (long long)st.st_size);
                free(names[i]);
        }
        free(names);
        return out;
}

/* A start with no space fails cleanly: it leaves the directory as it was
 * (regression: a new segment and 0-byte logs stayed behind, and took the
 * space a next start needed). */
Test(shard_nospace, a_start_without_space_leaves_the_directory_as_it_was)
{
        int next = 0;
        char *before, *after;

        cr_assert(eq(int, shard_open_sync(), 0));
        for (; next < 200; next++)
                cr_assert(eq(int, put_sync_i(next), 0));
        cr_assert(eq(int, close_res(), 0));
        before = dir_listing();
        eng_fault_fs_fail(fs, ENG_FS_WRITE, ENOSPC, -1);
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, ENOSPC, -1);
        cr_expect(eq(int, shard_open_sync(), -ENOSPC));
        after = dir_listing();
        cr_expect(eq(str, after, before));
        free(before);
        free(after);
        eng_fault_fs_fail(fs, ENG_FS_WRITE, 0, 0);
        eng_fault_fs_fail(fs, ENG_FS_FALLOCATE, 0, 0);
        cr_assert(eq(int, shard_open_sync(), 0));
        expect_acked(next);
}
