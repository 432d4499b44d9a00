/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Glob matching (see glob.h). The classic two-cursor walk: on a mismatch
 * after a `*`, retry with the `*` swallowing one more byte. A class is
 * judged by class_match, which also says where the class ends; an
 * unterminated `[` matches like the rest of the pattern being a class.
 */
#include <ctype.h>

#include "net/glob.h"

static unsigned char fold(unsigned char c, bool nocase)
{
        return nocase ? (unsigned char)tolower(c) : c;
}

/* Matches c against the class starting after '[' at pat[*pi]; advances
 * *pi past the closing ']' (or to plen). */
static bool class_match(const char *pat, size_t plen, size_t *pi, unsigned char c, bool nocase)
{
        size_t i = *pi;
        bool neg = false, hit = false;

        if (i < plen && pat[i] == '^') {
                neg = true;
                i++;
        }
        while (i < plen && pat[i] != ']') {
                unsigned char lo = (unsigned char)pat[i];

                if (lo == '\\' && i + 1 < plen) {
                        lo = (unsigned char)pat[++i];
                        hit |= fold(lo, nocase) == fold(c, nocase);
                } else if (i + 2 < plen && pat[i + 1] == '-' && pat[i + 2] != ']') {
                        unsigned char hi = (unsigned char)pat[i + 2], x = fold(c, nocase);
                        unsigned char a = fold(lo, nocase), b = fold(hi, nocase);

                        if (a > b) {
                                unsigned char t = a;

                                a = b;
                                b = t;
                        }
                        hit |= x >= a && x <= b;
                        i += 2;
                } else {
                        hit |= fold(lo, nocase) == fold(c, nocase);
                }
                i++;
        }
        *pi = i < plen ? i + 1 : plen;
        return hit != neg;
}

/* One pattern element against s[si]; advances *pi past it. */
static bool elem_match(const char *pat, size_t plen, size_t *pi, unsigned char c, bool nocase)
{
        size_t i = *pi;

        if (pat[i] == '?') {
                *pi = i + 1;
                return true;
        }
        if (pat[i] == '[') {
                *pi = i + 1;
                return class_match(pat, plen, pi, c, nocase);
        }
        if (pat[i] == '\\' && i + 1 < plen)
                i++;
        *pi = i + 1;
        return fold((unsigned char)pat[i], nocase) == fold(c, nocase);
}

bool net_glob_match(const char *pat, size_t plen, const char *s, size_t slen, bool nocase)
{
        size_t pi = 0, si = 0, star_p = 0, star_s = 0;
        bool have_star = false;

        while (si < slen) {
                if (pi < plen && pat[pi] == '*') {
                        while (pi < plen && pat[pi] == '*')
                                pi++;
                        if (pi == plen)
                                return true;
                        have_star = true;
                        star_p = pi;
                        star_s = si;
                        continue;
                }
                if (pi < plen) {
                        size_t next = pi;

                        if (elem_match(pat, plen, &next, (unsigned char)s[si], nocase)) {
                                pi = next;
                                si++;
                                continue;
                        }
                }
                if (!have_star)
                        return false;
                pi = star_p;
                si = ++star_s;
        }
        while (pi < plen && pat[pi] == '*')
                pi++;
        return pi == plen;
}
