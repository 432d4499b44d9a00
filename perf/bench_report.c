/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-bench's figures; see bench_report.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/time.h"
#include "engine/compaction.h"
#include "engine/shard.h"
#include "engine/wal.h"
#include "perf/bench_report.h"

static int merge_series(struct bench_summary *s, const struct bench_result *r)
{
        if (r->n_sec > s->n_sec) {
                struct hist *v = realloc(s->sec, r->n_sec * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                memset(v + s->n_sec, 0, (r->n_sec - s->n_sec) * sizeof(*v));
                s->sec = v;
                s->n_sec = r->n_sec;
        }
        for (size_t i = 0; i < r->n_sec; i++)
                hist_merge(&s->sec[i], &r->sec[i]);
        return 0;
}

int bench_summarize(const struct bench_engine *e, enum bench_workload w, struct bench_summary *s)
{
        uint64_t start = UINT64_MAX, end = 0;
        uint64_t per_key = e->o->k.key_size + e->o->k.value_size;

        memset(s, 0, sizeof(*s));
        s->w = w;
        for (unsigned i = 0; i < e->n; i++) {
                const struct bench_result *r = e->res[i];

                s->ops += r->ops;
                s->found += r->found;
                s->entries += r->entries;
                s->bg_ops += r->bg_ops;
                s->user_bytes += r->user_bytes;
                s->disk_bytes += r->disk_bytes;
                s->stalls += r->stalls;
                s->flushes += r->flushes;
                s->compaction_ns += r->compaction_ns;
                s->sst_reads += r->sst_reads;
                s->live_bytes += bench_gen_live(e->gen[i]) * per_key;
                start = r->start_ns < start ? r->start_ns : start;
                end = r->end_ns > end ? r->end_ns : end;
                hist_merge(&s->lat, &r->lat);
                for (unsigned c = 0; c < BENCH_OPC_MAX; c++)
                        hist_merge(&s->by_cls[c], &r->by_cls[c]);
                if (!s->err)
                        s->err = r->err;
                if (merge_series(s, r) < 0)
                        return -ENOMEM;
        }
        s->secs = end > start ? (double)(end - start) / 1e9 : 0;
        return 0;
}

void bench_summary_fini(struct bench_summary *s)
{
        free(s->sec);
        s->sec = NULL;
        s->n_sec = 0;
}

static double ratio(uint64_t a, uint64_t b)
{
        return b ? (double)a / (double)b : 0;
}

static double us(const struct hist *h, double q)
{
        return (double)hist_quantile(h, q) / 1e3;
}

static double max_us(const struct hist *h)
{
        return (double)hist_max(h) / 1e3;
}

/* The figures every format prints. */
struct figures {
        double ops_s, mbs, wamp, io_wamp, samp;
        double p50, p90, p99, p999, max;
};

static void figures_of(const struct bench_engine *e, const struct bench_summary *s,
                       const struct hist *lat, uint64_t ops, struct figures *f)
{
        const struct bench_opts *o = e->o;
        uint64_t kv = o->k.key_size + o->k.value_size;
        uint64_t per_op = s->w == BENCH_SEEKRANDOM || s->w == BENCH_YCSB_E ? 0 : kv;
        uint64_t bytes = per_op * ops + kv * (lat == &s->lat ? s->entries : 0);
        uint64_t disk = s->disk_bytes ? s->disk_bytes : s->io_bytes;

        f->ops_s = s->secs > 0 ? (double)ops / s->secs : 0;
        f->mbs = s->secs > 0 ? (double)bytes / s->secs / 1048576.0 : 0;
        f->wamp = ratio(disk, s->user_bytes);
        f->io_wamp = ratio(s->io_bytes, s->user_bytes);
        f->samp = ratio(s->space_bytes, s->live_bytes);
        f->p50 = us(lat, 0.50);
        f->p90 = us(lat, 0.90);
        f->p99 = us(lat, 0.99);
        f->p999 = us(lat, 0.999);
        f->max = max_us(lat);
}

/* ---- table ---- */

/* The compaction readahead as the header line names it, written into buf. */
static const char *readahead_name(const struct bench_opts *o, char buf[16])
{
        if (o->compaction_readahead == ENG_COMPACT_READ_CACHED)
                return "cached";
        snprintf(buf, 16, "%uKiB", (o->compaction_readahead ? o->compaction_readahead
                                                            : ENG_SST_SEQ_DEFAULT_CHUNK) >> 10);
        return buf;
}

/* The compaction rate limit as the header line names it, written into buf. */
static const char *crate_name(const struct bench_opts *o, char buf[24])
{
        if (o->compaction_rate == UINT64_MAX)
                return "off";
        snprintf(buf, 24, "%" PRIu64 "MiB/s",
                 (o->compaction_rate ? o->compaction_rate : ENG_SHARD_DEFAULT_COMPACTION_RATE) >> 20);
        return buf;
}

void bench_report_header(FILE *f, enum bench_format fmt, const struct bench_engine *e)
{
        char ra[16], cr[24];
        const struct bench_opts *o = e->o;

        if (fmt == BENCH_FORMAT_CSV) {
                fprintf(f, "engine,workload,class,ops,seconds,ops_per_sec,mb_per_sec,p50_us,p90_us,"
                           "p99_us,p999_us,max_us,found,entries,user_bytes,disk_bytes,io_write_bytes,"
                           "wamp,io_wamp,live_bytes,space_bytes,space_amp,cpu_secs,bg_ops,stalls,"
                           "flushes,sst_reads,compaction_secs\n");
                return;
        }
        if (fmt != BENCH_FORMAT_TABLE)
                return;
        fprintf(f, "# scree-bench: engine=%s num=%" PRIu64 " reads=%" PRIu64 " key=%u value=%u "
                   "workers=%u sync=%s inflight=%u table=%s budget=%zuMiB cache=%zuMiB "
                   "compaction=%s readahead=%s crate=%s prefault=%s dist=%s rate=%" PRIu64 " dir=%s\n",
                e->name, o->k.num, o->reads, o->k.key_size, o->k.value_size, o->k.workers,
                o->sync == ENG_WAL_SYNC_BATCH ? "batch" : "periodic", o->inflight,
                o->k.table == ENG_TABLE_ORDERED ? "ordered" : "hashed", o->memtable_budget >> 20,
                o->cache_bytes >> 20, o->compaction ? "on" : "off", readahead_name(o, ra),
                crate_name(o, cr), o->prefault ? "on" : "off",
                o->k.dist == KEYDIST_INVALID ? "default" : keydist_name(o->k.dist), o->rate, o->dir);
        fprintf(f, "# keys per worker:");
        for (unsigned i = 0; i < e->n; i++)
                fprintf(f, " %" PRIu64, bench_gen_keys(e->gen[i]));
        fprintf(f, "\n# %-16s %9s %8s %10s %7s %8s %8s %8s %8s %9s %6s %6s %7s\n", "workload", "ops",
                "secs", "ops/s", "MB/s", "p50us", "p90us", "p99us", "p999us", "maxus", "wamp", "samp",
                "cpu_s");
}

static void table_row(FILE *f, const char *name, uint64_t ops, const struct bench_summary *s,
                      const struct figures *g)
{
        fprintf(f, "%-18s %9" PRIu64 " %8.3f %10.0f %7.1f %8.1f %8.1f %8.1f %8.1f %9.1f", name, ops,
                s->secs, g->ops_s, g->mbs, g->p50, g->p90, g->p99, g->p999, g->max);
}

static void report_table(FILE *f, const struct bench_engine *e, const struct bench_summary *s)
{
        const struct ycsb_mix *mix = bench_workload_mix(s->w);
        struct figures g;

        figures_of(e, s, &s->lat, s->ops, &g);
        table_row(f, bench_workload_name(s->w), s->ops, s, &g);
        fprintf(f, " %6.2f %6.2f %7.2f", g.wamp, g.samp, s->cpu_secs);
        if (s->user_bytes)
                fprintf(f, "  io_wamp %.2f", g.io_wamp);
        if (!bench_workload_writes(s->w))
                fprintf(f, "  found %" PRIu64 "%s", s->found, s->w == BENCH_SEEKRANDOM ? " (seeks)" : "");
        if (s->bg_ops)
                fprintf(f, "  writes %" PRIu64, s->bg_ops);
        if (s->compaction_ns && s->secs > 0)
                fprintf(f, "  compacting %.0f%%",
                        100.0 * (double)s->compaction_ns / 1e9 / (s->secs * e->n));
        fprintf(f, "\n");
        for (unsigned c = 0; mix && c < BENCH_OPC_MAX; c++) {
                char name[32];

                if (!s->by_cls[c].count)
                        continue;
                snprintf(name, sizeof(name), "  .%s", bench_opc_name((enum bench_opc)c));
                figures_of(e, s, &s->by_cls[c], s->by_cls[c].count, &g);
                table_row(f, name, s->by_cls[c].count, s, &g);
                fprintf(f, "\n");
        }
}

/* ---- json and csv ---- */

static void json_class(FILE *f, const struct bench_engine *e, const struct bench_summary *s)
{
        const char *sep = "";

        fprintf(f, ",\"classes\":{");
        for (unsigned c = 0; c < BENCH_OPC_MAX; c++) {
                struct figures g;

                if (!s->by_cls[c].count)
                        continue;
                figures_of(e, s, &s->by_cls[c], s->by_cls[c].count, &g);
                fprintf(f, "%s\"%s\":{\"ops\":%" PRIu64 ",\"p50_us\":%.2f,\"p90_us\":%.2f,"
                           "\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f}",
                        sep, bench_opc_name((enum bench_opc)c), s->by_cls[c].count, g.p50, g.p90,
                        g.p99, g.p999, g.max);
                sep = ",";
        }
        fprintf(f, "}");
}

static void report_json(FILE *f, const struct bench_engine *e, const struct bench_summary *s)
{
        struct figures g;

        figures_of(e, s, &s->lat, s->ops, &g);
        fprintf(f, "{\"name\":\"%s\",\"engine\":\"%s\",\"ops\":%" PRIu64 ",\"seconds\":%.3f,"
                   "\"ops_per_sec\":%.0f,\"mb_per_sec\":%.1f,\"p50_us\":%.2f,\"p90_us\":%.2f,"
                   "\"p99_us\":%.2f,\"p999_us\":%.2f,\"max_us\":%.2f,\"found\":%" PRIu64
                   ",\"entries\":%" PRIu64 ",\"user_bytes\":%" PRIu64 ",\"disk_bytes\":%" PRIu64
                   ",\"io_write_bytes\":%" PRIu64 ",\"wamp\":%.3f,\"io_wamp\":%.3f,"
                   "\"live_bytes\":%" PRIu64 ",\"space_bytes\":%" PRIu64 ",\"space_amp\":%.3f,"
                   "\"cpu_secs\":%.3f,\"bg_ops\":%" PRIu64 ",\"stalls\":%" PRIu64
                   ",\"flushes\":%" PRIu64 ",\"sst_reads\":%" PRIu64 ",\"compaction_secs\":%.3f",
                bench_workload_name(s->w), e->name, s->ops, s->secs, g.ops_s, g.mbs, g.p50, g.p90,
                g.p99, g.p999, g.max, s->found, s->entries, s->user_bytes,
                s->disk_bytes ? s->disk_bytes : s->io_bytes, s->io_bytes, g.wamp, g.io_wamp,
                s->live_bytes, s->space_bytes, g.samp, s->cpu_secs, s->bg_ops, s->stalls, s->flushes,
                s->sst_reads, (double)s->compaction_ns / 1e9);
        if (bench_workload_mix(s->w))
                json_class(f, e, s);
        fprintf(f, "}\n");
}

static void csv_row(FILE *f, const struct bench_engine *e, const struct bench_summary *s,
                    const char *cls, const struct hist *lat, uint64_t ops)
{
        struct figures g;

        figures_of(e, s, lat, ops, &g);
        fprintf(f, "%s,%s,%s,%" PRIu64 ",%.3f,%.0f,%.1f,%.2f,%.2f,%.2f,%.2f,%.2f,%" PRIu64 ",%" PRIu64
                   ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,%" PRIu64 ",%" PRIu64 ",%.3f,%.3f,"
                   "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n",
                e->name, bench_workload_name(s->w), cls, ops, s->secs, g.ops_s, g.mbs, g.p50, g.p90,
                g.p99, g.p999, g.max, s->found, s->entries, s->user_bytes,
                s->disk_bytes ? s->disk_bytes : s->io_bytes, s->io_bytes, g.wamp, g.io_wamp,
                s->live_bytes, s->space_bytes, g.samp, s->cpu_secs, s->bg_ops, s->stalls, s->flushes,
                s->sst_reads, (double)s->compaction_ns / 1e9);
}

static void report_csv(FILE *f, const struct bench_engine *e, const struct bench_summary *s)
{
        csv_row(f, e, s, "all", &s->lat, s->ops);
        for (unsigned c = 0; bench_workload_mix(s->w) && c < BENCH_OPC_MAX; c++)
                if (s->by_cls[c].count)
                        csv_row(f, e, s, bench_opc_name((enum bench_opc)c), &s->by_cls[c],
                                s->by_cls[c].count);
}

void bench_report(FILE *f, enum bench_format fmt, const struct bench_engine *e,
                  const struct bench_summary *s)
{
        if (fmt == BENCH_FORMAT_JSON)
                report_json(f, e, s);
        else if (fmt == BENCH_FORMAT_CSV)
                report_csv(f, e, s);
        else
                report_table(f, e, s);
        fflush(f);
}

void bench_timeseries_header(FILE *f)
{
        fprintf(f, "workload,second,ops,ops_per_sec,p50_us,p99_us\n");
}

void bench_timeseries_write(FILE *f, const struct bench_summary *s)
{
        for (size_t i = 0; i < s->n_sec; i++) {
                const struct hist *h = &s->sec[i];
                /* the last second may be a part of one */
                double len = (double)i + 1.0 > s->secs && s->secs > (double)i ? s->secs - (double)i : 1.0;

                fprintf(f, "%s,%zu,%" PRIu64 ",%.0f,%.2f,%.2f\n", bench_workload_name(s->w), i, h->count,
                        len > 0 ? (double)h->count / len : 0, us(h, 0.50), us(h, 0.99));
        }
        fflush(f);
}

void bench_progress_show(FILE *f, enum bench_workload w, uint64_t ops, uint64_t target,
                         double ops_per_sec, double elapsed, double limit)
{
        double left = limit - elapsed;

        if (target != UINT64_MAX && ops_per_sec > 0) {
                double by_count = (double)(target - (ops < target ? ops : target)) / ops_per_sec;

                left = by_count < left ? by_count : left;
        }
        fprintf(f, "\r%-16s %12" PRIu64 " ops %10.0f ops/s %7.0f s elapsed %7.0f s left   ",
                bench_workload_name(w), ops, ops_per_sec, elapsed, left > 0 ? left : 0);
        fflush(f);
}

void bench_progress_clear(FILE *f)
{
        fprintf(f, "\r%90s\r", "");
        fflush(f);
}
