/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reports, file reading, file names and escaped bytes for scree-tool; see
 * inspect.h. Single-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "tools/inspect.h"

#define ID_DIGITS 16

void tool_report_init(struct tool_report *rep, const char *path)
{
        memset(rep, 0, sizeof(*rep));
        rep->path = path;
        rep->verdict = TOOL_OK;
}

/* Keeps the first problem (corruption outranks a failure to check) and
 * prints every one to stderr. */
__attribute__((format(printf, 4, 0))) static void record(struct tool_report *rep,
                                                         enum tool_verdict v, uint64_t off,
                                                         const char *fmt, va_list ap)
{
        char text[TOOL_TEXT_BYTES];

        vsnprintf(text, sizeof(text), fmt, ap);
        if (rep->verdict == TOOL_OK || (rep->verdict == TOOL_ERROR && v == TOOL_CORRUPT)) {
                rep->verdict = v;
                rep->offset = off;
                memcpy(rep->reason, text, sizeof(text));
        }
        fprintf(stderr, "scree-tool: %s: offset %llu: %s\n", rep->path, (unsigned long long)off,
                text);
}

int tool_corrupt(struct tool_report *rep, uint64_t off, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        record(rep, TOOL_CORRUPT, off, fmt, ap);
        va_end(ap);
        return -SCREE_ECORRUPT;
}

int tool_fail(struct tool_report *rep, uint64_t off, int err, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        record(rep, TOOL_ERROR, off, fmt, ap);
        va_end(ap);
        return err;
}

void tool_note(struct tool_report *rep, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(rep->note, sizeof(rep->note), fmt, ap);
        va_end(ap);
}

int tool_file_open(struct tool_file *f, const char *path, struct tool_report *rep)
{
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC), r;

        if (fd < 0)
                return tool_fail(rep, 0, -errno, "cannot open: %s", strerror(errno));
        if (fstat(fd, &st) < 0) {
                r = -errno;
                close(fd);
                return tool_fail(rep, 0, r, "cannot stat: %s", strerror(-r));
        }
        if (!S_ISREG(st.st_mode)) {
                close(fd);
                return tool_fail(rep, 0, -EINVAL, "not a regular file");
        }
        f->fd = fd;
        f->size = (uint64_t)st.st_size;
        f->path = path;
        return 0;
}

void tool_file_close(struct tool_file *f)
{
        if (f->fd >= 0)
                close(f->fd);
        f->fd = -1;
}

int tool_file_read(const struct tool_file *f, uint64_t off, void *buf, size_t len,
                   struct tool_report *rep)
{
        size_t done = 0;

        while (done < len) {
                ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return tool_fail(rep, off + done, -errno, "read of %zu bytes: %s",
                                         len - done, strerror(errno));
                if (n == 0)
                        return tool_fail(rep, off + done, -EIO, "file ended early (changed while read)");
                done += (size_t)n;
        }
        return 0;
}

int tool_name_id(const char *path, const char *suffix, uint64_t *ret_id)
{
        const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
        uint64_t id = 0;

        if (strlen(name) != ID_DIGITS + strlen(suffix) || strcmp(name + ID_DIGITS, suffix) != 0)
                return -EINVAL;
        for (int i = 0; i < ID_DIGITS; i++) {
                char c = name[i];
                unsigned d;

                if (c >= '0' && c <= '9')
                        d = (unsigned)(c - '0');
                else if (c >= 'a' && c <= 'f')
                        d = (unsigned)(c - 'a' + 10);
                else if (c >= 'A' && c <= 'F')
                        d = (unsigned)(c - 'A' + 10);
                else
                        return -EINVAL;
                id = id << 4 | d;
        }
        *ret_id = id;
        return 0;
}

void tool_print_bytes(FILE *out, const void *p, size_t len, size_t max)
{
        const unsigned char *b = p;
        size_t n = len < max ? len : max;

        fputc('"', out);
        for (size_t i = 0; i < n; i++) {
                if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '"' && b[i] != '\\')
                        fputc(b[i], out);
                else
                        fprintf(out, "\\x%02x", b[i]);
        }
        fputc('"', out);
        if (n < len)
                fputs("...", out);
}
