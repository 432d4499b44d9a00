/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-proxy's pure parts: Cache-Control parsing, HTTP dates, freshness
 * and what is never stored (cachectl.h), entity-tag matching, the stored
 * form and the key ranges PURGE deletes (object.h), and the command line
 * (config.h).
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include "proxy/cachectl.h"
#include "proxy/config.h"
#include "proxy/object.h"

static struct px_cc cc_of(const char *v)
{
        struct px_cc cc = { 0 };

        px_cc_parse(&cc, v, strlen(v));
        return cc;
}

TestSuite(proxy_cachectl);

Test(proxy_cachectl, directives_in_any_case_with_quotes_and_blanks)
{
        struct px_cc cc = cc_of(" Max-Age=60 , s-maxage=\"5\",NO-STORE, private=\"Set-Cookie\"");

        cr_expect(eq(u32, cc.flags, PX_CC_MAX_AGE | PX_CC_S_MAXAGE | PX_CC_NO_STORE |
                                    PX_CC_PRIVATE));
        cr_expect(eq(i64, cc.max_age_s, 60));
        cr_expect(eq(i64, cc.s_maxage_s, 5));
        cc = cc_of("max-age=abc, no-cache=\"x, y\", public");
        cr_expect(eq(i64, cc.max_age_s, 0));    /* not a number: stale */
        cr_expect(eq(u32, cc.flags, PX_CC_MAX_AGE | PX_CC_NO_CACHE));
        cc = cc_of("max-age=99999999999999999999");
        cr_expect(eq(i64, cc.max_age_s, PX_CC_MAX_SECONDS));
        cc = cc_of("max-age=100, max-age=10");
        cr_expect(eq(i64, cc.max_age_s, 10));   /* the smallest */
}

struct date_case {
        char text[40];          /* in the struct: Criterion copies parameters */
        long long want;         /* -1: refused */
};

ParameterizedTestParameters(proxy_cachectl, http_dates)
{
        static struct date_case cases[] = {
                { "Sun, 06 Nov 1994 08:49:37 GMT", 784111777 },
                { "Sunday, 06-Nov-94 08:49:37 GMT", 784111777 },
                { "Sun Nov  6 08:49:37 1994", 784111777 },
                { "Thu, 01 Jan 1970 00:00:00 GMT", 0 },
                { "Tue, 29 Feb 2028 23:59:59 GMT", 1835481599 },
                { "0", -1 },
                { "", -1 },
                { "Sun, 06 Nov 1994 25:49:37 GMT", -1 },
                { "Sun, 06 Nop 1994 08:49:37 GMT", -1 },
                { "yesterday", -1 },
        };

        return cr_make_param_array(struct date_case, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct date_case *c, proxy_cachectl, http_dates)
{
        int64_t got = -1;
        int r = px_http_date_parse(c->text, strlen(c->text), &got);

        if (c->want < 0)
                cr_expect(eq(int, r, -EINVAL), "%s parsed as %lld", c->text, (long long)got);
        else
                cr_expect(eq(i64, got, c->want), "%s", c->text);
}

static uint64_t ttl(const struct px_resp_facts *f, uint64_t dflt, const char **why)
{
        return px_fresh_ttl_ms(f, 1000000, dflt, why);
}

Test(proxy_cachectl, freshness_order_and_refusals)
{
        struct px_resp_facts f = { .status = 200 };
        const char *why;

        cr_expect(eq(u64, ttl(&f, 30, &why), 30000));           /* the default */
        cr_expect(eq(u64, ttl(&f, 0, &why), 0));
        cr_expect(eq(str, (char *)why, "stale"));
        f.has_expires = f.expires_ok = f.has_date = true;
        f.date_s = 500;
        f.expires_s = 520;
        cr_expect(eq(u64, ttl(&f, 30, &why), 20000));           /* Expires - Date */
        f.has_date = false;
        f.expires_s = 1000010;
        cr_expect(eq(u64, ttl(&f, 30, &why), 10000));           /* Expires - now */
        f.expires_ok = false;
        cr_expect(eq(u64, ttl(&f, 30, &why), 0));               /* a bad Expires: stale */
        f.cc = cc_of("max-age=100");
        cr_expect(eq(u64, ttl(&f, 30, &why), 100000));          /* max-age over Expires */
        f.cc = cc_of("max-age=100, s-maxage=7");
        cr_expect(eq(u64, ttl(&f, 30, &why), 7000));            /* s-maxage wins */
        f.age_s = 5;
        cr_expect(eq(u64, ttl(&f, 30, &why), 2000));            /* less the origin's Age */
        f.age_s = 9;
        cr_expect(eq(u64, ttl(&f, 30, &why), 0));
        f.age_s = 0;
        f.set_cookie = true;
        cr_expect(eq(u64, ttl(&f, 30, &why), 0));
        cr_expect(eq(str, (char *)why, "set-cookie"));
        f.set_cookie = false;
        f.status = 302;
        cr_expect(eq(u64, ttl(&f, 30, &why), 0));
        cr_expect(eq(str, (char *)why, "status"));
}

Test(proxy_cachectl, never_stored)
{
        const char *const refused[] = { "no-store", "private", "no-cache", "private=\"a\"" };

        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                struct px_resp_facts f = { .status = 200, .cc = cc_of(refused[i]) };
                const char *why;

                cr_expect(eq(u64, ttl(&f, 30, &why), 0), "%s", refused[i]);
        }
        for (unsigned s = 100; s < 600; s++) {
                bool want = s == 200 || s == 301 || s == 404;

                cr_expect(eq(int, px_status_is_cacheable(s), want), "%u", s);
        }
}

Test(proxy_cachectl, entity_tags_compare_weakly)
{
        cr_expect(px_etag_match("\"a\"", 3, "\"a\"", 3));
        cr_expect(px_etag_match("W/\"a\"", 5, "\"a\"", 3));
        cr_expect(px_etag_match("\"x\", W/\"a\"", 11, "W/\"a\"", 5));
        cr_expect(px_etag_match("*", 1, "\"z\"", 3));
        cr_expect(not(px_etag_match("\"ab\"", 4, "\"a\"", 3)));
        cr_expect(not(px_etag_match("", 0, "\"a\"", 3)));
}

TestSuite(proxy_object);

Test(proxy_object, stored_form_round_trips_and_refuses_damage)
{
        char buf[PX_OBJ_HDR_BYTES + 64];
        const char head[] = "HTTP/1.1 200 OK\r\nETag: \"v\"\r\nX-A:  b \r\n";
        size_t hl = sizeof(head) - 1;
        struct px_obj_view v;
        size_t n;

        px_obj_hdr_encode(buf, 301, (uint32_t)hl, 7, 1234567, 5);
        memcpy(buf + PX_OBJ_HDR_BYTES, head, hl);
        memcpy(buf + PX_OBJ_HDR_BYTES + hl, "hello", 5);
        n = PX_OBJ_HDR_BYTES + hl + 5;
        cr_assert(eq(int, px_obj_decode(buf, n, &v), 0));
        cr_expect(eq(u32, v.status, 301));
        cr_expect(eq(u32, v.age_s, 7));
        cr_expect(eq(u64, v.stored_ms, 1234567));
        cr_expect(eq(sz, v.head_len, hl));
        cr_expect(eq(sz, v.body_len, 5));
        cr_expect(eq(int, memcmp(v.body, "hello", 5), 0));
        cr_expect(eq(int, px_obj_decode(buf, n - 1, &v), -EINVAL));
        cr_expect(eq(int, px_obj_decode(buf, 10, &v), -EINVAL));
        buf[0] ^= 1;
        cr_expect(eq(int, px_obj_decode(buf, n, &v), -EINVAL));
        {
                size_t len;
                const char *x = px_head_find(head, hl, "x-a", &len);

                cr_assert(not(eq(ptr, (void *)x, NULL)));
                cr_expect(eq(int, (int)len, 1));
                cr_expect(eq(chr, x[0], 'b'));
                cr_expect(eq(ptr, (void *)px_head_find(head, hl, "x", &len), NULL));
        }
}

/* Whether key k (kl bytes) lies in [lo, hi) (hl 0: unbounded), as memcmp orders. */
static bool in_range(const char *k, size_t kl, const char *lo, size_t ll, const char *hi,
                     size_t hl)
{
        size_t m = kl < ll ? kl : ll;
        int c = memcmp(k, lo, m);

        if (c < 0 || (c == 0 && kl < ll))
                return false;
        if (hl == 0)
                return true;
        m = kl < hl ? kl : hl;
        c = memcmp(k, hi, m);
        return c < 0 || (c == 0 && kl < hl);
}

Test(proxy_object, a_prefix_is_one_key_range)
{
        static const char *const urls[] = { "/images/", "/images/a.png", "/images/\xff\xff",
                                            "/images", "/imagesX", "/images0", "/image",
                                            "/", "/z", "/images/\x7f" };
        static const bool under[] = { true, true, true, false, false, false, false,
                                      false, false, true };
        char lo[64], hi[64], key[64];
        size_t ll = px_key_build(lo, "h.test", 6, "/images/", 8), hl;

        hl = px_key_successor(lo, ll, hi);
        cr_assert(eq(sz, hl, ll));
        cr_expect(eq(chr, hi[ll - 1], '/' + 1));
        for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
                size_t kl = px_key_build(key, "h.test", 6, urls[i], strlen(urls[i]));

                cr_expect(eq(int, in_range(key, kl, lo, ll, hi, hl), under[i]), "%s", urls[i]);
                kl = px_key_build(key, "h.tes", 5, urls[i], strlen(urls[i]));
                cr_expect(not(in_range(key, kl, lo, ll, hi, hl)), "other host %s", urls[i]);
                kl = px_key_build(key, "h.test2", 7, urls[i], strlen(urls[i]));
                cr_expect(not(in_range(key, kl, lo, ll, hi, hl)), "longer host %s", urls[i]);
        }
        cr_expect(eq(sz, px_key_successor("a\xff\xff", 3, hi), 1));
        cr_expect(eq(chr, hi[0], 'b'));
        cr_expect(eq(sz, px_key_successor("\xff", 1, hi), 0));
        cr_expect(px_host_is_valid("Example.COM:8080", 16));
        cr_expect(px_host_is_valid("[::1]:80", 8));
        cr_expect(not(px_host_is_valid("a\0b", 3)));
        cr_expect(not(px_host_is_valid("a/b", 3)));
        cr_expect(not(px_host_is_valid("", 0)));
}

TestSuite(proxy_config);

static int parse(struct px_config *c, char *err, const char *const *args)
{
        char *argv[32];
        int argc = 0;

        argv[argc++] = (char *)"scree-proxy";
        while (*args)
                argv[argc++] = (char *)*args++;
        argv[argc] = NULL;
        return px_config_parse(argc, argv, c, err, 256);
}

Test(proxy_config, defaults_and_values)
{
        struct px_config c;
        char err[256];
        const char *const a[] = { "--origin", "o.test:81", "--origin", "[::1]:82", "--dir",
                                  "d", "--max-object", "1m", "--header-timeout", "0.5",
                                  "--sync", "batch", "--metrics-port", "9100", NULL };

        cr_assert(eq(int, parse(&c, err, a), 0), "%s", err);
        cr_expect(eq(str, c.listen.host, "127.0.0.1"));
        cr_expect(eq(u32, c.listen.port, 8080));
        cr_expect(eq(u32, c.n_origins, 2));
        cr_expect(eq(str, c.origins[1].host, "::1"));
        cr_expect(eq(u32, c.origins[1].port, 82));
        cr_expect(eq(u64, c.max_object_bytes, 1u << 20));
        cr_expect(eq(u64, c.header_timeout_ns, 500000000));
        cr_expect(eq(u64, c.default_ttl_s, 60));
        cr_expect(c.sync_batch);
        cr_expect(c.metrics);
        cr_expect(eq(u32, c.metrics_at.port, 9100));
        cr_expect(eq(u32, c.idle_poll_us, PX_IDLE_POLL_US));
}

/* The shards' idle polling, from the command line to the options the
 * database opens with: default, bounds (the library's), a value. */
Test(proxy_config, idle_poll_us_reaches_the_database_options)
{
        struct px_config c;
        char err[256], v[32];
        const char *const dflt[] = { "--origin", "o:1", "--dir", "d", NULL };
        const char *const lo[] = { "--origin", "o:1", "--dir", "d", "--idle-poll-us", "1", NULL };
        const char *const hi[] = { "--origin", "o:1", "--dir", "d", "--idle-poll-us", "1000000",
                                   NULL };
        const char *const z[] = { "--origin", "o:1", "--dir", "d", "--idle-poll-us", "0", NULL };
        const char *const big[] = { "--origin", "o:1", "--dir", "d", "--idle-poll-us", "1000001",
                                    NULL };
        const char *const *ok[] = { dflt, lo, hi };
        const char *const want[] = { "1", "1", "1000000" };

        for (unsigned i = 0; i < 3; i++) {
                scree_options *o = scree_options_new();

                cr_assert(not(eq(ptr, o, NULL)));
                cr_assert(eq(int, parse(&c, err, ok[i]), 0), "%s", err);
                cr_assert(eq(int, px_config_db_options(&c, 1, o), 0), "%s", scree_last_error());
                cr_expect(gt(int, scree_options_get(o, "idle-poll-us", v, sizeof(v)), 0));
                cr_expect(eq(str, v, (char *)want[i]));
                scree_options_free(o);
        }
        cr_expect(eq(int, parse(&c, err, z), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, "--idle-poll-us 0"), NULL)), "%s", err);
        cr_expect(eq(int, parse(&c, err, big), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, "--idle-poll-us 1000001"), NULL)), "%s", err);
}

Test(proxy_config, bad_values_name_the_option)
{
        struct px_config c;
        char err[256];
        const char *const a[] = { "--origin", "o:1", "--dir", "d", "--max-body", "2g", NULL };
        const char *const b[] = { "--origin", "o:0", "--dir", "d", NULL };

        cr_expect(eq(int, parse(&c, err, a), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, "--max-body 2g"), NULL)), "%s", err);
        cr_expect(eq(int, parse(&c, err, b), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, "--origin o:0"), NULL)), "%s", err);
}
