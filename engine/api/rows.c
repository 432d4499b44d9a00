/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Row operations from host threads: put, delete, get, read-modify-write
 * (scree.h), each one request to the shard that owns its key (api_int.h).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "engine/api/api_int.h"
#include "engine/api/req.h"

/* ---- routing ---- */

static uint8_t tag_of(enum eng_tuple_type type)
{
        return type == ENG_TUPLE_I64 ? ENG_TUPLE_TAG_I64
             : type == ENG_TUPLE_U64 ? ENG_TUPLE_TAG_U64 : ENG_TUPLE_TAG_BYTES;
}

/* Whether key is a whole tuple of ct's parts (each of its type, or NULL). */
static int tuple_check(const struct eng_catalog_table *ct, const uint8_t *key, size_t len)
{
        long at = 0;

        for (uint32_t k = 0; k < ct->n_parts; k++) {
                long end = eng_tuple_parts_len(key, len, k + 1);

                if (end < 0)
                        return api_fail(-EINVAL, "the key is not a tuple of the table's %u parts "
                                        "(scree_key_encode)", ct->n_parts);
                if (key[at] != ENG_TUPLE_TAG_NULL && key[at] != tag_of(ct->parts[k]))
                        return api_fail(-EINVAL, "part %u of the key is not of type %s", k + 1,
                                        eng_tuple_type_name(ct->parts[k]));
                at = end;
        }
        if ((size_t)at != len)
                return api_fail(-EINVAL, "the key has more than the table's %u parts",
                                ct->n_parts);
        return 0;
}

int api_route(struct scree_table *t, const void *key, size_t len, unsigned *ret_shard)
{
        const struct eng_catalog_table *ct;
        uint32_t i;
        int r;

        if ((r = api_key_check(t, key, len)) < 0)
                return r;
        if (eng_catalog_table_by_id(api_catalog(t->db), t->id, &ct) < 0)
                return api_fail(-SCREE_ENOTFOUND, "the table was dropped");
        if (!t->raw && (r = tuple_check(ct, key, len)) < 0)
                return r;
        if (eng_catalog_route_key(ct, key, len, &i) < 0)
                return api_fail(-EINVAL, "a key of a table hashed on its first %u part(s) needs "
                                "them whole", t->hash_parts);
        *ret_shard = ct->tablets[i].shard;
        return 0;
}

int api_key_check(const struct scree_table *t, const void *key, size_t len)
{
        if (!key || len == 0 || len > t->db->opts.max_key_bytes)
                return api_fail(-EINVAL, "a key is 1 to %llu bytes",
                                (unsigned long long)t->db->opts.max_key_bytes);
        return 0;
}

/* ---- on the shard ---- */

/* Ends rq with res: notes the owner when the key moved. */
void api_req_end(struct api_req *rq, int res)
{
        rq->moved_to = -1;
        if (res == -SCREE_EMOVED && !rq->step && rq->m.key_len) {
                struct eng_shard *eng = api_engine_of(rq->loop);
                const struct eng_catalog_table *ct;
                uint32_t i = 0;

                if (eng && eng_catalog_table_by_id(eng_shard_catalog(eng), rq->m.table, &ct) == 0 &&
                    eng_catalog_route_key(ct, rq->m.key, rq->m.key_len, &i) == 0)
                        rq->moved_to = (int)ct->tablets[i].shard;
        }
        rx_alien_complete(&rq->ar, res);
}

/* Hands a found value over: into the caller's buffer, or a new value
 * (which may take g's references: value.c). */
static int get_deliver(struct api_req *rq, struct eng_get *g)
{
        rq->vlen = g->value_len;
        if (rq->want_value) {
                rq->value = api_value_new(rq->db, rq->loop, g);
                return rq->value ? 0 : -ENOMEM;
        }
        if (g->value_len > rq->cap)
                return -ENOBUFS;
        memcpy(rq->buf, g->value, g->value_len);
        return 0;
}

static void get_cb(struct eng_get *g, int res)
{
        struct api_req *rq = g->ctx;

        if (res == 0) {
                res = get_deliver(rq, g);
                eng_get_release(g);
        }
        api_req_end(rq, res);
}

static void write_cb(struct eng_write *w, int res)
{
        api_req_end(w->ctx, res);
}

static int rmw_fn(void *arg, const struct eng_get *cur, struct eng_mutation *out)
{
        struct api_req *rq = arg;
        scree_update_out o = { 0 };
        int r = rq->fn(rq->fn_arg, cur ? cur->value : NULL, cur ? cur->value_len : 0, &o);

        rq->fn_res = r;
        switch (r) {
        case SCREE_UPDATE_NONE:
                return 0;
        case SCREE_UPDATE_PUT:
                if (o.value_len > rq->db->opts.max_value_bytes || (!o.value && o.value_len) ||
                    o.ttl_ms > API_TTL_MAX_MS)
                        return -EINVAL;
                out->kind = ENG_MUT_PUT;
                out->value = o.value;
                out->value_len = (uint32_t)o.value_len;
                out->expiry_ms = o.ttl_ms ? time_wall_ns() / NS_PER_MS + o.ttl_ms : 0;
                return 1;
        case SCREE_UPDATE_DEL:
                out->kind = ENG_MUT_DEL;
                return 1;
        default:
                return r < 0 ? r : -EINVAL;
        }
}

static void rmw_cb(struct eng_rmw *r, int res)
{
        struct api_req *rq = r->ctx;

        api_req_end(rq, res < 0 ? res : rq->fn_res);
}

void api_req_run(struct rx_loop *loop, struct rx_alien_req *ar)
{
        struct api_req *rq = container_of(ar, struct api_req, ar);
        struct eng_shard *eng = api_engine_of(loop);
        int r;

        rq->loop = loop;
        if (!eng) {
                api_req_end(rq, -SCREE_ESHUTDOWN);
                return;
        }
        switch (rq->op) {
        case API_OP_GET:
                rq->u.g = (struct eng_get){ .done = get_cb, .ctx = rq };
                r = eng_shard_get(eng, rq->m.table, rq->m.key, rq->m.key_len, &rq->u.g);
                if (r == 1)
                        return;
                if (r == 0) {
                        r = get_deliver(rq, &rq->u.g);
                        eng_get_release(&rq->u.g);
                }
                break;
        case API_OP_UPDATE:
                rq->u.r = (struct eng_rmw){ .done = rmw_cb, .ctx = rq };
                r = eng_shard_rmw(eng, rq->m.table, rq->m.key, rq->m.key_len, rmw_fn, rq, &rq->u.r);
                if (r == 0)
                        return;
                break;
        default:
                rq->u.w = (struct eng_write){ .done = write_cb, .ctx = rq };
                r = eng_shard_write(eng, rq->muts ? rq->muts : &rq->m, rq->n_muts ? rq->n_muts : 1,
                                    &rq->u.w);
                if (r == 0)
                        return;
                r = r == 1 ? 0 : r;
                break;
        }
        api_req_end(rq, r);
}

/* ---- on the host ---- */

/* How long a request retries a key whose tablet is moving. */
#define MOVING_WAIT_NS (30 * NS_PER_SEC)

/* api_req_call without the message. */
static int req_call(struct api_req *rq, unsigned shard)
{
        uint64_t deadline = 0;

        for (;;) {
                int64_t res;

                rq->ar = (struct rx_alien_req){ .run = rq->run ? rq->run : api_req_run };
                if (rx_smp_alien_submit(rq->db->smp, shard, &rq->ar) < 0)
                        return -SCREE_ESHUTDOWN;
                res = rx_alien_wait(&rq->ar);
                if (res != -SCREE_EMOVED)
                        return (int)res;
                if (rq->moved_to >= 0 && (unsigned)rq->moved_to != shard) {
                        shard = (unsigned)rq->moved_to;
                        continue;
                }
                /* Moving: the owner answers once the hand-over is done. */
                if (!deadline)
                        deadline = time_now_ns() + MOVING_WAIT_NS;
                if (time_now_ns() > deadline)
                        return -SCREE_EMOVED;
                sched_yield();
        }
}

int api_req_call(struct api_req *rq, unsigned shard)
{
        int r = req_call(rq, shard);

        if (r < 0)
                api_fail(r, "%s", api_req_message(rq, r));
        return r;
}

const char *api_req_message(const struct api_req *rq, int res)
{
        bool update = rq->op == API_OP_UPDATE;

        if (update && rq->fn_res < 0 && res == rq->fn_res)
                return "the update function failed (its error is the result)";
        if (update && res == -EINVAL && rq->fn_res == SCREE_UPDATE_PUT)
                return "the update function's value is longer than max-value-bytes, NULL with a "
                       "length, or its TTL over 2^61 ms";
        if (update && res == -EINVAL && rq->fn_res > SCREE_UPDATE_DEL)
                return "the update function returned no SCREE_UPDATE_* value";
        return api_res_message(rq->op, res);
}

/* Times an asynchronous request follows a key that keeps moving. */
#define MOVED_HOPS 100000

static void req_completed(struct rx_alien_req *ar)
{
        struct api_req *rq = container_of(ar, struct api_req, ar);
        int res = (int)ar->result;

        if (res == -SCREE_EMOVED && rq->moved_to >= 0 && ++rq->hops < MOVED_HOPS) {
                if (api_req_send(rq, (unsigned)rq->moved_to) == 0)
                        return;
                res = -SCREE_ESHUTDOWN;
        }
        if (rq->step)
                rq->step(rq, res);
        else
                api_cq_deliver(rq, res);
}

int api_req_send(struct api_req *rq, unsigned shard)
{
        rq->ar = (struct rx_alien_req){ .run = rq->run ? rq->run : api_req_run,
                                        .complete = req_completed };
        if (rx_smp_alien_submit(rq->db->smp, shard, &rq->ar) < 0)
                return api_fail(-SCREE_ESHUTDOWN, "%s",
                                api_res_message(rq->op, -SCREE_ESHUTDOWN));
        return 0;
}

/* Prepares rq for (t, key): checks, routes. */
int api_req_prep(struct api_req *rq, scree_table *t, enum api_op op, const void *key,
                 size_t key_len, unsigned *shard)
{
        int r;

        if (!t)
                return api_fail(-EINVAL, "no table");
        if (!rq->cq && (r = api_off_shard()) < 0)
                return r;
        rq->db = t->db;
        rq->op = op;
        rq->m.table = t->id;
        rq->m.key = key;
        rq->m.key_len = (uint32_t)key_len;
        return api_route(t, key, key_len, shard);
}

int api_value_check(const struct scree_db *db, const void *value, size_t len)
{
        if (len > db->opts.max_value_bytes || (!value && len))
                return api_fail(-EINVAL, "a value is 0 to %llu bytes",
                                (unsigned long long)db->opts.max_value_bytes);
        return 0;
}

int api_ttl_check(uint64_t ttl_ms)
{
        if (ttl_ms > API_TTL_MAX_MS)
                return api_fail(-EINVAL, "a TTL is at most %llu ms (2^61), got %llu",
                                (unsigned long long)API_TTL_MAX_MS, (unsigned long long)ttl_ms);
        return 0;
}

uint64_t api_expiry(uint64_t ttl_ms)
{
        return ttl_ms ? time_wall_ns() / NS_PER_MS + ttl_ms : 0;
}

SCREE_API int scree_put(scree_table *t, const void *key, size_t key_len, const void *value,
                        size_t value_len, uint64_t ttl_ms)
{
        struct api_req rq = { 0 };
        unsigned shard;
        int r = api_req_prep(&rq, t, API_OP_PUT, key, key_len, &shard);

        if (r < 0)
                return r;
        if ((r = api_value_check(t->db, value, value_len)) < 0 || (r = api_ttl_check(ttl_ms)) < 0)
                return r;
        rq.m.kind = ENG_MUT_PUT;
        rq.m.value = value;
        rq.m.value_len = (uint32_t)value_len;
        rq.m.expiry_ms = api_expiry(ttl_ms);
        return api_req_call(&rq, shard);
}

SCREE_API int scree_del(scree_table *t, const void *key, size_t key_len)
{
        struct api_req rq = { 0 };
        unsigned shard;
        int r = api_req_prep(&rq, t, API_OP_DEL, key, key_len, &shard);

        if (r < 0)
                return r;
        rq.m.kind = ENG_MUT_DEL;
        return api_req_call(&rq, shard);
}

SCREE_API int scree_get(scree_table *t, const void *key, size_t key_len, void *buf, size_t cap,
                        size_t *ret_len)
{
        struct api_req rq = { 0 };
        unsigned shard;
        int r = api_req_prep(&rq, t, API_OP_GET, key, key_len, &shard);

        if (r < 0)
                return r;
        if (!buf && cap)
                return api_fail(-EINVAL, "no buffer for the value");
        rq.buf = buf;
        rq.cap = cap;
        r = api_req_call(&rq, shard);
        if ((r == 0 || r == -ENOBUFS) && ret_len)
                *ret_len = rq.vlen;
        return r;
}

SCREE_API int scree_get_value(scree_table *t, const void *key, size_t key_len, scree_value **ret)
{
        struct api_req rq = { 0 };
        unsigned shard;
        int r = ret ? api_req_prep(&rq, t, API_OP_GET, key, key_len, &shard)
                    : api_fail(-EINVAL, "scree_get_value needs somewhere to put the value");

        if (r < 0)
                return r;
        rq.want_value = true;
        r = api_req_call(&rq, shard);
        if (r == 0)
                *ret = rq.value;
        return r;
}

SCREE_API int scree_update(scree_table *t, const void *key, size_t key_len, scree_update_fn fn,
                           void *arg)
{
        struct api_req rq = { 0 };
        unsigned shard;
        int r = api_req_prep(&rq, t, API_OP_UPDATE, key, key_len, &shard);

        if (r < 0)
                return r;
        if (!fn)
                return api_fail(-EINVAL, "no update function");
        rq.fn = fn;
        rq.fn_arg = arg;
        return api_req_call(&rq, shard);
}
