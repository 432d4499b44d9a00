/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table commands' schema side (net/tbl_args.h): TABLE.CREATE and every
 * option with its errors, and the reply shapes (keys, rows, tablets,
 * TABLE.DESCRIBE, DIR.LIST) byte for byte, in RESP2 and RESP3.
 */
#include "tests/net/tbl_helpers.h"

TestSuite(tbl_schema, .timeout = 30, .fini = cats_free);

/* ---- TABLE.CREATE ---- */

/* Field by field: the struct's padding bytes are whatever they were. */
static bool options_eq(const struct eng_catalog_options *a, const struct eng_catalog_options *b)
{
        return a->split_by_size == b->split_by_size && a->split_by_load == b->split_by_load &&
               a->compaction == b->compaction && a->split_load_percent == b->split_load_percent &&
               a->min_tablets == b->min_tablets && a->max_tablets == b->max_tablets &&
               a->split_size_bytes == b->split_size_bytes && a->default_ttl_ms == b->default_ttl_ms &&
               a->partition_reads_per_sec == b->partition_reads_per_sec &&
               a->partition_writes_per_sec == b->partition_writes_per_sec;
}

static int create(const char *line, struct net_tbl_create *c)
{
        struct net_arg argv[40];
        size_t n = words(line, argv);

        return net_tbl_create_parse(argv, n, c, err, sizeof(err));
}

Test(tbl_schema, create_defaults)
{
        struct net_tbl_create c;
        struct eng_catalog_options d = eng_catalog_options_default();

        cr_assert(eq(int, create("/app/events KEY i64 BYTES U64", &c), 0), "%s", err);
        cr_expect(eq(str, (char *)c.spec.path, "/app/events"));
        cr_expect(eq(int, c.spec.key_format, ENG_CATALOG_KEYS_TUPLE));
        cr_expect(eq(int, c.spec.mode, ENG_CATALOG_ORDERED));
        cr_expect(eq(u32, c.spec.n_parts, 3));
        cr_expect(eq(int, c.spec.parts[0], ENG_TUPLE_I64));
        cr_expect(eq(int, c.spec.parts[1], ENG_TUPLE_BYTES));
        cr_expect(eq(int, c.spec.parts[2], ENG_TUPLE_U64));
        cr_expect(eq(u32, c.spec.hash_parts, 0));
        cr_expect(eq(u32, c.spec.n_tablets, 0));
        cr_expect(eq(u32, c.spec.n_splits, 0));
        cr_expect(options_eq(&c.spec.options, &d));
        net_tbl_create_fini(&c);
        net_tbl_create_fini(&c);
}

Test(tbl_schema, create_hashed_with_prefix_tablets_and_options)
{
        struct net_tbl_create c;

        cr_assert(eq(int, create("/t KEY u64 u64 HASHED PREFIX 1 TABLETS 8 split-size 64mb "
                                 "DEFAULT-TTL 60 PER-PARTITION-READS 7 PER-PARTITION-WRITES 3", &c),
                     0), "%s", err);
        cr_expect(eq(u32, c.spec.options.partition_reads_per_sec, 7));
        cr_expect(eq(u32, c.spec.options.partition_writes_per_sec, 3));
        cr_expect(eq(int, c.spec.mode, ENG_CATALOG_HASHED));
        cr_expect(eq(u32, c.spec.hash_parts, 1));
        cr_expect(eq(u32, c.spec.n_tablets, 8));
        cr_expect(eq(u64, c.spec.options.split_size_bytes, 64u << 20));
        cr_expect(eq(u64, c.spec.options.default_ttl_ms, 60000));
        net_tbl_create_fini(&c);
        cr_assert(eq(int, create("/t KEY u64 u64 hashed", &c), 0));
        cr_expect(eq(u32, c.spec.hash_parts, 2), "all parts by default");
        net_tbl_create_fini(&c);
}

Test(tbl_schema, create_split_points_sorted_and_accepted_by_the_catalog)
{
        struct eng_catalog *c0 = eng_catalog_new(2), *c1;
        const struct eng_catalog_table *t;
        struct net_tbl_create c;
        uint8_t k[64];

        cr_assert(eq(int, create("/s KEY i64 bytes SPLIT 2 100 m SPLIT 1 -5 SPLIT 1 NULL "
                                 "SPLIT 2 100 \\NULL", &c), 0), "%s", err);
        cr_assert(eq(u32, c.spec.n_splits, 4));
        t = ib();
        cr_expect(eq(int, memcmp(c.spec.splits[0].key, "\x01", 1), 0));
        cr_expect(eq(sz, c.spec.splits[1].len, 9));
        cr_expect(eq(sz, c.spec.splits[2].len, enc(t, "100 \\NULL", k)));
        cr_expect(eq(int, memcmp(c.spec.splits[2].key, k, c.spec.splits[2].len), 0));
        cr_expect(eq(sz, c.spec.splits[3].len, enc(t, "100 m", k)));
        cr_expect(eq(int, memcmp(c.spec.splits[3].key, k, c.spec.splits[3].len), 0));
        for (uint32_t i = 1; i < 4; i++)
                cr_expect(lt(int, eng_key_cmp(c.spec.splits[i - 1].key, c.spec.splits[i - 1].len,
                                              c.spec.splits[i].key, c.spec.splits[i].len), 0));
        cr_assert(eq(int, eng_catalog_create_table(c0, &c.spec, &c1, NULL, err, sizeof(err)), 0),
                  "%s", err);
        cr_assert(eq(int, eng_catalog_lookup(c1, "/s", &t), 0));
        cr_expect(eq(u32, t->n_tablets, 5));
        net_tbl_create_fini(&c);
        eng_catalog_unref(c0);
        eng_catalog_unref(c1);
}

struct create_err_case {
        char line[128];
        char msg[240];
};

ParameterizedTestParameters(tbl_args, create_errors)
{
        static struct create_err_case c[] = {
                { "", "TABLE.CREATE needs a path" },
                { "/t", "expected KEY after the path, then the key's types (i64, u64, bytes)" },
                { "/t i64", "expected KEY after the path, then the key's types (i64, u64, bytes)" },
                { "/t KEY", "KEY needs at least one type (i64, u64, bytes)" },
                { "/t KEY i32", "KEY needs at least one type (i64, u64, bytes), got an unknown one" },
                { "/t KEY i64 i32", "unknown key type or option 'i32' (types: i64, u64, bytes; then "
                                    "ORDERED, HASHED [PREFIX n], TABLETS n, SPLIT n parts.., options)" },
                { "/t KEY i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64",
                  "a key has at most 16 parts" },
                { "/t KEY i64 HASHED PREFIX 2", "PREFIX must be from 1 to the key's 1 part" },
                { "/t KEY i64 i64 HASHED PREFIX 0", "PREFIX must be from 1 to the key's 2 parts" },
                { "/t KEY i64 HASHED ORDERED", "the key mode (ORDERED or HASHED) is given twice" },
                { "/t KEY i64 ORDERED PREFIX 1", "unknown key type or option 'PREFIX' (types: i64, "
                                                 "u64, bytes; then ORDERED, HASHED [PREFIX n], "
                                                 "TABLETS n, SPLIT n parts.., options)" },
                { "/t KEY i64 TABLETS 0", "TABLETS must be an integer from 1 to 65536" },
                { "/t KEY i64 TABLETS 65537", "TABLETS must be an integer from 1 to 65536" },
                { "/t KEY i64 TABLETS", "TABLETS must be an integer from 1 to 65536" },
                { "/t KEY i64 TABLETS 2 TABLETS 3", "TABLETS is given twice" },
                { "/t KEY i64 SPLIT 1 5 HASHED", "SPLIT is for ordered tables; a hashed table "
                                                 "pre-splits with TABLETS n" },
                { "/t KEY i64 SPLIT 1 5 TABLETS 2", "give TABLETS or SPLIT, not both (SPLIT points "
                                                    "make points + 1 tablets)" },
                { "/t KEY i64 SPLIT 1 5 SPLIT 1 5", "two SPLIT points are equal" },
                { "/t KEY i64 SPLIT 2 5 6", "SPLIT takes a count of key parts (1 to 1), then the parts" },
                { "/t KEY i64 SPLIT 1", "SPLIT 1 needs 1 key parts, got 0" },
                { "/t KEY i64 SPLIT 1 5 SPLIT 1 x", "SPLIT point 2, part 1 must be an i64, got 'x'" },
                { "/t KEY i64 FOO 1", "unknown key type or option 'FOO' (types: i64, u64, bytes; then "
                                      "ORDERED, HASHED [PREFIX n], TABLETS n, SPLIT n parts.., options)" },
                { "/t KEY i64 MIN-TABLETS", "option MIN-TABLETS needs a value" },
                { "/t KEY i64 MIN-TABLETS 4 MAX-TABLETS 2", "MIN-TABLETS 4 is above MAX-TABLETS 2" },
                { "/t KEY i64 SPLIT-SIZE 1kb", "split size 1024 bytes: 1 MiB..1 TiB" },
        };
        return cr_make_param_array(struct create_err_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct create_err_case *c, tbl_args, create_errors)
{
        struct net_tbl_create out = { .spec.n_parts = 99 };

        cr_assert(eq(int, create(c->line, &out), -EINVAL), "%s", c->line);
        cr_expect(eq(str, err, c->msg));
        cr_expect(eq(u32, out.spec.n_parts, 99));
}

Test(tbl_schema, create_split_key_over_the_limit)
{
        struct net_tbl_create c;
        char line[3000] = "/t KEY bytes SPLIT 1 ";

        memset(line + strlen(line), 'x', 2100);
        cr_assert(eq(int, create(line, &c), -EINVAL));
        cr_expect(eq(str, err, "SPLIT point 1 is 2103 bytes encoded, at most 2048"));
}

/* ---- options ---- */

struct opt_case {
        char line[64];
        int ret;
        char msg[200];
};

ParameterizedTestParameters(tbl_args, option_table)
{
        static struct opt_case c[] = {
                { "AUTO-SPLIT-SIZE off", 0 }, { "auto-split-size ON", 0 },
                { "AUTO-SPLIT-SIZE yes", -EINVAL, "AUTO-SPLIT-SIZE must be on or off" },
                { "AUTO-SPLIT-LOAD on", 0 },
                { "AUTO-SPLIT-LOAD 1", -EINVAL, "AUTO-SPLIT-LOAD must be on or off" },
                { "SPLIT-SIZE 1048576", 0 }, { "SPLIT-SIZE 1mb", 0 }, { "SPLIT-SIZE 1TB", 0 },
                { "SPLIT-SIZE 1048575", -EINVAL, "split size 1048575 bytes: 1 MiB..1 TiB" },
                { "SPLIT-SIZE 2tb", -EINVAL, "split size 2199023255552 bytes: 1 MiB..1 TiB" },
                { "SPLIT-SIZE 17179869184tb", -EINVAL, "SPLIT-SIZE 17179869184tb is too large" },
                { "SPLIT-SIZE 1m", -EINVAL, "SPLIT-SIZE must be a number of bytes, optionally with kb, mb, gb or tb, got '1m'" },
                { "SPLIT-SIZE mb", -EINVAL, "SPLIT-SIZE must be a number of bytes, optionally with kb, mb, gb or tb, got 'mb'" },
                { "SPLIT-SIZE 01mb", -EINVAL, "SPLIT-SIZE must be a number of bytes, optionally with kb, mb, gb or tb, got '01mb'" },
                { "SPLIT-SIZE -1", -EINVAL, "SPLIT-SIZE must be a number of bytes, optionally with kb, mb, gb or tb, got '-1'" },
                { "SPLIT-LOAD-PERCENT 1", 0 }, { "SPLIT-LOAD-PERCENT 100", 0 },
                { "SPLIT-LOAD-PERCENT 0", -EINVAL, "SPLIT-LOAD-PERCENT must be an integer from 1 to 100" },
                { "SPLIT-LOAD-PERCENT 101", -EINVAL, "SPLIT-LOAD-PERCENT must be an integer from 1 to 100" },
                { "MIN-TABLETS 1", 0 }, { "MAX-TABLETS 65536", 0 },
                { "MIN-TABLETS 0", -EINVAL, "MIN-TABLETS must be an integer from 1 to 65536" },
                { "MAX-TABLETS 65537", -EINVAL, "MAX-TABLETS must be an integer from 1 to 65536" },
                { "MIN-TABLETS 2000", -EINVAL, "MIN-TABLETS 2000 is above MAX-TABLETS 1024" },
                { "DEFAULT-TTL 0", 0 }, { "DEFAULT-TTL 4611686018427386", 0 },
                { "DEFAULT-TTL 4611686018427387", -EINVAL, "DEFAULT-TTL must be an integer from 0 to 4611686018427386" },
                { "DEFAULT-TTL -1", -EINVAL, "DEFAULT-TTL must be an integer from 0 to 4611686018427386" },
                { "COMPACTION size-tiered", 0 }, { "compaction SIZE-TIERED", 0 },
                { "COMPACTION leveled", -EINVAL, "COMPACTION must be size-tiered (the only strategy so far)" },
                { "", -EINVAL, "give at least one option and its value" },
                { "SPLIT-SIZE", -EINVAL, "option SPLIT-SIZE needs a value" },
                { "MIN-TABLETS 2 min-tablets 3", -EINVAL, "option MIN-TABLETS is given twice" },
                { "PER-PARTITION-READS 0", 0 }, { "per-partition-writes 4294967295", 0 },
                { "PER-PARTITION-READS -1", -EINVAL, "PER-PARTITION-READS must be an integer from 0 to 4294967295" },
                { "PER-PARTITION-WRITES 4294967296", -EINVAL, "PER-PARTITION-WRITES must be an integer from 0 to 4294967295" },
                { "PER-PARTITION-WRITES 5/s", -EINVAL, "PER-PARTITION-WRITES must be an integer from 0 to 4294967295" },
                { "PER-PARTITION-READS", -EINVAL, "option PER-PARTITION-READS needs a value" },
                { "TABLETS 4", -EINVAL, "unknown option 'TABLETS' (options: AUTO-SPLIT-SIZE, AUTO-SPLIT-LOAD, SPLIT-SIZE, SPLIT-LOAD-PERCENT, MIN-TABLETS, MAX-TABLETS, DEFAULT-TTL, COMPACTION, PER-PARTITION-READS, PER-PARTITION-WRITES)" },
        };
        return cr_make_param_array(struct opt_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct opt_case *c, tbl_args, option_table)
{
        struct eng_catalog_options cur = eng_catalog_options_default(), got = { .min_tablets = 77 };
        struct net_arg argv[8];
        size_t n = words(c->line, argv);
        int r = net_tbl_options_parse(&cur, argv, n, &got, err, sizeof(err));

        cr_assert(eq(int, r, c->ret), "%s: %s", c->line, err);
        if (r < 0) {
                cr_expect(eq(str, err, c->msg));
                cr_expect(eq(u32, got.min_tablets, 77));
        }
}

Test(tbl_schema, options_apply_over_the_current_ones)
{
        struct eng_catalog_options cur = eng_catalog_options_default(), got;
        struct net_arg argv[16];
        size_t n;

        cur.max_tablets = 8;
        cur.default_ttl_ms = 5000;
        n = words("auto-split-size off AUTO-SPLIT-LOAD on SPLIT-SIZE 3GB SPLIT-LOAD-PERCENT 70 "
                  "MIN-TABLETS 2", argv);
        cr_assert(eq(int, net_tbl_options_parse(&cur, argv, n, &got, err, sizeof(err)), 0), "%s",
                  err);
        cr_expect(not(got.split_by_size));
        cr_expect(got.split_by_load);
        cr_expect(eq(u64, got.split_size_bytes, UINT64_C(3) << 30));
        cr_expect(eq(u32, got.split_load_percent, 70));
        cr_expect(eq(u32, got.min_tablets, 2));
        cr_expect(eq(u32, got.max_tablets, 8), "kept");
        cr_expect(eq(u64, got.default_ttl_ms, 5000), "kept");
        cr_expect(eq(u32, got.partition_reads_per_sec, 0), "no limit by default");
        cur = got;
        n = words("PER-PARTITION-WRITES 100 per-partition-reads 5000", argv);
        cr_assert(eq(int, net_tbl_options_parse(&cur, argv, n, &got, err, sizeof(err)), 0), "%s",
                  err);
        cr_expect(eq(u32, got.partition_reads_per_sec, 5000));
        cr_expect(eq(u32, got.partition_writes_per_sec, 100));
        cr_expect(eq(u32, got.split_load_percent, 70), "kept");
        cur = got;
        n = words("PER-PARTITION-WRITES 0", argv);
        cr_assert(eq(int, net_tbl_options_parse(&cur, argv, n, &got, err, sizeof(err)), 0), "%s",
                  err);
        cr_expect(eq(u32, got.partition_writes_per_sec, 0), "0 lifts the limit");
        cr_expect(eq(u32, got.partition_reads_per_sec, 5000), "kept");
        n = words("MIN-TABLETS 9", argv);
        cr_expect(eq(int, net_tbl_options_parse(&cur, argv, n, &got, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "MIN-TABLETS 9 is above MAX-TABLETS 8"));
}

/* ---- replies ---- */

static char *out_bytes(struct net_resp_out *o, size_t *len)
{
        struct iovec iov[64];
        size_t bytes, off = 0;
        int n = net_resp_out_iov(o, iov, 64, &bytes);
        char *s = malloc(bytes + 1);

        for (int i = 0; i < n; i++) {
                memcpy(s + off, iov[i].iov_base, iov[i].iov_len);
                off += iov[i].iov_len;
        }
        s[off] = 0;
        *len = off;
        return s;
}

#define EXPECT_OUT(o, lit)                                                                   \
        do {                                                                                 \
                size_t len_;                                                                 \
                char *got_ = out_bytes(o, &len_);                                            \
                cr_expect(eq(sz, len_, sizeof(lit) - 1), "got %s", got_);                    \
                cr_expect(eq(int, memcmp(got_, lit, sizeof(lit) - 1 < len_ ? sizeof(lit) - 1 \
                                                                            : len_), 0),     \
                          "got %s", got_);                                                   \
                free(got_);                                                                  \
        } while (0)

Test(tbl_schema, key_write_typed_parts_resp2_and_resp3)
{
        const struct eng_catalog_table *t = table("/w", ENG_CATALOG_ORDERED, 0, "iuub", 1);
        struct net_resp_out o;
        uint8_t p[64];
        size_t n = pos_of(t, "-1 18446744073709551615 5 a\x02" "b", p);

        net_resp_out_init(&o, 0);
        cr_assert(eq(int, net_tbl_key_write(&o, t, p, n), 0));
        EXPECT_OUT(&o, "*4\r\n:-1\r\n$20\r\n18446744073709551615\r\n:5\r\n$3\r\na\0b\r\n");
        net_resp_out_fini(&o);
        n = pos_of(t, "NULL 9223372036854775808 NULL \\NULL", p);
        net_resp_out_init(&o, 0);
        net_resp_out_set_proto(&o, NET_RESP3);
        cr_assert(eq(int, net_tbl_key_write(&o, t, p, n), 0));
        /* A bulk string in RESP3 too: redis-cli 7.0 shows no big numbers. */
        EXPECT_OUT(&o, "*4\r\n_\r\n$19\r\n9223372036854775808\r\n_\r\n$4\r\nNULL\r\n");
        net_resp_out_fini(&o);
}

Test(tbl_schema, row_write_strips_the_hash)
{
        const struct eng_catalog_table *t = uub();
        struct net_resp_out o;
        uint8_t p[64];
        size_t n = pos_of(t, "42 0 NULL", p);

        net_resp_out_init(&o, 0);
        cr_assert(eq(int, net_tbl_row_write(&o, t, p, n, "v", 1), 0));
        EXPECT_OUT(&o, "*2\r\n*3\r\n:42\r\n:0\r\n$-1\r\n$1\r\nv\r\n");
        net_resp_out_fini(&o);
}

Test(tbl_schema, malformed_keys_write_nothing)
{
        const struct eng_catalog_table *t = ib(), *h = uub();
        struct net_resp_out o;
        uint8_t p[64];
        size_t n = pos_of(t, "1 a", p);

        net_resp_out_init(&o, 0);
        cr_expect(eq(int, net_tbl_key_write(&o, t, p, n - 1), -EINVAL));
        cr_expect(eq(int, net_tbl_key_write(&o, t, p, 9), -EINVAL), "one part of two");
        cr_expect(eq(int, net_tbl_row_write(&o, t, p, 0, "v", 1), -EINVAL));
        cr_expect(eq(int, net_tbl_key_write(&o, h, p, 8), -EINVAL), "a hash and no key");
        cr_expect(eq(sz, net_resp_out_pending_bytes(&o), 0));
        net_resp_out_fini(&o);
}

Test(tbl_schema, tablets_of_a_hashed_table)
{
        const struct eng_catalog_table *t = table("/hh", ENG_CATALOG_HASHED, 1, "u", 4);
        struct net_tbl_tablet_stats st = { 1000, 10, 7, 3, 700, 300 };
        struct net_resp_out o;
        char want[512];
        int len;

        net_resp_out_init(&o, 0);
        net_resp_out_set_proto(&o, NET_RESP3);
        cr_assert(eq(int, net_tbl_tablet_write(&o, t, 0, &st), 0));
        len = snprintf(want, sizeof(want),
                       "%%11\r\n$2\r\nid\r\n:%u\r\n$5\r\nshard\r\n:%u\r\n$5\r\nstart\r\n$4\r\n-inf\r\n"
                       "$3\r\nend\r\n*1\r\n$16\r\n4000000000000000\r\n$5\r\nbytes\r\n:1000\r\n"
                       "$4\r\nrows\r\n:10\r\n$13\r\nreads-per-sec\r\n:7\r\n"
                       "$14\r\nwrites-per-sec\r\n:3\r\n$18\r\nread-bytes-per-sec\r\n:700\r\n"
                       "$19\r\nwrite-bytes-per-sec\r\n:300\r\n$8\r\nhot-keys\r\n*0\r\n",
                       t->tablets[0].id,
                       t->tablets[0].shard);
        {
                size_t gl;
                char *got = out_bytes(&o, &gl);

                cr_expect(eq(sz, gl, (size_t)len));
                cr_expect(eq(str, got, want));
                free(got);
        }
        net_resp_out_fini(&o);
        net_resp_out_init(&o, 0);
        cr_assert(eq(int, net_tbl_tablet_write(&o, t, 3, NULL), 0));
        {
                size_t gl;
                char *got = out_bytes(&o, &gl);

                cr_expect(strstr(got, "$5\r\nstart\r\n*1\r\n$16\r\nc000000000000000\r\n$3\r\nend\r\n"
                                      "$4\r\n+inf\r\n") != NULL, "%s", got);
                cr_expect(strstr(got, "*22\r\n") == got, "RESP2 map: flat array");
                free(got);
        }
        cr_expect(eq(int, net_tbl_tablet_write(&o, t, 4, NULL), -EINVAL));
        net_resp_out_fini(&o);
}

Test(tbl_schema, boundaries_of_an_ordered_table)
{
        const struct eng_catalog_table *t = ib();
        struct net_resp_out o;
        uint8_t ik[64] = { 0, 0, 0, (uint8_t)t->id };
        uint8_t k[64];
        size_t kl;

        kl = enc(t, "-5 NULL", k);
        memcpy(ik + 4, k, 9);                   /* the first part only: a split point */
        net_resp_out_init(&o, 0);
        cr_assert(eq(int, net_tbl_boundary_write(&o, t, ik, 13, false), 0));
        cr_assert(eq(int, net_tbl_boundary_write(&o, t, NULL, 0, true), 0));
        cr_assert(eq(int, net_tbl_boundary_write(&o, t, ik, 4, false), 0), "the table's start");
        memcpy(ik + 4, k, kl);
        cr_assert(eq(int, net_tbl_boundary_write(&o, t, ik, 4 + kl, false), 0));
        EXPECT_OUT(&o, "*1\r\n:-5\r\n$4\r\n+inf\r\n$4\r\n-inf\r\n*2\r\n:-5\r\n$-1\r\n");
        ik[3]++;
        cr_expect(eq(int, net_tbl_boundary_write(&o, t, ik, 13, false), -EINVAL), "another table");
        net_resp_out_fini(&o);
}

Test(tbl_schema, describe_and_dir_list)
{
        struct eng_catalog *c0 = eng_catalog_new(2), *c1;
        const struct eng_catalog_table *t;
        struct net_tbl_create cr;
        struct net_resp_out o;
        struct eng_catalog_entry e[2] = { { "events", true, 5 }, { "sub", false, 0 } };
        size_t len;
        char *got;

        cr_assert(eq(int, create("/d KEY i64 bytes SPLIT 1 0 DEFAULT-TTL 60 PER-PARTITION-WRITES 100",
                                 &cr), 0), "%s", err);
        cr_assert(eq(int, eng_catalog_create_table(c0, &cr.spec, &c1, NULL, err, sizeof(err)), 0));
        cr_assert(eq(int, eng_catalog_lookup(c1, "/d", &t), 0));
        net_resp_out_init(&o, 0);
        net_resp_out_set_proto(&o, NET_RESP3);
        cr_assert(eq(int, net_tbl_describe_write(&o, t, NULL), 0));
        got = out_bytes(&o, &len);
        cr_expect(strstr(got, "%7\r\n$4\r\npath\r\n$2\r\n/d\r\n$2\r\nid\r\n:2\r\n$3\r\nkey\r\n*2\r\n"
                              "$3\r\ni64\r\n$5\r\nbytes\r\n$4\r\nmode\r\n$7\r\nordered\r\n"
                              "$11\r\nhash-prefix\r\n:0\r\n$7\r\noptions\r\n%10\r\n") == got, "%s", got);
        cr_expect(strstr(got, "$11\r\ndefault-ttl\r\n:60\r\n") != NULL);
        cr_expect(strstr(got, "$10\r\ncompaction\r\n$11\r\nsize-tiered\r\n"
                              "$19\r\nper-partition-reads\r\n:0\r\n"
                              "$20\r\nper-partition-writes\r\n:100\r\n$7\r\ntablets") != NULL, "%s", got);
        cr_expect(strstr(got, "$10\r\nsplit-size\r\n:2147483648\r\n") != NULL);
        cr_expect(strstr(got, "$7\r\ntablets\r\n*2\r\n%11\r\n") != NULL);
        cr_expect(strstr(got, "$3\r\nend\r\n*1\r\n:0\r\n") != NULL);
        free(got);
        net_resp_out_fini(&o);
        net_resp_out_init(&o, 0);
        cr_assert(eq(int, net_tbl_dir_list_write(&o, e, 2), 0));
        EXPECT_OUT(&o, "*4\r\n$6\r\nevents\r\n$5\r\ntable\r\n$3\r\nsub\r\n$9\r\ndirectory\r\n");
        net_resp_out_fini(&o);
        net_tbl_create_fini(&cr);
        eng_catalog_unref(c0);
        eng_catalog_unref(c1);
}
