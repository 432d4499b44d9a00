/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scree-stress's results; see scree_stress_report.h. Latencies are kept in
 * ns and printed in ms; a quantile is the low edge of its histogram bucket
 * (within ~1.5%), the maximum is exact.
 */
#include "perf/scree_stress_report.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>


static const char *const ratio_names[2] = { "SET", "GET" };

const char *stress_op_name(const struct stress_cfg *cfg, int op)
{
        if (cfg->mix)
                return ycsb_op_name((enum ycsb_op)op);
        if (cfg->cmd_argc)
                return op == STRESS_OP_CMD ? cfg->cmd_argv[0] : "?";
        return op >= 0 && op < 2 ? ratio_names[op] : "?";
}

static void merge_op(struct stress_op_stats *dst, const struct stress_op_stats *src)
{
        dst->ops += src->ops;
        dst->errors += src->errors;
        dst->misses += src->misses;
        dst->max_ns = src->max_ns > dst->max_ns ? src->max_ns : dst->max_ns;
        hist_merge(&dst->lat, &src->lat);
}

void stress_summary_merge(struct stress_summary *s, const struct stress_cfg *cfg,
                          const struct stress_worker *w, unsigned n)
{
        for (int op = 0; op < STRESS_OPS_MAX; op++)
                s->shown[op] = cfg->mix ? cfg->mix->pct[op] > 0 :
                               cfg->cmd_argc ? op == STRESS_OP_CMD :
                               op == STRESS_OP_SET ? cfg->set_weight > 0 :
                               op == STRESS_OP_GET && cfg->get_weight > 0;
        for (unsigned i = 0; i < n; i++) {
                for (int op = 0; op < STRESS_OPS_MAX; op++) {
                        merge_op(&s->op[op], &w[i].op[op]);
                        merge_op(&s->all, &w[i].op[op]);
                }
                s->requests += w[i].requests;
                s->late += w[i].late;
        }
}

static double ms(uint64_t ns)
{
        return (double)ns / 1e6;
}

static double per_sec(uint64_t n, double secs)
{
        return secs > 0 ? (double)n / secs : 0;
}

struct row {
        double ops_s, p50, p90, p99, p999, max;
};

static struct row row_of(const struct stress_op_stats *o, double secs)
{
        return (struct row){
                .ops_s = per_sec(o->ops, secs),
                .p50 = ms(hist_quantile(&o->lat, 0.50)),
                .p90 = ms(hist_quantile(&o->lat, 0.90)),
                .p99 = ms(hist_quantile(&o->lat, 0.99)),
                .p999 = ms(hist_quantile(&o->lat, 0.999)),
                .max = ms(o->max_ns),
        };
}

static void text_row(FILE *f, const char *name, const struct stress_op_stats *o, double secs)
{
        struct row r = row_of(o, secs);

        fprintf(f, "%-7s %10" PRIu64 " %11.0f %8.3f %8.3f %8.3f %9.3f %8.3f %8" PRIu64 " %8" PRIu64 "\n",
                name, o->ops, r.ops_s, r.p50, r.p90, r.p99, r.p999, r.max, o->errors, o->misses);
}

/* A CSV field: quoted when it holds a comma, a quote or a line break (a
 * command's name is the user's). */
static void csv_field(FILE *f, const char *s)
{
        if (!strpbrk(s, ",\"\r\n")) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        for (; *s; s++) {
                if (*s == '"')
                        fputc('"', f);
                fputc(*s, f);
        }
        fputc('"', f);
}

static void csv_row(FILE *f, const char *name, const struct stress_op_stats *o, double secs)
{
        struct row r = row_of(o, secs);

        csv_field(f, name);
        fprintf(f, ",%" PRIu64 ",%.1f,%.3f,%.3f,%.3f,%.3f,%.3f,%" PRIu64 ",%" PRIu64 "\n", o->ops,
                r.ops_s, r.p50, r.p90, r.p99, r.p999, r.max, o->errors, o->misses);
}

static void json_op(FILE *f, const struct stress_op_stats *o, double secs)
{
        struct row r = row_of(o, secs);

        fprintf(f, "{\"ops\":%" PRIu64 ",\"ops_per_sec\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
                "\"p99_ms\":%.3f,\"p999_ms\":%.3f,\"max_ms\":%.3f,\"errors\":%" PRIu64 ",\"misses\":%" PRIu64 "}",
                o->ops, r.ops_s, r.p50, r.p90, r.p99, r.p999, r.max, o->errors, o->misses);
}

/* A string for JSON: the caller's strings are the key prefix, error texts
 * and a command's words. */
static void json_str(FILE *f, const char *s)
{
        fputc('"', f);
        for (; s && *s; s++) {
                unsigned char ch = (unsigned char)*s;

                if (ch == '"' || ch == '\\')
                        fprintf(f, "\\%c", ch);
                else if (ch < 0x20)
                        fprintf(f, "\\u%04x", ch);
                else
                        fputc(ch, f);
        }
        fputc('"', f);
}

/* "mode" and "workload": "ratio" and "1:10", "ycsb" and "A", or "command"
 * and its first word, with "command" holding every word. */
static void json_workload(FILE *f, const struct stress_cfg *cfg)
{
        if (cfg->mix) {
                fprintf(f, "\"mode\":\"ycsb\",\"workload\":\"%c\"", cfg->mix->name);
                return;
        }
        if (!cfg->cmd_argc) {
                fprintf(f, "\"mode\":\"ratio\",\"workload\":\"%u:%u\"", cfg->set_weight, cfg->get_weight);
                return;
        }
        fputs("\"mode\":\"command\",\"workload\":", f);
        json_str(f, cfg->cmd_argv[0]);
        fputs(",\"command\":[", f);
        for (unsigned i = 0; i < cfg->cmd_argc; i++) {
                fputs(i ? "," : "", f);
                json_str(f, cfg->cmd_argv[i]);
        }
        fputc(']', f);
}

static void print_json(FILE *f, const struct stress_cfg *cfg, const struct stress_summary *s)
{
        fprintf(f, "{\"target\":");
        json_str(f, cfg->target);
        fprintf(f, ",\"threads\":%u,\"connections\":%u,\"pipeline\":%u,", cfg->threads, cfg->conns,
                cfg->pipeline);
        json_workload(f, cfg);
        fprintf(f, ",\"distribution\":\"%s\",\"keyspace\":%" PRIu64 ",\"key_prefix\":",
                keydist_name(cfg->dist.kind), cfg->keyspace);
        json_str(f, cfg->key_prefix);
        fprintf(f, ",\"key_offset\":%" PRIu64 ",\"key_scatter\":%s", cfg->key_offset,
                cfg->key_scatter ? "true" : "false");
        fprintf(f, ",\"value_size\":%u,\"open_loop\":%s,\"target_rate\":%.1f,\"seconds\":%.3f,"
                "\"requests\":%" PRIu64 ",\"late\":%" PRIu64 ",\"interrupted\":%s,\"first_error\":",
                cfg->value_size, cfg->rate > 0 ? "true" : "false", cfg->rate, s->secs, s->requests, s->late,
                s->interrupted ? "true" : "false");
        if (s->first_error)
                json_str(f, s->first_error);
        else
                fputs("null", f);
        fputs(",\"load\":", f);
        if (s->loaded)
                fprintf(f, "{\"keys\":%" PRIu64 ",\"seconds\":%.3f,\"ops_per_sec\":%.1f,\"errors\":%" PRIu64 "}",
                        s->load_keys, s->load_secs, per_sec(s->load_keys, s->load_secs), s->load_errors);
        else
                fputs("null", f);
        fputs(",\"by_op\":{", f);
        for (int op = 0, first = 1; op < STRESS_OPS_MAX; op++) {
                if (!s->shown[op])
                        continue;
                fputs(first ? "" : ",", f);
                json_str(f, stress_op_name(cfg, op));
                fputc(':', f);
                json_op(f, &s->op[op], s->secs);
                first = 0;
        }
        fputs("},\"total\":", f);
        json_op(f, &s->all, s->secs);
        fputs("}\n", f);
}

static void print_text(FILE *f, const struct stress_cfg *cfg, const struct stress_summary *s)
{
        struct row all = row_of(&s->all, s->secs);

        if (s->loaded)
                fprintf(f, "# load: %" PRIu64 " keys in %.3f s (%.0f SET/s), %" PRIu64 " errors\n", s->load_keys,
                        s->load_secs, per_sec(s->load_keys, s->load_secs), s->load_errors);
        fprintf(f, "%-7s %10s %11s %8s %8s %8s %9s %8s %8s %8s\n", "op", "ops", "ops/s", "p50 ms", "p90 ms",
                "p99 ms", "p99.9 ms", "max ms", "errors", "misses");
        for (int op = 0; op < STRESS_OPS_MAX; op++)
                if (s->shown[op])
                        text_row(f, stress_op_name(cfg, op), &s->op[op], s->secs);
        text_row(f, "all", &s->all, s->secs);
        fprintf(f, "summary: %" PRIu64 " ops (%" PRIu64 " requests) in %.3f s: %.0f ops/s, p50 %.3f ms, "
                "p99 %.3f ms, p99.9 %.3f ms, %" PRIu64 " errors", s->all.ops, s->requests, s->secs, all.ops_s,
                all.p50, all.p99, all.p999, s->all.errors);
        if (cfg->rate > 0)
                fprintf(f, ", target %.0f ops/s, %" PRIu64 " late (due, never sent)", cfg->rate, s->late);
        fprintf(f, "%s\n", s->interrupted ? " (interrupted)" : "");
}

void stress_report_print(FILE *f, enum stress_format fmt, const struct stress_cfg *cfg,
                         const struct stress_summary *s)
{
        switch (fmt) {
        case STRESS_FORMAT_JSON:
                print_json(f, cfg, s);
                break;
        case STRESS_FORMAT_CSV:
                fprintf(f, "op,ops,ops_per_sec,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,errors,misses\n");
                for (int op = 0; op < STRESS_OPS_MAX; op++)
                        if (s->shown[op])
                                csv_row(f, stress_op_name(cfg, op), &s->op[op], s->secs);
                csv_row(f, "all", &s->all, s->secs);
                break;
        case STRESS_FORMAT_TEXT:
        default:
                print_text(f, cfg, s);
                break;
        }
        fflush(f);
}

int stress_report_timeseries(const char *path, const struct stress_worker *w, unsigned n)
{
        struct stress_second *sec = calloc(1, sizeof(*sec));
        size_t secs = 0;
        FILE *f = fopen(path, "w");
        int r = 0;

        if (!f || !sec) {
                r = f ? -ENOMEM : -errno;
                goto out;
        }
        for (unsigned i = 0; i < n; i++)
                secs = w[i].n_secs > secs ? w[i].n_secs : secs;
        fprintf(f, "second,ops,errors,p50_ms,p99_ms\n");
        for (size_t t = 0; t < secs; t++) {
                memset(sec, 0, sizeof(*sec));
                for (unsigned i = 0; i < n; i++) {
                        if (t >= w[i].n_secs)
                                continue;
                        sec->ops += w[i].secs[t].ops;
                        sec->errors += w[i].secs[t].errors;
                        hist_merge(&sec->lat, &w[i].secs[t].lat);
                }
                fprintf(f, "%zu,%" PRIu64 ",%" PRIu64 ",%.3f,%.3f\n", t, sec->ops, sec->errors,
                        ms(hist_quantile(&sec->lat, 0.50)), ms(hist_quantile(&sec->lat, 0.99)));
        }
        if (fflush(f) != 0 || ferror(f))
                r = -errno;
out:
        if (f && fclose(f) != 0 && r == 0)
                r = -errno;
        free(sec);
        return r;
}
