/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers of the RESP tests: feed an input to a parser in given fragments
 * (each copied into its own heap buffer and freed once used, so ASan catches
 * an argument that points into an old fragment) and render what came out
 * as text: every command "[arg][arg]...\n", bytes outside printable ASCII
 * (and '[', ']', '\') as \xHH, then "!<error text>" if the parser died.
 */
#ifndef SCREE_TESTS_NET_RESP_HELPERS_H
#define SCREE_TESTS_NET_RESP_HELPERS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/resp_parse.h"

struct text {
        char *s;
        size_t len, cap;
};

static inline void text_add(struct text *t, const char *s, size_t n)
{
        if (t->len + n + 1 > t->cap) {
                t->cap = (t->len + n + 1) * 2;
                t->s = realloc(t->s, t->cap);
                if (!t->s)
                        abort();
        }
        memcpy(t->s + t->len, s, n);
        t->len += n;
        t->s[t->len] = '\0';
}

static inline void text_add_cmd(struct text *t, const struct net_cmd *cmd)
{
        for (size_t i = 0; i < cmd->argc; i++) {
                text_add(t, "[", 1);
                for (size_t k = 0; k < cmd->argv[i].len; k++) {
                        unsigned char ch = (unsigned char)cmd->argv[i].ptr[k];
                        char hex[5];

                        if (ch >= 0x20 && ch < 0x7f && ch != '[' && ch != ']' && ch != '\\') {
                                text_add(t, (const char *)&ch, 1);
                        } else {
                                snprintf(hex, sizeof(hex), "\\x%02x", ch);
                                text_add(t, hex, 4);
                        }
                }
                text_add(t, "]", 1);
        }
        text_add(t, "\n", 1);
}

/*
 * Feeds in[0..len) to p in fragments ending at cuts[0..n_cuts) (increasing,
 * each < len) and at len. Appends the rendering to *t. Returns the number of
 * commands; stops at the first error.
 */
static inline size_t feed_cuts(struct net_resp_parser *p, const char *in, size_t len,
                               const size_t *cuts, size_t n_cuts, struct text *t)
{
        size_t start = 0, n_cmds = 0;

        for (size_t f = 0; f <= n_cuts; f++) {
                size_t end = f < n_cuts ? cuts[f] : len;
                size_t flen = end - start, off = 0;
                char *frag = malloc(flen ? flen : 1);

                memcpy(frag, in + start, flen);
                while (off <= flen) {
                        struct net_cmd cmd;
                        ssize_t r = net_resp_parse(p, frag + off, flen - off, &cmd);

                        if (r < 0) {
                                text_add(t, "!", 1);
                                text_add(t, net_resp_parser_error(p), strlen(net_resp_parser_error(p)));
                                free(frag);
                                return n_cmds;
                        }
                        if (r == 0)
                                break;
                        if ((size_t)r > flen - off)
                                abort();        /* used more than given */
                        text_add_cmd(t, &cmd);
                        n_cmds++;
                        off += (size_t)r;
                }
                free(frag);
                start = end;
        }
        return n_cmds;
}

/* The rendering of in fed with the given cuts to a fresh parser (limits:
 * NULL for the defaults). Caller frees. */
static inline char *render_cuts(const struct net_resp_limits *lim, const char *in, size_t len,
                                const size_t *cuts, size_t n_cuts)
{
        struct net_resp_parser p;
        struct text t = { 0 };

        net_resp_parser_init(&p, lim);
        text_add(&t, "", 0);
        feed_cuts(&p, in, len, cuts, n_cuts, &t);
        net_resp_parser_fini(&p);
        return t.s;
}

static inline char *render_whole(const struct net_resp_limits *lim, const char *in, size_t len)
{
        return render_cuts(lim, in, len, NULL, 0);
}

/* One byte a call. */
static inline char *render_bytewise(const struct net_resp_limits *lim, const char *in, size_t len)
{
        size_t *cuts = malloc((len ? len : 1) * sizeof(*cuts));
        char *s;

        for (size_t i = 0; i + 1 < len; i++)
                cuts[i] = i + 1;
        s = render_cuts(lim, in, len, cuts, len ? len - 1 : 0);
        free(cuts);
        return s;
}

#endif
