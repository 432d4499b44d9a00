# SPDX-License-Identifier: Apache-2.0
"""INFO as Redis 7.0 has it (sections, selection, real figures), the
per-command and per-error statistics and CONFIG RESETSTAT, MEMORY USAGE,
OBJECT, LATENCY, and the tools that read them: redis-cli --stat and
--memkeys, and Prometheus's redis_exporter. On 2-shard servers, with
clients spread over both shards."""
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest
import redis

from server_util import BIN, WAIT_S, Server, free_port, wait_for

REDIS_DEFAULT = ["Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU",
                 "Modules", "Errorstats", "Cluster", "Keyspace"]


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def info_text(server, *sections):
    raw = server.raw()
    try:
        raw.cmd("INFO", *sections)
        t, text = raw.reply()
        assert t == b"$", text
        return text.decode()
    finally:
        raw.close()


def titles(text):
    return re.findall(r"^# (\w+)\r$", text, re.M)


def clients(server, n=8):
    """n connected clients: the kernel spreads them over both shards."""
    cs = [server.client() for _ in range(n)]
    for c in cs:
        c.ping()
    return cs


def test_section_selection_is_redis_7s(server, r):
    r.set("k", "v")
    default = titles(info_text(server))
    assert default == REDIS_DEFAULT + ["Scree"]
    assert titles(info_text(server, "default")) == default
    everything = titles(info_text(server, "all"))
    assert everything == REDIS_DEFAULT[:8] + ["Commandstats", "Errorstats", "Latencystats",
                                              "Cluster", "Keyspace", "Scree"]
    assert titles(info_text(server, "everything")) == everything
    assert titles(info_text(server, "cpu")) == ["CPU"]
    assert titles(info_text(server, "commandSTATS")) == ["Commandstats"]
    assert titles(info_text(server, "cpu", "memory", "cpu")) == ["Memory", "CPU"]
    assert titles(info_text(server, "cpu", "default")) == default
    assert titles(info_text(server, "cpu", "all")) == everything
    assert info_text(server, "nosuchsection") == ""
    text = info_text(server, "all")
    assert not text.endswith("\r\n\r\n") and "\r\n\r\n# Commandstats\r\n" in text
    assert "rejected_calls=" in text and "rejected_calls=" not in info_text(server)


def test_server_clients_replication_cpu_fields(server, r):
    cs = clients(server)
    try:
        info = r.info("all")
        assert info["process_id"] == server.proc.pid
        assert info["tcp_port"] == server.port
        assert info["executable"] == os.path.realpath(BIN)
        assert info["config_file"] == ""
        assert info["io_threads_active"] == 0
        assert len(info["run_id"]) == 40
        assert info["uptime_in_seconds"] >= 0
        assert info["connected_clients"] == len(cs) + 1
        assert info["blocked_clients"] == 0 and info["maxclients"] == 10000
        assert info["role"] == "master" and info["connected_slaves"] == 0
        assert info["master_repl_offset"] == 0
        assert info["used_cpu_user"] + info["used_cpu_sys"] > 0
        assert info["loading"] == 0 and info["async_loading"] == 0
        assert info["aof_last_write_status"] == "ok" and info["commitlog_sync"] == "batch"
        # a held flush per shard (2) may not have synced yet
        assert 0 <= info["commitlog_gathers"] <= info["commitlog_syncs"] + 2
        assert info["cluster_enabled"] == 0
    finally:
        for c in cs:
            c.close()


def test_config_file_is_named_by_its_absolute_path(tmp_path):
    conf = tmp_path / "scree.conf"
    conf.write_text("slowlog-max-len 77\n")
    s = Server(args=["--config", str(conf)]).start()
    try:
        info = s.client().info("server")
        assert info["config_file"] == str(conf.resolve())
    finally:
        s.close()


def test_memory_figures_are_the_processs(server, r):
    before = r.info("memory")
    r.mset({"m%d" % i: "x" * 4000 for i in range(2000)})       # 8 MB of values
    m = r.info("memory")
    with open("/proc/%d/status" % server.proc.pid) as f:
        rss_kib = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    assert m["used_memory"] > before["used_memory"] + 4_000_000
    assert m["used_memory_peak"] >= m["used_memory"]
    assert m["used_memory_rss"] > m["used_memory"] // 4
    # RSS read now and by INFO a moment apart: the same order of size.
    assert abs(m["used_memory_rss"] - rss_kib * 1024) < max(rss_kib * 1024 // 2, 64 << 20)
    assert m["used_memory_human"].endswith(("K", "M", "G"))
    assert m["maxmemory"] > 0 and m["maxmemory_policy"] == "noeviction"
    assert m["mem_fragmentation_ratio"] > 0
    assert m["mem_allocator"].startswith(("jemalloc", "libc"))


def test_net_bytes_count_what_clients_sent_and_received(server, r):
    s0 = r.info("stats")
    value = "v" * 200_000
    cs = clients(server, 4)
    try:
        for c in cs:
            c.set("big", value)
            assert c.get("big") == value.encode()
    finally:
        for c in cs:
            c.close()
    s1 = r.info("stats")
    assert s1["total_net_input_bytes"] - s0["total_net_input_bytes"] >= 4 * 200_000
    assert s1["total_net_output_bytes"] - s0["total_net_output_bytes"] >= 4 * 200_000
    assert s1["total_connections_received"] >= s0["total_connections_received"] + 4


def cmdstats(r):
    return r.info("commandstats")


def test_commandstats_and_errorstats_count_calls_failures_and_rejections(server, r):
    cs = clients(server, 6)
    try:
        r.config_resetstat()
        for c in cs:
            c.set("n", "notanumber")
            c.get("n")
            assert err(c.execute_command, "INCR", "n").startswith("value is not an integer")
            assert err(c.execute_command, "GET").startswith("wrong number of arguments")
            c.config_get("maxclients")
        assert err(r.execute_command, "NOSUCHCOMMAND").startswith("unknown command")
        st = cmdstats(r)
        assert st["cmdstat_set"]["calls"] == 6 and st["cmdstat_set"]["failed_calls"] == 0
        assert "cmdstat_ping" not in st     # the pings came before the reset
        assert st["cmdstat_get"]["calls"] == 6 and st["cmdstat_get"]["rejected_calls"] == 6
        assert st["cmdstat_incr"]["calls"] == 6 and st["cmdstat_incr"]["failed_calls"] == 6
        assert st["cmdstat_config|get"]["calls"] == 6
        assert st["cmdstat_config|resetstat"]["calls"] == 1
        assert st["cmdstat_set"]["usec"] > 0
        assert st["cmdstat_set"]["usec_per_call"] == pytest.approx(
            st["cmdstat_set"]["usec"] / 6, abs=0.2)
        assert "cmdstat_nosuchcommand" not in st
        errs = info_text(server, "errorstats")
        assert errs == "# Errorstats\r\nerrorstat_ERR:count=%d\r\n" % (6 + 6 + 1)
        assert r.info("stats")["total_error_replies"] == 13
        lat = r.info("latencystats")
        assert set(lat["latency_percentiles_usec_set"]) == {"p50", "p99", "p99.9"}
    finally:
        for c in cs:
            c.close()


def test_config_resetstat_zeroes_every_shard(server, r):
    cs = clients(server, 8)
    try:
        for i, c in enumerate(cs):
            c.set("k%d" % i, "v")
            c.get("k%d" % i)
            c.get("missing")
            err(c.incr, "k%d" % i)
        assert r.info("stats")["keyspace_hits"] >= 8
        assert r.config_resetstat() is True
        st = r.info("stats")
        assert st["keyspace_hits"] == 0 and st["keyspace_misses"] == 0
        assert st["total_error_replies"] == 0 and st["total_connections_received"] == 0
        assert st["total_commands_processed"] <= 2      # the RESETSTAT and this INFO
        assert set(cmdstats(r)) == {"cmdstat_config|resetstat", "cmdstat_info"}
        assert r.info("errorstats") == {}
    finally:
        for c in cs:
            c.close()


def test_keyspace_counts_keys_and_ttls(server, r):
    r.mset({"a%d" % i: "1" for i in range(50)})
    for i in range(10):
        r.expire("a%d" % i, 1000)
    assert r.info("keyspace") == {"db0": {"keys": 50, "expires": 10, "avg_ttl": 0}}
    assert r.info()["db0"]["keys"] == 50
    shards = r.info("scree")
    assert sum(v["keys"] for k, v in shards.items() if k.startswith("shard")) == 50
    # The other sections do not walk the keys.
    assert "db0" not in r.info("stats") and "keys" not in r.info("memory")


def test_memory_usage_is_key_value_and_entry_overhead(server, r):
    r.set("usage-key", "x" * 1000)
    assert r.memory_usage("usage-key") == len("usage-key") + 1000 + 96
    assert r.execute_command("MEMORY", "USAGE", "usage-key", "SAMPLES", "0") == 1105
    assert r.memory_usage("nosuch") is None
    assert err(r.execute_command, "MEMORY", "USAGE", "usage-key", "SAMPLES", "x").startswith(
        "value is not an integer")
    assert err(r.execute_command, "MEMORY", "USAGE", "usage-key", "BOGUS") == "syntax error"
    assert err(r.execute_command, "MEMORY", "USAGE").startswith(
        "wrong number of arguments for 'memory|usage'")
    stats = r.memory_stats()
    assert stats["total.allocated"] > 0 and stats["peak.allocated"] >= stats["total.allocated"]
    assert len(r.execute_command("MEMORY", "DOCTOR")) > 0
    assert b"jemalloc" in r.execute_command("MEMORY", "MALLOC-STATS") or \
        b"without jemalloc" in r.execute_command("MEMORY", "MALLOC-STATS")
    assert r.execute_command("MEMORY", "PURGE") in (b"OK", True)


def test_object_encoding_refcount_and_what_scree_does_not_track(server, r):
    r.mset({"int": "12345", "neg": "-7", "zero": "0", "lead": "007", "short": "hello",
            "edge": "e" * 44, "long": "l" * 45, "huge": "9" * 20})
    enc = {k: r.object("encoding", k) for k in
           ["int", "neg", "zero", "lead", "short", "edge", "long", "huge"]}
    assert enc == {"int": b"int", "neg": b"int", "zero": b"int", "lead": b"embstr",
                   "short": b"embstr", "edge": b"embstr", "long": b"raw", "huge": b"embstr"}
    assert r.object("refcount", "int") == 1
    assert r.object("encoding", "nosuch") is None
    assert r.object("freq", "nosuch") is None
    assert err(r.object, "freq", "int").startswith("An LFU maxmemory policy is not selected")
    assert "idle time not tracked" in err(r.object, "idletime", "int")
    assert err(r.execute_command, "OBJECT", "BOGUS", "int") == \
        "unknown subcommand 'BOGUS'. Try OBJECT HELP."
    assert err(r.execute_command, "OBJECT", "ENCODING").startswith(
        "wrong number of arguments for 'object|encoding'")
    raw = server.raw()
    raw.cmd("OBJECT", "HELP")
    t, lines = raw.reply()
    raw.close()
    assert t == b"*" and any(b"ENCODING" in line for _, line in lines)


def test_latency_records_slow_commands_per_redis_shapes(server, r):
    # A command event is one SLOWLOG records (here: all) of at least 1 ms:
    # 4 MB values take that long to copy and log, on any machine.
    r.config_set("slowlog-log-slower-than", 0)
    r.execute_command("LATENCY", "RESET")
    big = "b" * (4 << 20)

    def event():
        r.set("big", big)
        return r.execute_command("LATENCY", "LATEST")

    latest = wait_for(event, "a command latency event")
    r.config_set("slowlog-log-slower-than", -1)        # no more command events
    name, when, ms, top = [x for x in latest if x[0] == b"command"][0]
    assert abs(when - time.time()) < 120 and 1 <= ms <= top
    hist = r.execute_command("LATENCY", "HISTORY", "command")
    assert hist and all(len(x) == 2 and x[1] >= 1 for x in hist)
    assert hist[-1][0] >= when and max(x[1] for x in hist) <= top
    assert r.execute_command("LATENCY", "HISTORY", "nosuch") == []
    assert b"command" in r.execute_command("LATENCY", "DOCTOR")
    assert r.execute_command("LATENCY", "RESET", "nosuch") == 0
    # 1, or 2 if a loop stall (a loaded machine) was recorded too.
    assert r.execute_command("LATENCY", "RESET") in (1, 2)
    assert b"command" not in str(r.execute_command("LATENCY", "LATEST")).encode()
    h = r.execute_command("LATENCY", "HISTOGRAM", "set", "nosuch")
    assert h[0] == b"set" and h[1][0] == b"calls" and h[1][1] >= 1
    cum = h[1][3][1::2]
    assert cum == sorted(cum) and cum[-1] == h[1][1]
    assert err(r.execute_command, "LATENCY", "HELP", "x").startswith(
        "wrong number of arguments for 'latency|help'")
    assert err(r.execute_command, "LATENCY", "BOGUS").startswith("unknown subcommand 'BOGUS'")


def read_stat_rows(proc, n):
    rows = []
    while len(rows) < n:
        line = proc.stdout.readline()
        assert line, "redis-cli --stat ended"
        if re.match(r"^\d+\s", line):
            rows.append(line.split())
    return rows


def test_redis_cli_stat_shows_real_figures(server, r):
    r.mset({"s%d" % i: "v" for i in range(37)})
    proc = subprocess.Popen(["stdbuf", "-oL", "redis-cli", "-p", str(server.port), "--stat",
                             "-i", "0.2"], stdout=subprocess.PIPE, text=True)
    try:
        rows = read_stat_rows(proc, 3)
    finally:
        proc.kill()
        proc.wait()
    keys, mem, nclients, blocked, requests = rows[-1][:5]
    assert keys == "37" and blocked == "0" and int(nclients) >= 2
    assert re.match(r"^[\d.]+[KMG]$", mem) and float(mem[:-1]) > 0
    assert int(rows[-1][4]) > int(rows[0][4])      # requests: its own INFOs count


def test_redis_cli_memkeys_uses_memory_usage(server, r):
    r.mset({"small": "x", "biggest": "y" * 5000})
    out = subprocess.run(["redis-cli", "-p", str(server.port), "--memkeys"],
                         capture_output=True, text=True, timeout=WAIT_S)
    assert out.returncode == 0, out
    assert "Biggest string found '\"biggest\"' has %d bytes" % (7 + 5000 + 96) in out.stdout, \
        out.stdout
    assert "2 strings with %d bytes" % (5 + 1 + 96 + 7 + 5000 + 96) in out.stdout, out.stdout


EXPORTER = shutil.which("prometheus-redis-exporter")


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as resp:
        return resp.read().decode()


def metric(text, name, labels=""):
    m = re.search(r"^%s%s ([0-9.e+-]+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


@pytest.mark.skipif(EXPORTER is None,
                    reason="needs prometheus-redis-exporter (scripts/lib.sh TEST_PACKAGES)")
def test_redis_exporter_reports_real_figures(server, r):
    cs = clients(server, 3)
    r.mset({"e%d" % i: "v" for i in range(25)})
    port = free_port()
    proc = subprocess.Popen([EXPORTER, "-redis.addr", "redis://127.0.0.1:%d" % server.port,
                             "-web.listen-address", "127.0.0.1:%d" % port],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def up():
            try:
                return scrape(port)
            except OSError:
                assert proc.poll() is None, "redis_exporter exited"
                return None

        text = wait_for(up, "redis_exporter's /metrics")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log = proc.stderr.read()
        for c in cs:
            c.close()
    assert metric(text, "redis_up") == 1
    assert metric(text, "redis_connected_clients") >= len(cs) + 2     # r and the exporter
    assert metric(text, "redis_commands_processed_total") >= len(cs) + 1
    assert metric(text, "redis_db_keys", '{db="db0"}') == 25
    assert metric(text, "redis_memory_used_bytes") > 0
    assert metric(text, "redis_commands_total", '{cmd="mset"}') == 1
    assert 'role="master"' in text
    assert "unknown command" not in log, log
