/* SPDX-License-Identifier: Apache-2.0 */
/* The metrics' pure parts (net/metrics.h): request checks, latency
 * buckets, and the text of a few snapshots. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/cmd.h"
#include "net/metrics.h"

TestSuite(metrics);

struct req_case {
        const char *text;
        int status;
};

/* Indices, not pointers, go through Criterion's parameters (as in
 * test_resp_parse.c): the worker may not share the runner's addresses. */
static const struct req_case cases[] = {
        { "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 200 },
        { "GET /metrics HTTP/1.0\r\n\r\n", 200 },
        { "GET /metrics?name=x HTTP/1.1\n\n", 200 },
        { "GET /metrics HTTP/1.1\r\nHost: x\r\n", 0 },
        { "GET /metr", 0 },
        { "", 0 },
        { "GET / HTTP/1.1\r\n\r\n", 404 },
        { "GET /metricsx HTTP/1.1\r\n\r\n", 404 },
        { "POST /metrics HTTP/1.1\r\n\r\n", 405 },
        { "get /metrics HTTP/1.1\r\n\r\n", 405 },
        { "GET /metrics HTTP/2.0\r\n\r\n", 400 },
        { "GET metrics HTTP/1.1\r\n\r\n", 400 },
        { "GET  HTTP/1.1\r\n\r\n", 400 },
        { "nonsense\r\n\r\n", 400 },
        { " /metrics HTTP/1.1\r\n\r\n", 400 },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

ParameterizedTestParameters(metrics, requests_get_their_status)
{
        static unsigned idx[N_CASES];

        for (unsigned i = 0; i < N_CASES; i++)
                idx[i] = i;
        return cr_make_param_array(unsigned, idx, N_CASES);
}

ParameterizedTest(unsigned *i, metrics, requests_get_their_status)
{
        const struct req_case *c = &cases[*i];

        cr_expect(eq(int, net_metrics_check_request(c->text, strlen(c->text)), c->status), "%s",
                  c->text);
}

Test(metrics, a_head_that_fills_the_buffer_without_ending_is_431)
{
        char *buf = malloc(NET_METRICS_MAX_REQUEST);

        memset(buf, 'a', NET_METRICS_MAX_REQUEST);
        memcpy(buf, "GET /metrics HTTP/1.1\r\nX: ", 26);
        cr_assert(eq(int, net_metrics_check_request(buf, NET_METRICS_MAX_REQUEST - 1), 0));
        cr_assert(eq(int, net_metrics_check_request(buf, NET_METRICS_MAX_REQUEST), 431));
        free(buf);
}

Test(metrics, buckets_are_log_spaced_from_10us_to_10s)
{
        cr_assert(eq(u64, net_metrics_bucket_ns(0), 10000));
        cr_assert(eq(u64, net_metrics_bucket_ns(1), 25000));
        cr_assert(eq(u64, net_metrics_bucket_ns(2), 50000));
        cr_assert(eq(u64, net_metrics_bucket_ns(NET_METRICS_BUCKETS - 1), 10000000000ull));
        for (unsigned i = 1; i < NET_METRICS_BUCKETS; i++)
                cr_expect(gt(u64, net_metrics_bucket_ns(i), net_metrics_bucket_ns(i - 1)));
}

static bool has(const char *text, const char *part)
{
        return strstr(text, part) != NULL;
}

static char *format(const struct net_metrics_snap *s, unsigned n)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        cr_assert(not(eq(ptr, f, NULL)));
        cr_assert(eq(int, net_metrics_format(f, s, n), 0));
        fclose(f);
        return text;
}

Test(metrics, the_text_has_commands_cumulative_buckets_and_engine_numbers_of_ready_shards)
{
        struct net_metrics_snap s[2];
        struct net_arg get = { .ptr = "get", .len = 3 };
        const struct net_cmd_def *def = net_cmd_find(&get);
        size_t slot;
        char *text;

        cr_assert(not(eq(ptr, (void *)def, NULL)));
        for (unsigned i = 0; i < 2; i++) {
                cr_assert(eq(int, net_metrics_snap_init(&s[i], 16), 0));
                s[i].shard = i;
        }
        s[0].engine_ready = true;
        s[0].eng.sstables = 7;
        s[0].loop.busy_ns = 1500000000;
        slot = net_cmd_stat_slot(def, &get, 1);
        net_cmd_metrics_observe(&s[0].cmd, slot, 5000, false);          /* first bucket */
        net_cmd_metrics_observe(&s[0].cmd, slot, 10000, true);  /* on the bound: first bucket */
        net_cmd_metrics_observe(&s[0].cmd, slot, 30000000000, false);   /* above 10 s */
        net_cmd_metrics_reject(&s[0].cmd, slot);
        text = format(s, 2);
        cr_expect(has(text, "scree_commands_total{shard=\"0\",cmd=\"get\"} 3\n"));
        cr_expect(has(text, "scree_command_failures_total{shard=\"0\",cmd=\"get\"} 1\n"));
        cr_expect(has(text, "scree_command_rejections_total{shard=\"0\",cmd=\"get\"} 1\n"));
        cr_expect(not(has(text, "scree_commands_total{shard=\"1\"")));
        cr_expect(has(text, "_bucket{shard=\"0\",cmd=\"get\",le=\"1e-05\"} 2\n"));
        cr_expect(has(text, "_bucket{shard=\"0\",cmd=\"get\",le=\"10\"} 2\n"));
        cr_expect(has(text, "_bucket{shard=\"0\",cmd=\"get\",le=\"+Inf\"} 3\n"));
        cr_expect(has(text, "_sum{shard=\"0\",cmd=\"get\"} 30.000015000\n"));
        cr_expect(has(text, "_count{shard=\"0\",cmd=\"get\"} 3\n"));
        cr_expect(not(has(text, "cmd=\"set\"")), "commands never called are left out");
        cr_expect(has(text, "scree_sstables{shard=\"0\"} 7\n"));
        cr_expect(not(has(text, "scree_sstables{shard=\"1\"}")), "engine not open");
        cr_expect(has(text, "scree_reactor_busy_seconds_total{shard=\"0\"} 1.5"));
        cr_expect(has(text, "# TYPE scree_sstables gauge\n"));
        cr_expect(has(text, "# TYPE scree_command_duration_seconds histogram\n"));
        free(text);
        for (unsigned i = 0; i < 2; i++)
                net_metrics_snap_fini(&s[i]);
}

/* Regression: net_server_free of a server whose shards never started
 * (io_uring blocked) passed a NULL per-shard metrics to fini: SIGSEGV. */
Test(metrics, fini_accepts_null_and_a_zeroed_struct)
{
        struct net_cmd_metrics zero = { 0 };

        net_cmd_metrics_fini(NULL);
        net_cmd_metrics_fini(&zero);
        cr_assert(eq(ptr, zero.cmd, NULL));
}

Test(metrics, bucket_of_agrees_with_the_bounds)
{
        cr_assert(eq(uint, net_metrics_bucket_of(0), 0));
        for (unsigned i = 0; i < NET_METRICS_BUCKETS; i++) {
                cr_expect(eq(uint, net_metrics_bucket_of(net_metrics_bucket_ns(i)), i));
                cr_expect(eq(uint, net_metrics_bucket_of(net_metrics_bucket_ns(i) + 1), i + 1));
        }
}

Test(metrics, subcommands_have_slots_of_their_own)
{
        struct net_arg client[2] = { { .ptr = "CLIENT", .len = 6 }, { .ptr = "List", .len = 4 } };
        struct net_arg bogus = { .ptr = "bogus", .len = 5 };
        const struct net_cmd_def *def = net_cmd_find(&client[0]);
        size_t parent = net_cmd_stat_slot(def, client, 1), sub = net_cmd_stat_slot(def, client, 2);
        char name[64];

        cr_assert(lt(sz, parent, net_cmd_stat_slots()));
        cr_assert(lt(sz, sub, net_cmd_stat_slots()));
        cr_expect(eq(str, (char *)net_cmd_stat_name(parent, name, sizeof(name)), "client"));
        cr_expect(eq(str, (char *)net_cmd_stat_name(sub, name, sizeof(name)), "client|list"));
        client[1] = bogus;
        cr_expect(eq(sz, net_cmd_stat_slot(def, client, 2), parent), "an unknown one: the parent's");
        for (size_t i = 0; i < net_cmd_stat_slots(); i++)
                for (size_t j = i + 1; j < net_cmd_stat_slots(); j++) {
                        char a[64], b[64];

                        cr_expect(strcmp(net_cmd_stat_name(i, a, sizeof(a)),
                                         net_cmd_stat_name(j, b, sizeof(b))) != 0, "%s", a);
                }
}

Test(metrics, reset_zeroes_every_slot)
{
        struct net_cmd_metrics m;

        cr_assert(eq(int, net_cmd_metrics_init(&m), 0));
        net_cmd_metrics_observe(&m, 0, 1000, true);
        net_cmd_metrics_reject(&m, 1);
        net_cmd_metrics_observe(&m, m.n_slots, 1000, false);    /* out of range: ignored */
        cr_expect(eq(u64, m.cmd[0].calls, 1));
        cr_expect(eq(u64, m.cmd[0].failed, 1));
        cr_expect(eq(u64, m.cmd[1].rejected, 1));
        net_cmd_metrics_reset(&m);
        cr_expect(eq(u64, m.cmd[0].calls + m.cmd[0].failed + m.cmd[1].rejected, 0));
        net_cmd_metrics_fini(&m);
}
