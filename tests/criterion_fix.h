/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Force-included into every test (tests/meson.build, criterion_dep).
 *
 * Criterion 2.4.1 (Debian 12) defines the tagged gt() of its new asserts,
 * in C, as "not lt" -- that is >=, so cr_expect(gt(u64, n, 0)) passes
 * with n == 0 and a test of "more than" cannot fail on equality. Here gt()
 * is "reference lt actual" instead; tests/base/test_criterion_fix.c checks
 * it.
 */
#ifndef SCREE_TESTS_CRITERION_FIX_H
#define SCREE_TESTS_CRITERION_FIX_H

#ifndef __cplusplus
#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#undef CRI_BINOP_T_GT
#define CRI_BINOP_T_GT(Tag, Actual, Ref) (CRI_BINOP_LT_TAG(Tag, , Ref, Actual))
#endif

#endif
