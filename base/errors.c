/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree_strerror(): one table for project codes (generated from the X-macro in
 * scree_errors.h), strerror for the rest. Thread-safe: strerrordesc_np returns
 * static text, unlike strerror().
 */
#include <string.h>

#include <scree/scree_errors.h>

const char *scree_strerror(int err)
{
        const char *s;

        if (err < 0)
                err = -err;
        switch (err) {
#define SCREE_ERRNO_CASE(name, value, text) \
        case SCREE_##name:                  \
                return text;
                SCREE_ERRNO_MAP(SCREE_ERRNO_CASE)
#undef SCREE_ERRNO_CASE
        default:
                break;
        }
        s = strerrordesc_np(err);
        return s ? s : "unknown error";
}
