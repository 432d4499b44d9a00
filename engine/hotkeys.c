/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Space-Saving top-k of a tablet's sampled key accesses: see hotkeys.h.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "engine/hotkeys.h"

/* The slot holding key (hash, and the kept bytes equal), or -1. */
static int find(const struct eng_hotkeys *h, uint64_t hash, const void *key, size_t len)
{
        size_t kept = len < ENG_HOT_KEY_BYTES ? len : ENG_HOT_KEY_BYTES;

        for (uint32_t i = 0; i < h->n; i++) {
                const struct eng_hot_slot *s = &h->s[i];

                if (s->hash == hash && s->len == kept && memcmp(s->key, key, kept) == 0)
                        return (int)i;
        }
        return -1;
}

static void set_key(struct eng_hot_slot *s, uint64_t hash, const void *key, size_t len)
{
        s->hash = hash;
        s->len = (uint32_t)(len < ENG_HOT_KEY_BYTES ? len : ENG_HOT_KEY_BYTES);
        s->cut = len > ENG_HOT_KEY_BYTES;
        memcpy(s->key, key, s->len);
}

void eng_hotkeys_add(struct eng_hotkeys *h, const void *key, size_t len)
{
        uint64_t hash = XXH3_64bits(key, len);
        int i = find(h, hash, key, len);
        uint32_t min = 0;

        if (i >= 0) {
                h->s[i].count++;
                return;
        }
        if (h->n < ENG_HOT_SLOTS) {
                struct eng_hot_slot *s = &h->s[h->n++];

                set_key(s, hash, key, len);
                s->count = 1;
                s->err = 0;
                return;
        }
        for (uint32_t k = 1; k < h->n; k++)
                if (h->s[k].count < h->s[min].count)
                        min = k;
        h->s[min].err = h->s[min].count;
        h->s[min].count++;
        set_key(&h->s[min], hash, key, len);
}

void eng_hotkeys_decay(struct eng_hotkeys *h)
{
        uint32_t n = 0;

        for (uint32_t i = 0; i < h->n; i++) {
                struct eng_hot_slot *s = &h->s[i];

                s->count /= 2;
                s->err /= 2;
                if (s->count == 0)
                        continue;
                if (n != i)
                        h->s[n] = *s;
                n++;
        }
        h->n = n;
}

static int by_count(const void *a, const void *b)
{
        const struct eng_hot_slot *x = a, *y = b;

        return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

uint32_t eng_hotkeys_top(const struct eng_hotkeys *h, struct eng_hot_slot *out, uint32_t k)
{
        struct eng_hot_slot all[ENG_HOT_SLOTS];

        memcpy(all, h->s, h->n * sizeof(all[0]));
        qsort(all, h->n, sizeof(all[0]), by_count);
        if (k > h->n)
                k = h->n;
        memcpy(out, all, k * sizeof(all[0]));
        return k;
}
