/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Regressions from a new user's run of the library (include/scree/scree.h):
 * NULL pointers to every function, the message each failure leaves
 * (scree_last_error), batch keys checked against the table's schema, and
 * the log callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/api/api_helpers.h"

TestSuite(api_errors, .init = setup, .fini = teardown, .timeout = 120);

static scree_options *mark;

/* call fails with -EINVAL and leaves a message of its own: the marker's
 * (a failure set just before) is gone. */
#define EXPECT_EINVAL(call)                                                                   \
        do {                                                                                  \
                cr_assert(eq(int, scree_options_set(mark, "marker", "1"), -EINVAL));          \
                cr_expect(eq(int, (call), -EINVAL), "%s", #call);                            \
                cr_expect(scree_last_error()[0] && !strstr(scree_last_error(), "marker"),     \
                          "%s left no message of its own: '%s'", #call, scree_last_error()); \
        } while (0)

static int list_nothing(void *arg, const scree_entry *e)
{
        return 0;
}

/* NULL where a pointer is needed crashed scree_get_value, scree_rows_count
 * and others: every function of scree.h, with NULL in each pointer
 * position, refuses it with -EINVAL (and a message), or -- free functions,
 * accessors -- accepts it. */
static void null_options_keys(scree_options *o)
{
        scree_part part = { .type = SCREE_U64, .v.u64 = 1 }, out[2];
        uint8_t k[16], buf[16];
        scree_db *dbp;
        size_t kl, len;

        cr_assert(eq(int, scree_key_encode(&part, 1, k, sizeof(k), &kl), 0));
        scree_options_free(NULL);
        EXPECT_EINVAL(scree_options_set(NULL, "pin", "no"));
        EXPECT_EINVAL(scree_options_set(o, NULL, "no"));
        EXPECT_EINVAL(scree_options_set(o, "pin", NULL));
        EXPECT_EINVAL(scree_options_get(NULL, "pin", (char *)buf, sizeof(buf)));
        EXPECT_EINVAL(scree_options_get(o, NULL, (char *)buf, sizeof(buf)));
        EXPECT_EINVAL(scree_options_get(o, "pin", NULL, sizeof(buf)));
        cr_expect(eq(int, scree_options_get(o, "pin", NULL, 0), -ENOSPC));
        EXPECT_EINVAL(scree_open(NULL, o, &dbp));
        EXPECT_EINVAL(scree_open(dir, o, NULL));
        cr_expect(eq(int, scree_close(NULL), 0));
        cr_expect(eq(u32, scree_shards(NULL), 0));
        EXPECT_EINVAL(scree_key_encode(NULL, 1, k, sizeof(k), &len));
        EXPECT_EINVAL(scree_key_encode(&part, 1, NULL, sizeof(k), &len));
        EXPECT_EINVAL(scree_key_encode(&part, 1, k, sizeof(k), NULL));
        EXPECT_EINVAL(scree_key_decode(NULL, kl, out, 2, buf, sizeof(buf)));
        EXPECT_EINVAL(scree_key_decode(k, kl, NULL, 2, buf, sizeof(buf)));
        EXPECT_EINVAL(scree_key_decode(k, kl, out, 2, NULL, sizeof(buf)));
        cr_expect(eq(sz, scree_key_prefix_end(NULL, kl, buf, sizeof(buf)), 0));
        cr_expect(eq(sz, scree_key_prefix_end(k, kl, NULL, sizeof(buf)), 0));
}

static void null_tables(scree_db *db)
{
        scree_table_spec spec = { .path = "/n" };
        scree_table_info info;
        scree_table *tp;

        EXPECT_EINVAL(scree_mkdir(NULL, "/d"));
        EXPECT_EINVAL(scree_mkdir(db, NULL));
        EXPECT_EINVAL(scree_rmdir(NULL, "/d"));
        EXPECT_EINVAL(scree_rmdir(db, NULL));
        EXPECT_EINVAL(scree_table_create(NULL, &spec));
        EXPECT_EINVAL(scree_table_create(db, NULL));
        spec = (scree_table_spec){ .path = NULL };
        EXPECT_EINVAL(scree_table_create(db, &spec));
        spec = (scree_table_spec){ .path = "/n", .n_parts = 1, .parts = NULL };
        EXPECT_EINVAL(scree_table_create(db, &spec));
        EXPECT_EINVAL(scree_table_drop(NULL, "/t"));
        EXPECT_EINVAL(scree_table_drop(db, NULL));
        EXPECT_EINVAL(scree_list(NULL, "/", list_nothing, NULL));
        EXPECT_EINVAL(scree_list(db, NULL, list_nothing, NULL));
        EXPECT_EINVAL(scree_list(db, "/", NULL, NULL));
        cr_expect(eq(int, scree_list(db, "/", list_nothing, NULL), 0));
        EXPECT_EINVAL(scree_table_describe(NULL, "/t", &info));
        EXPECT_EINVAL(scree_table_describe(db, NULL, &info));
        EXPECT_EINVAL(scree_table_describe(db, "/t", NULL));
        EXPECT_EINVAL(scree_table_open(NULL, "/t", &tp));
        EXPECT_EINVAL(scree_table_open(db, NULL, &tp));
        EXPECT_EINVAL(scree_table_open(db, "/t", NULL));
        scree_table_close(NULL);
}

static void null_rows_batches(scree_db *db, scree_table *t, const char *k, size_t kl)
{
        scree_batch *b = scree_batch_new();
        scree_value *v;
        char buf[16];
        size_t len;

        EXPECT_EINVAL(scree_put(NULL, k, kl, "v", 1, 0));
        EXPECT_EINVAL(scree_put(t, NULL, kl, "v", 1, 0));
        EXPECT_EINVAL(scree_put(t, k, kl, NULL, 1, 0));
        cr_expect(eq(int, scree_put(t, k, kl, NULL, 0, 0), 0));         /* an empty value */
        EXPECT_EINVAL(scree_del(NULL, k, kl));
        EXPECT_EINVAL(scree_del(t, NULL, kl));
        EXPECT_EINVAL(scree_get(NULL, k, kl, buf, sizeof(buf), &len));
        EXPECT_EINVAL(scree_get(t, NULL, kl, buf, sizeof(buf), &len));
        EXPECT_EINVAL(scree_get(t, k, kl, NULL, sizeof(buf), &len));
        cr_expect(eq(int, scree_get(t, k, kl, buf, sizeof(buf), NULL), 0));
        EXPECT_EINVAL(scree_get_value(NULL, k, kl, &v));
        EXPECT_EINVAL(scree_get_value(t, NULL, kl, &v));
        EXPECT_EINVAL(scree_get_value(t, k, kl, NULL));
        cr_expect(scree_value_data(NULL) == NULL);
        cr_expect(eq(sz, scree_value_len(NULL), 0));
        cr_expect(eq(u64, scree_value_expiry_ms(NULL), 0));
        scree_value_free(NULL);
        EXPECT_EINVAL(scree_update(NULL, k, kl, fail_it, buf));
        EXPECT_EINVAL(scree_update(t, NULL, kl, fail_it, buf));
        EXPECT_EINVAL(scree_update(t, k, kl, NULL, buf));
        scree_batch_free(NULL);
        scree_batch_clear(NULL);
        cr_expect(eq(sz, scree_batch_count(NULL), 0));
        EXPECT_EINVAL(scree_batch_put(NULL, t, k, kl, "v", 1, 0));
        EXPECT_EINVAL(scree_batch_put(b, NULL, k, kl, "v", 1, 0));
        EXPECT_EINVAL(scree_batch_put(b, t, NULL, kl, "v", 1, 0));
        EXPECT_EINVAL(scree_batch_put(b, t, k, kl, NULL, 1, 0));
        EXPECT_EINVAL(scree_batch_del(NULL, t, k, kl));
        EXPECT_EINVAL(scree_batch_del(b, NULL, k, kl));
        EXPECT_EINVAL(scree_batch_del(b, t, NULL, kl));
        cr_assert(eq(int, scree_batch_put(b, t, k, kl, "v", 1, 0), 0));
        EXPECT_EINVAL(scree_write(NULL, b));
        EXPECT_EINVAL(scree_write(db, NULL));
        scree_batch_free(b);
}

static void null_ranges(scree_table *t)
{
        scree_range r = { 0 };
        scree_rows *rows = NULL;
        scree_iter *it = NULL;
        size_t len = 1;
        uint64_t n;

        EXPECT_EINVAL(scree_scan(NULL, &r, NULL, 0, 10, &rows));
        EXPECT_EINVAL(scree_scan(t, NULL, NULL, 0, 10, &rows));
        EXPECT_EINVAL(scree_scan(t, &r, NULL, 5, 10, &rows));
        EXPECT_EINVAL(scree_scan(t, &r, NULL, 0, 10, NULL));
        cr_expect(eq(sz, scree_rows_count(NULL), 0));
        cr_expect(scree_rows_key(NULL, 0, &len) == NULL);
        cr_expect(scree_rows_value(NULL, 0, &len) == NULL);
        cr_expect(eq(u64, scree_rows_expiry_ms(NULL, 0), 0));
        cr_expect(scree_rows_cursor(NULL, &len) == NULL);
        cr_expect(eq(sz, len, 0));
        cr_expect(scree_rows_cursor(NULL, NULL) == NULL);
        scree_rows_free(NULL);
        cr_assert(eq(int, scree_scan(t, &r, NULL, 0, 10, &rows), 0));
        cr_expect(scree_rows_key(rows, 0, NULL) != NULL);       /* ret_len may be NULL */
        cr_expect(scree_rows_value(rows, 0, NULL) != NULL);
        scree_rows_free(rows);
        EXPECT_EINVAL(scree_iter_new(NULL, &r, &it));
        EXPECT_EINVAL(scree_iter_new(t, NULL, &it));
        EXPECT_EINVAL(scree_iter_new(t, &r, NULL));
        EXPECT_EINVAL(scree_iter_next(NULL));
        cr_expect(scree_iter_key(NULL, &len) == NULL);
        cr_expect(scree_iter_value(NULL, &len) == NULL);
        scree_iter_free(NULL);
        cr_assert(eq(int, scree_iter_new(t, &r, &it), 0));
        cr_expect(scree_iter_key(it, NULL) == NULL);            /* before the first row */
        cr_assert(eq(int, scree_iter_next(it), 1));
        cr_expect(scree_iter_key(it, NULL) != NULL);
        cr_expect(scree_iter_value(it, NULL) != NULL);
        scree_iter_free(it);
        EXPECT_EINVAL(scree_delete_range(NULL, &r, &n));
        EXPECT_EINVAL(scree_delete_range(t, NULL, &n));
}

/* The asynchronous row operations through q. */
static void null_async_rows(scree_cq *q, scree_table *t, const char *k, size_t kl)
{
        scree_range r = { 0 };
        char buf[32];

        EXPECT_EINVAL(scree_put_async(NULL, t, k, kl, "v", 1, 0, NULL));
        EXPECT_EINVAL(scree_put_async(q, NULL, k, kl, "v", 1, 0, NULL));
        EXPECT_EINVAL(scree_put_async(q, t, NULL, kl, "v", 1, 0, NULL));
        EXPECT_EINVAL(scree_put_async(q, t, k, kl, NULL, 1, 0, NULL));
        EXPECT_EINVAL(scree_del_async(NULL, t, k, kl, NULL));
        EXPECT_EINVAL(scree_del_async(q, NULL, k, kl, NULL));
        EXPECT_EINVAL(scree_del_async(q, t, NULL, kl, NULL));
        EXPECT_EINVAL(scree_get_async(NULL, t, k, kl, NULL));
        EXPECT_EINVAL(scree_get_async(q, NULL, k, kl, NULL));
        EXPECT_EINVAL(scree_get_async(q, t, NULL, kl, NULL));
        EXPECT_EINVAL(scree_update_async(NULL, t, k, kl, fail_it, buf, NULL));
        EXPECT_EINVAL(scree_update_async(q, NULL, k, kl, fail_it, buf, NULL));
        EXPECT_EINVAL(scree_update_async(q, t, NULL, kl, fail_it, buf, NULL));
        EXPECT_EINVAL(scree_update_async(q, t, k, kl, NULL, buf, NULL));
        EXPECT_EINVAL(scree_scan_async(NULL, t, &r, NULL, 0, 10, NULL));
        EXPECT_EINVAL(scree_scan_async(q, NULL, &r, NULL, 0, 10, NULL));
        EXPECT_EINVAL(scree_scan_async(q, t, NULL, NULL, 0, 10, NULL));
        EXPECT_EINVAL(scree_scan_async(q, t, &r, NULL, 5, 10, NULL));
        EXPECT_EINVAL(scree_delete_range_async(NULL, t, &r, NULL));
        EXPECT_EINVAL(scree_delete_range_async(q, NULL, &r, NULL));
        EXPECT_EINVAL(scree_delete_range_async(q, t, NULL, NULL));
}

static void null_queues(scree_db *db, scree_table *t, const char *k, size_t kl)
{
        scree_table_spec spec = { .path = "/n" };
        scree_batch *b = scree_batch_new();
        scree_completion c;
        scree_cq *q;

        cr_assert(eq(int, scree_batch_put(b, t, k, kl, "v", 1, 0), 0));
        EXPECT_EINVAL(scree_cq_new(NULL, &q));
        EXPECT_EINVAL(scree_cq_new(db, NULL));
        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        scree_cq_free(NULL);
        EXPECT_EINVAL(scree_cq_fd(NULL));
        EXPECT_EINVAL(scree_cq_poll(NULL, &c, 1));
        EXPECT_EINVAL(scree_cq_poll(q, NULL, 1));
        EXPECT_EINVAL(scree_cq_wait(NULL, &c, 1, 0));
        EXPECT_EINVAL(scree_cq_wait(q, NULL, 1, 0));
        cr_expect(eq(u64, scree_cq_pending(NULL), 0));
        null_async_rows(q, t, k, kl);
        EXPECT_EINVAL(scree_write_async(NULL, b, NULL));
        EXPECT_EINVAL(scree_write_async(q, NULL, NULL));
        EXPECT_EINVAL(scree_mkdir_async(NULL, "/d", NULL));
        EXPECT_EINVAL(scree_mkdir_async(q, NULL, NULL));
        EXPECT_EINVAL(scree_rmdir_async(NULL, "/d", NULL));
        EXPECT_EINVAL(scree_rmdir_async(q, NULL, NULL));
        EXPECT_EINVAL(scree_table_create_async(NULL, &spec, NULL));
        EXPECT_EINVAL(scree_table_create_async(q, NULL, NULL));
        EXPECT_EINVAL(scree_table_drop_async(NULL, "/t", NULL));
        EXPECT_EINVAL(scree_table_drop_async(q, NULL, NULL));
        EXPECT_EINVAL(scree_flush_async(NULL, NULL));
        EXPECT_EINVAL(scree_compact_async(NULL, NULL));
        cr_expect(eq(u64, scree_cq_pending(q), 0));
        scree_cq_free(q);
        scree_batch_free(b);
}

static void null_admin(scree_db *db)
{
        uint64_t n;
        int count = 0;

        EXPECT_EINVAL(scree_stat(NULL, "writes", &n));
        EXPECT_EINVAL(scree_stat(db, "writes", NULL));
        EXPECT_EINVAL(scree_stat(db, NULL, &n));
        EXPECT_EINVAL(scree_stats(NULL, count_stat, &count));
        EXPECT_EINVAL(scree_stats(db, NULL, NULL));
        EXPECT_EINVAL(scree_flush(NULL));
        EXPECT_EINVAL(scree_compact(NULL));
        cr_expect(scree_last_error() != NULL);
}

Test(api_errors, every_function_refuses_null_pointers)
{
        scree_db *db = open_db(2);
        scree_table *t = make_table(db, "/t", 0);
        scree_options *o = scree_options_new();
        char k[64];
        size_t kl = key2(k, sizeof(k), "a", 1);

        mark = scree_options_new();
        null_options_keys(o);
        null_tables(db);
        null_rows_batches(db, t, k, kl);
        null_ranges(t);
        null_queues(db, t, k, kl);
        null_admin(db);
        cr_expect(eq(int, scree_delete_range(t, &(scree_range){ 0 }, NULL), 0));
        scree_options_free(mark);
        scree_options_free(o);
        scree_table_close(t);
        cr_expect(eq(int, scree_close(db), 0));
}

/* scree_last_error was stale or empty after some failures (-ENOSPC from a
 * put, the key helpers' errors): every failing call leaves its own
 * message, a successful one leaves it alone, and a failed completion
 * carries its own. */
/* The key helpers' failures, and a success after one. */
static void key_messages(void)
{
        scree_part bad = { .type = (scree_type)9 }, out[4];
        char k[64], scratch[64];
        size_t len;

        cr_expect(eq(int, scree_key_encode(&bad, 1, k, sizeof(k), &len), -EINVAL));
        cr_expect(strstr(scree_last_error(), "type") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_key_encode(out, 0, k, sizeof(k), &len), 0));
        cr_expect(strstr(scree_last_error(), "type") != NULL, "success kept it: %s",
                  scree_last_error());
        cr_expect(eq(int, scree_key_encode(&(scree_part){ .type = SCREE_U64 }, 1, NULL, 0, &len),
                     -ENOSPC));
        cr_expect(strstr(scree_last_error(), "9 bytes") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_key_decode("\x7f\x01", 2, out, 4, scratch, sizeof(scratch)),
                     -EINVAL));
        cr_expect(strstr(scree_last_error(), "not a whole key") != NULL, "%s", scree_last_error());
}

Test(api_errors, every_failure_leaves_its_own_message)
{
        scree_db *db = open_db(2);
        scree_table *t = make_table(db, "/t", 1), *dropped = make_table(db, "/gone", 0);
        scree_batch *b = scree_batch_new();
        size_t big = (8 << 20) + 1, kl, len;
        char k[64], *val = calloc(1, big), scratch[64];
        scree_completion c;
        scree_cq *q;

        kl = key2(k, sizeof(k), "a", 1);
        key_messages();
        cr_expect(eq(int, scree_put(t, k, kl, val, big, 0), -EINVAL));
        cr_expect(strstr(scree_last_error(), "a value is") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_get(NULL, k, kl, scratch, sizeof(scratch), &len), -EINVAL));
        cr_expect(strstr(scree_last_error(), "no table") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_get(t, k, kl, scratch, sizeof(scratch), &len), -SCREE_ENOTFOUND));
        cr_expect(strstr(scree_last_error(), "no such key") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_update(t, k, kl, fail_it, NULL), -EPERM));
        cr_expect(strstr(scree_last_error(), "update function") != NULL, "%s",
                  scree_last_error());
        cr_assert(eq(int, scree_table_drop(db, "/gone"), 0));
        cr_expect(eq(int, scree_put(dropped, k, kl, "v", 1, 0), -SCREE_ENOTFOUND));
        cr_expect(strstr(scree_last_error(), "dropped") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_write(db, b), -EINVAL));
        cr_expect(strstr(scree_last_error(), "empty batch") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_batch_put(b, t, "raw", 3, "v", 1, 0), -EINVAL));
        cr_expect(strstr(scree_last_error(), "tuple") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_options_get(mark = scree_options_new(), "pin", scratch, 2),
                     -ENOSPC));
        cr_expect(strstr(scree_last_error(), "pin") != NULL, "%s", scree_last_error());
        /* a completion carries its own */
        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        cr_assert(eq(int, scree_get_async(q, t, k, kl, NULL), 0));
        cr_assert(eq(int, scree_cq_wait(q, &c, 1, -1), 1));
        cr_expect(eq(int, c.res, -SCREE_ENOTFOUND));
        cr_expect(strstr(c.message, "no such key") != NULL, "%s", c.message);
        scree_cq_free(q);
        scree_options_free(mark);
        scree_batch_free(b);
        free(val);
        scree_table_close(dropped);
        scree_table_close(t);
        scree_close(db);
}

/* scree_batch_put and scree_batch_del took a key that is not of the
 * table's schema (scree_write refused the batch later); they check it as
 * scree_put does, with the same error. */
Test(api_errors, batch_ops_check_the_key_against_the_table_schema)
{
        scree_db *db = open_db(1);
        scree_table *t = make_table(db, "/t", 0);
        scree_batch *b = scree_batch_new();
        scree_part p[2] = { { .type = SCREE_U64, .v.u64 = 1 }, { .type = SCREE_U64, .v.u64 = 2 } };
        char k[64], want[512];
        size_t kl;

        cr_expect(eq(int, scree_put(t, "raw", 3, "v", 1, 0), -EINVAL));
        snprintf(want, sizeof(want), "%s", scree_last_error());
        cr_expect(eq(int, scree_batch_put(b, t, "raw", 3, "v", 1, 0), -EINVAL));
        cr_expect(eq(str, (char *)scree_last_error(), want));
        cr_expect(eq(int, scree_batch_del(b, t, "raw", 3), -EINVAL));
        cr_expect(eq(str, (char *)scree_last_error(), want));
        cr_assert(eq(int, scree_key_encode(p, 2, k, sizeof(k), &kl), 0));
        cr_expect(eq(int, scree_put(t, k, kl, "v", 1, 0), -EINVAL));
        snprintf(want, sizeof(want), "%s", scree_last_error());
        cr_expect(eq(int, scree_batch_put(b, t, k, kl, "v", 1, 0), -EINVAL));
        cr_expect(eq(str, (char *)scree_last_error(), want));
        cr_expect(eq(int, scree_batch_del(b, t, k, kl), -EINVAL));
        cr_expect(eq(str, (char *)scree_last_error(), want));
        cr_expect(eq(sz, scree_batch_count(b), 0));
        kl = key2(k, sizeof(k), "a", 1);
        cr_expect(eq(int, scree_batch_put(b, t, k, kl, "v", 1, 0), 0));
        cr_expect(eq(int, scree_write(db, b), 0), "%s", scree_last_error());
        scree_batch_free(b);
        scree_table_close(t);
        scree_close(db);
}

/* ---- the log callback ---- */

struct log_catch {
        pthread_mutex_t mu;
        char text[8192];
        int info_lines;
        bool newline;
};

static void catch_log(void *arg, int level, const char *msg)
{
        struct log_catch *lc = arg;

        pthread_mutex_lock(&lc->mu);
        if (strlen(lc->text) + strlen(msg) + 2 < sizeof(lc->text)) {
                strcat(lc->text, msg);
                strcat(lc->text, "|");
        }
        lc->info_lines += level == SCREE_LOG_INFO;
        lc->newline |= strchr(msg, '\n') != NULL;
        pthread_mutex_unlock(&lc->mu);
}

/* Leaves a temporary file in shard 0's directory: the next open removes
 * it and logs so (at info level). */
static void leave_tmp_file(const char *name)
{
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s/shard-0/%s", dir, name);
        f = fopen(path, "w");
        cr_assert(f != NULL);
        fclose(f);
}

/* Reads what fd 2 got while fn ran into buf (cap bytes). */
static void capture_stderr(void (*fn)(void), char *buf, size_t cap)
{
        char path[512];
        int saved = dup(2), fd;
        ssize_t n;

        snprintf(path, sizeof(path), "%s/stderr.txt", dir);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        cr_assert(fd >= 0 && saved >= 0);
        dup2(fd, 2);
        fn();
        dup2(saved, 2);
        close(saved);
        n = pread(fd, buf, cap - 1, 0);
        buf[n > 0 ? n : 0] = 0;
        close(fd);
}

static void open_and_close(void)
{
        cr_assert(eq(int, scree_close(open_db(1)), 0));
}

/* The engine logged to stderr with no way for a program to take the lines. */
Test(api_errors, a_log_callback_takes_the_engines_lines_and_null_gives_them_back)
{
        static struct log_catch lc = { .mu = PTHREAD_MUTEX_INITIALIZER };
        scree_db *db = open_db(1);
        char err[8192];

        cr_expect(eq(int, scree_set_log(catch_log, &lc), -EBUSY));     /* its threads run */
        cr_expect(strstr(scree_last_error(), "scree_open") != NULL, "%s", scree_last_error());
        cr_assert(eq(int, scree_close(db), 0));
        cr_assert(eq(int, scree_set_log(catch_log, &lc), 0));
        leave_tmp_file("left-over.tmp");
        capture_stderr(open_and_close, err, sizeof(err));
        cr_expect(strstr(lc.text, "left-over.tmp") != NULL, "caught: %s", lc.text);
        cr_expect(gt(int, lc.info_lines, 0));
        cr_expect(eq(int, lc.newline, false));
        cr_expect(strstr(err, "left-over.tmp") == NULL, "stderr got it too: %s", err);

        /* NULL: back to stderr, as before */
        cr_assert(eq(int, scree_set_log(NULL, NULL), 0));
        leave_tmp_file("second.tmp");
        capture_stderr(open_and_close, err, sizeof(err));
        cr_expect(strstr(err, "second.tmp") != NULL, "stderr: %s", err);
        cr_expect(strstr(err, " info ") != NULL, "stderr: %s", err);
        cr_expect(strstr(lc.text, "second.tmp") == NULL, "caught: %s", lc.text);
}
