/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress's RESP reply scanner; see scree_stress_reply.h. Each byte
 * is looked at once: a line is searched for its LF once it is whole, a
 * bulk body is skipped by count.
 */
#include "perf/scree_stress_reply.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

/* The aggregate open at this level is an attribute (RESP3 `|`): when it
 * closes, the element it annotates is still to come. */
#define ATTR_BIT(level) (1u << (level))
static_assert(STRESS_REPLY_MAX_DEPTH <= 32, "attribute bits fit an unsigned");

void stress_reply_init(struct stress_reply_scanner *s)
{
        memset(s, 0, sizeof(*s));
}

/* A signed decimal of n bytes (>= -1 for lengths); -EPROTO if not. */
static int parse_len(const char *p, size_t n, int64_t *ret)
{
        int64_t v = 0;

        if (n == 2 && p[0] == '-' && p[1] == '1') {
                *ret = -1;
                return 0;
        }
        if (n == 0 || n > 18)
                return -EPROTO;
        for (size_t i = 0; i < n; i++) {
                if (p[i] < '0' || p[i] > '9')
                        return -EPROTO;
                v = v * 10 + (p[i] - '0');
        }
        *ret = v;
        return 0;
}

/*
 * An element finished: counts it against the open aggregates. Returns true
 * when that finished the top-level reply.
 */
static bool element_done(struct stress_reply_scanner *s, unsigned *attr)
{
        while (s->depth > 0) {
                unsigned level = s->depth - 1;

                if (--s->left[level] > 0)
                        return false;
                s->depth--;
                if (*attr & ATTR_BIT(level)) {
                        *attr &= ~ATTR_BIT(level);
                        return false;   /* the annotated element follows */
                }
        }
        return true;
}

/* Opens an aggregate of n elements (n >= 1). */
static int push(struct stress_reply_scanner *s, uint64_t n)
{
        if (s->depth == STRESS_REPLY_MAX_DEPTH)
                return -EPROTO;
        s->left[s->depth++] = n;
        return 0;
}

/*
 * Handles one whole line (without CRLF). Returns 1 when it finished an
 * element, 0 when it opened an aggregate or a bulk body, or -EPROTO.
 */
static int scan_line(struct stress_reply_scanner *s, const char *line, size_t n, unsigned *attr)
{
        int64_t v = 0;
        bool top = s->depth == 0;
        unsigned level = s->depth;

        if (n == 0)
                return -EPROTO;
        switch (line[0]) {
        case '-':
                s->is_error |= top;
                return 1;
        case '+': case ':': case ',': case '#': case '(':
                return 1;
        case '_':
                s->is_nil |= top;
                return 1;
        case '$': case '=': case '!':
                if (parse_len(line + 1, n - 1, &v) < 0)
                        return -EPROTO;
                s->is_error |= top && line[0] == '!';
                if (v < 0) {
                        s->is_nil |= top;
                        return 1;
                }
                s->bulk_left = (uint64_t)v + 2;
                return 0;
        case '*': case '~': case '>': case '%': case '|':
                if (parse_len(line + 1, n - 1, &v) < 0)
                        return -EPROTO;
                if (v < 0) {
                        s->is_nil |= top;
                        return 1;
                }
                if (line[0] == '%' || line[0] == '|')
                        v *= 2;
                if (v == 0)
                        return line[0] == '|' ? 0 : 1;
                if (line[0] == '|')
                        *attr |= ATTR_BIT(level);
                return push(s, (uint64_t)v) < 0 ? -EPROTO : 0;
        default:
                return -EPROTO;
        }
}

static void finish(struct stress_reply_scanner *s, const char *line, size_t n, struct stress_reply *ret)
{
        ret->is_error = s->is_error;
        ret->is_nil = s->is_nil;
        ret->err = s->is_error && n > 0 && line[0] == '-' ? line + 1 : NULL;
        ret->err_len = ret->err ? n - 1 : 0;
        s->is_error = false;
        s->is_nil = false;
}

ssize_t stress_reply_scan(struct stress_reply_scanner *s, const char *buf, size_t len,
                          bool *ret_done, struct stress_reply *ret)
{
        size_t pos = 0;

        *ret_done = false;
        while (pos < len) {
                const char *line = buf + pos, *lf;
                size_t n;
                int r;

                if (s->bulk_left > 0) {
                        size_t take = len - pos < s->bulk_left ? len - pos : (size_t)s->bulk_left;

                        pos += take;
                        s->bulk_left -= take;
                        if (s->bulk_left == 0 && element_done(s, &s->attr)) {
                                finish(s, NULL, 0, ret);
                                *ret_done = true;
                                return (ssize_t)pos;
                        }
                        continue;
                }
                lf = memchr(line, '\n', len - pos);
                if (!lf)
                        return len - pos > STRESS_REPLY_MAX_LINE ? -EPROTO : (ssize_t)pos;
                n = (size_t)(lf - line);
                if (n == 0 || line[n - 1] != '\r' || n > STRESS_REPLY_MAX_LINE)
                        return -EPROTO;
                n--;
                pos += n + 2;
                r = scan_line(s, line, n, &s->attr);
                if (r < 0)
                        return r;
                if (r == 1 && element_done(s, &s->attr)) {
                        finish(s, line, n, ret);
                        *ret_done = true;
                        return (ssize_t)pos;
                }
        }
        return (ssize_t)pos;
}
