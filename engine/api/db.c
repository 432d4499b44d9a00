/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree_open and scree_close: the data directory's lock and checks, the
 * catalog, the shard threads and their engines; the host threads'
 * catalog snapshots. See api_int.h.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/time.h"
#include "engine/api/req.h"
#include "engine/catalog_store.h"
#include "engine/fs.h"
#include "engine/xtxn_resolve.h"

#define TICK_NS NS_PER_SEC

static _Atomic uint64_t next_serial = 1;
static _Atomic unsigned dbs_open;       /* db_new to db_free (scree_set_log) */

unsigned api_dbs_open(void)
{
        return atomic_load(&dbs_open);
}

/* ---- host threads' catalog snapshots ---- */

#define TLS_SLOTS 4

struct tls_cat {
        uint64_t serial;
        uint64_t version;
        struct eng_catalog *cat;
};

static _Thread_local struct tls_cat tls_cats[TLS_SLOTS];
static _Thread_local unsigned tls_next;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_drop(void *arg)
{
        (void)arg;
        for (unsigned i = 0; i < TLS_SLOTS; i++) {
                eng_catalog_unref(tls_cats[i].cat);
                tls_cats[i] = (struct tls_cat){ 0 };
        }
}

static void tls_init(void)
{
        (void)pthread_key_create(&tls_key, tls_drop);
}

struct eng_catalog *api_catalog(struct scree_db *db)
{
        uint64_t v = atomic_load_explicit(&db->cur_version, memory_order_acquire);
        struct tls_cat *c = NULL;

        for (unsigned i = 0; i < TLS_SLOTS; i++)
                if (tls_cats[i].serial == db->serial) {
                        c = &tls_cats[i];
                        if (c->version == v)
                                return c->cat;
                        break;
                }
        if (!c) {
                (void)pthread_once(&tls_once, tls_init);
                (void)pthread_setspecific(tls_key, tls_cats);   /* tls_drop at thread exit */
                c = &tls_cats[tls_next++ % TLS_SLOTS];
                c->serial = db->serial;
        }
        eng_catalog_unref(c->cat);
        /* Published snapshots stay referenced by the database until it
         * closes (api_catalog_publish): this one cannot be freed between
         * the load and the reference. */
        c->cat = eng_catalog_ref(atomic_load_explicit(&db->cur, memory_order_acquire));
        c->version = eng_catalog_version(c->cat);
        return c->cat;
}

/* One publisher at a time: scree_open before the shards run, then shard 0
 * (catalog changes are made there one after another). */
void api_catalog_publish(struct scree_db *db, struct eng_catalog *snap)
{
        struct eng_catalog *old = atomic_load_explicit(&db->cur, memory_order_relaxed);
        struct eng_catalog **kept;

        if (old && eng_catalog_version(old) >= eng_catalog_version(snap))
                return;
        kept = realloc(db->kept, (db->n_kept + 1) * sizeof(*kept));
        if (!kept)
                return;         /* routing stays on the older snapshot: the shards correct it */
        db->kept = kept;
        db->kept[db->n_kept++] = eng_catalog_ref(snap);
        atomic_store_explicit(&db->cur, snap, memory_order_release);
        atomic_store_explicit(&db->cur_version, eng_catalog_version(snap), memory_order_release);
}

/* Forgets this thread's snapshot of db (closing). */
static void tls_forget(const struct scree_db *db)
{
        for (unsigned i = 0; i < TLS_SLOTS; i++)
                if (tls_cats[i].serial == db->serial) {
                        eng_catalog_unref(tls_cats[i].cat);
                        tls_cats[i] = (struct tls_cat){ 0 };
                }
}

/* ---- running things on a shard ---- */

int64_t api_on_shard(struct scree_db *db, unsigned i,
                     void (*fn)(struct rx_loop *loop, struct rx_alien_req *req), void *ctx)
{
        struct rx_alien_req req = { .run = fn, .ctx = ctx };
        int64_t r = -SCREE_ESHUTDOWN;

        if (rx_smp_alien_submit(db->smp, i, &req) == 0)
                r = rx_alien_wait(&req);
        if (r < 0)
                api_fail((int)r, "%s", api_res_message(API_OP_NONE, (int)r));
        return r;
}

struct eng_shard *api_engine_of(struct rx_loop *loop)
{
        struct api_shard *sh = rx_loop_user(loop);

        return sh ? sh->eng : NULL;
}

/* ---- catalog changes ---- */

struct change {
        struct eng_cat_change ch;
        struct rx_alien_req *req;
        bool keep_message;              /* asynchronous: copy the error for the completion */
        char *message;
        void (*ctx_free)(void *ctx);
};

static void change_done(struct eng_cat_change *ch)
{
        struct change *c = container_of(ch, struct change, ch);
        struct api_shard *sh0 = rx_loop_user(ch->svc->loop0);

        if (ch->res == 0)
                api_catalog_publish(sh0->db, ch->svc->head);
        else if (c->keep_message)
                c->message = strdup(ch->err[0] ? ch->err : scree_strerror(ch->res));
        rx_alien_complete(c->req, ch->res);
}

static void change_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct change *c = req->ctx;
        struct api_shard *sh = rx_loop_user(loop);

        c->req = req;
        eng_cat_submit(loop, &sh->db->cat, &c->ch);
}

int api_catalog_change(struct scree_db *db, eng_cat_change_fn fn, void *ctx)
{
        struct change c = { .ch = { .fn = fn, .done = change_done, .ctx = ctx } };
        int r = api_off_shard();

        if (r < 0)
                return r;
        r = (int)api_on_shard(db, 0, change_run, &c);
        if (r < 0)
                return api_fail(r, "%s", c.ch.err[0] ? c.ch.err : scree_strerror(r));
        return 0;
}

static void change_run_async(struct rx_loop *loop, struct rx_alien_req *ar)
{
        struct api_req *rq = container_of(ar, struct api_req, ar);

        ar->ctx = rq->state;
        change_run(loop, ar);
}

static void change_finish(struct api_req *rq, scree_completion *comp)
{
        struct change *c = rq->state;

        rq->message = c->message;
        if (c->ctx_free)
                c->ctx_free(c->ch.ctx);
        free(c);
}

int api_catalog_change_async(scree_cq *q, enum api_op op, eng_cat_change_fn fn, void *ctx,
                             void (*ctx_free)(void *ctx), void *tag)
{
        struct api_req *rq = calloc(1, sizeof(*rq));
        struct change *c = calloc(1, sizeof(*c));
        int r;

        if (!rq || !c) {
                free(rq);
                free(c);
                if (ctx_free)
                        ctx_free(ctx);
                return api_fail(-ENOMEM, "out of memory");
        }
        *c = (struct change){ .ch = { .fn = fn, .done = change_done, .ctx = ctx },
                              .keep_message = true, .ctx_free = ctx_free };
        *rq = (struct api_req){ .db = q->db, .cq = q, .op = op, .tag = tag, .state = c,
                                .run = change_run_async, .finish = change_finish };
        r = api_req_send(rq, 0);
        if (r < 0) {
                change_finish(rq, NULL);
                free(rq);
                return r;
        }
        api_cq_submitted(q);
        return 0;
}

/* ---- on the shards ---- */

static void shard_tick(struct rx_loop *loop, struct rx_timer *t)
{
        struct api_shard *sh = container_of(t, struct api_shard, tick);

        if (sh->eng)
                eng_shard_tick(sh->eng);
        if (sh->id == 0) {
                unsigned ready = 0;

                for (unsigned i = 0; i < sh->db->n; i++)
                        ready += atomic_load(&sh->db->shards[i].state) == API_SHARD_READY;
                eng_catsvc_tick(&sh->db->cat, ready == sh->db->n);
        }
        rx_timer_arm_after(loop, t, TICK_NS);
}

static void engine_opened(void *arg, int res, struct eng_shard *s)
{
        struct api_shard *sh = arg;
        struct rx_alien_req *w = sh->waiter;

        sh->eng = res == 0 ? s : NULL;
        if (res == 0 && sh->start_err < 0)
                res = sh->start_err;    /* the catalog store: the engine closes at stop */
        sh->open_err = res;
        atomic_store(&sh->state, res == 0 ? API_SHARD_READY : API_SHARD_FAILED);
        sh->waiter = NULL;
        if (w)
                rx_alien_complete(w, res);
}

static void shard_start(struct rx_loop *loop, void *arg)
{
        struct scree_db *db = arg;
        struct api_shard *sh = &db->shards[rx_loop_shard_id(loop)];
        const struct api_opts *o = &db->opts;
        uint64_t cache = o->cache ? o->cache : o->memory / 4;
        struct eng_shard_opts eo = {
                .dir = sh->dir,
                .shard = sh->id,
                .n_shards = db->n,
                .sync = o->periodic ? ENG_WAL_SYNC_PERIODIC : ENG_WAL_SYNC_BATCH,
                .period_ns = (uint64_t)o->period_ms * NS_PER_MS,
                .memtable_budget = (size_t)(o->memory / 2 / db->n),
                .cache_bytes = (size_t)(cache / db->n),
                .prefault_memtables = o->prefault,
                .salvage = o->salvage,
                .salvage_hint = "the salvage option (scree_options_set(o, \"salvage\", \"yes\"))",
                .catalog = db->cat.head,
        };
        int r;

        sh->loop = loop;
        rx_loop_set_user(loop, sh);
        rx_timer_init(&sh->tick, shard_tick, "api:tick");
        rx_timer_arm_after(loop, &sh->tick, TICK_NS);
        sh->fs = eng_fs_direct_new(loop);
        r = sh->fs ? eng_shard_open(loop, sh->fs, &eo, engine_opened, sh) : -ENOMEM;
        if (r < 0) {
                sh->open_err = r;
                atomic_store(&sh->state, API_SHARD_FAILED);
                return;
        }
        /* The engine's open is under way: a failure here waits for it
         * (engine_opened), which the close then tears down. */
        if (sh->id == 0)
                sh->start_err = eng_catsvc_start(&db->cat, loop, sh->fs, db->dir);
}

/* Waits (alien) for the shard's engine to open. */
static void wait_open_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct api_shard *sh = rx_loop_user(loop);

        if (atomic_load(&sh->state) != API_SHARD_LOADING) {
                rx_alien_complete(req, sh->open_err);
                return;
        }
        sh->waiter = req;
}

static void resolved(void *arg)
{
        rx_alien_complete(arg, 0);
}

static void resolve_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct api_shard *sh = rx_loop_user(loop);

        eng_xtxn_resolve(loop, &sh->db->eng_shards, resolved, req);
}

/* ---- closing, on the shards ---- */

static void engine_closed(void *arg, int res)
{
        struct api_shard *sh = arg;
        struct rx_alien_req *w = sh->waiter;

        rx_timer_cancel(sh->loop, &sh->tick);
        sh->eng = NULL;
        eng_fs_free(sh->fs);
        sh->fs = NULL;
        atomic_store(&sh->state, API_SHARD_CLOSED);
        sh->waiter = NULL;
        if (w)
                rx_alien_complete(w, res);
}

static void close_engine(struct api_shard *sh)
{
        if (!sh->eng) {
                engine_closed(sh, 0);
                return;
        }
        sh->wrote = eng_shard_stats(sh->eng)->writes > 0;
        atomic_store(&sh->state, API_SHARD_CLOSED);
        if (eng_shard_close(sh->eng, engine_closed, sh) < 0)
                engine_closed(sh, -EIO);
}

static void catalog_closed(void *arg, int res)
{
        if (res < 0)
                log_warn("closing the catalog: %s", scree_strerror(res));
        close_engine(arg);
}

static void close_run(struct rx_loop *loop, struct rx_alien_req *req)
{
        struct api_shard *sh = rx_loop_user(loop);

        sh->waiter = req;
        /* The store writes through shard 0's fs: it closes first. */
        if (sh->id == 0 && eng_catsvc_stop(&sh->db->cat, catalog_closed, sh) == 0)
                return;
        close_engine(sh);
}

/* ---- open and close, on the host thread ---- */

static unsigned cpu_count(void)
{
        cpu_set_t set;

        if (sched_getaffinity(0, sizeof(set), &set) < 0 || CPU_COUNT(&set) < 1)
                return 1;
        return (unsigned)CPU_COUNT(&set);
}

/* smp unset: the shards an existing database was made with (its
 * catalog says), else one per CPU. */
static unsigned dir_shards(const char *dir)
{
        struct eng_catalog *c = NULL;
        char why[256];
        unsigned n = 0;

        if (dir && eng_catalog_store_read(dir, &c, why, sizeof(why)) == 0)
                n = eng_catalog_n_shards(c);
        eng_catalog_unref(c);
        return n ? n : cpu_count();
}

static int dir_lock(struct scree_db *db)
{
        pid_t holder = 0;
        int r = eng_datadir_lock(&db->lock, db->dir, &holder);

        if (r == -EWOULDBLOCK && holder > 0)
                return api_fail(r, "database %s is open in process %ld (lock file %s)", db->dir,
                                (long)holder, db->lock.path);
        if (r == -EWOULDBLOCK)
                return api_fail(r, "database %s is open elsewhere (lock file %s)", db->dir,
                                db->lock.path);
        if (r < 0)
                return api_fail(r, "cannot lock database %s: %s", db->dir, scree_strerror(r));
        return 0;
}

/* Each shard directory with a manifest against the layout this open
 * would use, before any shard creates a file. */
static int layout_check(struct scree_db *db)
{
        for (unsigned i = 0; i < db->n; i++) {
                const char *dir = db->shards[i].dir;
                struct eng_manifest_layout got;
                int r = eng_datadir_layout_read(dir, &got);

                if (r == -SCREE_ENOTFOUND)
                        continue;
                if (r < 0)
                        return api_fail(r, "cannot read %s/MANIFEST: %s", dir, scree_strerror(r));
                if (got.shard != i || got.n_shards != db->n ||
                    got.tablets_per_shard != ENG_SHARD_DEFAULT_TABLETS)
                        return api_fail(-EINVAL, "%s was made as shard %u of %u, not shard %u of "
                                        "%u: open it with the smp option %u", dir, got.shard,
                                        got.n_shards, i, db->n, got.n_shards);
        }
        return 0;
}

static int shard_dirs_make(struct scree_db *db)
{
        struct stat st;

        for (unsigned i = 0; i < db->n; i++) {
                struct api_shard *sh = &db->shards[i];

                sh->made_dir = stat(sh->dir, &st) < 0 && errno == ENOENT;
                if (mkdir(sh->dir, 0755) < 0 && errno != EEXIST) {
                        sh->made_dir = false;
                        return api_fail(-errno, "cannot create %s: %s", sh->dir, strerror(errno));
                }
        }
        return 0;
}

/* Puts the directory back as it was after a failed open. */
static void open_undo(struct scree_db *db)
{
        bool wrote = false;

        for (unsigned i = 0; i < db->n; i++)
                wrote |= db->shards[i].wrote;
        for (unsigned i = 0; i < db->n && !wrote; i++)
                if (db->shards[i].made_dir)
                        eng_datadir_remove_made(db->shards[i].dir);
        if (db->cat_made && !wrote)
                eng_catsvc_undo(db->dir);
        eng_datadir_unlock(&db->lock, !wrote);
}

static void db_free(struct scree_db *db)
{
        if (!db)
                return;
        tls_forget(db);
        eng_datadir_unlock(&db->lock, false);
        eng_catalog_unref(db->cat.head);
        for (size_t i = 0; i < db->n_kept; i++)
                eng_catalog_unref(db->kept[i]);
        free(db->kept);
        free(db->shards);
        free(db);
        atomic_fetch_sub(&dbs_open, 1);
}

static int db_new(const char *dir, const struct api_opts *o, struct scree_db **ret)
{
        struct scree_db *db = calloc(1, sizeof(*db));
        size_t len = dir ? strlen(dir) : 0;

        if (!db)
                return api_fail(-ENOMEM, "out of memory for the database");
        atomic_fetch_add(&dbs_open, 1);         /* before any thread may log (db_free) */
        db->lock.fd = -1;
        db->opts = *o;
        db->n = o->smp ? o->smp : dir_shards(dir);
        if (db->n > ENG_CATALOG_MAX_SHARDS || db->n > SCREE_MAX_SHARDS)
                db->n = ENG_CATALOG_MAX_SHARDS < SCREE_MAX_SHARDS ? ENG_CATALOG_MAX_SHARDS
                                                                  : SCREE_MAX_SHARDS;
        db->serial = atomic_fetch_add(&next_serial, 1);
        db->shards = calloc(db->n, sizeof(*db->shards));
        if (!db->shards) {
                db_free(db);
                return api_fail(-ENOMEM, "out of memory for %u shards", db->n);
        }
        if (len == 0 || len > 4000) {
                db_free(db);
                return api_fail(-EINVAL, "a database directory is a path of 1 to 4000 bytes");
        }
        memcpy(db->dir, dir, len + 1);
        while (len > 1 && db->dir[len - 1] == '/')
                db->dir[--len] = 0;
        db->eng_shards = (struct eng_shards){ .n = db->n, .of = api_engine_of };
        db->cat = (struct eng_catsvc){ .shards = &db->eng_shards };
        for (unsigned i = 0; i < db->n; i++) {
                db->shards[i] = (struct api_shard){ .db = db, .id = i };
                /* dir is at most sizeof(dir) - 16 bytes: this fits. */
                snprintf(db->shards[i].dir, sizeof(db->shards[i].dir), "%.4000s/shard-%u", db->dir,
                         i);
        }
        *ret = db;
        return 0;
}

/* Starts the shards and waits for their engines and the resolution of
 * what the last stop left in doubt. */
static int shards_start(struct scree_db *db)
{
        struct rx_smp_opts so = {
                .n_shards = db->n,
                .no_pin = !db->opts.pin,
                .on_start = shard_start,
                .arg = db,
                .loop = { .idle_poll_ns = (uint64_t)db->opts.idle_poll_us * NS_PER_US },
        };
        int r = rx_smp_new(&so, &db->smp), first = 0;

        if (r < 0)
                return api_fail(r, "cannot start the shard threads: %s: %s", scree_strerror(r),
                                rx_loop_setup_hint(r));
        for (unsigned i = 0; i < db->n; i++) {
                r = (int)api_on_shard(db, i, wait_open_run, NULL);
                if (r < 0 && !first) {
                        first = r;
                        api_fail(r, "opening shard %u in %s failed: %s (the log says more)", i,
                                 db->shards[i].dir, scree_strerror(r));
                }
        }
        if (first == 0)
                (void)api_on_shard(db, 0, resolve_run, NULL);
        return first;
}

static int shards_stop(struct scree_db *db)
{
        int first = 0;

        for (unsigned i = 0; db->smp && i < db->n; i++) {
                int r = (int)api_on_shard(db, i, close_run, NULL);

                if (r < 0 && !first)
                        first = api_fail(r, "closing shard %u: %s", i, scree_strerror(r));
        }
        if (db->smp) {
                rx_smp_stop(db->smp);
                rx_smp_free(db->smp);
                db->smp = NULL;
        }
        return first;
}

SCREE_API int scree_open(const char *dir, const scree_options *o, scree_db **ret)
{
        scree_options *defaults = NULL;
        struct scree_db *db = NULL;
        char err[API_ERR_BYTES] = "";
        int r;

        if ((r = api_off_shard()) < 0)
                return r;
        if (!ret)
                return api_fail(-EINVAL, "scree_open needs somewhere to put the handle");
        if (!o && !(o = defaults = scree_options_new()))
                return api_fail(-ENOMEM, "out of memory for the options");
        r = db_new(dir, &o->o, &db);
        scree_options_free(defaults);
        if (r < 0)
                return r;
        if ((r = dir_lock(db)) < 0 || (r = layout_check(db)) < 0)
                goto fail;
        r = eng_catsvc_load(&db->cat, db->dir, ENG_SHARD_DEFAULT_TABLETS, "the smp option",
                            &db->cat_made, err, sizeof(err));
        if (r < 0) {
                api_fail(r, "%s", err[0] ? err : scree_strerror(r));
                goto fail;
        }
        api_catalog_publish(db, db->cat.head);
        if ((r = shard_dirs_make(db)) < 0)
                goto fail;
        if ((r = shards_start(db)) < 0) {
                snprintf(err, sizeof(err), "%s", scree_last_error());
                shards_stop(db);
                api_fail(r, "%s", err);
                goto fail;
        }
        *ret = db;
        return 0;
fail:
        open_undo(db);
        db_free(db);
        return r;
}

SCREE_API int scree_close(scree_db *db)
{
        int r;

        if (!db)
                return 0;
        if ((r = api_off_shard()) < 0)
                return r;
        if (atomic_load(&db->handles))
                return api_fail(-EBUSY, "%llu table handle(s) or completion queue(s) are still "
                                "open: close them (scree_table_close, scree_cq_free) before "
                                "scree_close", (unsigned long long)atomic_load(&db->handles));
        if ((r = api_pins_wait(db)) < 0)
                return r;
        r = shards_stop(db);
        db_free(db);
        return r;
}

SCREE_API unsigned scree_shards(const scree_db *db)
{
        return db ? db->n : 0;
}
