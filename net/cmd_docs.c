/* SPDX-License-Identifier: Apache-2.0 */
/*
 * COMMAND DOCS: Redis 7's per-command documentation maps (summary, since,
 * group, complexity, arguments), which redis-cli shows in its hints and
 * HELP. Written for scree's own commands (docs/tables.md); Redis's
 * commands are Redis's to document, so they answer with no entry.
 */
#include <string.h>

#include "net/cmd.h"

enum {
        ARG_OPTIONAL = 1u << 0,
        ARG_MULTIPLE = 1u << 1,
};

struct doc_arg {
        const char *name;
        const char *type;               /* Redis's: string, integer, pure-token, ... */
        const char *token;              /* the word before it, or NULL */
        unsigned flags;
};

struct cmd_doc {
        const char *name;
        const char *summary;
        const char *complexity;
        const struct doc_arg *args;
        size_t n_args;
};

#define ARGS(...) (const struct doc_arg[]){ __VA_ARGS__ }, \
        sizeof((const struct doc_arg[]){ __VA_ARGS__ }) / sizeof(struct doc_arg)

static const struct cmd_doc docs[] = {
        { "dir.create", "Creates a directory of tables.", "O(directories + tables)",
          ARGS({ "path", "string", NULL, 0 }) },
        { "dir.drop", "Removes an empty directory.", "O(directories + tables)",
          ARGS({ "path", "string", NULL, 0 }) },
        { "dir.list", "Lists a directory's tables and subdirectories.",
          "O(directories + tables)", ARGS({ "path", "string", NULL, ARG_OPTIONAL }) },
        { "table.create",
          "Creates a table: its key parts, key mode, pre-split tablets and options.",
          "O(tablets)",
          ARGS({ "path", "string", NULL, 0 }, { "type", "string", "KEY", ARG_MULTIPLE },
               { "ordered", "pure-token", "ORDERED", ARG_OPTIONAL },
               { "hashed", "pure-token", "HASHED", ARG_OPTIONAL },
               { "prefix", "integer", "PREFIX", ARG_OPTIONAL },
               { "tablets", "integer", "TABLETS", ARG_OPTIONAL },
               { "split", "string", "SPLIT", ARG_OPTIONAL | ARG_MULTIPLE },
               { "option", "string", NULL, ARG_OPTIONAL | ARG_MULTIPLE }) },
        { "table.drop", "Drops a table; its rows are removed in the background.", "O(tablets)",
          ARGS({ "path", "string", NULL, 0 }) },
        { "table.alter", "Changes a table's options.", "O(tablets)",
          ARGS({ "path", "string", NULL, 0 }, { "option", "string", NULL, ARG_MULTIPLE }) },
        { "table.list", "Lists the tables under a directory, at any depth.", "O(tables)",
          ARGS({ "dir", "string", NULL, ARG_OPTIONAL }) },
        { "table.describe",
          "Describes a table: key, mode, options, and each tablet's range, shard, size and rows.",
          "O(tablets)", ARGS({ "path", "string", NULL, 0 }) },
        { "tablet.split",
          "Splits a table's tablet in two at a key (or its middle) without copying rows; replies "
          "the two new tablets' ids.", "O(tablets)",
          ARGS({ "table", "string", NULL, 0 }, { "tablet", "integer", NULL, 0 },
               { "point", "string", "AT", ARG_OPTIONAL | ARG_MULTIPLE }) },
        { "tablet.merge",
          "Merges a table's tablet with the next one (both on one shard) without copying rows; "
          "replies the merged tablet's id.", "O(tablets)",
          ARGS({ "table", "string", NULL, 0 }, { "tablet", "integer", NULL, 0 }) },
        { "tablet.move",
          "Moves a table's tablet to another shard without copying rows (its files are "
          "hard-linked); requests that race it are routed again.", "O(tablets)",
          ARGS({ "table", "string", NULL, 0 }, { "tablet", "integer", NULL, 0 },
               { "shard", "integer", NULL, 0 }) },
        { "balancer",
          "Shows the tablet balancer's state and moves (STATUS), or stops (PAUSE) or restarts "
          "(RESUME) it.", "O(1)",
          ARGS({ "status|pause|resume", "string", NULL, 0 }) },
        { "row.put", "Writes a row, with an optional time to live.", "O(log N)",
          ARGS({ "table", "string", NULL, 0 }, { "part", "string", NULL, ARG_MULTIPLE },
               { "value", "string", NULL, 0 }, { "seconds", "integer", "EX", ARG_OPTIONAL },
               { "milliseconds", "integer", "PX", ARG_OPTIONAL }) },
        { "row.get", "Reads a row's value.", "O(log N)",
          ARGS({ "table", "string", NULL, 0 }, { "part", "string", NULL, ARG_MULTIPLE }) },
        { "row.del", "Deletes a row; replies whether it was there.", "O(log N)",
          ARGS({ "table", "string", NULL, 0 }, { "part", "string", NULL, ARG_MULTIPLE }) },
        { "row.write", "Writes and deletes several rows of one table atomically.",
          "O(M log N) for M rows",
          ARGS({ "table", "string", NULL, 0 }, { "put", "string", "PUT", ARG_OPTIONAL | ARG_MULTIPLE },
               { "del", "string", "DEL", ARG_OPTIONAL | ARG_MULTIPLE }) },
        { "row.range", "Reads a page of rows of a key range, with a cursor for the next page.",
          "O(log N + M) for M rows",
          ARGS({ "table", "string", NULL, 0 }, { "ge", "string", "GE", ARG_OPTIONAL },
               { "gt", "string", "GT", ARG_OPTIONAL }, { "le", "string", "LE", ARG_OPTIONAL },
               { "lt", "string", "LT", ARG_OPTIONAL }, { "count", "integer", "LIMIT", ARG_OPTIONAL },
               { "rev", "pure-token", "REV", ARG_OPTIONAL },
               { "cursor", "string", "CURSOR", ARG_OPTIONAL }) },
        { "row.count", "Counts the rows of a key range.", "O(log N + M) for M rows",
          ARGS({ "table", "string", NULL, 0 }, { "bound", "string", NULL, ARG_OPTIONAL | ARG_MULTIPLE }) },
        { "row.delrange", "Deletes the rows of a key range; replies how many.",
          "O(log N + M) for M rows",
          ARGS({ "table", "string", NULL, 0 }, { "bound", "string", NULL, ARG_OPTIONAL | ARG_MULTIPLE }) },
};

static void add_str(struct net_resp_out *o, const char *s)
{
        net_resp_add_bulk(o, s, strlen(s));
}

static void arg_write(struct net_resp_out *o, const struct doc_arg *a)
{
        unsigned n = 2 + (a->token != NULL) + (a->flags != 0);

        net_resp_add_map(o, n);
        add_str(o, "name");
        add_str(o, a->name);
        add_str(o, "type");
        add_str(o, a->type);
        if (a->token) {
                add_str(o, "token");
                add_str(o, a->token);
        }
        if (a->flags) {
                add_str(o, "flags");
                net_resp_add_array(o, !!(a->flags & ARG_OPTIONAL) + !!(a->flags & ARG_MULTIPLE));
                if (a->flags & ARG_OPTIONAL)
                        net_resp_add_simple(o, "optional", 8);
                if (a->flags & ARG_MULTIPLE)
                        net_resp_add_simple(o, "multiple", 8);
        }
}

static void doc_write(struct net_resp_out *o, const struct cmd_doc *d)
{
        add_str(o, d->name);
        net_resp_add_map(o, 5);
        add_str(o, "summary");
        add_str(o, d->summary);
        add_str(o, "since");
        add_str(o, SCREE_VERSION);
        add_str(o, "group");
        add_str(o, "scree-tables");
        add_str(o, "complexity");
        add_str(o, d->complexity);
        add_str(o, "arguments");
        net_resp_add_array(o, d->n_args);
        for (size_t i = 0; i < d->n_args; i++)
                arg_write(o, &d->args[i]);
}

static const struct cmd_doc *doc_find(const struct net_arg *a)
{
        for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
                if (net_arg_is(a, docs[i].name))
                        return &docs[i];
        return NULL;
}

void net_cmd_docs(struct net_req *req)
{
        size_t n = 0, argc = req->argc;

        if (argc <= 2) {
                net_resp_add_map(req->out, sizeof(docs) / sizeof(docs[0]));
                for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
                        doc_write(req->out, &docs[i]);
                return;
        }
        for (size_t a = 2; a < argc; a++)
                n += doc_find(&req->argv[a]) != NULL;
        net_resp_add_map(req->out, n);
        for (size_t a = 2; a < argc; a++) {
                const struct cmd_doc *d = doc_find(&req->argv[a]);

                if (d)
                        doc_write(req->out, d);
        }
}
