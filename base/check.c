/* SPDX-License-Identifier: Apache-2.0 */
/* Assertion failure reporting; see check.h. */
#include <stdio.h>
#include <stdlib.h>

#include "base/check.h"

_Thread_local int check_current_shard = -1;

void check_fail(const char *expr, const char *file, int line)
{
        if (check_current_shard >= 0)
                fprintf(stderr, "scree: assertion failed on shard %d: %s (%s:%d)\n",
                        check_current_shard, expr, file, line);
        else
                fprintf(stderr, "scree: assertion failed off-shard: %s (%s:%d)\n", expr, file, line);
        abort();
}
