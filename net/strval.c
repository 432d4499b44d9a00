/* SPDX-License-Identifier: Apache-2.0 */
/* INCRBYFLOAT's numbers and GETRANGE's indexes; see strval.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/strval.h"

int net_ld_parse(const char *s, size_t len, long double *ret)
{
        char buf[NET_LD_MAX];
        char *end;
        long double v;

        if (len == 0 || len >= sizeof(buf) || isspace((unsigned char)s[0]))
                return -EINVAL;
        memcpy(buf, s, len);
        buf[len] = 0;
        errno = 0;
        v = strtold(buf, &end);
        if ((size_t)(end - buf) != len || isnan(v) || (errno == ERANGE && (isinf(v) || v == 0)))
                return -EINVAL;
        *ret = v;
        return 0;
}

int net_ld_format(char *buf, long double v)
{
        int n;

        if (!isfinite(v))
                return -EINVAL;
        n = snprintf(buf, NET_LD_MAX, "%.17Lf", v);
        if (n < 0 || n >= NET_LD_MAX)
                return -EINVAL;
        if (strchr(buf, '.')) {
                while (buf[n - 1] == '0')
                        n--;
                if (buf[n - 1] == '.')
                        n--;
        }
        if (n == 2 && buf[0] == '-' && buf[1] == '0') {
                buf[0] = '0';
                n = 1;
        }
        buf[n] = 0;
        return n;
}

bool net_range_clamp(int64_t start, int64_t end, size_t len, size_t *ret_off, size_t *ret_n)
{
        int64_t n = (int64_t)len;

        if (n == 0 || (start < 0 && end < 0 && start > end))
                return false;
        if (start < 0)
                start += n;
        if (end < 0)
                end += n;
        if (start < 0)
                start = 0;
        if (end < 0)
                end = 0;
        if (end >= n)
                end = n - 1;
        if (start > end)
                return false;
        *ret_off = (size_t)start;
        *ret_n = (size_t)(end - start + 1);
        return true;
}
