/* SPDX-License-Identifier: Apache-2.0 */
#include "perf/keydist.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "perf/rng.h"

static const char *const names[KEYDIST_MAX] = {
        [KEYDIST_UNIFORM] = "uniform",
        [KEYDIST_ZIPFIAN] = "zipfian",
        [KEYDIST_LATEST] = "latest",
        [KEYDIST_SEQUENTIAL] = "sequential",
        [KEYDIST_GAUSSIAN] = "gaussian",
};

const char *keydist_name(enum keydist_kind k)
{
        return k >= 0 && k < KEYDIST_MAX ? names[k] : "?";
}

enum keydist_kind keydist_parse(const char *s)
{
        for (int k = 0; k < KEYDIST_MAX; k++)
                if (strcmp(s, names[k]) == 0)
                        return (enum keydist_kind)k;
        return KEYDIST_INVALID;
}

double keydist_unit(uint64_t *rng)
{
        /* the top 53 bits: every double in [0, 1) on a 2^-53 grid */
        return (double)(xorshift64s(rng) >> 11) * 0x1.0p-53;
}

/* A bijective 64-bit mix (splitmix64's step): scrambles zipf ranks. The
 * added constant keeps rank 0 -- the hottest -- away from item 0, which the
 * finalizer alone would map to itself. */
static uint64_t mix64(uint64_t x)
{
        x += UINT64_C(0x9e3779b97f4a7c15);
        x ^= x >> 30;
        x *= UINT64_C(0xbf58476d1ce4e5b9);
        x ^= x >> 27;
        x *= UINT64_C(0x94d049bb133111eb);
        x ^= x >> 31;
        return x;
}

static void zipf_init(struct keydist *d, double theta)
{
        double zeta2 = 1.0 + pow(0.5, theta);
        double zetan = 0.0;

        /* smallest terms first, so the sum loses the least precision */
        for (uint64_t i = d->n; i >= 1; i--)
                zetan += 1.0 / pow((double)i, theta);
        d->theta = theta;
        d->zetan = zetan;
        d->alpha = 1.0 / (1.0 - theta);
        d->half_pow_theta = pow(0.5, theta);
        d->eta = d->n > 1 ? (1.0 - pow(2.0 / (double)d->n, 1.0 - theta)) / (1.0 - zeta2 / zetan)
                          : 0.0;
}

int keydist_init(struct keydist *d, enum keydist_kind k, uint64_t n, double theta)
{
        if (k < 0 || k >= KEYDIST_MAX || n == 0)
                return -EINVAL;
        if ((k == KEYDIST_ZIPFIAN || k == KEYDIST_LATEST) && !(theta > 0.0 && theta < 1.0))
                return -EINVAL;
        memset(d, 0, sizeof(*d));
        d->kind = k;
        d->n = n;
        d->sigma = (double)n / 8.0;
        if (k == KEYDIST_ZIPFIAN || k == KEYDIST_LATEST)
                zipf_init(d, theta);
        return 0;
}

/* A zipf rank in [0, n): rank 0 the most popular. */
static uint64_t zipf_rank(const struct keydist *d, uint64_t *rng)
{
        double u = keydist_unit(rng);
        double uz = u * d->zetan;
        double r;

        if (d->n == 1 || uz < 1.0)
                return 0;
        if (uz < 1.0 + d->half_pow_theta)
                return 1;
        r = (double)d->n * pow(d->eta * u - d->eta + 1.0, d->alpha);
        return r >= (double)d->n ? d->n - 1 : (uint64_t)r;
}

static uint64_t gaussian(const struct keydist *d, uint64_t *rng)
{
        double mean = (double)d->n / 2.0;

        for (int tries = 0; tries < 64; tries++) {
                double u1 = 1.0 - keydist_unit(rng);    /* (0, 1]: log() finite */
                double u2 = keydist_unit(rng);
                double x = mean + d->sigma * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);

                if (x >= 0.0 && x < (double)d->n)
                        return (uint64_t)x;
        }
        return d->n / 2;        /* only with an absurd sigma */
}

uint64_t keydist_next(struct keydist *d, uint64_t *rng, uint64_t live)
{
        uint64_t i;

        switch (d->kind) {
        case KEYDIST_ZIPFIAN:
                return mix64(zipf_rank(d, rng)) % d->n;
        case KEYDIST_LATEST:
                if (live == 0)
                        live = 1;
                return live - 1 - zipf_rank(d, rng) % live;
        case KEYDIST_SEQUENTIAL:
                i = d->cursor;
                d->cursor = i + 1 == d->n ? 0 : i + 1;
                return i;
        case KEYDIST_GAUSSIAN:
                return gaussian(d, rng);
        case KEYDIST_UNIFORM:
        default:
                return xorshift64s(rng) % d->n;
        }
}

static const struct ycsb_mix mixes[] = {
        { 'A', { [YCSB_READ] = 50, [YCSB_UPDATE] = 50 }, KEYDIST_ZIPFIAN },
        { 'B', { [YCSB_READ] = 95, [YCSB_UPDATE] = 5 }, KEYDIST_ZIPFIAN },
        { 'C', { [YCSB_READ] = 100 }, KEYDIST_ZIPFIAN },
        { 'D', { [YCSB_READ] = 95, [YCSB_INSERT] = 5 }, KEYDIST_LATEST },
        { 'E', { [YCSB_SCAN] = 95, [YCSB_INSERT] = 5 }, KEYDIST_ZIPFIAN },
        { 'F', { [YCSB_READ] = 50, [YCSB_RMW] = 50 }, KEYDIST_ZIPFIAN },
};

const struct ycsb_mix *ycsb_mix_get(char c)
{
        if (c >= 'a' && c <= 'z')
                c = (char)(c - 'a' + 'A');
        for (size_t i = 0; i < sizeof(mixes) / sizeof(mixes[0]); i++)
                if (mixes[i].name == c)
                        return &mixes[i];
        return NULL;
}

enum ycsb_op ycsb_next_op(const struct ycsb_mix *m, uint64_t *rng)
{
        unsigned r = (unsigned)(xorshift64s(rng) % 100u);

        for (int op = 0; op < YCSB_OP_MAX; op++) {
                if (r < m->pct[op])
                        return (enum ycsb_op)op;
                r -= m->pct[op];
        }
        return YCSB_READ;       /* unreachable: every mix sums to 100 */
}

const char *ycsb_op_name(enum ycsb_op op)
{
        static const char *const n[YCSB_OP_MAX] = { "read", "update", "insert", "scan", "rmw" };

        return op >= 0 && op < YCSB_OP_MAX ? n[op] : "?";
}
