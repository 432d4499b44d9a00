/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LATENCY LATEST / HISTORY / RESET / DOCTOR / HISTOGRAM / HELP, with
 * Redis's reply shapes, over the per-shard latency events (latency.h) and
 * command statistics (metrics.h). One child per shard copies (or, for
 * RESET, clears) that shard's events and command counters into memory the
 * origin allocated; the origin merges the copies: the same second keeps
 * its highest sample, HISTOGRAM adds the shards' buckets.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "net/cmd.h"
#include "net/info_int.h"
#include "net/latency.h"
#include "net/metrics.h"
#include "net/server.h"

/* A shard's copy (req->info of a child). */
struct shard_latency {
        struct net_latency lat;
        uint32_t had;                   /* RESET: the events that had a series, 1u << event */
        size_t n_slots;
        struct net_cmd_stat cmd[];      /* HISTOGRAM only */
};

static size_t shard_latency_bytes(void)
{
        return sizeof(struct shard_latency) + net_cmd_stat_slots() * sizeof(struct net_cmd_stat);
}

/* RESET's events: every one with no names, else those named. */
static uint32_t reset_mask(const struct net_req *req)
{
        uint32_t m = 0;

        if (req->argc == 2)
                return (1u << NET_LATENCY_EVENT_MAX) - 1;
        for (size_t i = 2; i < req->argc; i++) {
                enum net_latency_event ev = net_latency_event_find(req->argv[i].ptr,
                                                                   req->argv[i].len);

                if (ev != NET_LATENCY_EVENT_INVALID)
                        m |= 1u << ev;
        }
        return m;
}

static int shard_latency(struct net_req *req)
{
        struct shard_latency *sl = req->info;
        struct net_shard *sh = req->exec;

        if (net_arg_is(&req->argv[1], "reset")) {
                uint32_t m = reset_mask(req);

                for (int ev = 0; ev < NET_LATENCY_EVENT_MAX; ev++)
                        if ((m & (1u << ev)) && net_latency_reset(&sh->latency, ev))
                                sl->had |= 1u << ev;
        } else if (net_arg_is(&req->argv[1], "histogram")) {
                sl->n_slots = net_cmd_stat_slots();
                if (sh->metrics && sh->metrics->n_slots == sl->n_slots)
                        memcpy(sl->cmd, sh->metrics->cmd, sl->n_slots * sizeof(sl->cmd[0]));
        } else {
                sl->lat = sh->latency;
        }
        net_resp_add_simple(req->out, "OK", 2);
        return NET_CMD_DONE;
}

static const struct net_cmd_def def_shard_latency = { "latency", -2, NET_CMD_LOADING |
                                                      NET_CMD_NOENGINE, 0, 0, 0, shard_latency,
                                                      NULL };

/* Every shard's events merged into one set (heap; NULL on ENOMEM). */
static struct net_latency *merged(const struct net_req *req)
{
        struct net_latency *all = calloc(1, sizeof(*all));

        for (uint32_t i = 0; all && i < req->n_children; i++)
                net_latency_merge(all, &((const struct shard_latency *)req->children[i]->info)->lat);
        return all;
}

static void latest_gather(struct net_req *req)
{
        struct net_latency *all = merged(req);
        unsigned n = 0;

        if (!all) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        for (int ev = 0; ev < NET_LATENCY_EVENT_MAX; ev++)
                n += all->ev[ev].n > 0;
        net_resp_add_array(req->out, n);
        for (int ev = 0; ev < NET_LATENCY_EVENT_MAX; ev++) {
                const struct net_latency_sample *s = net_latency_latest(&all->ev[ev]);
                const char *name = net_latency_event_name(ev);

                if (!s)
                        continue;
                net_resp_add_array(req->out, 4);
                net_resp_add_bulk(req->out, name, strlen(name));
                net_resp_add_int(req->out, (int64_t)s->time_s);
                net_resp_add_int(req->out, (int64_t)s->ms);
                net_resp_add_int(req->out, (int64_t)all->ev[ev].max_ms);
        }
        free(all);
}

static void history_gather(struct net_req *req)
{
        enum net_latency_event ev = net_latency_event_find(req->argv[2].ptr, req->argv[2].len);
        struct net_latency *all = merged(req);
        struct net_latency_sample s[NET_LATENCY_SAMPLES];
        uint32_t n = 0;

        if (!all) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        if (ev != NET_LATENCY_EVENT_INVALID)
                n = net_latency_history(&all->ev[ev], s);
        net_resp_add_array(req->out, n);
        for (uint32_t i = 0; i < n; i++) {
                net_resp_add_array(req->out, 2);
                net_resp_add_int(req->out, (int64_t)s[i].time_s);
                net_resp_add_int(req->out, (int64_t)s[i].ms);
        }
        free(all);
}

static void reset_gather(struct net_req *req)
{
        uint32_t had = 0;
        int64_t n = 0;

        for (uint32_t i = 0; i < req->n_children; i++)
                had |= ((const struct shard_latency *)req->children[i]->info)->had;
        for (int ev = 0; ev < NET_LATENCY_EVENT_MAX; ev++)
                n += (had >> ev) & 1;
        net_resp_add_int(req->out, n);
}

/* DOCTOR: a plain report of each event and what it usually means. */
static void doctor_event(FILE *f, enum net_latency_event ev, const struct net_latency_series *se)
{
        struct net_latency_sample s[NET_LATENCY_SAMPLES];
        uint32_t n = net_latency_history(se, s);
        uint64_t sum = 0;

        for (uint32_t i = 0; i < n; i++)
                sum += s[i].ms;
        fprintf(f, "%s: %u latency spike(s) in %u second(s) sampled (average %llu ms, worst "
                   "%llu ms since the last reset).\n", net_latency_event_name(ev), n, n,
                (unsigned long long)(sum / n), (unsigned long long)se->max_ms);
        if (ev == NET_LATENCY_COMMAND)
                fprintf(f, "  Commands over slowlog-log-slower-than: SLOWLOG GET names them. "
                           "A write waits for its commit-log sync (commitlog-sync batch), a "
                           "read of a key not in memory for the disk, DBSIZE, KEYS and INFO's "
                           "keyspace walk every key.\n");
        else
                fprintf(f, "  A shard's loop was held by one task, timer or completion: the "
                           "server log's 'stall:' lines name it. Every connection of that "
                           "shard waited meanwhile.\n");
}

static void doctor_gather(struct net_req *req)
{
        struct net_latency *all = merged(req);
        char *text = NULL;
        size_t len = 0;
        FILE *f = all ? open_memstream(&text, &len) : NULL;
        bool any = false;

        if (!f) {
                free(all);
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        for (int ev = 0; ev < NET_LATENCY_EVENT_MAX; ev++) {
                if (!all->ev[ev].n)
                        continue;
                any = true;
                doctor_event(f, ev, &all->ev[ev]);
        }
        if (!any)
                fprintf(f, "No latency spike was recorded (events: commands over "
                           "slowlog-log-slower-than, loop stalls) since the start or the last "
                           "LATENCY RESET.\n");
        fclose(f);
        net_resp_add_verbatim(req->out, "txt", text, len);
        free(text);
        free(all);
}

/* HISTOGRAM's commands: every one with none named, else those named
 * ("set", "client|id") and the subcommands of a command named ("client"). */
static bool slot_wanted(const struct net_req *req, const char *name)
{
        size_t plen = strcspn(name, "|");
        char parent[64];

        if (req->argc == 2)
                return true;
        snprintf(parent, sizeof(parent), "%.*s", (int)plen, name);
        for (size_t i = 2; i < req->argc; i++)
                if (net_arg_is(&req->argv[i], name) ||
                    (name[plen] == '|' && net_arg_is(&req->argv[i], parent)))
                        return true;
        return false;
}

/* Bucket b's count, the calls above the last bound in the last: Redis
 * clamps at its histogram's top too. */
static uint64_t bucket_count(const struct net_cmd_stat *st, unsigned b)
{
        return st->buckets[b] + (b == NET_METRICS_BUCKETS - 1 ? st->buckets[NET_METRICS_BUCKETS] : 0);
}

/* Redis's shape: calls, then the cumulative count at each bucket's upper
 * bound (us) where it grows. */
static void histogram_entry(struct net_resp_out *o, const struct net_cmd_stat *st)
{
        uint64_t cum = 0;
        unsigned n = 0;

        for (unsigned b = 0; b < NET_METRICS_BUCKETS; b++)
                n += bucket_count(st, b) > 0;
        net_resp_add_map(o, 2);
        net_resp_add_bulk(o, "calls", 5);
        net_resp_add_int(o, (int64_t)st->calls);
        net_resp_add_bulk(o, "histogram_usec", 14);
        net_resp_add_map(o, n);
        for (unsigned b = 0; b < NET_METRICS_BUCKETS; b++) {
                if (!bucket_count(st, b))
                        continue;
                cum += bucket_count(st, b);
                net_resp_add_int(o, (int64_t)(net_metrics_bucket_ns(b) / NS_PER_US));
                net_resp_add_int(o, (int64_t)cum);
        }
}

static void histogram_gather(struct net_req *req)
{
        size_t n_slots = net_cmd_stat_slots(), n = 0;
        struct net_cmd_stat *sum = calloc(n_slots, sizeof(*sum));
        char name[64];

        if (!sum) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        for (uint32_t i = 0; i < req->n_children; i++) {
                const struct shard_latency *sl = req->children[i]->info;

                for (size_t k = 0; k < sl->n_slots; k++)
                        net_cmd_stat_add(&sum[k], &sl->cmd[k]);
        }
        for (size_t k = 0; k < n_slots; k++)
                if (!(sum[k].calls && slot_wanted(req, net_cmd_stat_name(k, name, sizeof(name)))))
                        sum[k].calls = 0;       /* left out */
                else
                        n++;
        net_resp_add_map(req->out, n);
        for (size_t k = 0; k < n_slots; k++) {
                if (!sum[k].calls)
                        continue;
                net_cmd_stat_name(k, name, sizeof(name));
                net_resp_add_bulk(req->out, name, strlen(name));
                histogram_entry(req->out, &sum[k]);
        }
        free(sum);
}

static int latency_help(struct net_req *req)
{
        static const char *const lines[] = {
                "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "LATEST",
                "    Per event: its name, the time and milliseconds of its newest sample, and",
                "    its highest ever. Events: command (a command over slowlog-log-slower-than),",
                "    loop-stall (a shard's loop held over the reactor's stall threshold).",
                "HISTORY <event>",
                "    The event's samples (time, milliseconds), at most one a second, 160 kept.",
                "RESET [<event> ...]",
                "    Drops the samples of the events named (default: all); replies how many.",
                "DOCTOR",
                "    A report of the events and what they usually mean.",
                "HISTOGRAM [<command> ...]",
                "    Per command: its calls and their cumulative latency distribution (usec).",
                "HELP",
                "    Print this help.",
        };
        net_reply_lines(req, lines, sizeof(lines) / sizeof(lines[0]));
        return NET_CMD_DONE;
}

static int fan_out(struct net_req *req, void (*gather)(struct net_req *))
{
        return net_req_each_shard(req, &def_shard_latency, shard_latency_bytes(), gather);
}

int net_cmd_latency(struct net_req *req)
{
        const struct net_arg *sub = &req->argv[1];
        size_t argc = req->argc;

        if (net_arg_is(sub, "latest") && argc == 2)
                return fan_out(req, latest_gather);
        if (net_arg_is(sub, "history") && argc == 3)
                return fan_out(req, history_gather);
        if (net_arg_is(sub, "reset"))
                return fan_out(req, reset_gather);
        if (net_arg_is(sub, "doctor") && argc == 2)
                return fan_out(req, doctor_gather);
        if (net_arg_is(sub, "histogram"))
                return fan_out(req, histogram_gather);
        if (net_arg_is(sub, "help") && argc == 2)
                return latency_help(req);
        if (net_arg_is(sub, "latest") || net_arg_is(sub, "history") || net_arg_is(sub, "doctor") ||
            net_arg_is(sub, "help")) {
                char name[16];
                size_t n = sub->len < sizeof(name) ? sub->len : sizeof(name) - 1;

                for (size_t i = 0; i <= n; i++)         /* Redis's name: lower case */
                        name[i] = i < n ? (char)tolower((unsigned char)sub->ptr[i]) : 0;
                net_resp_add_errorf(req->out, "ERR wrong number of arguments for 'latency|%s' "
                                              "command", name);
        }
        else
                net_resp_add_errorf(req->out, "ERR unknown subcommand '%.*s'. Try LATENCY HELP.",
                                    (int)(sub->len > 64 ? 64 : sub->len), sub->ptr);
        return NET_CMD_DONE;
}
