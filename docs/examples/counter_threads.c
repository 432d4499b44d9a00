/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/embedding.md's threading example: several host threads share one
 * database handle and one table handle, and increment one counter with
 * read-modify-writes that run on the shard owning the key -- no lock in
 * the program, no lost update.
 *
 *   cc counter_threads.c $(pkg-config --cflags --libs scree) -lpthread -o counter
 *   ./counter /tmp/counter-db
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <scree/scree.h>

#define THREADS 4
#define INCREMENTS 1000

/* Runs on the owning shard: reads the count, writes count + 1. Quick, no
 * blocking, no synchronous scree call. out->value points at arg, the
 * calling thread's buffer, valid until scree_update returns. */
static int increment(void *arg, const void *cur, size_t len, scree_update_out *out)
{
        char *buf = arg, tmp[24] = "0";

        if (cur && len < sizeof(tmp)) {
                memcpy(tmp, cur, len);
                tmp[len] = 0;
        }
        out->value = buf;
        out->value_len = (size_t)snprintf(buf, 24, "%llu", strtoull(tmp, NULL, 10) + 1);
        return SCREE_UPDATE_PUT;
}

static void *worker(void *arg)
{
        scree_table *t = arg;
        char buf[24];

        for (int i = 0; i < INCREMENTS; i++)
                if (scree_update(t, "hits", 4, increment, buf) < 0)
                        fprintf(stderr, "update: %s\n", scree_last_error());
        return NULL;
}

int main(int argc, char **argv)
{
        scree_table_spec spec = { .path = "/counters" };
        pthread_t th[THREADS];
        scree_db *db;
        scree_table *t;
        char v[24];
        size_t len = 0;
        int r;

        if ((r = scree_open(argc > 1 ? argv[1] : "counter-db", NULL, &db)) < 0) {
                fprintf(stderr, "open: %s\n", scree_last_error());
                return 1;
        }
        if ((r = scree_table_create(db, &spec)) < 0 && r != -EEXIST)
                return 1;
        scree_table_open(db, "/counters", &t);
        scree_del(t, "hits", 4);
        for (int i = 0; i < THREADS; i++)
                pthread_create(&th[i], NULL, worker, t);
        for (int i = 0; i < THREADS; i++)
                pthread_join(th[i], NULL);
        r = scree_get(t, "hits", 4, v, sizeof(v) - 1, &len);
        v[r == 0 ? len : 0] = 0;
        printf("hits = %s (want %d)\n", v, THREADS * INCREMENTS);
        scree_table_close(t);
        scree_close(db);
        return atoi(v) == THREADS * INCREMENTS ? 0 : 1;
}
