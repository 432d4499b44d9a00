/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's workload generator; see bench_gen.h. Pure computation on
 * the worker's own state: no I/O, no engine calls beyond the tablet map
 * that says who owns a key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "engine/shard.h"
#include "perf/bench_gen.h"
#include "perf/rng.h"

/* Random bytes values are cut from, at a random offset. */
#define VALUE_SPREAD 1024u
/* Tries at finding a missing key, or a fresh insert key, this worker owns. */
#define OWN_TRIES 256u

struct bench_gen {
        const struct bench_keys_opts *o;
        unsigned id;
        struct eng_tablet_map map;
        uint32_t *keys;                 /* the key numbers this worker owns, ascending */
        uint64_t n_keys;
        uint8_t *present;               /* bitmap over keys: put and not deleted */
        uint64_t n_present;
        uint64_t *inserted;             /* key-space positions of inserts, oldest first */
        size_t n_inserted, cap_inserted;
        uint64_t insert_cursor;         /* the next insert position to try */
        uint8_t *values;
        uint64_t rng;
        /* the workload in progress */
        enum bench_workload w;
        const struct ycsb_mix *mix;
        struct keydist dist;
};

static const char *const workload_names[BENCH_WORKLOAD_MAX] = {
        [BENCH_FILLSEQ] = "fillseq",         [BENCH_FILLRANDOM] = "fillrandom",
        [BENCH_OVERWRITE] = "overwrite",     [BENCH_READRANDOM] = "readrandom",
        [BENCH_READMISSING] = "readmissing", [BENCH_SEEKRANDOM] = "seekrandom",
        [BENCH_DELETERANDOM] = "deleterandom", [BENCH_READWHILEWRITING] = "readwhilewriting",
        [BENCH_YCSB_A] = "ycsba",            [BENCH_YCSB_B] = "ycsbb",
        [BENCH_YCSB_C] = "ycsbc",            [BENCH_YCSB_D] = "ycsbd",
        [BENCH_YCSB_E] = "ycsbe",            [BENCH_YCSB_F] = "ycsbf",
};

const char *bench_workload_name(enum bench_workload w)
{
        return (unsigned)w < BENCH_WORKLOAD_MAX ? workload_names[w] : "?";
}

enum bench_workload bench_workload_parse(const char *s)
{
        for (unsigned i = 0; i < BENCH_WORKLOAD_MAX; i++)
                if (strcmp(s, workload_names[i]) == 0)
                        return (enum bench_workload)i;
        return BENCH_WORKLOAD_INVALID;
}

bool bench_workload_writes(enum bench_workload w)
{
        return w <= BENCH_OVERWRITE || w == BENCH_DELETERANDOM;
}

const struct ycsb_mix *bench_workload_mix(enum bench_workload w)
{
        if (w < BENCH_YCSB_A || w > BENCH_YCSB_F)
                return NULL;
        return ycsb_mix_get((char)('A' + (w - BENCH_YCSB_A)));
}

const char *bench_opc_name(enum bench_opc c)
{
        return c == BENCH_OPC_DELETE ? "delete" : ycsb_op_name((enum ycsb_op)c);
}

/* ---- keys ---- */

static uint64_t key_stride(const struct bench_keys_opts *o)
{
        return UINT64_MAX / (o->num ? o->num : 1);
}

/* The key of integer position v in the key space (see bench_key). */
static void key_at(const struct bench_keys_opts *o, uint64_t v, uint8_t *dst)
{
        uint32_t n = o->key_size < 8 ? o->key_size : 8;

        for (uint32_t j = 0; j < n; j++)
                dst[j] = (uint8_t)(v >> (56 - 8 * j));
        memset(dst + n, '0', o->key_size - n);
}

void bench_key(const struct bench_keys_opts *o, uint64_t i, uint8_t *dst)
{
        key_at(o, i * key_stride(o), dst);
}

static bool owns(const struct bench_gen *g, const uint8_t *key)
{
        return eng_tablet_of_key(&g->map, g->o->table, key, g->o->key_size).shard == g->id;
}

static int keys_compute(struct bench_gen *g)
{
        uint8_t key[BENCH_MAX_KEY_BYTES];
        uint64_t n = 0;

        g->keys = malloc(g->o->num * sizeof(*g->keys));
        g->present = calloc(g->o->num / 8 + 1, 1);
        if (!g->keys || !g->present)
                return -ENOMEM;
        for (uint64_t i = 0; i < g->o->num; i++) {
                bench_key(g->o, i, key);
                if (owns(g, key))
                        g->keys[n++] = (uint32_t)i;
        }
        g->n_keys = n;
        if (g->o->loaded) {
                memset(g->present, 0xff, n / 8 + 1);
                g->n_present = n;
        }
        return 0;
}

struct bench_gen *bench_gen_new(const struct bench_keys_opts *o, unsigned id)
{
        struct bench_gen *g = calloc(1, sizeof(*g));

        if (!g)
                return NULL;
        g->o = o;
        g->id = id;
        g->rng = (o->seed ^ (UINT64_C(0x9e3779b97f4a7c15) * (id + 1))) | 1;
        if (eng_tablet_map_init(&g->map, o->workers, ENG_SHARD_DEFAULT_TABLETS) < 0 ||
            keys_compute(g) < 0)
                goto fail;
        g->values = malloc(o->value_size + VALUE_SPREAD);
        if (!g->values)
                goto fail;
        for (uint32_t i = 0; i < o->value_size + VALUE_SPREAD; i++)
                g->values[i] = (uint8_t)xorshift64s(&g->rng);
        return g;
fail:
        bench_gen_free(g);
        return NULL;
}

void bench_gen_free(struct bench_gen *g)
{
        if (!g)
                return;
        free(g->keys);
        free(g->present);
        free(g->inserted);
        free(g->values);
        free(g);
}

uint64_t bench_gen_keys(const struct bench_gen *g)
{
        return g->n_keys;
}

uint64_t bench_gen_inserted(const struct bench_gen *g)
{
        return g->n_inserted;
}

uint64_t bench_gen_live(const struct bench_gen *g)
{
        return g->n_present + g->n_inserted;
}

/* ---- distributions ---- */

int bench_dists_init(struct bench_dists *d, const struct bench_keys_opts *o, uint64_t n,
                     bool mixes)
{
        enum keydist_kind plain = o->dist == KEYDIST_INVALID ? KEYDIST_UNIFORM : o->dist;
        int r;

        if (n == 0)
                n = 1;
        memset(d, 0, sizeof(*d));
        r = keydist_init(&d->plain, plain, n, o->theta);
        if (r < 0 || !mixes || o->dist != KEYDIST_INVALID)
                return r;
        /* the mixes' own: zipfian, and latest (the same constants) */
        r = keydist_init(&d->zipf, KEYDIST_ZIPFIAN, n, o->theta);
        d->latest = d->zipf;
        d->latest.kind = KEYDIST_LATEST;
        return r;
}

void bench_gen_start(struct bench_gen *g, enum bench_workload w, const struct bench_dists *d)
{
        g->w = w;
        g->mix = bench_workload_mix(w);
        g->dist = d->plain;
        if (g->mix && g->o->dist == KEYDIST_INVALID)
                g->dist = g->mix->dist == KEYDIST_LATEST ? d->latest : d->zipf;
}

/* The item the distribution draws, as an index into keys, then inserts. */
static uint64_t draw(struct bench_gen *g)
{
        uint64_t items = g->n_keys + g->n_inserted;
        uint64_t i = keydist_next(&g->dist, &g->rng, items);

        /* a worker with more keys than the shared set-up: spread the draw */
        if (g->dist.kind != KEYDIST_LATEST && g->dist.n < g->n_keys)
                i = i * g->n_keys / g->dist.n;   /* both < 2^32: no overflow */
        return items ? i % items : 0;
}

static uint64_t item_pos(const struct bench_gen *g, uint64_t item)
{
        if (item < g->n_keys)
                return g->keys[item] * key_stride(g->o);
        return g->inserted[item - g->n_keys];
}

static void mark(struct bench_gen *g, uint64_t item, bool present)
{
        uint8_t bit = (uint8_t)(1u << (item % 8));
        uint8_t *byte;

        if (item >= g->n_keys)
                return;
        byte = &g->present[item / 8];
        if (present && !(*byte & bit)) {
                *byte |= bit;
                g->n_present++;
        } else if (!present && (*byte & bit)) {
                *byte &= (uint8_t)~bit;
                g->n_present--;
        }
}

/* The smallest step between two distinct keys of key_size bytes. */
static uint64_t key_grain(const struct bench_keys_opts *o)
{
        return o->key_size >= 8 ? 1 : UINT64_C(1) << (64 - 8 * o->key_size);
}

/* A missing key this worker owns, near a drawn one. */
static int pick_missing(struct bench_gen *g, struct bench_op_desc *op)
{
        for (unsigned i = 0; i < OWN_TRIES; i++) {
                uint64_t item = draw(g) % (g->n_keys ? g->n_keys : 1);

                key_at(g->o, g->keys[item] * key_stride(g->o) + key_stride(g->o) / 2, op->key);
                if (g->n_keys && owns(g, op->key))
                        return 0;
        }
        return -ENOSPC;
}

/* A fresh position for an insert: key k's position plus a quarter stride
 * plus `round` grains, k and round walking on from the last insert. */
static int pick_insert(struct bench_gen *g, struct bench_op_desc *op)
{
        uint64_t stride = key_stride(g->o), grain = key_grain(g->o);
        uint64_t room = (stride / 4) / grain;
        uint64_t pos = 0;
        unsigned tries;

        if (!g->n_keys)
                return -ENOSPC;
        for (tries = 0; tries < OWN_TRIES; tries++) {
                uint64_t k = g->insert_cursor % g->n_keys, round = g->insert_cursor / g->n_keys;

                if (round >= room)
                        return -ENOSPC;
                g->insert_cursor++;
                pos = g->keys[k] * stride + stride / 4 + round * grain;
                key_at(g->o, pos, op->key);
                if (owns(g, op->key))
                        break;
        }
        if (tries == OWN_TRIES)
                return -ENOSPC;
        g->inserted = mem_grow(g->inserted, &g->cap_inserted, g->n_inserted + 1, sizeof(*g->inserted));
        if (!g->inserted)
                return -ENOMEM;
        g->inserted[g->n_inserted++] = pos;
        return 0;
}

static const uint8_t *value(struct bench_gen *g)
{
        return g->values + xorshift64s(&g->rng) % VALUE_SPREAD;
}

const uint8_t *bench_gen_value(struct bench_gen *g)
{
        return value(g);
}

/* op on item (its key), kind and class given. */
static void on_item(struct bench_gen *g, uint64_t item, enum bench_opk kind, enum bench_opc cls,
                    struct bench_op_desc *op)
{
        op->kind = kind;
        op->cls = cls;
        key_at(g->o, item_pos(g, item), op->key);
        if (kind == BENCH_OPK_PUT || kind == BENCH_OPK_RMW)
                mark(g, item, true);
        else if (kind == BENCH_OPK_DEL)
                mark(g, item, false);
}

/* An engine op and its class. */
struct op_kind {
        enum bench_opk kind;
        enum bench_opc cls;
};

/* The workloads whose every op is one kind of op on a drawn key. */
static const struct op_kind drawn_ops[BENCH_WORKLOAD_MAX] = {
        [BENCH_FILLRANDOM] = { BENCH_OPK_PUT, BENCH_OPC_UPDATE },
        [BENCH_OVERWRITE] = { BENCH_OPK_PUT, BENCH_OPC_UPDATE },
        [BENCH_READRANDOM] = { BENCH_OPK_GET, BENCH_OPC_READ },
        [BENCH_READWHILEWRITING] = { BENCH_OPK_GET, BENCH_OPC_READ },
        [BENCH_SEEKRANDOM] = { BENCH_OPK_SCAN, BENCH_OPC_SCAN },
        [BENCH_DELETERANDOM] = { BENCH_OPK_DEL, BENCH_OPC_DELETE },
};

/* YCSB's ops as engine ops: update = put of an existing key, insert = put
 * of a new one, read-modify-write = the engine's own (or get + put). */
static const struct op_kind ycsb_ops[YCSB_OP_MAX] = {
        [YCSB_READ] = { BENCH_OPK_GET, BENCH_OPC_READ },
        [YCSB_UPDATE] = { BENCH_OPK_PUT, BENCH_OPC_UPDATE },
        [YCSB_INSERT] = { BENCH_OPK_PUT, BENCH_OPC_INSERT },
        [YCSB_SCAN] = { BENCH_OPK_SCAN, BENCH_OPC_SCAN },
        [YCSB_RMW] = { BENCH_OPK_RMW, BENCH_OPC_RMW },
};

/* op on a key other than a drawn one, kind k. */
static int off_draw(struct op_kind k, int (*pick)(struct bench_gen *, struct bench_op_desc *),
                    struct bench_gen *g, struct bench_op_desc *op)
{
        op->kind = k.kind;
        op->cls = k.cls;
        return pick(g, op);
}

int bench_gen_next(struct bench_gen *g, uint64_t seq, struct bench_op_desc *op)
{
        struct op_kind k = drawn_ops[g->w];

        op->key_len = g->o->key_size;
        op->value = value(g);
        op->value_len = g->o->value_size;
        op->scan_len = g->o->seek_nexts + 1;
        if (g->w == BENCH_FILLSEQ) {
                on_item(g, g->n_keys ? seq % g->n_keys : 0, BENCH_OPK_PUT, BENCH_OPC_UPDATE, op);
                return 0;
        }
        if (g->w == BENCH_READMISSING)
                return off_draw(drawn_ops[BENCH_READRANDOM], pick_missing, g, op);
        if (g->mix) {
                enum ycsb_op y = ycsb_next_op(g->mix, &g->rng);

                k = ycsb_ops[y];
                if (y == YCSB_INSERT)
                        return off_draw(k, pick_insert, g, op);
                if (y == YCSB_SCAN)
                        op->scan_len = 1 + (uint32_t)(xorshift64s(&g->rng) % g->o->scan_max);
        }
        on_item(g, draw(g), k.kind, k.cls, op);
        return 0;
}

void bench_gen_write(struct bench_gen *g, struct bench_op_desc *op)
{
        op->key_len = g->o->key_size;
        op->value = value(g);
        op->value_len = g->o->value_size;
        on_item(g, g->n_keys ? xorshift64s(&g->rng) % g->n_keys : 0, BENCH_OPK_PUT,
                BENCH_OPC_UPDATE, op);
}
