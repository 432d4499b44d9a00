/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's public API (include/scree/scree.h) as a program uses it,
 * through libscree.so: opening (and the lock against a second open),
 * tables, rows, TTLs, read-modify-writes from many threads, batches, bad
 * input (NULL pointers to every function, and the message each failure
 * leaves), counters and maintenance, data surviving a reopen, and the log
 * callback.
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

#include "tests/tmpdir.h"

static char dir[256];

static void setup(void)
{
        tmpdir_make(dir, sizeof(dir), "api");
}

static void teardown(void)
{
        tmpdir_remove(dir);
}

static scree_db *open_db(unsigned smp)
{
        scree_options *o = scree_options_new();
        char n[16];
        scree_db *db = NULL;
        int r;

        snprintf(n, sizeof(n), "%u", smp);
        cr_assert(o != NULL);
        cr_assert(eq(int, scree_options_set(o, "smp", n), 0));
        cr_assert(eq(int, scree_options_set(o, "memory", "64mb"), 0));
        cr_assert(eq(int, scree_options_set(o, "pin", "no"), 0));
        r = scree_open(dir, o, &db);
        scree_options_free(o);
        cr_assert(eq(int, r, 0), "open: %s: %s", scree_strerror(r), scree_last_error());
        return db;
}

/* A (bytes, u64) key. */
static size_t key2(char *buf, size_t cap, const char *who, uint64_t n)
{
        scree_part p[2] = { { .type = SCREE_BYTES, .v.bytes = { who, strlen(who) } },
                            { .type = SCREE_U64, .v.u64 = n } };
        size_t len = 0;

        cr_assert(eq(int, scree_key_encode(p, 2, buf, cap, &len), 0));
        return len;
}

static scree_table *make_table(scree_db *db, const char *path, size_t hash_parts)
{
        static const scree_type parts[] = { SCREE_BYTES, SCREE_U64 };
        scree_table_spec spec = { .path = path, .n_parts = 2, .parts = parts,
                                  .hash_parts = hash_parts, .tablets = hash_parts ? 4 : 0 };
        scree_table *t = NULL;
        int r = scree_table_create(db, &spec);

        cr_assert(eq(int, r, 0), "create %s: %s", path, scree_last_error());
        cr_assert(eq(int, scree_table_open(db, path, &t), 0));
        return t;
}

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

static int fail_it(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        return -EPERM;
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

static void count_stat(void *arg, const char *name, uint64_t value)
{
        (*(int *)arg)++;
}

Test(api, counters_flush_and_compact)
{
        scree_db *db = open_db(2);
        scree_table *t = make_table(db, "/t", 1);
        char k[64];
        uint64_t writes = 0, flushes = 0, sst = 0;
        int n = 0;

        for (uint64_t i = 0; i < 200; i++) {
                size_t kl = key2(k, sizeof(k), "s", i);

                cr_assert(eq(int, scree_put(t, k, kl, "value", 5, 0), 0));
        }
        cr_assert(eq(int, scree_stat(db, "writes", &writes), 0));
        cr_expect(ge(u64, writes, 200));
        cr_expect(eq(int, scree_stat(db, "nope", &writes), -SCREE_ENOTFOUND));
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

/* ---- regressions from a new user's run: NULL pointers, messages, batch
 * keys, the log ---- */

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
        EXPECT_EINVAL(scree_update(NULL, k, kl, incr, buf));
        EXPECT_EINVAL(scree_update(t, NULL, kl, incr, buf));
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
        EXPECT_EINVAL(scree_update_async(NULL, t, k, kl, incr, buf, NULL));
        EXPECT_EINVAL(scree_update_async(q, NULL, k, kl, incr, buf, NULL));
        EXPECT_EINVAL(scree_update_async(q, t, NULL, kl, incr, buf, NULL));
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

Test(api, every_function_refuses_null_pointers)
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

Test(api, every_failure_leaves_its_own_message)
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
Test(api, batch_ops_check_the_key_against_the_table_schema)
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
Test(api, a_log_callback_takes_the_engines_lines_and_null_gives_them_back)
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
