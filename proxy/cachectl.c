/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cache-Control parsing, HTTP dates and freshness (cachectl.h).
 *
 * The date parser is one lenient scanner for the three forms RFC 9110
 * 5.6.7 names: it picks the day, month name, year and hh:mm:ss out of
 * the words in whatever order the form has them, and then checks each
 * field's range; the zone must be GMT when one is given.
 */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "proxy/cachectl.h"

static bool is_ows(char c)
{
        return c == ' ' || c == '\t';
}

/* A delta-seconds value: clamped at PX_CC_MAX_SECONDS; -1 if not digits. */
static int64_t delta_seconds(const char *v, size_t len)
{
        int64_t n = 0;

        if (len == 0)
                return -1;
        for (size_t i = 0; i < len; i++) {
                if (v[i] < '0' || v[i] > '9')
                        return -1;
                if (n < PX_CC_MAX_SECONDS)
                        n = n * 10 + (v[i] - '0');
        }
        return n < PX_CC_MAX_SECONDS ? n : PX_CC_MAX_SECONDS;
}

static bool name_is(const char *name, size_t len, const char *want)
{
        return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Records one directive name[=value]. */
static void directive(struct px_cc *cc, const char *name, size_t nlen, const char *val,
                      size_t vlen)
{
        int64_t secs;

        if (name_is(name, nlen, "no-store"))
                cc->flags |= PX_CC_NO_STORE;
        else if (name_is(name, nlen, "no-cache"))
                cc->flags |= PX_CC_NO_CACHE;
        else if (name_is(name, nlen, "private"))
                cc->flags |= PX_CC_PRIVATE;
        else if (name_is(name, nlen, "max-age") || name_is(name, nlen, "s-maxage")) {
                bool shared = nlen == 8;
                unsigned flag = shared ? PX_CC_S_MAXAGE : PX_CC_MAX_AGE;
                int64_t *slot = shared ? &cc->s_maxage_s : &cc->max_age_s;

                secs = delta_seconds(val, vlen);
                if (secs < 0)
                        secs = 0;
                if (!(cc->flags & flag) || secs < *slot)
                        *slot = secs;
                cc->flags |= flag;
        }
}

void px_cc_parse(struct px_cc *cc, const char *v, size_t len)
{
        size_t i = 0;

        while (i < len) {
                size_t name, nlen = 0, val = 0, vlen = 0;

                while (i < len && (is_ows(v[i]) || v[i] == ','))
                        i++;
                name = i;
                while (i < len && v[i] != '=' && v[i] != ',' && !is_ows(v[i]))
                        i++;
                nlen = i - name;
                while (i < len && is_ows(v[i]))
                        i++;
                if (i < len && v[i] == '=') {
                        i++;
                        while (i < len && is_ows(v[i]))
                                i++;
                        if (i < len && v[i] == '"') {
                                val = ++i;
                                while (i < len && v[i] != '"')
                                        i++;
                                vlen = i - val;
                                if (i < len)
                                        i++;
                        } else {
                                val = i;
                                while (i < len && v[i] != ',' && !is_ows(v[i]))
                                        i++;
                                vlen = i - val;
                        }
                }
                while (i < len && v[i] != ',')
                        i++;
                if (nlen)
                        directive(cc, v + name, nlen, v + val, vlen);
        }
}

/* ---- dates ---- */

static const char months[12][4] = { "jan", "feb", "mar", "apr", "may", "jun",
                                    "jul", "aug", "sep", "oct", "nov", "dec" };

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
        int64_t era;
        unsigned yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = (unsigned)(y - era * 400);
        doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + (int64_t)doe - 719468;
}

struct date_fields {
        int day, month, year, hour, min, sec;
        bool bad;
};

/* The number of two ASCII digits, or -1. */
static int two_digits(const char *w)
{
        if (w[0] < '0' || w[0] > '9' || w[1] < '0' || w[1] > '9')
                return -1;
        return (w[0] - '0') * 10 + (w[1] - '0');
}

/* One word of a date: a month or day name, a number, a time, or GMT. */
static void date_word(struct date_fields *d, const char *w, size_t n)
{
        if (n >= 3 && ((w[0] | 0x20) >= 'a' && (w[0] | 0x20) <= 'z')) {
                for (int m = 0; m < 12; m++)
                        if (n == 3 && strncasecmp(w, months[m], 3) == 0) {
                                d->month = m + 1;
                                return;
                        }
                if (n == 3 && strncasecmp(w, "gmt", 3) == 0)
                        return;
                if (n >= 6 || n == 3)
                        return;         /* a day name: Sun, Sunday */
                d->bad = true;
        } else if (n == 8 && w[2] == ':' && w[5] == ':') {
                d->hour = two_digits(w);
                d->min = two_digits(w + 3);
                d->sec = two_digits(w + 6);
        } else if (n >= 1 && n <= 4 && w[0] >= '0' && w[0] <= '9') {
                int v = 0;

                for (size_t i = 0; i < n; i++) {
                        if (w[i] < '0' || w[i] > '9') {
                                d->bad = true;
                                return;
                        }
                        v = v * 10 + (w[i] - '0');
                }
                if (n <= 2 && d->day == 0 && d->month == 0)
                        d->day = v;                     /* IMF, RFC 850: day first */
                else if (n <= 2 && d->day == 0 && d->year == 0 && d->hour < 0)
                        d->day = v;                     /* asctime: Mon _D */
                else if (n == 4 || (n == 2 && d->year == 0))
                        d->year = n == 2 ? (v < 70 ? 2000 + v : 1900 + v) : v;
                else
                        d->bad = true;
        } else {
                d->bad = true;
        }
}

int px_http_date_parse(const char *s, size_t len, int64_t *ret_s)
{
        struct date_fields d = { .hour = -1 };
        size_t i = 0;

        while (i < len) {
                size_t w;

                while (i < len && (s[i] == ' ' || s[i] == ',' || s[i] == '-'))
                        i++;
                w = i;
                while (i < len && s[i] != ' ' && s[i] != ',' && s[i] != '-')
                        i++;
                if (i > w)
                        date_word(&d, s + w, i - w);
        }
        if (d.bad || d.day < 1 || d.day > 31 || d.month < 1 || d.year < 1900 || d.hour < 0 ||
            d.hour > 23 || d.min < 0 || d.min > 59 || d.sec < 0 || d.sec > 60)
                return -EINVAL;
        *ret_s = days_from_civil(d.year, (unsigned)d.month, (unsigned)d.day) * 86400 +
                 d.hour * 3600 + d.min * 60 + d.sec;
        return 0;
}

/* ---- freshness ---- */

bool px_status_is_cacheable(unsigned status)
{
        return status == 200 || status == 301 || status == 404;
}

/* The lifetime the response gives (seconds), or default_ttl_s. */
static int64_t lifetime_s(const struct px_resp_facts *f, int64_t now_s, uint64_t default_ttl_s)
{
        if (f->cc.flags & PX_CC_S_MAXAGE)
                return f->cc.s_maxage_s;
        if (f->cc.flags & PX_CC_MAX_AGE)
                return f->cc.max_age_s;
        if (f->has_expires)
                return f->expires_ok ? f->expires_s - (f->has_date ? f->date_s : now_s) : 0;
        return default_ttl_s < PX_CC_MAX_SECONDS ? (int64_t)default_ttl_s : PX_CC_MAX_SECONDS;
}

static uint64_t refuse(const char **ret_why, const char *why)
{
        *ret_why = why;
        return 0;
}

uint64_t px_fresh_ttl_ms(const struct px_resp_facts *f, int64_t now_s, uint64_t default_ttl_s,
                         const char **ret_why)
{
        int64_t left;

        if (!px_status_is_cacheable(f->status))
                return refuse(ret_why, "status");
        if (f->cc.flags & PX_CC_NO_STORE)
                return refuse(ret_why, "no-store");
        if (f->cc.flags & PX_CC_PRIVATE)
                return refuse(ret_why, "private");
        if (f->cc.flags & PX_CC_NO_CACHE)
                return refuse(ret_why, "no-cache");
        if (f->set_cookie)
                return refuse(ret_why, "set-cookie");
        if (f->vary)
                return refuse(ret_why, "vary");
        left = lifetime_s(f, now_s, default_ttl_s) - (f->age_s > 0 ? f->age_s : 0);
        if (left <= 0)
                return refuse(ret_why, "stale");
        *ret_why = "";
        return (uint64_t)left * 1000;
}

/* ---- validators ---- */

/* The opaque part of entity tag t (n bytes): without W/. */
static void etag_opaque(const char **t, size_t *n)
{
        if (*n >= 2 && (*t)[0] == 'W' && (*t)[1] == '/') {
                *t += 2;
                *n -= 2;
        }
}

bool px_etag_match(const char *inm, size_t len, const char *etag, size_t elen)
{
        size_t i = 0;

        etag_opaque(&etag, &elen);
        while (i < len) {
                size_t s;
                const char *tag;
                size_t tlen;

                while (i < len && (is_ows(inm[i]) || inm[i] == ','))
                        i++;
                s = i;
                if (i < len && inm[i] == '*')
                        return true;
                if (i + 1 < len && inm[i] == 'W' && inm[i + 1] == '/')
                        i += 2;
                if (i < len && inm[i] == '"') {
                        i++;
                        while (i < len && inm[i] != '"')
                                i++;
                        if (i < len)
                                i++;
                } else {
                        while (i < len && inm[i] != ',')
                                i++;
                }
                tag = inm + s;
                tlen = i - s;
                etag_opaque(&tag, &tlen);
                if (tlen == elen && tlen > 0 && memcmp(tag, etag, tlen) == 0)
                        return true;
                while (i < len && inm[i] != ',')
                        i++;
        }
        return false;
}
