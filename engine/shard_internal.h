/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The shard's internals, shared by shard.c (open, close, the write path),
 * shard_read.c (get, read-modify-write), shard_flush.c (memtables to
 * SSTables, commit-log truncation) and shard_open.c (recovery). Not for use
 * outside engine/shard*.c. Shard-local.
 */
#ifndef SCREE_ENGINE_SHARD_INTERNAL_H
#define SCREE_ENGINE_SHARD_INTERNAL_H

#include "engine/batch.h"
#include "engine/block_cache.h"
#include "engine/hotkeys.h"
#include "engine/manifest.h"
#include "engine/ratelimit.h"
#include "engine/shard.h"
#include "engine/sst_io.h"
#include "reactor/io.h"

#define SHARD_MAX_IMM 8u
/* Sealed memtables a tablet keeps at most, leaving one slot: a split
 * seals its active memtable into its children's (shard_relayout.c). */
#define SHARD_MAX_SEALED (SHARD_MAX_IMM - 1u)
/* Memory a memtable entry takes besides its key and value: node header
 * and links (~60 bytes, memtable.c) and its share of the hash index
 * (16-byte slots, 3/8 to 3/4 full: ~21-43 bytes, mt_index.c). */
#define SHARD_ENTRY_OVERHEAD ENG_ENTRY_OVERHEAD_BYTES
/* What a scan's seek into one more table costs, in a get's table probes (a
 * filter line, ~40 ns): an index search, a block and a seek in it, and a
 * merge source more for every row -- 100-row scans took ~6 us more per
 * table (30 us over 3.5 tables a tablet, 22.5 over 2.25; scree-bench
 * seekrandom, 2M keys, this machine, 2026-11). */
#define SHARD_SCAN_SEEK_PROBES 128u

/* The SSTables of one tablet, newest (highest max_seq) first. Immutable once
 * published: a flush or compaction publishes a new set, and a read in
 * progress keeps the set it started with alive (and with it the tables). */
struct eng_tset {
        uint32_t refs, n;
        struct eng_tset_entry {
                struct eng_sst_table *t;
                struct eng_manifest_table meta;
        } e[];
};

/* A sealed memtable waiting for (or in) its flush. */
struct eng_imm {
        struct eng_memtable *mt;
        uint64_t sealed_seq;            /* every entry of the tablet up to this seq is in it or older */
        uint64_t first_segment;         /* commit-log segment of its oldest entry */
        size_t bytes;
};

/* A tablet's traffic: reads (point gets, and rows scans gave), writes
 * (entries applied), and their key and value bytes. */
struct shard_load {
        uint64_t reads, writes, read_bytes, write_bytes;
};

/*
 * A tablet this shard owns: a key range [start, end) of one table of the
 * catalog (engine/catalog.h), with its memtables and SSTables. Created
 * when the shard opens or when a catalog that gives it to the shard is
 * installed (shard_tablets.c); a tablet of a dropped table is emptied in
 * the background and then freed.
 */
struct eng_tablet {
        uint32_t id;                    /* the catalog's tablet id; the manifest's too */
        uint32_t table;                 /* the catalog's table id */
        uint8_t *start, *end;           /* internal keys; one allocation (start) */
        uint32_t start_len, end_len;
        /* Its table is gone from the catalog: no route leads to it, and
         * once no flush or compaction of it runs it is emptied and freed
         * (shard_drop_step). Reads and scans re-route after every wait,
         * so none holds it. */
        bool dropped;
        struct eng_memtable *active;
        uint64_t active_first_segment;  /* 0 while active is empty */
        size_t active_bytes;
        struct eng_imm imm[SHARD_MAX_IMM];      /* oldest first */
        uint32_t n_imm;
        struct eng_tset *tset;
        uint64_t flushed_seq;
        bool compacting;
        /* A catalog that replaces it (a split) waits for its running
         * flush or compaction: no new one starts (shard_relayout.c). */
        bool frozen;
        /* Made by a merge (shard_merge.c): its members' memtables are in
         * its first sealed ones, and it compacts only once they are
         * flushed, its flushed seq up to merge_seq. */
        bool merged;
        uint64_t merge_seq;
        /* Moving to another shard (shard_move.c): no compaction starts;
         * once moved_out, operations on its keys fail with -SCREE_EMOVED
         * (the caller goes to the owner the catalog names). Arriving from
         * another shard: in s->tablets with its files, not routed until
         * the catalog that gives it to this shard is installed. */
        bool moving, moved_out, arriving;
        /* Its traffic since it was made, at the last eng_shard_tick, and
         * over the last second (the difference then). */
        struct shard_load load, load_mark, load_rate;
        /* Its hottest keys (internal keys), over a sample of its gets and
         * writes; made at its first sampled access (NULL until then). */
        struct eng_hotkeys *hot;
        uint32_t hot_tick;              /* the sampling's random state */
        /* Splitting by load (shard_split.c): consecutive seconds the tablet
         * took its table's split-load share of the shard's operations, and
         * meanwhile a reservoir of its sampled keys (NULL otherwise). */
        uint32_t load_secs;
        struct shard_keysample *ks;
        /* Seconds in a row it took at most MERGE_COLD_OPS operations a
         * second (merging: shard_split.c). */
        uint32_t cold_secs;
        bool hot_reported;              /* the log said its load is one key */
        /* Operations a second, averaged over some 8 s (each second's
         * count weighs an eighth: eng_shard_tick): what the balancer
         * weighs. A split shares it out; a move carries it along. */
        uint64_t ops_avg;
        /* Its read compactions (shard_compact.c). A split or move starts
         * them anew. */
        struct shard_rdebt {
                /* Work its reads spent on sources beyond the first (tables,
                 * and memtables for scans), in table probes, since a merge
                 * of all its tables last started. */
                uint64_t probes;
                uint64_t next_look;     /* the debt at which to look again */
                /* Its memtable held entries at a look (looked), at debt
                 * look_probes, with load.writes then `writes`. */
                uint64_t look_probes, writes;
                bool looked;
        } debt;
};

/* A uniform sample of a tablet's accessed keys (Algorithm R). */
#define SHARD_KEYSAMPLE 64u
struct shard_sampled_key {
        uint32_t len;
        uint8_t key[ENG_HOT_KEY_BYTES];
};

struct shard_keysample {
        uint32_t n;                     /* kept */
        uint64_t seen;
        uint32_t rnd;
        struct shard_sampled_key k[SHARD_KEYSAMPLE];
};

/* The commit log a shard keeps at the least before log_limit_bytes seals
 * memtables (shard_flush.c): the segment being written, and some behind. */
#define SHARD_LOG_MIN_SEGMENTS 4u

/* Memtable blocks faulted in at once, on io-wq workers (shard_pool.c). */
#define SHARD_PREFAULT_SLOTS 2u

/* A memtable block being faulted in (shard_pool.c). */
struct shard_prefault {
        struct rx_op op;
        struct eng_shard *s;
        void *block;                    /* NULL: the slot is free */
};

struct eng_flush;
struct eng_shard_compaction;
struct shard_major;
struct shard_txn;
struct shard_decision;

struct eng_shard {
        struct rx_loop *loop;
        struct eng_fs *fs;
        struct eng_shard_opts o;
        char *dir;
        int dir_fd;                     /* fsynced after a new file is written */
        struct eng_fs_op dir_op;
        /* The catalog this shard routes by (a reference), and per live
         * table the shard's tablets in the table's tablet order (routes,
         * sorted by table id): shard_tablets.c. */
        struct eng_catalog *cat;
        struct shard_route *routes;
        uint32_t n_routes;
        /* Every tablet the shard holds, live and dropped, in no order. */
        uint32_t n_tablets, cap_tablets;
        struct eng_tablet **tablets;
        /* eng_shard_tick: when it last ran (monotonic, and the thread's
         * CPU time then), and the thousandths of a CPU the thread used
         * between the last two ticks (splitting by load: shard_split.c). */
        uint64_t tick_ns, tick_cpu_ns;
        uint32_t cpu_permille;
        bool dropping;                  /* a dropped tablet is being emptied */
        struct eng_move_in *arrivals;   /* tablets moving in (shard_move.c) */
        /* Memtables are over half the budget but no tablet can be sealed
         * (shard_maybe_flush): no rescan until that may change. */
        bool seal_blocked;
        struct eng_block_cache *cache;
        struct eng_wal *wal;
        struct eng_manifest *man;
        uint64_t last_seq;
        /* Every write up to it is in the memtables (or flushed): what a
         * sealed memtable holds (shard_seal). last_seq runs ahead of it
         * by the writes waiting in s->unapplied. */
        uint64_t applied_seq;
        uint64_t next_file_id;
        size_t active_bytes, imm_bytes;
        struct eng_batch scratch;
        /* Writes grouped into one commit-log record (shard.c): the entries
         * of writes already applied to the memtables, logged once the loop
         * has run every write of this iteration or enough bytes gathered. */
        struct eng_batch group;
        uint64_t group_first_seq;
        /* batch mode: grouped writes not in the memtables yet (shard.c,
         * shard_apply_pending) */
        struct eng_batch unapplied;
        uint64_t unapplied_first_seq;
        /* the log segment when the first of them was submitted: their
         * records are in it or a later one, so memtables that take them
         * keep the log from there (shard_apply_pending) */
        uint64_t unapplied_segment;
        struct eng_write *group_head, *group_tail;      /* batch mode: waiting for its ack */
        uint32_t group_writers;                         /* in that list */
        struct eng_write *group_failed;                 /* answered from the task */
        int group_error;
        struct rx_task group_task;
        bool group_posted;
        struct eng_write *stall_head, *stall_tail;
        /* one key's operations in call order (keyq.h; shard.c runs the
         * ready ones from order_task) */
        struct eng_keyq keyq;
        struct rx_task order_task;
        bool order_posted, order_draining;
        int error;                      /* stops writes */
        struct eng_flush *flush;        /* the one flush in progress */
        int flush_error;                /* of the last flush, cleared by a good one */
        struct eng_shard_compaction *compaction;        /* the one in progress */
        uint64_t compaction_ended_ns;   /* time the compactions that ended ran, summed */
        struct shard_major *major;      /* eng_shard_compact in progress */
        uint32_t compact_cursor;        /* the tablet to look at first */
        struct rx_timer retry_timer;    /* retries a failed flush */
        bool retry_armed;
        struct shard_waiter *flush_waiters;
        struct rx_task wake_task;
        bool wake_posted;
        /* commit-log segments [log_oldest, log_cut) are no longer needed */
        uint64_t log_oldest, log_cut;
        uint64_t log_checked;           /* segment of the last log-limit check (shard_flush.c) */
        bool unlinking;
        struct eng_fs_op unlink_op;
        char unlink_path[4096];
        uint32_t busy;                  /* background jobs in progress */
        uint32_t live_tables;           /* tables whose fd is not closed yet */
        bool tables_dropped;            /* closing: table sets released */
        bool closing;
        void (*close_done)(void *arg, int res);
        int close_res;
        void *close_arg;
        struct rx_task close_task;
        bool close_posted;
        /* memtable blocks (shard_pool.c) */
        struct arena_pool *pool;
        struct shard_prefault prefault[SHARD_PREFAULT_SLOTS];
        uint32_t prefaulting;           /* populates in flight */
        /* Ready blocks prefaulting fills the pool to: the memtable budget
         * and the block cache's capacity in whole blocks, rounded down, so
         * that what a shard faults in ahead stays within its share of the
         * embedder's memory (the pool may hold more once blocks were used). */
        uint32_t prefault_cap;
        bool pool_on;                   /* open: refills may start */
        bool replaying;                 /* the open replays the commit log */
        bool populate_unsupported;      /* the kernel has no MADV_POPULATE_WRITE */
        bool prefault_logged;           /* the log says prefaulting ended */
        uint64_t prefault_start_ns;
        struct eng_shard_stats stats;
        uint64_t log_bytes_counted;     /* of the log's written_bytes, in stats already */
        /* Two-phase commit (shard_xtxn.c): parts prepared here and in
         * doubt, and this coordinator's decisions not yet forgotten, both
         * oldest first; the next txn number eng_shard_txn_new gives out,
         * and the floor it stays above (the last seq at open). */
        struct shard_txn *txns;
        struct shard_decision *decisions;
        uint64_t txn_next, txn_floor;
        /* Per-partition rate limits (shard_ratelimit.c): the counters, and
         * whether a table of the catalog of version rl_version has a limit. */
        struct eng_ratelimit rl;
        uint64_t rl_version;
        bool rl_on;
};

/* One live table's tablets as this shard sees them. */
struct shard_route {
        uint32_t table;
        const struct eng_catalog_table *ct;     /* borrowed from s->cat */
        struct eng_tablet **tab;                /* [ct->n_tablets]: this shard's, else NULL */
};

/* A caller of eng_shard_flush waiting for every sealed memtable to flush. */
struct shard_waiter {
        struct shard_waiter *next;
        uint64_t upto_seq;
        void (*done)(void *arg, int res);
        void *arg;
};

/* A user-key length the shard accepts. */
static inline bool shard_key_ok(uint32_t key_len)
{
        return key_len <= ENG_MAX_USER_KEY_BYTES;
}

static inline bool shard_stalled(const struct eng_shard *s)
{
        /* Writes waiting for their insert (s->unapplied) count already. */
        return s->active_bytes + s->imm_bytes + s->unapplied.len >= s->o.memtable_budget;
}

/* tset.c-like helpers (shard_flush.c) */
struct eng_tset *shard_tset_new(uint32_t n);
void shard_tset_ref(struct eng_tset *ts);
void shard_tset_unref(struct eng_tset *ts);

/* shard_tablets.c */
/* Makes the tablets cat gives this shard and routes by it (open only:
 * s->cat NULL). 0 or -ENOMEM. */
int shard_tablets_init(struct eng_shard *s, struct eng_catalog *cat);
/* Frees every tablet and route (close and failed opens). */
void shard_tablets_fini(struct eng_shard *s);
/* Drops t's memtables and table set (t keeps its id and range). */
void shard_tablet_release(struct eng_tablet *t);
/* Frees t (released first). Accepts NULL. */
void shard_tablet_free(struct eng_tablet *t);
/* The shard's tablet with catalog id, live or dropped, or NULL. */
struct eng_tablet *shard_tablet_by_id(const struct eng_shard *s, uint32_t id);
/* The live table id's route, or NULL. */
const struct shard_route *shard_route_of(const struct eng_shard *s, uint32_t table);
/* The tablet of this shard that holds internal key ikey, or NULL (another
 * shard's key, or no live table). REQUIRES: len >= ENG_TABLE_ID_BYTES. */
struct eng_tablet *shard_tablet_of_ikey(const struct eng_shard *s, const uint8_t *ikey,
                                        uint32_t len);
/* Whether table id was a table of the catalog that has been dropped (or
 * is no table of this shard's catalog at all but below its next id):
 * entries of it found in the commit log are skipped, not corrupt. */
bool shard_table_gone(const struct eng_shard *s, uint32_t table);
/* Encodes the internal key of (table, key) into buf (cap bytes) or a
 * malloc'd buffer if it does not fit: 0 with *ret and *ret_len (free it
 * when *ret != buf), -SCREE_ENOTFOUND (no such live table), -EINVAL (a
 * hashed key without its hash parts), -ENOMEM. */
int shard_ikey(const struct eng_shard *s, uint32_t table, const void *key, uint32_t len,
               uint8_t *buf, size_t cap, uint8_t **ret, uint32_t *ret_len);
/* Starts emptying a dropped tablet that nothing uses, if none is being
 * emptied: flushes and compactions call it as they end. */
void shard_drop_step(struct eng_shard *s);

/* A new SSTable's file id: above every id the shard used, and one no
 * other shard can make (shard + k * n_shards), so that a file moved in
 * from another shard keeps its id -- which its checksums are seeded with
 * (sst_format.h) -- without meeting one of this shard's (shard_move.h).
 * Ids of files written before this rule may still meet: a move refuses
 * those. */
static inline uint64_t shard_file_id_new(struct eng_shard *s)
{
        uint64_t n = s->o.n_shards ? s->o.n_shards : 1, id = s->next_file_id;

        id += (s->o.shard % n + n - id % n) % n;
        s->next_file_id = id + 1;
        return id;
}

/* The file ids the flush and the compaction in progress write (0: none). */
uint64_t shard_flush_file_id(const struct eng_shard *s);
uint64_t shard_compaction_file_id(const struct eng_shard *s);
/* Whether the compaction in progress has recorded that it removes file
 * id and is yet to delete it. */
bool shard_compaction_deleting(const struct eng_shard *s, uint64_t id);
/* shard_move.c: whether a tablet of s's names file id -- in the manifest
 * or moving in -- so that it stays when another tablet lets it go. */
bool shard_file_named(const struct eng_shard *s, uint64_t id);

/* Sorts a table set's n entries (each size bytes) newest first, by
 * highest seq (shard_open.c). */
void shard_tset_sort(struct eng_tset_entry *e, size_t n, size_t size);

/* shard_tablets.c */
/* A new empty tablet: tablet i of table ct. NULL on ENOMEM. */
struct eng_tablet *shard_tablet_new(struct eng_shard *s, const struct eng_catalog_table *ct,
                                    uint32_t i);
/* Inserts t in s->tablets (id order). 0 or -ENOMEM. */
int shard_tablet_insert(struct eng_shard *s, struct eng_tablet *t);

/* shard_relayout.c */
/* Whether cat replaces live tablet t: its table lives on, its id does not
 * (a split made children of it). */
bool shard_tablet_replaced(const struct eng_catalog *cat, const struct eng_tablet *t);
/* Whether every tablet cat replaces can hand over now: 0, or -EBUSY with
 * those whose flush or compaction runs frozen (call again once they end). */
int shard_relayout_ready(struct eng_shard *s, const struct eng_catalog *cat);
/* Checks that each tablet cat replaces is split among made[0..n_made)
 * (the tablets made for cat, still empty) and gives each child its
 * parent's table set. 0, -EINVAL (a merge, or a range gone to another
 * shard) or -ENOMEM; either way the live tablets are unchanged (freeing
 * made undoes it). */
int shard_relayout_prepare(struct eng_shard *s, const struct eng_catalog *cat,
                           struct eng_tablet *const *made, uint32_t n_made);
/* Hands replaced tablet p's memtables and flushed seq to its children
 * among made and records the split (see the file). REQUIRES:
 * shard_relayout_ready and shard_relayout_prepare said 0. p stays in
 * s->tablets for the caller to remove and free. */
void shard_relayout(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *p,
                    struct eng_tablet *const *made, uint32_t n_made);

/* shard_merge.c */
/* Whether cat merges replaced tablet t with its neighbours. */
bool shard_tablet_merging(const struct eng_catalog *cat, const struct eng_tablet *t);
/* Whether the merge t is a member of can take place now: 0, -EBUSY
 * (members flush, seal or separate first: call again) or -EINVAL. */
int shard_merge_ready(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *t);
/* Gives c, the merged tablet made for cat, its members' tables. 0,
 * -EINVAL or -ENOMEM (c unchanged but for its table set). */
int shard_merge_prepare(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *c);
/* Hands member t's group's memtables and flushed seq to c and records
 * the merge (once, at its first member). REQUIRES: shard_merge_ready and
 * shard_merge_prepare said 0. */
void shard_merge(struct eng_shard *s, const struct eng_catalog *cat, struct eng_tablet *t,
                 struct eng_tablet *c);
/* Whether t may compact: not while a merge's memtables wait for their
 * flushes (shard_merge.c). */
static inline bool shard_tablet_settled(const struct eng_tablet *t)
{
        return t->flushed_seq >= t->merge_seq;
}

/* shard_split.c */
/* Counts an access of internal key ikey of tablet t in its hot keys'
 * sample. */
void shard_hot_access(struct eng_tablet *t, const uint8_t *ikey, uint32_t len);
/* Counts scanned entry e as a read of the tablet holding it. */
void shard_load_read(struct eng_shard *s, const struct eng_entry *e);
/* What SSTable tb holds of tablet t's range, estimated from its index
 * (all of it unless tb is shared with a sibling since a split): bytes of
 * the file and rows (versions). */
void shard_table_share(const struct eng_tablet *t, const struct eng_sst_table *tb,
                       uint64_t *bytes, uint64_t *rows);

/* shard.c */
/* Inserts a decoded batch (entries from first_seq on) into the memtables,
 * skipping entries a tablet has flushed; segment is the log segment holding
 * it. Returns how many entries went in, or -ENOMEM / -SCREE_ECORRUPT. */
int shard_apply_batch(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint64_t first_seq,
                      uint64_t segment);
void shard_set_error(struct eng_shard *s, int err, const char *what);
/* Logs the writes grouped so far as one record (close calls it first). */
void shard_log_group(struct eng_shard *s);
/* Puts the writes that wait in s->unapplied into the memtables. Every read
 * and every operation that looks at the memtables calls it first. */
void shard_apply_pending(struct eng_shard *s);
/* Whether encoded batch payload has a key of tablet only -- or, with only
 * NULL, a key whose tablet is another shard's now or moving there
 * (shard_move.h). */
bool shard_batch_moved(struct eng_shard *s, const uint8_t *payload, uint32_t len,
                       const struct eng_tablet *only);
/* Runs stalled writes once memory allows. */
void shard_unstall(struct eng_shard *s);
/* eng_shard_write for the holder of held (a read-modify-write at the head
 * of its key's FIFO): no wait for the key; the write takes held over and
 * leaves it once its entries are in the memtables, or it failed. */
int shard_write_held(struct eng_shard *s, const struct eng_mutation *m, struct eng_write *w,
                     struct eng_keyq_node *held);
/* Validates n mutations and encodes them into s->scratch, as a write
 * does. 0, or eng_shard_write's -EINVAL / -SCREE_ENOTFOUND / -ENOMEM. */
int shard_encode(struct eng_shard *s, const struct eng_mutation *m, uint32_t n);

/* shard_xtxn.c */
/* Replays a commit-log record of a type other than BATCH: a COMMIT's
 * entries go into the memtables like a batch's; the others change which
 * txns are in doubt or decided. Raises s->last_seq. Returns the entries
 * applied (>= 0) or -SCREE_ECORRUPT / -ENOMEM. */
int shard_xtxn_replay(struct eng_shard *s, uint64_t segment, const struct eng_wal_record *rec);
/* End of the open: the parts replay left in doubt hold their keys again.
 * 0 or -ENOMEM. */
int shard_xtxn_open(struct eng_shard *s);
/* The oldest commit-log segment a part in doubt or a decision not
 * forgotten needs, or 0 for none. */
uint64_t shard_xtxn_log_needed(const struct eng_shard *s);
/* Closing: every part gives its keys up (they stay in doubt on disk). */
void shard_xtxn_close(struct eng_shard *s);
/* Frees every part and decision (the shard's free). */
void shard_xtxn_fini(struct eng_shard *s);

/* shard_ratelimit.c */
/* Counts one operation of kind on the partition of internal key ikey
 * against its table's limit: 0 (counted, or the table has no limit) or
 * -SCREE_ERATELIMIT (refused, not counted). */
int shard_rl_take(struct eng_shard *s, const uint8_t *ikey, uint32_t len,
                  enum eng_ratelimit_kind kind);
/* Counts an encoded batch's writes, once per partition: 0 (counted; the
 * second they count in is *ret_sec, for shard_rl_give_back; 0 when no
 * table has a limit), or -SCREE_ERATELIMIT when one of its partitions has
 * no room for a write (nothing counted). */
int shard_rl_write(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint32_t *ret_sec);
/* Gives back what shard_rl_write counted for payload in second sec: a
 * write that will not happen (a prepare aborted). */
void shard_rl_give_back(struct eng_shard *s, const uint8_t *payload, uint32_t len, uint32_t sec);

/* shard_order.c */
/* Whether a key of the encoded batch has an operation in flight. */
bool shard_batch_busy(struct eng_shard *s, const uint8_t *payload, uint32_t len);
/* Enters every distinct key of the batch into its FIFO for w (w->nodes,
 * w->qop; w->qop.run set by the caller). Returns how many FIFOs w waits in
 * (0: it heads all of them), or -ENOMEM / -SCREE_ECORRUPT (w holds none). */
int shard_hold_batch(struct eng_shard *s, struct eng_write *w, const uint8_t *payload,
                     uint32_t len);
/* Leaves every FIFO w is in (its entries are in the memtables, or it
 * failed); frees its places. */
void shard_release_write(struct eng_shard *s, struct eng_write *w);
/* Leaves node's FIFO (keyq.h) and has the operations it readied run from
 * the loop. */
void shard_order_leave(struct eng_shard *s, struct eng_keyq_node *node);
/* Closing: fails every operation waiting for a key with -SCREE_ESHUTDOWN,
 * from inside the call. */
void shard_order_fail_all(struct eng_shard *s);

/* shard_flush.c */
/* Seals the tablet's active memtable (if not empty) into its queue. */
void shard_seal(struct eng_shard *s, struct eng_tablet *t);
/* Answers the eng_shard_flush waiters whose memtables are all flushed. */
void shard_wake_waiters(struct eng_shard *s);
/* Whether the flush in progress is t's. */
bool shard_flushing(const struct eng_shard *s, const struct eng_tablet *t);
/* Hands commit-log segments below s->log_cut to the log for reuse (wal.h,
 * eng_wal_recycle: a few, of this log's size) and deletes the rest, one at
 * a time, in the background. REQUIRES: the manifest edit that moved log_cut
 * is durable, so no replay reads them again. */
void shard_release_log(struct eng_shard *s);
/* Seals the largest active memtables while over half the budget, and
 * starts a flush if none is running. */
void shard_maybe_flush(struct eng_shard *s);
/* The oldest commit-log segment any memtable still needs. */
uint64_t shard_log_needed(const struct eng_shard *s);
/* Posts the check of eng_shard_flush's waiters. */
void shard_wake_task(struct rx_loop *loop, struct rx_task *task);

/* shard_pool.c */
/* Makes s->pool (memtables take their blocks from it); prefaulting waits
 * for shard_pool_start, called once the shard is open. -ENOMEM. */
int shard_pool_init(struct eng_shard *s);
void shard_pool_start(struct eng_shard *s);
/* Blocks prefault_memtables still has to fault in (0 without it). */
uint32_t shard_prefault_pending(const struct eng_shard *s);
/* Drops the shard's reference; memtables still alive keep the pool. */
void shard_pool_fini(struct eng_shard *s);

/* shard_compact.c */
/* Starts a compaction if none is running and a tablet needs one (or the
 * major compaction in progress goes on); ends the major compaction when
 * the shard stopped. */
void shard_maybe_compact(struct eng_shard *s);
/* Whether the compaction in progress, if it is t's, can still be thrown
 * away (its manifest edit not applied yet). No side effect. */
bool shard_compaction_orphanable(const struct eng_shard *s, const struct eng_tablet *t);
/* The compaction in progress, if t's, is thrown away at its end: its
 * output deleted, nothing recorded, and t -- which the caller takes out
 * of s->tablets -- freed then. Returns true, or false (none of t's: the
 * caller frees t). REQUIRES: shard_compaction_orphanable. */
bool shard_compaction_orphan(struct eng_shard *s, const struct eng_tablet *t);
/* Charges tablet t with `probes` table probes its reads did beyond the
 * first source (a get: the tables it consulted less one; a scan:
 * SHARD_SCAN_SEEK_PROBES per source beyond the first it merges, memtables
 * holding entries included); nothing while t is compacting. Once the debt
 * covers what merging t's tables into one would cost, such a merge (a
 * read compaction) starts, or is picked when the one running ends; a
 * memtable that no write reached for a sixteenth of that debt is flushed
 * first, to be merged too. */
void shard_read_debt(struct eng_shard *s, struct eng_tablet *t, uint64_t probes);
/* Nanoseconds a compaction has run since the shard opened, the one in
 * progress included. */
uint64_t shard_compaction_ns(const struct eng_shard *s);

/* shard_open.c: t is the shard's now; close waits for its fd to close. */
void shard_track_table(struct eng_shard *s, struct eng_sst_table *t);

/* shard.c: a background job (busy++) ended; close goes on when none is left. */
void shard_job_done(struct eng_shard *s);

/* shard_read.c */
/* Newest version of ikey in t's memtables: 0 and *ret, with *ret_mt the
 * memtable holding it, or -SCREE_ENOTFOUND. */
int shard_memtables_get(const struct eng_tablet *t, const uint8_t *ikey, uint32_t len,
                        struct eng_entry *ret, struct eng_memtable **ret_mt);

#endif
