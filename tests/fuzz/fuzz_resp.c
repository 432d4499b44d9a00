/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness of the RESP request parser (net/resp_parse.h). Run it
 * with scripts/fuzz.
 *
 * Input: byte 0 picks the limits (tiny ones, so that every limit is hit
 * often, or the defaults) and the largest fragment; bytes 1-4 seed the
 * fragment sizes; the rest is the byte stream of a connection. The stream
 * is fed in those fragments, each in a heap buffer of its own that is freed
 * once used (ASan sees any argument left pointing into an old one).
 *
 * Checks: no crash or sanitizer report; a call never uses more than it is
 * given; buffered bytes stay within the limits; the commands and the error
 * text equal those of a plain, whole-buffer reference parser written
 * separately below (same grammar, same rules, none of the incremental
 * machinery); a dead parser stays dead with the same text.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "net/resp_parse.h"
#include "tests/net/resp_helpers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An argument as its length, ':' and its bytes: unambiguous. */
static void out_arg(struct text *o, const char *p, size_t n)
{
        char hdr[24];

        text_add(o, hdr, (size_t)snprintf(hdr, sizeof(hdr), "%zu:", n));
        text_add(o, p, n);
}

/* ---- the reference: whole input, one command after another ---- */

struct ref {
        const char *s;
        size_t n, pos;
        const struct net_resp_limits *lim;
        struct text *o;
        const char *err;        /* set when it fails */
        char err_buf[64];
};

/* string2ll's rules: optional '-', digits, no leading zero but "0". */
static bool ref_number(const char *p, size_t n, int64_t *ret)
{
        bool neg = n > 0 && p[0] == '-';
        uint64_t v = 0;
        size_t i = neg ? 1 : 0;

        if (i == n || (p[i] == '0' && (n - i > 1 || neg)))
                return false;
        for (; i < n; i++) {
                if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - 9) / 10)
                        return false;
                v = v * 10 + (uint64_t)(p[i] - '0');
        }
        if (v > (uint64_t)INT64_MAX + (neg ? 1 : 0))
                return false;
        *ret = neg ? (int64_t)(0 - v) : (int64_t)v;
        return true;
}

/* The line starting at pos up to its CR: 1 found (*ret_cr), 0 incomplete,
 * -1 too long (more than max_inline bytes before the CR, or no CR yet). */
static int ref_line(struct ref *r, size_t *ret_cr)
{
        const char *cr = memchr(r->s + r->pos, '\r', r->n - r->pos);
        size_t line = cr ? (size_t)(cr - (r->s + r->pos)) : r->n - r->pos;

        if (line > r->lim->max_inline_bytes)
                return -1;
        if (!cr)
                return 0;
        *ret_cr = (size_t)(cr - r->s);
        return 1;
}

/* One array command at pos: 1 done (emitted or skipped), 0 incomplete, -1 error. */
static int ref_array(struct ref *r)
{
        size_t start = r->pos, cr, nargs, i;
        struct text args = { 0 };
        int64_t v;
        int k;

        r->pos++;
        k = ref_line(r, &cr);
        if (k < 0 || (k == 0 && r->n - start > r->lim->max_inline_bytes))
                return r->err = "Protocol error: too big mbulk count string", -1;
        if (k == 0)
                return 0;
        if (cr - start > r->lim->max_inline_bytes)
                return r->err = "Protocol error: too big mbulk count string", -1;
        if (!ref_number(r->s + start + 1, cr - start - 1, &v) || (v > 0 && (uint64_t)v > r->lim->max_array_len))
                return r->err = "Protocol error: invalid multibulk length", -1;
        if (cr + 1 == r->n)
                return 0;
        if (r->s[cr + 1] != '\n')
                return r->err = "Protocol error: invalid CRLF in request", -1;
        r->pos = cr + 2;
        nargs = v > 0 ? (size_t)v : 0;
        for (i = 0; i < nargs; i++) {
                size_t hdr = r->pos;

                if (hdr == r->n)
                        goto incomplete;
                k = ref_line(r, &cr);
                if (k < 0) {
                        free(args.s);
                        return r->err = "Protocol error: too big bulk count string", -1;
                }
                if (k == 0)
                        goto incomplete;
                if (r->s[hdr] != '$') {
                        char got = cr == hdr ? '\r' : r->s[hdr];

                        snprintf(r->err_buf, sizeof(r->err_buf), "Protocol error: expected '$', got '%c'",
                                 got == '\r' || got == '\n' || got == '\0' ? ' ' : got);
                        free(args.s);
                        return r->err = r->err_buf, -1;
                }
                if (!ref_number(r->s + hdr + 1, cr - hdr - 1, &v) || v < 0 ||
                    (uint64_t)v > r->lim->max_bulk_bytes) {
                        free(args.s);
                        return r->err = "Protocol error: invalid bulk length", -1;
                }
                if ((cr + 2 - start) + (uint64_t)v + 2 > r->lim->max_cmd_bytes) {
                        free(args.s);
                        return r->err = "Protocol error: too big request", -1;
                }
                if (cr + 1 == r->n)
                        goto incomplete;
                if (r->s[cr + 1] != '\n') {
                        free(args.s);
                        return r->err = "Protocol error: invalid CRLF in request", -1;
                }
                r->pos = cr + 2;
                for (size_t t = 0; t < 2; t++) {
                        size_t at = r->pos + (size_t)v + t;

                        if (at >= r->n)
                                goto incomplete;
                        if (r->s[at] != "\r\n"[t]) {
                                free(args.s);
                                return r->err = "Protocol error: invalid CRLF in request", -1;
                        }
                }
                out_arg(&args, r->s + r->pos, (size_t)v);
                r->pos += (size_t)v + 2;
        }
        if (nargs > 0) {
                text_add(r->o, args.s, args.len);
                text_add(r->o, "\n", 1);
        }
        free(args.s);
        return 1;
incomplete:
        free(args.s);
        return 0;
}

static bool ref_is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int ref_hex(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Steps over a closing quote; false when a non-space follows it. */
static bool ref_closed(const char **p, const char *end)
{
        (*p)++;
        return *p == end || ref_is_space(**p);
}

/* Splits line[0..n) as Redis's inline protocol does; false: unbalanced. */
static bool ref_split(const char *line, size_t n, struct text *o, size_t *ret_argc)
{
        const char *p = line, *end = line + n;
        char *word = malloc(n + 1);

        *ret_argc = 0;
        for (;;) {
                size_t w = 0;
                int quote = 0;          /* 0, '"' or '\'' */

                while (p < end && ref_is_space(*p))
                        p++;
                if (p == end)
                        break;
                for (;;) {
                        if (quote == '"') {
                                if (p == end)
                                        goto unbalanced;
                                if (*p == '\\' && end - p >= 4 && p[1] == 'x' && ref_hex(p[2]) >= 0 &&
                                    ref_hex(p[3]) >= 0) {
                                        word[w++] = (char)(ref_hex(p[2]) * 16 + ref_hex(p[3]));
                                        p += 4;
                                } else if (*p == '\\' && end - p >= 2) {
                                        const char *from = "nrtba", *to = "\n\r\t\b\a";
                                        const char *at = strchr(from, p[1]);

                                        word[w++] = at && p[1] ? to[at - from] : p[1];
                                        p += 2;
                                } else if (*p == '"') {
                                        if (!ref_closed(&p, end))
                                                goto unbalanced;
                                        break;
                                } else {
                                        word[w++] = *p++;
                                }
                        } else if (quote == '\'') {
                                if (p == end)
                                        goto unbalanced;
                                if (*p == '\\' && end - p >= 2 && p[1] == '\'') {
                                        word[w++] = '\'';
                                        p += 2;
                                } else if (*p == '\'') {
                                        if (!ref_closed(&p, end))
                                                goto unbalanced;
                                        break;
                                } else {
                                        word[w++] = *p++;
                                }
                        } else if (p == end || *p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
                                break;
                        } else if (*p == '"' || *p == '\'') {
                                quote = *p++;
                        } else {
                                word[w++] = *p++;
                        }
                }
                out_arg(o, word, w);
                (*ret_argc)++;
        }
        free(word);
        return true;
unbalanced:
        free(word);
        return false;
}

static int ref_inline(struct ref *r)
{
        const char *nl = memchr(r->s + r->pos, '\n', r->n - r->pos);
        struct text args = { 0 };
        size_t len, argc;

        if (!nl) {
                if (r->n - r->pos > r->lim->max_inline_bytes + 1)
                        return r->err = "Protocol error: too big inline request", -1;
                return 0;
        }
        len = (size_t)(nl - (r->s + r->pos));
        if (len > 0 && nl[-1] == '\r')
                len--;
        if (len > r->lim->max_inline_bytes)
                return r->err = "Protocol error: too big inline request", -1;
        if (len + 1 > r->lim->max_cmd_bytes)
                return r->err = "Protocol error: too big request", -1;
        if (!ref_split(r->s + r->pos, len, &args, &argc)) {
                free(args.s);
                return r->err = "Protocol error: unbalanced quotes in request", -1;
        }
        if (argc > 0) {
                text_add(r->o, args.s, args.len);
                text_add(r->o, "\n", 1);
        }
        free(args.s);
        r->pos = (size_t)(nl - r->s) + 1;
        return 1;
}

static void ref_parse(const char *s, size_t n, const struct net_resp_limits *lim, struct text *o)
{
        struct ref r = { .s = s, .n = n, .lim = lim, .o = o };
        int k = 1;

        while (k > 0 && r.pos < n)
                k = s[r.pos] == '*' ? ref_array(&r) : ref_inline(&r);
        text_add(o, "", 0);
        if (k < 0) {
                text_add(o, "!", 1);
                text_add(o, r.err, strlen(r.err));
        }
}

/* ---- the parser under test, in fragments ---- */

static void render_cmd(struct text *o, const struct net_cmd *cmd)
{
        for (size_t i = 0; i < cmd->argc; i++)
                out_arg(o, cmd->argv[i].ptr, cmd->argv[i].len);
        text_add(o, "\n", 1);
}

/* After an error: more input changes nothing. */
static void check_dead(struct net_resp_parser *p, ssize_t code)
{
        const char *text = net_resp_parser_error(p);
        struct net_cmd cmd;

        if (!net_resp_parser_is_dead(p) || !text || net_resp_parse(p, "*1\r\n$1\r\nx\r\n", 11, &cmd) != code ||
            net_resp_parser_error(p) != text)
                abort();
}

static void feed(const char *s, size_t n, const struct net_resp_limits *lim, uint32_t seed,
                 size_t max_frag, struct text *o)
{
        struct net_resp_parser p;
        size_t pos = 0;

        net_resp_parser_init(&p, lim);
        text_add(o, "", 0);
        while (pos < n) {
                size_t flen, off = 0;
                char *frag;

                seed = seed * 1664525u + 1013904223u;
                flen = 1 + (seed >> 8) % max_frag;
                if (flen > n - pos)
                        flen = n - pos;
                frag = malloc(flen);
                memcpy(frag, s + pos, flen);
                for (;;) {
                        struct net_cmd cmd;
                        ssize_t r = net_resp_parse(&p, frag + off, flen - off, &cmd);

                        if (r < 0) {
                                check_dead(&p, r);
                                text_add(o, "!", 1);
                                text_add(o, net_resp_parser_error(&p), strlen(net_resp_parser_error(&p)));
                                free(frag);
                                net_resp_parser_fini(&p);
                                return;
                        }
                        if (r == 0)
                                break;
                        if ((size_t)r > flen - off || cmd.argc == 0)
                                abort();
                        render_cmd(o, &cmd);
                        off += (size_t)r;
                }
                free(frag);
                pos += flen;
                if (net_resp_parser_buffered_bytes(&p) > lim->max_cmd_bytes + lim->max_inline_bytes + 2)
                        abort();
        }
        net_resp_parser_fini(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const struct net_resp_limits tiny = {
                .max_bulk_bytes = 40, .max_array_len = 6, .max_inline_bytes = 24, .max_cmd_bytes = 120,
        };
        static const size_t frags[4] = { 1, 3, 17, 4096 };
        struct net_resp_limits lim;
        struct text want = { 0 }, got = { 0 };
        uint32_t seed;

        if (size < 5)
                return 0;
        if (data[0] & 1)
                lim = tiny;
        else
                net_resp_limits_default(&lim);
        memcpy(&seed, data + 1, 4);
        ref_parse((const char *)data + 5, size - 5, &lim, &want);
        feed((const char *)data + 5, size - 5, &lim, seed, frags[(data[0] >> 1) & 3], &got);
        if (want.len != got.len || memcmp(want.s, got.s, want.len) != 0) {
                fprintf(stderr, "reference: %s\nparser:    %s\n", want.s, got.s);
                abort();
        }
        free(want.s);
        free(got.s);
        return 0;
}
