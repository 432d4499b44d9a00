/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ordered scans; see shard.h. A scan walks the shard's tablets of one
 * table in key order. For each tablet that meets [start, end) it builds a
 * merge (merge_iter.h, user view) over the tablet's memtables and its
 * table set at that moment, bounded by the tablet's range and the scan's
 * end, and takes entries until the limit. One more move finds the resume
 * position: the next entry, or the start of the next tablet in range when
 * this one is exhausted (that tablet may then turn out empty).
 *
 * The merge references the memtables and tables it reads, so flushes and
 * compactions may swap a tablet's state while the scan waits for a block.
 * With sc->skip_damaged its SSTable children step over a damaged data
 * block (sst_io.h) instead of failing; what each tablet's merge met of
 * them is summed into sc->damaged and sc->damage as the merge is freed.
 *
 * A reverse scan (sc->reverse) walks the tablets from the last down, each
 * with a reverse merge bounded below by the tablet's start or the scan's
 * (start_key) and sought to the last key under the tablet's end or the
 * scan's (seek_lt). The key of the limit-th entry is kept as it is given:
 * the merge's copy of it goes with the next move, which tells whether
 * there is more.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/endian.h"
#include "base/time.h"
#include "engine/catalog.h"
#include "engine/key.h"
#include "engine/shard_internal.h"

/* The longest position: a hash and the longest user key. */
#define SCAN_MAX_POS (ENG_HASH_BYTES + ENG_MAX_USER_KEY_BYTES)
/* scan_open_tablet: no tablet of the table is left in range. Apart from
 * every merge result, ENG_SST_PENDING included. */
#define SCAN_NO_TABLET 3
#define SCAN_FOREIGN 4                  /* ended at another shard's tablet */
static_assert(SCAN_NO_TABLET != ENG_SST_PENDING && SCAN_NO_TABLET > 1 &&
                      SCAN_FOREIGN != ENG_SST_PENDING && SCAN_FOREIGN != SCAN_NO_TABLET,
              "scan results overlap");

long eng_shard_scan_pos(const struct eng_shard *s, uint32_t t, const void *key, uint32_t key_len,
                        uint8_t *dst)
{
        uint8_t small[256], *ik;
        uint32_t len;
        int r = shard_ikey(s, t, key, key_len, small, sizeof(small), &ik, &len);

        if (r < 0)
                return r;
        memcpy(dst, ik + ENG_TABLE_ID_BYTES, len - ENG_TABLE_ID_BYTES);
        if (ik != small)
                free(ik);
        return len - ENG_TABLE_ID_BYTES;
}

void eng_scan_release(struct eng_scan *sc)
{
        free(sc->resume);
        sc->resume = NULL;
        sc->resume_len = 0;
}

static int bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
        return eng_key_cmp(a, (uint32_t)alen, b, (uint32_t)blen);
}

/* Frees the tablet's merge, keeping what it met of damaged blocks. */
static void scan_merge_free(struct eng_scan *sc)
{
        const struct eng_sst_damage *d = sc->m ? eng_merge_iter_damage(sc->m) : NULL;

        if (d) {
                if (!sc->damaged)
                        sc->damage = *d;
                sc->damaged += (uint32_t)eng_merge_iter_stats(sc->m)->damaged;
        }
        eng_merge_iter_free(sc->m);
        sc->m = NULL;
}

/* Ends the scan: frees the merge and the bounds (and after an error the
 * resume position a reverse scan may have kept), returns res. */
static int scan_end(struct eng_scan *sc, int res)
{
        if (res < 0)
                eng_scan_release(sc);
        scan_merge_free(sc);
        free(sc->bounds);
        sc->bounds = NULL;
        return res;
}

/* Records the resume position (an internal key of the scanned table):
 * forward, the next entry's, once it is known that there is one; in
 * reverse, the last entry given's, before the move that tells (more is
 * set then, in scan_drive). */
static int scan_set_resume(struct eng_scan *sc, const uint8_t *ikey, size_t len)
{
        sc->resume_len = (uint32_t)(len - ENG_TABLE_ID_BYTES);
        sc->resume = malloc(sc->resume_len ? sc->resume_len : 1);
        if (!sc->resume)
                return -ENOMEM;
        memcpy(sc->resume, ikey + ENG_TABLE_ID_BYTES, sc->resume_len);
        sc->more = !sc->reverse;
        return 0;
}

static int scan_deliver(struct eng_scan *sc, const struct eng_entry *e)
{
        uint32_t skip = sc->hashed ? ENG_HASH_BYTES : 0;
        struct eng_scan_item it = {
                .pos = e->key + ENG_TABLE_ID_BYTES,
                .pos_len = e->key_len - ENG_TABLE_ID_BYTES,
                .value = e->value, .value_len = e->value_len,
                .expiry_ms = e->expiry_ms, .seq = e->seq,
        };

        if (it.pos_len < skip)
                return -SCREE_ECORRUPT;
        it.key = it.pos + skip;
        it.key_len = it.pos_len - skip;
        sc->n++;
        if (sc->cur_version == eng_catalog_version(sc->s->cat)) {
                sc->cur->load.reads++;
                sc->cur->load.read_bytes += e->key_len + e->value_len;
        } else {
                shard_load_read(sc->s, e);      /* a split since: the tablet holding it now */
        }
        return sc->item(sc, &it);
}

/* A merge over tablet t's memtables (newest first) and tables, ending at
 * bound: the exclusive end, or in reverse the inclusive start. Returns 0
 * and *ret, or -ENOMEM. */
static int scan_merge_new(struct eng_scan *sc, struct eng_tablet *t, const uint8_t *bound,
                          size_t bound_len, struct eng_merge_iter **ret)
{
        struct eng_merge_opts o = {
                .view = ENG_MERGE_USER, .now_ms = sc->now_ms,
                .span = sc->limit - sc->n, .skip_damaged = sc->skip_damaged,
                .reverse = sc->reverse,
        };
        struct eng_merge_iter *m;
        uint32_t n;
        int r;

        if (sc->reverse) {
                o.start_key = bound;
                o.start_len = bound_len;
        } else {
                o.end_key = bound;
                o.end_len = bound_len;
        }
        shard_apply_pending(sc->s);     /* see every write submitted before */
        r = eng_merge_iter_new(&o, &m);
        if (r < 0)
                return r;
        /* An empty active memtable adds nothing the scan must see: what
         * lands there later was written after the scan started. */
        r = eng_memtable_count(t->active) ? eng_merge_iter_add_memtable(m, t->active) : 0;
        for (uint32_t i = t->n_imm; r == 0 && i-- > 0;)
                r = eng_merge_iter_add_memtable(m, t->imm[i].mt);
        for (uint32_t i = 0; r == 0 && t->tset && i < t->tset->n; i++)
                r = eng_merge_iter_add_sst(m, t->tset->e[i].t);
        if (r < 0) {
                eng_merge_iter_free(m);
                return r;
        }
        n = (t->tset ? t->tset->n : 0) + t->n_imm + (t->active_first_segment ? 1 : 0);
        if (n > 1)
                shard_read_debt(sc->s, t, (uint64_t)(n - 1) * SHARD_SCAN_SEEK_PROBES);
        *ret = m;
        return 0;
}

static void scan_moved(struct eng_merge_iter *m, int res, void *arg);

/* The tablet after sc->tablet in the scan's direction (UINT32_MAX below
 * the first). */
static uint32_t scan_step(const struct eng_scan *sc)
{
        return sc->reverse ? sc->tablet - 1 : sc->tablet + 1;
}

/*
 * Replaces the scan's start (forward) or end (reverse) with key: what the
 * tablet being opened covers up to. The rows beyond are that tablet's to
 * give, so the next tablet is found from there, by key, in the catalog of
 * its time: a split installed while the scan waited moves the tablets'
 * indexes, never their keys. 0 or -ENOMEM.
 */
static int scan_rebound(struct eng_scan *sc, const uint8_t *key, size_t len)
{
        size_t keep = sc->reverse ? sc->start_len : sc->end_len;
        const uint8_t *kept = sc->reverse ? sc->bounds : sc->bounds + sc->start_len;
        uint8_t *b = malloc(len + keep + 1);

        if (!b)
                return -ENOMEM;
        if (sc->reverse) {
                memcpy(b, kept, keep);
                memcpy(b + keep, key, len);
                sc->end_len = (uint32_t)len;
        } else {
                memcpy(b, key, len);
                memcpy(b + len, kept, keep);
                sc->start_len = (uint32_t)len;
        }
        free(sc->bounds);
        sc->bounds = b;
        return 0;
}

/* The tablet of ct to open first, from the scan's bounds: forward the one
 * holding its start, in reverse the one holding the keys just below its
 * end (UINT32_MAX: none; n_tablets: none either). */
static uint32_t scan_first(const struct eng_scan *sc, const struct eng_catalog_table *ct)
{
        const uint8_t *b = sc->reverse ? sc->bounds + sc->start_len : sc->bounds;
        uint32_t len = sc->reverse ? sc->end_len : sc->start_len, i;

        if (be32_get(b) != sc->table)   /* the next table's id: past the last tablet */
                return sc->reverse ? ct->n_tablets - 1 : ct->n_tablets;
        i = eng_catalog_route_ikey(ct, b, len);
        if (sc->reverse && bytes_cmp(eng_catalog_tablet_start(ct, i), ct->tablets[i].start_len,
                                     b, len) >= 0)
                i--;                    /* the end is i's start: below it is i - 1's */
        return i;
}

/* Opens tablet t's part [lo, hi) of the scan (lo, hi may point into
 * sc->bounds): moves the scan's bound past it (scan_rebound), then seeks
 * a new merge there. Returns the seek's result, or <0. */
static int scan_seek_tablet(struct eng_scan *sc, struct eng_tablet *t, const uint8_t *lo,
                            size_t lo_len, const uint8_t *hi, size_t hi_len)
{
        uint8_t *tmp = malloc(lo_len + hi_len + 1);
        int r;

        if (!tmp)
                return -ENOMEM;
        memcpy(tmp, lo, lo_len);
        memcpy(tmp + lo_len, hi, hi_len);
        lo = tmp;
        hi = tmp + lo_len;
        sc->cur = t;
        sc->cur_version = eng_catalog_version(sc->s->cat);
        r = sc->reverse ? scan_rebound(sc, lo, lo_len) : scan_rebound(sc, hi, hi_len);
        if (r == 0 && sc->reverse) {
                r = scan_merge_new(sc, t, lo, lo_len, &sc->m);
                r = r < 0 ? r : eng_merge_iter_seek_lt(sc->m, hi, hi_len, scan_moved, sc);
        } else if (r == 0) {
                r = scan_merge_new(sc, t, hi, hi_len, &sc->m);
                r = r < 0 ? r : eng_merge_iter_seek(sc->m, lo, lo_len, scan_moved, sc);
        }
        free(tmp);                      /* the merge copied its bound; a seek borrows its key */
        return r;
}

/* The walk met tablet sc->tablet of ct, which another shard owns (or is
 * taking over): ends the scan at the tablet's bound (resume; in reverse
 * an empty resume stands for the table's end), or at the last entry given
 * if a reverse page is full. SCAN_FOREIGN, SCAN_NO_TABLET when the tablet
 * lies outside what is left of the range (the walk goes on), or <0. */
static int scan_stop_foreign(struct eng_scan *sc, const struct eng_catalog_table *ct)
{
        uint8_t buf[ENG_TABLE_ID_BYTES];
        const uint8_t *end, *start = eng_catalog_tablet_start(ct, sc->tablet);
        uint32_t start_len = ct->tablets[sc->tablet].start_len;
        uint32_t end_len = eng_catalog_tablet_end(ct, sc->tablet, buf, &end);
        const uint8_t *lo = sc->bounds, *hi = sc->bounds + sc->start_len;
        int r = 0;

        if (bytes_cmp(start, start_len, hi, sc->end_len) >= 0 ||
            bytes_cmp(end, end_len, lo, sc->start_len) <= 0)
                return SCAN_NO_TABLET;
        sc->foreign = true;
        if (sc->reverse && sc->resume) {
                sc->more = true;        /* full: the next page ends at the last one given */
                return SCAN_FOREIGN;
        }
        if (sc->reverse) {
                if (bytes_cmp(end, end_len, hi, sc->end_len) > 0) {
                        end = hi;
                        end_len = sc->end_len;
                }
                if (be32_get(end) == sc->table)
                        r = scan_set_resume(sc, end, end_len);
                else if (!(sc->resume = malloc(1)))     /* the table's end */
                        r = -ENOMEM;
        } else {
                if (bytes_cmp(start, start_len, lo, sc->start_len) < 0) {
                        start = lo;
                        start_len = sc->start_len;
                }
                r = scan_set_resume(sc, start, start_len);
        }
        sc->more = true;
        return r < 0 ? r : SCAN_FOREIGN;
}

/* Moves to the next tablet of the table meeting the scan's range, in the
 * scan's direction: seeks a new merge there (to [lo, hi)'s start, or in
 * reverse below its end) and returns the seek's result; SCAN_NO_TABLET
 * when none is left; <0 on error. */
static int scan_open_tablet(struct eng_scan *sc)
{
        struct eng_shard *s = sc->s;
        /* Looked up at every step: the table may be dropped meanwhile. */
        const struct shard_route *rt = shard_route_of(s, sc->table);

        if (!rt)
                return sc->walked ? -SCREE_ENOTFOUND : SCAN_NO_TABLET;
        if (bytes_cmp(sc->bounds, sc->start_len, sc->bounds + sc->start_len, sc->end_len) >= 0)
                return SCAN_NO_TABLET;  /* the range is walked */
        /* Below the first tablet scan_step wraps to UINT32_MAX: past the last. */
        for (sc->tablet = scan_first(sc, rt->ct); sc->tablet < rt->ct->n_tablets;
             sc->tablet = scan_step(sc)) {
                struct eng_tablet *t = rt->tab[sc->tablet];
                const uint8_t *lo = sc->bounds, *hi = sc->bounds + sc->start_len;
                size_t lo_len = sc->start_len, hi_len = sc->end_len;

                if ((!t || t->moved_out) && sc->stop_at_foreign) {
                        int r = scan_stop_foreign(sc, rt->ct);

                        if (r != SCAN_NO_TABLET)
                                return r;
                        continue;
                }
                if (!t)
                        continue;       /* another shard's */
                if (bytes_cmp(t->start, t->start_len, lo, lo_len) > 0) {
                        lo = t->start;
                        lo_len = t->start_len;
                }
                if (bytes_cmp(t->end, t->end_len, hi, hi_len) < 0) {
                        hi = t->end;
                        hi_len = t->end_len;
                }
                if (bytes_cmp(lo, lo_len, hi, hi_len) >= 0)
                        continue;
                sc->walked = true;
                return scan_seek_tablet(sc, t, lo, lo_len, hi, hi_len);
        }
        return SCAN_NO_TABLET;
}

/* Goes on from the result r of the last move (or of opening a tablet).
 * Returns 0 (done), <0 (failed) or 1 (a move is pending). */
static int scan_drive(struct eng_scan *sc, int r)
{
        struct eng_entry e;

        for (;;) {
                if (r == ENG_SST_PENDING)
                        return 1;
                if (r < 0)
                        return scan_end(sc, r);
                if (r == SCAN_NO_TABLET) {
                        eng_scan_release(sc);   /* reverse: no more after the last */
                        return scan_end(sc, 0);
                }
                if (r == SCAN_FOREIGN)
                        return scan_end(sc, 0);
                if (r == 0) {           /* this tablet is exhausted: on from its bound */
                        scan_merge_free(sc);
                        r = scan_open_tablet(sc);
                        continue;
                }
                eng_merge_iter_entry(sc->m, &e);
                if (sc->n == sc->limit) {
                        if (sc->reverse) {
                                sc->more = true;        /* resume: the last one given */
                                return scan_end(sc, 0);
                        }
                        return scan_end(sc, scan_set_resume(sc, e.key, e.key_len));
                }
                r = scan_deliver(sc, &e);
                if (r == 0 && sc->reverse && sc->n == sc->limit)
                        r = scan_set_resume(sc, e.key, e.key_len);
                if (r < 0)
                        return scan_end(sc, r);
                r = sc->reverse ? eng_merge_iter_prev(sc->m, scan_moved, sc) :
                                  eng_merge_iter_next(sc->m, scan_moved, sc);
        }
}

static void scan_moved(struct eng_merge_iter *m, int res, void *arg)
{
        struct eng_scan *sc = arg;

        (void)m;
        res = scan_drive(sc, res);
        if (res != 1)
                sc->done(sc, res);
}

/* Every write in flight when the scan was called is in (from the order
 * task): start. */
static void scan_woken(struct eng_keyq_op *op)
{
        struct eng_scan *sc = container_of(op, struct eng_scan, qop);
        int r;

        r = sc->s->closing ? scan_end(sc, -SCREE_ESHUTDOWN) : scan_drive(sc, scan_open_tablet(sc));
        if (r != 1)
                sc->done(sc, r);
}

/* Writes the scan's bounds as internal keys: [prefix|start, prefix|end),
 * the end being the next table's start when there is none. */
static int scan_bounds(struct eng_scan *sc, const void *start, uint32_t start_len,
                       const void *end, uint32_t end_len)
{
        uint8_t *b;

        sc->start_len = ENG_TABLE_ID_BYTES + start_len;
        sc->end_len = ENG_TABLE_ID_BYTES + (end ? end_len : 0);
        b = malloc((size_t)sc->start_len + sc->end_len);
        if (!b)
                return -ENOMEM;
        be32_put(b, sc->table);
        if (start_len)
                memcpy(b + ENG_TABLE_ID_BYTES, start, start_len);
        /* Table ids stop below UINT32_MAX (catalog.c): id + 1 is the next table. */
        be32_put(b + sc->start_len, end ? sc->table : sc->table + 1);
        if (end && end_len)
                memcpy(b + sc->start_len + ENG_TABLE_ID_BYTES, end, end_len);
        sc->bounds = b;
        return 0;
}

int eng_shard_scan(struct eng_shard *s, uint32_t t, const void *start, uint32_t start_len,
                   const void *end, uint32_t end_len, uint32_t limit, struct eng_scan *sc)
{
        const struct shard_route *rt = shard_route_of(s, t);
        uint8_t *prev = sc->resume;
        int r;

        if (limit == 0 || !sc->item || start_len > SCAN_MAX_POS ||
            (end && end_len > SCAN_MAX_POS) || (start_len && !start))
                return -EINVAL;
        if (!rt)
                return -SCREE_ENOTFOUND;
        sc->s = s;
        sc->table = t;
        sc->hashed = rt->ct->mode == ENG_CATALOG_HASHED;
        r = scan_bounds(sc, start, start_len, end, end_len);
        if (r < 0)
                return r;
        free(prev);     /* start may have pointed into it */
        sc->limit = limit;
        sc->n = 0;
        sc->more = false;
        sc->foreign = false;
        sc->resume = NULL;
        sc->resume_len = 0;
        sc->m = NULL;
        sc->damaged = 0;
        sc->walked = false;
        sc->now_ms = time_wall_ns() / 1000000;
        if (!eng_keyq_is_idle(&s->keyq)) {
                /* See every write called before: wait for those in flight. */
                sc->qop = (struct eng_keyq_op){ .run = scan_woken };
                if (eng_keyq_barrier(&s->keyq, &sc->qop) == 0)
                        return 1;
        }
        return scan_drive(sc, scan_open_tablet(sc));
}
