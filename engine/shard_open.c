/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shard start-up and shutdown; see shard.h.
 *
 * Start-up: load the manifest (or start a fresh one) -> make it follow the
 * catalog (ranges for a version 1 or 2 file's tablets; tablets the
 * catalog has and it lacks take the files of those they replace; tablets
 * the catalog no longer has dropped) -> open every SSTable it names, in
 * parallel, a file shared by several tablets once -> delete files it does
 * not name (SSTables of
 * flushes and compactions that never got recorded, temporary files, log
 * segments older than the oldest one needed) -> replay the commit log from
 * that segment, skipping entries a tablet has flushed already -> start a
 * new log after the last segment -> rewrite the manifest as a snapshot.
 * Listing and deleting leftovers uses plain syscalls: it happens once,
 * before the shard serves anything.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/endian.h"
#include "base/log.h"
#include "engine/catalog.h"
#include "engine/shard_internal.h"
#include "engine/wal_replay.h"

struct table_slot {
        struct shard_open *op;
        size_t i;
};

struct shard_open {
        struct eng_shard *s;
        eng_shard_open_cb done;
        void *arg;
        struct eng_manifest_state st;
        /* Per st.tables entry: the open table of its file, held by the
         * first entry naming the file only (a file several tablets share
         * is opened once, and their table sets share the eng_sst_table);
         * first[i] is that entry's index. */
        struct eng_sst_table **opened;
        size_t *first;
        struct table_slot *slots;
        uint32_t pending;
        int err;
        struct eng_wal_replay_opts ro;
        uint64_t last_segment;          /* of the old log; the new one starts after it */
};

static void opts_defaults(struct eng_shard_opts *o)
{
        if (!o->tablets_per_shard)
                o->tablets_per_shard = ENG_SHARD_DEFAULT_TABLETS;
        if (!o->memtable_budget)
                o->memtable_budget = ENG_SHARD_DEFAULT_BUDGET;
        if (!o->compaction_rate)
                o->compaction_rate = ENG_SHARD_DEFAULT_COMPACTION_RATE;
        if (!o->segment_bytes)
                o->segment_bytes = ENG_WAL_DEFAULT_SEGMENT_BYTES;
        if (!o->period_ns)
                o->period_ns = ENG_WAL_DEFAULT_PERIOD_NS;
        if (!o->log_limit_bytes)
                o->log_limit_bytes = o->memtable_budget;
}

static void shard_free(struct eng_shard *s)
{
        if (!s)
                return;
        shard_xtxn_fini(s);
        shard_tablets_fini(s);
        shard_pool_fini(s);
        if (s->dir_fd >= 0)
                close(s->dir_fd);       /* the fs has no op in flight on it any more */
        eng_block_cache_free(s->cache);
        eng_batch_fini(&s->scratch);
        eng_batch_fini(&s->group);
        eng_batch_fini(&s->unapplied);
        eng_keyq_fini(&s->keyq);
        eng_ratelimit_fini(&s->rl);
        free(s->dir);
        free(s);
}

static int shard_alloc(struct rx_loop *loop, struct eng_fs *fs, const struct eng_shard_opts *o,
                       struct eng_shard **ret)
{
        struct eng_shard *s = calloc(1, sizeof(*s));
        struct eng_catalog *cat = NULL;

        if (!s)
                return -ENOMEM;
        s->loop = loop;
        s->fs = fs;
        s->dir_fd = -1;
        s->o = *o;
        opts_defaults(&s->o);
        eng_batch_init(&s->scratch);
        eng_batch_init(&s->group);
        eng_batch_init(&s->unapplied);
        eng_keyq_init(&s->keyq);
        if (s->o.shard >= s->o.n_shards || s->o.n_shards > ENG_CATALOG_MAX_SHARDS ||
            (unsigned)s->o.sync >= ENG_WAL_SYNC_MAX ||
            (o->catalog && eng_catalog_n_shards(o->catalog) != s->o.n_shards)) {
                free(s);
                return -EINVAL;
        }
        s->o.dir = NULL;
        s->o.catalog = NULL;
        s->dir = strdup(o->dir);
        if (o->catalog) {
                cat = eng_catalog_ref(o->catalog);
        } else if (eng_catalog_initial(s->o.n_shards, s->o.tablets_per_shard, &cat) < 0) {
                free(s->dir);
                free(s);
                return -EINVAL;
        }
        if (!s->dir || eng_block_cache_new(s->o.cache_bytes, &s->cache) < 0 ||
            eng_ratelimit_init(&s->rl, ENG_RATELIMIT_SETS) < 0 || shard_pool_init(s) < 0 ||
            shard_tablets_init(s, cat) < 0)
                goto nomem;
        eng_catalog_unref(cat);
        eng_block_cache_set_rows(s->cache, s->o.row_cache);
        *ret = s;
        return 0;
nomem:
        eng_catalog_unref(cat);
        shard_free(s);
        return -ENOMEM;
}

static void open_finish(struct shard_open *op, int res)
{
        struct eng_shard *s = op->s;

        s->replaying = false;
        if (op->opened) {
                for (size_t i = 0; i < op->st.n_tables; i++)
                        eng_sst_table_unref(op->opened[i]);
                free(op->opened);
        }
        free(op->first);
        free(op->slots);
        eng_manifest_state_fini(&op->st);
        if (res < 0) {
                shard_free(s);
                s = NULL;
        } else {
                shard_pool_start(s);
        }
        op->done(op->arg, res, s);
        free(op);
}

static void wal_closed_on_failure(void *arg, int res)
{
        struct shard_open *op = arg;
        char path[4096];

        (void)res;
        op->s->wal = NULL;
        /* The new log took no write: remove the segments it made (its
         * first and the reserve), so a failed start leaves no files behind
         * and gives back their space (issue 23: a 26 MiB segment filled
         * the disk after a start that failed for lack of space). */
        for (uint64_t id = op->last_segment + 1; id <= op->last_segment + 2; id++) {
                snprintf(path, sizeof(path), "%s/%016" PRIx64 ".log", op->s->dir, id);
                if (unlink(path) < 0 && errno != ENOENT)
                        log_warn("shard %u: removing %s: %s", op->s->o.shard, path, strerror(errno));
        }
        open_finish(op, op->err);
}

/* A step after the new log started failed: close the log, then fail. */
static void fail_with_log(struct shard_open *op, int res)
{
        op->err = res;
        if (eng_wal_close(op->s->wal, wal_closed_on_failure, op) < 0)
                wal_closed_on_failure(op, 0);
}

/* The manifest that failed to be created is closed (freed): close the
 * log, then fail. */
static void manifest_closed_on_failure(void *arg, int res)
{
        struct shard_open *op = arg;

        (void)res;
        op->s->man = NULL;
        fail_with_log(op, op->err);
}

static void manifest_created(void *arg, int res)
{
        struct shard_open *op = arg;

        if (res < 0) {
                log_error("shard %u: writing the manifest in %s failed: %s", op->s->o.shard,
                          op->s->dir, strerror(-res));
                op->err = res;
                /* A failed create leaves the manifest stopped, still ours
                 * to close (manifest.h). */
                if (eng_manifest_close(op->s->man, manifest_closed_on_failure, op) < 0)
                        manifest_closed_on_failure(op, 0);
                return;
        }
        /* Each file once, though several tablets may share it. */
        for (size_t i = 0; i < op->st.n_tables; i++)
                if (op->opened[i])
                        shard_track_table(op->s, op->opened[i]);
        /* What the log replayed goes to SSTables in the background, as
         * RocksDB does at recovery: reads stop searching big memtables
         * and the next start-up replays less. */
        op->s->applied_seq = op->s->last_seq;  /* replayed, or flushed before */
        for (uint32_t i = 0; op->s->stats.replayed_records && i < op->s->n_tablets; i++)
                shard_seal(op->s, op->s->tablets[i]);
        shard_maybe_flush(op->s);
        shard_maybe_compact(op->s);
        shard_release_log(op->s);
        open_finish(op, 0);
}

static int replay_record(void *arg, uint64_t segment, const struct eng_wal_record *rec)
{
        struct shard_open *op = arg;
        struct eng_shard *s = op->s;
        int r;

        if (rec->type != ENG_WAL_RECORD_BATCH) {
                r = shard_xtxn_replay(s, segment, rec);
                if (r > 0)
                        s->stats.replayed_records++;
                if (r < 0)
                        log_error("shard %u: commit-log segment %016" PRIx64 " record at offset %zu"
                                  " (type %d): %s", s->o.shard, segment, rec->offset,
                                  (int)rec->type, strerror(r == -ENOMEM ? ENOMEM : EILSEQ));
                return r < 0 ? r : 0;
        }
        if (rec->len < ENG_BATCH_HEADER_BYTES)
                return -SCREE_ECORRUPT;
        r = shard_apply_batch(s, rec->payload, rec->len, rec->seq, segment);
        if (r < 0) {
                log_error("shard %u: commit-log segment %016" PRIx64 " record at offset %zu: %s",
                          s->o.shard, segment, rec->offset, strerror(r == -ENOMEM ? ENOMEM : EILSEQ));
                return r;
        }
        uint64_t last = rec->seq + le32_get(rec->payload) - 1;

        if (last > s->last_seq)
                s->last_seq = last;
        if (r > 0)
                s->stats.replayed_records++;
        return 0;
}

/* Salvage skipped the damaged records of segment from offset on. */
static void replay_skipped(void *arg, uint64_t segment, uint64_t offset)
{
        struct shard_open *op = arg;
        struct eng_shard *s = op->s;

        log_warn("shard %u: salvage: skipping damaged commit-log records in %s/%016" PRIx64
                 ".log from offset %" PRIu64 " to the next valid record (or the segment's end)",
                 s->o.shard, s->dir, segment, offset);
}

/* The directory holds exactly the replayed log: start the new one after it. */
static void log_trimmed(void *arg, int res)
{
        struct shard_open *op = arg;
        struct eng_shard *s = op->s;
        struct eng_wal_opts wo = {
                .dir = s->dir, .shard = s->o.shard, .segment_bytes = s->o.segment_bytes,
                .sync = s->o.sync, .period_ns = s->o.period_ns,
                .first_segment = op->last_segment + 1,
        };

        if (res < 0) {
                log_error("shard %u: trimming the commit log in %s failed: %s", s->o.shard, s->dir,
                          strerror(res == -SCREE_ECORRUPT ? EILSEQ : -res));
                open_finish(op, res);
                return;
        }
        s->log_oldest = op->st.log_segment ? op->st.log_segment : 1;
        /* Nothing replayed waits for a flush: the manifest written below
         * starts the log at the new one, and the old segments go once it
         * is durable -- else every start-up without writes would leave
         * another log behind. */
        if (s->stats.replayed_records == 0)
                op->st.log_segment = wo.first_segment;
        /* ... but for the records of parts in doubt and decisions not
         * forgotten (shard_xtxn.c): they stay until resolved. */
        if (shard_xtxn_log_needed(s) && shard_xtxn_log_needed(s) < op->st.log_segment)
                op->st.log_segment = shard_xtxn_log_needed(s);
        s->log_cut = op->st.log_segment ? op->st.log_segment : s->log_oldest;
        res = eng_wal_open(s->fs, &wo, &s->wal);
        if (res < 0) {
                open_finish(op, res);
                return;
        }
        res = eng_manifest_create(s->fs, s->dir, &op->st, manifest_created, op, &s->man);
        if (res < 0)
                fail_with_log(op, res);
}

static void replay_done(void *arg, int res, const struct eng_wal_replay_result *rr)
{
        struct shard_open *op = arg;
        struct eng_shard *s = op->s;

        if (res == -SCREE_ECORRUPT)
                log_error("shard %u: commit-log segment %s/%016" PRIx64 ".log is corrupt at offset "
                          "%" PRIu64 ": a record there was damaged after it was written and synced; "
                          "to start anyway, skipping the damaged records and losing the writes in "
                          "them, restart with %s", s->o.shard, s->dir, rr->bad_segment,
                          rr->bad_offset, s->o.salvage_hint ? s->o.salvage_hint : "the salvage option");
        else if (res < 0)
                log_error("shard %u: replaying the commit log in %s failed: %s", s->o.shard, s->dir,
                          strerror(-res));
        if (res < 0) {
                open_finish(op, res);
                return;
        }
        if (rr->torn)
                log_warn("shard %u: commit log ends in a torn record (segment %016" PRIx64
                         " offset %" PRIu64 "); cut there", s->o.shard, rr->torn_segment,
                         rr->torn_offset);
        if (rr->salvaged)
                log_warn("shard %u: salvage skipped %" PRIu64 " damaged place(s) in the commit log; "
                         "their writes are lost", s->o.shard, rr->salvaged);
        op->last_segment = rr->last_segment;
        res = shard_xtxn_open(s);               /* parts in doubt hold their keys again */
        if (res == 0)
                res = eng_wal_replay_trim(s->fs, &op->ro, rr, log_trimmed, op);
        if (res < 0)
                open_finish(op, res);
}

/* Deletes what the manifest does not name. */
static int remove_leftovers(struct shard_open *op)
{
        struct eng_shard *s = op->s;
        DIR *d = opendir(s->dir);
        struct dirent *de;
        char path[4096];

        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                unsigned long long id;
                char ext[8];
                bool drop = false;
                size_t len = strlen(de->d_name);

                if (len > 4 && strcmp(de->d_name + len - 4, ".tmp") == 0) {
                        drop = true;
                } else if (len == 20 && sscanf(de->d_name, "%16llx.%3s", &id, ext) == 2) {
                        if (strcmp(ext, "log") == 0) {
                                drop = id < op->st.log_segment;
                        } else if (strcmp(ext, "sst") == 0) {
                                drop = true;
                                for (size_t i = 0; i < op->st.n_tables; i++)
                                        if (op->st.tables[i].file_id == id)
                                                drop = false;
                        }
                }
                if (!drop)
                        continue;
                snprintf(path, sizeof(path), "%s/%s", s->dir, de->d_name);
                log_info("shard %u: removing %s (not in the manifest)", s->o.shard, path);
                if (unlink(path) < 0 && errno != ENOENT) {
                        int e = -errno;

                        closedir(d);
                        return e;
                }
        }
        closedir(d);
        return 0;
}

static int cmp_newest_first(const void *a, const void *b)
{
        const struct eng_tset_entry *x = a, *y = b;

        return x->meta.max_seq < y->meta.max_seq ? 1 : x->meta.max_seq > y->meta.max_seq ? -1 : 0;
}

void shard_tset_sort(struct eng_tset_entry *e, size_t n, size_t size)
{
        qsort(e, n, size, cmp_newest_first);
}

/* Every table is open: build the tablets' table sets, then replay. */
static void tables_ready(struct shard_open *op)
{
        struct eng_shard *s = op->s;
        int r;

        for (uint32_t k = 0; k < s->n_tablets; k++) {
                struct eng_tablet *t = s->tablets[k];
                uint32_t n = 0;

                for (size_t i = 0; i < op->st.n_tables; i++)
                        n += op->st.tables[i].tablet == t->id;
                if (!n)
                        continue;
                struct eng_tset *ts = shard_tset_new(n);

                if (!ts) {
                        open_finish(op, -ENOMEM);
                        return;
                }
                n = 0;
                for (size_t i = 0; i < op->st.n_tables; i++) {
                        if (op->st.tables[i].tablet != t->id)
                                continue;
                        ts->e[n].t = op->opened[op->first[i]];
                        eng_sst_table_ref(ts->e[n].t);
                        ts->e[n++].meta = op->st.tables[i];
                }
                shard_tset_sort(ts->e, n, sizeof(ts->e[0]));
                t->tset = ts;
        }
        s->replaying = true;
        op->ro = (struct eng_wal_replay_opts){
                .dir = s->dir, .shard = s->o.shard, .from_segment = op->st.log_segment,
                .salvage = s->o.salvage, .skip_fn = replay_skipped,
        };
        r = remove_leftovers(op);
        if (r == 0)
                r = eng_wal_replay(s->fs, &op->ro, replay_record, replay_done, op);
        if (r < 0)
                open_finish(op, r);
}

static void table_open_ended(struct shard_open *op)
{
        if (--op->pending)
                return;
        if (op->err)
                open_finish(op, op->err);
        else
                tables_ready(op);
}

static void table_opened(void *arg, int res, struct eng_sst_table *t)
{
        struct table_slot *slot = arg;
        struct shard_open *op = slot->op;
        const struct eng_manifest_table *mt = &op->st.tables[slot->i];

        if (res < 0) {
                log_error("shard %u: SSTable %s/%016" PRIx64 ".sst (%" PRIu64 " bytes) named by the "
                          "manifest: %s", op->s->o.shard, op->s->dir, mt->file_id, mt->file_size,
                          res == -ENOENT ? "missing" : res == -SCREE_ECORRUPT ? "corrupt" :
                                                                                strerror(-res));
                if (!op->err)
                        op->err = res;
        } else {
                op->opened[slot->i] = t;
        }
        table_open_ended(op);
}

static void open_tables(struct shard_open *op)
{
        struct eng_shard *s = op->s;
        char path[4096];

        if (!op->st.n_tables) {
                tables_ready(op);
                return;
        }
        op->pending = 1;        /* held until every open is started */
        for (size_t i = 0; i < op->st.n_tables; i++) {
                const struct eng_manifest_table *mt = &op->st.tables[i];
                int r;

                if (op->first[i] != i)
                        continue;       /* a shared file: its first entry opens it */
                op->slots[i] = (struct table_slot){ .op = op, .i = i };
                snprintf(path, sizeof(path), "%s/%016" PRIx64 ".sst", s->dir, mt->file_id);
                r = eng_sst_table_open(s->fs, s->cache, path, mt->file_id, mt->file_size,
                                       table_opened, &op->slots[i]);
                if (r < 0) {
                        op->err = r;
                        break;
                }
                op->pending++;
        }
        table_open_ended(op);
}

/* Raises s->last_seq to every seq op->st has used, so none is given twice
 * (those of tablets about to be dropped too). */
static void count_seqs(struct shard_open *op)
{
        struct eng_shard *s = op->s;
        const struct eng_manifest_state *st = &op->st;

        for (uint32_t i = 0; i < st->n_tablets; i++)
                if (st->tablets[i].flushed_seq > s->last_seq)
                        s->last_seq = st->tablets[i].flushed_seq;
        for (size_t i = 0; i < st->n_tables; i++)
                if (st->tables[i].max_seq > s->last_seq)
                        s->last_seq = st->tables[i].max_seq;
}

/* -SCREE_ECORRUPT if op->st names a tablet the catalog never made (a
 * catalog and manifest that do not belong together); 0 if each is this
 * shard's, gone from the catalog, or another shard's: a move interrupted
 * by a crash (shard_move.h) -- on the source after the catalog switch, on
 * the target before it -- whose copy here is dropped. */
static int check_manifest_tablets(struct shard_open *op)
{
        struct eng_shard *s = op->s;
        uint32_t next_id = eng_catalog_next_tablet_id(s->cat);

        for (uint32_t i = 0; i < op->st.n_tablets; i++) {
                uint32_t id = op->st.tablets[i].id;
                const struct eng_catalog_table *ct;
                uint32_t at;

                if (shard_tablet_by_id(s, id))
                        continue;
                if (id >= next_id) {
                        log_error("shard %u: the manifest in %s names tablet %u, which the "
                                  "catalog never made", s->o.shard, s->dir, id);
                        return -SCREE_ECORRUPT;
                }
                if (eng_catalog_tablet_by_id(s->cat, id, &ct, &at) == 0)
                        log_info("shard %u: tablet %u is shard %u's (a move that a stop "
                                 "interrupted): dropping the copy here", s->o.shard, id,
                                 ct->tablets[at].shard);
        }
        return 0;
}

static void log_relayout(const struct eng_shard *s, const struct eng_manifest_edit *e)
{
        for (uint32_t i = 0; i < e->n_dropped; i++)
                log_info("shard %u: removing tablet %u, which the catalog no longer has",
                         s->o.shard, e->dropped_tablets[i]);
        for (uint32_t i = 0; i < e->n_new_tablets; i++) {
                uint32_t n = 0;

                for (uint32_t k = 0; k < e->n_added; k++)
                        n += e->added[k].tablet == e->new_tablets[i].id;
                if (n)
                        log_info("shard %u: tablet %u takes over %u SSTable(s) of the tablets it "
                                 "replaces", s->o.shard, e->new_tablets[i].id, n);
        }
}

/*
 * Makes op->st (and so the manifest the open writes) follow the catalog:
 * entries read from a version 1 or 2 file get their ranges; tablets the
 * catalog gives this shard that the manifest lacks get entries, with the
 * SSTables of the manifest's tablets they replace -- a split's or a
 * merge's sources, when a crash came between the catalog's save and the
 * manifest's edit (eng_manifest_relayout) -- and tablets the catalog no
 * longer has are dropped: a dropped table's, a crash or a stop having
 * interrupted its removal, or sources whose data went to their
 * replacements. Their files not inherited go with remove_leftovers.
 * Returns 0, -SCREE_ECORRUPT (see check_manifest_tablets) or -ENOMEM.
 */
static int follow_catalog(struct shard_open *op)
{
        struct eng_shard *s = op->s;
        struct eng_manifest_tablet *want = calloc(s->n_tablets + 1, sizeof(*want));
        struct eng_manifest_edit e;
        void *mem = NULL;
        int r;

        if (!want)
                return -ENOMEM;
        count_seqs(op);
        for (uint32_t i = 0; i < s->n_tablets; i++) {
                const struct eng_tablet *t = s->tablets[i];

                want[i] = (struct eng_manifest_tablet){
                        .id = t->id, .table = t->table, .start = t->start, .end = t->end,
                        .start_len = t->start_len, .end_len = t->end_len,
                };
        }
        r = check_manifest_tablets(op);
        if (r < 0) {
                free(want);
                return r;
        }
        r = eng_manifest_state_fill_ranges(&op->st, want, s->n_tablets);
        if (r == 0)
                r = eng_manifest_relayout(&op->st, want, s->n_tablets, &e, &mem);
        if (r == 0) {
                log_relayout(s, &e);
                r = eng_manifest_state_apply(&op->st, &e);
        }
        free(mem);
        free(want);
        if (r < 0 && r != -ENOMEM) {
                log_error("shard %u: the manifest in %s does not fit the catalog's tablets "
                          "(ranges that overlap or differ)", s->o.shard, s->dir);
                r = -SCREE_ECORRUPT;
        }
        return r;
}

/* Entry indexes by file id, then index (qsort_r: arg is the tables). */
static int cmp_by_file(const void *a, const void *b, void *arg)
{
        const struct eng_manifest_table *t = arg;
        size_t x = *(const size_t *)a, y = *(const size_t *)b;

        if (t[x].file_id != t[y].file_id)
                return t[x].file_id < t[y].file_id ? -1 : 1;
        return (x > y) - (x < y);
}

/* Sets op->first: for each table entry, the first entry naming its file.
 * 0 or -ENOMEM. */
static int find_first_entries(struct shard_open *op)
{
        size_t n = op->st.n_tables, *by_file = malloc((n + 1) * sizeof(*by_file));

        op->first = malloc((n + 1) * sizeof(*op->first));
        if (!by_file || !op->first) {
                free(by_file);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                by_file[i] = i;
        qsort_r(by_file, n, sizeof(*by_file), cmp_by_file, op->st.tables);
        for (size_t i = 0; i < n; i++)
                op->first[by_file[i]] = i && op->st.tables[by_file[i - 1]].file_id ==
                                                     op->st.tables[by_file[i]].file_id
                                                ? op->first[by_file[i - 1]]
                                                : by_file[i];
        free(by_file);
        return 0;
}

static void manifest_loaded(void *arg, int res, const struct eng_manifest_state *st)
{
        struct shard_open *op = arg;
        struct eng_shard *s = op->s;
        struct eng_manifest_layout want = {
                .shard = s->o.shard, .n_shards = s->o.n_shards,
                .tablets_per_shard = s->o.tablets_per_shard,
        };

        if (res == -SCREE_ENOTFOUND) {
                eng_manifest_state_init(&op->st, &want);
                res = 0;
        } else if (res == 0) {
                res = eng_manifest_state_copy(&op->st, st);
                if (res == 0 && memcmp(&st->layout, &want, sizeof(want))) {
                        log_error("shard %u: %s was made as shard %u of %u with %u tablets per "
                                  "shard; refusing to open it as shard %u of %u with %u",
                                  s->o.shard, s->dir, st->layout.shard, st->layout.n_shards,
                                  st->layout.tablets_per_shard, want.shard, want.n_shards,
                                  want.tablets_per_shard);
                        res = -EINVAL;
                }
        } else {
                log_error("shard %u: reading the manifest in %s failed: %s", s->o.shard, s->dir,
                          res == -SCREE_ECORRUPT ? "corrupt" : strerror(-res));
        }
        if (res == 0)
                res = follow_catalog(op);
        if (res < 0) {
                open_finish(op, res);
                return;
        }
        s->next_file_id = op->st.next_file_id ? op->st.next_file_id : 1;
        for (uint32_t i = 0; i < s->n_tablets; i++)
                s->tablets[i]->flushed_seq = eng_manifest_flushed_seq(&op->st, s->tablets[i]->id);
        op->opened = calloc(op->st.n_tables + 1, sizeof(*op->opened));
        op->slots = calloc(op->st.n_tables + 1, sizeof(*op->slots));
        if (!op->opened || !op->slots || find_first_entries(op) < 0) {
                open_finish(op, -ENOMEM);
                return;
        }
        open_tables(op);
}

static void dir_opened(struct eng_fs_op *fop, int res)
{
        struct shard_open *op = fop->ctx;

        if (res < 0) {
                log_error("shard %u: opening %s: %s", op->s->o.shard, op->s->dir, strerror(-res));
                open_finish(op, res);
                return;
        }
        op->s->dir_fd = res;
        res = eng_manifest_load(op->s->fs, op->s->dir, manifest_loaded, op);
        if (res < 0)
                open_finish(op, res);
}

int eng_shard_open(struct rx_loop *loop, struct eng_fs *fs, const struct eng_shard_opts *o,
                   eng_shard_open_cb done, void *arg)
{
        struct shard_open *op;
        int r;

        if (!o->dir || !done ||
            (o->compaction_readahead != ENG_COMPACT_READ_CACHED && o->compaction_readahead % 4096))
                return -EINVAL;
        op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        op->done = done;
        op->arg = arg;
        r = shard_alloc(loop, fs, o, &op->s);
        if (r == 0) {
                op->s->dir_op.ctx = op;
                r = eng_fs_open(fs, &op->s->dir_op, op->s->dir, O_RDONLY | O_DIRECTORY, 0,
                                dir_opened);
        }
        if (r < 0) {
                shard_free(op->s);
                free(op);
        }
        return r;
}

/* ---- shutdown ---- */

static void close_free(void *arg, int res)
{
        struct eng_shard *s = arg;
        void (*done)(void *, int) = s->close_done;
        void *darg = s->close_arg;

        if (res < 0 && !s->close_res)
                s->close_res = res;
        res = s->close_res ? s->close_res : s->error;
        while (s->flush_waiters) {
                struct shard_waiter *w = s->flush_waiters;

                s->flush_waiters = w->next;
                w->done(w->arg, -SCREE_ESHUTDOWN);
                free(w);
        }
        shard_free(s);
        done(darg, res);
}

static void close_manifest(void *arg, int res)
{
        struct eng_shard *s = arg;

        s->close_res = res;
        s->wal = NULL;
        if (eng_manifest_close(s->man, close_free, s) < 0)
                close_free(s, -EIO);
}

static void close_step(struct rx_loop *loop, struct rx_task *task)
{
        struct eng_shard *s = (struct eng_shard *)((char *)task - offsetof(struct eng_shard, close_task));

        (void)loop;
        s->close_posted = false;
        if (s->busy)
                return;         /* the last job's shard_job_done comes back here */
        if (!s->tables_dropped) {
                s->tables_dropped = true;
                for (uint32_t i = 0; i < s->n_tablets; i++) {
                        shard_tset_unref(s->tablets[i]->tset);
                        s->tablets[i]->tset = NULL;
                }
        }
        if (s->live_tables)
                return;         /* shard_table_closed comes back here */
        if (eng_wal_close(s->wal, close_manifest, s) < 0)
                close_manifest(s, -EIO);
}

static void post_close_step(struct eng_shard *s)
{
        if (s->close_posted)
                return;
        s->close_posted = true;
        s->close_task.fn = close_step;
        s->close_task.name = "shard close";
        rx_loop_post(s->loop, &s->close_task);
}

static void shard_table_closed(void *arg)
{
        struct eng_shard *s = arg;

        s->live_tables--;
        if (s->closing && !s->live_tables)
                post_close_step(s);
}

/* A read of t met a damaged data block (sst_io.h): counted, and logged
 * the first time, naming the file and the block, so the operator learns
 * of it from the log whichever read found it. */
static void shard_table_damaged(void *arg, struct eng_sst_table *t, const struct eng_sst_damage *d,
                                bool first)
{
        struct eng_shard *s = arg;

        (void)t;
        s->stats.corrupt_reads++;
        if (!first)
                return;
        s->stats.corrupt_blocks++;
        log_error("shard %u: SSTable %s/%016" PRIx64 ".sst is corrupt: data block %u at offset %"
                  PRIu64 " (%u bytes): %s; reads of its keys fail, scans skip it, compactions "
                  "leave the table out (check with scree-tool verify)",
                  s->o.shard, s->dir, d->file_id, d->block, d->offset, d->size, d->what);
}

void shard_track_table(struct eng_shard *s, struct eng_sst_table *t)
{
        eng_sst_table_on_closed(t, shard_table_closed, s);
        eng_sst_table_on_damage(t, shard_table_damaged, s);
        s->live_tables++;
}

void shard_job_done(struct eng_shard *s)
{
        s->busy--;
        shard_drop_step(s);     /* a dropped tablet's flush or compaction may have ended */
        if (s->closing && !s->busy)
                post_close_step(s);
}

int eng_shard_close(struct eng_shard *s, void (*done)(void *arg, int res), void *arg)
{
        if (s->closing)
                return -EALREADY;
        s->closing = true;
        s->close_done = done;
        s->close_arg = arg;
        while (s->stall_head) {
                struct eng_write *w = s->stall_head;

                s->stall_head = w->next;
                free(w->stalled);
                w->stalled = NULL;
                shard_release_write(s, w);
                w->done(w, -SCREE_ESHUTDOWN);
        }
        s->stall_tail = NULL;
        shard_xtxn_close(s);
        shard_order_fail_all(s);
        shard_log_group(s);     /* the log's close syncs it and answers its writes */
        shard_apply_pending(s);
        /* A flush or compaction waiting for manifest space would hold the
         * close forever: one last try, then their edits fail. */
        eng_manifest_stop_retrying(s->man);
        if (s->retry_armed && rx_timer_cancel(s->loop, &s->retry_timer)) {
                s->retry_armed = false;
                s->busy--;
        }
        post_close_step(s);
        return 0;
}
