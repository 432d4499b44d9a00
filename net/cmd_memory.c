/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP and OBJECT
 * ENCODING / FREQ / IDLETIME / REFCOUNT / HELP, answered where scree can
 * answer honestly (docs/server.md "MEMORY and OBJECT").
 *
 * The keyed forms run on the key's shard (the table routes them by
 * argv[2]) and read the key once. MEMORY USAGE is what the key takes in a
 * memtable: its bytes, its value's bytes and ENG_ENTRY_OVERHEAD_BYTES
 * (node and index); SAMPLES is checked and ignored (a string has no parts
 * to sample). OBJECT ENCODING applies Redis's rules to the value's bytes.
 * scree keeps no access time nor frequency per key, so FREQ and IDLETIME
 * answer an existing key with the error Redis gives when its eviction
 * policy does not track them. MEMORY STATS and DOCTOR read INFO's memory
 * figures (one child per shard, info_int.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree_errors.h>

#include "net/cmd.h"
#include "net/info_int.h"
#include "net/server.h"
#include "reactor/alloc.h"

#define EMBSTR_MAX 44   /* Redis keeps strings up to this long in one allocation */

static const char E_LFU[] = "ERR An LFU maxmemory policy is not selected, access frequency not "
                            "tracked. Please note that when switching between policies at "
                            "runtime LRU and LFU data will take some time to adjust.";
static const char E_IDLE[] = "ERR idle time not tracked: scree keeps no access time per key "
                             "(as Redis under an LFU maxmemory policy)";

/* Redis names the subcommand as its table does: lower case. REQUIRES:
 * sub is one of cmd's subcommands (so, short). */
static void bad_arity(struct net_req *req, const char *cmd)
{
        const struct net_arg *sub = &req->argv[1];
        char name[32];
        size_t n = sub->len < sizeof(name) - 1 ? sub->len : sizeof(name) - 1;

        for (size_t i = 0; i < n; i++)
                name[i] = (char)tolower((unsigned char)sub->ptr[i]);
        name[n] = 0;
        net_resp_add_errorf(req->out, "ERR wrong number of arguments for '%s|%s' command", cmd,
                            name);
}

static void unknown_sub(struct net_req *req, const char *cmd)
{
        const struct net_arg *sub = &req->argv[1];

        net_resp_add_errorf(req->out, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                            (int)(sub->len > 64 ? 64 : sub->len), sub->ptr, cmd);
}

/* ---- OBJECT ---- */

/* Whether Redis would keep s as an integer: a long long written the one
 * canonical way (no sign but '-', no leading zero, no "-0"). */
static bool is_canonical_ll(const uint8_t *s, size_t n)
{
        bool neg = n > 0 && s[0] == '-';
        uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
        size_t i = neg;

        if (n == 0 || n > 20 || i == n)
                return false;
        if (s[i] == '0')
                return n == 1;
        for (; i < n; i++) {
                if (s[i] < '0' || s[i] > '9' || v > (limit - (uint64_t)(s[i] - '0')) / 10)
                        return false;
                v = v * 10 + (uint64_t)(s[i] - '0');
        }
        return true;
}

static void object_then(struct net_req *req, int res)
{
        const struct net_arg *sub = &req->argv[1];
        const struct eng_get *g = &req->u.g;

        if (res == -SCREE_ENOTFOUND) {
                net_resp_add_null(req->out);
        } else if (res < 0) {
                net_reply_engine_err(req, res);
        } else if (net_arg_is(sub, "encoding")) {
                const char *enc = is_canonical_ll(g->value, g->value_len) ? "int" :
                                  g->value_len <= EMBSTR_MAX ? "embstr" : "raw";

                net_resp_add_bulk(req->out, enc, strlen(enc));
        } else if (net_arg_is(sub, "refcount")) {
                net_resp_add_int(req->out, 1);  /* nothing is shared */
        } else if (net_arg_is(sub, "freq")) {
                net_resp_add_error(req->out, E_LFU, sizeof(E_LFU) - 1);
        } else {
                net_resp_add_error(req->out, E_IDLE, sizeof(E_IDLE) - 1);
        }
}

int net_cmd_object(struct net_req *req)
{
        static const char *const lines[] = {
                "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "ENCODING <key>",
                "    How Redis would encode the key's value: int, embstr (up to 44 bytes) or raw.",
                "FREQ <key>",
                "    Not tracked by scree (no LFU policy): an error for an existing key.",
                "IDLETIME <key>",
                "    Not tracked by scree (no access time per key): an error for an existing key.",
                "REFCOUNT <key>",
                "    Always 1: scree shares no value.",
                "HELP",
                "    Print this help.",
        };
        const struct net_arg *sub = &req->argv[1];
        bool keyed = net_arg_is(sub, "encoding") || net_arg_is(sub, "freq") ||
                     net_arg_is(sub, "idletime") || net_arg_is(sub, "refcount");

        if (keyed && req->argc == 3)
                return net_req_get(req, req->argv[2].ptr, req->argv[2].len, object_then);
        if (net_arg_is(sub, "help") && req->argc == 2)
                net_reply_lines(req, lines, sizeof(lines) / sizeof(lines[0]));
        else if (keyed || net_arg_is(sub, "help"))
                bad_arity(req, "object");
        else
                unknown_sub(req, "OBJECT");
        return NET_CMD_DONE;
}

/* ---- MEMORY USAGE ---- */

static void usage_then(struct net_req *req, int res)
{
        if (res == -SCREE_ENOTFOUND)
                net_resp_add_null(req->out);
        else if (res < 0)
                net_reply_engine_err(req, res);
        else
                net_resp_add_int(req->out, (int64_t)(req->argv[2].len + req->u.g.value_len +
                                                     ENG_ENTRY_OVERHEAD_BYTES));
}

static int memory_usage(struct net_req *req)
{
        int64_t samples;

        for (size_t i = 3; i < req->argc; i += 2) {
                if (!net_arg_is(&req->argv[i], "samples") || i + 1 == req->argc) {
                        net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
                        return NET_CMD_DONE;
                }
                if (net_arg_i64(&req->argv[i + 1], &samples) < 0) {
                        net_resp_add_errorf(req->out, "ERR %s", NET_ERR_NOT_INT);
                        return NET_CMD_DONE;
                }
                if (samples < 0) {
                        net_resp_add_errorf(req->out, "ERR %s", NET_ERR_SYNTAX);
                        return NET_CMD_DONE;
                }
        }
        return net_req_get(req, req->argv[2].ptr, req->argv[2].len, usage_then);
}

/* ---- MEMORY STATS, DOCTOR ---- */

static void stat_int(struct net_resp_out *o, const char *name, uint64_t v)
{
        net_resp_add_bulk(o, name, strlen(name));
        net_resp_add_int(o, (int64_t)v);
}

static void stat_ratio(struct net_resp_out *o, const char *name, uint64_t a, uint64_t b)
{
        net_resp_add_bulk(o, name, strlen(name));
        net_resp_add_double(o, b ? (double)a / (double)b : 0.0);
}

/* Redis's MEMORY STATS fields that scree has, and its engine's blocks. */
static void stats_gather(struct net_req *req)
{
        struct net_resp_out *o = req->out;
        struct net_info_mem m;

        net_info_mem_get(req, &m);
        net_resp_add_map(o, 13);
        stat_int(o, "peak.allocated", m.peak);
        stat_int(o, "total.allocated", m.used);
        stat_int(o, "clients.normal", m.clients);
        stat_int(o, "engine.blocks", m.engine);
        stat_int(o, "allocator.allocated", m.alloc.allocated);
        stat_int(o, "allocator.active", m.alloc.active);
        stat_int(o, "allocator.resident", m.alloc.resident);
        stat_ratio(o, "allocator-fragmentation.ratio", m.alloc.active, m.alloc.allocated);
        stat_int(o, "allocator-fragmentation.bytes", m.alloc.active - m.alloc.allocated);
        stat_ratio(o, "allocator.rss-ratio", m.alloc.resident, m.alloc.active);
        stat_int(o, "rss.bytes", m.rss);
        stat_ratio(o, "fragmentation", m.rss, m.used);
        stat_int(o, "fragmentation.bytes", m.rss > m.used ? m.rss - m.used : 0);
}

static void doctor_gather(struct net_req *req)
{
        const struct scree_config *cfg = &req->exec->cfg;
        uint64_t clients_max = cfg_clients_limit_bytes(cfg, req->origin->srv->n_shards) *
                               req->origin->srv->n_shards;
        struct net_info_mem m;
        char *text = NULL, h[3][32];
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        bool any = false;

        if (!f) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return;
        }
        net_info_mem_get(req, &m);
        net_info_human(h[0], sizeof(h[0]), m.used);
        net_info_human(h[1], sizeof(h[1]), m.rss);
        net_info_human(h[2], sizeof(h[2]), m.peak);
        fprintf(f, "used_memory %s, RSS %s, peak %s.\n", h[0], h[1], h[2]);
        if (m.rss > (10u << 20) && m.used && m.rss * 10 > m.used * 14) {
                fprintf(f, "* High fragmentation: RSS is %.2f times used_memory. The allocator "
                           "keeps freed pages; MEMORY PURGE returns its dirty pages to the "
                           "kernel.\n", (double)m.rss / (double)m.used);
                any = true;
        }
        if (m.peak > (10u << 20) && m.peak > m.used * 2) {
                fprintf(f, "* The peak was more than twice what is used now.\n");
                any = true;
        }
        if (clients_max && m.clients * 2 > clients_max) {
                fprintf(f, "* Client buffers hold over half of maxmemory-clients: a slow "
                           "reader or big pipelines (CLIENT LIST omem, qbuf).\n");
                any = true;
        }
        if (!any)
                fprintf(f, "No memory problem found.\n");
        fclose(f);
        net_resp_add_verbatim(req->out, "txt", text, len);
        free(text);
}

static int memory_malloc_stats(struct net_req *req)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        if (!f) {
                net_resp_add_error(req->out, "ERR out of memory", 17);
                return NET_CMD_DONE;
        }
        rx_alloc_print(f);
        fclose(f);
        net_resp_add_verbatim(req->out, "txt", text, len);
        free(text);
        return NET_CMD_DONE;
}

int net_cmd_memory(struct net_req *req)
{
        static const char *const lines[] = {
                "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
                "USAGE <key> [SAMPLES <count>]",
                "    What the key takes in a memtable: key, value and 96 bytes of node and index.",
                "STATS",
                "    The server's memory figures (INFO memory's, as Redis names them).",
                "DOCTOR",
                "    A report of memory problems found.",
                "MALLOC-STATS",
                "    The allocator's own statistics report.",
                "PURGE",
                "    Return the allocator's unused dirty pages to the kernel.",
                "HELP",
                "    Print this help.",
        };
        const struct net_arg *sub = &req->argv[1];
        size_t argc = req->argc;

        if (net_arg_is(sub, "usage") && argc >= 3)
                return memory_usage(req);
        if (net_arg_is(sub, "stats") && argc == 2)
                return net_req_each_shard(req, &net_cmd_def_shard_info, net_info_shard_bytes(),
                                          stats_gather);
        if (net_arg_is(sub, "doctor") && argc == 2)
                return net_req_each_shard(req, &net_cmd_def_shard_info, net_info_shard_bytes(),
                                          doctor_gather);
        if (net_arg_is(sub, "malloc-stats") && argc == 2)
                return memory_malloc_stats(req);
        if (net_arg_is(sub, "purge") && argc == 2) {
                if (rx_alloc_purge() < 0)
                        net_resp_add_errorf(req->out, "ERR Error purging dirty pages");
                else
                        net_resp_add_simple(req->out, "OK", 2);
        } else if (net_arg_is(sub, "help") && argc == 2) {
                net_reply_lines(req, lines, sizeof(lines) / sizeof(lines[0]));
        } else if (net_arg_is(sub, "usage") || net_arg_is(sub, "stats") ||
                   net_arg_is(sub, "doctor") || net_arg_is(sub, "malloc-stats") ||
                   net_arg_is(sub, "purge") || net_arg_is(sub, "help")) {
                bad_arity(req, "memory");
        } else {
                unknown_sub(req, "MEMORY");
        }
        return NET_CMD_DONE;
}
