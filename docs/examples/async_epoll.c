/* SPDX-License-Identifier: Apache-2.0 */
/*
 * docs/embedding.md's asynchronous example: a host event loop (epoll)
 * that keeps many operations in flight through a completion queue, whose
 * descriptor sits in the loop next to the program's own sockets.
 *
 *   cc async_epoll.c $(pkg-config --cflags --libs scree) -o async_epoll
 *   ./async_epoll /tmp/async-db
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <scree/scree.h>

#define ROWS 10000
#define IN_FLIGHT 256

static int fail(const char *what, int err)
{
        fprintf(stderr, "%s: %s (%s)\n", what, scree_strerror(err), scree_last_error());
        return 1;
}

/* Byte-string keys: the table below has no key parts. */
static size_t key_of(char *buf, uint64_t n)
{
        return (size_t)sprintf(buf, "key:%08llu", (unsigned long long)n);
}

int main(int argc, char **argv)
{
        scree_table_spec spec = { .path = "/kv" };      /* n_parts 0: any bytes */
        scree_completion done[64];
        struct epoll_event ev = { .events = EPOLLIN };
        uint64_t sent = 0, answered = 0, found = 0;
        scree_db *db;
        scree_table *t;
        scree_cq *q;
        char key[32];
        int ep, r;

        if ((r = scree_open(argc > 1 ? argv[1] : "async-db", NULL, &db)) < 0)
                return fail("open", r);
        if ((r = scree_table_create(db, &spec)) < 0 && r != -EEXIST)
                return fail("create", r);
        if ((r = scree_table_open(db, "/kv", &t)) < 0 || (r = scree_cq_new(db, &q)) < 0)
                return fail("table or queue", r);
        ep = epoll_create1(0);
        epoll_ctl(ep, EPOLL_CTL_ADD, scree_cq_fd(q), &ev);

        /* Phase 1 writes ROWS rows, phase 2 reads them back; at most
         * IN_FLIGHT operations wait at any time. */
        for (int phase = 1; phase <= 2; phase++) {
                sent = answered = 0;
                while (answered < ROWS) {
                        while (sent < ROWS && sent - answered < IN_FLIGHT) {
                                size_t kl = key_of(key, sent);

                                r = phase == 1 ? scree_put_async(q, t, key, kl, key, kl, 0,
                                                                  (void *)(uintptr_t)sent)
                                               : scree_get_async(q, t, key, kl,
                                                                 (void *)(uintptr_t)sent);
                                if (r < 0)
                                        return fail("submit", r);
                                sent++;
                        }
                        /* The descriptor is readable while completions wait;
                         * poll until fewer than asked come back. */
                        int n = scree_cq_poll(q, done, 64);

                        if (n == 0) {
                                epoll_wait(ep, &ev, 1, -1);
                                continue;
                        }
                        for (int i = 0; i < n; i++) {
                                if (done[i].res < 0)
                                        return fail("operation", done[i].res);
                                if (done[i].op == SCREE_OP_GET) {
                                        found++;
                                        scree_value_free(done[i].value);
                                }
                        }
                        answered += (uint64_t)n;
                }
        }
        printf("wrote %d rows and read %llu back\n", ROWS, (unsigned long long)found);
        close(ep);
        scree_cq_free(q);
        scree_table_close(t);
        return scree_close(db) < 0 ? 1 : found == ROWS ? 0 : 1;
}
