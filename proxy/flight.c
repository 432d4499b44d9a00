/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The collapsing registry (flight.h): 4096 buckets of flights chained by
 * key hash (FNV-1a), 64 mutexes, bucket b guarded by mutex b % 64.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/flight.h"
#include "proxy/object.h"
#include "proxy/worker.h"

#define BUCKETS 4096
#define STRIPES 64

struct px_flight {
        struct px_flight *next;         /* bucket chain */
        uint64_t hash;
        bool published;
        struct px_obj *obj;             /* published: the response (one reference) */
        struct px_wait *waiters;
        size_t key_len;
        char key[];
};

struct px_flights {
        pthread_mutex_t mu[STRIPES];
        struct px_flight *bucket[BUCKETS];
};

static uint64_t fnv1a(const char *p, size_t n)
{
        uint64_t h = 0xcbf29ce484222325ull;

        for (size_t i = 0; i < n; i++)
                h = (h ^ (uint8_t)p[i]) * 0x100000001b3ull;
        return h;
}

static pthread_mutex_t *stripe(struct px_flights *fl, uint64_t hash)
{
        return &fl->mu[(hash % BUCKETS) % STRIPES];
}

struct px_flights *px_flights_new(void)
{
        struct px_flights *fl = calloc(1, sizeof(*fl));

        if (!fl)
                return NULL;
        for (int i = 0; i < STRIPES; i++)
                pthread_mutex_init(&fl->mu[i], NULL);
        return fl;
}

void px_flights_free(struct px_flights *fl)
{
        if (!fl)
                return;
        for (int i = 0; i < STRIPES; i++)
                pthread_mutex_destroy(&fl->mu[i]);
        free(fl);
}

int px_flight_join(struct px_flights *fl, const char *key, size_t len, struct px_wait *wait,
                   struct px_flight **ret_lead, struct px_obj **ret_obj)
{
        uint64_t h = fnv1a(key, len);
        struct px_flight **b = &fl->bucket[h % BUCKETS], *f;
        pthread_mutex_t *mu = stripe(fl, h);

        pthread_mutex_lock(mu);
        for (f = *b; f; f = f->next) {
                if (f->hash != h || f->key_len != len || memcmp(f->key, key, len))
                        continue;
                if (f->published) {
                        *ret_obj = px_obj_ref(f->obj);
                        pthread_mutex_unlock(mu);
                        return PX_JOIN_OBJECT;
                }
                wait->next = f->waiters;
                f->waiters = wait;
                pthread_mutex_unlock(mu);
                return PX_JOIN_WAIT;
        }
        f = malloc(sizeof(*f) + len);
        if (!f) {
                pthread_mutex_unlock(mu);
                return -ENOMEM;
        }
        *f = (struct px_flight){ .next = *b, .hash = h, .key_len = len };
        memcpy(f->key, key, len);
        *b = f;
        pthread_mutex_unlock(mu);
        *ret_lead = f;
        return PX_JOIN_LEAD;
}

static void unlink_locked(struct px_flights *fl, struct px_flight *f)
{
        struct px_flight **p = &fl->bucket[f->hash % BUCKETS];

        while (*p != f)
                p = &(*p)->next;
        *p = f->next;
}

/* Hands every record of list ws to its worker with outcome. */
static void answer(struct px_wait *ws, enum px_flight_outcome outcome, unsigned status,
                   struct px_obj *obj, struct px_worker *self)
{
        while (ws) {
                struct px_wait *next = ws->next;

                ws->outcome = outcome;
                ws->status = status;
                ws->obj = obj ? px_obj_ref(obj) : NULL;
                px_worker_notify(self, ws->w, ws);
                ws = next;
        }
}

void px_flight_publish(struct px_flights *fl, struct px_flight *f, struct px_obj *obj,
                       struct px_worker *self)
{
        pthread_mutex_t *mu = stripe(fl, f->hash);
        struct px_wait *ws;

        pthread_mutex_lock(mu);
        f->published = true;
        f->obj = px_obj_ref(obj);
        ws = f->waiters;
        f->waiters = NULL;
        pthread_mutex_unlock(mu);
        answer(ws, PX_FLIGHT_OBJECT, 0, obj, self);
}

void px_flight_end(struct px_flights *fl, struct px_flight *f)
{
        pthread_mutex_t *mu = stripe(fl, f->hash);

        pthread_mutex_lock(mu);
        unlink_locked(fl, f);
        pthread_mutex_unlock(mu);
        px_obj_unref(f->obj);
        free(f);
}

void px_flight_release(struct px_flights *fl, struct px_flight *f,
                       enum px_flight_outcome outcome, unsigned status, struct px_worker *self)
{
        pthread_mutex_t *mu = stripe(fl, f->hash);
        struct px_wait *ws;

        pthread_mutex_lock(mu);
        unlink_locked(fl, f);
        ws = f->waiters;
        pthread_mutex_unlock(mu);
        answer(ws, outcome, status, NULL, self);
        px_obj_unref(f->obj);
        free(f);
}
