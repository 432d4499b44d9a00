/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/embedding.md's first example: open a database, make a table, write
 * and read rows, read a range, close.
 *
 *   cc hello.c $(pkg-config --cflags --libs scree) -o hello && ./hello /tmp/hello-db
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <scree/scree.h>

/* Prints what failed and returns 1: every scree call returns 0 or -error. */
static int fail(const char *what, int err)
{
        fprintf(stderr, "%s: %s (%s)\n", what, scree_strerror(err), scree_last_error());
        return 1;
}

/* The key (user, n): a tuple of a byte string and an unsigned integer. */
static size_t make_key(char *buf, size_t cap, const char *user, uint64_t n)
{
        scree_part parts[2] = {
                { .type = SCREE_BYTES, .v.bytes = { user, strlen(user) } },
                { .type = SCREE_U64, .v.u64 = n },
        };
        size_t len = 0;

        scree_key_encode(parts, 2, buf, cap, &len);
        return len;
}

int main(int argc, char **argv)
{
        static const scree_type parts[] = { SCREE_BYTES, SCREE_U64 };
        const char *dir = argc > 1 ? argv[1] : "hello-db";
        scree_options *o = scree_options_new();
        scree_table_spec spec = { .path = "/app/events", .n_parts = 2, .parts = parts };
        scree_db *db;
        scree_table *t;
        scree_rows *rows;
        char key[64], end[64], value[64];
        size_t klen, elen, vlen;
        int r;

        scree_options_set(o, "memory", "64mb");
        r = scree_open(dir, o, &db);
        scree_options_free(o);
        if (r < 0)
                return fail("open", r);
        /* A table lives in a directory; both survive a restart. */
        if ((r = scree_mkdir(db, "/app")) < 0 && r != -EEXIST)
                return fail("mkdir", r);
        if ((r = scree_table_create(db, &spec)) < 0 && r != -EEXIST)
                return fail("create", r);
        if ((r = scree_table_open(db, "/app/events", &t)) < 0)
                return fail("table", r);

        for (uint64_t n = 1; n <= 5; n++) {
                int vl = snprintf(value, sizeof(value), "event %llu of alice",
                                  (unsigned long long)n);

                klen = make_key(key, sizeof(key), "alice", n);
                if ((r = scree_put(t, key, klen, value, (size_t)vl, 0)) < 0)
                        return fail("put", r);
        }
        klen = make_key(key, sizeof(key), "alice", 3);
        if ((r = scree_get(t, key, klen, value, sizeof(value), &vlen)) < 0)
                return fail("get", r);
        printf("get (alice, 3): %.*s\n", (int)vlen, value);

        /* Every row of alice: from (alice) to the end of its prefix. */
        {
                scree_part who = { .type = SCREE_BYTES, .v.bytes = { "alice", 5 } };
                scree_range range;

                scree_key_encode(&who, 1, key, sizeof(key), &klen);
                elen = scree_key_prefix_end(key, klen, end, sizeof(end));
                range = (scree_range){ .start = key, .start_len = klen, .end = end,
                                       .end_len = elen };
                if ((r = scree_scan(t, &range, NULL, 0, 100, &rows)) < 0)
                        return fail("scan", r);
        }
        for (size_t i = 0; i < scree_rows_count(rows); i++) {
                const char *v = scree_rows_value(rows, i, &vlen);

                printf("row %zu: %.*s\n", i, (int)vlen, v);
        }
        scree_rows_free(rows);
        scree_table_close(t);
        if ((r = scree_close(db)) < 0)
                return fail("close", r);
        return 0;
}
