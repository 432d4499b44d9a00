/* SPDX-License-Identifier: Apache-2.0 */
/* The per-tablet metrics' pure parts (net/metrics_tablets.h): label
 * escaping, hot keys as text, the bound's share per shard, and the text of
 * a few snapshots over a test catalog. */
#include "tbl_helpers.h"

#include "net/metrics.h"
#include "net/metrics_tablets.h"

TestSuite(metrics_tablets, .fini = cats_free);

struct esc_case {
        const char *src;
        size_t len;
        const char *want;
};

/* Indices go through Criterion's parameters (as in test_metrics.c). */
static const struct esc_case esc_cases[] = {
        { "plain/key-1_x", 13, "plain/key-1_x" },
        { "a\"b", 3, "a\\\"b" },
        { "a\\b", 3, "a\\\\b" },
        { "a\nb", 3, "a\\nb" },
        { "\x01", 1, "\\\\x01" },
        { "\t\r\x7f", 3, "\\\\x09\\\\x0d\\\\x7f" },
        { "\xff\xc3\xa9", 3, "\\\\xff\\\\xc3\\\\xa9" },
        { "a\0b", 3, "a\\\\x00b" },
        { "", 0, "" },
        { "{}=, ", 5, "{}=, " },
};
#define N_ESC (sizeof(esc_cases) / sizeof(esc_cases[0]))

ParameterizedTestParameters(metrics_tablets, labels_escape_quotes_backslashes_newlines_and_bytes)
{
        static unsigned idx[N_ESC];

        for (unsigned i = 0; i < N_ESC; i++)
                idx[i] = i;
        return cr_make_param_array(unsigned, idx, N_ESC);
}

ParameterizedTest(unsigned *i, metrics_tablets, labels_escape_quotes_backslashes_newlines_and_bytes)
{
        const struct esc_case *c = &esc_cases[*i];
        char buf[64];

        cr_expect(eq(sz, net_metrics_label_escape(buf, sizeof(buf), c->src, c->len), c->len));
        cr_expect(eq(str, buf, (char *)c->want), "case %u", *i);
        /* Room for exactly the text and its NUL: all of it still fits. */
        cr_expect(eq(sz, net_metrics_label_escape(buf, strlen(c->want) + 1, c->src, c->len),
                     c->len));
}

Test(metrics_tablets, a_short_buffer_takes_whole_escapes_only)
{
        char buf[8];

        /* "ab" then "\\x01" (5) needs 7 + NUL: fits; a third byte does not. */
        cr_expect(eq(sz, net_metrics_label_escape(buf, 8, "ab\x01z", 4), 3));
        cr_expect(eq(str, buf, "ab\\\\x01"));
        cr_expect(eq(sz, net_metrics_label_escape(buf, 7, "ab\x01z", 4), 2), "no half escape");
        cr_expect(eq(str, buf, "ab"));
        cr_expect(eq(sz, net_metrics_label_escape(buf, 1, "ab", 2), 0));
        cr_expect(eq(str, buf, ""));
        cr_expect(eq(sz, net_metrics_label_escape(buf, 0, "ab", 2), 0), "size 0 writes nothing");
}

Test(metrics_tablets, each_shard_gets_an_even_share_of_the_bound)
{
        cr_expect(eq(u32, net_metrics_tablets_cap(1), NET_METRICS_TABLETS_MAX));
        cr_expect(eq(u32, net_metrics_tablets_cap(2), NET_METRICS_TABLETS_MAX / 2));
        cr_expect(le(u32, net_metrics_tablets_cap(3) * 3, NET_METRICS_TABLETS_MAX));
        cr_expect(eq(u32, net_metrics_tablets_cap(NET_METRICS_TABLETS_MAX * 2), 1), "at least 1");
}

/* A hot key of t: key (words, as enc) as the engine keeps it. */
static struct eng_tablet_hot hot_of(const struct eng_catalog_table *t, const char *line,
                                    uint64_t per_sec)
{
        struct eng_tablet_hot h = { .per_sec = per_sec };
        uint8_t k[4096], ik[4200];
        size_t len = enc(t, line, k);
        long il = eng_catalog_ikey_encode(t, k, len, ik);

        cr_assert(gt(long, il, 4));
        h.len = (uint32_t)il < ENG_HOT_KEY_BYTES ? (uint32_t)il : ENG_HOT_KEY_BYTES;
        h.cut = (size_t)il > ENG_HOT_KEY_BYTES;
        memcpy(h.key, ik, h.len);
        return h;
}

static char *text_of(const struct eng_catalog_table *t, const struct eng_tablet_hot *h)
{
        static char buf[512];
        size_t len = net_tbl_hot_key_text(t, h, buf, sizeof(buf) - 1);

        cr_assert(lt(sz, len, sizeof(buf)));
        buf[len] = 0;
        return buf;
}

Test(metrics_tablets, hot_keys_read_as_typed_after_the_table)
{
        const struct eng_catalog_table *o = ib(), *h = uub();
        struct eng_tablet_hot k;
        char small[4];

        k = hot_of(o, "-5 a\x01" "b", 1);
        cr_expect(eq(str, text_of(o, &k), "-5 a b"));
        k = hot_of(o, "7 NULL", 1);
        cr_expect(eq(str, text_of(o, &k), "7 NULL"), "a null part");
        k = hot_of(o, "7 \\NULL", 1);
        cr_expect(eq(str, text_of(o, &k), "7 \\NULL"), "the bytes NULL, escaped as typed");
        k = hot_of(h, "18446744073709551615 0 x\"y", 1);
        cr_expect(eq(str, text_of(h, &k), "18446744073709551615 0 x\"y"), "the hash left out");
        cr_expect(eq(sz, net_tbl_hot_key_text(h, &k, small, sizeof(small)), 26), "whole length");
        cr_expect(eq(int, memcmp(small, "1844", 4), 0));
        k.cut = true;                   /* cut short: its bytes after the hash */
        cr_expect(eq(sz, net_tbl_hot_key_text(h, &k, NULL, 0), k.len - 12));
}

static bool has(const char *text, const char *part)
{
        return strstr(text, part) != NULL;
}

static char *format(const struct net_metrics_snap *s, unsigned n)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        cr_assert(not(eq(ptr, f, NULL)));
        cr_assert(eq(int, net_metrics_format(f, s, n), 0));
        fclose(f);
        return text;
}

/* Shard i of 2 with the table o's tablet 7 (shard 0) and 8 (shard 1). */
static void snaps_make(struct net_metrics_snap s[2], const struct eng_catalog_table *o)
{
        for (unsigned i = 0; i < 2; i++) {
                cr_assert(eq(int, net_metrics_snap_init(&s[i], 4), 0));
                s[i].shard = i;
                s[i].engine_ready = true;
                s[i].tablets.cat = eng_catalog_ref(cats[n_cats - 1]);
                s[i].tablets.n_total = 10 + i;
                s[i].tablets.n = 1;
                s[i].tablets.table[0] = o;
                s[i].tablets.st[0] = (struct eng_tablet_stats){
                        .id = 7 + i, .bytes = 1000 * (i + 1), .rows = 10, .reads_ps = 5,
                        .writes_ps = 6, .read_bytes_ps = 50, .write_bytes_ps = 60 };
        }
}

#define X10 "xxxxxxxxxx"
/* A sample of table /ib's tablet id on shard sh. */
#define TB(name, id, sh, v) #name "{table=\"/ib\",tablet=\"" id "\",shard=\"" sh "\"} " #v "\n"

Test(metrics_tablets, the_text_labels_each_tablet_and_escapes_and_cuts_hot_keys)
{
        const struct eng_catalog_table *o = ib();
        struct net_metrics_snap s[2];
        char *text;

        snaps_make(s, o);
        s[1].tablets.n_omitted = 3;
        s[0].tablets.st[0].n_hot = 2;
        s[0].tablets.st[0].hot[0] = hot_of(o, "42 a\"b\\c", 900);
        s[0].tablets.st[0].hot[1] = hot_of(o, "43 " X10 X10 X10 X10 X10 X10 "xxxxxxxx", 8);
        text = format(s, 2);
        cr_expect(has(text, "# TYPE scree_tablets gauge\nscree_tablets{shard=\"0\"} 10\n"
                            "scree_tablets{shard=\"1\"} 11\n"));
        cr_expect(has(text, "scree_tablets_omitted{shard=\"1\"} 3\n"));
        cr_expect(has(text, "# TYPE scree_tablet_bytes gauge\n"
                            "scree_tablet_bytes{table=\"/ib\",tablet=\"7\",shard=\"0\"} 1000\n"
                            "scree_tablet_bytes{table=\"/ib\",tablet=\"8\",shard=\"1\"} 2000\n"));
        cr_expect(has(text, TB(scree_tablet_rows, "7", "0", 10)));
        cr_expect(has(text, TB(scree_tablet_reads_per_second, "8", "1", 5)));
        cr_expect(has(text, TB(scree_tablet_writes_per_second, "8", "1", 6)));
        cr_expect(has(text, TB(scree_tablet_read_bytes_per_second, "7", "0", 50)));
        cr_expect(has(text, TB(scree_tablet_write_bytes_per_second, "7", "0", 60)));
        cr_expect(has(text, "scree_tablet_hot_key_accesses_per_second{table=\"/ib\",tablet=\"7\","
                            "shard=\"0\",rank=\"1\",key=\"42 a\\\"b\\\\c\"} 900\n"));
        /* "43 " and 61 of the x's: 64 bytes, then "...". */
        cr_expect(has(text, ",rank=\"2\",key=\"43 " X10 X10 X10 X10 X10 X10 "x...\"} 8\n"));
        cr_expect(not(has(text, "rank=\"3\"")));
        cr_expect(not(has(text, "tablet=\"8\",shard=\"1\",rank")), "no hot keys: no series");
        free(text);
        for (unsigned i = 0; i < 2; i++)
                net_metrics_snap_fini(&s[i]);
}

Test(metrics_tablets, a_shard_whose_engine_is_not_open_reports_no_tablets)
{
        const struct eng_catalog_table *o = ib();
        struct net_metrics_snap s[2];
        char *text;

        snaps_make(s, o);
        s[1].engine_ready = false;
        text = format(s, 2);
        cr_expect(has(text, "scree_tablets{shard=\"0\"}"));
        cr_expect(not(has(text, "scree_tablets{shard=\"1\"}")));
        cr_expect(not(has(text, "shard=\"1\"} 2000")));
        cr_expect(has(text, "# TYPE scree_tablet_hot_key_accesses_per_second gauge\n"),
                  "every family has its head, samples or not");
        free(text);
        for (unsigned i = 0; i < 2; i++)
                net_metrics_snap_fini(&s[i]);
}
