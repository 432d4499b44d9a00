/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-tablet metrics (design: docs/server.md "Metrics"): each shard's
 * tablets with their size, last second's traffic and hottest keys, the
 * figures TABLE.DESCRIBE shows, as Prometheus families labelled
 * table="/app/t", tablet="17", shard="1".
 *
 * Bounded: a page reports at most NET_METRICS_TABLETS_MAX tablets, each
 * shard at most its even share of them (net_metrics_tablets_cap); a
 * shard holding more reports its busiest (reads plus writes per second,
 * then bytes) and counts the rest in scree_tablets_omitted. The tablets of
 * the built-in raw-key tables (/redis/db0..15, /scree/ordered: 17 tables
 * of a few tablets per shard each, mostly empty) are reported only while
 * they hold data or take traffic. Hot-key labels are cut to
 * NET_METRICS_KEY_LABEL_BYTES bytes of the key. A tablet makes at most 9
 * samples (6 numbers, 3 hot keys): with short table paths about 0.5 to
 * 1 KB of text, so the tablet families stay within a few MB.
 *
 * Shard model: the asking shard allocates a net_metrics_tablets (its
 * arrays sized by the cap) and frees it; the reporting shard fills it on
 * its own thread from its engine, and takes a reference to its catalog
 * snapshot so that the asking shard can name the tables and decode the
 * keys with the very snapshot the tablets came from (a snapshot is
 * immutable and its count atomic: engine/catalog.h). Formatting is pure.
 */
#ifndef SCREE_NET_METRICS_TABLETS_H
#define SCREE_NET_METRICS_TABLETS_H

#include <stdint.h>
#include <stdio.h>

struct eng_catalog;
struct eng_catalog_table;
struct eng_shard;
struct eng_tablet_stats;
struct net_metrics_snap;

/* Tablets a page reports at most, over every shard. */
#define NET_METRICS_TABLETS_MAX 2048u
/* Bytes of a hot key a label shows at most (then "..."). */
#define NET_METRICS_KEY_LABEL_BYTES 64u

/* One shard's tablets for a page. */
struct net_metrics_tablets {
        struct eng_catalog *cat;        /* a reference (the filler's snapshot), or NULL */
        uint32_t n_total;               /* tablets the shard holds (scree_tablets) */
        uint32_t n_omitted;             /* reportable ones left out for the bound */
        uint32_t cap;                   /* room in table[] and st[] */
        uint32_t n;                     /* reported: table[0..n), st[0..n) */
        const struct eng_catalog_table **table;         /* [cap], borrowed from cat */
        struct eng_tablet_stats *st;                    /* [cap] */
};

/* The tablets each of n_shards shards reports at most: an even share of
 * NET_METRICS_TABLETS_MAX, at least 1. REQUIRES: n_shards > 0. Pure. */
uint32_t net_metrics_tablets_cap(unsigned n_shards);

/* Prepares mt with room for cap tablets, none filled. Returns 0 or
 * -ENOMEM. Free with net_metrics_tablets_fini (accepts a zeroed mt).
 * Any thread. */
int net_metrics_tablets_init(struct net_metrics_tablets *mt, uint32_t cap);
void net_metrics_tablets_fini(struct net_metrics_tablets *mt);

/*
 * Fills mt (prepared, not filled yet) with eng's tablets, table by table
 * in its catalog's order and each table's in key order: every tablet of
 * the user tables and the built-in tables' tablets that hold data or take
 * traffic; past mt->cap, the busiest (reads plus writes per second, then
 * bytes), the others counted in n_omitted. Takes a reference to eng's
 * catalog (dropped by fini). Without memory to rank them, the first cap.
 * Shard-local (eng's shard).
 */
void net_metrics_tablets_fill(struct net_metrics_tablets *mt, struct eng_shard *eng);

/*
 * Writes the tablet families of n snapshots (borrowed; those whose engine
 * is not ready are skipped) to f: scree_tablets and scree_tablets_omitted
 * per shard, scree_tablet_bytes, _rows, _reads_per_second,
 * _writes_per_second, _read_bytes_per_second, _write_bytes_per_second per
 * tablet, and scree_tablet_hot_key_accesses_per_second per hot key
 * (rank="1" the hottest; key="...": net_tbl_hot_key_text's text, its
 * first NET_METRICS_KEY_LABEL_BYTES bytes then "..." if longer or cut by
 * the engine, escaped by net_metrics_label_escape). Every family once
 * with # HELP and # TYPE. Returns 0, or -EIO if f reports an error. Pure
 * (reads the snapshots' catalogs).
 */
int net_metrics_tablets_format(FILE *f, const struct net_metrics_snap *snaps, unsigned n);

#endif
