/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's workloads, independent of the engine under test: which
 * operation comes next and on which key, for every engine scree-bench
 * drives (the scree shards of bench_shard.c, RocksDB's threads of
 * bench_rocksdb.c), so both run the identical workload.
 *
 * Keys: key i (0 <= i < num) is the big-endian integer i * (2^64 / num),
 * cut or padded with '0' bytes to key_size -- db_bench's keys, with the
 * integer spread over the key space so that the ordered table's tablets
 * (split on the first key byte) and so the shards share the keys evenly;
 * key order is integer order. Worker w of n (a shard, or a RocksDB
 * thread) owns the keys eng_tablet_of_key places on shard w of n and draws
 * its operations only from them, so no operation crosses workers. A
 * missing key sits halfway between two keys; a YCSB insert takes a fresh
 * position between a key and its missing neighbour (a quarter of the way,
 * then one step further per round), owned by the same worker.
 *
 * The key distribution (keydist.h) chooses among the worker's items: its
 * loaded keys, then (for YCSB D's "latest") the keys it inserted, newest
 * last. Zipfian's O(n) set-up is done once (bench_dist_init) and copied
 * into each worker.
 *
 * Thread model: a struct bench_gen belongs to one worker thread once
 * made; bench_gen_new runs on any thread.
 */
#ifndef SCREE_PERF_BENCH_GEN_H
#define SCREE_PERF_BENCH_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/tablet.h"
#include "perf/keydist.h"

enum bench_workload {
        BENCH_FILLSEQ,
        BENCH_FILLRANDOM,
        BENCH_OVERWRITE,
        BENCH_READRANDOM,
        BENCH_READMISSING,
        BENCH_SEEKRANDOM,
        BENCH_DELETERANDOM,
        BENCH_READWHILEWRITING,
        BENCH_YCSB_A,
        BENCH_YCSB_B,
        BENCH_YCSB_C,
        BENCH_YCSB_D,
        BENCH_YCSB_E,
        BENCH_YCSB_F,
        BENCH_WORKLOAD_MAX,
        BENCH_WORKLOAD_INVALID = -1,
};

/* The db_bench workloads run by default, in db_bench's order. */
#define BENCH_DEFAULT_WORKLOADS (BENCH_DELETERANDOM + 1)

/* The workload's name as db_bench spells it ("ycsba".."ycsbf" for the
 * YCSB mixes), or "?". */
const char *bench_workload_name(enum bench_workload w);

/* The workload named s, or BENCH_WORKLOAD_INVALID. */
enum bench_workload bench_workload_parse(const char *s);

/* True for the db_bench workloads that only write (fills, overwrite, deletes). */
bool bench_workload_writes(enum bench_workload w);

/* The YCSB mix of w, or NULL for the db_bench workloads. */
const struct ycsb_mix *bench_workload_mix(enum bench_workload w);

/* What a worker does: one engine call each, except rmw (get, then put). */
enum bench_opk {
        BENCH_OPK_GET,
        BENCH_OPK_PUT,
        BENCH_OPK_DEL,
        BENCH_OPK_SCAN,
        BENCH_OPK_RMW,
};

/* The classes latency is recorded under: YCSB's operations, then deletes. */
enum bench_opc {
        BENCH_OPC_READ = YCSB_READ,
        BENCH_OPC_UPDATE = YCSB_UPDATE,
        BENCH_OPC_INSERT = YCSB_INSERT,
        BENCH_OPC_SCAN = YCSB_SCAN,
        BENCH_OPC_RMW = YCSB_RMW,
        BENCH_OPC_DELETE = YCSB_OP_MAX,
        BENCH_OPC_MAX,
};

/* "read", "update", "insert", "scan", "rmw", "delete". */
const char *bench_opc_name(enum bench_opc c);

#define BENCH_MAX_KEY_BYTES 1024u

/* The workload settings the generator needs (a part of bench_opts). */
struct bench_keys_opts {
        uint64_t num;                   /* keys; at most UINT32_MAX */
        uint32_t key_size, value_size;  /* key_size 4..BENCH_MAX_KEY_BYTES */
        uint32_t workers;               /* shards, or RocksDB threads */
        enum eng_table table;           /* decides which worker owns a key */
        uint32_t seek_nexts;            /* seekrandom: entries after the first */
        uint32_t scan_max;              /* YCSB E: scans of 1..scan_max entries */
        enum keydist_kind dist;         /* KEYDIST_INVALID: uniform, or the mix's */
        double theta;
        bool loaded;                    /* the keys exist at start (--use-existing-db) */
        uint64_t seed;
};

/* One operation to run. key and value are borrowed from the generator,
 * valid until its next call. */
struct bench_op_desc {
        enum bench_opk kind;
        enum bench_opc cls;
        uint8_t key[BENCH_MAX_KEY_BYTES];
        uint32_t key_len;
        const uint8_t *value;
        uint32_t value_len;
        uint32_t scan_len;              /* entries, for a scan */
};

/*
 * The distributions a run needs, set up once for every worker: dist for
 * the db_bench workloads, and the YCSB mixes' own (zipfian, latest) unless
 * o->dist names one. n is the smallest worker's key count; a worker with
 * more keys scales a zipfian draw up to its own count.
 */
struct bench_dists {
        struct keydist plain, zipf, latest;
};

/* Sets d up for o over n items; mixes: the YCSB mixes will run too.
 * Returns 0 or -EINVAL (bad theta). Any thread. */
int bench_dists_init(struct bench_dists *d, const struct bench_keys_opts *o, uint64_t n,
                     bool mixes);

struct bench_gen;

/* Makes worker id's generator: computes the keys it owns. NULL on ENOMEM.
 * Any thread; o is borrowed for the generator's life. Free with
 * bench_gen_free (accepts NULL). */
struct bench_gen *bench_gen_new(const struct bench_keys_opts *o, unsigned id);
void bench_gen_free(struct bench_gen *g);

/* How many keys the worker owns, and how many it inserted so far. */
uint64_t bench_gen_keys(const struct bench_gen *g);
uint64_t bench_gen_inserted(const struct bench_gen *g);

/* Live keys by this worker's count: loaded keys put and not deleted since,
 * plus inserts. */
uint64_t bench_gen_live(const struct bench_gen *g);

/* Starts workload w with the distributions d (copied). */
void bench_gen_start(struct bench_gen *g, enum bench_workload w, const struct bench_dists *d);

/*
 * The workload's next operation into op; seq is its number in this run
 * (fillseq takes key seq). Returns 0, or -ENOSPC when no fresh key is
 * left for an insert (or no missing key for readmissing). The worker's
 * thread.
 */
int bench_gen_next(struct bench_gen *g, uint64_t seq, struct bench_op_desc *op);

/* readwhilewriting's background write: a put of one of the worker's keys. */
void bench_gen_write(struct bench_gen *g, struct bench_op_desc *op);

/* A value to write (value_size bytes): borrowed, valid for the generator's
 * life. For the engines' read-modify-write callbacks. */
const uint8_t *bench_gen_value(struct bench_gen *g);

/* Builds key i into dst (o->key_size bytes). Pure; any thread. */
void bench_key(const struct bench_keys_opts *o, uint64_t i, uint8_t *dst);

#endif
