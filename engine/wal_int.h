/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The commit-log writer's insides, shared by its two files: wal.c (buffers,
 * flushes, acknowledgements, sync marks, out of space, closing, the API)
 * and wal_seg.c (a segment's preparation and its undoing, the roll, and
 * zeroing the reserve). Not an interface: only those two include it. All
 * of it runs on the log's owning shard.
 */
#ifndef SCREE_ENGINE_WAL_INT_H
#define SCREE_ENGINE_WAL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/wal.h"
#include "engine/wal_gather.h"

#define BLOCK MEM_DIRECT_ALIGN
#define MIN_BUF (64u * 1024u)

struct wbuf {
        uint8_t *data;                  /* undefined beyond len: a flush zeroes its last block's tail */
        size_t cap, len;
        uint64_t file_off;
};

struct wal_seg {
        struct eng_wal *wal;
        struct wal_seg *next;
        uint64_t id;
        int fd;
        int prep_step;                  /* preparation stage; see prep_done */
        uint64_t recycled_id;           /* reuses the file of this old segment; 0: a new file */
        uint64_t zero_off;              /* zeros written up to here; see wal_zero_kick */
        bool ready, sealed, busy;       /* busy: an op of its own is in flight */
        bool nospace;                   /* its preparation ran out of space: undone, waits
                                         * for the retry timer (wal_nospace_enter) */
        struct eng_fs_op op;
        uint8_t *header;
        struct wbuf active;
        uint64_t durable_off;
        uint64_t mark_off;              /* a sync mark was written here (0: none) */
        char path[];
};

struct eng_wal {
        int owner_shard;
        struct eng_fs *fs;
        struct eng_wal_opts o;
        int dir_fd;                     /* the directory, for fsyncs of new names */
        bool dir_busy;                  /* its open or close is in flight */
        struct eng_fs_op dir_op;
        struct wal_seg *segs;           /* oldest first; the last is the reserve */
        struct wal_seg *cur;
        bool io_busy;
        struct wal_seg *io_seg;
        struct wbuf flushing;
        struct wbuf spare;              /* a written buffer kept for the next flush (wbuf_take) */
        uint64_t io_end;
        struct eng_fs_op io_op;
        struct eng_wal_write *ack_head, *ack_tail;
        int error;
        uint64_t last_seq;
        struct rx_timer timer;
        bool flush_due;                 /* periodic: the timer (or a full buffer) asked for a flush */
        struct rx_timer mark_timer;     /* the sync mark waits for the log to stay idle */
        bool mark_due;                  /* it fired: write the mark if the log is idle */
        bool closing;
        struct rx_task close_task;
        void (*close_done)(void *arg, int res);
        void *close_arg;
        struct eng_wal_stats stats;
        uint64_t pool[ENG_WAL_RECYCLE_MAX];     /* old segments' files kept for reuse */
        unsigned n_pool;
        uint8_t *zeros;                 /* ZERO_CHUNK zero bytes for wal_zero_kick; lazily */
        uint8_t *mark_buf;              /* MARK_BUF bytes for the sync mark's write */
        uint32_t mark_len;              /* the mark write in flight: its length */
        /* Out of space (wal_nospace_enter): the flush whose write failed keeps
         * its buffer (wal->flushing) to write it again; the retry timer
         * tries that and every segment's undone preparation. */
        bool write_nospace;
        struct rx_timer retry_timer;
        uint64_t retry_ns;              /* the next retry's delay: doubles up to RETRY_MAX_NS */
        struct rx_task stuck_task;      /* fails appends that landed where nothing can be written */
        bool stuck_posted;
        struct eng_wal_gather gather;   /* batch mode's (wal_gather.h) */
        struct rx_timer gather_timer;   /* the gathering's deadline */
};

static inline uint64_t wal_seg_end(const struct wal_seg *s)
{
        return s->active.file_off + s->active.len;
}

static inline bool wal_seg_pending(const struct wal_seg *s)
{
        return wal_seg_end(s) > s->durable_off;
}

/* wal.c */

/* Starts the next flush if one is allowed and pending (the group commit). */
void wal_kick(struct eng_wal *wal);
/* The log fails with err: every waiting append is acknowledged with it. */
void wal_fail(struct eng_wal *wal, int err);
/* The next step of closing, once what is in flight is done. */
void wal_close_step(struct eng_wal *wal);
/* Out of space: arm the retry timer (or give up when closing). */
void wal_nospace_enter(struct eng_wal *wal);
/* A write or a preparation succeeded: leave the out-of-space state. */
void wal_nospace_left(struct eng_wal *wal);
/* Buffers: 0 or -ENOMEM. */
int wal_wbuf_init(struct eng_wal *wal, struct wbuf *b, size_t cap, uint64_t file_off);
void wal_wbuf_fini(struct wbuf *b);
int wal_wbuf_reserve(struct eng_wal *wal, struct wbuf *b, size_t n);

/* wal_seg.c */

/* Starts preparing s. Returns 0 or the submit's error. */
int wal_prep_start(struct wal_seg *s);
/* Creates segment `id` at the end of the list and starts preparing it --
 * once the directory is open. NULL on ENOMEM (or a failed submit). */
struct wal_seg *wal_seg_new(struct eng_wal *wal, uint64_t id);
void wal_seg_free(struct wal_seg *s);
/* Seals the current segment and moves appends to the reserve. 0 or -ENOMEM. */
int wal_roll(struct eng_wal *wal);
/* Whether the reserve s should get its next chunk of zeros now. */
bool wal_zero_wanted(const struct wal_seg *s);
/* Starts the next chunk of zeros over the reserve, if it is wanted now. */
void wal_zero_kick(struct eng_wal *wal);

#endif
