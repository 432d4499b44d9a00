/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP caching rules for scree-proxy (docs/proxy.md, "Caching rules"):
 * Cache-Control directives, HTTP dates, and whether -- and for how long
 * -- a response may be stored. Pure functions: no I/O, no clock (the
 * caller passes now); any thread.
 *
 * Freshness (RFC 9111 4.2.1, for a shared cache): s-maxage, else
 * max-age, else Expires minus Date (or minus now without a Date), else
 * the configured default; minus the Age the origin reported. A response
 * is stored only with status 200, 301 or 404, without no-store, private,
 * no-cache, Set-Cookie or Vary, and with a freshness left above zero.
 */
#ifndef SCREE_PROXY_CACHECTL_H
#define SCREE_PROXY_CACHECTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PX_CC_NO_CACHE (1u << 0)
#define PX_CC_NO_STORE (1u << 1)
#define PX_CC_PRIVATE (1u << 2)
#define PX_CC_MAX_AGE (1u << 3)         /* max_age_s holds the smallest seen */
#define PX_CC_S_MAXAGE (1u << 4)        /* s_maxage_s holds the smallest seen */

/* Longest freshness the proxy honours: delta-seconds cap (RFC 9111 1.2.2). */
#define PX_CC_MAX_SECONDS 2147483648LL

struct px_cc {
        unsigned flags;
        int64_t max_age_s, s_maxage_s;
};

/*
 * Adds the directives of one Cache-Control (or Pragma) field value v
 * (len bytes, borrowed) to cc, which starts zeroed; call once per field.
 * Names are case-insensitive, values may be quoted; a max-age or s-maxage
 * whose value is not a number counts as 0 (stale: RFC 9111 4.2.1); an
 * unknown directive is ignored. "private" and "no-cache" with a field
 * list count as the plain directives. Pure.
 */
void px_cc_parse(struct px_cc *cc, const char *v, size_t len);

/*
 * Parses an HTTP-date (s, len bytes): IMF-fixdate ("Sun, 06 Nov 1994
 * 08:49:37 GMT"), the obsolete RFC 850 and asctime forms. 0 and
 * *ret_s (seconds since the epoch), or -EINVAL. Pure.
 */
int px_http_date_parse(const char *s, size_t len, int64_t *ret_s);

/* What the cache rules look at in a response. */
struct px_resp_facts {
        unsigned status;
        struct px_cc cc;
        bool set_cookie, vary;
        bool has_expires, expires_ok;   /* an Expires field; it parsed */
        bool has_date;                  /* a Date field that parsed */
        int64_t expires_s, date_s;
        int64_t age_s;                  /* the Age field, 0 without one */
};

/*
 * How long a response may be served from the cache: > 0 milliseconds,
 * or 0 when it must not be stored, with *ret_why (static text) naming
 * the rule. now_s is the current time, default_ttl_s the lifetime of a
 * response that gives none (0: such responses are not stored). Pure.
 */
uint64_t px_fresh_ttl_ms(const struct px_resp_facts *f, int64_t now_s, uint64_t default_ttl_s,
                         const char **ret_why);

/*
 * Whether If-None-Match value inm (len bytes: "*" or a list of entity
 * tags) matches entity tag etag (elen bytes), by the weak comparison
 * (RFC 9110 13.1.2: W/ prefixes ignored). Pure.
 */
bool px_etag_match(const char *inm, size_t len, const char *etag, size_t elen);

/* Whether status is one the cache stores (200, 301, 404). */
bool px_status_is_cacheable(unsigned status);

#endif
