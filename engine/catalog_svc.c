/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Catalog changes; see catalog_svc.h. On shard 0 a queue
 * of changes: the head is made, saved, and installed on every shard, then
 * answered; the next one starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/log.h"
#include "engine/catalog_svc.h"
#include "engine/shard.h"

/* Installing a snapshot on one shard. */
struct eng_cat_install {
        struct rx_msg msg;
        struct eng_cat_change *ch;
        struct rx_timer retry;
};

static void svc_next(struct eng_catsvc *svc);

/* ---- on the origin ---- */

static void change_answered(struct rx_loop *src, struct rx_msg *m)
{
        struct eng_cat_change *ch = container_of(m, struct eng_cat_change, msg);

        (void)src;
        ch->done(ch);
}

static int change_arrived(struct rx_loop *dst, struct rx_msg *m);

void eng_cat_submit(struct rx_loop *origin, struct eng_catsvc *svc, struct eng_cat_change *ch)
{
        ch->svc = svc;
        ch->res = 0;
        ch->err[0] = 0;
        ch->snap = NULL;
        ch->inst = NULL;
        ch->msg = (struct rx_msg){ .run = change_arrived, .done = change_answered,
                                   .name = "catalog change" };
        rx_smp_submit(origin, 0, &ch->msg);
}

/* ---- on shard 0 ---- */

/* The head change is over: answer it, start the next. */
static void change_end(struct eng_catsvc *svc, struct eng_cat_change *ch, int res)
{
        ch->res = res;
        if (res < 0 && !ch->err[0])
                snprintf(ch->err, sizeof(ch->err), "%s", scree_strerror(res));
        if (res < 0 && ch->prepared && ch->undo)
                ch->undo(ch);
        eng_catalog_unref(ch->snap);
        ch->snap = NULL;
        free(ch->inst);
        ch->inst = NULL;
        svc->q_head = ch->next;
        if (!svc->q_head)
                svc->q_tail = NULL;
        svc->busy = false;
        rx_smp_reply(svc->loop0, &ch->msg);
        svc_next(svc);
}

static void install_done(struct rx_loop *src, struct rx_msg *m)
{
        struct eng_cat_install *in = container_of(m, struct eng_cat_install, msg);
        struct eng_cat_change *ch = in->ch;

        if (--ch->left)
                return;
        (void)src;
        change_end(ch->svc, ch, 0);
}

static int install_try(struct rx_loop *loop, struct eng_cat_install *in)
{
        struct eng_catsvc *svc = in->ch->svc;
        struct eng_shard *eng = svc->shards->of(loop);
        int r = 0;

        if (eng)
                r = eng_shard_set_catalog(eng, in->ch->snap);
        if (r == 0 && svc->installed)
                svc->installed(loop, svc->arg);
        return r;
}

static void install_retry(struct rx_loop *loop, struct rx_timer *t)
{
        struct eng_cat_install *in = container_of(t, struct eng_cat_install, retry);
        if (install_try(loop, in) == 0) {
                rx_smp_reply(loop, &in->msg);
                return;
        }
        rx_timer_arm_after(loop, &in->retry, 10 * 1000 * 1000);
}

/* On every shard: route by the new snapshot. The catalog is durable with
 * it already, so a shard that lacks the memory now tries again until it
 * can: the change is answered only once every shard has it. */
static int install_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct eng_cat_install *in = container_of(m, struct eng_cat_install, msg);
        int r = install_try(dst, in);

        if (r == 0)
                return 0;
        /* -EBUSY: a tablet it splits finishes a flush or compaction first. */
        if (r == -EBUSY)
                log_debug("shard %u: catalog version %llu waits for a tablet's flush or "
                          "compaction", rx_loop_shard_id(dst), (unsigned long long)eng_catalog_version(in->ch->snap));
        else
                log_warn("shard %u: installing catalog version %llu failed (%s); retrying", rx_loop_shard_id(dst),
                         (unsigned long long)eng_catalog_version(in->ch->snap), scree_strerror(r));
        rx_timer_init(&in->retry, install_retry, "catalog install retry");
        rx_timer_arm_after(dst, &in->retry, 10 * 1000 * 1000);
        return RX_MSG_DEFERRED;
}

static void change_saved(struct eng_catalog_save *w, int res)
{
        struct eng_cat_change *ch = w->ctx;
        struct eng_catsvc *svc = ch->svc;
        unsigned n = svc->shards->n;

        if (res < 0) {
                log_error("writing the catalog (version %llu) failed: %s",
                          (unsigned long long)eng_catalog_version(ch->snap), scree_strerror(res));
                snprintf(ch->err, sizeof(ch->err), "writing the catalog failed: %s",
                         scree_strerror(res));
                change_end(svc, ch, res);
                return;
        }
        /* Durable: what prepare did stands (the catalog says so now),
         * whatever happens next. */
        ch->prepared = false;
        eng_catalog_unref(svc->head);
        svc->head = eng_catalog_ref(ch->snap);
        ch->version = eng_catalog_version(ch->snap);
        ch->inst = calloc(n, sizeof(*ch->inst));
        if (!ch->inst) {
                /* Durable but not installed: only a restart would show
                 * it. Should memory be this short, stop routing changes. */
                log_error("catalog version %llu is written but no memory is left to install it",
                          (unsigned long long)ch->version);
                change_end(svc, ch, -ENOMEM);
                return;
        }
        ch->left = n;
        for (unsigned i = 0; i < n; i++) {
                ch->inst[i] = (struct eng_cat_install){ .ch = ch };
                ch->inst[i].msg = (struct rx_msg){ .run = install_run, .done = install_done,
                                                   .name = "catalog install" };
                rx_smp_submit(svc->loop0, i, &ch->inst[i].msg);
        }
}

/* Makes and saves head change ch. */
static void change_make(struct eng_catsvc *svc, struct eng_cat_change *ch)
{
        int r;

        if (!svc->store) {
                change_end(svc, ch, -SCREE_ESHUTDOWN);
                return;
        }
        r = ch->fn(ch, svc->head, &ch->snap);
        if (r < 0) {
                change_end(svc, ch, r);
                return;
        }
        ch->save = (struct eng_catalog_save){ .done = change_saved, .ctx = ch };
        r = eng_catalog_store_save(svc->store, ch->snap, &ch->save);
        if (r != 0)
                change_saved(&ch->save, r > 0 ? 0 : r);
}

static void change_prepared(struct eng_cat_change *ch, int res)
{
        struct eng_catsvc *svc = ch->svc;

        if (res < 0) {
                change_end(svc, ch, res);
                return;
        }
        ch->prepared = true;
        change_make(svc, ch);
}

/* Prepares (if the change asks), makes and saves the head change. */
static void svc_next(struct eng_catsvc *svc)
{
        struct eng_cat_change *ch = svc->q_head;

        if (svc->busy || !ch)
                return;
        svc->busy = true;
        ch->prepared = false;
        if (ch->prepare && svc->store)
                ch->prepare(ch, svc->head, change_prepared);
        else
                change_make(svc, ch);
}

static int change_arrived(struct rx_loop *dst, struct rx_msg *m)
{
        struct eng_cat_change *ch = container_of(m, struct eng_cat_change, msg);
        struct eng_catsvc *svc = ch->svc;

        (void)dst;
        ch->next = NULL;
        if (svc->q_tail)
                svc->q_tail->next = ch;
        else
                svc->q_head = ch;
        svc->q_tail = ch;
        svc_next(svc);
        return RX_MSG_DEFERRED;
}

int eng_catsvc_start(struct eng_catsvc *svc, struct rx_loop *loop0, struct eng_fs *fs,
                     const char *dir)
{
        svc->loop0 = loop0;
        return eng_catalog_store_new(loop0, fs, dir, &svc->store);
}

int eng_catsvc_stop(struct eng_catsvc *svc, void (*done)(void *arg, int res), void *arg)
{
        struct eng_catalog_store *st = svc->store;

        svc->store = NULL;
        if (!st)
                return -EALREADY;
        return eng_catalog_store_close(st, done, arg);
}

/* ---- start-up and stop (main thread) ---- */

int eng_catsvc_load(struct eng_catsvc *svc, const char *dir, uint32_t tablets_per_shard,
                    const char *shards_hint, bool *ret_made, char *err, size_t err_len)
{
        unsigned n_shards = svc->shards->n;
        struct eng_catalog *c = NULL;
        char why[512];
        int r = eng_catalog_store_read(dir, &c, why, sizeof(why));

        if (r == -SCREE_ENOTFOUND) {
                /* A new directory, or one from before catalogs: its first
                 * catalog is the static map its manifests were made with. */
                r = eng_catalog_initial(n_shards, tablets_per_shard, &c);
                if (r == 0)
                        r = eng_catalog_store_write_sync(dir, c, why, sizeof(why));
                if (r < 0) {
                        snprintf(err, err_len, "cannot write the first catalog in %s: %s", dir,
                                 r == -ENOMEM ? "out of memory" : why);
                        eng_catalog_unref(c);
                        return r;
                }
                *ret_made = true;
        } else if (r < 0) {
                snprintf(err, err_len, "%s; the catalog of tables cannot be read, so the data "
                         "cannot be routed: restore %s/CATALOG from a backup", why, dir);
                return r;
        } else if (eng_catalog_n_shards(c) != n_shards) {
                snprintf(err, err_len, "%s/CATALOG was made for %u shards, not %u: start with "
                         "%s %u, or use another directory", dir, eng_catalog_n_shards(c),
                         n_shards, shards_hint, eng_catalog_n_shards(c));
                eng_catalog_unref(c);
                return -EINVAL;
        }
        svc->head = c;
        return 0;
}

void eng_catsvc_undo(const char *dir)
{
        char path[4096];

        snprintf(path, sizeof(path), "%s/%s", dir, ENG_CATALOG_STORE_NAME);
        (void)unlink(path);
}

/* ---- forgetting dropped tables ---- */

/* A sweep: which dropped ids some shard still holds data of. */
struct forget_sweep {
        struct eng_catsvc *svc;
        struct eng_catalog *snap;       /* the head when it started */
        uint32_t n_ids;
        const uint32_t *ids;            /* snap's dropped list */
        bool *held;                     /* [n_ids] */
        unsigned left;
        struct eng_cat_change ch;
        struct forget_probe {
                struct rx_msg msg;
                struct forget_sweep *fs;
                bool *held;             /* [n_ids]: this shard's answer */
        } *probes;
};

static void sweep_free(struct forget_sweep *fs)
{
        for (unsigned i = 0; fs->probes && i < fs->svc->shards->n; i++)
                free(fs->probes[i].held);
        free(fs->probes);
        free(fs->held);
        eng_catalog_unref(fs->snap);
        fs->svc->forgetting = false;
        free(fs);
}

static int forget_fn(struct eng_cat_change *ch, const struct eng_catalog *cur,
                     struct eng_catalog **ret)
{
        struct forget_sweep *fs = ch->ctx;
        struct eng_catalog *c = NULL, *n;

        for (uint32_t i = 0; i < fs->n_ids; i++) {
                if (fs->held[i] || eng_catalog_forget_dropped(c ? c : cur, fs->ids[i], &n, ch->err,
                                                              sizeof(ch->err)) < 0)
                        continue;       /* still held, or forgotten meanwhile */
                eng_catalog_unref(c);
                c = n;
        }
        if (!c)
                return -SCREE_ENOTFOUND;        /* nothing to forget */
        *ret = c;
        return 0;
}

static void forget_done(struct eng_cat_change *ch)
{
        sweep_free(ch->ctx);
}

static void probe_done(struct rx_loop *src, struct rx_msg *m)
{
        struct forget_probe *p = container_of(m, struct forget_probe, msg);
        struct forget_sweep *fs = p->fs;
        bool any = false;

        (void)src;
        for (uint32_t i = 0; i < fs->n_ids; i++)
                fs->held[i] |= p->held[i];
        if (--fs->left)
                return;
        for (uint32_t i = 0; i < fs->n_ids; i++)
                any |= !fs->held[i];
        if (!any) {
                sweep_free(fs);
                return;
        }
        fs->ch = (struct eng_cat_change){ .fn = forget_fn, .done = forget_done, .ctx = fs };
        eng_cat_submit(fs->svc->loop0, fs->svc, &fs->ch);
}

static int probe_run(struct rx_loop *dst, struct rx_msg *m)
{
        struct forget_probe *p = container_of(m, struct forget_probe, msg);
        struct eng_shard *eng = p->fs->svc->shards->of(dst);

        for (uint32_t i = 0; i < p->fs->n_ids; i++)
                p->held[i] = !eng || eng_shard_holds_table(eng, p->fs->ids[i]);
        return 0;
}

void eng_catsvc_tick(struct eng_catsvc *svc, bool all_ready)
{
        unsigned n = svc->shards->n;
        struct forget_sweep *fs;
        uint32_t n_ids = 0;
        const uint32_t *ids;

        if (!svc->head || svc->busy || svc->forgetting || !svc->store || !all_ready)
                return;
        ids = eng_catalog_dropped(svc->head, &n_ids);
        if (!n_ids)
                return;
        fs = calloc(1, sizeof(*fs));
        if (!fs)
                return;
        svc->forgetting = true;
        fs->svc = svc;
        fs->snap = eng_catalog_ref(svc->head);
        fs->ids = ids;
        fs->n_ids = n_ids;
        fs->held = calloc(n_ids, sizeof(bool));
        fs->probes = calloc(n, sizeof(*fs->probes));
        if (!fs->held || !fs->probes) {
                sweep_free(fs);
                return;
        }
        for (unsigned i = 0; i < n; i++) {
                fs->probes[i].held = calloc(n_ids, sizeof(bool));
                if (!fs->probes[i].held) {
                        sweep_free(fs);
                        return;
                }
        }
        fs->left = n;
        for (unsigned i = 0; i < n; i++) {
                fs->probes[i].fs = fs;
                fs->probes[i].msg = (struct rx_msg){ .run = probe_run, .done = probe_done,
                                                     .name = "catalog forget probe" };
                rx_smp_submit(svc->loop0, i, &fs->probes[i].msg);
        }
}
