/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Incremental RESP request parser; contract in resp_parse.h, accepted
 * syntax and error texts in docs/protocol.md.
 *
 * A state machine over the caller's bytes. The parse loop never touches the
 * stash: it reads only the current buffer and records every argument as an
 * offset from the start of its command. When a buffer ends mid-command the
 * command's bytes from that buffer are appended to the stash, which thus
 * always holds the command's first bytes; a command is then based either in
 * the caller's buffer (it lay there whole: zero copy) or in the stash, and
 * the offsets are valid in both. Length lines are judged from O(1) running
 * state (value, flags, line length) when their CR arrives, so a line split
 * over many calls is never re-read. Inline lines are tokenized once, whole.
 *
 * Errors are judged in Redis's order (networking.c, processMultibulkBuffer
 * and processInlineBuffer) with its texts; where Redis is silent (CRLF after
 * a bulk, the whole-command limit) the texts are Valkey's or our own.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "net/resp_parse.h"

/* Phases of the state machine. */
enum {
        PH_IDLE,                /* between commands */
        PH_COUNT,               /* "*N" line, after the '*' */
        PH_COUNT_LF,            /* its CR seen */
        PH_BULK_LINE,           /* "$N" line */
        PH_BULK_LF,             /* its CR seen */
        PH_BULK_DATA,           /* bulk bytes */
        PH_BULK_CR,             /* CR after the bulk */
        PH_BULK_END_LF,         /* LF after the bulk */
        PH_INLINE,              /* an inline line, up to its LF */
        PH_DEAD,
};

/* Running judgement of a length line's digits (as Redis's string2ll). */
enum {
        NF_ANY = 1u << 0,       /* a byte of the number seen */
        NF_NEG = 1u << 1,       /* leading '-' */
        NF_DIGITS = 1u << 2,    /* at least one digit */
        NF_ZERO = 1u << 3,      /* the first digit was '0' */
        NF_BAD = 1u << 4,       /* not a number */
        NF_OVF = 1u << 5,       /* more than 64 bits */
};

/* Outcomes of one step of the machine. */
enum { ST_CONT, ST_MORE, ST_DONE, ST_SKIP, ST_INLINE, ST_FAIL };

/* Memory kept between commands; more is given back after a big command. */
#define KEEP_BYTES (64u << 10)
#define KEEP_ARGS 1024u

static const char E_MBULK[] = "Protocol error: invalid multibulk length";
static const char E_BULK[] = "Protocol error: invalid bulk length";
static const char E_MBULK_BIG[] = "Protocol error: too big mbulk count string";
static const char E_BULK_BIG[] = "Protocol error: too big bulk count string";
static const char E_INLINE_BIG[] = "Protocol error: too big inline request";
static const char E_QUOTES[] = "Protocol error: unbalanced quotes in request";
static const char E_CRLF[] = "Protocol error: invalid CRLF in request";
static const char E_CMD_BIG[] = "Protocol error: too big request";
static const char E_UNAUTH_MBULK[] = "Protocol error: unauthenticated multibulk length";
static const char E_UNAUTH_BULK[] = "Protocol error: unauthenticated bulk length";
static const char E_NOMEM[] = "out of memory";

/* Where the machine reads: s..end of the caller's buffer; cmd is where the
 * current command's bytes in this buffer begin (buf itself when the
 * command began in an earlier call). */
struct cursor {
        const char *s, *end, *cmd;
};

void net_resp_limits_default(struct net_resp_limits *ret_lim)
{
        ret_lim->max_bulk_bytes = NET_RESP_DEFAULT_MAX_BULK_BYTES;
        ret_lim->max_array_len = NET_RESP_DEFAULT_MAX_ARRAY_LEN;
        ret_lim->max_inline_bytes = NET_RESP_DEFAULT_MAX_INLINE_BYTES;
        ret_lim->max_cmd_bytes = NET_RESP_DEFAULT_MAX_CMD_BYTES;
}

void net_resp_parser_init(struct net_resp_parser *p, const struct net_resp_limits *lim)
{
        memset(p, 0, sizeof(*p));
        if (lim)
                p->lim = *lim;
        else
                net_resp_limits_default(&p->lim);
        p->phase = PH_IDLE;
}

void net_resp_parser_fini(struct net_resp_parser *p)
{
        if (!p)
                return;
        free(p->argv);
        free(p->arg_off);
        free(p->stash);
        free(p->words);
        p->argv = NULL;
        p->arg_off = NULL;
        p->stash = NULL;
        p->words = NULL;
        p->arg_cap = p->stash_cap = p->words_cap = 0;
        p->stash_len = 0;
}

void net_resp_parser_set_authenticated(struct net_resp_parser *p, bool authenticated)
{
        p->unauthenticated = !authenticated;
}

bool net_resp_parser_is_dead(const struct net_resp_parser *p)
{
        return p->phase == PH_DEAD;
}

const char *net_resp_parser_error(const struct net_resp_parser *p)
{
        return p->phase == PH_DEAD ? p->err : NULL;
}

size_t net_resp_parser_buffered_bytes(const struct net_resp_parser *p)
{
        return p->release_stash ? 0 : p->stash_len;
}

size_t net_resp_parser_mem_bytes(const struct net_resp_parser *p)
{
        return p->stash_cap + p->words_cap +
               p->arg_cap * (sizeof(*p->argv) + sizeof(*p->arg_off));
}

static int fail(struct net_resp_parser *p, const char *text)
{
        p->phase = PH_DEAD;
        p->err = text;
        return ST_FAIL;
}

/* "Protocol error: expected '$', got 'c'", with CR, LF and NUL shown as a
 * space: Redis maps CR and LF so, and a NUL would end the C string. */
static int fail_expected_dollar(struct net_resp_parser *p, char got)
{
        static const char pre[] = "Protocol error: expected '$', got '";
        size_t n = sizeof(pre) - 1;

        _Static_assert(sizeof(pre) + 3 <= sizeof(p->err_buf), "err_buf too small");
        memcpy(p->err_buf, pre, n);
        p->err_buf[n] = (got == '\r' || got == '\n' || got == '\0') ? ' ' : got;
        p->err_buf[n + 1] = '\'';
        p->err_buf[n + 2] = '\0';
        return fail(p, p->err_buf);
}

/* Offset of x (in the caller's buffer) from the start of its command. */
static uint64_t cmd_offset(const struct net_resp_parser *p, const struct cursor *c, const char *x)
{
        return p->stash_len + (uint64_t)(x - c->cmd);
}

/* Grows the argument arrays to hold one more; both or neither keep the new
 * capacity. */
static int grow_args(struct net_resp_parser *p)
{
        size_t cap = p->arg_cap ? p->arg_cap * 2 : 16;
        struct net_arg *argv;
        size_t *off;

        argv = realloc(p->argv, cap * sizeof(*argv));
        if (!argv)
                return -ENOMEM;
        p->argv = argv;
        off = realloc(p->arg_off, cap * sizeof(*off));
        if (!off)
                return -ENOMEM;
        p->arg_off = off;
        p->arg_cap = cap;
        return 0;
}

static int push_arg(struct net_resp_parser *p, uint64_t off, uint64_t len)
{
        if (unlikely(p->argc == p->arg_cap) && grow_args(p) < 0)
                return fail(p, E_NOMEM);
        p->arg_off[p->argc] = (size_t)off;
        p->argv[p->argc].len = (size_t)len;
        p->argc++;
        return ST_CONT;
}

static void start_line(struct net_resp_parser *p, unsigned phase, uint64_t line_bytes)
{
        p->phase = (uint8_t)phase;
        p->num = 0;
        p->nflags = 0;
        p->line_bytes = line_bytes;
}

/*
 * Consumes the digits of a length line up to (not including) its CR,
 * updating p->num and p->nflags. Returns true when the CR is at c->s.
 */
static bool scan_number(struct net_resp_parser *p, struct cursor *c)
{
        const char *s = c->s, *end = c->end;
        uint64_t v = p->num;
        unsigned f = p->nflags;

        for (; s < end && *s != '\r'; s++) {
                unsigned d = (unsigned)(unsigned char)*s - '0';

                if (d < 10) {
                        if (f & NF_ZERO)
                                f |= NF_BAD;            /* "01", "00" */
                        else if (d == 0 && !(f & NF_DIGITS))
                                f |= NF_ZERO | ((f & NF_NEG) ? NF_BAD : 0);     /* "-0" */
                        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
                                f |= NF_OVF;
                        f |= NF_DIGITS;
                } else if (*s == '-' && !(f & NF_ANY)) {
                        f |= NF_NEG;
                } else {
                        f |= NF_BAD;
                }
                f |= NF_ANY;
        }
        p->line_bytes += (uint64_t)(s - c->s);
        p->num = v;
        p->nflags = (uint8_t)f;
        c->s = s;
        return s < end;
}

/* The judged line as a signed value: true and *ret when it is a number. */
static bool line_value(const struct net_resp_parser *p, int64_t *ret)
{
        unsigned f = p->nflags;

        if ((f & (NF_BAD | NF_OVF)) || !(f & NF_DIGITS))
                return false;
        if (f & NF_NEG) {
                if (p->num > (uint64_t)INT64_MAX + 1)
                        return false;
                *ret = p->num ? -(int64_t)(p->num - 1) - 1 : 0;
                return true;
        }
        if (p->num > (uint64_t)INT64_MAX)
                return false;
        *ret = (int64_t)p->num;
        return true;
}

/* Reads the CR of a length line: Redis's "too big" check first (bytes of the
 * line, its type byte included, without a CR), then the line ends. */
static int line_end(struct net_resp_parser *p, struct cursor *c, bool have_cr, const char *too_big)
{
        if (p->line_bytes > p->lim.max_inline_bytes)
                return fail(p, too_big);
        if (!have_cr)
                return ST_MORE;
        c->s++;                 /* the CR */
        p->phase++;             /* PH_COUNT -> PH_COUNT_LF, PH_BULK_LINE -> PH_BULK_LF */
        return ST_CONT;
}

static int ph_count(struct net_resp_parser *p, struct cursor *c)
{
        bool cr = scan_number(p, c);
        int64_t n;
        int r = line_end(p, c, cr, E_MBULK_BIG);

        if (r != ST_CONT)
                return r;
        if (!line_value(p, &n) || (n > 0 && (uint64_t)n > p->lim.max_array_len))
                return fail(p, E_MBULK);
        if (p->unauthenticated && n > NET_RESP_UNAUTH_MAX_ARRAY_LEN)
                return fail(p, E_UNAUTH_MBULK);
        p->args_left = n > 0 ? (uint64_t)n : 0;
        return ST_CONT;
}

static int ph_count_lf(struct net_resp_parser *p, struct cursor *c)
{
        if (c->s == c->end)
                return ST_MORE;
        if (*c->s++ != '\n')
                return fail(p, E_CRLF);
        if (p->args_left == 0) {        /* "*0", "*-1": nothing to run */
                p->phase = PH_IDLE;
                return ST_SKIP;
        }
        start_line(p, PH_BULK_LINE, 0);
        return ST_CONT;
}

static int ph_bulk_line(struct net_resp_parser *p, struct cursor *c)
{
        int64_t n;
        bool cr;
        int r;

        if (p->line_bytes == 0) {       /* the type byte; a CR there ends the line */
                if (c->s == c->end)
                        return ST_MORE;
                p->line_first = *c->s;
                if (*c->s != '\r') {
                        c->s++;
                        p->line_bytes = 1;
                }
        }
        cr = p->line_bytes == 0 || scan_number(p, c);
        r = line_end(p, c, cr, E_BULK_BIG);
        if (r != ST_CONT)
                return r;
        if (p->line_first != '$')
                return fail_expected_dollar(p, p->line_first);
        if (!line_value(p, &n) || n < 0 || (uint64_t)n > p->lim.max_bulk_bytes)
                return fail(p, E_BULK);
        if (p->unauthenticated && n > NET_RESP_UNAUTH_MAX_BULK_BYTES)
                return fail(p, E_UNAUTH_BULK);
        /* the LF, the bytes and their CRLF must fit in the command */
        if (cmd_offset(p, c, c->s) + 1 + (uint64_t)n + 2 > p->lim.max_cmd_bytes)
                return fail(p, E_CMD_BIG);
        p->bulk_left = (uint64_t)n;
        return ST_CONT;
}

/* The LF of a "$N" line. Common case: the whole bulk and its CRLF are here. */
static int ph_bulk_lf(struct net_resp_parser *p, struct cursor *c)
{
        uint64_t n = p->bulk_left;

        if (c->s == c->end)
                return ST_MORE;
        if (*c->s++ != '\n')
                return fail(p, E_CRLF);
        if (push_arg(p, cmd_offset(p, c, c->s), n) != ST_CONT)
                return ST_FAIL;
        if ((uint64_t)(c->end - c->s) >= n + 2) {
                const char *e = c->s + n;

                if (e[0] != '\r' || e[1] != '\n')
                        return fail(p, E_CRLF);
                c->s = e + 2;
                if (--p->args_left == 0) {
                        p->phase = PH_IDLE;
                        return ST_DONE;
                }
                start_line(p, PH_BULK_LINE, 0);
                return ST_CONT;
        }
        p->phase = PH_BULK_DATA;
        return ST_CONT;
}

static int ph_bulk_data(struct net_resp_parser *p, struct cursor *c)
{
        uint64_t avail = (uint64_t)(c->end - c->s);
        uint64_t n = avail < p->bulk_left ? avail : p->bulk_left;

        c->s += n;
        p->bulk_left -= n;
        if (p->bulk_left)
                return ST_MORE;
        p->phase = PH_BULK_CR;
        return ST_CONT;
}

static int ph_bulk_crlf(struct net_resp_parser *p, struct cursor *c)
{
        char want = p->phase == PH_BULK_CR ? '\r' : '\n';

        if (c->s == c->end)
                return ST_MORE;
        if (*c->s++ != want)
                return fail(p, E_CRLF);
        if (want == '\r') {
                p->phase = PH_BULK_END_LF;
                return ST_CONT;
        }
        if (--p->args_left == 0) {
                p->phase = PH_IDLE;
                return ST_DONE;
        }
        start_line(p, PH_BULK_LINE, 0);
        return ST_CONT;
}

/* Up to the LF of an inline line. The line's content (without its CR LF)
 * is checked whole in finish_inline(); a line that already holds more than
 * max_inline_bytes + 1 bytes (room for a CR) can only be too big. */
static int ph_inline(struct net_resp_parser *p, struct cursor *c)
{
        const char *nl = memchr(c->s, '\n', (size_t)(c->end - c->s));

        if (!nl) {
                p->line_bytes += (uint64_t)(c->end - c->s);
                c->s = c->end;
                if (p->line_bytes > p->lim.max_inline_bytes + 1)
                        return fail(p, E_INLINE_BIG);
                return ST_MORE;
        }
        p->line_bytes += (uint64_t)(nl - c->s);
        c->s = nl + 1;
        p->phase = PH_IDLE;
        return ST_INLINE;
}

static int ph_idle(struct net_resp_parser *p, struct cursor *c)
{
        if (c->s == c->end)
                return ST_MORE;
        p->argc = 0;
        if (*c->s == '*') {
                c->s++;
                start_line(p, PH_COUNT, 1);
                return ST_CONT;
        }
        p->phase = PH_INLINE;
        p->line_bytes = 0;
        return ST_CONT;
}

/*
 * Runs the machine until a command is complete (ST_DONE, ST_INLINE), one is
 * skipped (ST_SKIP), the input ends (ST_MORE) or it fails. A dispatch loop
 * over the phases; each phase's work is in its own function.
 */
static int run(struct net_resp_parser *p, struct cursor *c)
{
        int r;

        do {
                switch (p->phase) {
                case PH_IDLE: r = ph_idle(p, c); break;
                case PH_COUNT: r = ph_count(p, c); break;
                case PH_COUNT_LF: r = ph_count_lf(p, c); break;
                case PH_BULK_LINE: r = ph_bulk_line(p, c); break;
                case PH_BULK_LF: r = ph_bulk_lf(p, c); break;
                case PH_BULK_DATA: r = ph_bulk_data(p, c); break;
                case PH_BULK_CR:
                case PH_BULK_END_LF: r = ph_bulk_crlf(p, c); break;
                case PH_INLINE: r = ph_inline(p, c); break;
                default: r = ST_FAIL; break;
                }
        } while (r == ST_CONT);
        return r;
}

/* Appends n bytes at src to the stash, doubling it as needed (up to the
 * longest command). */
static int stash_append(struct net_resp_parser *p, const char *src, size_t n)
{
        size_t need = p->stash_len + n;

        if (n == 0)
                return 0;
        if (need > p->stash_cap) {
                size_t cap = p->stash_cap ? p->stash_cap : 256;
                char *s;

                while (cap < need)
                        cap *= 2;
                /* A command is never longer (refused from its header):
                 * doubling past that only takes memory it will not use,
                 * which counts against the client's memory limit. */
                if (cap > p->lim.max_cmd_bytes && need <= p->lim.max_cmd_bytes)
                        cap = (size_t)p->lim.max_cmd_bytes;
                s = realloc(p->stash, cap);
                if (!s)
                        return -ENOMEM;
                p->stash = s;
                p->stash_cap = cap;
        }
        memcpy(p->stash + p->stash_len, src, n);
        p->stash_len = need;
        return 0;
}

/* Forgets the command returned last time; gives back memory a big one took. */
static void release_last(struct net_resp_parser *p)
{
        if (p->release_stash) {
                p->release_stash = false;
                p->stash_len = 0;
        }
        if (p->stash_len == 0 && p->stash_cap > KEEP_BYTES) {
                free(p->stash);
                p->stash = NULL;
                p->stash_cap = 0;
        }
        if (p->phase == PH_IDLE && p->arg_cap > KEEP_ARGS) {
                free(p->argv);
                free(p->arg_off);
                p->argv = NULL;
                p->arg_off = NULL;
                p->arg_cap = 0;
        }
        if (p->words_cap > KEEP_BYTES) {
                free(p->words);
                p->words = NULL;
                p->words_cap = 0;
        }
}

/* The command's first byte: in the stash, or at c->cmd. Completes the stash
 * with this buffer's part when the command began earlier. */
static const char *command_base(struct net_resp_parser *p, const struct cursor *c)
{
        if (p->stash_len == 0)
                return c->cmd;
        if (stash_append(p, c->cmd, (size_t)(c->s - c->cmd)) < 0)
                return NULL;
        p->release_stash = true;
        return p->stash;
}

/* isspace() in the C locale: separates inline words. */
static bool is_space(char ch)
{
        return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

static int hex_value(char ch)
{
        if (ch >= '0' && ch <= '9')
                return ch - '0';
        ch = (char)(ch | 0x20);
        return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* The byte a backslash escape inside "..." stands for. */
static char unescape(char ch)
{
        switch (ch) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'b': return '\b';
        case 'a': return '\a';
        default: return ch;     /* \\ \" and any other byte stand for themselves */
        }
}

/*
 * Decodes a quoted part of an inline word into out[*olen..]: s[*i] is the
 * byte after the opening quote q. "..." knows \xHH and the escapes of
 * unescape(); '...' knows only \'. The closing quote must be followed by a
 * space or the end of the line. Leaves *i after the closing quote; returns
 * 0, or -1 when the quotes are unbalanced.
 */
static int decode_quoted(const char *s, size_t n, size_t *i, char q, char *out, size_t *olen)
{
        for (size_t k = *i; k < n; k++) {
                char ch = s[k];

                if (q == '"' && ch == '\\' && k + 3 < n && s[k + 1] == 'x' &&
                    hex_value(s[k + 2]) >= 0 && hex_value(s[k + 3]) >= 0) {
                        out[(*olen)++] = (char)(hex_value(s[k + 2]) * 16 + hex_value(s[k + 3]));
                        k += 3;
                } else if (q == '"' && ch == '\\' && k + 1 < n) {
                        out[(*olen)++] = unescape(s[++k]);
                } else if (q == '\'' && ch == '\\' && k + 1 < n && s[k + 1] == '\'') {
                        out[(*olen)++] = '\'';
                        k++;
                } else if (ch == q) {
                        if (k + 1 < n && !is_space(s[k + 1]))
                                return -1;
                        *i = k + 1;
                        return 0;
                } else {
                        out[(*olen)++] = ch;
                }
        }
        return -1;
}

/* Decodes one word starting at line[*i] (not a space) into out[*olen..]; 0 or -1 (unbalanced quotes). */
static int split_word(const char *line, size_t n, size_t *i, char *out, size_t *olen)
{
        while (*i < n) {
                char ch = line[*i];

                /* a word ends at these; \v and \f only separate words (as in Redis) */
                if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
                        return 0;
                (*i)++;
                if (ch == '"' || ch == '\'')
                        return decode_quoted(line, n, i, ch, out, olen);  /* it ends the word */
                out[(*olen)++] = ch;
        }
        return 0;
}

/*
 * Splits an inline line of n bytes into words, decoded into p->words (never
 * longer than the line), as p's arguments. Returns 0, -EPROTO for unbalanced
 * quotes, -ENOMEM.
 */
static int split_inline(struct net_resp_parser *p, const char *line, size_t n)
{
        size_t i = 0, olen = 0;

        if (n > p->words_cap) {
                char *w = realloc(p->words, n);

                if (!w)
                        return -ENOMEM;
                p->words = w;
                p->words_cap = n;
        }
        p->argc = 0;
        for (;;) {
                size_t start = olen;

                while (i < n && is_space(line[i]))
                        i++;
                if (i == n)
                        return 0;
                if (split_word(line, n, &i, p->words, &olen) < 0)
                        return -EPROTO;
                if (push_arg(p, start, olen - start) != ST_CONT)
                        return -ENOMEM;
        }
}

/* Tokenizes a complete inline line: returns ST_DONE, ST_SKIP (no words) or
 * ST_FAIL. */
static int finish_inline(struct net_resp_parser *p, const struct cursor *c)
{
        const char *line = command_base(p, c);
        size_t n = (size_t)p->line_bytes;
        int r;

        if (!line)
                return fail(p, E_NOMEM);
        if (n > 0 && line[n - 1] == '\r')
                n--;
        if (n > p->lim.max_inline_bytes)
                return fail(p, E_INLINE_BIG);
        if (n + 1 > p->lim.max_cmd_bytes)
                return fail(p, E_CMD_BIG);
        r = split_inline(p, line, n);
        if (r < 0)
                return r == -ENOMEM ? fail(p, E_NOMEM) : fail(p, E_QUOTES);
        if (p->argc == 0) {
                p->release_stash = false;
                p->stash_len = 0;
                return ST_SKIP;
        }
        for (size_t i = 0; i < p->argc; i++)
                p->argv[i].ptr = p->words + p->arg_off[i];
        return ST_DONE;
}

static int finish_array(struct net_resp_parser *p, const struct cursor *c)
{
        const char *base = command_base(p, c);

        if (!base)
                return fail(p, E_NOMEM);
        for (size_t i = 0; i < p->argc; i++)
                p->argv[i].ptr = base + p->arg_off[i];
        return ST_DONE;
}

ssize_t net_resp_parse(struct net_resp_parser *p, const char *buf, size_t len,
                       struct net_cmd *ret_cmd)
{
        struct cursor c = { buf, buf + len, buf };
        int r;

        if (p->phase == PH_DEAD)
                return p->err == E_NOMEM ? -ENOMEM : -SCREE_EPROTO;
        release_last(p);
        for (;;) {
                r = run(p, &c);
                if (r == ST_INLINE)
                        r = finish_inline(p, &c);
                else if (r == ST_DONE)
                        r = finish_array(p, &c);
                if (r == ST_SKIP) {
                        p->stash_len = 0;
                        c.cmd = c.s;
                        continue;
                }
                break;
        }
        if (r == ST_DONE) {
                ret_cmd->argc = p->argc;
                ret_cmd->argv = p->argv;
                return c.s - buf;
        }
        if (r == ST_MORE) {
                if (stash_append(p, c.cmd, (size_t)(c.end - c.cmd)) < 0)
                        fail(p, E_NOMEM);
                else
                        return 0;
        }
        return p->err == E_NOMEM ? -ENOMEM : -SCREE_EPROTO;
}
