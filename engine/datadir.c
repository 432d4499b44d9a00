/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data directory's lock and layout look-up; see datadir.h.
 *
 * A LOCK file removed by an undo can race with a process that opened it
 * just before: that process's flock then lands on a file no longer in the
 * directory, while a third creates a new LOCK and locks that. So after
 * its flock succeeds, eng_datadir_lock checks that the path still names
 * the file it locked, and starts over if not (LevelDB keeps its LOCK for
 * ever instead; we remove it so that a refused start leaves nothing).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "engine/datadir.h"

/* Starts over after losing a race with an undo (see above); each lost
 * race needs another process's whole refused start, so a few suffice. */
#define LOCK_ATTEMPTS 16

static pid_t pid_parse(const char *buf, size_t len)
{
        long pid = 0;

        for (size_t i = 0; i < len && buf[i] >= '0' && buf[i] <= '9' && pid < 1000000000; i++)
                pid = pid * 10 + (buf[i] - '0');
        return (pid_t)pid;
}

static pid_t holder_of(int fd)
{
        char buf[32];
        ssize_t n = pread(fd, buf, sizeof(buf), 0);

        return n > 0 ? pid_parse(buf, (size_t)n) : 0;
}

/* The PID first, then the cut: a reader never sees the file empty, and
 * leading digits always parse to one whole PID. */
static int pid_write(int fd)
{
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());

        errno = 0;
        if (pwrite(fd, buf, (size_t)n, 0) != n || ftruncate(fd, n) < 0)
                return errno ? -errno : -EIO;
        return 0;
}

/* Keeps LOCK's old bytes for an undo; a file too big to keep is never put
 * back (scree writes a dozen bytes). */
static void save_old(struct eng_datadir_lock *l)
{
        struct stat st;
        ssize_t n;

        l->saved_len = SIZE_MAX;
        if (fstat(l->fd, &st) < 0 || st.st_size > (off_t)sizeof(l->saved))
                return;
        n = pread(l->fd, l->saved, sizeof(l->saved), 0);
        if (n == st.st_size)
                l->saved_len = (size_t)n;
}

/* Opens (or creates) LOCK. Returns the fd, or -errno. */
static int lock_open(struct eng_datadir_lock *l)
{
        int fd = open(l->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);

        l->made_file = fd >= 0;
        if (fd < 0 && errno == EEXIST)
                fd = open(l->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

/* Whether the path still names the file fd locked. */
static bool lock_is_current(const struct eng_datadir_lock *l)
{
        struct stat a, b;

        return fstat(l->fd, &a) == 0 && stat(l->path, &b) == 0 && a.st_dev == b.st_dev &&
               a.st_ino == b.st_ino;
}

/* One attempt. Returns 0 (held), 1 (lost a race: try again), or <0. */
static int lock_try(struct eng_datadir_lock *l, pid_t *ret_holder)
{
        if (mkdir(l->dir, 0755) == 0)
                l->made_dir = true;
        else if (errno != EEXIST)
                return -errno;
        l->fd = lock_open(l);
        if (l->fd == -ENOENT)
                return 1;       /* dir removed by an undo in between */
        if (l->fd < 0)
                return l->fd;
        if (flock(l->fd, LOCK_EX | LOCK_NB) < 0) {
                int r = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;

                if (ret_holder)
                        *ret_holder = holder_of(l->fd);
                close(l->fd);   /* a LOCK we made is the holder's now */
                l->fd = -1;
                return r;
        }
        if (!lock_is_current(l)) {
                close(l->fd);
                l->fd = -1;
                return 1;
        }
        return 0;
}

int eng_datadir_lock(struct eng_datadir_lock *l, const char *dir, pid_t *ret_holder)
{
        int r = 1;

        memset(l, 0, sizeof(*l));
        l->fd = -1;
        if (snprintf(l->dir, sizeof(l->dir), "%s", dir) >= (int)sizeof(l->dir) ||
            snprintf(l->path, sizeof(l->path), "%s/%s", dir, ENG_DATADIR_LOCK_NAME) >=
                    (int)sizeof(l->path))
                return -ENAMETOOLONG;
        for (int i = 0; i < LOCK_ATTEMPTS && r == 1; i++)
                r = lock_try(l, ret_holder);
        if (r == 1)
                r = -EWOULDBLOCK;
        if (r == 0) {
                save_old(l);
                r = pid_write(l->fd);
                if (r == 0)
                        return 0;
                eng_datadir_unlock(l, true);
                return r;
        }
        if (l->made_dir)
                (void)rmdir(l->dir);    /* only if empty: another process may have filled it */
        return r;
}

void eng_datadir_unlock(struct eng_datadir_lock *l, bool undo)
{
        if (l->fd < 0)
                return;
        /* Still holding the lock, so no one else is changing LOCK. */
        if (undo && l->made_file) {
                (void)unlink(l->path);
        } else if (undo && l->saved_len != SIZE_MAX) {
                if (pwrite(l->fd, l->saved, l->saved_len, 0) == (ssize_t)l->saved_len)
                        (void)!ftruncate(l->fd, (off_t)l->saved_len);
        }
        close(l->fd);
        l->fd = -1;
        if (undo && l->made_dir)
                (void)rmdir(l->dir);
}

/* Reads the whole file at path into *ret_buf (caller frees). */
static int read_all(const char *path, void **ret_buf, size_t *ret_len)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        size_t cap = 64 * 1024, len = 0;
        char *buf = NULL;
        int r = 0;

        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? -SCREE_ENOTFOUND : -errno;
        for (;;) {
                ssize_t n;

                if (!buf || len == cap) {
                        char *nb = realloc(buf, buf ? cap *= 2 : cap);

                        if (!nb) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = nb;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : 0;
                        break;
                }
                len += (size_t)n;
        }
        close(fd);
        if (r < 0) {
                free(buf);
                return r;
        }
        *ret_buf = buf;
        *ret_len = len;
        return 0;
}

int eng_datadir_layout_read(const char *dir, struct eng_manifest_layout *ret_layout)
{
        struct eng_manifest_reader rd;
        struct eng_manifest_state st;
        char path[4096];
        size_t len = 0;
        void *buf = NULL;
        int r;

        if (snprintf(path, sizeof(path), "%s/MANIFEST", dir) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        r = read_all(path, &buf, &len);
        if (r < 0)
                return r;
        r = eng_manifest_read(&rd, buf, len, &st);
        free(buf);
        if (r < 0)
                return r;
        *ret_layout = st.layout;
        eng_manifest_state_fini(&st);
        return 0;
}

void eng_datadir_remove_made(const char *path)
{
        DIR *d = opendir(path);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d)))
                if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                        (void)unlinkat(dirfd(d), de->d_name, 0);
        closedir(d);
        (void)rmdir(path);
}
