/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kill -9 crash test's entry point: "writer" or "run" (crash_test.h),
 * and the small option parser both share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/crash/crash_test.h"

/* The argument after "--name", or NULL; *ret_found says if "--name" is there. */
static const char *arg_after(int argc, char **argv, const char *name, bool *ret_found)
{
        *ret_found = false;
        for (int i = 0; i < argc; i++) {
                if (strncmp(argv[i], "--", 2) != 0 || strcmp(argv[i] + 2, name) != 0)
                        continue;
                *ret_found = true;
                return i + 1 < argc ? argv[i + 1] : NULL;
        }
        return NULL;
}

bool crash_arg_u64(int argc, char **argv, const char *name, uint64_t *ret)
{
        bool found;
        const char *s = arg_after(argc, argv, name, &found);
        char *end;
        unsigned long long v;

        if (!found)
                return true;
        if (!s || *s < '0' || *s > '9')
                return false;
        v = strtoull(s, &end, 10);
        if (*end)
                return false;
        *ret = v;
        return true;
}

bool crash_arg_flag(int argc, char **argv, const char *name)
{
        bool found;

        arg_after(argc, argv, name, &found);
        return found;
}

const char *crash_arg_str(int argc, char **argv, const char *name)
{
        bool found;

        return arg_after(argc, argv, name, &found);
}

int main(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "writer") == 0)
                return crash_writer_main(argc - 2, argv + 2);
        if (argc >= 2 && strcmp(argv[1], "run") == 0)
                return crash_driver_main(argc - 2, argv + 2);
        fprintf(stderr, "usage: crash_test run [options] | crash_test writer DIR [options]\n"
                "  see tests/crash/crash_test.h and docs/testing.md\n");
        return CRASH_EXIT_USAGE;
}
