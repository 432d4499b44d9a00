/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-tool: the offline inspector for a stopped shard's directory
 * (docs/tools.md). Commands:
 *   sst FILE [--entries] [--file-id N]   print and verify one SSTable
 *   wal FILE [--records]                 print one commit-log segment
 *   verify DIR                           check every file DIR holds
 * Exit status: 0 all good, 1 corruption found, 2 usage or I/O error (when
 * a directory has both, 1: corruption is the finding that matters).
 *
 * It reads files with plain pread and decodes them with the engine's pure
 * format code only; it never starts a reactor. verify picks a checker per
 * file by name from `kinds` below; a new kind of file needs one line there
 * and a checker. Single-threaded.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <scree/scree_errors.h>

#include "tools/inspect.h"
#include "tools/sst_check.h"
#include "tools/wal_check.h"

enum {
        EXIT_GOOD = 0,
        EXIT_CORRUPT = 1,
        EXIT_TROUBLE = 2,       /* usage or I/O error */
};

static void usage(FILE *f)
{
        fprintf(f, "usage: scree-tool COMMAND ARGS\n"
                   "  sst FILE [--entries] [--file-id N]\n"
                   "      verify an SSTable and print its footer, properties and index;\n"
                   "      --entries prints every entry too. The file id seeds the checksums:\n"
                   "      it comes from the name <16 hex digits>.sst unless --file-id gives it\n"
                   "      (decimal, 0x-prefixed hex, or 16 hex digits as in a file name).\n"
                   "  wal FILE [--records]\n"
                   "      print a commit-log segment's header and how it ends (clean end,\n"
                   "      torn tail, or corruption and what follows); --records prints\n"
                   "      every record.\n"
                   "  verify DIR\n"
                   "      check every *.sst and *.log file in DIR; one line per file and a\n"
                   "      summary. Files of other kinds are listed as skipped.\n"
                   "Exit status: 0 all good, 1 corruption found, 2 usage or I/O error.\n");
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "scree-tool: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, " (see --help)\n");
        return EXIT_TROUBLE;
}

static int exit_of(enum tool_verdict v)
{
        return v == TOOL_OK ? EXIT_GOOD : v == TOOL_CORRUPT ? EXIT_CORRUPT : EXIT_TROUBLE;
}

/* --file-id: decimal, 0x-prefixed hex, or the 16 hex digits of a file name. */
static int parse_file_id(const char *v, uint64_t *ret)
{
        int base = strlen(v) == 16 ? 16 : 10;
        char *end;

        if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
                v += 2;
                base = 16;
        }
        if (!*v || *v == '-' || *v == '+')
                return -EINVAL;
        errno = 0;
        *ret = strtoull(v, &end, base);
        return errno || *end ? -EINVAL : 0;
}

static int cmd_sst(int argc, char **argv)
{
        struct tool_sst_opts o = { .print = true };
        struct tool_report rep;
        const char *path = NULL;

        for (int i = 0; i < argc; i++) {
                if (!strcmp(argv[i], "--entries")) {
                        o.entries = true;
                } else if (!strcmp(argv[i], "--file-id")) {
                        if (i + 1 == argc || parse_file_id(argv[++i], &o.file_id) < 0)
                                return usage_error("--file-id needs a number, got '%s'",
                                                   i < argc ? argv[i] : "");
                        o.has_file_id = true;
                } else if (argv[i][0] == '-' || path) {
                        return usage_error("sst: unexpected argument '%s'", argv[i]);
                } else {
                        path = argv[i];
                }
        }
        if (!path)
                return usage_error("sst needs a FILE");
        tool_report_init(&rep, path);
        tool_sst_check(path, &o, &rep);
        return exit_of(rep.verdict);
}

static int cmd_wal(int argc, char **argv)
{
        struct tool_wal_opts o = { .print = true };
        struct tool_report rep;
        const char *path = NULL;

        for (int i = 0; i < argc; i++) {
                if (!strcmp(argv[i], "--records"))
                        o.records = true;
                else if (argv[i][0] == '-' || path)
                        return usage_error("wal: unexpected argument '%s'", argv[i]);
                else
                        path = argv[i];
        }
        if (!path)
                return usage_error("wal needs a FILE");
        tool_report_init(&rep, path);
        tool_wal_check(path, &o, &rep);
        return exit_of(rep.verdict);
}

/* ---- verify ---- */

static int check_sst(const char *path, struct tool_report *rep)
{
        const struct tool_sst_opts o = { .print = false };

        return tool_sst_check(path, &o, rep);
}

static int check_wal(const char *path, struct tool_report *rep)
{
        const struct tool_wal_opts o = { .print = false };

        return tool_wal_check(path, &o, rep);
}

/* The kinds of file verify knows, by name (fnmatch(3) pattern). */
static const struct kind {
        const char *pattern;
        const char *name;
        int (*check)(const char *path, struct tool_report *rep);
} kinds[] = {
        { "*.sst", "sstable", check_sst },
        { "*.log", "commit-log segment", check_wal },
};

struct tally {
        unsigned n[TOOL_VERDICT_MAX];
        unsigned skipped;
};

static const struct kind *kind_of(const char *name)
{
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (fnmatch(kinds[i].pattern, name, FNM_PERIOD) == 0)
                        return &kinds[i];
        return NULL;
}

static void verify_file(const char *dir, const char *name, struct tally *t)
{
        const struct kind *k = kind_of(name);
        struct tool_report rep;
        struct stat st;
        char *path;

        if (asprintf(&path, "%s/%s", dir, name) < 0) {
                fprintf(stderr, "scree-tool: %s/%s: out of memory\n", dir, name);
                t->n[TOOL_ERROR]++;
                return;
        }
        if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
                printf("%s: SKIPPED (not a regular file)\n", name);
                t->skipped++;
        } else if (!k) {
                printf("%s: SKIPPED (unknown kind of file)\n", name);
                t->skipped++;
        } else {
                tool_report_init(&rep, path);
                k->check(path, &rep);
                t->n[rep.verdict]++;
                if (rep.verdict == TOOL_OK)
                        printf("%s: OK (%s: %s)\n", name, k->name, rep.note);
                else
                        printf("%s: %s at offset %" PRIu64 ": %s\n", name,
                               rep.verdict == TOOL_CORRUPT ? "CORRUPT" : "ERROR", rep.offset,
                               rep.reason);
        }
        free(path);
}

static int no_dots(const struct dirent *d)
{
        return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

static int cmd_verify(int argc, char **argv)
{
        struct tally t = { 0 };
        struct dirent **names;
        int n;

        if (argc != 1 || argv[0][0] == '-')
                return usage_error("verify needs exactly one DIR");
        if ((n = scandir(argv[0], &names, no_dots, alphasort)) < 0) {
                fprintf(stderr, "scree-tool: %s: cannot list: %s\n", argv[0], strerror(errno));
                return EXIT_TROUBLE;
        }
        for (int i = 0; i < n; i++) {
                verify_file(argv[0], names[i]->d_name, &t);
                free(names[i]);
        }
        free(names);
        printf("verify %s: %d files: %u OK, %u CORRUPT, %u ERROR, %u SKIPPED\n", argv[0], n,
               t.n[TOOL_OK], t.n[TOOL_CORRUPT], t.n[TOOL_ERROR], t.skipped);
        return t.n[TOOL_CORRUPT] ? EXIT_CORRUPT : t.n[TOOL_ERROR] ? EXIT_TROUBLE : EXIT_GOOD;
}

int main(int argc, char **argv)
{
        const char *cmd = argc > 1 ? argv[1] : NULL;

        if (!cmd) {
                usage(stderr);
                return EXIT_TROUBLE;
        }
        if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
                usage(stdout);
                return EXIT_GOOD;
        }
        if (!strcmp(cmd, "sst"))
                return cmd_sst(argc - 2, argv + 2);
        if (!strcmp(cmd, "wal"))
                return cmd_wal(argc - 2, argv + 2);
        if (!strcmp(cmd, "verify"))
                return cmd_verify(argc - 2, argv + 2);
        return usage_error("unknown command '%s'", cmd);
}
