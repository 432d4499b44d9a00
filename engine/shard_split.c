/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which tablet of this shard has grown past its table's split size, or
 * has taken its split-load share of the shard's operations for
 * SPLIT_LOAD_SECS seconds, and where to split it (see shard.h,
 * eng_shard_split_wanted); and the tablets' traffic, counted per second
 * (eng_shard_tick). By load the point is the median of a uniform sample
 * of the tablet's accessed keys (YDB's key-access sampling), unless the
 * keys at 10% and 90% of the sample equal it: one key carries the load,
 * and the tablet is reported, not split.
 *
 * A tablet's size here is what its SSTables hold of its own key range:
 * the data blocks whose last key lies in the range, by the sizes the
 * index gives (a file shared with a sibling since a split counts only
 * for its share). Its split point is the key that halves that data: the
 * blocks' last keys in key order, weighted by their sizes -- YDB's
 * data-size histogram, built from the indexes in memory, no I/O. A
 * tablet of many blocks is sampled (every k-th block of each file,
 * counted k times) so that one look costs at most SPLIT_SAMPLES keys.
 * Memtables are left out: they are bounded by the memory budget, not by
 * the tablet.
 *
 * Shard-local.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/time.h"
#include "engine/catalog.h"
#include "engine/key.h"
#include "engine/shard_internal.h"
#include "engine/sst_reader.h"

#define SPLIT_SAMPLES 4096u
/* Splitting by load: a tablet takes its share of a CPU for this many
 * seconds in a row, on a shard doing at least SPLIT_LOAD_FLOOR operations
 * a second, with this many keys sampled. */
#define SPLIT_LOAD_SECS 5u
#define SPLIT_LOAD_FLOOR 1000u
#define SPLIT_LOAD_MIN_KEYS 32u
/* Merging: a cold tablet takes at most this many operations a second; two
 * merge while under this percentage of their table's split size. */
#define MERGE_COLD_OPS 100u
#define MERGE_SIZE_PCT 25u

struct sample {
        const uint8_t *key;             /* borrowed from a reader's index */
        uint32_t len;
        uint64_t bytes;
};

static int sample_cmp(const void *a, const void *b)
{
        const struct sample *x = a, *y = b;

        return eng_key_cmp(x->key, x->len, y->key, y->len);
}

static bool in_range(const struct eng_tablet *t, const uint8_t *k, uint32_t len)
{
        return eng_key_cmp(k, len, t->start, t->start_len) >= 0 &&
               eng_key_cmp(k, len, t->end, t->end_len) < 0;
}

static uint32_t blocks_of(const struct eng_tset *ts)
{
        uint32_t n = 0;

        for (uint32_t i = 0; ts && i < ts->n; i++)
                n += eng_sst_reader_n_blocks(eng_sst_table_reader(ts->e[i].t));
        return n;
}

/* t's blocks in its range, sampled into v (room for SPLIT_SAMPLES + one
 * per file): how many, and their bytes in *bytes. */
static uint32_t sample_blocks(const struct eng_tablet *t, struct sample *v, uint64_t *bytes)
{
        uint32_t stride = blocks_of(t->tset) / SPLIT_SAMPLES + 1, n = 0;

        *bytes = 0;
        for (uint32_t i = 0; t->tset && i < t->tset->n; i++) {
                const struct eng_sst_reader *r = eng_sst_table_reader(t->tset->e[i].t);
                uint32_t nb = eng_sst_reader_n_blocks(r);

                for (uint32_t b = 0; b < nb; b += stride) {
                        const uint8_t *k;
                        uint32_t len = eng_sst_reader_block_last(r, b, &k);
                        uint64_t sz = (uint64_t)eng_sst_reader_block(r, b).size *
                                      (b + stride <= nb ? stride : nb - b);

                        if (!in_range(t, k, len))
                                continue;
                        v[n++] = (struct sample){ .key = k, .len = len, .bytes = sz };
                        *bytes += sz;
                }
        }
        return n;
}

/* The key halving the samples' bytes that lies strictly inside t, or
 * NULL. */
static const struct sample *halving_key(const struct eng_tablet *t, struct sample *v, uint32_t n,
                                        uint64_t bytes)
{
        uint64_t acc = 0;

        qsort(v, n, sizeof(*v), sample_cmp);
        for (uint32_t i = 0; i < n; i++) {
                acc += v[i].bytes;
                if (acc * 2 < bytes)
                        continue;
                for (; i < n; i++)
                        if (eng_key_cmp(v[i].key, v[i].len, t->start, t->start_len) > 0)
                                return &v[i];
                return NULL;
        }
        return NULL;
}

void shard_table_share(const struct eng_tablet *t, const struct eng_sst_table *tb,
                       uint64_t *bytes, uint64_t *rows)
{
        const struct eng_sst_reader *r = eng_sst_table_reader(tb);
        const struct eng_sst_props *p = eng_sst_reader_props(r);
        uint32_t nb = eng_sst_reader_n_blocks(r), in = 0;
        uint64_t data = 0, mine = 0;

        *bytes = eng_sst_reader_file_size(r);
        *rows = p->n_entries;
        if (!p->n_entries || (in_range(t, p->smallest, p->smallest_len) &&
                              in_range(t, p->largest, p->largest_len)))
                return;                 /* all of it is t's */
        for (uint32_t b = 0; b < nb; b++) {
                const uint8_t *k;
                uint32_t len = eng_sst_reader_block_last(r, b, &k);
                uint32_t sz = eng_sst_reader_block(r, b).size;

                data += sz;
                if (in_range(t, k, len)) {
                        mine += sz;
                        in++;
                }
        }
        *bytes = data ? (uint64_t)((double)*bytes * (double)mine / (double)data) : 0;
        *rows = nb ? (uint64_t)((double)*rows * in / nb) : 0;
}

/* Adds a sampled key to t's reservoir (Algorithm R): each key accessed
 * since the reservoir was made stays with the same chance. */
static void keysample_add(struct shard_keysample *ks, const uint8_t *ikey, uint32_t len)
{
        uint64_t slot;

        ks->seen++;
        if (ks->n < SHARD_KEYSAMPLE) {
                slot = ks->n++;
        } else {
                ks->rnd ^= ks->rnd << 13;
                ks->rnd ^= ks->rnd >> 17;
                ks->rnd ^= ks->rnd << 5;
                slot = ks->rnd % ks->seen;
                if (slot >= SHARD_KEYSAMPLE)
                        return;
        }
        ks->k[slot].len = len < ENG_HOT_KEY_BYTES ? len : ENG_HOT_KEY_BYTES;
        memcpy(ks->k[slot].key, ikey, ks->k[slot].len);
}

void shard_hot_access(struct eng_tablet *t, const uint8_t *ikey, uint32_t len)
{
        if (!eng_hot_sampled(&t->hot_tick))
                return;
        if (!t->hot && !(t->hot = calloc(1, sizeof(*t->hot))))
                return;                 /* no memory: this one goes uncounted */
        eng_hotkeys_add(t->hot, ikey, len);
        if (t->ks)
                keysample_add(t->ks, ikey, len);
}

void shard_load_read(struct eng_shard *s, const struct eng_entry *e)
{
        struct eng_tablet *t = shard_tablet_of_ikey(s, e->key, e->key_len);

        if (t) {
                t->load.reads++;
                t->load.read_bytes += e->key_len + e->value_len;
        }
}

/* Updates t's count of seconds over its table's split-load share of a
 * CPU (YDB's rule): its share of the shard's total operations last second
 * times the share of a CPU the shard's thread used. A tablet that takes
 * most of an idle shard's operations has no need to split, nor one that
 * takes half of a busy one's once it is one of two. Keeps a key sample
 * while it counts. */
static void load_watch(struct eng_shard *s, struct eng_tablet *t, uint64_t total)
{
        const struct shard_route *rt = shard_route_of(s, t->table);
        const struct eng_catalog_options *o = rt ? &rt->ct->options : NULL;
        uint64_t ops = t->load_rate.reads + t->load_rate.writes;

        if (o && o->split_by_load && !t->dropped && total >= SPLIT_LOAD_FLOOR &&
            ops * s->cpu_permille >= total * o->split_load_percent * 10) {
                if (!t->ks) {
                        if (!(t->ks = calloc(1, sizeof(*t->ks))))
                                return;
                        t->ks->rnd = t->id * 2654435761u | 1u;  /* xorshift: never 0 */
                }
                t->load_secs++;
                return;
        }
        t->load_secs = 0;
        free(t->ks);
        t->ks = NULL;
}

void eng_shard_tick(struct eng_shard *s)
{
        uint64_t total = 0, now = time_now_ns(), cpu = time_thread_cpu_ns();

        s->cpu_permille = s->tick_ns && now > s->tick_ns
                ? (uint32_t)((cpu - s->tick_cpu_ns) * 1000 / (now - s->tick_ns)) : 0;
        s->tick_ns = now;
        s->tick_cpu_ns = cpu;

        for (uint32_t i = 0; i < s->n_tablets; i++) {
                struct eng_tablet *t = s->tablets[i];

                t->load_rate = (struct shard_load){
                        .reads = t->load.reads - t->load_mark.reads,
                        .writes = t->load.writes - t->load_mark.writes,
                        .read_bytes = t->load.read_bytes - t->load_mark.read_bytes,
                        .write_bytes = t->load.write_bytes - t->load_mark.write_bytes,
                };
                t->load_mark = t->load;
                total += t->load_rate.reads + t->load_rate.writes;
                /* Rounded down: an idle tablet's average gets to 0. */
                t->ops_avg = (7 * t->ops_avg + t->load_rate.reads + t->load_rate.writes) / 8;
                if (t->load_rate.reads + t->load_rate.writes <= MERGE_COLD_OPS)
                        t->cold_secs++;
                else
                        t->cold_secs = 0;
                if (t->hot)
                        eng_hotkeys_decay(t->hot);
        }
        for (uint32_t i = 0; i < s->n_tablets; i++)
                load_watch(s, s->tablets[i], total);
}

/* Whether table ct's options let it split one more tablet by size, and
 * t has passed the size: its bytes then. */
static bool over_size(const struct eng_catalog_table *ct, uint64_t bytes)
{
        const struct eng_catalog_options *o = &ct->options;

        return o->split_by_size && ct->n_tablets < o->max_tablets && bytes >= o->split_size_bytes;
}

/* The bytes of t's files: what t holds of its range at most. */
static uint64_t files_bytes(const struct eng_tablet *t)
{
        uint64_t n = 0;

        for (uint32_t i = 0; t->tset && i < t->tset->n; i++)
                n += t->tset->e[i].meta.file_size;
        return n;
}

static int ks_cmp(const void *a, const void *b)
{
        const struct shard_sampled_key *x = a, *y = b;

        return eng_key_cmp(x->key, x->len, y->key, y->len);
}

/*
 * Where tablet t, over its split-load share for SPLIT_LOAD_SECS, splits:
 * the median of its sampled keys, strictly inside it. 1 and *ret; 0 when
 * the median is also the key at 10% or at 90% (one key carries the load:
 * splitting helps nothing, so t is reported instead and waits another
 * round), or when too few keys or no room.
 */
static int load_point(struct eng_shard *s, struct eng_tablet *t, struct eng_split_want *ret)
{
        struct shard_keysample *ks = t->ks;
        uint32_t n = ks->n, lo, mid, hi;

        if (n < SPLIT_LOAD_MIN_KEYS)
                return 0;
        qsort(ks->k, n, sizeof(ks->k[0]), ks_cmp);
        lo = n / 10;
        mid = n / 2;
        hi = n - 1 - n / 10;
        if (ks_cmp(&ks->k[lo], &ks->k[mid]) == 0 || ks_cmp(&ks->k[mid], &ks->k[hi]) == 0) {
                if (!t->hot_reported)
                        log_info("shard %u: tablet %u takes most of the shard's load on one key: "
                                 "not split (TABLE.DESCRIBE shows its hot keys)", s->o.shard, t->id);
                t->hot_reported = true;
                t->load_secs = 0;
                return 0;
        }
        if (ks->k[mid].len >= ENG_HOT_KEY_BYTES ||     /* perhaps cut short: no boundary */
            eng_key_cmp(ks->k[mid].key, ks->k[mid].len, t->start, t->start_len) <= 0 ||
            eng_key_cmp(ks->k[mid].key, ks->k[mid].len, t->end, t->end_len) >= 0)
                return 0;
        *ret = (struct eng_split_want){ .table = t->table, .tablet = t->id, .by_load = true,
                                         .key_len = ks->k[mid].len };
        memcpy(ret->key, ks->k[mid].key, ks->k[mid].len);
        return 1;
}

/* A tablet over its split-load share long enough: 1 and *ret, or 0. */
static int load_wanted(struct eng_shard *s, struct eng_split_want *ret)
{
        for (uint32_t i = 0; i < s->n_routes; i++) {
                const struct shard_route *rt = &s->routes[i];

                for (uint32_t k = 0; k < rt->ct->n_tablets; k++) {
                        struct eng_tablet *t = rt->tab[k];

                        if (!t || t->frozen || t->moving || !t->ks || t->load_secs < SPLIT_LOAD_SECS ||
                            rt->ct->n_tablets >= rt->ct->options.max_tablets)
                                continue;
                        if (load_point(s, t, ret))
                                return 1;
                }
        }
        return 0;
}

int eng_shard_split_wanted(struct eng_shard *s, struct eng_split_want *ret)
{
        struct sample *v = NULL;
        size_t cap = 0;
        uint64_t best = 0;
        int found = 0;

        for (uint32_t i = 0; i < s->n_routes; i++) {
                const struct shard_route *rt = &s->routes[i];

                for (uint32_t k = 0; k < rt->ct->n_tablets; k++) {
                        struct eng_tablet *t = rt->tab[k];
                        const struct sample *mid;
                        uint64_t bytes;
                        uint32_t n;

                        /* Cheap checks first: most tablets stop here. */
                        if (!t || t->frozen || t->moving || !t->tset || files_bytes(t) <= best ||
                            !over_size(rt->ct, files_bytes(t)))
                                continue;
                        if (cap < SPLIT_SAMPLES + t->tset->n + 1) {
                                free(v);
                                cap = SPLIT_SAMPLES + t->tset->n + 1;
                                if (!(v = malloc(cap * sizeof(*v))))
                                        return -ENOMEM;
                        }
                        n = sample_blocks(t, v, &bytes);
                        if (bytes <= best || !over_size(rt->ct, bytes))
                                continue;
                        mid = halving_key(t, v, n, bytes);
                        if (!mid || mid->len > sizeof(ret->key))
                                continue;
                        *ret = (struct eng_split_want){ .table = t->table, .tablet = t->id,
                                                         .bytes = bytes, .key_len = mid->len };
                        memcpy(ret->key, mid->key, mid->len);
                        best = bytes;
                        found = 1;
                }
        }
        free(v);
        /* Size first (YDB's priority), then load. */
        return found ? found : load_wanted(s, ret);
}

/* What t holds: its files and memtables (at most; a file shared with a
 * sibling counts whole). */
static uint64_t held_bytes(const struct eng_tablet *t)
{
        uint64_t n = files_bytes(t) + t->active_bytes;

        for (uint32_t i = 0; i < t->n_imm; i++)
                n += t->imm[i].bytes;
        return n;
}

/* Whether t may take part in a merge: live, settled, cold long enough. */
static bool mergeable(const struct eng_shard *s, const struct eng_tablet *t)
{
        uint32_t after = s->o.merge_after_secs ? s->o.merge_after_secs : 600;

        return t && !t->frozen && !t->moving && !t->dropped && shard_tablet_settled(t) &&
               t->cold_secs >= after;
}

int eng_shard_merge_wanted(struct eng_shard *s, struct eng_merge_want *ret)
{
        for (uint32_t i = 0; i < s->n_routes; i++) {
                const struct shard_route *rt = &s->routes[i];
                const struct eng_catalog_options *o = &rt->ct->options;

                if (!(o->split_by_size || o->split_by_load) || rt->ct->n_tablets <= o->min_tablets)
                        continue;
                for (uint32_t k = 0; k + 1 < rt->ct->n_tablets; k++) {
                        struct eng_tablet *a = rt->tab[k], *b = rt->tab[k + 1];
                        uint64_t bytes;

                        if (!mergeable(s, a) || !mergeable(s, b))
                                continue;
                        bytes = held_bytes(a) + held_bytes(b);
                        if (bytes >= o->split_size_bytes / 100 * MERGE_SIZE_PCT)
                                continue;
                        *ret = (struct eng_merge_want){ .table = a->table, .first = a->id,
                                                         .second = b->id, .bytes = bytes };
                        return 1;
                }
        }
        return 0;
}
