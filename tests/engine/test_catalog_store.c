/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CATALOG file (engine/catalog_store.h). Start-up: a missing file is
 * ENOTFOUND, a good one reads back, a truncated or flipped one is
 * corrupt and a newer format unsupported, each with a message naming the
 * file; a leftover CATALOG.tmp is never read; write_sync replaces the
 * file and leaves nothing behind, or on failure leaves CATALOG as it was.
 * Run time, on a loop with the fault-injecting fs: a save reads back; an
 * old snapshot is done at once; saves that arrive while one is in flight
 * share one more sequence; a failure at each step (the directory's and
 * the tmp file's open, write, short write, fdatasync, rename, directory
 * fsync; ENOSPC and EIO) fails the saves with its error, removes the tmp
 * file, keeps the old CATALOG, and leaves the store working -- or stopped
 * after a rename or directory fsync; close fails the waiting saves. A
 * power cut at a random moment, and a real SIGKILL of a child process,
 * leave CATALOG whole and at least as new as every acknowledged save.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "engine/catalog.h"
#include "engine/catalog_store.h"
#include "engine/fault_fs.h"
#include "tests/engine/catalog_helpers.h"
#include "tests/engine/helpers.h"
#include "tests/rng.h"
#include "tests/tmpdir.h"

#define N_CATS 8

static char dir[PATH_MAX], path[PATH_MAX + 16], tmp_path[PATH_MAX + 16];
static char err[512];
static struct rx_loop *loop;
static struct eng_fs *fs;
static struct eng_catalog_store *st;
/* cats[i]: version i + 1; each adds directory /d<version> to the last. */
static struct eng_catalog *cats[N_CATS];

static void cats_make(void)
{
        cats[0] = eng_catalog_new(2);
        cr_assert(cats[0] != NULL);
        for (int i = 1; i < N_CATS; i++) {
                char p[32];

                snprintf(p, sizeof(p), "/d%d", i + 1);
                cr_assert(eq(int, eng_catalog_mkdir(cats[i - 1], p, &cats[i], err, sizeof(err)), 0));
        }
}

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "catstore");
        snprintf(path, sizeof(path), "%s/CATALOG", dir);
        snprintf(tmp_path, sizeof(tmp_path), "%s/CATALOG.tmp", dir);
        cats_make();
}

static void teardown(void)
{
        for (int i = 0; i < N_CATS; i++)
                eng_catalog_unref(cats[i]);
        eng_fs_free(fs);
        rx_loop_free(loop);
        tmpdir_remove(dir);
}

TestSuite(catalog_store, .init = setup, .fini = teardown, .timeout = 60);

/* ---- files ---- */

static bool exists(const char *p)
{
        struct stat sb;

        return stat(p, &sb) == 0;
}

static void file_put(const char *p, const void *buf, size_t len)
{
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        cr_assert(ge(int, fd, 0));
        cr_assert(eq(i64, write(fd, buf, len), (int64_t)len));
        close(fd);
}

/* CATALOG must hold exactly c's encoding, and read back as c. */
static void expect_file_is(const struct eng_catalog *c)
{
        struct eng_catalog *got = NULL;
        size_t len, got_len;
        uint8_t *want = catalog_bytes(c, &len), *have;
        int r = eng_catalog_store_read(dir, &got, err, sizeof(err));

        cr_assert(eq(int, r, 0), "read: %s", err);
        have = catalog_bytes(got, &got_len);
        cr_expect(eq(u64, eng_catalog_version(got), eng_catalog_version(c)));
        cr_expect(eq(sz, got_len, len));
        cr_expect(got_len == len && memcmp(have, want, len) == 0, "CATALOG is not the snapshot");
        free(want);
        free(have);
        eng_catalog_unref(got);
}

static void put_catalog(const struct eng_catalog *c)
{
        size_t len;
        uint8_t *b = catalog_bytes(c, &len);

        file_put(path, b, len);
        free(b);
}

/* Reads CATALOG, which must fail with want and a message naming it. */
static void expect_read_fails(int want, const char *needle)
{
        struct eng_catalog *c = NULL;
        int r;

        err[0] = 0;
        r = eng_catalog_store_read(dir, &c, err, sizeof(err));
        cr_expect(eq(int, r, want), "got %d (%s)", r, err);
        cr_expect(c == NULL, "written on failure");
        cr_expect(strstr(err, path) != NULL, "message '%s' does not name %s", err, path);
        if (needle)
                cr_expect(strstr(err, needle) != NULL, "message '%s' lacks '%s'", err, needle);
}

/* ---- start-up: read ---- */

Test(catalog_store, a_missing_catalog_is_enotfound)
{
        expect_read_fails(-SCREE_ENOTFOUND, "no such file");
}

Test(catalog_store, a_written_catalog_reads_back_with_its_tables)
{
        struct eng_catalog *c;

        cr_assert(eq(int, eng_catalog_initial(4, 2, &c), 0));
        cr_assert(eq(int, eng_catalog_store_write_sync(dir, c, err, sizeof(err)), 0), "%s", err);
        expect_file_is(c);
        cr_expect(not(exists(tmp_path)));
        eng_catalog_unref(c);
}

Test(catalog_store, a_truncated_catalog_is_corrupt)
{
        size_t len, cuts[] = { 0, 1, 39, 40, 41, 0 };
        uint8_t *b = catalog_bytes(cats[N_CATS - 1], &len);

        cuts[5] = len - 1;
        for (size_t i = 0; i < ARRAY_SIZE(cuts); i++) {
                file_put(path, b, cuts[i]);
                expect_read_fails(-SCREE_ECORRUPT, "damaged");
        }
        free(b);
}

Test(catalog_store, a_flipped_byte_anywhere_is_corrupt)
{
        size_t len;
        uint8_t *b = catalog_bytes(cats[N_CATS - 1], &len);

        for (size_t off = 0; off < len; off++) {
                b[off] ^= 0x20;
                file_put(path, b, len);
                b[off] ^= 0x20;
                expect_read_fails(-SCREE_ECORRUPT, NULL);
        }
        b[0] ^= 0x20;
        file_put(path, b, len);
        expect_read_fails(-SCREE_ECORRUPT, "bad magic");
        free(b);
}

Test(catalog_store, a_newer_format_version_is_unsupported)
{
        size_t len;
        uint8_t *b = catalog_bytes(cats[1], &len);

        /* docs/format/catalog.md: version at 8, header checksum of 0..31 at 32. */
        le32_put(b + 8, ENG_CATALOG_FORMAT_VERSION + 1);
        le64_put(b + 32, checksum64(b, 32, ENG_CATALOG_SEED));
        file_put(path, b, len);
        expect_read_fails(-SCREE_EUNSUPPORTED, "newer");
        free(b);
}

Test(catalog_store, a_leftover_tmp_file_is_never_read)
{
        size_t len;
        uint8_t *b = catalog_bytes(cats[3], &len);

        file_put(tmp_path, b, len);
        expect_read_fails(-SCREE_ENOTFOUND, NULL);
        put_catalog(cats[1]);
        expect_file_is(cats[1]);
        file_put(tmp_path, "junk", 4);
        expect_file_is(cats[1]);
        free(b);
}

/* ---- start-up: write_sync ---- */

Test(catalog_store, write_sync_replaces_the_catalog_and_leaves_no_tmp_file)
{
        file_put(tmp_path, "leftover of a crash", 19);
        cr_assert(eq(int, eng_catalog_store_write_sync(dir, cats[0], err, sizeof(err)), 0), "%s", err);
        expect_file_is(cats[0]);
        cr_assert(eq(int, eng_catalog_store_write_sync(dir, cats[4], err, sizeof(err)), 0), "%s", err);
        expect_file_is(cats[4]);
        cr_expect(not(exists(tmp_path)));
}

Test(catalog_store, write_sync_into_a_missing_directory_fails_naming_it)
{
        char missing[PATH_MAX + 8];

        snprintf(missing, sizeof(missing), "%s/nope", dir);
        cr_expect(eq(int, eng_catalog_store_write_sync(missing, cats[0], err, sizeof(err)), -ENOENT));
        cr_expect(strstr(err, missing) != NULL, "message '%s'", err);
}

/* A CATALOG.tmp that cannot be opened (a directory there), or a CATALOG
 * that cannot be renamed over (a directory): CATALOG stays as it was. */
Test(catalog_store, a_failed_write_sync_leaves_the_catalog_as_it_was)
{
        cr_assert(eq(int, mkdir(tmp_path, 0755), 0));
        put_catalog(cats[1]);
        cr_expect(eq(int, eng_catalog_store_write_sync(dir, cats[2], err, sizeof(err)), -EISDIR));
        cr_expect(strstr(err, "CATALOG.tmp: open") != NULL, "message '%s'", err);
        expect_file_is(cats[1]);
        cr_assert(eq(int, rmdir(tmp_path), 0));

        cr_assert(eq(int, unlink(path), 0));
        cr_assert(eq(int, mkdir(path, 0755), 0));
        cr_expect(eq(int, eng_catalog_store_write_sync(dir, cats[2], err, sizeof(err)), -EISDIR));
        cr_expect(strstr(err, "rename") != NULL, "message '%s'", err);
        cr_expect(not(exists(tmp_path)), "the tmp file is removed");
        cr_expect(eq(int, rmdir(path), 0), "CATALOG is still the directory");
}

/* ---- run time ---- */

struct sv {
        struct eng_catalog_save w;
        bool done;
        int res, calls;
};

static void sv_done(struct eng_catalog_save *w, int res)
{
        struct sv *x = w->ctx;

        cr_assert(eq(int, x->calls, 0), "done twice");
        x->calls++;
        x->done = true;
        x->res = res;
}

/* Starts a save of c; returns save's result (x tracks the rest). */
static int save_async(struct sv *x, struct eng_catalog *c)
{
        int r;

        memset(x, 0, sizeof(*x));
        x->w.done = sv_done;
        x->w.ctx = x;
        r = eng_catalog_store_save(st, c, &x->w);
        if (r != 0) {
                x->done = true;
                x->res = r == 1 ? 0 : r;
        }
        return r;
}

static int save_sync(struct eng_catalog *c)
{
        struct sv x;

        save_async(&x, c);
        TEST_RUN_UNTIL(loop, x.done);
        return x.res;
}

static bool close_done;
static int close_res;

static void on_close(void *arg, int res)
{
        cr_assert(not(close_done), "close done twice");
        cr_assert(eq(ptr, arg, &close_done));
        close_done = true;
        close_res = res;
}

static int close_sync(void)
{
        close_done = false;
        cr_assert(eq(int, eng_catalog_store_close(st, on_close, &close_done), 0));
        TEST_RUN_UNTIL(loop, close_done);
        st = NULL;
        return close_res;
}

static void store_open(void)
{
        engine_test_loop_fs(&loop, &fs);
        cr_assert(eq(int, eng_catalog_store_new(loop, fs, dir, &st), 0));
}

Test(catalog_store, a_save_is_durable_then_reads_back)
{
        struct sv x;

        store_open();
        cr_assert(eq(int, save_async(&x, cats[1]), 0), "pending");
        cr_expect(not(x.done), "done never runs inside save");
        TEST_RUN_UNTIL(loop, x.done);
        cr_expect(eq(int, x.res, 0));
        cr_expect(eq(u64, eng_catalog_store_durable_version(st), 2));
        expect_file_is(cats[1]);
        cr_expect(not(exists(tmp_path)));
        cr_expect(eq(int, close_sync(), 0));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->dirs_unsynced, 0), "the rename was made durable");
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
}

Test(catalog_store, a_snapshot_no_newer_than_the_durable_one_is_done_at_once)
{
        struct sv x;

        store_open();
        cr_assert(eq(int, save_sync(cats[3]), 0));
        cr_expect(eq(int, save_async(&x, cats[3]), 1), "the same version");
        cr_expect(eq(int, save_async(&x, cats[1]), 1), "an older one");
        engine_test_run_for_ms(loop, 5);
        cr_expect(eq(int, x.calls, 0), "done never runs for a save that returned 1");
        cr_expect(eq(u64, eng_catalog_store_stats(st)->sequences, 1));
        expect_file_is(cats[3]);
        cr_expect(eq(int, close_sync(), 0));
}

/* Three saves while the first is in flight: one more sequence, of the
 * newest, completes them all (an older one arriving last included). */
Test(catalog_store, saves_while_one_is_in_flight_share_one_sequence_of_the_newest)
{
        struct sv x[4];

        store_open();
        cr_assert(eq(int, save_async(&x[0], cats[1]), 0));
        cr_assert(eq(int, save_async(&x[1], cats[3]), 0));
        cr_assert(eq(int, save_async(&x[2], cats[5]), 0));
        cr_assert(eq(int, save_async(&x[3], cats[4]), 0));
        TEST_RUN_UNTIL(loop, x[0].done && x[1].done && x[2].done && x[3].done);
        for (int i = 0; i < 4; i++)
                cr_expect(eq(int, x[i].res, 0), "save %d", i);
        cr_expect(eq(u64, eng_catalog_store_stats(st)->sequences, 2));
        cr_expect(eq(u64, eng_catalog_store_stats(st)->saved, 2));
        cr_expect(eq(u64, eng_catalog_store_durable_version(st), 6));
        expect_file_is(cats[5]);
        cr_expect(eq(int, close_sync(), 0));
}

/* A save made from a done callback is taken like any other. */
static struct sv chained;

static void sv_done_then_save(struct eng_catalog_save *w, int res)
{
        sv_done(w, res);
        cr_assert(eq(int, save_async(&chained, cats[6]), 0));
}

Test(catalog_store, a_save_from_a_done_callback_is_taken)
{
        struct sv x;

        store_open();
        save_async(&x, cats[1]);
        x.w.done = sv_done_then_save;
        TEST_RUN_UNTIL(loop, x.done && chained.done);
        cr_expect(eq(int, chained.res, 0));
        expect_file_is(cats[6]);
        cr_expect(eq(int, close_sync(), 0));
}

Test(catalog_store, close_waits_for_the_sequence_in_flight_and_fails_the_waiting_saves)
{
        struct sv x[2], late;

        store_open();
        cr_assert(eq(int, save_async(&x[0], cats[1]), 0));
        cr_assert(eq(int, save_async(&x[1], cats[2]), 0));
        close_done = false;
        cr_assert(eq(int, eng_catalog_store_close(st, on_close, &close_done), 0));
        cr_expect(eq(int, eng_catalog_store_close(st, on_close, &close_done), -EALREADY));
        cr_expect(eq(int, save_async(&late, cats[3]), -SCREE_ESHUTDOWN));
        cr_expect(not(close_done), "never inside close");
        TEST_RUN_UNTIL(loop, close_done);
        st = NULL;
        cr_expect(x[0].done && x[1].done, "every save is done before close is");
        cr_expect(eq(int, x[0].res, 0), "the one in flight finished");
        cr_expect(eq(int, x[1].res, -SCREE_ESHUTDOWN));
        cr_expect(eq(int, close_res, 0));
        expect_file_is(cats[1]);
}

/* ---- faults ---- */

struct fault {
        enum eng_fs_kind kind;
        int err;
        bool first;             /* on the first sequence: the directory's open */
        bool stops;             /* the store stops */
        bool renamed;           /* CATALOG is the new snapshot afterwards */
};

ParameterizedTestParameters(catalog_store, a_fault_at_each_step)
{
        static struct fault faults[] = {
                { ENG_FS_OPEN, EIO, true, false, false },
                { ENG_FS_OPEN, ENOSPC, false, false, false },
                { ENG_FS_OPEN, EIO, false, false, false },
                { ENG_FS_WRITE, ENOSPC, false, false, false },
                { ENG_FS_WRITE, EIO, false, false, false },
                { ENG_FS_FDATASYNC, ENOSPC, false, false, false },
                { ENG_FS_FDATASYNC, EIO, false, false, false },
                { ENG_FS_CLOSE, EIO, false, false, false },
                { ENG_FS_RENAME, ENOSPC, false, true, false },
                { ENG_FS_RENAME, EIO, false, true, false },
                { ENG_FS_FSYNC, ENOSPC, false, true, true },
                { ENG_FS_FSYNC, EIO, false, true, true },
        };

        return cr_make_param_array(struct fault, faults, ARRAY_SIZE(faults));
}

/* CATALOG holds v2 (or nothing, first); the save of v3 meets the fault;
 * then the save of v4 either succeeds or, once stopped, is refused. */
ParameterizedTest(struct fault *f, catalog_store, a_fault_at_each_step)
{
        struct sv x;

        store_open();
        if (!f->first)
                cr_assert(eq(int, save_sync(cats[1]), 0));
        eng_fault_fs_fail(fs, f->kind, f->err, 1);
        cr_assert(eq(int, save_async(&x, cats[2]), 0));
        TEST_RUN_UNTIL(loop, x.done);
        cr_expect(eq(int, x.res, -f->err), "kind %d", f->kind);
        cr_expect(not(exists(tmp_path)), "the tmp file is removed");
        if (f->first)
                expect_read_fails(-SCREE_ENOTFOUND, NULL);
        else
                expect_file_is(f->renamed ? cats[2] : cats[1]);
        cr_expect(eq(int, eng_catalog_store_error(st), f->stops ? -f->err : 0));
        if (f->stops) {
                cr_expect(eq(int, save_async(&x, cats[3]), -f->err), "refused once stopped");
                cr_expect(eq(int, close_sync(), -f->err));
                return;
        }
        cr_expect(eq(int, save_sync(cats[3]), 0), "the store goes on");
        expect_file_is(cats[3]);
        cr_expect(eq(int, close_sync(), 0));
        cr_expect(eq(u64, eng_fault_fs_stats(fs)->overlaps, 0));
}

/* A failed sequence fails the saves it was writing (an older one that
 * arrived during it too); a newer one waiting gets a sequence of its own. */
Test(catalog_store, a_failed_sequence_fails_its_saves_and_a_newer_one_gets_its_own)
{
        struct sv x[3];

        store_open();
        cr_assert(eq(int, save_sync(cats[1]), 0));
        eng_fault_fs_fail(fs, ENG_FS_FDATASYNC, EIO, 1);
        cr_assert(eq(int, save_async(&x[0], cats[3]), 0));
        cr_assert(eq(int, save_async(&x[1], cats[2]), 0));
        cr_assert(eq(int, save_async(&x[2], cats[4]), 0));
        TEST_RUN_UNTIL(loop, x[0].done && x[1].done && x[2].done);
        cr_expect(eq(int, x[0].res, -EIO));
        cr_expect(eq(int, x[1].res, -EIO), "older than the one that failed");
        cr_expect(eq(int, x[2].res, 0));
        cr_expect(eq(u64, eng_catalog_store_stats(st)->sequences, 3));
        cr_expect(eq(u64, eng_catalog_store_stats(st)->failed, 1));
        expect_file_is(cats[4]);
        cr_expect(eq(int, close_sync(), 0));
}

/* The undo's unlink fails too: the save gets the first error, and the
 * next sequence truncates the tmp file it left. */
Test(catalog_store, a_tmp_file_the_undo_could_not_remove_is_overwritten_next_time)
{
        store_open();
        cr_assert(eq(int, save_sync(cats[1]), 0));
        eng_fault_fs_fail(fs, ENG_FS_WRITE, EIO, 1);
        eng_fault_fs_fail(fs, ENG_FS_UNLINK, EIO, 1);
        cr_expect(eq(int, save_sync(cats[2]), -EIO));
        cr_expect(exists(tmp_path));
        expect_file_is(cats[1]);
        cr_expect(eq(int, save_sync(cats[3]), 0));
        cr_expect(not(exists(tmp_path)));
        expect_file_is(cats[3]);
        cr_expect(eq(int, close_sync(), 0));
}

/* ---- short writes: an eng_fs over the fault fs that shortens writes ---- */

enum shorten { SHORTEN_HALF, SHORTEN_HALF_THEN_NOTHING };

struct short_fs {
        struct eng_fs base;
        struct eng_fs *inner;
        enum shorten mode;
        unsigned writes;
};

static struct eng_fs *inner_of(struct eng_fs *f)
{
        return container_of(f, struct short_fs, base)->inner;
}

static int s_open(struct eng_fs *f, struct eng_fs_op *op, const char *p, int flags, mode_t mode)
{
        return inner_of(f)->vt->open(inner_of(f), op, p, flags, mode);
}

static int s_read(struct eng_fs *f, struct eng_fs_op *op, int fd, void *buf, uint32_t len, uint64_t off)
{
        return inner_of(f)->vt->read(inner_of(f), op, fd, buf, len, off);
}

/* Writes half (at least a byte); in SHORTEN_HALF_THEN_NOTHING, nothing after the first. */
static int s_write(struct eng_fs *f, struct eng_fs_op *op, int fd, const void *buf, uint32_t len,
                   uint64_t off)
{
        struct short_fs *s = container_of(f, struct short_fs, base);
        uint32_t n = len > 1 ? len / 2 : len;

        if (s->mode == SHORTEN_HALF_THEN_NOTHING && s->writes > 0)
                n = 0;
        s->writes++;
        return s->inner->vt->write(s->inner, op, fd, buf, n, off);
}

static int s_fdatasync(struct eng_fs *f, struct eng_fs_op *op, int fd)
{
        return inner_of(f)->vt->fdatasync(inner_of(f), op, fd);
}

static int s_fallocate(struct eng_fs *f, struct eng_fs_op *op, int fd, int mode, uint64_t off,
                       uint64_t len)
{
        return inner_of(f)->vt->fallocate(inner_of(f), op, fd, mode, off, len);
}

static int s_close(struct eng_fs *f, struct eng_fs_op *op, int fd)
{
        return inner_of(f)->vt->close(inner_of(f), op, fd);
}

static int s_fsync(struct eng_fs *f, struct eng_fs_op *op, int fd)
{
        return inner_of(f)->vt->fsync(inner_of(f), op, fd);
}

static int s_unlink(struct eng_fs *f, struct eng_fs_op *op, const char *p)
{
        return inner_of(f)->vt->unlink(inner_of(f), op, p);
}

static int s_rename(struct eng_fs *f, struct eng_fs_op *op, const char *a, const char *b)
{
        return inner_of(f)->vt->rename(inner_of(f), op, a, b);
}

static void s_free(struct eng_fs *f)
{
        eng_fs_free(inner_of(f));
        free(container_of(f, struct short_fs, base));
}

static const struct eng_fs_vtable short_vt = {
        .open = s_open, .read = s_read, .write = s_write, .fdatasync = s_fdatasync,
        .fallocate = s_fallocate, .close = s_close, .fsync = s_fsync, .unlink = s_unlink,
        .rename = s_rename, .free = s_free,
};

/* Puts a shortening fs over the test's fs, for a new store. */
static struct short_fs *short_open(enum shorten mode)
{
        struct short_fs *s = calloc(1, sizeof(*s));

        engine_test_loop_fs(&loop, &fs);
        cr_assert(s != NULL);
        s->base = (struct eng_fs){ .vt = &short_vt, .loop = loop, .owner_shard = fs->owner_shard };
        s->inner = fs;
        s->mode = mode;
        fs = &s->base;
        cr_assert(eq(int, eng_catalog_store_new(loop, fs, dir, &st), 0));
        return s;
}

Test(catalog_store, short_writes_go_on_with_the_rest)
{
        struct short_fs *s = short_open(SHORTEN_HALF);

        cr_assert(eq(int, save_sync(cats[N_CATS - 1]), 0));
        expect_file_is(cats[N_CATS - 1]);
        cr_expect(ge(u32, s->writes, 3));
        cr_expect(eq(u64, eng_catalog_store_stats(st)->writes, s->writes));
        cr_expect(eq(int, close_sync(), 0));
}

Test(catalog_store, a_short_write_then_no_progress_is_enospc_and_the_store_goes_on)
{
        struct short_fs *s = short_open(SHORTEN_HALF_THEN_NOTHING);

        put_catalog(cats[1]);
        cr_expect(eq(int, save_sync(cats[2]), -ENOSPC));
        cr_expect(eq(u32, s->writes, 2));
        cr_expect(not(exists(tmp_path)));
        expect_file_is(cats[1]);
        s->mode = SHORTEN_HALF;
        cr_expect(eq(int, save_sync(cats[3]), 0));
        expect_file_is(cats[3]);
        cr_expect(eq(int, close_sync(), 0));
}

/* ---- crashes: a chain of saves, cut short ---- */

/*
 * Saves successive snapshots, each adding directory /d<version> to the
 * last, two at a time (the second waits for the first and coalesces with
 * nothing, or with a retry), the next two once both are done; until a
 * save fails or halt is set. Reports 'S' before each save and 'A' when
 * it is acknowledged into report_fd (if >= 0), one record per write (well
 * under PIPE_BUF, so a record is never torn).
 */
struct chain_rec {
        uint64_t kind;
        uint64_t version;
};

struct chain_save {
        struct eng_catalog_save w;
        uint64_t version;
};

static struct {
        struct eng_catalog *c;          /* the newest snapshot made */
        struct chain_save s[2];
        unsigned outstanding;
        uint64_t acked, started;
        int error;                      /* the first failure */
        bool halt;
        int report_fd;
} ch;

static void chain_report(char kind, uint64_t version)
{
        struct chain_rec r = { (uint64_t)kind, version };

        if (ch.report_fd >= 0 && write(ch.report_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
                _exit(3);
}

static void chain_next(void);

static void chain_done(struct eng_catalog_save *w, int res)
{
        struct chain_save *s = container_of(w, struct chain_save, w);

        ch.outstanding--;
        if (res == 0) {
                if (s->version > ch.acked)
                        ch.acked = s->version;
                chain_report('A', s->version);
        } else if (!ch.error) {
                ch.error = res;
        }
        if (!ch.outstanding)
                chain_next();
}

static void chain_next(void)
{
        for (int i = 0; i < 2 && !ch.halt && !ch.error; i++) {
                uint64_t v = eng_catalog_version(ch.c) + 1;
                struct eng_catalog *n;
                char p[32];
                int r;

                snprintf(p, sizeof(p), "/d%llu", (unsigned long long)v);
                r = eng_catalog_mkdir(ch.c, p, &n, NULL, 0);
                if (r < 0) {
                        ch.error = r;
                        return;
                }
                eng_catalog_unref(ch.c);
                ch.c = n;
                ch.s[i] = (struct chain_save){ .w = { .done = chain_done }, .version = v };
                ch.started = v;
                chain_report('S', v);
                r = eng_catalog_store_save(st, n, &ch.s[i].w);
                if (r == 0)
                        ch.outstanding++;
                else if (r < 0)
                        ch.error = r;
        }
}

/* CATALOG after a crash: whole, at least every acknowledged save, at
 * most the last one started (or what it was before, prev). Returns its
 * version. */
static uint64_t expect_after_crash(uint64_t prev, uint64_t acked, uint64_t started, int round)
{
        struct eng_catalog *c = NULL;
        uint64_t v;
        char p[32];
        int r = eng_catalog_store_read(dir, &c, err, sizeof(err));

        cr_assert(eq(int, r, 0), "round %d: %s", round, err);
        v = eng_catalog_version(c);
        cr_expect(ge(u64, v, acked), "round %d: an acknowledged save is lost", round);
        cr_expect(ge(u64, v, prev), "round %d: older than before the round", round);
        cr_expect(le(u64, v, started > prev ? started : prev), "round %d: never saved", round);
        snprintf(p, sizeof(p), "/d%llu", (unsigned long long)v);
        cr_expect(v < 2 || eng_catalog_is_dir(c, p), "round %d: version %llu lacks %s", round,
                  (unsigned long long)v, p);
        eng_catalog_unref(c);
        return v;
}

static bool cut, cut_tears;
static uint64_t cut_seed;

static void cut_fire(struct rx_loop *l, struct rx_timer *t)
{
        (void)l;
        (void)t;
        cr_assert(eq(int, eng_fault_fs_power_cut(fs, cut_tears, cut_seed), 0));
        ch.halt = true;
        cut = true;
}

/* A power cut (fault fs: unsynced data lost, torn or not) at a random
 * moment of a chain of saves, round after round on the same directory. */
Test(catalog_store, a_power_cut_at_any_moment_keeps_every_acknowledged_save, .timeout = 120)
{
        uint64_t rng = 0x6361747374307265, prev = 1;
        struct rx_timer timer;

        engine_test_loop_fs(&loop, &fs);
        cr_assert(eq(int, eng_catalog_store_write_sync(dir, cats[0], err, sizeof(err)), 0));
        rx_timer_init(&timer, cut_fire, "test:power_cut");
        for (int round = 0; round < 30; round++) {
                memset(&ch, 0, sizeof(ch));
                ch.report_fd = -1;
                cr_assert(eq(int, eng_catalog_store_read(dir, &ch.c, err, sizeof(err)), 0), "%s", err);
                cr_assert(eq(int, eng_catalog_store_new(loop, fs, dir, &st), 0));
                cut = false;
                cut_tears = round & 1;
                cut_seed = test_rng_next(&rng);
                cr_assert(eq(int, rx_timer_arm_after(loop, &timer, test_rng_next(&rng) % 4000 * 1000), 0));
                chain_next();
                TEST_RUN_UNTIL(loop, cut && !ch.outstanding);
                close_sync();   /* whatever it says: the fs is dead */
                eng_fs_free(fs);
                fs = eng_fault_fs_new(loop);
                cr_assert(fs != NULL);
                prev = expect_after_crash(prev, ch.acked, ch.started, round);
                eng_catalog_unref(ch.c);
        }
}

/* The crash child: saves a chain from what CATALOG holds, reporting into
 * fd, until killed. Never returns. */
static void __attribute__((noreturn)) crash_child(int fd)
{
        struct rx_loop *l;
        bool never = false;

        prctl(PR_SET_PDEATHSIG, SIGKILL);       /* never outlive the test */
        if (rx_loop_new(NULL, &l) < 0)
                _exit(4);
        loop = l;
        fs = eng_fs_direct_new(l);
        memset(&ch, 0, sizeof(ch));
        ch.report_fd = fd;
        if (!fs || eng_catalog_store_read(dir, &ch.c, NULL, 0) < 0 ||
            eng_catalog_store_new(l, fs, dir, &st) < 0)
                _exit(5);
        chain_next();
        while (!ch.error)
                rx_loop_run_until(l, &never);
        _exit(6);
}

/* Reads records from fd into ch.acked / ch.started until EOF or until
 * deadline_ns (0: EOF only). */
static void drain(int fd, uint64_t deadline_ns)
{
        struct chain_rec r;

        for (;;) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                uint64_t now = time_now_ns();
                int ms = deadline_ns ? (now >= deadline_ns ? 0 : (int)((deadline_ns - now) / NS_PER_MS))
                                     : -1;

                if (deadline_ns && now >= deadline_ns)
                        return;
                if (poll(&p, 1, ms) <= 0)
                        continue;
                if (read(fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
                        return;         /* EOF (whole records only: writes under PIPE_BUF) */
                if (r.kind == 'A' && r.version > ch.acked)
                        ch.acked = r.version;
                if (r.kind == 'S' && r.version > ch.started)
                        ch.started = r.version;
        }
}

/* A real SIGKILL of a process saving a chain, after a random delay, 20
 * rounds on the same directory: CATALOG always decodes and holds at
 * least every save the process saw acknowledged. */
Test(catalog_store, a_sigkill_at_any_moment_keeps_every_acknowledged_save, .timeout = 120)
{
        uint64_t rng = 0x6b696c6c39636174, prev = 1, total_acked = 0;
        struct rx_loop *probe;
        int r = rx_loop_new(NULL, &probe);

        SKIP_IF_NO_URING(r);
        cr_assert(eq(int, r, 0));
        rx_loop_free(probe);
        cr_assert(eq(int, eng_catalog_store_write_sync(dir, cats[0], err, sizeof(err)), 0));
        for (int round = 0; round < 20; round++) {
                int fds[2], status;
                bool killed;
                pid_t child;

                cr_assert(eq(int, pipe(fds), 0));
                child = fork();
                cr_assert(ge(int, child, 0));
                if (child == 0) {
                        close(fds[0]);
                        crash_child(fds[1]);
                }
                close(fds[1]);
                memset(&ch, 0, sizeof(ch));
                drain(fds[0], time_now_ns() + (1 + test_rng_next(&rng) % 50) * NS_PER_MS);
                kill(child, SIGKILL);
                cr_assert(eq(int, waitpid(child, &status, 0), child));
                drain(fds[0], 0);
                close(fds[0]);
                killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
                cr_assert(killed, "round %d: the child exited by itself (status %#x)", round, status);
                total_acked += ch.acked > prev ? ch.acked - prev : 0;
                prev = expect_after_crash(prev, ch.acked, ch.started, round);
        }
        cr_log_info("catalog_store sigkill: %llu versions acknowledged in 20 rounds",
                    (unsigned long long)total_acked);
}
