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
        char *text;

        cr_assert(not(eq(ptr, (void *)def, NULL)));
        for (unsigned i = 0; i < 2; i++) {
                cr_assert(eq(int, net_metrics_snap_init(&s[i]), 0));
                s[i].shard = i;
        }
        s[0].engine_ready = true;
        s[0].eng.sstables = 7;
        s[0].loop.busy_ns = 1500000000;
        net_cmd_metrics_observe(&s[0].cmd, def, 5000);          /* first bucket */
        net_cmd_metrics_observe(&s[0].cmd, def, 10000);         /* on the bound: first bucket */
        net_cmd_metrics_observe(&s[0].cmd, def, 30000000000);   /* above 10 s */
        text = format(s, 2);
        cr_expect(has(text, "scree_commands_total{shard=\"0\",cmd=\"get\"} 3\n"));
        cr_expect(not(has(text, "scree_commands_total{shard=\"1\"")));
        cr_expect(has(text, "_bucket{shard=\"0\",le=\"1e-05\"} 2\n"));
        cr_expect(has(text, "_bucket{shard=\"0\",le=\"10\"} 2\n"));
        cr_expect(has(text, "_bucket{shard=\"0\",le=\"+Inf\"} 3\n"));
        cr_expect(has(text, "_sum{shard=\"0\"} 30.000015000\n"));
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
        cr_assert(eq(ptr, zero.calls, NULL));
}
