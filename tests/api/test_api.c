/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's public API (include/scree/scree.h) as a program uses it,
 * through libscree.so: opening (and the lock against a second open),
 * tables, rows, TTLs, read-modify-writes from many threads, batches, bad
 * input, counters and maintenance, data surviving a reopen. NULL pointers,
 * failure messages and the log callback: test_api_errors.c.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <scree/scree.h>

#include "tests/api/api_helpers.h"
#include "tests/kernel.h"

TestSuite(api, .init = setup, .fini = teardown, .timeout = 120);

Test(api, rows_survive_a_reopen_and_the_lock_keeps_a_second_open_out)
{
        scree_db *db = open_db(2), *again = NULL;
        scree_table *t;
        char k[64], v[64];
        size_t kl, vl = 0;

        cr_assert(eq(int, scree_mkdir(db, "/app"), 0));
        t = make_table(db, "/app/users", 0);
        for (uint64_t i = 0; i < 500; i++) {
                kl = key2(k, sizeof(k), "u", i);
                vl = (size_t)snprintf(v, sizeof(v), "value-%llu", (unsigned long long)i);
                cr_assert(eq(int, scree_put(t, k, kl, v, vl, 0), 0));
        }
        cr_expect(eq(int, scree_open(dir, NULL, &again), -EWOULDBLOCK));
        cr_expect(strstr(scree_last_error(), "is open in process") != NULL, "%s",
                  scree_last_error());
        scree_table_close(t);
        cr_assert(eq(int, scree_close(db), 0));

        db = open_db(2);
        cr_assert(eq(int, scree_table_open(db, "/app/users", &t), 0));
        for (uint64_t i = 0; i < 500; i++) {
                char want[64];
                size_t wl = (size_t)snprintf(want, sizeof(want), "value-%llu", (unsigned long long)i);

                kl = key2(k, sizeof(k), "u", i);
                cr_assert(eq(int, scree_get(t, k, kl, v, sizeof(v), &vl), 0));
                cr_assert(eq(sz, vl, wl));
                cr_assert(eq(int, memcmp(v, want, wl), 0));
        }
        scree_table_close(t);
        cr_assert(eq(int, scree_close(db), 0));
}

Test(api, another_smp_is_refused_and_none_opens_with_the_databases)
{
        scree_db *db = open_db(2), *other = NULL;
        scree_options *o = scree_options_new();

        cr_assert(eq(int, scree_close(db), 0));
        scree_options_set(o, "smp", "1");
        cr_expect(eq(int, scree_open(dir, o, &other), -EINVAL));
        cr_expect(strstr(scree_last_error(), "smp") != NULL, "%s", scree_last_error());
        scree_options_free(o);
        /* smp unset: the shards the database was made with */
        o = scree_options_new();
        scree_options_set(o, "pin", "no");
        scree_options_set(o, "memory", "64mb");
        cr_assert(eq(int, scree_open(dir, o, &other), 0), "%s", scree_last_error());
        cr_expect(eq(u32, scree_shards(other), 2));
        cr_expect(eq(int, scree_close(other), 0));
        scree_options_free(o);
}

Test(api, get_copies_into_the_buffer_or_says_how_much_room)
{
        scree_db *db = open_db(1);
        scree_table *t = make_table(db, "/t", 0);
        char k[64], buf[4];
        size_t kl = key2(k, sizeof(k), "a", 1), len = 0;
        scree_value *v = NULL;

        cr_assert(eq(int, scree_put(t, k, kl, "hello", 5, 0), 0));
        cr_expect(eq(int, scree_get(t, k, kl, buf, sizeof(buf), &len), -ENOBUFS));
        cr_expect(eq(sz, len, 5));
        cr_assert(eq(int, scree_get_value(t, k, kl, &v), 0));
        cr_expect(eq(sz, scree_value_len(v), 5));
        cr_expect(eq(int, memcmp(scree_value_data(v), "hello", 5), 0));
        cr_expect(eq(u64, scree_value_expiry_ms(v), 0));
        scree_value_free(v);
        cr_assert(eq(int, scree_del(t, k, kl), 0));
        cr_expect(eq(int, scree_get(t, k, kl, buf, sizeof(buf), &len), -SCREE_ENOTFOUND));
        cr_expect(eq(int, scree_del(t, k, kl), 0));
        scree_table_close(t);
        scree_close(db);
}

Test(api, a_row_with_a_ttl_expires)
{
        scree_db *db = open_db(1);
        scree_table *t = make_table(db, "/t", 0);
        char k[64];
        size_t kl = key2(k, sizeof(k), "a", 1), len;
        scree_value *v = NULL;
        time_t deadline = time(NULL) + 60;
        int r;

        cr_assert(eq(int, scree_put(t, k, kl, "x", 1, 50), 0));
        r = scree_get_value(t, k, kl, &v);
        if (r == 0) {   /* a slow machine may be past 50 ms already */
                cr_expect(gt(u64, scree_value_expiry_ms(v), 0));
                scree_value_free(v);
        }
        while ((r = scree_get(t, k, kl, NULL, 0, &len)) != -SCREE_ENOTFOUND && time(NULL) < deadline)
                nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
        cr_expect(eq(int, r, -SCREE_ENOTFOUND));
        scree_table_close(t);
        scree_close(db);
}

/* ---- read-modify-write ---- */

static int incr(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        char *buf = arg;        /* the calling thread's */
        unsigned long long n = 0;

        if (cur) {
                char tmp[32];

                memcpy(tmp, cur, len < 31 ? len : 31);
                tmp[len < 31 ? len : 31] = 0;
                n = strtoull(tmp, NULL, 10);
        }
        out->value = buf;
        out->value_len = (size_t)snprintf(buf, 32, "%llu", n + 1);
        return SCREE_UPDATE_PUT;
}

struct incr_thread {
        scree_table *t;
        int fails;
};

static void *incr_many(void *arg)
{
        struct incr_thread *it = arg;
        char k[64], buf[32];
        size_t kl = key2(k, sizeof(k), "counter", 7);

        for (int i = 0; i < 500; i++)
                if (scree_update(it->t, k, kl, incr, buf) != SCREE_UPDATE_PUT)
                        it->fails++;
        return NULL;
}

Test(api, updates_from_many_threads_never_interleave)
{
        scree_db *db = open_db(2);
        scree_table *t = make_table(db, "/c", 1);
        struct incr_thread th[4];
        pthread_t id[4];
        char k[64], v[32];
        size_t kl = key2(k, sizeof(k), "counter", 7), vl = 0;

        for (int i = 0; i < 4; i++) {
                th[i] = (struct incr_thread){ .t = t };
                cr_assert(eq(int, pthread_create(&id[i], NULL, incr_many, &th[i]), 0));
        }
        for (int i = 0; i < 4; i++) {
                pthread_join(id[i], NULL);
                cr_expect(eq(int, th[i].fails, 0));
        }
        cr_assert(eq(int, scree_get(t, k, kl, v, sizeof(v) - 1, &vl), 0));
        v[vl] = 0;
        cr_expect(eq(str, v, "2000"));
        scree_table_close(t);
        scree_close(db);
}

static int delete_it(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        return cur ? SCREE_UPDATE_DEL : SCREE_UPDATE_NONE;
}

static int call_back_in(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        scree_table *t = arg;

        /* A blocking call on the shard's own thread: refused, no deadlock. */
        return scree_put(t, "k", 1, "v", 1, 0);
}

Test(api, update_deletes_writes_nothing_or_fails_as_its_function_says)
{
        scree_db *db = open_db(1);
        scree_table *t = make_table(db, "/c", 0);
        char k[64];
        size_t kl = key2(k, sizeof(k), "x", 1), len;

        cr_assert(eq(int, scree_put(t, k, kl, "1", 1, 0), 0));
        cr_expect(eq(int, scree_update(t, k, kl, fail_it, NULL), -EPERM));
        cr_expect(eq(int, scree_get(t, k, kl, NULL, 0, &len), -ENOBUFS));
        cr_expect(eq(int, scree_update(t, k, kl, delete_it, NULL), SCREE_UPDATE_DEL));
        cr_expect(eq(int, scree_get(t, k, kl, NULL, 0, &len), -SCREE_ENOTFOUND));
        cr_expect(eq(int, scree_update(t, k, kl, delete_it, NULL), SCREE_UPDATE_NONE));
        cr_expect(eq(int, scree_update(t, k, kl, call_back_in, t), -SCREE_EONSHARD));
        scree_table_close(t);
        scree_close(db);
}

/* ---- batches ---- */

Test(api, batches_on_one_shard_and_across_shards)
{
        scree_db *db = open_db(2);
        scree_table *h = make_table(db, "/h", 1);
        scree_batch *b = scree_batch_new();
        char k[64], buf[8];
        size_t kl, len;
        uint64_t n = 0;

        /* One hash part: every row of "user" lies on one shard. */
        for (uint64_t i = 0; i < 100; i++) {
                kl = key2(k, sizeof(k), "user", i);
                cr_assert(eq(int, scree_batch_put(b, h, k, kl, "v", 1, 0), 0));
        }
        kl = key2(k, sizeof(k), "user", 5);
        cr_assert(eq(int, scree_batch_del(b, h, k, kl), 0));
        cr_expect(eq(sz, scree_batch_count(b), 101));
        cr_assert(eq(int, scree_write(db, b), 0), "%s", scree_last_error());
        cr_expect(eq(int, scree_get(h, k, kl, buf, sizeof(buf), &len), -SCREE_ENOTFOUND));
        kl = key2(k, sizeof(k), "user", 6);
        cr_expect(eq(int, scree_get(h, k, kl, buf, sizeof(buf), &len), 0));

        /* Keys of many users spread over both shards: a two-phase commit. */
        scree_batch_clear(b);
        for (uint64_t i = 0; i < 64; i++) {
                char who[16];

                snprintf(who, sizeof(who), "w%llu", (unsigned long long)i);
                kl = key2(k, sizeof(k), who, 1);
                cr_assert(eq(int, scree_batch_put(b, h, k, kl, "v", 1, 0), 0));
        }
        cr_expect(eq(int, scree_write(db, b), 0), "%s", scree_last_error());
        for (uint64_t i = 0; i < 64; i++) {
                char who[16];

                snprintf(who, sizeof(who), "w%llu", (unsigned long long)i);
                kl = key2(k, sizeof(k), who, 1);
                n += scree_get(h, k, kl, buf, sizeof(buf), &len) == 0;
        }
        cr_expect(eq(u64, n, 64));
        scree_batch_clear(b);
        cr_expect(eq(int, scree_write(db, b), -EINVAL));
        scree_batch_free(b);
        scree_table_close(h);
        scree_close(db);
}

/* ---- tables and bad input ---- */

static int collect(void *arg, const scree_entry *e)
{
        char *s = arg;

        strcat(s, e->name);
        strcat(s, e->is_table ? "(t) " : "(d) ");
        return 0;
}

Test(api, tables_are_listed_described_and_dropped)
{
        scree_db *db = open_db(2);
        scree_table *t;
        scree_table_info info;
        char names[256] = "", k[64];
        size_t kl = key2(k, sizeof(k), "a", 1);

        cr_assert(eq(int, scree_mkdir(db, "/app"), 0));
        cr_expect(eq(int, scree_mkdir(db, "/app"), -EEXIST));
        cr_expect(eq(int, scree_mkdir(db, "/no/such"), -SCREE_ENOTFOUND));
        t = make_table(db, "/app/events", 1);
        cr_assert(eq(int, scree_put(t, k, kl, "v", 1, 0), 0));
        cr_assert(eq(int, scree_list(db, "/app", collect, names), 0));
        cr_expect(eq(str, names, "events(t) "));
        cr_assert(eq(int, scree_table_describe(db, "/app/events", &info), 0));
        cr_expect(eq(sz, info.n_parts, 2));
        cr_expect(eq(int, info.parts[1], SCREE_U64));
        cr_expect(eq(u32, info.tablets, 4));
        cr_expect(eq(u32, info.shard_tablets[0] + info.shard_tablets[1], 4));
        cr_expect(eq(u64, info.rows, 1));
        cr_expect(eq(int, scree_rmdir(db, "/app"), -ENOTEMPTY));
        cr_assert(eq(int, scree_table_drop(db, "/app/events"), 0));
        cr_expect(eq(int, scree_put(t, k, kl, "v", 1, 0), -SCREE_ENOTFOUND));
        cr_expect(eq(int, scree_table_describe(db, "/app/events", &info), -SCREE_ENOTFOUND));
        cr_expect(eq(int, scree_rmdir(db, "/app"), 0));
        scree_table_close(t);
        scree_close(db);
}

Test(api, bad_input_gets_an_error_that_names_it)
{
        static const scree_type bad_parts[] = { SCREE_BYTES, (scree_type)9 };
        scree_options *o = scree_options_new();
        scree_db *db;
        scree_table *t;
        scree_table_spec spec = { .path = "/bad", .n_parts = 2, .parts = bad_parts };
        char k[64], big[70000] = { 0 }, buf[32];
        size_t kl;

        cr_expect(eq(int, scree_options_set(o, "no-such", "1"), -EINVAL));
        cr_expect(strstr(scree_last_error(), "no-such") != NULL);
        cr_expect(eq(int, scree_options_set(o, "memory", "lots"), -EINVAL));
        cr_expect(eq(int, scree_options_set(o, "commitlog-sync", "sometimes"), -EINVAL));
        cr_expect(eq(int, scree_options_set(o, "memory", "32mb"), 0));
        cr_expect(eq(int, scree_options_get(o, "memory", buf, sizeof(buf)), 8));
        cr_expect(eq(str, buf, "33554432"));
        scree_options_free(o);

        db = open_db(1);
        cr_expect(eq(int, scree_table_create(db, &spec), -EINVAL));
        cr_expect(strstr(scree_last_error(), "part 2") != NULL, "%s", scree_last_error());
        spec = (scree_table_spec){ .path = "/opts", .options = "split-size lots" };
        cr_expect(eq(int, scree_table_create(db, &spec), -EINVAL));
        cr_expect(strstr(scree_last_error(), "SPLIT-SIZE") != NULL, "%s", scree_last_error());
        spec = (scree_table_spec){ .path = "bad path" };
        cr_expect(eq(int, scree_table_create(db, &spec), -EINVAL));
        cr_expect(eq(int, scree_table_open(db, "/none", &t), -SCREE_ENOTFOUND));

        t = make_table(db, "/t", 0);
        cr_expect(eq(int, scree_put(t, "raw", 3, "v", 1, 0), -EINVAL));
        cr_expect(strstr(scree_last_error(), "tuple") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_put(t, big, sizeof(big), "v", 1, 0), -EINVAL));
        cr_expect(eq(int, scree_put(t, NULL, 0, "v", 1, 0), -EINVAL));
        kl = key2(k, sizeof(k), "a", 1);
        {
                scree_part p[2] = { { .type = SCREE_U64, .v.u64 = 1 },
                                    { .type = SCREE_U64, .v.u64 = 2 } };

                cr_assert(eq(int, scree_key_encode(p, 2, k, sizeof(k), &kl), 0));
                cr_expect(eq(int, scree_put(t, k, kl, "v", 1, 0), -EINVAL));
                cr_expect(strstr(scree_last_error(), "part 1") != NULL, "%s", scree_last_error());
        }
        scree_table_close(t);
        scree_close(db);
}

Test(api, a_table_of_no_parts_takes_any_bytes_in_memcmp_order)
{
        scree_db *db = open_db(2);
        scree_table_spec spec = { .path = "/raw" };
        scree_table *t;
        char v[8];
        size_t len;

        cr_assert(eq(int, scree_table_create(db, &spec), 0));
        cr_assert(eq(int, scree_table_open(db, "/raw", &t), 0));
        cr_assert(eq(int, scree_put(t, "\x00\xff", 2, "1", 1, 0), 0));
        cr_assert(eq(int, scree_get(t, "\x00\xff", 2, v, sizeof(v), &len), 0));
        cr_expect(eq(sz, len, 1));
        scree_table_close(t);
        scree_close(db);
}

Test(api, keys_encode_and_decode_in_order)
{
        scree_part a[2] = { { .type = SCREE_I64, .v.i64 = -5 },
                            { .type = SCREE_BYTES, .v.bytes = { "a\0b", 3 } } };
        scree_part b[1] = { { .type = SCREE_I64, .v.i64 = 3 } }, out[4];
        uint8_t ka[64], kb[64], end[64], scratch[64];
        size_t la, lb;

        cr_assert(eq(int, scree_key_encode(a, 2, ka, sizeof(ka), &la), 0));
        cr_assert(eq(int, scree_key_encode(b, 1, kb, sizeof(kb), &lb), 0));
        cr_expect(lt(int, memcmp(ka, kb, la < lb ? la : lb), 0));
        cr_expect(eq(int, scree_key_encode(a, 2, NULL, 0, &la), -ENOSPC));
        cr_assert(eq(int, scree_key_encode(a, 2, ka, sizeof(ka), &la), 0));
        cr_assert(eq(int, scree_key_decode(ka, la, out, 4, scratch, sizeof(scratch)), 2));
        cr_expect(eq(i64, out[0].v.i64, -5));
        cr_expect(eq(sz, out[1].v.bytes.len, 3));
        cr_expect(eq(int, memcmp(out[1].v.bytes.p, "a\0b", 3), 0));
        cr_expect(eq(sz, scree_key_prefix_end(kb, lb, end, sizeof(end)), lb + 1));
        cr_expect(eq(int, scree_key_decode("\x7f", 1, out, 4, scratch, sizeof(scratch)), -EINVAL));
}

Test(api, counters_flush_and_compact)
{
        scree_db *db = open_db(2);
        scree_table *t = make_table(db, "/t", 1);
        char k[64];
        uint64_t writes = 0, flushes = 0, sst = 0, syncs = 0, gathers = UINT64_MAX;
        int n = 0;

        for (uint64_t i = 0; i < 200; i++) {
                size_t kl = key2(k, sizeof(k), "s", i);

                cr_assert(eq(int, scree_put(t, k, kl, "value", 5, 0), 0));
        }
        cr_assert(eq(int, scree_stat(db, "writes", &writes), 0));
        cr_expect(ge(u64, writes, 200));
        cr_expect(eq(int, scree_stat(db, "nope", &writes), -SCREE_ENOTFOUND));
        /* Batch mode, one blocking writer: a lone writer's flush never waits
         * for others (wal_gather.h). */
        cr_assert(eq(int, scree_stat(db, "log_syncs", &syncs), 0));
        cr_expect(ge(u64, syncs, 1));
        cr_assert(eq(int, scree_stat(db, "log_gathers", &gathers), 0));
        cr_expect(eq(u64, gathers, 0), "a lone writer waited");
        cr_assert(eq(int, scree_flush(db), 0));
        cr_assert(eq(int, scree_stat(db, "flushes", &flushes), 0));
        cr_expect(gt(u64, flushes, 0));
        cr_assert(eq(int, scree_compact(db), 0));
        cr_assert(eq(int, scree_stat(db, "sstables", &sst), 0));
        cr_expect(gt(u64, sst, 0));
        cr_assert(eq(int, scree_stats(db, count_stat, &n), 0));
        cr_expect(gt(int, n, 20));
        cr_expect(eq(int, scree_api_version(), SCREE_API_VERSION));
        scree_table_close(t);
        scree_close(db);
}

/* With prefault the shards fault their memory in after the open: the
 * counters say how much is left, and it comes down to 0. */
Test(api, prefault_counters_come_down_to_zero)
{
        scree_options *o = scree_options_new();
        uint64_t pending = 1, done = 0;
        scree_db *db = NULL;
        time_t deadline = time(NULL) + 60;

        if (!kernel_populates())
                cr_skip_test("no MADV_POPULATE_WRITE here (Linux < 5.14): nothing is prefaulted");
        cr_assert(o != NULL);
        cr_assert(eq(int, scree_options_set(o, "smp", "1"), 0));
        cr_assert(eq(int, scree_options_set(o, "memory", "64mb"), 0));
        cr_assert(eq(int, scree_options_set(o, "pin", "no"), 0));
        cr_assert(eq(int, scree_options_set(o, "prefault", "yes"), 0));
        cr_assert(eq(int, scree_open(dir, o, &db), 0), "open: %s", scree_last_error());
        scree_options_free(o);
        while (time(NULL) < deadline) {
                cr_assert(eq(int, scree_stat(db, "prefault_pending", &pending), 0));
                if (pending == 0)
                        break;
                usleep(1000);
        }
        cr_expect(eq(u64, pending, 0), "memory still being faulted in after 60 s");
        cr_assert(eq(int, scree_stat(db, "blocks_prefaulted", &done), 0));
        cr_expect(gt(u64, done, 0));
        scree_close(db);
}

/* Values of 32 KiB or more are not copied: they point into the engine's
 * memory, held until freed -- across a flush and a compaction, and
 * scree_close refuses while one is held. */
Test(api, large_values_are_lent_not_copied_and_close_waits_for_them)
{
        scree_db *db = open_db(2);
        scree_table *t = make_table(db, "/big", 1);
        size_t big = 100 << 10;
        char *val = malloc(big), k[64];
        scree_value *v[8];
        size_t kl;

        for (size_t i = 0; i < big; i++)
                val[i] = (char)('a' + i % 23);
        for (int i = 0; i < 8; i++) {
                kl = key2(k, sizeof(k), "obj", (uint64_t)i);
                cr_assert(eq(int, scree_put(t, k, kl, val, big, 0), 0));
                cr_assert(eq(int, scree_get_value(t, k, kl, &v[i]), 0));
        }
        /* the memtables go to SSTables, then one table per tablet: the
         * values lent stay as they were */
        cr_assert(eq(int, scree_flush(db), 0));
        cr_assert(eq(int, scree_compact(db), 0));
        for (int i = 0; i < 8; i++) {
                kl = key2(k, sizeof(k), "obj", (uint64_t)i);
                cr_assert(eq(int, scree_put(t, k, kl, "small", 5, 0), 0));
        }
        for (int i = 0; i < 8; i++) {
                cr_assert(eq(sz, scree_value_len(v[i]), big));
                cr_assert(eq(int, memcmp(scree_value_data(v[i]), val, big), 0), "value %d", i);
        }
        /* read from the cache now (flushed): lent from a cached block */
        scree_value_free(v[0]);
        cr_assert(eq(int, scree_flush(db), 0));
        kl = key2(k, sizeof(k), "obj", 0);
        cr_assert(eq(int, scree_put(t, k, kl, val, big, 0), 0));
        cr_assert(eq(int, scree_flush(db), 0));
        cr_assert(eq(int, scree_get_value(t, k, kl, &v[0]), 0));
        cr_assert(eq(int, memcmp(scree_value_data(v[0]), val, big), 0));
        scree_table_close(t);
        cr_expect(eq(int, scree_close(db), -EBUSY));
        cr_expect(strstr(scree_last_error(), "still held") != NULL, "%s", scree_last_error());
        for (int i = 0; i < 8; i++)
                scree_value_free(v[i]);
        cr_expect(eq(int, scree_close(db), 0));
        free(val);
}

/* Regressions from a new user's run: a TTL that would wrap the expiry is
 * refused (the write was lost, silently), and scree_close refuses while a
 * table handle or a queue is open (later calls through them read freed
 * memory). */
Test(api, a_wrapping_ttl_and_a_close_with_handles_open_are_refused)
{
        scree_db *db = open_db(1);
        scree_table *t = make_table(db, "/t", 0);
        scree_batch *b = scree_batch_new();
        scree_cq *q;
        char k[64];
        size_t kl = key2(k, sizeof(k), "a", 1), len;

        cr_expect(eq(int, scree_put(t, k, kl, "v", 1, UINT64_MAX), -EINVAL));
        cr_expect(strstr(scree_last_error(), "TTL") != NULL, "%s", scree_last_error());
        cr_expect(eq(int, scree_batch_put(b, t, k, kl, "v", 1, UINT64_MAX), -EINVAL));
        cr_expect(eq(int, scree_put(t, k, kl, "v", 1, UINT64_C(1) << 40), 0));
        cr_expect(eq(int, scree_get(t, k, kl, NULL, 0, &len), -ENOBUFS));
        scree_batch_free(b);
        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        cr_expect(eq(int, scree_close(db), -EBUSY));
        cr_expect(strstr(scree_last_error(), "still open") != NULL, "%s", scree_last_error());
        scree_cq_free(q);
        cr_expect(eq(int, scree_close(db), -EBUSY));
        scree_table_close(t);
        cr_expect(eq(int, scree_close(db), 0));
}
