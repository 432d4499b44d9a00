/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine/datadir: the data directory's lock (refused while another open
 * file holds it, the holder's PID named, undo puts the directory back as
 * it was) and the manifest layout look-up. Regression tests for issue 23
 * (a second server on one --dir deleted the first one's commit log).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include <scree/scree_errors.h>

#include "engine/datadir.h"
#include "engine/manifest_format.h"
#include "tests/tmpdir.h"

static char root[256];
static char dir[512];           /* root/data: not made by init */

static void setup(void)
{
        tmpdir_make(root, sizeof(root), "datadir");
        snprintf(dir, sizeof(dir), "%s/data", root);
}

static void teardown(void)
{
        tmpdir_remove(root);
}

TestSuite(datadir, .init = setup, .fini = teardown, .timeout = 30);

static void file_put(const char *path, const void *buf, size_t len)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
        cr_assert(eq(i64, write(fd, buf, len), (ssize_t)len));
        close(fd);
}

/* The file's bytes, NUL-terminated, in buf; returns the length or -1. */
static ssize_t file_get(const char *path, char *buf, size_t cap)
{
        int fd = open(path, O_RDONLY);
        ssize_t n;

        if (fd < 0)
                return -1;
        n = read(fd, buf, cap - 1);
        close(fd);
        buf[n > 0 ? n : 0] = 0;
        return n;
}

static void lock_path(char *buf, size_t len)
{
        snprintf(buf, len, "%s/LOCK", dir);
}

Test(datadir, lock_creates_the_directory_and_writes_the_pid)
{
        struct eng_datadir_lock l;
        char path[600], got[64], want[32];

        cr_assert(eq(int, eng_datadir_lock(&l, dir, NULL), 0));
        lock_path(path, sizeof(path));
        snprintf(want, sizeof(want), "%ld\n", (long)getpid());
        cr_assert(gt(i64, file_get(path, got, sizeof(got)), 0));
        cr_expect(eq(str, got, want));
        eng_datadir_unlock(&l, false);
        cr_expect(eq(int, access(path, F_OK), 0), "a normal release keeps LOCK");
}

Test(datadir, a_second_lock_is_refused_and_names_the_holder)
{
        struct eng_datadir_lock a, b;
        pid_t holder = -1;

        cr_assert(eq(int, eng_datadir_lock(&a, dir, NULL), 0));
        cr_assert(eq(int, eng_datadir_lock(&b, dir, &holder), -EWOULDBLOCK));
        cr_expect(eq(int, holder, getpid()));
        cr_expect(eq(int, b.fd, -1));
        eng_datadir_unlock(&b, true);   /* not held: a no-op */
        eng_datadir_unlock(&a, false);
        cr_assert(eq(int, eng_datadir_lock(&b, dir, NULL), 0), "free again once released");
        eng_datadir_unlock(&b, false);
}

/* The case: another process holds it; once that process is gone
 * (killed: the kernel drops its lock), the directory is free. */
Test(datadir, a_lock_held_by_another_process_is_refused_until_it_dies)
{
        struct eng_datadir_lock l;
        int ready[2], status;
        pid_t child, holder = 0;
        char c;

        cr_assert(eq(int, pipe(ready), 0));
        child = fork();
        cr_assert(child >= 0);
        if (child == 0) {
                struct eng_datadir_lock cl;

                close(ready[0]);
                if (eng_datadir_lock(&cl, dir, NULL) < 0)
                        _exit(1);
                (void)!write(ready[1], "r", 1);
                pause();                /* until SIGKILL */
                _exit(0);
        }
        close(ready[1]);
        cr_assert(eq(i64, read(ready[0], &c, 1), 1), "the child took the lock");
        close(ready[0]);
        cr_expect(eq(int, eng_datadir_lock(&l, dir, &holder), -EWOULDBLOCK));
        cr_expect(eq(int, holder, child));
        kill(child, SIGKILL);
        cr_assert(eq(int, waitpid(child, &status, 0), child));
        cr_assert(eq(int, eng_datadir_lock(&l, dir, NULL), 0), "a dead holder's lock is gone");
        eng_datadir_unlock(&l, false);
}

Test(datadir, undo_removes_a_directory_and_lock_file_it_made)
{
        struct eng_datadir_lock l;

        cr_assert(eq(int, eng_datadir_lock(&l, dir, NULL), 0));
        cr_expect(eq(int, l.made_dir && l.made_file, true));
        eng_datadir_unlock(&l, true);
        cr_expect(eq(int, access(dir, F_OK), -1), "the directory it made is gone");
}

Test(datadir, undo_puts_back_an_earlier_holders_stale_pid)
{
        static const char stale[] = "999999\n";
        struct eng_datadir_lock l;
        char path[600], got[64];

        cr_assert(eq(int, mkdir(dir, 0755), 0));
        lock_path(path, sizeof(path));
        file_put(path, stale, sizeof(stale) - 1);
        cr_assert(eq(int, eng_datadir_lock(&l, dir, NULL), 0));
        cr_expect(eq(int, l.made_dir || l.made_file, false));
        file_get(path, got, sizeof(got));
        cr_expect(not(eq(str, got, (char *)stale)), "our PID while held");
        eng_datadir_unlock(&l, true);
        cr_assert(eq(i64, file_get(path, got, sizeof(got)), (ssize_t)sizeof(stale) - 1));
        cr_expect(eq(str, got, (char *)stale));
}

Test(datadir, undo_keeps_a_directory_it_did_not_make)
{
        struct eng_datadir_lock l;
        char path[600];

        cr_assert(eq(int, mkdir(dir, 0755), 0));
        cr_assert(eq(int, eng_datadir_lock(&l, dir, NULL), 0));
        eng_datadir_unlock(&l, true);
        lock_path(path, sizeof(path));
        cr_expect(eq(int, access(dir, F_OK), 0));
        cr_expect(eq(int, access(path, F_OK), -1), "the LOCK it made is gone");
}

Test(datadir, a_missing_parent_is_an_error_and_leaves_nothing)
{
        struct eng_datadir_lock l;
        char deep[700];

        snprintf(deep, sizeof(deep), "%s/no/such", root);
        cr_expect(eq(int, eng_datadir_lock(&l, deep, NULL), -ENOENT));
        cr_expect(eq(int, l.fd, -1));
}

Test(datadir, layout_read_returns_the_manifests_layout)
{
        struct eng_manifest_layout want = { .shard = 1, .n_shards = 3, .tablets_per_shard = 4 };
        struct eng_manifest_layout got = { 0 };
        struct eng_manifest_state st;
        uint8_t buf[4096] = { 0 };
        char path[600];
        size_t len = ENG_MANIFEST_HEADER_BYTES, plen;
        uint8_t *payload;

        cr_assert(eq(int, mkdir(dir, 0755), 0));
        cr_expect(eq(int, eng_datadir_layout_read(dir, &got), -SCREE_ENOTFOUND), "no MANIFEST");
        eng_manifest_state_init(&st, &want);
        plen = eng_manifest_snapshot_size(&st);
        payload = malloc(plen);
        cr_assert(not(eq(ptr, payload, NULL)));
        eng_manifest_snapshot_encode(payload, &st);
        eng_manifest_header_encode(buf, 42);
        len += eng_manifest_record_encode(buf + len, 42, ENG_MANIFEST_RECORD_SNAPSHOT, 0, payload,
                                          plen);
        free(payload);
        eng_manifest_state_fini(&st);
        snprintf(path, sizeof(path), "%s/MANIFEST", dir);
        file_put(path, buf, len);
        cr_assert(eq(int, eng_datadir_layout_read(dir, &got), 0));
        cr_expect(eq(u32, got.shard, 1));
        cr_expect(eq(u32, got.n_shards, 3));
        cr_expect(eq(u32, got.tablets_per_shard, 4));
        file_put(path, "not a manifest, not at all; thirty-two bytes and more", 52);
        cr_expect(eq(int, eng_datadir_layout_read(dir, &got), -SCREE_ECORRUPT));
        snprintf(path, sizeof(path), "%s/none", root);
        cr_expect(eq(int, eng_datadir_layout_read(path, &got), -SCREE_ENOTFOUND), "no directory");
}
