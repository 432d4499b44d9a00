/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Config files and command-line flags (config.h): Redis's file syntax
 * (words split at blanks, "..." with escapes and '...' quoting, `include`
 * with wildcards, several words for the settings that take them, `save`
 * lines adding up), flags over the file, the warnings for Redis settings
 * with no effect (one per setting), and --help.
 *
 * A loader spans one start: the files and the flags share its "already
 * warned" marks and its `save` state. Main thread, before the shards.
 */
#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/config.h"
#include "net/config_int.h"

#define MAX_WORDS 64
#define MAX_INCLUDE_DEPTH 16

struct loader {
        struct scree_config *c;
        cfg_warn_fn warn;
        void *warn_ctx;
        bool warned[CFG_MAX_SETTINGS];
        bool save_seen;                 /* the first `save` replaces the default, later ones add */
        unsigned depth;                 /* includes being read */
};

/* File directives that are not settings, and why scree refuses them. */
static const struct {
        const char *name, *why;
} refused[] = {
        { "rename-command", "scree cannot rename or hide commands" },
        { "user", "scree has no ACL users (only requirepass)" },
        { "loadmodule", "scree has no modules" },
        { "sentinel", "scree is not a Redis Sentinel" },
};

/* ---- words ---- */

static int hexval(char ch)
{
        return isdigit((unsigned char)ch) ? ch - '0' : tolower((unsigned char)ch) - 'a' + 10;
}

/* Reads one "..." word at *p (past the quote) into out; returns 0 and
 * advances *p past the closing quote, or -EINVAL. Escapes: \n \r \t \b \a
 * \xHH, and \c for any other c. */
static int dquoted(char **p, char **out)
{
        char *s = *p, *o = *out;

        for (; *s && *s != '"'; s++) {
                if (*s != '\\' || !s[1]) {
                        *o++ = *s;
                        continue;
                }
                s++;
                if (*s == 'x' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
                        *o++ = (char)(hexval(s[1]) * 16 + hexval(s[2]));
                        s += 2;
                } else {
                        *o++ = *s == 'n' ? '\n' : *s == 'r' ? '\r' : *s == 't' ? '\t'
                               : *s == 'b' ? '\b' : *s == 'a' ? '\a' : *s;
                }
        }
        if (*s != '"')
                return -EINVAL;
        *p = s + 1;
        *out = o;
        return 0;
}

/* The same for '...': only \' is an escape. */
static int squoted(char **p, char **out)
{
        char *s = *p, *o = *out;

        for (; *s && *s != '\''; s++) {
                if (*s == '\\' && s[1] == '\'')
                        s++;
                *o++ = *s;
        }
        if (*s != '\'')
                return -EINVAL;
        *p = s + 1;
        *out = o;
        return 0;
}

/*
 * Splits line into words in place (a word is never longer than its
 * source, so it is rewritten over it). A comment or blank line gives 0
 * words. Returns the count, or -EINVAL with the reason in *why.
 */
static int split_words(char *line, char **w, const char **why)
{
        char *p = line;
        int n = 0;

        while (isspace((unsigned char)*p))
                p++;
        if (*p == '#')
                return 0;
        while (*p) {
                char *start = p, *o = p;
                int r = 0;

                if (n == MAX_WORDS) {
                        *why = "too many words";
                        return -EINVAL;
                }
                if (*p == '"' || *p == '\'') {
                        p++;
                        r = *start == '"' ? dquoted(&p, &o) : squoted(&p, &o);
                        if (r == 0 && *p && !isspace((unsigned char)*p))
                                r = -EINVAL;
                } else {
                        while (*p && !isspace((unsigned char)*p))
                                *o++ = *p++;
                }
                if (r < 0) {
                        *why = "an unbalanced quote";
                        return r;
                }
                w[n++] = start;
                if (*p)
                        p++;
                *o = 0;
                while (isspace((unsigned char)*p))
                        p++;
        }
        return n;
}

/* ---- one directive ---- */

static int load_path(struct loader *ld, const char *path, char *err, size_t err_len);

/* Joins w[1..n-1] with blanks into a heap string. */
static char *join(char **w, int n)
{
        size_t len = 1;
        char *s;

        for (int i = 1; i < n; i++)
                len += strlen(w[i]) + 1;
        s = malloc(len);
        if (!s)
                return NULL;
        s[0] = 0;
        for (int i = 1; i < n; i++) {
                if (i > 1)
                        strcat(s, " ");
                strcat(s, w[i]);
        }
        return s;
}

static void warn_noop(struct loader *ld, const struct cfg_def *d, const char *where)
{
        int k = cfg_index(d->name);
        const struct cfg_def *t = cfg_def_target(d);
        char msg[512];

        if (k < 0 || ld->warned[k] || !ld->warn)
                return;
        ld->warned[k] = true;
        snprintf(msg, sizeof(msg), "%s: '%s' has no effect in scree%s%s (a Redis setting, "
                 "accepted; docs/server.md, \"Redis settings\")", where, d->name,
                 t->help ? ": " : "", t->help ? t->help : "");
        ld->warn(ld->warn_ctx, msg);
}

/* `save` in files and flags: the first replaces the default, later ones
 * add their pairs (save "" clears), as in Redis. Returns the value to set
 * (heap) or NULL. */
static char *save_value(struct loader *ld, const char *value)
{
        char cur[CFG_VALUE_MAX], *s;

        if (!ld->save_seen || !*value) {
                ld->save_seen = true;
                return strdup(value);
        }
        if (cfg_get(ld->c, "save", cur, sizeof(cur)) < 0 || !*cur)
                return strdup(value);
        if (asprintf(&s, "%s %s", cur, value) < 0)
                return NULL;
        return s;
}

/* Applies `w[0] w[1]...` (n words) from `where` (file:line, or a flag). */
static int apply(struct loader *ld, char **w, int n, const char *where, char *err, size_t err_len)
{
        const struct cfg_def *d, *t;
        char msg[512], *value;
        int r;

        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                if (!strcasecmp(w[0], refused[i].name)) {
                        cfg_err(err, err_len, "%s: '%s' is not supported: %s", where, w[0],
                                refused[i].why);
                        return -EINVAL;
                }
        }
        if (!strcasecmp(w[0], "include")) {
                if (n == 2)
                        return load_path(ld, w[1], err, err_len);
                cfg_err(err, err_len, "%s: include takes one path", where);
                return -EINVAL;
        }
        d = cfg_def_find(w[0]);
        if (!d) {
                cfg_err(err, err_len, "%s: unknown setting '%s'", where, w[0]);
                return -EINVAL;
        }
        t = cfg_def_target(d);
        if (n < 2 || (n > 2 && !(t->flags & CFG_F_MULTI))) {
                cfg_err(err, err_len, n < 2 ? "%s: a name without a value"
                                            : "%s: '%s' takes one value (quote it if it has blanks)",
                        where, w[0]);
                return -EINVAL;
        }
        value = join(w, n);
        if (value && !strcasecmp(t->name, "save")) {
                char *v = save_value(ld, value);

                free(value);
                value = v;
        }
        if (!value)
                return -ENOMEM;
        r = cfg_set(ld->c, w[0], value, false, msg, sizeof(msg));
        free(value);
        if (r < 0) {
                cfg_err(err, err_len, "%s: %s", where, msg);
                return r;
        }
        if (t->flags & (CFG_F_NOOP | CFG_F_FIXED))
                warn_noop(ld, d, where);
        return 0;
}

/* ---- files ---- */

static int load_one(struct loader *ld, const char *path, char *err, size_t err_len)
{
        FILE *f = fopen(path, "r");
        char *line = NULL, *w[MAX_WORDS], where[4096];
        size_t cap = 0;
        unsigned no = 0;
        int r = 0;

        if (!f) {
                r = -errno;
                cfg_err(err, err_len, "config file %s: %s", path, strerror(errno));
                return r;
        }
        while (r == 0 && getline(&line, &cap, f) >= 0) {
                const char *why = NULL;
                int n = split_words(line, w, &why);

                no++;
                snprintf(where, sizeof(where), "%s:%u", path, no);
                if (n < 0) {
                        cfg_err(err, err_len, "%s: %s", where, why);
                        r = -EINVAL;
                } else if (n > 0) {
                        r = apply(ld, w, n, where, err, err_len);
                }
        }
        if (r == 0 && ferror(f)) {
                r = -EIO;
                cfg_err(err, err_len, "config file %s: read error", path);
        }
        free(line);
        fclose(f);
        return r;
}

/* A file, or with wildcards every file matching, in order (none is fine,
 * as in Redis). A relative path is taken from the current directory. */
static int load_path(struct loader *ld, const char *path, char *err, size_t err_len)
{
        glob_t g;
        int r = 0;

        if (ld->depth >= MAX_INCLUDE_DEPTH) {
                cfg_err(err, err_len, "config file %s: includes nested deeper than %d (a loop?)",
                        path, MAX_INCLUDE_DEPTH);
                return -ELOOP;
        }
        ld->depth++;
        if (!strpbrk(path, "*?[")) {
                r = load_one(ld, path, err, err_len);
        } else if ((r = glob(path, 0, NULL, &g)) == 0) {
                for (size_t i = 0; i < g.gl_pathc && r == 0; i++)
                        r = load_one(ld, g.gl_pathv[i], err, err_len);
                globfree(&g);
        } else {
                r = r == GLOB_NOMATCH ? 0 : -EIO;
                if (r)
                        cfg_err(err, err_len, "config file %s: cannot list the matches", path);
        }
        ld->depth--;
        return r;
}

int cfg_load_file(struct scree_config *c, const char *path, cfg_warn_fn warn, void *warn_ctx,
                  char *err, size_t err_len)
{
        struct loader ld = { .c = c, .warn = warn, .warn_ctx = warn_ctx };

        return load_path(&ld, path, err, err_len);
}

/* ---- flags ---- */

static bool is_flag(const char *a)
{
        return !strncmp(a, "--", 2);
}

/* The flag at argv[*i]: its words into w (w[0] the name, pointing into
 * name), *i advanced past its value(s). Returns the word count, or
 * -EINVAL. */
static int flag_words(int argc, char **argv, int *i, char *name, size_t name_len, char **w,
                      char *err, size_t err_len)
{
        char *a = argv[*i] + 2, *eq = strchr(a, '=');
        const struct cfg_def *d;
        int n = 1;

        snprintf(name, name_len, "%.*s", (int)(eq ? (size_t)(eq - a) : strlen(a)), a);
        w[0] = name;
        d = cfg_def_find(name);
        if (eq) {
                w[n++] = eq + 1;
        } else if (d && (cfg_def_target(d)->flags & CFG_F_MULTI)) {
                while (*i + 1 < argc && !is_flag(argv[*i + 1]) && n < MAX_WORDS)
                        w[n++] = argv[++*i];
                if (n == 1)
                        w[n++] = "";    /* --save alone: save "" */
        } else if (d && cfg_def_target(d)->type == CFG_BOOL && !d->words &&
                   (*i + 1 == argc || is_flag(argv[*i + 1]))) {
                w[n++] = "yes";         /* a bool flag alone: --salvage */
        } else if (*i + 1 < argc) {
                w[n++] = argv[++*i];
        } else {
                cfg_err(err, err_len, "--%s needs a value (see --help)", a);
                return -EINVAL;
        }
        return n;
}

static int parse_flags(struct loader *ld, int argc, char **argv, int i, char *err, size_t err_len)
{
        for (; i < argc; i++) {
                char name[64], where[80], *w[MAX_WORDS];
                int n, r;

                if (!is_flag(argv[i]) || !argv[i][2]) {
                        cfg_err(err, err_len, "unexpected argument '%s' (see --help)", argv[i]);
                        return -EINVAL;
                }
                n = flag_words(argc, argv, &i, name, sizeof(name), w, err, err_len);
                if (n < 0)
                        return n;
                if (!strcmp(name, "config"))
                        continue;       /* read first */
                if (!cfg_def_find(name)) {
                        cfg_err(err, err_len, "unknown flag '--%s' (see --help)", name);
                        return -EINVAL;
                }
                snprintf(where, sizeof(where), "--%s", name);
                r = apply(ld, w, n, where, err, err_len);
                if (r < 0) {
                        /* Flags' errors read without the "--name: " prefix. */
                        size_t k = strlen(where) + 2;

                        if (!strncmp(err, where, strlen(where)) && strlen(err) > k)
                                memmove(err, err + k, strlen(err + k) + 1);
                        return r;
                }
        }
        return 0;
}

/* The file argv[k] names if it is --config FILE or --config=FILE, else
 * NULL. */
static const char *config_flag(int argc, char **argv, int k)
{
        if (!strcmp(argv[k], "--config"))
                return k + 1 < argc ? argv[k + 1] : NULL;
        if (!strncmp(argv[k], "--config=", 9))
                return argv[k] + 9;
        return NULL;
}

const char *cfg_file_arg(int argc, char **argv)
{
        if (argc > 1 && !is_flag(argv[1]))
                return argv[1];
        for (int k = 1; k < argc; k++)
                if (config_flag(argc, argv, k))
                        return config_flag(argc, argv, k);
        return NULL;
}

int cfg_parse_args(struct scree_config *c, int argc, char **argv, cfg_warn_fn warn,
                   void *warn_ctx, char *err, size_t err_len)
{
        struct loader ld = { .c = c, .warn = warn, .warn_ctx = warn_ctx };
        int i = 1, r;

        for (int k = 1; k < argc; k++)
                if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h"))
                        return 1;
        if (argc > 1 && !is_flag(argv[1])) {
                r = load_path(&ld, argv[1], err, err_len);
                if (r < 0)
                        return r;
                i = 2;
        }
        for (int k = i; k < argc; k++) {
                const char *file = config_flag(argc, argv, k);

                if (file && (r = load_path(&ld, file, err, err_len)) < 0)
                        return r;
        }
        return parse_flags(&ld, argc, argv, i, err, err_len);
}

void cfg_usage(FILE *f)
{
        const struct cfg_def *d;

        fprintf(f, "usage: scree [CONFIG-FILE] [--name value | --name=value]...\n"
                   "Settings (also in CONFIG-FILE or --config FILE as `name value` lines, in\n"
                   "redis.conf's syntax; flags win). Sizes: k m g = 1000s, kb mb gb = kib mib\n"
                   "gib = 1024s.\n");
        for (size_t i = 0; (d = cfg_def_at(i)); i++) {
                if (d->flags & CFG_F_REDIS || d->alias_of)
                        continue;
                fprintf(f, "  --%-26s %s", d->name, d->help);
                if (!(d->flags & CFG_F_SECRET))
                        fprintf(f, " (default %s)", *d->dflt ? d->dflt : "none");
                fprintf(f, "%s\n", d->flags & CFG_F_RUNTIME ? " [CONFIG SET]" : "");
        }
        fprintf(f, "  --%-26s %s\n", "config FILE", "read settings from FILE first");
        fprintf(f, "  --%-26s %s\n", "help", "this text");
        fprintf(f, "Redis's settings are accepted too: loglevel and proto-max-bulk-len name\n"
                   "log-level and max-value-bytes; most others have no effect (a warning at\n"
                   "start); TLS, cluster, replication, unix sockets and ACL files are refused\n"
                   "(docs/server.md, \"Redis settings\").\n");
}
