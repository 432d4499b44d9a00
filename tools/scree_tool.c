/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-tool: the offline inspector for a stopped shard's directory
 * (docs/tools.md). Commands:
 *   sst FILE [--entries] [--file-id N]   print and verify one SSTable
 *   wal FILE [--records]                 print one commit-log segment
 *   manifest FILE                        print and verify a shard's manifest
 *   verify DIR                           check every file DIR holds, and the
 *                                        files against DIR/MANIFEST
 * Exit status: 0 all good, 1 corruption found, 2 usage or I/O error (when
 * a directory has both, 1: corruption is the finding that matters).
 *
 * It reads files with plain pread and decodes them with the engine's pure
 * format code only; it never starts a reactor. verify picks a checker per
 * file by name from `kinds` below; a new kind of file needs one line there
 * and a checker. verify reads DIR/MANIFEST first, so each table and
 * segment can be judged against it as start-up would judge it: needed,
 * unreferenced (start-up deletes it), or named but missing. Single-threaded.
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
#include "tools/manifest_check.h"
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
                   "  manifest FILE\n"
                   "      verify a shard's MANIFEST and print its records and the state they\n"
                   "      build (layout, next file id, log segment, each tablet's tables).\n"
                   "  verify DIR\n"
                   "      check every *.sst and *.log file and the MANIFEST in DIR, and the\n"
                   "      files against the manifest (missing or wrong-sized tables, and\n"
                   "      unreferenced ones that start-up deletes); one line per file and a\n"
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

static int cmd_manifest(int argc, char **argv)
{
        const struct tool_manifest_opts o = { .print = true };
        struct tool_report rep;

        if (argc != 1 || argv[0][0] == '-')
                return usage_error("manifest needs exactly one FILE");
        tool_report_init(&rep, argv[0]);
        tool_manifest_check(argv[0], &o, &rep, NULL);
        return exit_of(rep.verdict);
}

/* ---- verify ---- */

struct verify {
        const char *dir;
        unsigned n[TOOL_VERDICT_MAX];
        unsigned skipped, unreferenced, missing;
        char *manifest_path;            /* DIR/MANIFEST */
        bool has_manifest;              /* it is a regular file: manifest_rep holds its verdict */
        struct tool_report manifest_rep;
        bool has_xref;                  /* it verified: files are judged against x */
        struct tool_manifest_xref x;
};

static int check_sst(struct verify *v, const char *path, struct tool_report *rep)
{
        const struct tool_sst_opts o = { .print = false };

        (void)v;
        return tool_sst_check(path, &o, rep);
}

static int check_wal(struct verify *v, const char *path, struct tool_report *rep)
{
        const struct tool_wal_opts o = { .print = false };

        (void)v;
        return tool_wal_check(path, &o, rep);
}

/* The manifest was checked before the walk (verify_load_manifest). */
static int check_manifest(struct verify *v, const char *path, struct tool_report *rep)
{
        *rep = v->manifest_rep;
        rep->path = path;
        return rep->verdict == TOOL_OK ? 0 : -SCREE_ECORRUPT;
}

/* The kinds of file verify knows, by name (fnmatch(3) pattern). A kind with
 * no check is a leftover start-up deletes; `name` says why. */
static const struct kind {
        const char *pattern;
        const char *name;
        int (*check)(struct verify *v, const char *path, struct tool_report *rep);
} kinds[] = {
        { "*.sst", "sstable", check_sst },
        { "*.log", "commit-log segment", check_wal },
        { "MANIFEST", "manifest", check_manifest },
        { "*.tmp", "a temporary file, such as a manifest rewrite cut short", NULL },
};

static const struct kind *kind_of(const char *name)
{
        for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
                if (fnmatch(kinds[i].pattern, name, FNM_PERIOD) == 0)
                        return &kinds[i];
        return NULL;
}

/* Checks a file of kind k: against the manifest first, then its bytes. */
static void verify_kind(struct verify *v, const struct kind *k, const char *name, const char *path,
                        const struct stat *st)
{
        enum tool_ref ref = TOOL_REF_OTHER;
        struct tool_report rep;
        char why[TOOL_TEXT_BYTES];

        tool_report_init(&rep, path);
        if (v->has_xref && st)
                ref = tool_manifest_xref_file(&v->x, name, (uint64_t)st->st_size, &rep, why, sizeof(why));
        if (!k->check || ref == TOOL_REF_UNREFERENCED) {
                printf("%s: UNREFERENCED (%s; start-up deletes it)\n", name, k->check ? why : k->name);
                v->unreferenced++;
                return;
        }
        if (rep.verdict == TOOL_OK)
                k->check(v, path, &rep);
        v->n[rep.verdict]++;
        if (rep.verdict == TOOL_OK)
                printf("%s: OK (%s: %s)\n", name, k->name, rep.note);
        else
                printf("%s: %s at offset %" PRIu64 ": %s\n", name,
                       rep.verdict == TOOL_CORRUPT ? "CORRUPT" : "ERROR", rep.offset, rep.reason);
}

static void verify_file(struct verify *v, const char *name)
{
        const struct kind *k = kind_of(name);
        struct stat st;
        bool found;
        char *path;

        if (asprintf(&path, "%s/%s", v->dir, name) < 0) {
                fprintf(stderr, "scree-tool: %s/%s: out of memory\n", v->dir, name);
                v->n[TOOL_ERROR]++;
                return;
        }
        found = lstat(path, &st) == 0;
        if (found && !S_ISREG(st.st_mode)) {
                printf("%s: SKIPPED (not a regular file)\n", name);
                v->skipped++;
        } else if (!k) {
                printf("%s: SKIPPED (unknown kind of file)\n", name);
                v->skipped++;
        } else {
                verify_kind(v, k, name, path, found ? &st : NULL);
        }
        free(path);
}

/* Checks DIR/MANIFEST before the walk; if it verifies, the walk judges
 * tables and segments against its state. Returns 0 or -ENOMEM. */
static int verify_load_manifest(struct verify *v)
{
        const struct tool_manifest_opts o = { .print = false };
        struct eng_manifest_state st;
        struct stat sb;

        if (asprintf(&v->manifest_path, "%s/MANIFEST", v->dir) < 0) {
                v->manifest_path = NULL;
                return -ENOMEM;
        }
        if (lstat(v->manifest_path, &sb) < 0 || !S_ISREG(sb.st_mode))
                return 0;
        v->has_manifest = true;
        tool_report_init(&v->manifest_rep, v->manifest_path);
        if (tool_manifest_check(v->manifest_path, &o, &v->manifest_rep, &st) < 0)
                return 0;
        if (tool_manifest_xref_init(&v->x, &st) < 0) {
                eng_manifest_state_fini(&st);
                return -ENOMEM;
        }
        v->has_xref = true;
        return 0;
}

/* After the walk: the tables the manifest names that were not there. */
static void verify_missing(struct verify *v)
{
        if (!v->has_xref) {
                printf("%s: files not checked against it\n",
                       v->has_manifest ? "MANIFEST did not verify" : "no MANIFEST");
                return;
        }
        for (size_t i = 0; i < v->x.state.n_tables; i++) {
                const struct eng_manifest_table *t = &v->x.state.tables[i];

                if (v->x.found[i])
                        continue;
                printf("%016" PRIx64 ".sst: MISSING (the manifest names it: tablet %u, %" PRIu64
                       " bytes)\n", t->file_id, t->tablet, t->file_size);
                fprintf(stderr, "scree-tool: %s: names %016" PRIx64 ".sst, which is missing\n",
                        v->manifest_path, t->file_id);
                v->missing++;
        }
}

static int no_dots(const struct dirent *d)
{
        return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

static int cmd_verify(int argc, char **argv)
{
        struct verify v = { .dir = argc ? argv[0] : NULL };
        struct dirent **names;
        int n;

        if (argc != 1 || argv[0][0] == '-')
                return usage_error("verify needs exactly one DIR");
        if ((n = scandir(v.dir, &names, no_dots, alphasort)) < 0) {
                fprintf(stderr, "scree-tool: %s: cannot list: %s\n", v.dir, strerror(errno));
                return EXIT_TROUBLE;
        }
        if (verify_load_manifest(&v) < 0) {
                fprintf(stderr, "scree-tool: %s: out of memory\n", v.dir);
                v.n[TOOL_ERROR]++;
        }
        for (int i = 0; i < n; i++) {
                verify_file(&v, names[i]->d_name);
                free(names[i]);
        }
        free(names);
        verify_missing(&v);
        if (v.has_xref)
                tool_manifest_xref_fini(&v.x);
        free(v.manifest_path);
        printf("verify %s: %d files: %u OK, %u CORRUPT, %u ERROR, %u SKIPPED, %u UNREFERENCED; "
               "%u MISSING\n", v.dir, n, v.n[TOOL_OK], v.n[TOOL_CORRUPT], v.n[TOOL_ERROR], v.skipped,
               v.unreferenced, v.missing);
        return v.n[TOOL_CORRUPT] || v.missing ? EXIT_CORRUPT : v.n[TOOL_ERROR] ? EXIT_TROUBLE : EXIT_GOOD;
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
        if (!strcmp(cmd, "manifest"))
                return cmd_manifest(argc - 2, argv + 2);
        if (!strcmp(cmd, "verify"))
                return cmd_verify(argc - 2, argv + 2);
        return usage_error("unknown command '%s'", cmd);
}
