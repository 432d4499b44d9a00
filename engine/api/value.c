/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Values handed to the caller (scree.h: scree_get_value, get completions).
 * A small one is copied, once, by the shard. A large one (API_PIN_BYTES or
 * more) is not copied at all: the value points into the engine's memory
 * -- the memtable entry or the cached block it was found in -- which the
 * shard keeps for it (a memtable reference, a block pin); scree_value_free
 * sends the references back to that shard in a message, which releases
 * them there (the engine's structures are the shard's alone) and frees
 * the value. A proxy serving 100 KiB objects then writes them to its
 * sockets straight from the engine's cache.
 *
 * The database counts the pinned values its caller holds and those on
 * their way back: scree_close refuses (-EBUSY) while the caller holds one,
 * and waits for the others to arrive.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "engine/api/req.h"

struct api_pin {
        struct rx_alien_req ar;
        struct scree_db *db;
        unsigned shard;
        struct eng_memtable *mt;
        struct eng_cached_block *block;
        scree_value *v;
};

scree_value *api_value_new(struct scree_db *db, struct rx_loop *loop, struct eng_get *g)
{
        bool pin = g->value_len >= API_PIN_BYTES && loop && (g->mt || g->block);
        scree_value *v = malloc(sizeof(*v) + (pin ? sizeof(struct api_pin) : g->value_len));

        if (!v)
                return NULL;
        v->len = g->value_len;
        v->expiry_ms = g->expiry_ms;
        v->pin = NULL;
        if (!pin) {
                memcpy(v->data, g->value, g->value_len);
                v->ptr = v->data;
                return v;
        }
        v->pin = (struct api_pin *)(void *)v->data;
        *v->pin = (struct api_pin){ .db = db, .shard = rx_loop_shard_id(loop), .mt = g->mt,
                                    .block = g->block, .v = v };
        v->ptr = g->value;
        g->mt = NULL;           /* the value holds them now */
        g->block = NULL;
        atomic_fetch_add_explicit(&db->pins_held, 1, memory_order_relaxed);
        return v;
}

/* On the value's shard: the engine's references go back. */
static void pin_release_run(struct rx_loop *loop, struct rx_alien_req *ar)
{
        struct api_pin *p = container_of(ar, struct api_pin, ar);
        struct eng_shard *eng = api_engine_of(loop);
        struct eng_get g;

        memset(&g, 0, sizeof(g));
        g.s = eng;
        g.mt = p->mt;
        g.block = p->block;
        if (eng)
                eng_get_release(&g);
        rx_alien_complete(ar, 0);
}

static void pin_released(struct rx_alien_req *ar)
{
        struct api_pin *p = container_of(ar, struct api_pin, ar);
        struct scree_db *db = p->db;

        free(p->v);
        atomic_fetch_sub_explicit(&db->pins_releasing, 1, memory_order_release);
}

SCREE_API const void *scree_value_data(const scree_value *v)
{
        return v ? v->ptr : NULL;
}

SCREE_API size_t scree_value_len(const scree_value *v)
{
        return v ? v->len : 0;
}

SCREE_API uint64_t scree_value_expiry_ms(const scree_value *v)
{
        return v ? v->expiry_ms : 0;
}

SCREE_API void scree_value_free(scree_value *v)
{
        struct api_pin *p;

        if (!v)
                return;
        p = v->pin;
        if (!p) {
                free(v);
                return;
        }
        atomic_fetch_add_explicit(&p->db->pins_releasing, 1, memory_order_relaxed);
        atomic_fetch_sub_explicit(&p->db->pins_held, 1, memory_order_release);
        p->ar = (struct rx_alien_req){ .run = pin_release_run, .complete = pin_released };
        if (rx_smp_alien_submit(p->db->smp, p->shard, &p->ar) < 0)
                pin_released(&p->ar);   /* the shards stopped: nothing to give back to */
}

int api_pins_wait(struct scree_db *db)
{
        if (atomic_load_explicit(&db->pins_held, memory_order_acquire))
                return api_fail(-EBUSY, "%llu value(s) of %u KiB or more are still held: they "
                                "point into the engine's memory; free them (scree_value_free) "
                                "before scree_close",
                                (unsigned long long)atomic_load(&db->pins_held),
                                API_PIN_BYTES >> 10);
        while (atomic_load_explicit(&db->pins_releasing, memory_order_acquire))
                sched_yield();
        return 0;
}
