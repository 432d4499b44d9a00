/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Skiplist memtable; see memtable.h. Nodes are allocated once from the arena
 * with their tower of next pointers, key and value inline, and are never
 * moved or freed before the whole memtable goes. Height is drawn with
 * p = 1/4 up to 12 levels (enough for ~16 M entries per tablet memtable).
 * The arena's blocks are transparent huge pages: a put or get visits ~20
 * nodes scattered over tens of MiB, and with 4 KiB pages nearly every
 * visit was a TLB miss (an insert cost ~3.6 us on the benchmark VM).
 * Point gets go through a hash index (mt_index.h) of each key's newest
 * node instead of the list: ~0.14-0.29 us against ~0.5-1.1 us per get at
 * 150k-600k entries, for ~0.15 us more per put.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include <scree/scree_errors.h>

#include "base/arena.h"
#include "base/check.h"
#include "base/compiler.h"
#include "base/endian.h"
#include "engine/key.h"
#include "engine/memtable.h"
#include "engine/mt_index.h"

#define MAX_HEIGHT 12
/* Nodes this tall (1 in 4) are the directory's entry points; the
 * directory starts once there are DIR_MIN_TALL of them. */
#define DIR_LEVELS 2u
#define DIR_MIN_TALL 64u
#define DIR_OUTSIDE UINT32_MAX
/* Buckets after its own a new tall node becomes the entry of (dir_add). */
#define DIR_PUSH 8u
/* A search that steps over this many nodes on one level -- from the
 * directory, through a run of one key's versions or of keys sharing their
 * first word, which all fall in one bucket -- climbs (find_ge). */
#define CLIMB_AFTER 8u

struct eng_mt_node {
        /* Key bytes [0, 16) as two big-endian words, zero-padded: a search
         * compares these first and touches the key bytes (often another
         * cache line) and memcmp only on a tie. */
        uint64_t pfx[2];
        uint64_t seq;
        uint64_t expiry_ms;
        uint32_t key_len;
        uint32_t value_len;
        uint8_t kind;
        uint8_t height;
        struct eng_mt_node *next[];     /* height pointers, then key, then value */
};

struct eng_memtable {
        int owner_shard;
        int refs;
        struct arena arena;
        struct eng_mt_node *head;       /* sentinel with MAX_HEIGHT levels */
        unsigned height;                /* levels in use */
        uint64_t rng;
        uint64_t count;
        /* The directory (see dir_*): dir[b] is head or a tall node
         * (height >= DIR_LEVELS) whose key sorts before bucket b, usually
         * the last one. */
        struct eng_mt_node **dir;
        uint32_t dir_n;                 /* buckets, a power of two; 0: none yet */
        unsigned dir_shift;
        uint64_t dir_lo;                /* first word of bucket 0's lowest key */
        uint64_t n_tall;
        uint64_t n_outside;             /* tall nodes outside the buckets since the rebuild */
        uint64_t climbs;                /* of puts' searches (see find_ge) */
        uint64_t dir_pushes;            /* bucket entries dir_add rewrote */
        /* Point lookups: key -> its newest node (mt_index.h); off after
         * an ENOMEM, when gets search the list instead. */
        struct mt_index idx;
        bool idx_ok;
};

static const uint8_t *node_key(const struct eng_mt_node *n)
{
        return (const uint8_t *)&n->next[n->height];
}

/* What a search looks for: (key, seq) and the key's prefix words. */
struct probe {
        const void *key;
        uint32_t key_len;
        uint64_t seq;
        uint64_t pfx[2];
};

static void key_prefix(const void *key, uint32_t key_len, uint64_t pfx[2])
{
        uint8_t b[16] = { 0 };

        if (key_len)            /* the head node's key is NULL: memcpy wants a pointer */
                memcpy(b, key, key_len < 16 ? key_len : 16);
        pfx[0] = be64_get(b);
        pfx[1] = be64_get(b + 8);
}

static struct probe probe_of(const void *key, uint32_t key_len, uint64_t seq)
{
        struct probe q = { .key = key, .key_len = key_len, .seq = seq };

        key_prefix(key, key_len, q.pfx);
        return q;
}

/* Orders a node against q: key ascending, then seq descending. <0: node
 * sorts before it; 0: same key and seq; >0: after. Zero-padded prefixes
 * that differ order their keys the same way (a padding zero stands where
 * the shorter key ends, and a shorter key sorts first), so only a tie
 * needs the bytes. */
static int node_cmp(const struct eng_mt_node *n, const struct probe *q)
{
        if (n->pfx[0] != q->pfx[0])
                return n->pfx[0] < q->pfx[0] ? -1 : 1;
        if (n->pfx[1] != q->pfx[1])
                return n->pfx[1] < q->pfx[1] ? -1 : 1;
        return eng_version_cmp(node_key(n), n->key_len, n->seq, q->key, q->key_len, q->seq);
}

/*
 * The directory: a search starts low in the list instead of at the head.
 * A key's bucket is its first word (pfx[0]) placed on dir_n equal ranges
 * from the first tall node seen at the last rebuild: monotone in key
 * order, so a node in a lower bucket sorts before every key of a higher
 * one. Keys outside the ranges search from the head; once many tall
 * nodes landed outside (keys written in order), the directory is rebuilt.
 * A search from dir[b] on the levels below DIR_LEVELS visits ~4 nodes
 * instead of ~25 from the head (each a cache miss in a big memtable); an
 * insert taller than DIR_LEVELS (1 in 16) still searches from the head,
 * since it needs its predecessors on the higher levels too.
 */
static uint32_t dir_bucket(const struct eng_memtable *mt, uint64_t w)
{
        uint64_t b;

        if (w < mt->dir_lo)
                return DIR_OUTSIDE;
        b = (w - mt->dir_lo) >> mt->dir_shift;
        return b >= mt->dir_n ? DIR_OUTSIDE : (uint32_t)b;
}

/* Rebuilds the directory with n buckets over the tall nodes' range (one
 * walk of the tall list). On ENOMEM the old one stays. */
static void dir_rebuild(struct eng_memtable *mt, uint32_t n)
{
        struct eng_mt_node **d = malloc((size_t)n * sizeof(*d));
        struct eng_mt_node *t, *cur = mt->head, *first = mt->head->next[DIR_LEVELS - 1], *last;
        uint64_t span;
        uint32_t i = 0;

        if (!d)
                return;
        mt->n_outside = 0;
        for (last = first; last->next[DIR_LEVELS - 1]; last = last->next[DIR_LEVELS - 1])
                ;
        free(mt->dir);
        mt->dir = d;
        mt->dir_n = n;
        mt->dir_lo = first->pfx[0];
        span = last->pfx[0] - first->pfx[0];
        for (mt->dir_shift = 0; mt->dir_shift < 63 && (span >> mt->dir_shift) >= n; mt->dir_shift++)
                ;
        for (t = first; t; t = t->next[DIR_LEVELS - 1]) {
                uint32_t c = dir_bucket(mt, t->pfx[0]);

                while (i <= c)
                        d[i++] = cur;
                cur = t;
        }
        while (i < n)
                d[i++] = cur;
}

/*
 * Doubles the buckets over the same range without touching a node (a
 * rebuild walks every tall node: milliseconds of cache misses at 100k
 * entries, a stall on the loop): both halves of bucket b start from its
 * old entry, which sorts before both; later tall nodes tighten them. On
 * ENOMEM the old directory stays. REQUIRES: dir_shift > 0.
 */
static void dir_split(struct eng_memtable *mt)
{
        struct eng_mt_node **d = malloc((size_t)mt->dir_n * 2 * sizeof(*d));

        if (!d)
                return;
        for (uint32_t b = 0; b < mt->dir_n; b++)
                d[2 * b] = d[2 * b + 1] = mt->dir[b];
        free(mt->dir);
        mt->dir = d;
        mt->dir_n *= 2;
        mt->dir_shift--;
}

/* Records a new tall node t. */
static void dir_add(struct eng_memtable *mt, struct eng_mt_node *t)
{
        struct probe q;
        uint32_t c;

        if (++mt->n_tall < DIR_MIN_TALL)
                return;
        if (!mt->dir_n || (mt->n_tall > mt->dir_n && mt->dir_shift == 0)) {
                dir_rebuild(mt, mt->dir_n ? mt->dir_n * 2 : 2 * DIR_MIN_TALL);
                return;         /* the walk saw t */
        }
        if (mt->n_tall > mt->dir_n)
                dir_split(mt);
        c = dir_bucket(mt, t->pfx[0]);
        if (c == DIR_OUTSIDE) {
                if (++mt->n_outside > mt->n_tall / 8)
                        dir_rebuild(mt, mt->dir_n);
                return;
        }
        /* t now precedes the buckets after its own up to the next tall
         * node; the first DIR_PUSH of them take it. Those further on keep
         * an entry that still sorts before them, only further back (a
         * search from it climbs): else keys written in order inside the
         * range -- after a rebuild that rounded the range up to the
         * buckets -- each rewrote every bucket after their own, O(buckets)
         * a tall node. */
        q = probe_of(node_key(t), t->key_len, t->seq);
        for (uint32_t b = c + 1; b < mt->dir_n && b <= c + DIR_PUSH; b++) {
                if (mt->dir[b] != mt->head && node_cmp(mt->dir[b], &q) > 0)
                        break;
                mt->dir[b] = t;
                mt->dir_pushes++;
        }
}

/* Where a search for q that needs predecessors on levels [0, levels)
 * starts: the directory's entry for q's bucket (only levels below
 * DIR_LEVELS), or the head. Returns the node; *top is its first level. */
static struct eng_mt_node *search_start(const struct eng_memtable *mt, const struct probe *q,
                                        unsigned levels, int *top)
{
        uint32_t b = mt->dir && levels <= DIR_LEVELS ? dir_bucket(mt, q->pfx[0]) : DIR_OUTSIDE;

        if (b != DIR_OUTSIDE && mt->dir[b] != mt->head) {
                *top = DIR_LEVELS - 1;
                return mt->dir[b];
        }
        *top = (int)mt->height - 1;
        return mt->head;
}

/* The level a search on level l goes on at, having just stepped onto x
 * (*steps counts the nodes stepped over on that level): once CLIMB_AFTER
 * are, x's top level if higher (a finger search: the rest costs
 * O(log distance), as from the head). */
static int climb(const struct eng_mt_node *x, int l, unsigned *steps)
{
        if (++*steps < CLIMB_AFTER || x->height - 1 <= l)
                return l;
        *steps = 0;
        return x->height - 1;
}

/* The last node < q, or the head (gets without the index, and seeks),
 * climbing as climb() says; *climbs counts the climbs. */
static struct eng_mt_node *find_lt(const struct eng_memtable *mt, const struct probe *q,
                                   uint64_t *climbs)
{
        int l, up;
        struct eng_mt_node *x = search_start(mt, q, 1, &l), *next;
        unsigned steps = 0;

        for (; l >= 0; l--, steps = 0) {
                /* While next's header is on its way, fetch the node the
                 * level below starts with if x turns out to be the last
                 * before q: the two cache misses overlap. */
                while ((next = x->next[l]) != NULL) {
                        if (l > 0 && x->next[l - 1] != next)
                                __builtin_prefetch(x->next[l - 1]);
                        if (node_cmp(next, q) >= 0)
                                break;
                        x = next;
                        if ((up = climb(x, l, &steps)) != l) {
                                l = up;
                                ++*climbs;
                        }
                }
        }
        return x;
}

/* The first node >= q. */
static struct eng_mt_node *find_ge(const struct eng_memtable *mt, const struct probe *q,
                                   uint64_t *climbs)
{
        return find_lt(mt, q, climbs)->next[0];
}

static unsigned random_height(struct eng_memtable *mt)
{
        unsigned h = 1;

        /* xorshift64: cheap, and quality is irrelevant for tower heights. */
        mt->rng ^= mt->rng << 13;
        mt->rng ^= mt->rng >> 7;
        mt->rng ^= mt->rng << 17;
        for (uint64_t r = mt->rng; h < MAX_HEIGHT && (r & 3) == 0; r >>= 2)
                h++;
        return h;
}

static size_t node_bytes(unsigned height, const struct eng_entry *e)
{
        return sizeof(struct eng_mt_node) + height * sizeof(struct eng_mt_node *) +
               (size_t)e->key_len + e->value_len;
}

/* Fills n, of node_bytes(height, e). */
static struct eng_mt_node *node_init(struct eng_mt_node *n, unsigned height, const struct eng_entry *e)
{
        uint8_t *data;

        if (!n)
                return NULL;
        key_prefix(e->key, e->key_len, n->pfx);
        n->seq = e->seq;
        n->expiry_ms = e->expiry_ms;
        n->key_len = e->key_len;
        n->value_len = e->value_len;
        n->kind = (uint8_t)e->kind;
        n->height = (uint8_t)height;
        memset(n->next, 0, height * sizeof(n->next[0]));
        data = (uint8_t *)&n->next[height];
        if (e->key_len)
                memcpy(data, e->key, e->key_len);
        if (e->value_len)
                memcpy(data + e->key_len, e->value, e->value_len);
        return n;
}

static struct eng_mt_node *node_new(struct eng_memtable *mt, unsigned height, const struct eng_entry *e)
{
        return node_init(arena_alloc(&mt->arena, node_bytes(height, e)), height, e);
}

struct eng_memtable *eng_memtable_new(struct arena_pool *pool)
{
        struct eng_memtable *mt = calloc(1, sizeof(*mt));
        struct eng_entry sentinel = { .kind = ENG_ENTRY_KIND_INVALID };

        if (!mt)
                return NULL;
        mt->owner_shard = check_current_shard;
        mt->refs = 1;
        mt->height = 1;
        mt->rng = 0x9e3779b97f4a7c15ull;
        arena_init_pooled(&mt->arena, pool);
        mt->idx_ok = mt_index_init(&mt->idx, pool) == 0;
        /* The head lives outside the arena: a memtable takes its first
         * 2 MiB block with its first entry (a shard has 8, most idle). */
        mt->head = node_init(malloc(node_bytes(MAX_HEIGHT, &sentinel)), MAX_HEIGHT, &sentinel);
        if (!mt->head) {
                eng_memtable_unref(mt);
                return NULL;
        }
        return mt;
}

void eng_memtable_ref(struct eng_memtable *mt)
{
        SCREE_ASSERT_SHARD(mt);
        mt->refs++;
}

void eng_memtable_unref(struct eng_memtable *mt)
{
        if (!mt)
                return;
        SCREE_ASSERT_SHARD(mt);
        if (--mt->refs > 0)
                return;
        mt_index_fini(&mt->idx);
        arena_fini(&mt->arena);
        free(mt->head);
        free(mt->dir);
        free(mt);
}

static uint64_t key_hash(const void *key, uint32_t key_len)
{
        return XXH3_64bits(key, key_len);
}

/* mt_index callbacks: the key is a struct probe. */
static bool node_is_key(const void *node, const void *key)
{
        const struct eng_mt_node *n = node;
        const struct probe *q = key;

        return n->key_len == q->key_len && n->pfx[0] == q->pfx[0] && n->pfx[1] == q->pfx[1] &&
               (q->key_len <= 16 || memcmp(node_key(n) + 16, (const uint8_t *)q->key + 16,
                                           q->key_len - 16) == 0);
}

static bool node_newer(const void *stored, const void *node)
{
        return ((const struct eng_mt_node *)node)->seq > ((const struct eng_mt_node *)stored)->seq;
}

/*
 * A put in three steps, so that eng_memtable_put_many can interleave the
 * searches of several: put_start picks the height and where the search
 * starts, put_step takes one node of the search (touching only what the
 * step before prefetched, and prefetching the next node), put_link fixes
 * up the predecessors (puts linked meanwhile may sit in between), then
 * links the node and indexes it.
 */
struct put_search {
        struct eng_memtable *mt;
        const struct eng_entry *e;
        struct probe q;
        uint64_t hash;
        unsigned h;                     /* the new node's height */
        int l;                          /* level searched now; -1: done */
        int top;                        /* prev[0..top] come from the search */
        unsigned steps;                 /* on level l so far */
        bool fresh;                     /* no step taken: x itself is on its way */
        struct eng_mt_node *x;
        struct eng_mt_node *prev[MAX_HEIGHT];
};

static void put_start(struct put_search *p, struct eng_memtable *mt, const struct eng_entry *e)
{
        p->mt = mt;
        p->e = e;
        p->q = probe_of(e->key, e->key_len, e->seq);
        p->hash = key_hash(e->key, e->key_len);
        if (mt->idx_ok)
                mt_index_prefetch(&mt->idx, p->hash);   /* arrives during the search */
        p->h = random_height(mt);
        p->x = search_start(mt, &p->q, p->h > mt->height ? mt->height : p->h, &p->l);
        p->top = p->l;
        p->steps = 0;
        p->fresh = true;
        __builtin_prefetch(p->x);
}

/* One node of the search. Returns false once it is done. */
static bool put_step(struct put_search *p)
{
        struct eng_mt_node *next = p->x->next[p->l];

        if (p->fresh) {
                p->fresh = false;
                __builtin_prefetch(next);
                return true;
        }
        if (next && node_cmp(next, &p->q) < 0) {
                int up = climb(next, p->l, &p->steps);

                p->x = next;
                if (up != p->l) {
                        p->l = up;
                        if (up > p->top)
                                p->top = up;
                        p->mt->climbs++;
                }
                __builtin_prefetch(next->next[p->l]);
                return true;
        }
        p->steps = 0;
        p->prev[p->l] = p->x;
        if (--p->l < 0)
                return false;
        if (p->x->next[p->l] != next)
                __builtin_prefetch(p->x->next[p->l]);
        return true;
}

static int put_link(struct put_search *p)
{
        struct eng_memtable *mt = p->mt;
        struct eng_mt_node *at, *n;
        unsigned h = p->h;

        for (unsigned l = 0; l < h; l++) {
                struct eng_mt_node *x = (int)l <= p->top ? p->prev[l] : mt->head, *next;

                while ((next = x->next[l]) != NULL && node_cmp(next, &p->q) < 0)
                        x = next;
                p->prev[l] = x;
        }
        at = p->prev[0]->next[0];
        if (at && node_cmp(at, &p->q) == 0)
                return -EEXIST;
        n = node_new(mt, h, p->e);
        if (!n)
                return -ENOMEM;
        if (h > mt->height)
                mt->height = h;
        for (unsigned l = 0; l < h; l++) {
                n->next[l] = p->prev[l]->next[l];
                p->prev[l]->next[l] = n;
        }
        mt->count++;
        if (h >= DIR_LEVELS)
                dir_add(mt, n);
        if (mt->idx_ok && mt_index_put(&mt->idx, p->hash, n, node_is_key, &p->q, node_newer) < 0) {
                mt->idx_ok = false;     /* gets search the list from now on */
                mt_index_fini(&mt->idx);
        }
        return 0;
}

static bool kind_ok(const struct eng_entry *e)
{
        return e->kind > ENG_ENTRY_KIND_INVALID && e->kind < ENG_ENTRY_KIND_MAX;
}

int eng_memtable_put(struct eng_memtable *mt, const struct eng_entry *e)
{
        struct put_search p;

        SCREE_ASSERT_SHARD(mt);
        if (!kind_ok(e))
                return -EINVAL;
        put_start(&p, mt, e);
        while (put_step(&p))
                ;
        return put_link(&p);
}

void eng_memtable_put_many(struct eng_memtable_put *puts, unsigned n)
{
        struct put_search p[ENG_MEMTABLE_PUT_MANY];
        unsigned running = 0, k = 0;
        bool busy[ENG_MEMTABLE_PUT_MANY];

        if (n > ENG_MEMTABLE_PUT_MANY)
                n = ENG_MEMTABLE_PUT_MANY;
        for (unsigned i = 0; i < n; i++) {
                SCREE_ASSERT_SHARD(puts[i].mt);
                busy[i] = kind_ok(puts[i].e);
                if (busy[i]) {
                        put_start(&p[i], puts[i].mt, puts[i].e);
                        running++;
                }
        }
        /* Round robin: each step's miss overlaps the others'. */
        for (; running; k = (k + 1) % n)
                if (busy[k] && !put_step(&p[k])) {
                        busy[k] = false;
                        running--;
                }
        for (unsigned i = 0; i < n; i++)
                puts[i].res = kind_ok(puts[i].e) ? put_link(&p[i]) : -EINVAL;
}

static void node_entry(const struct eng_mt_node *n, struct eng_entry *ret)
{
        ret->key = node_key(n);
        ret->key_len = n->key_len;
        ret->value = node_key(n) + n->key_len;
        ret->value_len = n->value_len;
        ret->seq = n->seq;
        ret->expiry_ms = n->expiry_ms;
        ret->kind = (enum eng_entry_kind)n->kind;
}

int eng_memtable_get(const struct eng_memtable *mt, const void *key, uint32_t key_len,
                     uint64_t snapshot_seq, struct eng_entry *ret)
{
        struct probe q = probe_of(key, key_len, snapshot_seq);
        const struct eng_mt_node *n;
        uint64_t climbs = 0;

        SCREE_ASSERT_SHARD(mt);
        if (mt->idx_ok) {
                /* The key's newest version, then older ones down the list
                 * (a key's versions are adjacent, newest first). */
                n = mt_index_find(&mt->idx, key_hash(key, key_len), node_is_key, &q);
                while (n && n->seq > snapshot_seq) {
                        n = n->next[0];
                        if (n && !node_is_key(n, &q))
                                n = NULL;
                }
                if (!n)
                        return -SCREE_ENOTFOUND;
                node_entry(n, ret);
                return 0;
        }
        /* (key, snapshot) sorts right before the newest version <= snapshot. */
        n = find_ge(mt, &q, &climbs);
        if (!n || eng_key_cmp(node_key(n), n->key_len, key, key_len) != 0)
                return -SCREE_ENOTFOUND;
        node_entry(n, ret);
        return 0;
}

size_t eng_memtable_bytes(const struct eng_memtable *mt)
{
        return mt->arena.used_bytes + mt_index_bytes(&mt->idx);
}

uint64_t eng_memtable_climbs(const struct eng_memtable *mt)
{
        return mt->climbs;
}

uint64_t eng_memtable_dir_pushes(const struct eng_memtable *mt)
{
        return mt->dir_pushes;
}

uint64_t eng_memtable_count(const struct eng_memtable *mt)
{
        return mt->count;
}

/* Every bucket's entry point is the head or a tall node of a lower bucket. */
static bool dir_check(const struct eng_memtable *mt)
{
        for (uint32_t b = 0; b < mt->dir_n; b++) {
                const struct eng_mt_node *x = mt->dir[b];

                if (x != mt->head && (x->height < DIR_LEVELS || dir_bucket(mt, x->pfx[0]) >= b))
                        return false;
        }
        return true;
}

/* The index finds every key's newest version (the first of its run). */
static bool index_check(const struct eng_memtable *mt)
{
        const struct eng_mt_node *prev = NULL;

        if (!mt->idx_ok)
                return true;
        for (const struct eng_mt_node *n = mt->head->next[0]; n; prev = n, n = n->next[0]) {
                struct probe q = probe_of(node_key(n), n->key_len, n->seq);

                if (prev && node_is_key(prev, &q))
                        continue;
                if (mt_index_find(&mt->idx, key_hash(node_key(n), n->key_len), node_is_key, &q) != n)
                        return false;
        }
        return true;
}

bool eng_memtable_check(const struct eng_memtable *mt)
{
        if (!dir_check(mt) || !index_check(mt))
                return false;
        for (unsigned l = 0; l < mt->height; l++) {
                const struct eng_mt_node *a = mt->head->next[l];

                for (; a && a->next[l]; a = a->next[l]) {
                        const struct eng_mt_node *b = a->next[l];
                        struct probe q = probe_of(node_key(b), b->key_len, b->seq);

                        /* Ordered by the bytes, and the prefix words agree. */
                        if (a->height <= l || node_cmp(a, &q) >= 0 ||
                            eng_version_cmp(node_key(a), a->key_len, a->seq, q.key, q.key_len,
                                            q.seq) >= 0 ||
                            b->pfx[0] != q.pfx[0] || b->pfx[1] != q.pfx[1])
                                return false;
                }
        }
        return true;
}

/*
 * A scan walks the list's bottom level, one node a DRAM miss (nodes lie in
 * the order they were written, not the keys'), and a merge visits the
 * memtable between rows of the tables. So on reaching a node, its
 * successor's lines are fetched ahead: by the time the merge moves on,
 * they are in. (A 100-row scan over one table and a memtable holding a
 * tenth of the keys spent a fifth of its time on those misses.)
 */
static void prefetch_next(const struct eng_mt_node *n)
{
        const char *p;

        if (!n || !(p = (const char *)n->next[0]))
                return;
        prefetch_lines(p, 3);
}

void eng_memtable_iter_init(struct eng_memtable_iter *it, const struct eng_memtable *mt)
{
        it->mt = mt;
        it->node = NULL;
        it->climbs = 0;
}

void eng_memtable_iter_seek(struct eng_memtable_iter *it, const void *key, uint32_t key_len)
{
        eng_memtable_iter_seek_version(it, key, key_len, UINT64_MAX);
}

void eng_memtable_iter_seek_version(struct eng_memtable_iter *it, const void *key,
                                    uint32_t key_len, uint64_t seq)
{
        struct probe q = probe_of(key, key_len, seq);

        it->node = find_ge(it->mt, &q, &it->climbs);
        prefetch_next(it->node);
}

void eng_memtable_iter_seek_first(struct eng_memtable_iter *it)
{
        it->node = it->mt->head->next[0];
}

bool eng_memtable_iter_valid(const struct eng_memtable_iter *it)
{
        return it->node != NULL;
}

void eng_memtable_iter_next(struct eng_memtable_iter *it)
{
        it->node = it->node->next[0];
        prefetch_next(it->node);
}

void eng_memtable_iter_entry(const struct eng_memtable_iter *it, struct eng_entry *ret)
{
        node_entry(it->node, ret);
}

/*
 * Reverse moves. Nodes have no back links (a put would have to fix up a
 * fourth pointer per level, and the list's nodes would grow): the node
 * before another is found with a search from the top for the last node
 * below it, O(log n) a step, the directory making most of them short.
 */
static const struct eng_mt_node *or_null(const struct eng_memtable *mt, const struct eng_mt_node *n)
{
        return n == mt->head ? NULL : n;
}

void eng_memtable_iter_seek_lt(struct eng_memtable_iter *it, const void *key, uint32_t key_len)
{
        /* (key, UINT64_MAX) sorts before every real version of key. */
        struct probe q = probe_of(key, key_len, UINT64_MAX);

        it->node = or_null(it->mt, find_lt(it->mt, &q, &it->climbs));
}

void eng_memtable_iter_seek_last(struct eng_memtable_iter *it)
{
        const struct eng_mt_node *x = it->mt->head;

        for (int l = (int)it->mt->height - 1; l >= 0; l--)
                while (x->next[l])
                        x = x->next[l];
        it->node = or_null(it->mt, x);
}

void eng_memtable_iter_prev(struct eng_memtable_iter *it)
{
        const struct eng_mt_node *n = it->node;
        struct probe q = probe_of(node_key(n), n->key_len, n->seq);

        it->node = or_null(it->mt, find_lt(it->mt, &q, &it->climbs));
}
