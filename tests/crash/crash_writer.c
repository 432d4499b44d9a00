/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The crash test's writer (crash_test.h): one shard on the real file layer
 * (eng_fs_direct_new), driven by a loop on this thread. It opens the shard
 * (recovering from the last kill), reads every workload key back, then
 * keeps W writes of the workload (crash_ops.h) in flight and reports each
 * acknowledgement on stdout before issuing the next write, so at any moment
 * at most W writes are issued beyond those reported.
 *
 * Output lines are written whole with one write(2) each (dump lines in
 * batches of whole lines under PIPE_BUF), so a SIGKILL never leaves half a
 * line behind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <scree/scree_errors.h>

#include "base/compiler.h"
#include "base/time.h"
#include "engine/fs.h"
#include "engine/shard.h"
#include "reactor/loop.h"
#include "tests/crash/crash_ops.h"
#include "tests/crash/crash_test.h"

#define DUMP_PARALLEL 16u
#define OUT_FLUSH_BYTES 3800u   /* < PIPE_BUF: a batch of lines arrives whole */

struct writer;

struct wslot {
        struct eng_write w;
        struct writer *wr;
        uint64_t index;
        bool busy;
};

struct dslot {
        struct eng_get g;
        struct writer *wr;
        uint32_t key;
        bool busy;
};

struct writer {
        struct rx_loop *loop;
        struct eng_fs *fs;
        struct eng_shard *sh;
        const char *dir;
        uint64_t seed;
        uint32_t round, n_slots;
        uint64_t period_ms;             /* 0: batch sync */
        bool check_only, stopping, closing, finished;
        int exit_code;
        /* read-back */
        uint32_t dump_next, dump_done, dump_in_flight;
        struct dslot dslots[DUMP_PARALLEL];
        char out[4096];
        size_t out_len;
        /* writes */
        struct wslot *slots;
        uint32_t in_flight;
        uint64_t next_index;
        struct rx_task pump_task;
        bool pump_posted;
        struct rx_timer deadline;
        uint8_t key_buf[2][CRASH_KEY_MAX];
        uint8_t val_buf[2][CRASH_VALUE_MAX];
};

static void put_all(const char *buf, size_t len)
{
        while (len) {
                ssize_t n = write(STDOUT_FILENO, buf, len);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        exit(CRASH_EXIT_USAGE);         /* the driver is gone */
                buf += n;
                len -= (size_t)n;
        }
}

static void out_flush(struct writer *wr)
{
        put_all(wr->out, wr->out_len);
        wr->out_len = 0;
}

static __attribute__((format(printf, 2, 3))) void out_line(struct writer *wr, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (wr->out_len > OUT_FLUSH_BYTES)
                out_flush(wr);
        va_start(ap, fmt);
        n = vsnprintf(wr->out + wr->out_len, sizeof(wr->out) - wr->out_len, fmt, ap);
        va_end(ap);
        wr->out_len += (size_t)n;
}

static void fail(struct writer *wr, const char *what, int err)
{
        out_flush(wr);
        fprintf(stderr, "crash_test writer (round %u): %s: %s\n", wr->round, what,
                scree_strerror(err));
        exit(CRASH_EXIT_ENGINE);
}

/* ---- finishing ---- */

static void on_closed(void *arg, int res)
{
        struct writer *wr = arg;

        if (res < 0)
                fail(wr, "close", res);
        wr->finished = true;
}

static void close_shard(struct writer *wr)
{
        int r;

        out_flush(wr);
        wr->closing = true;
        r = eng_shard_close(wr->sh, on_closed, wr);
        if (r < 0)
                fail(wr, "close", r);
}

/* ---- writes ---- */

static void pump(struct writer *wr);

static void pump_task_run(struct rx_loop *loop, struct rx_task *t)
{
        struct writer *wr = container_of(t, struct writer, pump_task);

        (void)loop;
        wr->pump_posted = false;
        pump(wr);
}

static void pump_later(struct writer *wr)
{
        if (wr->pump_posted)
                return;
        wr->pump_posted = true;
        rx_loop_post(wr->loop, &wr->pump_task);
}

static void report_ack(struct writer *wr, struct wslot *s)
{
        struct crash_op op = crash_op_gen(wr->seed, wr->round, s->index);

        out_line(wr, "A %" PRIu64 " %c %u %u\n", s->index, crash_op_letter(op.kind), op.key[0],
                 op.n_keys == 2 ? op.key[1] : 0);
        out_flush(wr);
        s->busy = false;
}

static void on_write(struct eng_write *w, int res)
{
        struct wslot *s = container_of(w, struct wslot, w);
        struct writer *wr = s->wr;

        if (res < 0)
                fail(wr, "write", res);
        report_ack(wr, s);
        wr->in_flight--;
        pump_later(wr);
}

static struct eng_mutation mutation(struct writer *wr, const struct crash_op *op, uint32_t h,
                                    uint64_t now_ms)
{
        uint32_t key = op->key[h];
        struct eng_mutation m = {
                .kind = op->kind == CRASH_DEL ? ENG_MUT_DEL : ENG_MUT_PUT,
                .table = crash_key_table(key),
                .key = wr->key_buf[h],
                .key_len = crash_key_bytes(key, wr->key_buf[h]),
        };

        if (m.kind == ENG_MUT_PUT) {
                m.value = wr->val_buf[h];
                m.value_len = crash_value_make(key, op->ver, wr->val_buf[h]);
                if (op->kind == CRASH_PUT_TTL)
                        m.expiry_ms = now_ms + CRASH_TTL_MS;
                else if (op->kind == CRASH_PUT_EXPIRED)
                        m.expiry_ms = now_ms - 1000;
        }
        return m;
}

/* Issues the next op in slot s. Returns true if it was acknowledged at once. */
static bool issue(struct writer *wr, struct wslot *s)
{
        struct crash_op op = crash_op_gen(wr->seed, wr->round, wr->next_index);
        uint64_t now_ms = time_wall_ns() / NS_PER_MS;
        struct eng_mutation m[2];
        int r;

        for (uint32_t h = 0; h < op.n_keys; h++)
                m[h] = mutation(wr, &op, h, now_ms);
        s->index = wr->next_index++;
        s->busy = true;
        r = eng_shard_write(wr->sh, m, op.n_keys, &s->w);
        if (r < 0)
                fail(wr, "write", r);
        if (r == 1) {
                report_ack(wr, s);
                return true;
        }
        wr->in_flight++;
        return false;
}

static struct wslot *free_slot(struct writer *wr)
{
        for (uint32_t i = 0; i < wr->n_slots; i++)
                if (!wr->slots[i].busy)
                        return &wr->slots[i];
        return NULL;
}

static void pump(struct writer *wr)
{
        uint32_t immediate = 0;
        struct wslot *s;

        if (wr->stopping) {
                if (wr->in_flight == 0 && !wr->closing)
                        close_shard(wr);
                return;
        }
        while ((s = free_slot(wr))) {
                /* Periodic mode acknowledges at once: let the loop breathe. */
                if (issue(wr, s) && ++immediate >= wr->n_slots) {
                        pump_later(wr);
                        return;
                }
        }
}

static void on_deadline(struct rx_loop *loop, struct rx_timer *t)
{
        struct writer *wr = container_of(t, struct writer, deadline);

        (void)loop;
        wr->stopping = true;
        pump_later(wr);
}

static void start_writing(struct writer *wr)
{
        wr->slots = calloc(wr->n_slots, sizeof(*wr->slots));
        if (!wr->slots)
                fail(wr, "start", -ENOMEM);
        for (uint32_t i = 0; i < wr->n_slots; i++) {
                wr->slots[i].wr = wr;
                wr->slots[i].w.done = on_write;
        }
        wr->pump_task = (struct rx_task){ .fn = pump_task_run, .name = "crash:pump" };
        rx_timer_init(&wr->deadline, on_deadline, "crash:deadline");
        rx_timer_arm_after(wr->loop, &wr->deadline, CRASH_WRITER_MAX_NS);
        pump(wr);
}

/* ---- read-back ---- */

static void dump_next(struct writer *wr);

static void record(struct writer *wr, struct dslot *d, int res)
{
        uint64_t ver;
        const char *why;

        if (res == -SCREE_ENOTFOUND) {
                out_line(wr, "S %u -\n", d->key);
        } else if (res < 0) {
                fail(wr, "get", res);
        } else if (crash_value_check(wr->seed, d->key, d->g.value, d->g.value_len, d->g.expiry_ms,
                                     time_wall_ns() / NS_PER_MS, &ver, &why) < 0) {
                out_line(wr, "G %u %s\n", d->key, why);
        } else {
                out_line(wr, "S %u %" PRIx64 "\n", d->key, ver);
        }
        if (res == 0)
                eng_get_release(&d->g);
        d->busy = false;
        wr->dump_in_flight--;
        wr->dump_done++;
}

static void on_get(struct eng_get *g, int res)
{
        struct dslot *d = container_of(g, struct dslot, g);

        record(d->wr, d, res);
        dump_next(d->wr);
}

static void dump_finished(struct writer *wr)
{
        out_line(wr, "R\n");
        out_flush(wr);
        if (wr->check_only)
                close_shard(wr);
        else
                start_writing(wr);
}

static void dump_next(struct writer *wr)
{
        /* Gets that answer at once free their slot at once: keep going
         * until every slot waits for the disk. */
        for (uint32_t i = 0; wr->dump_next < CRASH_N_KEYS; i = (i + 1) % DUMP_PARALLEL) {
                struct dslot *d = &wr->dslots[i];
                uint8_t key[CRASH_KEY_MAX];
                int r;

                if (d->busy) {
                        if (wr->dump_in_flight == DUMP_PARALLEL)
                                break;
                        continue;
                }
                d->key = wr->dump_next++;
                d->busy = true;
                d->wr = wr;
                d->g = (struct eng_get){ .done = on_get };
                wr->dump_in_flight++;
                r = eng_shard_get(wr->sh, crash_key_table(d->key), key,
                                  crash_key_bytes(d->key, key), &d->g);
                if (r != 1)
                        record(wr, d, r);
        }
        if (wr->dump_done == CRASH_N_KEYS && wr->dump_in_flight == 0)
                dump_finished(wr);
}

static void on_open(void *arg, int res, struct eng_shard *s)
{
        struct writer *wr = arg;

        if (res < 0)
                fail(wr, "open", res);
        wr->sh = s;
        out_line(wr, "O %" PRIu64 "\n", eng_shard_stats(s)->replayed_records);
        dump_next(wr);
}

static int parse(struct writer *wr, int argc, char **argv)
{
        uint64_t round = 0, inflight = CRASH_DEFAULT_INFLIGHT;

        if (argc < 1 || argv[0][0] == '-' || !crash_arg_u64(argc, argv, "seed", &wr->seed) ||
            !crash_arg_u64(argc, argv, "round", &round) ||
            !crash_arg_u64(argc, argv, "inflight", &inflight) ||
            !crash_arg_u64(argc, argv, "periodic-ms", &wr->period_ms) || round == 0 ||
            round >= UINT32_MAX || inflight == 0 || inflight > 4096) {
                fprintf(stderr, "usage: crash_test writer DIR --seed S --round R (>= 1) "
                        "[--inflight W] [--periodic-ms N] [--check]\n");
                return -1;
        }
        wr->dir = argv[0];
        wr->round = (uint32_t)round;
        wr->n_slots = (uint32_t)inflight;
        wr->check_only = crash_arg_flag(argc, argv, "check");
        return 0;
}

static int open_shard(struct writer *wr)
{
        struct eng_shard_opts o = {
                .dir = wr->dir, .shard = 0, .n_shards = 1,
                .sync = wr->period_ms ? ENG_WAL_SYNC_PERIODIC : ENG_WAL_SYNC_BATCH,
                .period_ns = wr->period_ms * NS_PER_MS,
                .segment_bytes = CRASH_SEGMENT_BYTES,
                .memtable_budget = CRASH_MEMTABLE_BUDGET,
                .cache_bytes = CRASH_CACHE_BYTES,
        };
        int r = rx_loop_new(NULL, &wr->loop);

        if (r < 0) {
                fprintf(stderr, "crash_test writer: %s\n", rx_loop_setup_hint(r));
                return r;
        }
        wr->fs = eng_fs_direct_new(wr->loop);
        if (!wr->fs)
                return -ENOMEM;
        return eng_shard_open(wr->loop, wr->fs, &o, on_open, wr);
}

int crash_writer_main(int argc, char **argv)
{
        static struct writer wr;        /* big buffers: not on the stack */
        int r;

        if (parse(&wr, argc, argv) < 0)
                return CRASH_EXIT_USAGE;
        r = open_shard(&wr);
        if (r < 0)
                fail(&wr, "open", r);
        r = rx_loop_run_until(wr.loop, &wr.finished);
        if (r < 0)
                fail(&wr, "loop", r);
        eng_fs_free(wr.fs);
        rx_loop_free(wr.loop);
        free(wr.slots);
        return 0;
}
