/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scratch directories for tests that touch real files: made under /var/tmp
 * (on disk, so O_DIRECT works, unlike a tmpfs /tmp on some machines) and
 * removed recursively afterwards. Header-only; for tests only.
 */
#ifndef SCREE_TESTS_TMPDIR_H
#define SCREE_TESTS_TMPDIR_H

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <criterion/criterion.h>

/* Makes /var/tmp/scree-test-<tag>-XXXXXX into dir (len bytes); asserts. */
static inline void tmpdir_make(char *dir, size_t len, const char *tag)
{
        snprintf(dir, len, "/var/tmp/scree-test-%s-XXXXXX", tag);
        cr_assert(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
}

static inline int tmpdir_remove_entry(const char *path, const struct stat *st, int flag,
                                      struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        return remove(path);
}

/* Removes dir and everything below it; a no-op for an empty string. */
static inline void tmpdir_remove(const char *dir)
{
        if (dir[0])
                nftw(dir, tmpdir_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
