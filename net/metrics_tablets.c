/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-tablet metrics (metrics_tablets.h): a shard's tablets gathered
 * on its own thread with the same engine call as TABLE.DESCRIBE
 * (eng_shard_table_stats, one table at a time over the shard's catalog
 * snapshot), bounded to the busiest when there are too many, and their
 * Prometheus text. The snapshot's catalog reference is dropped by the
 * asking shard; catalogs are built by shard 0's catalog service, so the
 * last reference usually goes where the memory came from.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/compiler.h"
#include "engine/catalog.h"
#include "engine/shard.h"
#include "net/metrics.h"
#include "net/metrics_tablets.h"
#include "net/tbl_args.h"

uint32_t net_metrics_tablets_cap(unsigned n_shards)
{
        uint32_t cap = NET_METRICS_TABLETS_MAX / n_shards;

        return cap ? cap : 1;
}

int net_metrics_tablets_init(struct net_metrics_tablets *mt, uint32_t cap)
{
        memset(mt, 0, sizeof(*mt));
        mt->cap = cap;
        mt->table = calloc(cap ? cap : 1, sizeof(*mt->table));
        mt->st = calloc(cap ? cap : 1, sizeof(*mt->st));
        if (!mt->table || !mt->st) {
                net_metrics_tablets_fini(mt);
                return -ENOMEM;
        }
        return 0;
}

void net_metrics_tablets_fini(struct net_metrics_tablets *mt)
{
        eng_catalog_unref(mt->cat);
        free(mt->table);
        free(mt->st);
        memset(mt, 0, sizeof(*mt));
}

/* ---- gathering, on the reporting shard ---- */

/* Whether a tablet of t is reported: every one of a user table; one of a
 * built-in raw-key table (the Redis databases, /scree/ordered) only while
 * it holds data or takes traffic. */
static bool reportable(const struct eng_catalog_table *t, const struct eng_tablet_stats *st)
{
        return t->key_format != ENG_CATALOG_KEYS_RAW || st->bytes || st->rows || st->reads_ps ||
               st->writes_ps;
}

static uint32_t count_tablets(const struct eng_shard *eng, const struct eng_catalog *cat)
{
        uint32_t n = 0;

        for (uint32_t i = 0; i < eng_catalog_n_tables(cat); i++)
                n += eng_shard_table_stats(eng, eng_catalog_table_at(cat, i)->id, NULL, 0);
        return n;
}

/* Writes eng's reportable tablets into table[] and st[] (cap each), in
 * catalog and key order; returns how many. *ret_over: tablets that found
 * no room (0 when cap holds every tablet). */
static uint32_t collect(const struct eng_shard *eng, const struct eng_catalog *cat,
                        const struct eng_catalog_table **table, struct eng_tablet_stats *st,
                        uint32_t cap, uint32_t *ret_over)
{
        uint32_t n = 0, over = 0;

        for (uint32_t i = 0; i < eng_catalog_n_tables(cat); i++) {
                const struct eng_catalog_table *t = eng_catalog_table_at(cat, i);
                uint32_t k = eng_shard_table_stats(eng, t->id, st + n, cap - n);
                uint32_t got = k < cap - n ? k : cap - n;

                over += k - got;
                for (uint32_t j = n, end = n + got; j < end; j++) {
                        if (!reportable(t, &st[j]))
                                continue;       /* its room is the next table's */
                        st[n] = st[j];
                        table[n++] = t;
                }
        }
        *ret_over = over;
        return n;
}

struct rank {
        uint64_t ops, bytes;
        uint32_t i;
};

/* Busiest first, then biggest, then in catalog order. */
static int rank_cmp(const void *a, const void *b)
{
        const struct rank *x = a, *y = b;

        if (x->ops != y->ops)
                return x->ops > y->ops ? -1 : 1;
        if (x->bytes != y->bytes)
                return x->bytes > y->bytes ? -1 : 1;
        return x->i < y->i ? -1 : x->i > y->i;
}

static int index_cmp(const void *a, const void *b)
{
        const struct rank *x = a, *y = b;

        return x->i < y->i ? -1 : x->i > y->i;
}

/* Copies the mt->cap busiest of the n tablets in table[] and st[] into mt
 * (all of them if they fit), keeping their order; -ENOMEM: none copied. */
static int keep_busiest(struct net_metrics_tablets *mt, const struct eng_catalog_table **table,
                        const struct eng_tablet_stats *st, uint32_t n)
{
        uint32_t keep = n < mt->cap ? n : mt->cap;
        struct rank *rk = malloc((n ? n : 1) * sizeof(*rk));

        if (!rk)
                return -ENOMEM;
        for (uint32_t i = 0; i < n; i++)
                rk[i] = (struct rank){ st[i].reads_ps + st[i].writes_ps, st[i].bytes, i };
        qsort(rk, n, sizeof(*rk), rank_cmp);
        qsort(rk, keep, sizeof(*rk), index_cmp);
        for (uint32_t k = 0; k < keep; k++) {
                mt->table[k] = table[rk[k].i];
                mt->st[k] = st[rk[k].i];
        }
        mt->n = keep;
        mt->n_omitted = n - keep;
        free(rk);
        return 0;
}

/* Gathers every tablet into memory of this shard's (freed here), then
 * keeps the busiest. -ENOMEM: nothing kept. */
static int fill_ranked(struct net_metrics_tablets *mt, const struct eng_shard *eng,
                       uint32_t total)
{
        const struct eng_catalog_table **table = malloc(total * sizeof(*table));
        struct eng_tablet_stats *st = malloc(total * sizeof(*st));
        uint32_t n, over;
        int r = -ENOMEM;

        if (table && st) {
                n = collect(eng, mt->cat, table, st, total, &over);
                r = keep_busiest(mt, table, st, n);
        }
        free(table);
        free(st);
        return r;
}

void net_metrics_tablets_fill(struct net_metrics_tablets *mt, struct eng_shard *eng)
{
        struct eng_catalog *cat = eng_shard_catalog(eng);

        if (!cat)
                return;
        mt->cat = eng_catalog_ref(cat);
        mt->n_total = count_tablets(eng, cat);
        if (mt->n_total > mt->cap && fill_ranked(mt, eng, mt->n_total) == 0)
                return;
        mt->n = collect(eng, cat, mt->table, mt->st, mt->cap, &mt->n_omitted);
}

/* ---- the text ---- */

/* A per-tablet family: one number of struct eng_tablet_stats. */
struct tablet_family {
        const char *name, *help;
        size_t off;                     /* of a uint64_t in struct eng_tablet_stats */
};

#define TST(field) offsetof(struct eng_tablet_stats, field)

static const struct tablet_family tablet_families[] = {
        { "scree_tablet_bytes",
          "Estimated bytes of the tablet: its share of SSTable bytes plus its memtables' memory.",
          TST(bytes) },
        { "scree_tablet_rows",
          "Estimated rows of the tablet (versions and tombstones not yet compacted away count).",
          TST(rows) },
        { "scree_tablet_reads_per_second",
          "Point reads of the tablet and rows ranges read from it, in the last second.",
          TST(reads_ps) },
        { "scree_tablet_writes_per_second",
          "Rows written or deleted in the tablet in the last second.", TST(writes_ps) },
        { "scree_tablet_read_bytes_per_second",
          "Key and value bytes read from the tablet in the last second.", TST(read_bytes_ps) },
        { "scree_tablet_write_bytes_per_second",
          "Key and value bytes written to the tablet in the last second.", TST(write_bytes_ps) },
};

static void head(FILE *f, const char *name, const char *help)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

/* A table's path as a label value: paths take no quote or backslash, but
 * the text must hold whatever a catalog holds. */
#define PATH_LABEL_BYTES (5 * ENG_CATALOG_MAX_PATH + 1)

/* Writes tablet j of mt's labels: table, tablet and shard. */
static void labels(FILE *f, const struct net_metrics_tablets *mt, uint32_t j, unsigned shard)
{
        char path[PATH_LABEL_BYTES];
        const char *p = mt->table[j]->path;

        net_metrics_label_escape(path, sizeof(path), p, strlen(p));
        fprintf(f, "table=\"%s\",tablet=\"%u\",shard=\"%u\"", path, mt->st[j].id, shard);
}

static void format_per_shard(FILE *f, const struct net_metrics_snap *snaps, unsigned n,
                             bool omitted)
{
        if (omitted)
                head(f, "scree_tablets_omitted",
                     "Tablets of the shard left out of the per-tablet families to keep the page "
                     "bounded.");
        else
                head(f, "scree_tablets", "Tablets the shard holds, of every table.");
        for (unsigned i = 0; i < n; i++) {
                const struct net_metrics_tablets *mt = &snaps[i].tablets;

                if (snaps[i].engine_ready && mt->cat)
                        fprintf(f, "%s{shard=\"%u\"} %u\n",
                                omitted ? "scree_tablets_omitted" : "scree_tablets",
                                snaps[i].shard, omitted ? mt->n_omitted : mt->n_total);
        }
}

static void format_tablet_family(FILE *f, const struct tablet_family *fam,
                                 const struct net_metrics_snap *snaps, unsigned n)
{
        head(f, fam->name, fam->help);
        for (unsigned i = 0; i < n; i++) {
                const struct net_metrics_tablets *mt = &snaps[i].tablets;

                for (uint32_t j = 0; snaps[i].engine_ready && j < mt->n; j++) {
                        uint64_t v;

                        memcpy(&v, (const char *)&mt->st[j] + fam->off, sizeof(v));
                        fprintf(f, "%s{", fam->name);
                        labels(f, mt, j, snaps[i].shard);
                        fprintf(f, "} %llu\n", (unsigned long long)v);
                }
        }
}

/* Writes hot key h of t as a label value: its text's first
 * NET_METRICS_KEY_LABEL_BYTES bytes, escaped, then "..." if there was more. */
static void key_label(FILE *f, const struct eng_catalog_table *t, const struct eng_tablet_hot *h)
{
        char text[NET_METRICS_KEY_LABEL_BYTES];
        char esc[5 * NET_METRICS_KEY_LABEL_BYTES + 1];
        size_t len = net_tbl_hot_key_text(t, h, text, sizeof(text));
        size_t kept = len < sizeof(text) ? len : sizeof(text);

        net_metrics_label_escape(esc, sizeof(esc), text, kept);
        fprintf(f, "key=\"%s%s\"", esc, h->cut || len > kept ? "..." : "");
}

static const char hot_name[] = "scree_tablet_hot_key_accesses_per_second";

/* The hot-key samples of tablet j of mt, of shard shard. */
static void hot_keys(FILE *f, const struct net_metrics_tablets *mt, uint32_t j, unsigned shard)
{
        const struct eng_tablet_stats *st = &mt->st[j];

        for (uint32_t k = 0; k < st->n_hot && k < ENG_TABLET_HOT_KEYS; k++) {
                fprintf(f, "%s{", hot_name);
                labels(f, mt, j, shard);
                fprintf(f, ",rank=\"%u\",", k + 1);
                key_label(f, mt->table[j], &st->hot[k]);
                fprintf(f, "} %llu\n", (unsigned long long)st->hot[k].per_sec);
        }
}

static void format_hot_keys(FILE *f, const struct net_metrics_snap *snaps, unsigned n)
{
        head(f, hot_name, "Estimated accesses per second of the tablet's hottest keys (sampled; "
                          "rank 1 the hottest).");
        for (unsigned i = 0; i < n; i++)
                for (uint32_t j = 0; snaps[i].engine_ready && j < snaps[i].tablets.n; j++)
                        hot_keys(f, &snaps[i].tablets, j, snaps[i].shard);
}

int net_metrics_tablets_format(FILE *f, const struct net_metrics_snap *snaps, unsigned n)
{
        format_per_shard(f, snaps, n, false);
        format_per_shard(f, snaps, n, true);
        for (size_t k = 0; k < ARRAY_SIZE(tablet_families); k++)
                format_tablet_family(f, &tablet_families[k], snaps, n);
        format_hot_keys(f, snaps, n);
        return ferror(f) ? -EIO : 0;
}
