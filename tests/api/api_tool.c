/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program on libscree for the library's process-level tests
 * (tests/api/test_api_process.py): what an embedding program does when it
 * is killed or its disk fills up.
 *
 *   api_tool write DIR FIRST COUNT VALUE_BYTES
 *       puts rows FIRST..FIRST+COUNT-1 (commitlog-sync batch), printing
 *       each index once acknowledged (line by line), then "done". A put
 *       that fails prints "error <code> <message>" once and is retried
 *       every 50 ms until it succeeds (a full disk: until space returns).
 *   api_tool check DIR FILE
 *       reopens DIR and checks that every index in FILE (one per line)
 *       reads back with its value; prints "ok N" or the first missing one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <scree/scree.h>

static scree_db *open_db(const char *dir, scree_table **t)
{
        scree_options *o = scree_options_new();
        scree_table_spec spec = { .path = "/rows" };
        scree_db *db = NULL;
        int r;

        scree_options_set(o, "smp", "2");
        scree_options_set(o, "memory", "32mb");
        scree_options_set(o, "pin", "no");
        r = scree_open(dir, o, &db);
        scree_options_free(o);
        if (r < 0) {
                printf("error %d %s\n", r, scree_last_error());
                exit(1);
        }
        r = scree_table_create(db, &spec);
        if (r < 0 && r != -EEXIST) {
                printf("error %d %s\n", r, scree_last_error());
                exit(1);
        }
        if (scree_table_open(db, "/rows", t) < 0)
                exit(1);
        return db;
}

static size_t key_of(char *buf, long i)
{
        return (size_t)sprintf(buf, "row:%010ld", i);
}

static void value_of(char *buf, size_t len, long i)
{
        for (size_t k = 0; k < len; k++)
                buf[k] = (char)('a' + (i + (long)k) % 26);
}

static int cmd_write(const char *dir, long first, long count, size_t vlen)
{
        scree_table *t;
        scree_db *db = open_db(dir, &t);
        char key[32], *val = malloc(vlen ? vlen : 1);
        bool reported = false;

        setvbuf(stdout, NULL, _IOLBF, 0);
        for (long i = first; i < first + count;) {
                size_t kl = key_of(key, i);
                int r;

                value_of(val, vlen, i);
                r = scree_put(t, key, kl, val, vlen, 0);
                if (r == 0) {
                        printf("%ld\n", i++);
                        reported = false;
                        continue;
                }
                if (!reported)
                        printf("error %d %s\n", r, scree_last_error());
                reported = true;
                nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000 * 1000 }, NULL);
        }
        printf("done\n");
        free(val);
        scree_table_close(t);
        return scree_close(db) < 0 ? 1 : 0;
}

static int cmd_check(const char *dir, const char *file)
{
        scree_table *t;
        scree_db *db = open_db(dir, &t);
        FILE *f = fopen(file, "r");
        char line[64], key[32], *want = NULL, *got = NULL;
        long n = 0;
        int rc = 0;

        while (f && fgets(line, sizeof(line), f)) {
                long i = strtol(line, NULL, 10);
                size_t kl = key_of(key, i), len = 0;
                scree_value *v = NULL;
                int r = scree_get_value(t, key, kl, &v);

                if (r < 0) {
                        printf("missing %ld: %s\n", i, scree_strerror(r));
                        rc = 1;
                        break;
                }
                len = scree_value_len(v);
                want = realloc(want, len ? len : 1);
                value_of(want, len, i);
                if (memcmp(want, scree_value_data(v), len) != 0) {
                        printf("wrong value for %ld\n", i);
                        rc = 1;
                }
                scree_value_free(v);
                n++;
        }
        if (rc == 0)
                printf("ok %ld\n", n);
        free(want);
        free(got);
        if (f)
                fclose(f);
        scree_table_close(t);
        scree_close(db);
        return rc;
}

int main(int argc, char **argv)
{
        if (argc == 6 && strcmp(argv[1], "write") == 0)
                return cmd_write(argv[2], atol(argv[3]), atol(argv[4]), (size_t)atol(argv[5]));
        if (argc == 4 && strcmp(argv[1], "check") == 0)
                return cmd_check(argv[2], argv[3]);
        fprintf(stderr, "usage: api_tool write DIR FIRST COUNT VALUE_BYTES | check DIR FILE\n");
        return 2;
}
