/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table commands' arguments and replies (net/tbl_args.h): typed parts
 * at their edges (0, -1, INT64_MIN/MAX, UINT64_MAX, one past them, empty
 * bytes, 0x00 and 0xFF, NULL and the backslash rule), keys against a
 * schema, ROW.PUT / ROW.WRITE, range bounds checked by which keys fall
 * inside, the hashed-range rule, cursors (round trips, paging a model to
 * the end in both directions, corrupt ones). TABLE.CREATE, the options
 * and the replies: test_tbl_schema.c.
 */
#include "tests/net/tbl_helpers.h"

TestSuite(tbl_args, .timeout = 30, .fini = cats_free);

/* ---- typed parts ---- */

struct part_case {
        char text[48];
        enum eng_tuple_type type;
        int ret;
        enum eng_tuple_type got;        /* NULL or type */
        int64_t i;
        uint64_t u;
        char bytes[8];
        uint32_t bytes_len;
};

ParameterizedTestParameters(tbl_args, part_table)
{
        static struct part_case c[] = {
                { "0", ENG_TUPLE_I64, 0, ENG_TUPLE_I64, 0 },
                { "-1", ENG_TUPLE_I64, 0, ENG_TUPLE_I64, -1 },
                { "9223372036854775807", ENG_TUPLE_I64, 0, ENG_TUPLE_I64, INT64_MAX },
                { "-9223372036854775808", ENG_TUPLE_I64, 0, ENG_TUPLE_I64, INT64_MIN },
                { "9223372036854775808", ENG_TUPLE_I64, -EINVAL },
                { "-9223372036854775809", ENG_TUPLE_I64, -EINVAL },
                { "-0", ENG_TUPLE_I64, -EINVAL }, { "+1", ENG_TUPLE_I64, -EINVAL },
                { "01", ENG_TUPLE_I64, -EINVAL }, { " 1", ENG_TUPLE_I64, -EINVAL },
                { "", ENG_TUPLE_I64, -EINVAL }, { "null", ENG_TUPLE_I64, -EINVAL },
                { "\\NULL", ENG_TUPLE_I64, -EINVAL },
                { "NULL", ENG_TUPLE_I64, 0, ENG_TUPLE_NULL },
                { "0", ENG_TUPLE_U64, 0, ENG_TUPLE_U64, 0, 0 },
                { "18446744073709551615", ENG_TUPLE_U64, 0, ENG_TUPLE_U64, 0, UINT64_MAX },
                { "18446744073709551616", ENG_TUPLE_U64, -EINVAL },
                { "99999999999999999999", ENG_TUPLE_U64, -EINVAL },
                { "-1", ENG_TUPLE_U64, -EINVAL }, { "-0", ENG_TUPLE_U64, -EINVAL },
                { "+1", ENG_TUPLE_U64, -EINVAL }, { "007", ENG_TUPLE_U64, -EINVAL },
                { "NULL", ENG_TUPLE_U64, 0, ENG_TUPLE_NULL },
                { "", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "", 0 },
                { "NULL", ENG_TUPLE_BYTES, 0, ENG_TUPLE_NULL },
                { "\\NULL", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "NULL", 4 },
                { "\\\\NULL", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "\\NULL", 5 },
                { "\\\\\\NULL", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "\\\\NULL", 6 },
                { "null", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "null", 4 },
                { "\\null", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "\\null", 5 },
                { "x\\NULL", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "x\\NULL", 6 },
                { "\\NUL", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "\\NUL", 4 },
                { "NULL ", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "NULL ", 5 },
                { "\\", ENG_TUPLE_BYTES, 0, ENG_TUPLE_BYTES, 0, 0, "\\", 1 },
        };
        return cr_make_param_array(struct part_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct part_case *c, tbl_args, part_table)
{
        struct net_arg a = A(c->text);
        struct eng_tuple_part p = { .type = 99 };
        int r = net_tbl_part_parse(&a, c->type, "key part 1", &p, err, sizeof(err));

        cr_assert(eq(int, r, c->ret), "'%s' as %d: %s", c->text, c->type, err);
        if (r < 0) {
                cr_expect(eq(int, p.type, 99), "written on error");
                return;
        }
        cr_assert(eq(int, p.type, c->got), "'%s'", c->text);
        if (p.type == ENG_TUPLE_I64)
                cr_expect(eq(i64, p.v.i64, c->i));
        if (p.type == ENG_TUPLE_U64)
                cr_expect(eq(u64, p.v.u64, c->u));
        if (p.type == ENG_TUPLE_BYTES) {
                cr_assert(eq(u32, p.v.bytes.len, c->bytes_len), "'%s'", c->text);
                cr_expect(eq(int, memcmp(p.v.bytes.p, c->bytes, c->bytes_len), 0));
        }
}

Test(tbl_args, part_errors_name_the_part_and_its_type)
{
        struct eng_tuple_part p;
        struct net_arg a = A("abc");

        cr_assert(eq(int, net_tbl_part_parse(&a, ENG_TUPLE_I64, "key part 2", &p, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(str, err, "key part 2 must be an i64, got 'abc'"));
        a = A("-5");
        net_tbl_part_parse(&a, ENG_TUPLE_U64, "GE part 1", &p, err, sizeof(err));
        cr_expect(eq(str, err, "GE part 1 must be a u64, got '-5'"));
}

Test(tbl_args, bytes_part_keeps_zero_and_ff_bytes)
{
        struct eng_tuple_part p;
        struct net_arg a = { "\x00\xff\x00", 3 };

        cr_assert(eq(int, net_tbl_part_parse(&a, ENG_TUPLE_BYTES, "k", &p, err, sizeof(err)), 0));
        cr_expect(eq(u32, p.v.bytes.len, 3));
        cr_expect(eq(int, memcmp(p.v.bytes.p, "\x00\xff\x00", 3), 0));
}

/* ---- keys ---- */

Test(tbl_args, key_encodes_as_the_tuple)
{
        const struct eng_catalog_table *t = ib();
        struct eng_tuple_part want[2] = {
                { .type = ENG_TUPLE_I64, .v.i64 = -1 },
                { .type = ENG_TUPLE_BYTES, .v.bytes = { "a b", 3 } },
        };
        uint8_t got[64], exp[64];
        size_t gl = enc(t, "-1 a\x01" "b", got), el;

        eng_tuple_encode(want, 2, exp, sizeof(exp), &el);
        cr_assert(eq(sz, gl, el));
        cr_expect(eq(int, memcmp(got, exp, el), 0));
}

Test(tbl_args, key_count_type_and_size_errors)
{
        const struct eng_catalog_table *t = ib();
        struct net_arg argv[4];
        struct net_tbl_limits small = { 16, 100 };
        struct net_tbl_bounds b;
        uint8_t buf[64];
        size_t len = 77, n;

        n = words("1 a b", argv);
        cr_assert(eq(int, net_tbl_key_parse(t, argv, n, &LIM, buf, 64, &len, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(str, err, "table /ib has 2 key parts, got 3"));
        cr_expect(eq(sz, len, 77));
        n = words("x a", argv);
        net_tbl_key_parse(t, argv, n, &LIM, buf, 64, &len, err, sizeof(err));
        cr_expect(eq(str, err, "key part 1 must be an i64, got 'x'"));
        n = words("1 0123456789", argv);        /* 9 + 13 bytes */
        cr_expect(eq(int, net_tbl_key_parse(t, argv, n, &small, buf, 64, &len, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(str, err, "the key is 22 bytes encoded, the limit is 16 (max-key-bytes)"));
        cr_expect(eq(int, net_tbl_key_parse(t, argv, n, &LIM, buf, 21, &len, err, sizeof(err)),
                     -EINVAL), "cap counts too");
        cr_expect(eq(str, err, "the key is 22 bytes encoded, room for 21"));
        cr_expect(eq(int, net_tbl_key_parse(t, argv, n, &LIM, buf, 22, &len, err, sizeof(err)), 0));
        n = words("GE 2 1 0123456789", argv);
        cr_expect(eq(int, net_tbl_bounds_parse(t, argv, n, &small, &b, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "GE is 22 bytes encoded, the limit is 16 (max-key-bytes)"));
}

Test(tbl_args, raw_key_tables_are_refused)
{
        struct eng_catalog *c;
        const struct eng_catalog_table *t;
        struct net_arg a = A("k");
        struct net_tbl_bounds b;
        uint8_t buf[16];
        size_t len;

        cr_assert(eq(int, eng_catalog_initial(2, 2, &c), 0));
        cr_assert(eq(int, eng_catalog_lookup(c, "/redis/db0", &t), 0));
        cr_expect(eq(int, net_tbl_key_parse(t, &a, 1, &LIM, buf, 16, &len, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(str, err, "table /redis/db0 has raw keys (the Redis keyspace): use the Redis commands"));
        cr_expect(eq(int, net_tbl_bounds_parse(t, NULL, 0, &LIM, &b, err, sizeof(err)), -EINVAL));
        eng_catalog_unref(c);
}

/* ---- paths ---- */

Test(tbl_args, path_copy_and_under)
{
        char buf[ENG_CATALOG_MAX_PATH + 1];
        struct net_arg a = { "/a\0b", 4 };
        char *long_path = malloc(ENG_CATALOG_MAX_PATH + 2);

        cr_expect(eq(int, net_tbl_path(&a, buf, sizeof(buf), err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "path holds a NUL byte"));
        memset(long_path, 'a', ENG_CATALOG_MAX_PATH + 1);
        a = (struct net_arg){ long_path, ENG_CATALOG_MAX_PATH + 1 };
        cr_expect(eq(int, net_tbl_path(&a, buf, sizeof(buf), err, sizeof(err)), -EINVAL));
        a.len = ENG_CATALOG_MAX_PATH;
        cr_expect(eq(int, net_tbl_path(&a, buf, sizeof(buf), err, sizeof(err)), 0));
        a = A("/app/events");
        cr_expect(eq(int, net_tbl_path(&a, buf, sizeof(buf), err, sizeof(err)), 0));
        cr_expect(eq(str, buf, "/app/events"));
        cr_expect(net_tbl_path_is_under("/app/events", "/"));
        cr_expect(net_tbl_path_is_under("/app/events", "/app"));
        cr_expect(net_tbl_path_is_under("/app/x/events", "/app"));
        cr_expect(not(net_tbl_path_is_under("/apple/events", "/app")));
        cr_expect(not(net_tbl_path_is_under("/app", "/app")));
        free(long_path);
}

/* ---- row writes ---- */

Test(tbl_args, put_with_and_without_ttl)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_ops ops;
        struct net_arg argv[8];
        uint8_t k[64];
        size_t kl = enc(t, "7 x", k), n;

        n = words("7 x val", argv);
        cr_assert(eq(int, net_tbl_put_parse(t, argv, n, &LIM, &ops, err, sizeof(err)), 0), "%s", err);
        cr_assert(eq(u32, ops.n, 1));
        cr_expect(eq(int, ops.ops[0].kind, NET_TBL_OP_PUT));
        cr_expect(eq(u32, ops.ops[0].key_len, kl));
        cr_expect(eq(int, memcmp(ops.ops[0].key, k, kl), 0));
        cr_expect(eq(u32, ops.ops[0].value_len, 3));
        cr_expect(eq(int, memcmp(ops.ops[0].value, "val", 3), 0));
        cr_expect(eq(u64, ops.ops[0].ttl_ms, 0));
        net_tbl_ops_fini(&ops);
        n = words("7 x val ex 10", argv);
        cr_assert(eq(int, net_tbl_put_parse(t, argv, n, &LIM, &ops, err, sizeof(err)), 0));
        cr_expect(eq(u64, ops.ops[0].ttl_ms, 10000));
        net_tbl_ops_fini(&ops);
        n = words("7 x val PX 1", argv);
        cr_assert(eq(int, net_tbl_put_parse(t, argv, n, &LIM, &ops, err, sizeof(err)), 0));
        cr_expect(eq(u64, ops.ops[0].ttl_ms, 1));
        net_tbl_ops_fini(&ops);
        net_tbl_ops_fini(&ops);                 /* twice: zeroed */
        net_tbl_ops_fini(NULL);
}

Test(tbl_args, put_takes_the_tables_default_ttl)
{
        struct eng_catalog_table t = *ib();
        struct net_tbl_ops ops;
        struct net_arg argv[8];
        size_t n = words("7 x val", argv);

        t.options.default_ttl_ms = 60000;
        cr_assert(eq(int, net_tbl_put_parse(&t, argv, n, &LIM, &ops, err, sizeof(err)), 0));
        cr_expect(eq(u64, ops.ops[0].ttl_ms, 60000));
        net_tbl_ops_fini(&ops);
        n = words("7 x val EX 1", argv);
        cr_assert(eq(int, net_tbl_put_parse(&t, argv, n, &LIM, &ops, err, sizeof(err)), 0));
        cr_expect(eq(u64, ops.ops[0].ttl_ms, 1000), "EX wins");
        net_tbl_ops_fini(&ops);
}

struct put_err_case {
        char line[64];
        char msg[160];
};

ParameterizedTestParameters(tbl_args, put_errors)
{
        static struct put_err_case c[] = {
                { "7 x", "table /ib has 2 key parts, then a value: got 2 arguments" },
                { "7", "table /ib has 2 key parts, then a value: got 1 argument" },
                { "7 x y val", "expected EX seconds or PX milliseconds after the value, got 'val' (table /ib has 2 key parts)" },
                { "7 x val EX", "EX needs a time after it" },
                { "7 x val EX 0", "EX must be a positive integer (seconds)" },
                { "7 x val PX -1", "PX must be a positive integer (milliseconds)" },
                { "7 x val EX 1.5", "EX must be a positive integer (seconds)" },
                { "7 x val EX 4611686018427388", "EX 4611686018427388 seconds is too large" },
                { "7 x val PX 4611686018427387904", "PX 4611686018427387904 milliseconds is too large" },
                { "7 x val EX 1 PX 1", "expected EX seconds or PX milliseconds after the value, got 'PX' (table /ib has 2 key parts)" },
                { "7 x 12345678901", "value too long (max 10 bytes)" },
                { "z x val", "key part 1 must be an i64, got 'z'" },
        };
        return cr_make_param_array(struct put_err_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct put_err_case *c, tbl_args, put_errors)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_limits lim = { 2048, 10 };
        struct net_tbl_ops ops = { .n = 99 };
        struct net_arg argv[8];
        size_t n = words(c->line, argv);

        cr_assert(eq(int, net_tbl_put_parse(t, argv, n, &lim, &ops, err, sizeof(err)), -EINVAL),
                  "%s", c->line);
        cr_expect(eq(str, err, c->msg));
        cr_expect(eq(u32, ops.n, 99), "untouched on error");
}

Test(tbl_args, write_parses_every_op_in_order)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_ops ops;
        struct net_arg argv[32];
        uint8_t k[3][64];
        size_t kl[3] = { enc(t, "1 a", k[0]), enc(t, "2 NULL", k[1]), enc(t, "-3 \\NULL", k[2]) };
        size_t n = words("PUT 1 a v1 EX 5 del 2 NULL Put -3 \\NULL v3", argv);

        cr_assert(eq(int, net_tbl_write_parse(t, argv, n, &LIM, &ops, err, sizeof(err)), 0), "%s",
                  err);
        cr_assert(eq(u32, ops.n, 3));
        for (int i = 0; i < 3; i++) {
                cr_expect(eq(u32, ops.ops[i].key_len, kl[i]));
                cr_expect(eq(int, memcmp(ops.ops[i].key, k[i], kl[i]), 0), "op %d", i);
        }
        cr_expect(eq(int, ops.ops[0].kind, NET_TBL_OP_PUT));
        cr_expect(eq(u64, ops.ops[0].ttl_ms, 5000));
        cr_expect(eq(int, ops.ops[1].kind, NET_TBL_OP_DEL));
        cr_expect(eq(int, ops.ops[2].kind, NET_TBL_OP_PUT));
        cr_expect(eq(int, memcmp(ops.ops[2].value, "v3", 2), 0));
        cr_expect(eq(u64, ops.ops[2].ttl_ms, 0));
        net_tbl_ops_fini(&ops);
}

Test(tbl_args, write_with_many_ops_grows)
{
        const struct eng_catalog_table *t = ib();
        struct net_arg argv[3000];
        char nums[1000][8];
        struct net_tbl_ops ops;
        uint8_t k[64];

        for (int i = 0; i < 1000; i++) {
                snprintf(nums[i], sizeof(nums[i]), "%d", i);
                argv[3 * i] = A("DEL");
                argv[3 * i + 1] = A(nums[i]);
                argv[3 * i + 2] = A("key");
        }
        cr_assert(eq(int, net_tbl_write_parse(t, argv, 3000, &LIM, &ops, err, sizeof(err)), 0));
        cr_assert(eq(u32, ops.n, 1000));
        cr_expect(eq(int, memcmp(ops.ops[999].key, k, enc(t, "999 key", k)), 0));
        net_tbl_ops_fini(&ops);
}

struct write_err_case {
        char line[64];
        char msg[128];
};

ParameterizedTestParameters(tbl_args, write_errors)
{
        static struct write_err_case c[] = {
                { "", "ROW.WRITE needs at least one PUT or DEL" },
                { "FOO 1 a", "op 1 (?): expected PUT or DEL, got 'FOO'" },
                { "DEL 1 a DEL 2", "op 2 (DEL): table /ib has 2 key parts, got 1" },
                { "DEL 1 a PUT 2 b", "op 2 (PUT): table /ib has 2 key parts, then a value: got 2 arguments" },
                { "PUT 1 a v EX 0", "op 1 (PUT): EX must be a positive integer (seconds)" },
                { "DEL 1 a DEL x a", "op 2 (DEL): key part 1 must be an i64, got 'x'" },
                { "PUT 1 a v 7", "op 2 (?): expected PUT or DEL, got '7'" },
        };
        return cr_make_param_array(struct write_err_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct write_err_case *c, tbl_args, write_errors)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_ops ops;
        struct net_arg argv[16];
        size_t n = words(c->line, argv);

        cr_assert(eq(int, net_tbl_write_parse(t, argv, n, &LIM, &ops, err, sizeof(err)), -EINVAL),
                  "%s", c->line);
        cr_expect(eq(str, err, c->msg));
}

/* ---- bounds ---- */

/* Whether the key (words) of t lies in b. */
static bool inside(const struct eng_catalog_table *t, const struct net_tbl_bounds *b,
                   const char *key)
{
        uint8_t p[4096];
        size_t n = pos_of(t, key, p);

        return eng_key_cmp(p, n, b->start, b->start_len) >= 0 &&
               (b->end_open || eng_key_cmp(p, n, b->end, b->end_len) < 0);
}

static void bounds(const struct eng_catalog_table *t, const char *line, struct net_tbl_bounds *b)
{
        struct net_arg argv[16];
        size_t n = words(line, argv);

        cr_assert(eq(int, net_tbl_bounds_parse(t, argv, n, &LIM, b, err, sizeof(err)), 0), "%s: %s",
                  line, err);
}

struct in_case {
        char range[64];
        char key[48];
        bool in;
};

ParameterizedTestParameters(tbl_args, bounds_hold_exactly_their_keys)
{
        static struct in_case c[] = {
                { "", "-9223372036854775808 NULL", true },
                { "", "NULL NULL", true },
                { "GE 1 5", "5 NULL", true }, { "GE 1 5", "5 a", true },
                { "GE 1 5", "4 \xff\xff", false }, { "GE 1 5", "NULL a", false },
                { "GE 1 5", "9223372036854775807 a", true },
                { "GE 2 5 b", "5 b", true }, { "GE 2 5 b", "5 a", false },
                { "GE 2 5 b", "5 b\x02", true }, { "GE 2 5 b", "5 NULL", false },
                { "GT 1 5", "5 NULL", false }, { "GT 1 5", "5 \xff\xff\xff", false },
                { "GT 1 5", "6 NULL", true }, { "GT 1 5", "4 z", false },
                { "GT 2 5 b", "5 b", false }, { "GT 2 5 b", "5 b\x02", true },
                { "GT 2 5 b", "5 ba", true }, { "GT 2 5 NULL", "5 NULL", false },
                { "GT 2 5 NULL", "5 \x01", true },
                { "LE 1 5", "5 \xff\xff\xff", true }, { "LE 1 5", "5 NULL", true },
                { "LE 1 5", "6 NULL", false }, { "LE 1 5", "-1 a", true },
                { "LE 2 5 b", "5 b", true }, { "LE 2 5 b", "5 b\x02", false },
                { "LE 2 5 b", "5 a\xff", true },
                { "LT 1 5", "5 NULL", false }, { "LT 1 5", "4 \xff\xff", true },
                { "LT 2 5 b", "5 b", false }, { "LT 2 5 b", "5 a\xff", true },
                { "LT 2 5 b", "5 NULL", true },
                { "GE 1 NULL", "NULL NULL", true }, { "GE 1 NULL", "-9223372036854775808 x", true },
                { "GT 1 NULL", "NULL zzz", false },
                { "GT 1 NULL", "-9223372036854775808 NULL", true },
                { "LT 1 -9223372036854775808", "NULL zzz", true },
                { "LT 1 -9223372036854775808", "-9223372036854775808 NULL", false },
                { "LE 1 9223372036854775807", "9223372036854775807 \xff", true },
                { "GE 1 0 LT 1 0", "0 a", false }, { "GE 1 -1 LE 1 0", "-1 a", true },
                { "GE 1 -1 LE 1 0", "0 \xff", true }, { "GE 1 -1 LE 1 0", "1 NULL", false },
                { "LE 1 0 GE 1 -1", "-2 \xff", false },
                { "GE 2 0 \x02 LE 2 0 \x02\xff", "0 \x02", true },
                { "GE 2 0 \x02 LE 2 0 \x02\xff", "0 \x02\xff", true },
                { "GE 2 0 \x02 LE 2 0 \x02\xff", "0 \x02\xff\x02", false },
                { "GE 2 0 \x02 LE 2 0 \x02\xff", "0 ", false },
        };
        return cr_make_param_array(struct in_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct in_case *c, tbl_args, bounds_hold_exactly_their_keys)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_bounds b;
        char key[64];

        /* words() drops an empty word: "0 " stands for (0, "") here. */
        snprintf(key, sizeof(key), "%s", c->key);
        if (key[strlen(key) - 1] == ' ') {
                struct net_arg argv[2] = { A("0"), { "", 0 } };
                uint8_t k[64];
                size_t kl;

                bounds(t, c->range, &b);
                cr_assert(eq(int, net_tbl_key_parse(t, argv, 2, &LIM, k, 64, &kl, err, 64), 0));
                cr_expect(eq(int, eng_key_cmp(k, kl, b.start, b.start_len) >= 0 &&
                                  (b.end_open || eng_key_cmp(k, kl, b.end, b.end_len) < 0),
                             c->in));
                net_tbl_bounds_fini(&b);
                return;
        }
        bounds(t, c->range, &b);
        cr_expect(eq(int, inside(t, &b, c->key), c->in), "%s holds %s?", c->range, c->key);
        net_tbl_bounds_fini(&b);
}

Test(tbl_args, bounds_default_to_the_whole_table)
{
        struct net_tbl_bounds b;

        bounds(ib(), "", &b);
        cr_expect(eq(sz, b.start_len, 0));
        cr_expect(b.end_open);
        net_tbl_bounds_fini(&b);
        net_tbl_bounds_fini(&b);
        net_tbl_bounds_fini(NULL);
}

struct bound_err_case {
        char line[64];
        char msg[200];
};

ParameterizedTestParameters(tbl_args, bound_errors)
{
        static struct bound_err_case c[] = {
                { "GE 1 5 LE 1 4", "the range's start is after its end" },
                { "GT 1 5 LT 1 5", "the range's start is after its end" },
                { "GT 1 5 LE 2 5 a", "the range's start is after its end" },
                { "GE 3 1 a b", "GE takes a count of key parts (1 to 2), then the parts" },
                { "GE 0", "GE takes a count of key parts (1 to 2), then the parts" },
                { "LT", "LT takes a count of key parts (1 to 2), then the parts" },
                { "LE 2 5", "LE 2 needs 2 key parts, got 1" },
                { "GE 1 5 GT 1 6", "the range's start is given twice (GE or GT)" },
                { "LE 1 5 LE 1 6", "the range's end is given twice (LE or LT)" },
                { "GE 1 x", "GE part 1 must be an i64, got 'x'" },
                { "LT 2 1 a FOO", "unexpected 'FOO': expected GE, GT, LE or LT" },
                { "LIMIT 5", "unexpected 'LIMIT': expected GE, GT, LE or LT" },
                { "REV", "unexpected 'REV': expected GE, GT, LE or LT" },
        };
        return cr_make_param_array(struct bound_err_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct bound_err_case *c, tbl_args, bound_errors)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_bounds b = { .start_len = 99 };
        struct net_arg argv[16];
        size_t n = words(c->line, argv);

        cr_assert(eq(int, net_tbl_bounds_parse(t, argv, n, &LIM, &b, err, sizeof(err)), -EINVAL),
                  "%s", c->line);
        cr_expect(eq(str, err, c->msg));
        cr_expect(eq(sz, b.start_len, 99));
}

Test(tbl_args, equal_bounds_are_an_empty_range)
{
        struct net_tbl_bounds b;

        bounds(ib(), "GE 1 5 LT 1 5", &b);
        cr_expect(eq(int, eng_key_cmp(b.start, b.start_len, b.end, b.end_len), 0));
        net_tbl_bounds_fini(&b);
}

/* ---- hashed ranges ---- */

Test(tbl_args, hashed_range_is_one_hash_prefix)
{
        const struct eng_catalog_table *t = uub();
        struct net_tbl_bounds b;

        bounds(t, "GE 2 42 10 LE 2 42 20", &b);
        cr_expect(inside(t, &b, "42 10 NULL"));
        cr_expect(inside(t, &b, "42 15 x"));
        cr_expect(inside(t, &b, "42 20 \xff\xff"));
        cr_expect(not(inside(t, &b, "42 9 \xff")));
        cr_expect(not(inside(t, &b, "42 21 NULL")));
        cr_expect(not(inside(t, &b, "43 15 x")));
        cr_expect(not(inside(t, &b, "41 15 x")));
        cr_expect(not(inside(t, &b, "NULL 15 x")));
        net_tbl_bounds_fini(&b);
        bounds(t, "GE 1 42 LE 1 42", &b);
        cr_expect(inside(t, &b, "42 0 NULL"));
        cr_expect(inside(t, &b, "42 18446744073709551615 \xff"));
        cr_expect(not(inside(t, &b, "43 0 NULL")));
        net_tbl_bounds_fini(&b);
        bounds(t, "", &b);
        cr_expect(eq(sz, b.start_len, 0));
        cr_expect(b.end_open);
        cr_expect(inside(t, &b, "43 0 NULL"));
        net_tbl_bounds_fini(&b);
        bounds(t, "GE 1 NULL LT 2 NULL 5", &b);
        cr_expect(inside(t, &b, "NULL 4 x"));
        cr_expect(not(inside(t, &b, "NULL 5 NULL")));
        net_tbl_bounds_fini(&b);
}

ParameterizedTestParameters(tbl_args, hashed_range_errors)
{
        static struct bound_err_case c[] = {
                { "GE 1 42", "" }, { "LT 2 42 5", "" }, { "GE 1 42 LE 1 43", "" },
                { "GE 2 42 1 LT 2 41 1", "" },
        };
        return cr_make_param_array(struct bound_err_case, c, sizeof(c) / sizeof(c[0]));
}

ParameterizedTest(struct bound_err_case *c, tbl_args, hashed_range_errors)
{
        const struct eng_catalog_table *t = uub();
        struct net_tbl_bounds b;
        struct net_arg argv[16];
        size_t n = words(c->line, argv);

        cr_assert(eq(int, net_tbl_bounds_parse(t, argv, n, &LIM, &b, err, sizeof(err)), -EINVAL),
                  "%s", c->line);
        cr_expect(eq(str, err, "table /uub is hashed on its first 1 key part: give no bounds (the "
                               "whole table, in hash order) or both bounds with at least 1 part, "
                               "equal on them"));
}

Test(tbl_args, hashed_prefix_of_two_needs_two_parts_in_each_bound)
{
        const struct eng_catalog_table *t = table("/h2", ENG_CATALOG_HASHED, 2, "uub", 1);
        struct net_tbl_bounds b;
        struct net_arg argv[16];
        size_t n = words("GE 1 42 LE 1 42", argv);

        cr_assert(eq(int, net_tbl_bounds_parse(t, argv, n, &LIM, &b, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "table /h2 is hashed on its first 2 key parts: give no bounds (the "
                               "whole table, in hash order) or both bounds with at least 2 parts, "
                               "equal on them"));
        bounds(t, "GE 2 42 7 LE 3 42 7 a", &b);
        cr_expect(inside(t, &b, "42 7 NULL"));
        cr_expect(inside(t, &b, "42 7 a"));
        cr_expect(not(inside(t, &b, "42 7 b")));
        net_tbl_bounds_fini(&b);
}

/* ---- ROW.RANGE and cursors ---- */

static int range(const struct eng_catalog_table *t, const char *line, struct net_tbl_range *r)
{
        struct net_arg argv[16];
        size_t n = words(line, argv);

        return net_tbl_range_parse(t, argv, n, &LIM, r, err, sizeof(err));
}

Test(tbl_args, range_limit_and_rev)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_range r;

        cr_assert(eq(int, range(t, "", &r), 0));
        cr_expect(eq(u32, r.limit, NET_TBL_DEFAULT_LIMIT));
        cr_expect(not(r.rev));
        net_tbl_bounds_fini(&r.b);
        cr_assert(eq(int, range(t, "rev limit 100000 GE 1 3", &r), 0), "%s", err);
        cr_expect(eq(u32, r.limit, 100000));
        cr_expect(r.rev);
        cr_expect(inside(t, &r.b, "3 a"));
        cr_expect(not(inside(t, &r.b, "2 a")));
        net_tbl_bounds_fini(&r.b);
        cr_expect(eq(int, range(t, "LIMIT 0", &r), -EINVAL));
        cr_expect(eq(str, err, "LIMIT must be an integer from 1 to 100000"));
        cr_expect(eq(int, range(t, "LIMIT 100001", &r), -EINVAL));
        cr_expect(eq(int, range(t, "LIMIT", &r), -EINVAL));
        cr_expect(eq(int, range(t, "CURSOR", &r), -EINVAL));
        cr_expect(eq(str, err, "CURSOR needs a cursor after it (0 to start)"));
        cr_expect(eq(int, range(t, "LIMIT 5 LIMIT 6", &r), -EINVAL));
        cr_expect(eq(str, err, "LIMIT is given twice"));
        cr_expect(eq(int, range(t, "REV REV", &r), -EINVAL));
        cr_expect(eq(str, err, "REV is given twice"));
        cr_expect(eq(int, range(t, "CURSOR 0 CURSOR 0", &r), -EINVAL));
        cr_expect(eq(str, err, "CURSOR is given twice"));
        cr_expect(eq(int, range(t, "FOO", &r), -EINVAL));
        cr_expect(eq(str, err, "unexpected 'FOO': expected GE, GT, LE, LT, LIMIT, REV or CURSOR"));
        cr_expect(eq(int, range(t, "CURSOR 0 LIMIT 1", &r), 0));
        net_tbl_bounds_fini(&r.b);
}

Test(tbl_args, cursor_round_trips)
{
        const struct eng_catalog_table *t[2] = { ib(), uub() };
        const char *keys[2] = { "-1 a\x02\xff", "18446744073709551615 0 NULL" };

        for (int i = 0; i < 2; i++)
                for (int rev = 0; rev < 2; rev++) {
                        uint8_t p[256];
                        size_t n = pos_of(t[i], keys[i], p);
                        char text[600];
                        size_t tl = net_tbl_cursor_format(t[i]->id, p, n, rev, text,
                                                          sizeof(text));
                        struct net_arg a = { text, tl };
                        struct net_tbl_cursor c;

                        cr_assert(eq(sz, tl, 10 + 2 * n));
                        cr_expect(eq(chr, text[0], 'B'));
                        cr_expect(eq(chr, text[1], rev ? 'R' : 'F'));
                        cr_assert(eq(int, net_tbl_cursor_parse(t[i], &a, &LIM, &c, err, sizeof(err)),
                                     0), "%s: %s", text, err);
                        cr_expect(not(c.is_start));
                        cr_expect(eq(int, c.rev, rev));
                        cr_assert(eq(sz, c.len, n));
                        cr_expect(eq(int, memcmp(c.pos, p, n), 0));
                        net_tbl_cursor_fini(&c);
                        net_tbl_cursor_fini(&c);
                        cr_expect(eq(sz, net_tbl_cursor_format(t[i]->id, p, n, rev, text,
                                                               10 + 2 * n), 0),
                                  "no room for the NUL");
                }
}

Test(tbl_args, cursor_zero_is_the_start)
{
        struct net_arg a = A("0");
        struct net_tbl_cursor c;

        cr_assert(eq(int, net_tbl_cursor_parse(ib(), &a, &LIM, &c, err, sizeof(err)), 0));
        cr_expect(c.is_start);
        net_tbl_cursor_fini(&c);
}

/* A cursor for key (words) of t with a tweak applied to its text. */
static void cursor_text(const struct eng_catalog_table *t, const char *key, bool rev, char *text)
{
        uint8_t p[256];
        size_t n = pos_of(t, key, p);

        cr_assert(net_tbl_cursor_format(t->id, p, n, rev, text, 600) > 0);
}

Test(tbl_args, corrupt_cursors_are_refused)
{
        const struct eng_catalog_table *t = ib(), *h = uub();
        static const char *bad[] = {
                "", "1", "00", "A", "AF", "AF1", "AX10", "aF10", "BF10", "AF10zz", "AF1G",
                "AF" "10800000000000000",               /* odd digits */
                "AF" "1080000000000000",                /* an i64 cut short */
                "AF" "108000000000000001",              /* one part of two */
                "AF" "1080000000000000012001",          /* string without its end */
                "AF" "108000000000000001200001" "01",   /* three parts */
                "AF" "118000000000000001200001",        /* u64 where the schema has i64 */
                "AF" "10800000000000000120000105",      /* trailing garbage */
        };
        struct net_tbl_cursor c = { .len = 77 };
        char text[600];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct net_arg a = A(bad[i]);

                cr_expect(eq(int, net_tbl_cursor_parse(t, &a, &LIM, &c, err, sizeof(err)), -EINVAL),
                          "'%s'", bad[i]);
                cr_expect(eq(int, strncmp(err, "invalid cursor: ", 16), 0), "%s", err);
        }
        cr_expect(eq(sz, c.len, 77));
        /* Uppercase hex is not what we write. */
        cursor_text(t, "-1 a", false, text);    /* 7fff..: letters to change */
        for (char *p = text + 10; *p; p++)
                if (*p >= 'a' && *p <= 'f')
                        *p = (char)(*p - 'a' + 'A');
        cr_expect(eq(int, net_tbl_cursor_parse(t, &(struct net_arg){ text, strlen(text) }, &LIM, &c,
                                               err, sizeof(err)), -EINVAL));
        /* A hashed table's cursor with the hash changed. */
        cursor_text(h, "42 1 x", false, text);
        text[11] = text[11] == '0' ? '1' : '0';     /* in the hash, past the table id */
        cr_expect(eq(int, net_tbl_cursor_parse(h, &(struct net_arg){ text, strlen(text) }, &LIM, &c,
                                               err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "invalid cursor: not a row position of table /uub"));
        /* An ordered table's cursor on the hashed table, and back. */
        cursor_text(t, "1 a", false, text);
        cr_expect(eq(int, net_tbl_cursor_parse(h, &(struct net_arg){ text, strlen(text) }, &LIM, &c,
                                               err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "invalid cursor: it is another table's (give the table it was "
                               "made for)"));
}

Test(tbl_args, cursor_of_the_other_direction_or_range_is_refused)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_range r;
        char text[600], line[700];

        cursor_text(t, "5 a", false, text);
        snprintf(line, sizeof(line), "REV CURSOR %s", text);
        cr_expect(eq(int, range(t, line, &r), -EINVAL));
        cr_expect(eq(str, err, "invalid cursor: it continues a forward walk; give REV only if it was given"));
        cursor_text(t, "5 a", true, text);
        snprintf(line, sizeof(line), "CURSOR %s", text);
        cr_expect(eq(int, range(t, line, &r), -EINVAL));
        cr_expect(eq(str, err, "invalid cursor: it continues a reverse walk; give REV as when it was made"));
        snprintf(line, sizeof(line), "GE 1 6 REV CURSOR %s", text);
        cr_expect(eq(int, range(t, line, &r), -EINVAL));
        cr_expect(eq(str, err, "invalid cursor: outside the range (give the range as when it was made)"));
        snprintf(line, sizeof(line), "LT 2 5 a REV CURSOR %s", text);
        cr_expect(eq(int, range(t, line, &r), -EINVAL), "the end is exclusive");
        snprintf(line, sizeof(line), "LE 2 5 a REV CURSOR %s", text);
        cr_expect(eq(int, range(t, line, &r), 0), "%s", err);
        net_tbl_bounds_fini(&r.b);
}

/* The model engine: keys (positions) sorted; a page takes up to limit
 * rows in [start, end) in the walk's direction, and the cursor is the
 * next row's. Pages the whole range and checks every key inside comes
 * exactly once, in order. */
struct model_key {
        uint8_t p[64];
        size_t n;
};

static int model_cmp(const void *x, const void *y)
{
        const struct model_key *a = x, *b = y;

        return eng_key_cmp(a->p, a->n, b->p, b->n);
}

static bool model_in(const struct net_tbl_bounds *b, const struct model_key *k)
{
        return eng_key_cmp(k->p, k->n, b->start, b->start_len) >= 0 &&
               (b->end_open || eng_key_cmp(k->p, k->n, b->end, b->end_len) < 0);
}

static void page_all(const struct eng_catalog_table *t, struct model_key *keys, size_t nk,
                     const char *range_words, bool rev, uint32_t limit)
{
        char cursor[600] = "0", line[800];
        struct net_tbl_bounds whole;
        size_t want = 0, got = 0;
        long last = -1;

        qsort(keys, nk, sizeof(*keys), model_cmp);
        bounds(t, range_words, &whole);
        for (size_t i = 0; i < nk; i++)
                want += model_in(&whole, &keys[i]);
        for (int pages = 0; pages < 1000; pages++) {
                struct net_tbl_range r;
                uint32_t taken = 0;
                long next = -1;

                snprintf(line, sizeof(line), "%s LIMIT %u%s CURSOR %s", range_words, limit,
                         rev ? " REV" : "", cursor);
                cr_assert(eq(int, range(t, line, &r), 0), "%s: %s", line, err);
                for (size_t j = 0; j < nk; j++) {
                        size_t i = rev ? nk - 1 - j : j;

                        if (!model_in(&r.b, &keys[i]))
                                continue;
                        if (taken == limit) {
                                next = (long)i;
                                break;
                        }
                        cr_assert(model_in(&whole, &keys[i]));
                        if (last >= 0)
                                cr_assert(rev ? (long)i < last : (long)i > last, "order");
                        last = (long)i;
                        taken++;
                        got++;
                }
                net_tbl_bounds_fini(&r.b);
                if (next < 0)
                        break;
                cr_assert(net_tbl_cursor_format(t->id, keys[next].p, keys[next].n, rev, cursor,
                                                sizeof(cursor)) > 0);
        }
        cr_expect(eq(sz, got, want), "%s rev %d limit %u", range_words, rev, limit);
        net_tbl_bounds_fini(&whole);
}

static size_t model_keys(const struct eng_catalog_table *t, struct model_key *keys, bool hashed)
{
        const char *a[] = { "NULL", "0", "1", "42", hashed ? "18446744073709551615" : "-1",
                            hashed ? "7" : "-9223372036854775808" };
        static const char *b[] = { "NULL", "\\NULL", "x", "\xff", "\x02" };
        size_t n = 0;
        char line[96];

        for (size_t i = 0; i < 6; i++)
                for (size_t j = 0; j < 5; j++) {
                        if (hashed)
                                snprintf(line, sizeof(line), "%s %zu %s", a[i], j, b[j]);
                        else
                                snprintf(line, sizeof(line), "%s %s", a[i], b[j]);
                        keys[n].n = pos_of(t, line, keys[n].p);
                        n++;
                }
        return n;
}

Test(tbl_args, paging_returns_every_row_once_in_both_directions)
{
        const struct eng_catalog_table *t = ib();
        static const char *ranges[] = { "", "GE 1 0", "GT 1 0 LE 1 42", "LT 2 42 x",
                                        "GE 2 NULL \x02 LT 1 1" };
        struct model_key keys[30];
        size_t n = model_keys(t, keys, false);

        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
                for (uint32_t limit = 1; limit <= 7; limit += 3) {
                        page_all(t, keys, n, ranges[i], false, limit);
                        page_all(t, keys, n, ranges[i], true, limit);
                }
}

Test(tbl_args, paging_a_hashed_table_in_hash_order_and_within_a_prefix)
{
        const struct eng_catalog_table *t = uub();
        struct model_key keys[30];
        size_t n = model_keys(t, keys, true);

        for (uint32_t limit = 1; limit <= 7; limit += 2) {
                page_all(t, keys, n, "", false, limit);
                page_all(t, keys, n, "", true, limit);
                page_all(t, keys, n, "GE 1 42 LE 1 42", false, limit);
                page_all(t, keys, n, "GE 2 42 1 LT 2 42 4", true, limit);
        }
}

Test(tbl_args, seek_narrows_the_bounds)
{
        const struct eng_catalog_table *t = ib();
        struct net_tbl_bounds b;
        struct net_tbl_cursor c;
        uint8_t p[64];
        size_t n = pos_of(t, "5 m", p);

        bounds(t, "GE 1 1 LE 1 9", &b);
        c = (struct net_tbl_cursor){ .pos = p, .len = n };
        cr_assert(eq(int, net_tbl_bounds_seek(&b, &c, false, err, sizeof(err)), 0));
        cr_expect(inside(t, &b, "5 m"));
        cr_expect(not(inside(t, &b, "5 l")));
        cr_expect(inside(t, &b, "9 \xff"));
        cr_expect(not(inside(t, &b, "10 NULL")));
        net_tbl_bounds_fini(&b);
        bounds(t, "GE 1 1 LE 1 9", &b);
        c.rev = true;
        cr_assert(eq(int, net_tbl_bounds_seek(&b, &c, true, err, sizeof(err)), 0));
        cr_expect(inside(t, &b, "5 m"));
        cr_expect(not(inside(t, &b, "5 m\x02")));
        cr_expect(inside(t, &b, "1 NULL"));
        cr_expect(not(inside(t, &b, "0 \xff")));
        net_tbl_bounds_fini(&b);
}
