/* SPDX-License-Identifier: Apache-2.0 */
/* Internal keys and the static tablet map; see tablet.h. */
#include <errno.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/check.h"
#include "base/checksum.h"
#include "base/endian.h"
#include "engine/tablet.h"

#define KEY_HASH_SEED UINT64_C(0x7363726565746162)   /* "screetab" */

uint64_t eng_key_hash(const void *key, size_t len)
{
        return checksum64(key, len, KEY_HASH_SEED);
}

size_t eng_ikey_encode(enum eng_table t, const void *key, size_t len, uint8_t *dst)
{
        size_t n = ENG_TABLE_ID_BYTES;

        be32_put(dst, (uint32_t)t);
        if (eng_table_hashed(t)) {
                be64_put(dst + n, eng_key_hash(key, len));
                n += ENG_HASH_BYTES;
        }
        if (len)
                memcpy(dst + n, key, len);
        return n + len;
}

int eng_ikey_decode(const uint8_t *ikey, size_t len, enum eng_table *ret_table,
                    const uint8_t **ret_key, size_t *ret_len)
{
        if (len < ENG_TABLE_ID_BYTES)
                return -SCREE_ECORRUPT;
        uint32_t t = be32_get(ikey);

        if (t >= ENG_TABLE_MAX)
                return -SCREE_ECORRUPT;
        size_t head = eng_ikey_size((enum eng_table)t, 0);

        if (len < head)
                return -SCREE_ECORRUPT;
        *ret_table = (enum eng_table)t;
        *ret_key = ikey + head;
        *ret_len = len - head;
        return 0;
}

size_t eng_ikey_table_start(enum eng_table t, uint8_t dst[ENG_TABLE_ID_BYTES])
{
        be32_put(dst, (uint32_t)t);
        return ENG_TABLE_ID_BYTES;
}

int eng_tablet_map_init(struct eng_tablet_map *m, uint32_t n_shards, uint32_t tablets_per_shard)
{
        if (n_shards == 0 || n_shards > ENG_MAX_SHARDS || tablets_per_shard == 0 ||
            tablets_per_shard > ENG_MAX_TABLETS_PER_SHARD)
                return -EINVAL;
        m->n_shards = n_shards;
        m->tablets_per_shard = tablets_per_shard;
        return 0;
}

/* Global tablet of a hash: floor(hash * n / 2^64). */
static uint32_t hash_tablet(uint64_t hash, uint32_t n)
{
        __extension__ unsigned __int128 p = (unsigned __int128)hash * n;

        return (uint32_t)(p >> 64);
}

/* First hash of global tablet g: ceil(g * 2^64 / n); g < n. */
static uint64_t hash_tablet_start(uint32_t g, uint32_t n)
{
        __extension__ unsigned __int128 num = (unsigned __int128)g << 64;

        return (uint64_t)((num + n - 1) / n);
}

static uint32_t byte_tablet(const uint8_t *key, size_t len, uint32_t n)
{
        return len ? (uint32_t)(((uint64_t)key[0] * n) >> 8) : 0;
}

/* First key byte of global tablet g of the ordered table: ceil(g * 256 / n). */
static uint32_t byte_tablet_start(uint32_t g, uint32_t n)
{
        return (uint32_t)(((uint64_t)g * 256 + n - 1) / n);
}

static struct eng_tablet_loc loc_of(const struct eng_tablet_map *m, enum eng_table t, uint32_t g)
{
        struct eng_tablet_loc l = { .shard = g % m->n_shards, .local = g / m->n_shards };

        if (t == ENG_TABLE_ORDERED)
                l.local += m->tablets_per_shard;
        return l;
}

struct eng_tablet_loc eng_tablet_of_key(const struct eng_tablet_map *m, enum eng_table t,
                                        const void *key, size_t len)
{
        uint32_t n = eng_tablet_map_per_table(m);

        if (eng_table_hashed(t))
                return loc_of(m, t, hash_tablet(eng_key_hash(key, len), n));
        return loc_of(m, t, byte_tablet(key, len, n));
}

struct eng_tablet_loc eng_tablet_of_ikey(const struct eng_tablet_map *m, const uint8_t *ikey,
                                         size_t len)
{
        enum eng_table t = (enum eng_table)be32_get(ikey);
        uint32_t n = eng_tablet_map_per_table(m);

        if (eng_table_hashed(t))
                return loc_of(m, t, hash_tablet(be64_get(ikey + ENG_TABLE_ID_BYTES), n));
        return loc_of(m, t, byte_tablet(ikey + ENG_TABLE_ID_BYTES, len - ENG_TABLE_ID_BYTES, n));
}

enum eng_table eng_tablet_table(const struct eng_tablet_map *m, uint32_t local)
{
        return local < m->tablets_per_shard ? ENG_TABLE_DEFAULT : ENG_TABLE_ORDERED;
}

/* The first internal key of global tablet g of table t (g == n: the next table's start). */
static size_t tablet_start(enum eng_table t, uint32_t g, uint32_t n, uint8_t *dst)
{
        /* Past the table's last key: the next table's start. With more
         * than 256 tablets the ordered table's last ones start past its
         * last first byte (ceil(g * 256 / n) == 256) and hold no key. */
        if (g == n || (!eng_table_hashed(t) && byte_tablet_start(g, n) > 255))
                return eng_ikey_table_start((enum eng_table)(t + 1), dst);
        size_t len = eng_ikey_table_start(t, dst);

        if (eng_table_hashed(t)) {
                be64_put(dst + len, hash_tablet_start(g, n));
                return len + ENG_HASH_BYTES;
        }
        if (g == 0)
                return len;
        dst[len] = (uint8_t)byte_tablet_start(g, n);
        return len + 1;
}

void eng_tablet_range(const struct eng_tablet_map *m, uint32_t shard, uint32_t local,
                      uint8_t *start_buf, size_t *start_len, uint8_t *end_buf, size_t *end_len)
{
        enum eng_table t = eng_tablet_table(m, local);
        uint32_t n = eng_tablet_map_per_table(m);
        uint32_t g = (local % m->tablets_per_shard) * m->n_shards + shard;

        *start_len = tablet_start(t, g, n, start_buf);
        *end_len = tablet_start(t, g + 1, n, end_buf);
}

uint32_t eng_tablet_static_id(const struct eng_tablet_map *m, uint32_t shard, uint32_t local)
{
        uint32_t tps = m->tablets_per_shard;

        SCREE_ASSERT(shard < m->n_shards && local < eng_tablet_map_per_shard(m));
        return (local / tps) * eng_tablet_map_per_table(m) + (local % tps) * m->n_shards + shard;
}

int eng_tablet_static_local(const struct eng_tablet_map *m, uint32_t id, uint32_t *ret_shard,
                            uint32_t *ret_local)
{
        uint32_t per_table = eng_tablet_map_per_table(m);
        uint32_t g = id % per_table;

        if (id / per_table >= ENG_TABLE_MAX)
                return -EINVAL;
        *ret_shard = g % m->n_shards;
        *ret_local = (id / per_table) * m->tablets_per_shard + g / m->n_shards;
        return 0;
}
