/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The library's range reads, range deletes and asynchronous calls
 * (include/scree/scree.h) through libscree.so: pages and cursors over
 * tablets on several shards, forward and reverse, ranges within a hashed
 * table's partition, iterators, and every operation through a completion
 * queue driven by an epoll loop on its descriptor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <scree/scree.h>

#include "tests/tmpdir.h"

static char dir[256];
static scree_db *db;

static void setup(void)
{
        scree_options *o = scree_options_new();
        int r;

        tmpdir_make(dir, sizeof(dir), "api-async");
        scree_options_set(o, "smp", "2");
        scree_options_set(o, "memory", "64mb");
        scree_options_set(o, "pin", "no");
        r = scree_open(dir, o, &db);
        scree_options_free(o);
        cr_assert(eq(int, r, 0), "open: %s", scree_last_error());
}

static void teardown(void)
{
        cr_expect(eq(int, scree_close(db), 0));
        tmpdir_remove(dir);
}

static size_t key_u64(uint8_t *buf, uint64_t n)
{
        scree_part p = { .type = SCREE_U64, .v.u64 = n };
        size_t len;

        cr_assert(eq(int, scree_key_encode(&p, 1, buf, 16, &len), 0));
        return len;
}

static uint64_t u64_of(const void *key, size_t len)
{
        scree_part p;
        uint8_t scratch[32];

        cr_assert(eq(int, scree_key_decode(key, len, &p, 1, scratch, sizeof(scratch)), 1));
        return p.v.u64;
}

/* An ordered table of u64 keys 0, 3, 6, .. 2997 in 8 tablets over both shards. */
static scree_table *ordered_rows(void)
{
        static const scree_type parts[] = { SCREE_U64 };
        scree_table_spec spec = { .path = "/o", .n_parts = 1, .parts = parts, .tablets = 8 };
        scree_table *t;
        scree_batch *b = scree_batch_new();
        uint8_t k[16];

        cr_assert(eq(int, scree_table_create(db, &spec), 0), "%s", scree_last_error());
        cr_assert(eq(int, scree_table_open(db, "/o", &t), 0));
        for (uint64_t i = 0; i < 1000; i++) {
                char v[32];
                size_t vl = (size_t)snprintf(v, sizeof(v), "v%llu", (unsigned long long)i * 3);

                cr_assert(eq(int, scree_batch_put(b, t, k, key_u64(k, i * 3), v, vl, 0), 0));
        }
        cr_assert(eq(int, scree_write(db, b), 0), "%s", scree_last_error());
        scree_batch_free(b);
        return t;
}

/* Reads range r in pages of page rows; returns the keys in order in out. */
static size_t walk(scree_table *t, const scree_range *r, uint32_t page, uint64_t *out, size_t cap)
{
        uint8_t cur[64];
        size_t cur_len = 0, n = 0;
        bool more = true;

        while (more) {
                scree_rows *rows = NULL;
                const void *c;

                cr_assert(eq(int, scree_scan(t, r, cur_len ? cur : NULL, cur_len, page, &rows), 0),
                          "%s", scree_last_error());
                cr_assert(le(sz, scree_rows_count(rows), page));
                for (size_t i = 0; i < scree_rows_count(rows); i++) {
                        size_t kl, vl;
                        const void *key = scree_rows_key(rows, i, &kl);
                        const char *v = scree_rows_value(rows, i, &vl);
                        char want[32];

                        cr_assert(lt(sz, n, cap));
                        out[n] = u64_of(key, kl);
                        snprintf(want, sizeof(want), "v%llu", (unsigned long long)out[n]);
                        cr_assert(eq(sz, vl, strlen(want)));
                        cr_assert(eq(int, memcmp(v, want, vl), 0));
                        n++;
                }
                c = scree_rows_cursor(rows, &cur_len);
                more = c != NULL;
                if (more) {
                        cr_assert(le(sz, cur_len, sizeof(cur)));
                        memcpy(cur, c, cur_len);
                }
                scree_rows_free(rows);
        }
        return n;
}

TestSuite(api_range, .init = setup, .fini = teardown, .timeout = 120);

Test(api_range, pages_walk_every_tablet_in_order_both_ways)
{
        scree_table *t = ordered_rows();
        static uint64_t got[1100];
        uint8_t lo[16], hi[16];
        scree_range all = { 0 }, rev = { .reverse = true };
        scree_range part = { .start = lo, .start_len = key_u64(lo, 100), .end = hi,
                             .end_len = key_u64(hi, 500) };
        size_t n;

        n = walk(t, &all, 37, got, 1100);
        cr_assert(eq(sz, n, 1000));
        for (size_t i = 0; i < n; i++)
                cr_assert(eq(u64, got[i], i * 3));
        n = walk(t, &rev, 41, got, 1100);
        cr_assert(eq(sz, n, 1000));
        for (size_t i = 0; i < n; i++)
                cr_assert(eq(u64, got[i], (999 - i) * 3));
        n = walk(t, &part, 10, got, 1100);
        cr_expect(eq(sz, n, 133));      /* 102 .. 498 */
        cr_expect(eq(u64, got[0], 102));
        cr_expect(eq(u64, got[n - 1], 498));
        part.reverse = true;
        n = walk(t, &part, 1000, got, 1100);
        cr_expect(eq(sz, n, 133));
        cr_expect(eq(u64, got[0], 498));
        scree_table_close(t);
}

Test(api_range, iterators_and_range_deletes)
{
        scree_table *t = ordered_rows();
        uint8_t lo[16], hi[16];
        scree_range all = { 0 };
        scree_range part = { .start = lo, .start_len = key_u64(lo, 300), .end = hi,
                             .end_len = key_u64(hi, 600) };
        scree_iter *it;
        uint64_t deleted = 0, prev = 0, n = 0;
        int r;

        cr_assert(eq(int, scree_delete_range(t, &part, &deleted), 0), "%s", scree_last_error());
        cr_expect(eq(u64, deleted, 100));       /* 300 .. 597 */
        cr_assert(eq(int, scree_iter_new(t, &all, &it), 0));
        while ((r = scree_iter_next(it)) == 1) {
                size_t kl = 0, vl;
                const void *key = scree_iter_key(it, &kl);
                uint64_t k = u64_of(key, kl);

                cr_assert(not(eq(ptr, (void *)scree_iter_value(it, &vl), NULL)));
                cr_assert(n == 0 || k > prev);
                cr_assert(k < 300 || k >= 600, "deleted key %llu is back", (unsigned long long)k);
                prev = k;
                n++;
        }
        cr_expect(eq(int, r, 0));
        cr_expect(eq(u64, n, 900));
        scree_iter_free(it);
        scree_table_close(t);
}

Test(api_range, a_hashed_table_reads_one_partition_in_order)
{
        static const scree_type parts[] = { SCREE_BYTES, SCREE_U64 };
        scree_table_spec spec = { .path = "/h", .n_parts = 2, .parts = parts, .hash_parts = 1,
                                  .tablets = 8 };
        scree_table *t;
        uint8_t a[64], b[64];
        size_t al, bl;
        scree_range r;
        scree_rows *rows;

        cr_assert(eq(int, scree_table_create(db, &spec), 0));
        cr_assert(eq(int, scree_table_open(db, "/h", &t), 0));
        for (int u = 0; u < 20; u++)
                for (uint64_t ts = 0; ts < 50; ts++) {
                        char who[8];
                        scree_part p[2] = { { .type = SCREE_BYTES, .v.bytes = { who, 0 } },
                                            { .type = SCREE_U64, .v.u64 = ts } };

                        p[0].v.bytes.len = (size_t)snprintf(who, sizeof(who), "u%d", u);
                        cr_assert(eq(int, scree_key_encode(p, 2, a, sizeof(a), &al), 0));
                        cr_assert(eq(int, scree_put(t, a, al, "x", 1, 0), 0));
                }
        {
                scree_part p[2] = { { .type = SCREE_BYTES, .v.bytes = { "u7", 2 } },
                                    { .type = SCREE_U64, .v.u64 = 10 } };

                scree_key_encode(p, 2, a, sizeof(a), &al);
                p[1].v.u64 = 20;
                scree_key_encode(p, 2, b, sizeof(b), &bl);
        }
        r = (scree_range){ .start = a, .start_len = al, .end = b, .end_len = bl };
        cr_assert(eq(int, scree_scan(t, &r, NULL, 0, 100, &rows), 0), "%s", scree_last_error());
        cr_expect(eq(sz, scree_rows_count(rows), 10));
        cr_expect(eq(ptr, (void *)scree_rows_cursor(rows, NULL), NULL));
        scree_rows_free(rows);
        r.end = NULL;
        cr_expect(eq(int, scree_scan(t, &r, NULL, 0, 100, &rows), -EINVAL));
        r = (scree_range){ 0 };
        cr_assert(eq(int, scree_scan(t, &r, NULL, 0, 2000, &rows), 0));
        cr_expect(eq(sz, scree_rows_count(rows), 1000));
        scree_rows_free(rows);
        {
                scree_part p[2] = { { .type = SCREE_BYTES, .v.bytes = { "u8", 2 } },
                                    { .type = SCREE_U64, .v.u64 = 20 } };

                scree_key_encode(p, 2, b, sizeof(b), &bl);
        }
        r = (scree_range){ .start = a, .start_len = al, .end = b, .end_len = bl };
        cr_expect(eq(int, scree_scan(t, &r, NULL, 0, 100, &rows), -EINVAL));
        cr_expect(strstr(scree_last_error(), "same hash parts") != NULL, "%s", scree_last_error());
        scree_table_close(t);
}

/* ---- asynchronous ---- */

/* Waits on q's descriptor in an epoll set and polls until want
 * completions arrived; each goes to out[tag index]. */
static void collect(scree_cq *q, scree_completion *out, size_t want)
{
        int ep = epoll_create1(0);
        struct epoll_event ev = { .events = EPOLLIN };
        size_t got = 0;

        cr_assert(ge(int, ep, 0));
        cr_assert(eq(int, epoll_ctl(ep, EPOLL_CTL_ADD, scree_cq_fd(q), &ev), 0));
        while (got < want) {
                scree_completion c[16];
                int n = scree_cq_poll(q, c, 16);

                for (int i = 0; i < n; i++)
                        out[(uintptr_t)c[i].tag] = c[i];
                got += (size_t)n;
                if (n == 0)
                        cr_assert(eq(int, epoll_wait(ep, &ev, 1, 60000), 1),
                                  "no completion within 60 s (%zu of %zu)", got, want);
        }
        close(ep);
}

static int add_one(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        static char buf[8];

        buf[0] = cur && len == 1 ? (char)(((const char *)cur)[0] + 1) : 'a';
        out->value = buf;
        out->value_len = 1;
        return SCREE_UPDATE_PUT;
}

Test(api_range, every_operation_completes_through_a_queue)
{
        scree_table *t = ordered_rows();
        static scree_completion c[2000];
        scree_cq *q;
        scree_batch *b = scree_batch_new();
        uint8_t k[16], lo[16];
        scree_range r = { .start = lo, .start_len = key_u64(lo, 3000) };

        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        for (uint64_t i = 0; i < 1000; i++)
                cr_assert(eq(int, scree_put_async(q, t, k, key_u64(k, 3000 + i), "p", 1, 0,
                                                  (void *)(uintptr_t)i), 0));
        cr_expect(eq(u64, scree_cq_pending(q), 1000));
        collect(q, c, 1000);
        for (size_t i = 0; i < 1000; i++)
                cr_assert(eq(int, c[i].res, 0));
        cr_expect(eq(u64, scree_cq_pending(q), 0));

        for (uint64_t i = 0; i < 1000; i++)
                cr_assert(eq(int, scree_get_async(q, t, k, key_u64(k, 3000 + i), (void *)(uintptr_t)i), 0));
        cr_assert(eq(int, scree_get_async(q, t, k, key_u64(k, 1), (void *)(uintptr_t)1000), 0));
        cr_assert(eq(int, scree_update_async(q, t, k, key_u64(k, 5000), add_one, NULL,
                                             (void *)(uintptr_t)1001), 0));
        for (uint64_t i = 0; i < 100; i++)
                scree_batch_put(b, t, k, key_u64(k, 10000 + i * 1000), "b", 1, 0);
        cr_assert(eq(int, scree_write_async(q, b, (void *)(uintptr_t)1002), 0));
        scree_batch_free(b);
        cr_assert(eq(int, scree_scan_async(q, t, &r, NULL, 0, 2000, (void *)(uintptr_t)1003), 0));
        cr_assert(eq(int, scree_del_async(q, t, k, key_u64(k, 0), (void *)(uintptr_t)1004), 0));
        collect(q, c, 1005);
        for (size_t i = 0; i < 1000; i++) {
                cr_assert(eq(int, c[i].res, 0));
                cr_assert(eq(int, c[i].op, SCREE_OP_GET));
                cr_assert(eq(sz, scree_value_len(c[i].value), 1));
                scree_value_free(c[i].value);
        }
        cr_expect(eq(int, c[1000].res, -SCREE_ENOTFOUND));
        cr_expect(eq(ptr, c[1000].value, NULL));
        cr_expect(eq(int, c[1001].res, SCREE_UPDATE_PUT));
        cr_expect(eq(int, c[1002].res, 0));
        cr_expect(eq(int, c[1003].res, 0));
        cr_assert(not(eq(ptr, c[1003].rows, NULL)));
        cr_expect(eq(sz, scree_rows_count(c[1003].rows), 1000 + 1 + 100));
        scree_rows_free(c[1003].rows);
        cr_expect(eq(int, c[1004].res, 0));

        cr_assert(eq(int, scree_delete_range_async(q, t, &r, (void *)(uintptr_t)0), 0));
        collect(q, c, 1);
        cr_expect(eq(int, c[0].res, 0));
        cr_expect(eq(u64, c[0].count, 1101));
        /* Nothing in flight: waiting returns at once. */
        cr_expect(eq(int, scree_cq_wait(q, c, 1, -1), 0));
        scree_cq_free(q);
        scree_table_close(t);
}

Test(api_range, a_queue_freed_with_operations_in_flight_drops_their_results)
{
        scree_table *t = ordered_rows();
        scree_cq *q;
        uint8_t k[16];

        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        for (uint64_t i = 0; i < 500; i++)
                cr_assert(eq(int, scree_get_async(q, t, k, key_u64(k, i * 3), NULL), 0));
        cr_expect(eq(int, scree_get_async(q, t, "bad", 3, NULL), -EINVAL));
        scree_cq_free(q);       /* waits for the 500 and frees their values */
        scree_table_close(t);
}

Test(api_range, catalog_changes_and_maintenance_complete_through_a_queue)
{
        static const scree_type parts[] = { SCREE_U64 };
        scree_table_spec spec = { .path = "/q/t", .n_parts = 1, .parts = parts, .tablets = 4 };
        scree_completion c[8];
        scree_cq *q;
        scree_table *t;
        uint8_t k[16];

        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        cr_assert(eq(int, scree_mkdir_async(q, "/q", (void *)(uintptr_t)0), 0));
        collect(q, c, 1);
        cr_expect(eq(int, c[0].res, 0));
        cr_expect(eq(int, c[0].op, SCREE_OP_MKDIR));
        cr_assert(eq(int, scree_table_create_async(q, &spec, (void *)(uintptr_t)0), 0));
        spec.path = "/nodir/t";
        cr_assert(eq(int, scree_table_create_async(q, &spec, (void *)(uintptr_t)1), 0));
        collect(q, c, 2);
        cr_expect(eq(int, c[0].res, 0));
        cr_expect(eq(int, c[1].res, -SCREE_ENOTFOUND));
        cr_expect(strstr(c[1].message, "nodir") != NULL, "%s", c[1].message);
        cr_assert(eq(int, scree_table_open(db, "/q/t", &t), 0));
        for (uint64_t i = 0; i < 100; i++)
                cr_assert(eq(int, scree_put(t, k, key_u64(k, i), "v", 1, 0), 0));
        cr_assert(eq(int, scree_flush_async(q, (void *)(uintptr_t)0), 0));
        cr_assert(eq(int, scree_compact_async(q, (void *)(uintptr_t)1), 0));
        collect(q, c, 2);
        cr_expect(eq(int, c[0].res, 0));
        cr_expect(eq(int, c[0].op, SCREE_OP_FLUSH));
        cr_expect(eq(int, c[1].res, 0));
        cr_expect(eq(int, c[1].op, SCREE_OP_COMPACT));
        scree_table_close(t);
        cr_assert(eq(int, scree_table_drop_async(q, "/q/t", (void *)(uintptr_t)0), 0));
        cr_assert(eq(int, scree_rmdir_async(q, "/q", (void *)(uintptr_t)1), 0));
        collect(q, c, 2);
        cr_expect(eq(int, c[0].res, 0));
        cr_expect(eq(int, c[1].res, 0));
        cr_expect(eq(int, scree_table_open(db, "/q/t", &t), -SCREE_ENOTFOUND));
        scree_cq_free(q);
}

/* Regression: a new queue's descriptor must wake an epoll loop that never
 * polled it yet. */
Test(api_range, a_new_queue_wakes_its_loop_before_any_poll)
{
        scree_table *t = ordered_rows();
        int ep = epoll_create1(0);
        struct epoll_event ev = { .events = EPOLLIN };
        scree_completion c[4];
        scree_cq *q;
        uint8_t k[16];

        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        cr_assert(eq(int, epoll_ctl(ep, EPOLL_CTL_ADD, scree_cq_fd(q), &ev), 0));
        cr_assert(eq(int, scree_get_async(q, t, k, key_u64(k, 3), NULL), 0));
        cr_expect(eq(int, epoll_wait(ep, &ev, 1, 60000), 1));
        cr_expect(eq(int, scree_cq_poll(q, c, 4), 1));
        scree_value_free(c[0].value);
        close(ep);
        scree_cq_free(q);
        scree_table_close(t);
}

static bool fd_readable(int fd)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };

        return poll(&p, 1, 0) == 1;
}

/* Regression: queues made, used and freed in a tight loop (a shard's
 * wake-up racing the free: ASan's use-after-free), and a descriptor that
 * never stays readable once everything was handed out. */
Test(api_range, queues_come_and_go_and_their_descriptor_clears)
{
        scree_table *t = ordered_rows();
        scree_completion c[4];
        uint8_t k[16];

        for (int round = 0; round < 2000; round++) {
                scree_cq *q;
                int tries = 0, n = 0;

                cr_assert(eq(int, scree_cq_new(db, &q), 0));
                if (round & 1)
                        cr_assert(eq(int, scree_cq_poll(q, c, 4), 0));
                cr_assert(eq(int, scree_put_async(q, t, k, key_u64(k, 7), "x", 1, 0, NULL), 0));
                while (n < 1)
                        n += scree_cq_wait(q, c, 4, 60000);
                /* Every event written is read by a later poll. */
                while (fd_readable(scree_cq_fd(q)) && tries++ < 10000)
                        cr_assert(eq(int, scree_cq_poll(q, c, 4), 0));
                cr_assert(lt(int, tries, 10000), "the descriptor stays readable (round %d)", round);
                scree_cq_free(q);
        }
        scree_table_close(t);
}

Test(api_range, asynchronous_calls_refuse_bad_arguments)
{
        scree_table *t = ordered_rows();
        scree_completion c[1];
        scree_cq *q;
        uint8_t k[16];
        size_t kl = key_u64(k, 1);

        cr_assert(eq(int, scree_cq_new(db, &q), 0));
        cr_expect(eq(int, scree_put_async(q, t, k, kl, NULL, 5, 0, NULL), -EINVAL));
        cr_expect(eq(int, scree_put_async(q, NULL, k, kl, "v", 1, 0, NULL), -EINVAL));
        cr_expect(eq(int, scree_get_async(NULL, t, k, kl, NULL), -EINVAL));
        cr_expect(eq(int, scree_del_async(q, t, NULL, 0, NULL), -EINVAL));
        cr_expect(eq(int, scree_update_async(q, t, k, kl, NULL, NULL, NULL), -EINVAL));
        cr_expect(eq(int, scree_cq_poll(q, c, 0), -EINVAL));
        cr_expect(eq(int, scree_cq_wait(q, c, 0, 0), -EINVAL));
        cr_expect(eq(int, scree_put(NULL, k, kl, "v", 1, 0), -EINVAL));
        cr_expect(eq(u64, scree_cq_pending(q), 0));
        scree_cq_free(q);
        scree_table_close(t);
}
