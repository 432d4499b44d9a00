/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's checker (see crash_model.h). A prefix p of the tail
 * means "tail ops 0..p-1 survived"; possible[p] says whether p still fits
 * everything observed since the writer died.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/crash/crash_model.h"

struct crash_model {
        uint64_t seed;
        uint32_t n_keys;
        struct crash_state *base;
        /* the dump in progress */
        struct crash_state *seen_state;
        bool *seen;
        uint32_t n_seen;
        /* ops that may or may not have survived, in issue order */
        struct crash_op *tail;
        uint64_t n_tail;
        bool *possible;                 /* n_tail + 1 entries */
        bool *scratch;                  /* n_tail + 1 entries */
        uint64_t dumped_tail, dumped_min, dumped_max;   /* what the last dump_end left */
        /* the round being written */
        uint32_t round;
        uint64_t acked, acked_end;      /* acked_end: last acknowledged index + 1 */
        uint64_t *ack_bits;
        uint64_t ack_words;
};

static bool reset_tail(struct crash_model *m, uint64_t n)
{
        free(m->tail);
        free(m->possible);
        free(m->scratch);
        m->n_tail = n;
        m->tail = calloc(n ? n : 1, sizeof(*m->tail));
        m->possible = malloc(n + 1);
        m->scratch = malloc(n + 1);
        if (!m->tail || !m->possible || !m->scratch)
                return false;
        memset(m->possible, 1, n + 1);
        return true;
}

struct crash_model *crash_model_new(uint64_t seed, uint32_t n_keys)
{
        struct crash_model *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        m->seed = seed;
        m->n_keys = n_keys;
        m->base = calloc(n_keys, sizeof(*m->base));
        m->seen_state = calloc(n_keys, sizeof(*m->seen_state));
        m->seen = calloc(n_keys, sizeof(*m->seen));
        if (!m->base || !m->seen_state || !m->seen || !reset_tail(m, 0)) {
                crash_model_free(m);
                return NULL;
        }
        return m;
}

void crash_model_free(struct crash_model *m)
{
        if (!m)
                return;
        free(m->base);
        free(m->seen_state);
        free(m->seen);
        free(m->tail);
        free(m->possible);
        free(m->scratch);
        free(m->ack_bits);
        free(m);
}

static bool state_eq(struct crash_state a, struct crash_state b)
{
        return a.present == b.present && (!a.present || a.ver == b.ver);
}

static const char *state_str(struct crash_state st, char *buf, size_t cap)
{
        if (!st.present)
                return "absent";
        snprintf(buf, cap, "version %u.%llu", crash_ver_round(st.ver),
                 (unsigned long long)crash_ver_index(st.ver));
        return buf;
}

/* Marks out[p] for the prefixes p that leave key in state st; returns how
 * many, with the smallest and largest in *ret_min, *ret_max. */
static uint64_t allowed(const struct crash_model *m, uint32_t key, struct crash_state st, bool *out,
                        uint64_t *ret_min, uint64_t *ret_max)
{
        struct crash_state cur = m->base[key];
        uint64_t n = 0;

        *ret_min = UINT64_MAX;
        *ret_max = 0;
        for (uint64_t p = 0; p <= m->n_tail; p++) {
                if (p > 0 && crash_op_touches(&m->tail[p - 1], key))
                        cur = crash_op_result(&m->tail[p - 1]);
                out[p] = state_eq(cur, st);
                if (out[p]) {
                        n++;
                        *ret_min = p < *ret_min ? p : *ret_min;
                        *ret_max = p;
                }
        }
        return n;
}

void crash_model_dump_begin(struct crash_model *m)
{
        memset(m->seen, 0, m->n_keys * sizeof(*m->seen));
        m->n_seen = 0;
}

/* Appends the unacknowledged writes to key to the message in why. */
static void list_tail_writes(const struct crash_model *m, uint32_t key, char *why, size_t cap)
{
        size_t len = strlen(why);
        unsigned listed = 0;
        char b[48];

        for (uint64_t i = 0; i < m->n_tail && listed < 4 && len + 64 < cap; i++) {
                if (!crash_op_touches(&m->tail[i], key))
                        continue;
                len += (size_t)snprintf(why + len, cap - len, "%s%c %s", listed ? ", " : "; or later, unacknowledged: ",
                                        crash_op_letter(m->tail[i].kind),
                                        state_str((struct crash_state){ true, m->tail[i].ver }, b, sizeof(b)));
                listed++;
        }
}

/* " from a batch with key N" when key's base state came from a two-key write. */
static const char *batch_note(const struct crash_model *m, uint32_t key, char *buf, size_t cap)
{
        struct crash_state st = m->base[key];
        struct crash_op op;

        if (!st.present)
                return "";
        op = crash_op_gen(m->seed, crash_ver_round(st.ver), crash_ver_index(st.ver));
        if (op.kind != CRASH_BATCH)
                return "";
        snprintf(buf, cap, " from a batch with key %u", op.key[0] == key ? op.key[1] : op.key[0]);
        return buf;
}

int crash_model_observe(struct crash_model *m, uint32_t key, struct crash_state st, char *why,
                        size_t cap)
{
        uint64_t lo, hi;
        char b1[48], b2[48], b3[64];

        if (key >= m->n_keys || m->seen[key]) {
                snprintf(why, cap, "key %u: %s", key,
                         key >= m->n_keys ? "out of range" : "reported twice in one dump");
                return -1;
        }
        if (!allowed(m, key, st, m->scratch, &lo, &hi)) {
                snprintf(why, cap, "key %u: acknowledged write lost: found %s, want %s%s "
                         "(its state after every acknowledged write)", key,
                         state_str(st, b1, sizeof(b1)), state_str(m->base[key], b2, sizeof(b2)),
                         batch_note(m, key, b3, sizeof(b3)));
                list_tail_writes(m, key, why, cap);
                return -1;
        }
        m->seen[key] = true;
        m->seen_state[key] = st;
        m->n_seen++;
        return 0;
}

/* Looks for a tail batch that survived for one key and not the other. */
static bool find_torn_batch(struct crash_model *m, char *why, size_t cap)
{
        for (uint64_t j = 0; j < m->n_tail; j++) {
                const struct crash_op *op = &m->tail[j];
                uint64_t lo[2], hi[2];
                char b1[48], b2[48];

                if (op->kind != CRASH_BATCH || !m->seen[op->key[0]] || !m->seen[op->key[1]])
                        continue;
                for (int h = 0; h < 2; h++)
                        allowed(m, op->key[h], m->seen_state[op->key[h]], m->scratch, &lo[h], &hi[h]);
                for (int h = 0; h < 2; h++) {
                        if (lo[h] > j && hi[1 - h] <= j) {
                                snprintf(why, cap, "torn batch: the write of keys %u and %u (%s) "
                                         "survived for key %u only; key %u holds %s",
                                         op->key[0], op->key[1],
                                         state_str(crash_op_result(op), b1, sizeof(b1)), op->key[h],
                                         op->key[1 - h],
                                         state_str(m->seen_state[op->key[1 - h]], b2, sizeof(b2)));
                                return true;
                        }
                }
        }
        return false;
}

/* The range of still possible prefixes, or false if none is. */
static bool possible_range(const struct crash_model *m, uint64_t *ret_lo, uint64_t *ret_hi)
{
        bool any = false;

        for (uint64_t p = 0; p <= m->n_tail; p++) {
                if (!m->possible[p])
                        continue;
                if (!any)
                        *ret_lo = p;
                *ret_hi = p;
                any = true;
        }
        return any;
}

/* Narrows possible by every key seen; false (why filled) if nothing is left. */
static bool intersect_seen(struct crash_model *m, char *why, size_t cap)
{
        for (uint32_t k = 0; k < m->n_keys; k++) {
                uint64_t lo, hi, plo = 0, phi = 0, left = 0;

                if (!m->seen[k])
                        continue;
                possible_range(m, &plo, &phi);
                allowed(m, k, m->seen_state[k], m->scratch, &lo, &hi);
                for (uint64_t p = 0; p <= m->n_tail; p++)
                        left += m->possible[p] && m->scratch[p];
                if (left == 0) {
                        if (!find_torn_batch(m, why, cap))
                                snprintf(why, cap, "not a prefix of the issued writes: key %u fits "
                                         "%llu..%llu of the %llu unacknowledged writes surviving, "
                                         "the keys before it %llu..%llu (a write lost before one "
                                         "that survived)", k, (unsigned long long)lo,
                                         (unsigned long long)hi, (unsigned long long)m->n_tail,
                                         (unsigned long long)plo, (unsigned long long)phi);
                        return false;
                }
                for (uint64_t p = 0; p <= m->n_tail; p++)
                        m->possible[p] = m->possible[p] && m->scratch[p];
        }
        return true;
}

int crash_model_dump_end(struct crash_model *m, bool complete, char *why, size_t cap)
{
        if (complete && m->n_seen != m->n_keys) {
                snprintf(why, cap, "dump said complete after %u of %u keys", m->n_seen, m->n_keys);
                return -1;
        }
        if (!intersect_seen(m, why, cap))
                return -1;
        m->dumped_tail = m->n_tail;
        possible_range(m, &m->dumped_min, &m->dumped_max);
        if (complete) {
                memcpy(m->base, m->seen_state, m->n_keys * sizeof(*m->base));
                if (!reset_tail(m, 0)) {
                        snprintf(why, cap, "out of memory");
                        return -1;
                }
        }
        crash_model_dump_begin(m);
        return 0;
}

void crash_model_round_begin(struct crash_model *m, uint32_t round)
{
        m->round = round;
        m->acked = 0;
        m->acked_end = 0;
        free(m->ack_bits);
        m->ack_bits = NULL;
        m->ack_words = 0;
}

/* Sets bit index; false if it was set already (or out of memory). */
static bool ack_bit_set(struct crash_model *m, uint64_t index)
{
        uint64_t w = index / 64;

        if (w >= m->ack_words) {
                uint64_t n = (w + 1) * 2;
                uint64_t *v = realloc(m->ack_bits, n * sizeof(*v));

                if (!v)
                        return false;
                memset(v + m->ack_words, 0, (n - m->ack_words) * sizeof(*v));
                m->ack_bits = v;
                m->ack_words = n;
        }
        if (m->ack_bits[w] >> (index % 64) & 1)
                return false;
        m->ack_bits[w] |= UINT64_C(1) << (index % 64);
        return true;
}

int crash_model_ack(struct crash_model *m, uint64_t index, char letter, uint32_t key0,
                    uint32_t key1, char *why, size_t cap)
{
        struct crash_op op = crash_op_gen(m->seed, m->round, index);

        if (letter != crash_op_letter(op.kind) || key0 != op.key[0] ||
            (op.n_keys == 2 && key1 != op.key[1]) || index >= UINT32_MAX - 1) {
                snprintf(why, cap, "ack of op %llu (%c %u %u) does not match the workload (%c %u %u)",
                         (unsigned long long)index, letter, key0, key1, crash_op_letter(op.kind),
                         op.key[0], op.n_keys == 2 ? op.key[1] : 0);
                return -1;
        }
        if (!ack_bit_set(m, index)) {
                snprintf(why, cap, "op %llu acknowledged twice", (unsigned long long)index);
                return -1;
        }
        m->acked++;
        if (index + 1 > m->acked_end)
                m->acked_end = index + 1;
        return 0;
}

int crash_model_round_end(struct crash_model *m, uint64_t max_issued, char *why, size_t cap)
{
        if (m->acked_end > max_issued) {
                snprintf(why, cap, "op %llu acknowledged but at most %llu were issued",
                         (unsigned long long)m->acked_end - 1, (unsigned long long)max_issued);
                return -1;
        }
        /* Writes are logged in issue order: everything before the last
         * acknowledged write is in the log as well. */
        for (uint64_t i = 0; i < m->acked_end; i++) {
                struct crash_op op = crash_op_gen(m->seed, m->round, i);

                for (uint32_t h = 0; h < op.n_keys; h++)
                        if (op.key[h] < m->n_keys)
                                m->base[op.key[h]] = crash_op_result(&op);
        }
        if (!reset_tail(m, max_issued - m->acked_end)) {
                snprintf(why, cap, "out of memory");
                return -1;
        }
        for (uint64_t i = 0; i < m->n_tail; i++)
                m->tail[i] = crash_op_gen(m->seed, m->round, m->acked_end + i);
        return 0;
}

void crash_model_info(const struct crash_model *m, struct crash_model_info *ret)
{
        *ret = (struct crash_model_info){ .acked = m->acked, .tail = m->n_tail,
                                          .dumped_tail = m->dumped_tail,
                                          .dumped_min = m->dumped_min, .dumped_max = m->dumped_max };
        if (!possible_range(m, &ret->prefix_min, &ret->prefix_max))
                ret->prefix_min = ret->prefix_max = 0;
        for (uint32_t k = 0; k < m->n_keys; k++)
                ret->present += m->base[k].present;
}
