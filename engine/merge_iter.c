/* SPDX-License-Identifier: Apache-2.0 */
/*
 * K-way merge; see merge_iter.h. Each child has a slot holding its current
 * entry while it is positioned; a binary min-heap of slot indexes orders the
 * positioned ones (ties, which a well-formed tablet never has, go to the
 * earlier-added child). The child on the current entry is always the heap's
 * top, and while a next is pending it stays there, so its completion only
 * sifts it down or removes it. A seek empties the heap and moves every
 * child; children are pushed as their seeks finish, and the view is applied
 * once none is pending. A child whose known smallest key lies above the
 * target is pushed lazy instead, on a stand-in entry, and really sought
 * when it reaches the top (merge_iter.h).
 *
 * The views skip versions by stepping the top child: older versions of the
 * key last looked at (its bytes are copied, as stepping may invalidate
 * them), and dead newest versions when the view drops them. A step that
 * waits suspends settle(); the child's completion resumes it.
 *
 * The user's callback is the last thing a completion does, so the callback
 * may free the merge (and with it the children, each allowed to be freed
 * from inside its own completion).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/compiler.h"
#include "base/mem.h"
#include "engine/key.h"
#include "engine/merge_int.h"
#include "engine/merge_iter.h"

struct slot {
        struct eng_merge_child *c;
        struct eng_entry e;             /* the child's entry while positioned */
        bool pending;                   /* a move of the child is under way */
        bool in_heap;
        bool lazy;                      /* e is (c->lo, UINT64_MAX), or (c->hi, 0) in
                                         * reverse; the seek is put off */
        bool at_newest;                 /* reverse: sought to its newest version of last */
};

#define MERGE_INLINE_CHILDREN 4
#define MERGE_INLINE_KEY 48

struct eng_merge_iter {
        struct eng_merge_opts o;
        uint8_t *end;                   /* o.end_key's copy (in bound) */
        uint8_t *start;                 /* o.start_key's copy (in bound) */
        struct slot *slots;
        size_t n, cap;
        uint32_t *heap;                 /* slot indexes; heap_cap == cap */
        size_t heap_n, heap_cap;
        uint32_t n_pending;             /* children whose move is under way */
        bool past_end;                  /* a child may hold keys at or past end (add_take) */
        int err;                        /* the move's first child error */
        bool valid, started;
        eng_merge_cb cb;
        void *arg;
        uint8_t *last;                  /* the key of the current entry (USER, COMPACT) */
        size_t last_len, last_cap;
        bool has_last;
        uint32_t skips;                 /* versions of last stepped over (USER) */
        /* Reverse USER: the newest version of last gathered yet, copied
         * (key: last), once has_cand. */
        struct eng_entry cand;
        uint8_t *cand_value;
        size_t cand_cap;
        bool has_cand;
        uint64_t gathered_seq;          /* of the version of last gathered last */
        struct eng_merge_stats stats;
        struct eng_sst_damage damage;   /* the first damaged block met, if stats.damaged */
        /* Where slots, heap and last start, so that a scan's merge of a
         * few children costs no allocation beyond its own (grow). */
        struct slot inline_slots[MERGE_INLINE_CHILDREN];
        uint32_t inline_heap[MERGE_INLINE_CHILDREN];
        uint8_t inline_last[MERGE_INLINE_KEY];
        uint8_t bound[];                /* end (forward) or start (reverse), copied */
};

/* mem_grow for a buffer that may still be the inline one, inl: from
 * there, it moves to the heap. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem, void *inl)
{
        size_t old = *cap;
        void *q;

        if (p != inl || need <= old)
                return mem_grow(p, cap, need, elem);
        if ((q = mem_grow(NULL, cap, need, elem)))
                memcpy(q, p, old * elem);
        return q;
}

/* ---- the heap ---- */

static bool before(const struct eng_merge_iter *m, uint32_t a, uint32_t b)
{
        const struct eng_entry *x = &m->slots[a].e, *y = &m->slots[b].e;
        int c = eng_version_cmp(x->key, x->key_len, x->seq, y->key, y->key_len, y->seq);

        if (m->o.reverse)
                c = -c;
        return c ? c < 0 : a < b;
}

static void sift_up(struct eng_merge_iter *m, size_t pos)
{
        uint32_t v = m->heap[pos];

        while (pos > 0) {
                size_t parent = (pos - 1) / 2;

                if (!before(m, v, m->heap[parent]))
                        break;
                m->heap[pos] = m->heap[parent];
                pos = parent;
        }
        m->heap[pos] = v;
}

static void sift_down(struct eng_merge_iter *m, size_t pos)
{
        uint32_t v = m->heap[pos];

        for (;;) {
                size_t child = 2 * pos + 1;

                if (child >= m->heap_n)
                        break;
                if (child + 1 < m->heap_n && before(m, m->heap[child + 1], m->heap[child]))
                        child++;
                if (!before(m, m->heap[child], v))
                        break;
                m->heap[pos] = m->heap[child];
                pos = child;
        }
        m->heap[pos] = v;
}

static void heap_push(struct eng_merge_iter *m, uint32_t i)
{
        m->slots[i].in_heap = true;
        m->heap[m->heap_n++] = i;
        sift_up(m, m->heap_n - 1);
}

static void heap_remove_top(struct eng_merge_iter *m)
{
        m->slots[m->heap[0]].in_heap = false;
        m->heap[0] = m->heap[--m->heap_n];
        if (m->heap_n)
                sift_down(m, 0);
}

static void heap_clear(struct eng_merge_iter *m)
{
        for (size_t i = 0; i < m->heap_n; i++)
                m->slots[m->heap[i]].in_heap = false;
        m->heap_n = 0;
}

/* ---- moving children ---- */

/* Child i's move ended with r (1, 0 or <0). A child in the heap is the top
 * one, moved by next. */
static void absorb(struct eng_merge_iter *m, uint32_t i, int r)
{
        struct slot *s = &m->slots[i];

        SCREE_ASSERT(!s->in_heap || m->heap[0] == i);
        if (r == 1) {
                s->c->ops->entry(s->c, &s->e);
                if (s->in_heap)
                        sift_down(m, 0);
                else
                        heap_push(m, i);
                return;
        }
        if (s->in_heap)
                heap_remove_top(m);
        if (r < 0 && !m->err)
                m->err = r;
}

/* Child i's move returned r: finished, or under way. */
static void moved(struct eng_merge_iter *m, uint32_t i, int r)
{
        if (r == ENG_SST_PENDING) {
                m->slots[i].pending = true;
                m->n_pending++;
                return;
        }
        absorb(m, i, r);
}

/* Reverse: moves child i, on the current entry, to the version before
 * it; in the USER view, once ENG_MERGE_MAX_SKIPS versions of last were
 * gathered, forward to its newest version of last instead (only once: a
 * child there steps on to the key before). */
static void step_back(struct eng_merge_iter *m, uint32_t i)
{
        struct slot *s = &m->slots[i];
        struct eng_merge_child *c = s->c;

        if (m->o.view == ENG_MERGE_USER && m->skips > ENG_MERGE_MAX_SKIPS && !s->at_newest) {
                s->at_newest = true;
                moved(m, i, c->ops->seek(c, m->last, m->last_len, UINT64_MAX));
                return;
        }
        s->at_newest = false;
        moved(m, i, c->ops->prev(c));
}

/* Moves the child on the current entry to its next version; in the USER
 * view, once ENG_MERGE_MAX_SKIPS versions of the remembered key were
 * stepped over, past that key's last version instead (a seek to seq 0
 * lands on a version of seq 0, if any, which is stepped over in turn). */
static void step(struct eng_merge_iter *m)
{
        uint32_t i = m->heap[0];
        struct eng_merge_child *c = m->slots[i].c;

        if (m->o.reverse) {
                step_back(m, i);
                return;
        }
        if (m->o.view == ENG_MERGE_USER && m->skips > ENG_MERGE_MAX_SKIPS &&
            m->slots[i].e.seq > 0) {
                moved(m, i, c->ops->seek(c, m->last, m->last_len, 0));
                return;
        }
        moved(m, i, c->ops->next(c));
}

/* ---- the views ---- */

static int stop(struct eng_merge_iter *m, int res)
{
        m->valid = false;
        m->has_last = false;
        return res;
}

static bool is_dead(const struct eng_merge_iter *m, const struct eng_entry *e)
{
        return e->kind == ENG_ENTRY_TOMBSTONE || (e->expiry_ms && e->expiry_ms <= m->o.now_ms);
}

/* Whether the view leaves out e, the newest version of its key; counts it. */
static bool drops_dead(struct eng_merge_iter *m, const struct eng_entry *e)
{
        if (!is_dead(m, e) || (m->o.view == ENG_MERGE_COMPACT && !m->o.bottommost))
                return false;
        if (e->kind == ENG_ENTRY_TOMBSTONE)
                m->stats.tombstones++;
        else
                m->stats.expired++;
        return true;
}

/* Remembers e's key as the one whose older versions are skipped. */
static int remember(struct eng_merge_iter *m, const struct eng_entry *e)
{
        uint8_t *p = grow(m->last, &m->last_cap, e->key_len, 1, m->inline_last);

        if (!p)
                return -ENOMEM;
        m->last = p;
        mem_copy_short(p, e->key, e->key_len);
        m->last_len = e->key_len;
        m->has_last = true;
        return 0;
}

/* Whether the view yields the top entry; otherwise it is to be stepped
 * over. <0 on failure. */
static int wanted(struct eng_merge_iter *m, const struct eng_entry *e)
{
        int r;

        if (m->o.view == ENG_MERGE_RAW)
                return 1;
        if (m->has_last && eng_key_cmp(e->key, e->key_len, m->last, m->last_len) == 0) {
                m->stats.shadowed++;
                m->skips++;
                return 0;
        }
        m->skips = 0;
        if ((r = remember(m, e)) < 0)
                return r;
        return !drops_dead(m, e);
}

/* Seeks the lazy top child i to its stand-in's key, for real. */
static void wake(struct eng_merge_iter *m, uint32_t i)
{
        struct slot *s = &m->slots[i];

        s->lazy = false;
        m->stats.woken++;
        if (m->o.reverse)
                moved(m, i, s->c->ops->seek_last(s->c));
        else
                moved(m, i, s->c->ops->seek(s->c, s->c->lo, s->c->lo_len, UINT64_MAX));
}

/* Reverse USER: whether a child besides the top one stands on key. All the
 * versions of the top's key come before any other key's in the heap's
 * order, so the second entry -- a child of the root -- tells. */
static bool other_on_key(const struct eng_merge_iter *m, const uint8_t *key, size_t len)
{
        for (size_t j = 1; j <= 2 && j < m->heap_n; j++) {
                const struct eng_entry *x = &m->slots[m->heap[j]].e;

                if (eng_key_cmp(x->key, x->key_len, key, len) == 0)
                        return true;
        }
        return false;
}

/* Reverse USER: takes in e, the top entry, a version of last newer than
 * those taken before (or the first of a new key). It is copied unless a
 * newer one is sure to follow, as the child will move off it. */
static int gather(struct eng_merge_iter *m, const struct eng_entry *e)
{
        uint8_t *v;
        int r;

        if (m->has_last && eng_key_cmp(e->key, e->key_len, m->last, m->last_len) == 0) {
                /* The same version again: a forward seek found the child at
                 * its newest, or another child holds a copy (a replay after
                 * a merge repeats versions an SSTable has: shard_merge.c),
                 * which is taken if none was. */
                if (e->seq == m->gathered_seq && m->has_cand)
                        return 0;
                if (e->seq != m->gathered_seq) {
                        m->stats.shadowed++;    /* the one taken before */
                        m->skips++;
                }
        } else {
                if ((r = remember(m, e)) < 0)
                        return r;
                m->skips = 0;
        }
        m->has_cand = false;
        m->gathered_seq = e->seq;
        if (other_on_key(m, e->key, e->key_len))
                return 0;
        if (!(v = mem_grow(m->cand_value, &m->cand_cap, e->value_len, 1)))
                return -ENOMEM;
        m->cand_value = v;
        if (e->value_len)
                memcpy(v, e->value, e->value_len);
        m->cand = *e;
        m->cand.key = m->last;
        m->cand.value = v;
        m->has_cand = true;
        return 0;
}

/* The reverse settle: the top entry unless it is below start_key; RAW
 * yields it, USER gathers the versions of its key until the top moves to
 * another key, then yields the newest unless the view drops it. */
static int settle_back(struct eng_merge_iter *m)
{
        for (;;) {
                const struct eng_entry *e = NULL;
                int r;

                if (m->n_pending)
                        return ENG_SST_PENDING;
                if (m->err)
                        return stop(m, m->err);
                if (m->heap_n)
                        e = &m->slots[m->heap[0]].e;
                if (e && m->start && eng_key_cmp(e->key, e->key_len, m->start, m->o.start_len) < 0)
                        e = NULL;
                if (e && m->slots[m->heap[0]].lazy) {
                        wake(m, m->heap[0]);
                        continue;
                }
                if (m->o.view == ENG_MERGE_USER && m->has_last &&
                    (!e || eng_key_cmp(e->key, e->key_len, m->last, m->last_len) != 0)) {
                        /* Every version of last is in. */
                        m->has_last = false;
                        if (!m->has_cand || drops_dead(m, &m->cand))
                                continue;
                        m->valid = true;
                        m->stats.entries++;
                        return 1;
                }
                if (!e)
                        return stop(m, 0);
                if (m->o.view == ENG_MERGE_RAW) {
                        m->valid = true;
                        m->stats.entries++;
                        return 1;
                }
                if ((r = gather(m, e)) < 0)
                        return stop(m, r);
                step(m);
        }
}

/* Finishes a move once no child is pending: applies the view, stepping
 * the top child over what it leaves out. 1, 0, <0 or ENG_SST_PENDING. */
static int settle(struct eng_merge_iter *m)
{
        if (m->o.reverse)
                return settle_back(m);
        for (;;) {
                const struct eng_entry *e;
                int r;

                if (m->n_pending)
                        return ENG_SST_PENDING;
                if (m->err)
                        return stop(m, m->err);
                if (!m->heap_n)
                        return stop(m, 0);
                e = &m->slots[m->heap[0]].e;
                if (m->past_end && eng_key_cmp(e->key, e->key_len, m->end, m->o.end_len) >= 0)
                        return stop(m, 0);
                if (m->slots[m->heap[0]].lazy) {
                        wake(m, m->heap[0]);
                        continue;
                }
                if ((r = wanted(m, e)) < 0)
                        return stop(m, r);
                if (r) {
                        m->valid = true;
                        m->stats.entries++;
                        return 1;
                }
                step(m);
        }
}

void eng_merge_child_done(struct eng_merge_child *c, int res)
{
        struct eng_merge_iter *m = c->m;
        struct slot *s = &m->slots[c->index];
        int r;

        SCREE_ASSERT(s->pending && m->n_pending > 0);
        s->pending = false;
        m->n_pending--;
        absorb(m, c->index, res);
        r = settle(m);
        if (r == ENG_SST_PENDING)
                return;
        m->cb(m, r, m->arg);    /* last: it may free m */
}

/* ---- the merge ---- */

int eng_merge_iter_new(const struct eng_merge_opts *o, struct eng_merge_iter **ret)
{
        const void *bound = o->reverse ? o->start_key : o->end_key;
        size_t bound_len = o->reverse ? o->start_len : o->end_len;
        struct eng_merge_iter *m;

        if (o->view <= ENG_MERGE_VIEW_INVALID || o->view >= ENG_MERGE_VIEW_MAX ||
            o->stream_bytes % MEM_DIRECT_ALIGN)
                return -EINVAL;
        if (o->reverse ? o->view == ENG_MERGE_COMPACT || o->stream_bytes || o->end_key :
                         o->start_key != NULL)
                return -EINVAL;
        /* calloc, as the merge starts zeroed; one byte more, so that an
         * empty bound still has an address. */
        if (!(m = calloc(1, sizeof(*m) + (bound ? bound_len : 0) + 1)))
                return -ENOMEM;
        m->o = *o;
        if (bound && bound_len)
                memcpy(m->bound, bound, bound_len);
        if (bound && o->reverse)
                m->start = m->bound;
        else if (bound)
                m->end = m->bound;
        m->slots = m->inline_slots;
        m->heap = m->inline_heap;
        m->cap = m->heap_cap = MERGE_INLINE_CHILDREN;
        m->last = m->inline_last;
        m->last_cap = MERGE_INLINE_KEY;
        m->o.end_key = m->end;
        m->o.start_key = m->start;
        *ret = m;
        return 0;
}

/* Whether child c may hold a key at or past the end key: one whose
 * largest key lies below it never makes a move stop there, so a merge of
 * such children skips the end's compare on every entry. */
static bool reaches_end(const struct eng_merge_iter *m, const struct eng_merge_child *c)
{
        return !c->hi || eng_key_cmp(c->hi, c->hi_len, m->end, m->o.end_len) >= 0;
}

int eng_merge_iter_add_take(struct eng_merge_iter *m, struct eng_merge_child *c)
{
        size_t cap = m->cap;
        struct slot *slots;
        uint32_t *heap;

        SCREE_ASSERT(!m->started);
        if (m->o.reverse && (!c->ops->seek_lt || !c->ops->seek_last || !c->ops->prev)) {
                c->ops->free(c);
                return -EINVAL;
        }
        slots = grow(m->slots, &cap, m->n + 1, sizeof(*slots), m->inline_slots);
        if (slots)
                m->slots = slots;
        heap = slots ? grow(m->heap, &m->heap_cap, cap, sizeof(*heap), m->inline_heap) : NULL;
        if (!heap) {
                c->ops->free(c);
                return -ENOMEM;
        }
        m->heap = heap;
        m->cap = cap;
        c->m = m;
        c->index = (uint32_t)m->n;
        if (m->end && !m->past_end)
                m->past_end = reaches_end(m, c);
        m->slots[m->n++] = (struct slot){ .c = c };
        return 0;
}

int eng_merge_iter_add_memtable(struct eng_merge_iter *m, struct eng_memtable *mt)
{
        struct eng_merge_child *c;
        int r = eng_merge_child_memtable_new(mt, &c);

        return r < 0 ? r : eng_merge_iter_add_take(m, c);
}

void eng_merge_iter_free(struct eng_merge_iter *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                m->slots[i].c->ops->free(m->slots[i].c);
        if (m->slots != m->inline_slots)
                free(m->slots);
        if (m->heap != m->inline_heap)
                free(m->heap);
        if (m->last != m->inline_last)
                free(m->last);
        free(m->cand_value);
        free(m);
}

static void begin(struct eng_merge_iter *m, eng_merge_cb cb, void *arg)
{
        SCREE_ASSERT(m->n_pending == 0);
        m->started = true;
        m->cb = cb;
        m->arg = arg;
        m->valid = false;
        m->err = 0;
}

/* Whether child c's seek to key (NULL: its start, or its end in reverse)
 * is put off; if so, *ret is its stand-in. */
static bool put_off(const struct eng_merge_iter *m, const struct eng_merge_child *c,
                    const void *key, size_t key_len, struct eng_entry *ret)
{
        if (m->o.reverse) {
                if (!c->hi || (key && eng_key_cmp(key, key_len, c->hi, c->hi_len) <= 0))
                        return false;
                *ret = (struct eng_entry){ .key = c->hi, .key_len = (uint32_t)c->hi_len };
                return true;
        }
        if (!key || !c->lo || eng_key_cmp(key, key_len, c->lo, c->lo_len) >= 0)
                return false;
        *ret = (struct eng_entry){ .key = c->lo, .key_len = (uint32_t)c->lo_len,
                                   .seq = UINT64_MAX };
        return true;
}

/* Moves child c to key: seek, or seek_lt in reverse; to its start (end)
 * when key is NULL. */
static int seek_child(const struct eng_merge_iter *m, struct eng_merge_child *c,
                      const void *key, size_t key_len)
{
        if (m->o.reverse)
                return key ? c->ops->seek_lt(c, key, key_len) : c->ops->seek_last(c);
        return key ? c->ops->seek(c, key, key_len, UINT64_MAX) : c->ops->seek_first(c);
}

/* Moves every child to key (or to its start, or end, when key is NULL). */
static int seek_all(struct eng_merge_iter *m, const void *key, size_t key_len)
{
        heap_clear(m);
        m->has_last = false;
        m->has_cand = false;
        for (uint32_t i = 0; i < m->n; i++) {
                struct slot *s = &m->slots[i];

                s->at_newest = false;
                s->lazy = put_off(m, s->c, key, key_len, &s->e);
                if (s->lazy) {
                        m->stats.lazy++;
                        heap_push(m, i);
                        continue;
                }
                moved(m, i, seek_child(m, s->c, key, key_len));
        }
        return settle(m);
}

int eng_merge_iter_seek_first(struct eng_merge_iter *m, eng_merge_cb cb, void *arg)
{
        if (m->o.reverse)
                return -EINVAL;
        begin(m, cb, arg);
        return seek_all(m, NULL, 0);
}

int eng_merge_iter_seek(struct eng_merge_iter *m, const void *key, size_t key_len,
                        eng_merge_cb cb, void *arg)
{
        static const uint8_t empty[1];

        if (m->o.reverse)
                return -EINVAL;
        begin(m, cb, arg);
        return seek_all(m, key ? key : empty, key_len);
}

int eng_merge_iter_next(struct eng_merge_iter *m, eng_merge_cb cb, void *arg)
{
        if (m->o.reverse)
                return -EINVAL;
        SCREE_ASSERT(m->valid);
        begin(m, cb, arg);
        step(m);
        return settle(m);
}

int eng_merge_iter_seek_last(struct eng_merge_iter *m, eng_merge_cb cb, void *arg)
{
        if (!m->o.reverse)
                return -EINVAL;
        begin(m, cb, arg);
        return seek_all(m, NULL, 0);
}

int eng_merge_iter_seek_lt(struct eng_merge_iter *m, const void *key, size_t key_len,
                           eng_merge_cb cb, void *arg)
{
        static const uint8_t empty[1];

        if (!m->o.reverse)
                return -EINVAL;
        begin(m, cb, arg);
        return seek_all(m, key ? key : empty, key_len);
}

/* In the USER view the children already stand past the current key (its
 * versions were all gathered): only RAW steps. */
int eng_merge_iter_prev(struct eng_merge_iter *m, eng_merge_cb cb, void *arg)
{
        if (!m->o.reverse)
                return -EINVAL;
        SCREE_ASSERT(m->valid);
        begin(m, cb, arg);
        if (m->o.view == ENG_MERGE_RAW)
                step(m);
        return settle(m);
}

bool eng_merge_iter_is_valid(const struct eng_merge_iter *m)
{
        return m->valid;
}

void eng_merge_iter_entry(const struct eng_merge_iter *m, struct eng_entry *ret)
{
        SCREE_ASSERT(m->valid);
        if (m->o.reverse && m->o.view == ENG_MERGE_USER)
                *ret = m->cand;
        else
                *ret = m->slots[m->heap[0]].e;
}

const struct eng_merge_stats *eng_merge_iter_stats(const struct eng_merge_iter *m)
{
        return &m->stats;
}

const struct eng_sst_damage *eng_merge_iter_damage(const struct eng_merge_iter *m)
{
        return m->stats.damaged ? &m->damage : NULL;
}

/* An SSTable child met a damaged block. Its iterator may outlive m only
 * while freed, and a freed iterator makes no move, so m is alive here. */
static void child_damaged(void *arg, const struct eng_sst_damage *d)
{
        struct eng_merge_iter *m = arg;

        if (!m->stats.damaged++)
                m->damage = *d;
}

int eng_merge_iter_add_sst(struct eng_merge_iter *m, struct eng_sst_table *t)
{
        struct eng_merge_child *c;
        int r = eng_merge_child_sst_for(t, &m->o, child_damaged, m, &c);

        return r < 0 ? r : eng_merge_iter_add_take(m, c);
}

