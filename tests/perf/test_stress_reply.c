/* SPDX-License-Identifier: Apache-2.0 */
/* scree-stress's reply scanner (perf/scree_stress_reply.h): a stream of
 * replies of every type, cut into fragments of every size, must come out
 * as the same replies in order; bytes that are not RESP must be refused. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <string.h>

#include "perf/scree_stress_reply.h"

/* One reply of the stream and what the scanner must say of it. */
struct want {
        const char *bytes;
        bool error, nil;
        const char *err;        /* simple error text, or NULL */
};

static const struct want stream[] = {
        { "+OK\r\n", false, false, NULL },
        { "$-1\r\n", false, true, NULL },
        { "$5\r\nhello\r\n", false, false, NULL },
        { "$0\r\n\r\n", false, false, NULL },
        { "-ERR wrong type\r\n", true, false, "ERR wrong type" },
        { ":12\r\n", false, false, NULL },
        { "*2\r\n$1\r\na\r\n$-1\r\n", false, false, NULL },
        { "*0\r\n", false, false, NULL },
        { "*-1\r\n", false, true, NULL },
        { "*2\r\n*1\r\n:1\r\n+x\r\n", false, false, NULL },
        { "*1\r\n-ERR inner\r\n", false, false, NULL },   /* only top-level errors count */
        { "_\r\n", false, true, NULL },
        { ",3.14\r\n", false, false, NULL },
        { "#t\r\n", false, false, NULL },
        { "(123456789012345678901234567890\r\n", false, false, NULL },
        { "%1\r\n+k\r\n$2\r\nvv\r\n", false, false, NULL },
        { "~2\r\n:1\r\n:2\r\n", false, false, NULL },
        { "|1\r\n+key\r\n+ann\r\n+real\r\n", false, false, NULL },     /* attribute, then the reply */
        { "=7\r\ntxt:abc\r\n", false, false, NULL },
        { "!5\r\noops!\r\n", true, false, NULL },
        { "$130\r\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
          "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\r\n", false, false, NULL },
};
#define N_STREAM (sizeof(stream) / sizeof(stream[0]))

/* Feeds the whole stream in fragments of step bytes, keeping the unused
 * bytes as a connection's input buffer does; checks every reply. */
static void feed(size_t step)
{
        char all[2048], buf[2048];
        size_t total = 0, have = 0, fed = 0, got = 0;
        struct stress_reply_scanner s;

        for (size_t i = 0; i < N_STREAM; i++) {
                memcpy(all + total, stream[i].bytes, strlen(stream[i].bytes));
                total += strlen(stream[i].bytes);
        }
        stress_reply_init(&s);
        while (fed < total || have > 0) {
                size_t take = total - fed < step ? total - fed : step, off = 0;

                memcpy(buf + have, all + fed, take);
                have += take;
                fed += take;
                for (;;) {
                        struct stress_reply rp;
                        bool done;
                        ssize_t used = stress_reply_scan(&s, buf + off, have - off, &done, &rp);

                        cr_assert_geq(used, 0, "step %zu, reply %zu", step, got);
                        off += (size_t)used;
                        if (!done)
                                break;
                        cr_assert_lt(got, N_STREAM);
                        cr_expect_eq(rp.is_error, stream[got].error, "step %zu reply %zu", step, got);
                        cr_expect_eq(rp.is_nil, stream[got].nil, "step %zu reply %zu", step, got);
                        if (stream[got].err)
                                cr_expect(rp.err && rp.err_len == strlen(stream[got].err) &&
                                          memcmp(rp.err, stream[got].err, rp.err_len) == 0,
                                          "step %zu reply %zu", step, got);
                        got++;
                }
                memmove(buf, buf + off, have - off);
                have -= off;
                if (fed == total && off == 0)
                        break;
        }
        cr_assert_eq(got, N_STREAM, "step %zu", step);
        cr_assert_eq(have, 0, "step %zu: bytes left over", step);
}

Test(stress_reply, every_fragment_size_gives_the_same_replies)
{
        for (size_t step = 1; step <= 200; step++)
                feed(step);
}

static ssize_t scan_all(const char *bytes, size_t len, unsigned *ret_replies)
{
        struct stress_reply_scanner s;
        size_t off = 0;

        stress_reply_init(&s);
        *ret_replies = 0;
        while (off < len) {
                struct stress_reply rp;
                bool done;
                ssize_t used = stress_reply_scan(&s, bytes + off, len - off, &done, &rp);

                if (used < 0)
                        return used;
                off += (size_t)used;
                *ret_replies += done;
                if (!done)
                        break;
        }
        return (ssize_t)off;
}

static const char *const bad_cases[] = {
        "?what\r\n", "$abc\r\n", "$-2\r\n", "*x\r\n", "+OK\n", "\r\n", ":1\r\n$\r\n",
        "*9999999999999999999\r\n",
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",   /* depth 9 */
};
#define N_BAD (sizeof(bad_cases) / sizeof(bad_cases[0]))

/* Criterion copies the parameters between processes: pass indices. */
ParameterizedTestParameters(stress_reply, refuses_what_is_not_resp)
{
        static unsigned idx[N_BAD];

        for (unsigned i = 0; i < N_BAD; i++)
                idx[i] = i;
        return cr_make_param_array(unsigned, idx, N_BAD);
}

ParameterizedTest(unsigned *i, stress_reply, refuses_what_is_not_resp)
{
        const char *b = bad_cases[*i];
        unsigned n;

        cr_assert_eq(scan_all(b, strlen(b), &n), -EPROTO, "%s", b);
}

Test(stress_reply, a_line_over_the_limit_is_refused_before_its_end)
{
        size_t len = STRESS_REPLY_MAX_LINE + 2;
        char *p = malloc(len);
        unsigned n;

        cr_assert_not_null(p);
        memset(p, 'e', len);
        p[0] = '-';
        cr_assert_eq(scan_all(p, len, &n), -EPROTO);
        cr_assert_eq(scan_all(p, STRESS_REPLY_MAX_LINE, &n), 0, "not yet too long: wait for more");
        free(p);
}

Test(stress_reply, eight_levels_of_nesting_are_fine)
{
        const char *r = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";
        unsigned n;

        cr_assert_eq(scan_all(r, strlen(r), &n), (ssize_t)strlen(r));
        cr_assert_eq(n, 1);
}

Test(stress_reply, a_partial_line_is_left_for_the_next_call)
{
        struct stress_reply_scanner s;
        struct stress_reply rp;
        bool done;

        stress_reply_init(&s);
        cr_assert_eq(stress_reply_scan(&s, "$5\r\nhel", 7, &done, &rp), 7);
        cr_assert_not(done);
        cr_assert_eq(stress_reply_scan(&s, "lo\r\n+O", 6, &done, &rp), 4);
        cr_assert(done);
        cr_assert_eq(stress_reply_scan(&s, "+O", 2, &done, &rp), 0, "the line is not whole yet");
        cr_assert_not(done);
}
