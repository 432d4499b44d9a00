/* SPDX-License-Identifier: Apache-2.0 */
/* tests/criterion_fix.h: gt() is strict, like lt(); ge() is not. */
#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdbool.h>
#include <stdint.h>

Test(criterion_fix, gt_is_false_on_equal_values)
{
        uint64_t five = 5, six = 6;
        int a = -1, b = -1;
        bool r[6];

        r[0] = CRI_BINOP_T_GT(u64, five, five);
        r[1] = CRI_BINOP_T_GT(u64, five, six);
        r[2] = CRI_BINOP_T_GT(u64, six, five);
        r[3] = CRI_BINOP_T_GT(int, a, b);
        r[4] = CRI_BINOP_T_GE(u64, five, five);
        r[5] = CRI_BINOP_T_LT(u64, five, five);
        cr_assert(eq(int, r[0], 0), "gt(5, 5) must not hold");
        cr_assert(eq(int, r[1], 0));
        cr_assert(eq(int, r[2], 1));
        cr_assert(eq(int, r[3], 0));
        cr_assert(eq(int, r[4], 1));
        cr_assert(eq(int, r[5], 0));
        cr_expect(gt(u64, six, 5));
}
