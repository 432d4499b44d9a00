/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Varints (base/varint.h): a table of values with their exact encodings,
 * need-more-input on every truncation, and rejection of overlong or
 * overflowing encodings. Plus checksum sanity (base/checksum.h).
 */
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <criterion/parameterized.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/varint.h"

TestSuite(varint, .timeout = 10);

struct vcase {
        uint64_t v;
        unsigned n;
        uint8_t bytes[VARINT_MAX_BYTES];
};

ParameterizedTestParameters(varint, encodes_and_decodes_exactly)
{
        static struct vcase cases[] = {
                { 0, 1, { 0x00 } },
                { 1, 1, { 0x01 } },
                { 127, 1, { 0x7f } },
                { 128, 2, { 0x80, 0x01 } },
                { 300, 2, { 0xac, 0x02 } },
                { 16383, 2, { 0xff, 0x7f } },
                { 16384, 3, { 0x80, 0x80, 0x01 } },
                { UINT32_MAX, 5, { 0xff, 0xff, 0xff, 0xff, 0x0f } },
                { UINT64_MAX, 10, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
        };

        return cr_make_param_array(struct vcase, cases, sizeof(cases) / sizeof(cases[0]));
}

ParameterizedTest(struct vcase *c, varint, encodes_and_decodes_exactly)
{
        uint8_t buf[VARINT_MAX_BYTES];
        uint64_t v = 0;

        cr_assert(eq(u32, varint_size_u64(c->v), c->n));
        cr_assert(eq(u32, varint_put_u64(buf, c->v), c->n));
        cr_assert(eq(int, memcmp(buf, c->bytes, c->n), 0));
        cr_assert(eq(i64, varint_get_u64(buf, c->n, &v), (int64_t)c->n));
        cr_assert(eq(u64, v, c->v));
        for (unsigned cut = 0; cut < c->n; cut++)
                cr_assert(eq(i64, varint_get_u64(buf, cut, &v), 0), "cut at %u must ask for more", cut);
}

Test(varint, rejects_overlong_and_overflowing_encodings)
{
        uint8_t eleven[11] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
        uint8_t overflow[10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
        uint64_t v = 7;

        cr_expect(eq(i64, varint_get_u64(eleven, sizeof(eleven), &v), -SCREE_ECORRUPT));
        cr_expect(eq(i64, varint_get_u64(overflow, sizeof(overflow), &v), -SCREE_ECORRUPT));
        cr_expect(eq(u64, v, 7), "output written on failure");
}

Test(varint, checksum_depends_on_bytes_and_seed)
{
        const char a[] = "scree", b[] = "scref";

        cr_expect(eq(u64, checksum64(a, 5, 1), checksum64(a, 5, 1)));
        cr_expect(ne(u64, checksum64(a, 5, 1), checksum64(b, 5, 1)));
        cr_expect(ne(u64, checksum64(a, 5, 1), checksum64(a, 5, 2)));
}
