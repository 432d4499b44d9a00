/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The server's settings (net/config.h): defaults, sizes with every suffix
 * and overflow, each type's bad values named with what was expected,
 * config files (comments, quotes, errors with file and line), flags in
 * both forms over a file, run-time changes only where allowed, and the
 * values CONFIG GET shows (Redis names included).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>
#include <criterion/new/assert.h>

#include "net/config.h"
#include "tests/tmpdir.h"

static struct scree_config c;
static char err[512];

static void setup(void)
{
        cr_assert(eq(int, cfg_init(&c), 0));
        err[0] = 0;
}

static void teardown(void)
{
        cfg_fini(&c);
}

TestSuite(config, .init = setup, .fini = teardown);

static const char *get(const char *name)
{
        static char buf[256];

        cr_assert(eq(int, cfg_get(&c, name, buf, sizeof(buf)), 0), "%s", name);
        return buf;
}

Test(config, defaults)
{
        cr_expect(eq(u64, c.port, 6379));
        cr_expect(eq(str, c.bind, "127.0.0.1"));
        cr_expect(eq(str, c.dir, "./data"));
        cr_expect(eq(u64, c.sync, CFG_SYNC_BATCH));
        cr_expect(eq(u64, c.sync_period_ms, 10));
        cr_expect(eq(u64, c.max_key_bytes, 2048));
        cr_expect(eq(u64, c.max_value_bytes, 8u << 20));
        cr_expect(eq(u64, c.memory, UINT64_C(1) << 30));
        cr_expect(eq(str, c.requirepass, ""));
        cr_expect(eq(str, (char *)get("commitlog-sync"), "batch"));
        cr_expect(eq(str, (char *)get("appendfsync"), "always"));
        cr_expect(eq(str, (char *)get("save"), ""));
        cr_expect(eq(str, (char *)get("appendonly"), "yes"));
        cr_expect(eq(int, cfg_get(&c, "nope", (char[8]){ 0 }, 8), -ENOENT));
}

Test(config, sizes_take_the_usual_suffixes)
{
        static const struct {
                const char *s;
                uint64_t v;
        } ok[] = {
                { "0", 0 }, { "123", 123 }, { "5b", 5 }, { "1k", 1000 }, { "1kb", 1024 },
                { "1KiB", 1024 }, { "64MiB", 64u << 20 }, { "64mb", 64u << 20 }, { "64m", 64000000 },
                { "1g", 1000000000 }, { "1GB", 1u << 30 }, { "2tib", UINT64_C(2) << 40 },
                { "18446744073709551615", UINT64_MAX },
        };
        static const char *const bad[] = {
                "", "k", "-1", "+1", " 1", "1 ", "1.5g", "1x", "1kbb", "0x10",
                "18446744073709551616", "18446744074g", "99999999999tib",
        };
        uint64_t v;

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                cr_assert(eq(int, cfg_parse_size(ok[i].s, &v), 0), "%s", ok[i].s);
                cr_expect(eq(u64, v, ok[i].v), "%s", ok[i].s);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect(eq(int, cfg_parse_size(bad[i], &v), -EINVAL), "'%s'", bad[i]);
}

Test(config, bad_values_are_named_with_what_was_expected_and_change_nothing)
{
        cr_assert(eq(int, cfg_set(&c, "port", "0", false, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "invalid value '0' for 'port': expected a whole number from 1 to 65535"));
        cr_expect(eq(u64, c.port, 6379));
        cr_assert(eq(int, cfg_set(&c, "port", "65536", false, err, sizeof(err)), -EINVAL));
        cr_assert(eq(int, cfg_set(&c, "port", "12x", false, err, sizeof(err)), -EINVAL));
        cr_assert(eq(int, cfg_set(&c, "commitlog-sync", "always", false, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "invalid value 'always' for 'commitlog-sync': expected batch|periodic"));
        cr_assert(eq(int, cfg_set(&c, "memory", "1mb", false, err, sizeof(err)), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, "at least 16777216 bytes"), NULL)), "%s", err);
        cr_assert(eq(int, cfg_set(&c, "max-value-bytes", "17MiB", false, err, sizeof(err)), -EINVAL));
        cr_assert(eq(int, cfg_set(&c, "nosuch", "1", false, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "unknown setting 'nosuch'"));
        cr_assert(eq(int, cfg_set(&c, "appendonly", "no", false, err, sizeof(err)), -EINVAL));
        cr_expect(eq(u64, c.memory, UINT64_C(1) << 30));
        cr_expect(eq(u64, c.max_value_bytes, 8u << 20));
        cr_assert(eq(int, cfg_set(&c, "Commitlog-Sync", "PERIODIC", false, err, sizeof(err)), 0));
        cr_expect(eq(u64, c.sync, CFG_SYNC_PERIODIC));
        cr_expect(eq(str, (char *)get("appendfsync"), "everysec"));
}

Test(config, only_runtime_settings_change_while_serving)
{
        cr_assert(eq(int, cfg_set(&c, "requirepass", "s3cret", true, err, sizeof(err)), 0));
        cr_expect(eq(str, c.requirepass, "s3cret"));
        cr_assert(eq(int, cfg_set(&c, "maxclients", "10", true, err, sizeof(err)), 0));
        cr_assert(eq(int, cfg_set(&c, "port", "7000", true, err, sizeof(err)), -EINVAL));
        cr_expect(eq(str, err, "'port' cannot change while the server runs (restart with it)"));
        cr_expect(eq(u64, c.port, 6379));
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        cr_assert(not(eq(ptr, f, NULL)));
        fputs(text, f);
        fclose(f);
}

Test(config, files_and_flags)
{
        char dir[PATH_MAX], path[PATH_MAX + 16], arg_path[PATH_MAX + 64];

        tmpdir_make(dir, sizeof(dir), "config");
        snprintf(path, sizeof(path), "%s/scree.conf", dir);
        write_file(path, "# scree\n\n  port 7001\nmemory 2gb\t\nrequirepass \"two words\"\n"
                         "dir ''\ncommitlog-sync periodic\n");
        {
                char *argv[] = { "scree", path, "--port", "7002", "--max-key-bytes=1k", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 5, argv, err, sizeof(err)), 0), "%s", err);
        }
        cr_expect(eq(u64, c.port, 7002));               /* the flag wins */
        cr_expect(eq(u64, c.memory, UINT64_C(2) << 30));
        cr_expect(eq(str, c.requirepass, "two words"));
        cr_expect(eq(str, c.dir, ""));
        cr_expect(eq(u64, c.sync, CFG_SYNC_PERIODIC));
        cr_expect(eq(u64, c.max_key_bytes, 1000));
        {
                char *argv[] = { "scree", "--bind", "0.0.0.0", "--config", path, NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 5, argv, err, sizeof(err)), 0), "%s", err);
                cr_expect(eq(str, c.bind, "0.0.0.0"));
                cr_expect(eq(u64, c.port, 7001));
        }
        /* Errors name the file and the line, or the flag. */
        write_file(path, "port 7001\nport\n");
        cr_assert(eq(int, cfg_load_file(&c, path, err, sizeof(err)), -EINVAL));
        snprintf(arg_path, sizeof(arg_path), "%s:2: a name without a value", path);
        cr_expect(eq(str, err, arg_path));
        write_file(path, "requirepass \"open\n");
        cr_assert(eq(int, cfg_load_file(&c, path, err, sizeof(err)), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, ":1: an unbalanced quote"), NULL)), "%s", err);
        write_file(path, "bogus 1\n");
        cr_assert(eq(int, cfg_load_file(&c, path, err, sizeof(err)), -EINVAL));
        cr_expect(not(eq(ptr, strstr(err, ":1: unknown setting 'bogus'"), NULL)), "%s", err);
        snprintf(arg_path, sizeof(arg_path), "%s/none.conf", dir);
        cr_assert(eq(int, cfg_load_file(&c, arg_path, err, sizeof(err)), -ENOENT));
        {
                char *argv[] = { "scree", "--port", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 2, argv, err, sizeof(err)), -EINVAL));
                cr_expect(eq(str, err, "--port needs a value (see --help)"));
        }
        {
                char *argv[] = { "scree", "--porrt", "1", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 3, argv, err, sizeof(err)), -EINVAL));
                cr_expect(eq(str, err, "unknown flag '--porrt' (see --help)"));
        }
        {
                char *argv[] = { "scree", "--port", "1", "extra", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 4, argv, err, sizeof(err)), -EINVAL));
                cr_expect(eq(str, err, "unexpected argument 'extra' (see --help)"));
        }
        {
                char *argv[] = { "scree", "--port", "1", "-h", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 4, argv, err, sizeof(err)), 1));
        }
        tmpdir_remove(dir);
}

/* Issue 23: start-up's advice for a damaged commit log named a salvage
 * option the server did not have. It is `salvage`: a flag (alone or with a
 * value) and a config file line. */
Test(config, salvage_is_a_flag_and_a_file_setting)
{
        char dir[PATH_MAX], path[PATH_MAX + 16];

        cr_expect(eq(u64, c.salvage, 0), "off by default");
        {
                char *argv[] = { "scree", "--salvage", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 2, argv, err, sizeof(err)), 0), "%s", err);
                cr_expect(eq(u64, c.salvage, 1));
        }
        {
                char *argv[] = { "scree", "--salvage", "no", "--port", "7003", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 5, argv, err, sizeof(err)), 0), "%s", err);
                cr_expect(eq(u64, c.salvage, 0));
        }
        {
                char *argv[] = { "scree", "--salvage", "--port", "7004", NULL };

                cr_assert(eq(int, cfg_parse_args(&c, 4, argv, err, sizeof(err)), 0), "%s", err);
                cr_expect(eq(u64, c.salvage, 1));
                cr_expect(eq(u64, c.port, 7004));
        }
        tmpdir_make(dir, sizeof(dir), "config");
        snprintf(path, sizeof(path), "%s/scree.conf", dir);
        write_file(path, "salvage yes\n");
        c.salvage = 0;
        cr_assert(eq(int, cfg_load_file(&c, path, err, sizeof(err)), 0), "%s", err);
        cr_expect(eq(u64, c.salvage, 1));
        tmpdir_remove(dir);
}

Test(config, usage_lists_every_setting)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        cfg_usage(f);
        fclose(f);
        for (size_t i = 0; cfg_name(i); i++) {
                char buf[64];

                if (!strcmp(cfg_name(i), "save") || !strcmp(cfg_name(i), "appendonly") ||
                    !strcmp(cfg_name(i), "appendfsync") || !strcmp(cfg_name(i), "databases") ||
                    !strcmp(cfg_name(i), "maxmemory"))
                        continue;
                snprintf(buf, sizeof(buf), "--%s ", cfg_name(i));
                cr_expect(not(eq(ptr, strstr(text, buf), NULL)), "%s missing from --help", buf);
        }
        free(text);
}

Test(config, signed_settings_take_minus_one_and_refuse_below_their_minimum)
{
        cr_expect(eq(i64, c.slowlog_slower_than_us, 10000));
        cr_expect(eq(u64, c.slowlog_max_len, 128));
        cr_assert(eq(int, cfg_set(&c, "slowlog-log-slower-than", "-1", true, err, sizeof(err)), 0));
        cr_expect(eq(i64, c.slowlog_slower_than_us, -1));
        cr_expect(eq(str, (char *)get("slowlog-log-slower-than"), "-1"));
        cr_expect(eq(int, cfg_set(&c, "slowlog-log-slower-than", "-2", true, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(int, cfg_set(&c, "slowlog-log-slower-than", "--1", true, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(int, cfg_set(&c, "slowlog-log-slower-than", "x", true, err, sizeof(err)),
                     -EINVAL));
        cr_expect(eq(i64, c.slowlog_slower_than_us, -1));
        cr_assert(eq(int, cfg_set(&c, "slowlog-log-slower-than", "0", true, err, sizeof(err)), 0));
        cr_expect(eq(str, (char *)get("slowlog-log-slower-than"), "0"));
}

Test(config, maxmemory_clients_takes_a_size_or_a_percent_of_memory)
{
        static const char *const bad[] = { "0%", "101%", "%", "x%", "1.5%", "-1", "10 %",
                                           "9223372036854775808" };

        cr_expect(eq(str, (char *)get("maxmemory-clients"), "10%"));
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 1), (UINT64_C(1) << 30) / 10));
        /* A percent gives each shard at least the floor (a small --memory
         * must not cut off a client reading one big MGET reply). */
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 2), CFG_CLIENTS_SHARD_FLOOR));
        cr_assert(eq(int, cfg_set(&c, "maxmemory-clients", "64mb", true, err, sizeof(err)), 0));
        cr_expect(eq(str, (char *)get("maxmemory-clients"), "67108864"));
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 1), 64u << 20));
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 4), 16u << 20), "a size has no floor");
        cr_assert(eq(int, cfg_set(&c, "memory", "2GiB", false, err, sizeof(err)), 0));
        cr_assert(eq(int, cfg_set(&c, "maxmemory-clients", "100%", true, err, sizeof(err)), 0));
        cr_expect(eq(str, (char *)get("maxmemory-clients"), "100%"));
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 1), UINT64_C(2) << 30));
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 2), UINT64_C(1) << 30));
        cr_assert(eq(int, cfg_set(&c, "maxmemory-clients", "0", true, err, sizeof(err)), 0));
        cr_expect(eq(u64, cfg_clients_limit_bytes(&c, 2), 0));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cr_expect(eq(int, cfg_set(&c, "maxmemory-clients", bad[i], true, err, sizeof(err)),
                             -EINVAL), "%s", bad[i]);
                cr_expect(eq(u64, c.maxmemory_clients, 0), "%s changed it", bad[i]);
        }
        cr_expect(strstr(err, "percent of memory") != NULL, "%s", err);
}
