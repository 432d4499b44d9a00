/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The queue scenarios without Criterion, so they can run under
 * ThreadSanitizer: meson test -C build-tsan queue_stress (see docs/testing.md).
 * SCREE_TEST_SCALE divides the counts. Prints "N passed, M failed".
 */
#include <stdio.h>

#include <scree/scree_errors.h>

#include "tests/reactor/helpers.h"
#include "tests/reactor/scenarios.h"

static unsigned passed, failed, skipped;

static void check(const char *name, bool ok, const char *detail)
{
        printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ", ok ? "" : detail);
        if (ok)
                passed++;
        else
                failed++;
}

static bool skip_rc(const char *name, int rc)
{
        if (rc == -ENOSYS || rc == -EPERM || rc == -SCREE_EUNSUPPORTED) {
                printf("SKIP %s: io_uring unavailable\n", name);
                skipped++;
                return true;
        }
        return false;
}

static bool seq_ok(const struct seq_params *p, const struct seq_result *r)
{
        for (unsigned a = 0; a < p->n_shards; a++)
                for (unsigned b = 0; b < p->n_shards; b++) {
                        bool sends = p->all_pairs || (a == 0 && b == 1);
                        uint64_t want = sends ? p->per_pair : 0;

                        if (r->received[a][b] != want || r->replies[a][b] != want)
                                return false;
                }
        return r->rc == 0 && r->bad_order == 0;
}

static void run_seq(const char *name, struct seq_params p)
{
        struct seq_result r;

        scenario_smp_seq(&p, &r);
        if (!skip_rc(name, r.rc))
                check(name, seq_ok(&p, &r), "lost, duplicated or reordered messages");
}

int main(void)
{
        struct alien_result ar;

        check("spsc_two_threads", scenario_spsc_transfer(test_scaled(4000000), 256) == 0,
              "items out of order");
        check("mpsc_four_producers", scenario_mpsc_transfer(4, (uint32_t)test_scaled(200000)) == 0,
              "nodes missing or out of order");
        run_seq("smp_two_shards", (struct seq_params){ .n_shards = 2,
                .per_pair = test_scaled(10000000), .window = 4096 });
        run_seq("smp_all_pairs_of_four", (struct seq_params){ .n_shards = 4, .all_pairs = true,
                .per_pair = test_scaled(200000), .window = 256, .idle_poll_ns = 20000 });
        run_seq("smp_full_ring", (struct seq_params){ .n_shards = 2, .queue_capacity = 8,
                .batch = 4, .per_pair = test_scaled(100000),
                .window = (unsigned)test_scaled(100000) });
        scenario_alien_flood(2, 4, test_scaled(1000000), &ar);
        if (!skip_rc("alien_flood", ar.rc))
                check("alien_flood", ar.bad_runs == 0 && ar.bad_completions == 0 &&
                                             ar.wrong_results == 0,
                      "requests not completed exactly once");
        printf("%u passed, %u failed, %u skipped\n", passed, failed, skipped);
        return failed ? 1 : 0;
}
