/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RESP microbenchmark: ns per command to parse a pipeline of
 * `SET key:NNNNNN <100 bytes>` (as redis-benchmark sends it), whole and in
 * 16 KiB reads (commands cut at read boundaries go through the stash), and
 * an inline `GET key:NNNNNN`; ns per reply to write +OK, a 100-byte bulk and
 * an integer, sending (consuming) every 64 replies. Single thread, no I/O.
 * Usage: resp_bench [--commands N] [--rounds R]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/time.h"
#include "net/resp_parse.h"
#include "net/resp_write.h"

static volatile size_t sink;

static size_t build_sets(char *buf, unsigned n)
{
        size_t len = 0;

        for (unsigned i = 0; i < n; i++) {
                len += (size_t)sprintf(buf + len, "*3\r\n$3\r\nSET\r\n$10\r\nkey:%06u\r\n$100\r\n", i % 1000000);
                memset(buf + len, 'x', 100);
                memcpy(buf + len + 100, "\r\n", 2);
                len += 102;
        }
        return len;
}

/* Parses buf in reads of read_bytes; returns the commands seen. */
static unsigned parse_all(struct net_resp_parser *p, const char *buf, size_t len, size_t read_bytes)
{
        unsigned n = 0;

        for (size_t at = 0; at < len; at += read_bytes) {
                size_t rlen = len - at < read_bytes ? len - at : read_bytes, off = 0;
                struct net_cmd cmd;
                ssize_t r;

                while ((r = net_resp_parse(p, buf + at + off, rlen - off, &cmd)) > 0) {
                        sink += cmd.argv[cmd.argc - 1].len;
                        off += (size_t)r;
                        n++;
                }
                if (r < 0) {
                        fprintf(stderr, "parse error: %s\n", net_resp_parser_error(p));
                        exit(1);
                }
        }
        return n;
}

static void bench_parse(const char *name, const char *buf, size_t len, unsigned n_cmds,
                        size_t read_bytes, int rounds)
{
        struct net_resp_parser p;
        uint64_t best = UINT64_MAX;

        net_resp_parser_init(&p, NULL);
        for (int r = 0; r < rounds; r++) {
                uint64_t t0 = time_now_ns();

                if (parse_all(&p, buf, len, read_bytes) != n_cmds) {
                        fprintf(stderr, "%s: wrong command count\n", name);
                        exit(1);
                }
                t0 = time_now_ns() - t0;
                if (t0 < best)
                        best = t0;
        }
        net_resp_parser_fini(&p);
        printf("parse %-28s %7.1f ns/command  (%.0f MB/s)\n", name, (double)best / n_cmds,
               (double)len * 1e3 / (double)best);
}

enum reply { R_OK, R_BULK100, R_INT };

static void bench_write(const char *name, enum reply kind, unsigned n, int rounds)
{
        static const char val[100] = { 'v' };
        struct net_resp_out o;
        uint64_t best = UINT64_MAX;

        net_resp_out_init(&o, 0);
        for (int r = 0; r < rounds; r++) {
                uint64_t t0 = time_now_ns();

                for (unsigned i = 0; i < n; i++) {
                        if (kind == R_OK)
                                net_resp_add_simple(&o, "OK", 2);
                        else if (kind == R_BULK100)
                                net_resp_add_bulk(&o, val, sizeof(val));
                        else
                                net_resp_add_int(&o, (int64_t)i * 7919);
                        if ((i & 63) == 63)
                                net_resp_out_consume(&o, net_resp_out_pending_bytes(&o));
                }
                net_resp_out_consume(&o, net_resp_out_pending_bytes(&o));
                t0 = time_now_ns() - t0;
                if (t0 < best)
                        best = t0;
        }
        net_resp_out_fini(&o);
        printf("write %-28s %7.1f ns/reply\n", name, (double)best / n);
}

int main(int argc, char **argv)
{
        unsigned n = 100000;
        int rounds = 20;
        char *buf, *inl;
        size_t len, ilen = 0;

        for (int i = 1; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--commands"))
                        n = (unsigned)strtoul(argv[i + 1], NULL, 10);
                else if (!strcmp(argv[i], "--rounds"))
                        rounds = atoi(argv[i + 1]);
        }
        buf = malloc((size_t)n * 160);
        inl = malloc((size_t)n * 32);
        if (!buf || !inl || n == 0 || rounds < 1)
                return 2;
        len = build_sets(buf, n);
        for (unsigned i = 0; i < n; i++)
                ilen += (size_t)sprintf(inl + ilen, "GET key:%06u\r\n", i % 1000000);
        printf("%u commands, best of %d rounds\n", n, rounds);
        bench_parse("SET 100B, one buffer", buf, len, n, len, rounds);
        bench_parse("SET 100B, 16 KiB reads", buf, len, n, 16384, rounds);
        bench_parse("inline GET, 16 KiB reads", inl, ilen, n, 16384, rounds);
        bench_write("+OK", R_OK, n, rounds);
        bench_write("bulk 100 B", R_BULK100, n, rounds);
        bench_write("integer", R_INT, n, rounds);
        printf("(sink %zu)\n", (size_t)sink);
        free(buf);
        free(inl);
        return 0;
}
