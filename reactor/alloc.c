/* SPDX-License-Identifier: Apache-2.0 */
/* The allocator's figures; see alloc.h. */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if SCREE_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
#endif

#include "reactor/alloc.h"

#if SCREE_HAVE_JEMALLOC
static uint64_t stat_of(const char *name)
{
        size_t v = 0, sz = sizeof(v);

        if (mallctl(name, &v, &sz, NULL, 0) != 0)
                return 0;
        return v;
}

bool rx_alloc_stats(struct rx_alloc_stats *ret)
{
        uint64_t epoch = 1;
        size_t sz = sizeof(epoch);
        const char *ver = NULL;
        size_t vsz = sizeof(ver);

        memset(ret, 0, sizeof(*ret));
        /* The statistics are a snapshot taken at the last epoch: bump it. */
        if (mallctl("epoch", &epoch, &sz, &epoch, sz) != 0)
                return false;
        ret->allocated = stat_of("stats.allocated");
        ret->active = stat_of("stats.active");
        ret->resident = stat_of("stats.resident");
        ret->mapped = stat_of("stats.mapped");
        if (mallctl("version", &ver, &vsz, NULL, 0) == 0 && ver)
                snprintf(ret->name, sizeof(ret->name), "jemalloc-%.*s", (int)strcspn(ver, "-"), ver);
        else
                snprintf(ret->name, sizeof(ret->name), "jemalloc");
        return true;
}

static void print_cb(void *arg, const char *s)
{
        fputs(s, arg);
}

void rx_alloc_print(FILE *f)
{
        malloc_stats_print(print_cb, f, NULL);
}

int rx_alloc_purge(void)
{
        char cmd[64];

        snprintf(cmd, sizeof(cmd), "arena.%u.purge", (unsigned)MALLCTL_ARENAS_ALL);
        return mallctl(cmd, NULL, NULL, NULL, 0) == 0 ? 0 : -ENOTSUP;
}
#else
bool rx_alloc_stats(struct rx_alloc_stats *ret)
{
        struct mallinfo2 mi = mallinfo2();

        memset(ret, 0, sizeof(*ret));
        snprintf(ret->name, sizeof(ret->name), "libc");
        ret->allocated = mi.uordblks + mi.hblkhd;
        ret->active = ret->allocated;
        ret->resident = mi.arena + mi.hblkhd;
        ret->mapped = ret->resident;
        return ret->allocated > 0;
}

void rx_alloc_print(FILE *f)
{
        fprintf(f, "scree was built without jemalloc: no allocator report\n");
}

int rx_alloc_purge(void)
{
        return malloc_trim(0) >= 0 ? 0 : -ENOTSUP;
}
#endif
