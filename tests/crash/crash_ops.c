/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's workload: ops, keys and values as pure functions of
 * their numbers (see crash_ops.h). A value is a 25-byte header naming its
 * version and key ("V<16 hex> K<5 digits> "), then bytes from a generator
 * seeded by (key, version).
 */
#include <stdio.h>
#include <string.h>

#include "tests/crash/crash_ops.h"

#define HEADER_BYTES 25u
#define HOT_KEYS 256u

uint64_t crash_mix(uint64_t x)
{
        x += UINT64_C(0x9e3779b97f4a7c15);
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

/* Half the picks go to a small hot set, so hot keys gather many versions
 * while the others stay put in older tables. */
static uint32_t pick_key(uint64_t h)
{
        if (h & 1)
                return (uint32_t)((h >> 1) % HOT_KEYS) * (CRASH_N_KEYS / HOT_KEYS);
        return (uint32_t)((h >> 1) % CRASH_N_KEYS);
}

struct crash_op crash_op_gen(uint64_t seed, uint32_t round, uint64_t index)
{
        uint64_t h = crash_mix(seed ^ crash_mix(((uint64_t)round << 40) ^ index));
        unsigned pct = (unsigned)(h % 100);
        struct crash_op op = { .n_keys = 1, .ver = crash_ver(round, index) };

        if (pct < 62)
                op.kind = CRASH_PUT;
        else if (pct < 70)
                op.kind = CRASH_PUT_TTL;
        else if (pct < 73)
                op.kind = CRASH_PUT_EXPIRED;
        else if (pct < 85)
                op.kind = CRASH_DEL;
        else
                op.kind = CRASH_BATCH;
        op.key[0] = pick_key(crash_mix(h));
        if (op.kind == CRASH_BATCH) {
                op.n_keys = 2;
                op.key[1] = pick_key(crash_mix(h + 1));
                if (op.key[1] == op.key[0])
                        op.key[1] = (op.key[0] + 1 + (uint32_t)(h >> 48) % (CRASH_N_KEYS - 1)) %
                                    CRASH_N_KEYS;
        }
        return op;
}

struct crash_state crash_op_result(const struct crash_op *op)
{
        bool present = op->kind == CRASH_PUT || op->kind == CRASH_PUT_TTL || op->kind == CRASH_BATCH;

        return (struct crash_state){ .present = present, .ver = present ? op->ver : 0 };
}

bool crash_op_touches(const struct crash_op *op, uint32_t key)
{
        return op->key[0] == key || (op->n_keys == 2 && op->key[1] == key);
}

char crash_op_letter(enum crash_op_kind kind)
{
        static const char letters[CRASH_OP_KIND_MAX] = { 'P', 'T', 'X', 'D', 'B' };

        return (unsigned)kind < CRASH_OP_KIND_MAX ? letters[kind] : '?';
}

enum eng_table crash_key_table(uint32_t key)
{
        return key < CRASH_N_KEYS / 4 * 3 ? ENG_TABLE_DEFAULT : ENG_TABLE_ORDERED;
}

uint32_t crash_key_bytes(uint32_t key, uint8_t *buf)
{
        char tmp[CRASH_KEY_MAX];
        int n = snprintf(tmp, sizeof(tmp), "k%05u", key);

        if (crash_key_table(key) == ENG_TABLE_DEFAULT) {
                memcpy(buf, tmp, (size_t)n);
                return (uint32_t)n;
        }
        buf[0] = (uint8_t)(key * 151u);        /* spread over the ordered tablets */
        memcpy(buf + 1, tmp, (size_t)n);
        return (uint32_t)n + 1;
}

uint32_t crash_value_len(uint32_t key, uint64_t ver)
{
        uint64_t h = crash_mix(ver ^ ((uint64_t)key << 48));
        unsigned pct = (unsigned)(h % 100);

        h >>= 8;
        if (pct < 70)
                return 32 + (uint32_t)(h % 96);
        if (pct < 90)
                return 128 + (uint32_t)(h % 896);
        if (pct < 99)
                return 1024 + (uint32_t)(h % 5120);
        return 12288 + (uint32_t)(h % 4097);
}

uint32_t crash_value_make(uint32_t key, uint64_t ver, uint8_t *buf)
{
        uint32_t len = crash_value_len(key, ver);
        char head[HEADER_BYTES + 1];
        uint64_t x = crash_mix(ver) ^ key;

        snprintf(head, sizeof(head), "V%016llx K%05u ", (unsigned long long)ver, key);
        memcpy(buf, head, HEADER_BYTES);
        for (uint32_t i = HEADER_BYTES; i < len; i++) {
                if ((i & 7) == (HEADER_BYTES & 7))
                        x = crash_mix(x);
                buf[i] = (uint8_t)(x >> ((i & 7) * 8));
        }
        return len;
}

/* The version a value's header names, or 0 when the header is malformed. */
static uint64_t header_ver(const uint8_t *v, uint32_t len)
{
        uint64_t ver = 0;

        if (len < HEADER_BYTES || v[0] != 'V' || v[17] != ' ' || v[18] != 'K')
                return 0;
        for (int i = 1; i <= 16; i++) {
                int c = v[i];
                int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;

                if (d < 0)
                        return 0;
                ver = ver << 4 | (uint64_t)d;
        }
        return ver;
}

static const char *expiry_problem(enum crash_op_kind kind, uint64_t expiry_ms, uint64_t now_ms)
{
        if (kind != CRASH_PUT_TTL)
                return expiry_ms ? "an expiry on a value written without one" : NULL;
        if (!expiry_ms)
                return "the expiry of a TTL put is lost";
        if (expiry_ms <= now_ms || expiry_ms > now_ms + CRASH_TTL_MS + 1000)
                return "the expiry of a TTL put is not the one written";
        return NULL;
}

int crash_value_check(uint64_t seed, uint32_t key, const uint8_t *v, uint32_t len,
                      uint64_t expiry_ms, uint64_t now_ms, uint64_t *ret_ver,
                      const char **ret_why)
{
        static uint8_t want[CRASH_VALUE_MAX];
        uint64_t ver = header_ver(v, len);
        struct crash_op op;
        const char *why = NULL;

        if (!ver || crash_ver_round(ver) == 0 || (ver & UINT32_MAX) == 0) {
                why = "garbage: no version header";
                goto fail;
        }
        op = crash_op_gen(seed, crash_ver_round(ver), crash_ver_index(ver));
        if (!crash_op_touches(&op, key) || !crash_op_result(&op).present) {
                why = op.kind == CRASH_PUT_EXPIRED && crash_op_touches(&op, key) ?
                      "an expired value is visible" : "garbage: no put of this key has that version";
                goto fail;
        }
        if (crash_value_make(key, ver, want) != len || memcmp(want, v, len) != 0) {
                why = "garbage: the bytes differ from the value written";
                goto fail;
        }
        why = expiry_problem(op.kind, expiry_ms, now_ms);
        if (why)
                goto fail;
        *ret_ver = ver;
        return 0;
fail:
        *ret_why = why;
        return -1;
}
