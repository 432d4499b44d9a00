/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Per-partition rate limits on the shard (shard.h, "per-partition rate
 * limits"): which partition an operation is on, its table's limit, and
 * the shard's counters (ratelimit.h, s->rl).
 *
 * A partition is, for a hashed table, the rows whose keys share the hash
 * prefix -- the hash in their internal keys (ScyllaDB's partition key);
 * for an ordered table, one key. Its token is a hash of the table id and
 * those bytes. Tokens and limits are looked up only while a table of the
 * shard's catalog has a limit (rl_active, kept per catalog version), so
 * shards without limits pay one comparison an operation.
 *
 * Seconds are CLOCK_MONOTONIC_COARSE's, cut to 32 bits (they wrap after
 * 136 years). Shard-local.
 */
#include <errno.h>

#include <scree/scree_errors.h>

#include "base/checksum.h"
#include "base/endian.h"
#include "base/time.h"
#include "engine/shard_internal.h"

/* Seeds the tokens' hash ("screerlt"), xored with the table id. */
#define RL_SEED UINT64_C(0x7363726565726c74)

static uint32_t now_s(void)
{
        return (uint32_t)(time_coarse_ns() / NS_PER_SEC);
}

/* Whether a table of the shard's catalog has a limit. */
static bool rl_active(struct eng_shard *s)
{
        uint64_t v = eng_catalog_version(s->cat);

        if (v == s->rl_version)
                return s->rl_on;
        s->rl_version = v;
        s->rl_on = false;
        for (uint32_t i = 0; i < eng_catalog_n_tables(s->cat) && !s->rl_on; i++) {
                const struct eng_catalog_options *o = &eng_catalog_table_at(s->cat, i)->options;

                s->rl_on = o->partition_reads_per_sec || o->partition_writes_per_sec;
        }
        return s->rl_on;
}

static uint32_t limit_of(const struct eng_catalog_table *ct, enum eng_ratelimit_kind kind)
{
        return kind == ENG_RATELIMIT_READ ? ct->options.partition_reads_per_sec
                                          : ct->options.partition_writes_per_sec;
}

/* The token of the partition of position pos (an internal key after its
 * table id) of table ct. */
static uint64_t token(const struct eng_catalog_table *ct, const uint8_t *pos, uint32_t len)
{
        uint64_t h;

        if (ct->mode == ENG_CATALOG_HASHED && len > ENG_HASH_BYTES)
                len = ENG_HASH_BYTES;
        h = checksum64(pos, len, RL_SEED ^ ct->id);
        return h ? h : 1;
}

/* Counts one operation of kind on (table, pos): 0 or -SCREE_ERATELIMIT. */
static int take(struct eng_shard *s, uint32_t table, const uint8_t *pos, uint32_t len,
                enum eng_ratelimit_kind kind)
{
        const struct shard_route *r;
        uint32_t limit;

        if (!rl_active(s) || !(r = shard_route_of(s, table)) || !(limit = limit_of(r->ct, kind)))
                return 0;
        return eng_ratelimit_take(&s->rl, token(r->ct, pos, len), kind, limit, now_s())
                       ? 0
                       : -SCREE_ERATELIMIT;
}

int shard_rl_take(struct eng_shard *s, const uint8_t *ikey, uint32_t len,
                  enum eng_ratelimit_kind kind)
{
        if (len < ENG_TABLE_ID_BYTES)
                return 0;
        return take(s, be32_get(ikey), ikey + ENG_TABLE_ID_BYTES, len - ENG_TABLE_ID_BYTES, kind);
}

int eng_shard_rate_take(struct eng_shard *s, uint32_t t, const void *pos, uint32_t pos_len,
                        enum eng_ratelimit_kind kind)
{
        if ((unsigned)kind >= ENG_RATELIMIT_KIND_MAX)
                return -EINVAL;
        return take(s, t, pos, pos_len, kind);
}

enum walk {
        WALK_CHECK,             /* has every partition room for one more write? */
        WALK_TAKE,              /* count one write per partition */
        WALK_GIVE_BACK,         /* give it back */
};

/* Walks the entries of an encoded batch whose table has a write limit.
 * Returns false if a WALK_CHECK found a partition without room. */
static bool batch_walk(struct eng_shard *s, const uint8_t *payload, uint32_t len, enum walk w,
                       uint32_t sec, uint32_t stamp)
{
        const struct shard_route *r = NULL;
        struct eng_batch_iter it;
        struct eng_entry e;

        if (eng_batch_iter_init(&it, payload, len, 0) < 0)
                return true;
        while (eng_batch_iter_next(&it, &e) == 1) {
                uint32_t table = be32_get(e.key), limit;
                uint64_t tok;

                if (!r || r->table != table)
                        r = shard_route_of(s, table);
                if (!r || !(limit = r->ct->options.partition_writes_per_sec))
                        continue;
                tok = token(r->ct, e.key + ENG_TABLE_ID_BYTES, e.key_len - ENG_TABLE_ID_BYTES);
                if (w == WALK_CHECK &&
                    !eng_ratelimit_has_room(&s->rl, tok, ENG_RATELIMIT_WRITE, limit, sec))
                        return false;
                if (w == WALK_TAKE)
                        eng_ratelimit_take_once(&s->rl, tok, ENG_RATELIMIT_WRITE, sec, stamp);
                if (w == WALK_GIVE_BACK)
                        eng_ratelimit_give_back_once(&s->rl, tok, ENG_RATELIMIT_WRITE, sec, stamp);
        }
        return true;
}

int shard_rl_write(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint32_t *ret_sec)
{
        uint32_t sec;

        *ret_sec = 0;           /* nothing counted: nothing to give back */
        if (!rl_active(s))
                return 0;
        sec = *ret_sec = now_s();
        if (!batch_walk(s, payload, len, WALK_CHECK, sec, 0))
                return -SCREE_ERATELIMIT;
        batch_walk(s, payload, len, WALK_TAKE, sec, eng_ratelimit_stamp(&s->rl));
        return 0;
}

void shard_rl_give_back(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint32_t sec)
{
        if (rl_active(s) && sec == now_s())
                batch_walk(s, payload, len, WALK_GIVE_BACK, sec, eng_ratelimit_stamp(&s->rl));
}
