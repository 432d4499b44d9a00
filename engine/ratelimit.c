/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-partition rate limits: a set-associative table of per-second
 * counters (see ratelimit.h for the contract and its approximations).
 */
#include <errno.h>
#include <stdlib.h>

#include "base/check.h"
#include "engine/ratelimit.h"

_Static_assert(sizeof(struct eng_ratelimit_slot) == 24, "a slot is 24 bytes");

int eng_ratelimit_init(struct eng_ratelimit *rl, uint32_t n_sets)
{
        *rl = (struct eng_ratelimit){ 0 };
        if (n_sets == 0 || (n_sets & (n_sets - 1)) != 0)
                return -EINVAL;
        rl->slots = calloc((size_t)n_sets * ENG_RATELIMIT_WAYS, sizeof(*rl->slots));
        if (!rl->slots)
                return -ENOMEM;
        rl->set_mask = n_sets - 1;
        return 0;
}

void eng_ratelimit_fini(struct eng_ratelimit *rl)
{
        free(rl->slots);
        *rl = (struct eng_ratelimit){ 0 };
}

/* The first slot of token's set (the token is a hash: any of its bits
 * will do). */
static struct eng_ratelimit_slot *set_of(const struct eng_ratelimit *rl, uint64_t token)
{
        return rl->slots + (size_t)((token >> 32) & rl->set_mask) * ENG_RATELIMIT_WAYS;
}

/* token's slot, or NULL. */
static struct eng_ratelimit_slot *find(const struct eng_ratelimit *rl, uint64_t token)
{
        struct eng_ratelimit_slot *set = set_of(rl, token);

        for (uint32_t i = 0; i < ENG_RATELIMIT_WAYS; i++)
                if (set[i].token == token)
                        return &set[i];
        return NULL;
}

static uint32_t ops(const struct eng_ratelimit_slot *s)
{
        return s->n[ENG_RATELIMIT_READ] + s->n[ENG_RATELIMIT_WRITE];
}

/* token's slot, counting second now_s: its own (its counts zeroed if
 * they were of an earlier second), or one taken over -- free, of an
 * earlier second, else the one with the fewest operations. */
static struct eng_ratelimit_slot *slot_get(struct eng_ratelimit *rl, uint64_t token,
                                           uint32_t now_s)
{
        struct eng_ratelimit_slot *set = set_of(rl, token), *s = find(rl, token);

        if (!s) {
                s = &set[0];
                for (uint32_t i = 0; i < ENG_RATELIMIT_WAYS; i++) {
                        if (set[i].token == 0 || set[i].sec != now_s) {
                                s = &set[i];
                                break;
                        }
                        if (ops(&set[i]) < ops(s))
                                s = &set[i];
                }
                *s = (struct eng_ratelimit_slot){ .token = token, .sec = now_s };
        } else if (s->sec != now_s) {
                s->sec = now_s;
                s->n[ENG_RATELIMIT_READ] = s->n[ENG_RATELIMIT_WRITE] = 0;
        }
        return s;
}

bool eng_ratelimit_take(struct eng_ratelimit *rl, uint64_t token, enum eng_ratelimit_kind kind,
                        uint32_t limit, uint32_t now_s)
{
        struct eng_ratelimit_slot *s;

        SCREE_ASSERT(token != 0 && (unsigned)kind < ENG_RATELIMIT_KIND_MAX);
        if (limit == 0)
                return true;
        s = slot_get(rl, token, now_s);
        if (s->n[kind] >= limit)
                return false;
        s->n[kind]++;
        return true;
}

bool eng_ratelimit_has_room(const struct eng_ratelimit *rl, uint64_t token,
                            enum eng_ratelimit_kind kind, uint32_t limit, uint32_t now_s)
{
        const struct eng_ratelimit_slot *s;

        SCREE_ASSERT(token != 0 && (unsigned)kind < ENG_RATELIMIT_KIND_MAX);
        if (limit == 0)
                return true;
        s = find(rl, token);
        return !s || s->sec != now_s || s->n[kind] < limit;
}

uint32_t eng_ratelimit_stamp(struct eng_ratelimit *rl)
{
        if (++rl->stamp == 0)
                rl->stamp = 1;
        return rl->stamp;
}

void eng_ratelimit_take_once(struct eng_ratelimit *rl, uint64_t token,
                             enum eng_ratelimit_kind kind, uint32_t now_s, uint32_t stamp)
{
        struct eng_ratelimit_slot *s;

        SCREE_ASSERT(token != 0 && (unsigned)kind < ENG_RATELIMIT_KIND_MAX && stamp != 0);
        s = slot_get(rl, token, now_s);
        if (s->stamp == stamp)
                return;
        s->stamp = stamp;
        s->n[kind]++;
}

void eng_ratelimit_give_back_once(struct eng_ratelimit *rl, uint64_t token,
                                  enum eng_ratelimit_kind kind, uint32_t sec, uint32_t stamp)
{
        struct eng_ratelimit_slot *s = find(rl, token);

        SCREE_ASSERT(token != 0 && (unsigned)kind < ENG_RATELIMIT_KIND_MAX && stamp != 0);
        if (!s || s->sec != sec || s->stamp == stamp)
                return;
        s->stamp = stamp;
        if (s->n[kind] > 0)
                s->n[kind]--;
}
