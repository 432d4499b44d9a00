# SPDX-License-Identifier: Apache-2.0
"""CLIENT LIST / INFO / KILL, the idle --timeout, SLOWLOG and INFO's
stats and keyspace fields, on a 2-shard server."""
import time

import pytest
import redis

from server_util import Server

LIST_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
               "multi", "qbuf", "qbuf-free", "obl", "oll", "omem", "events", "cmd", "user",
               "resp"]


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def parse_line(line):
    out = {}
    for part in line.split(" "):
        k, _, v = part.partition("=")
        out[k] = v
    return out


def client_list(r, *args):
    text = r.execute_command("CLIENT", "LIST", *args).decode()
    assert text.endswith("\n") or text == ""
    return [parse_line(line) for line in text.splitlines()]


def test_client_list_and_info(server, r):
    others = [server.client() for _ in range(5)]
    for i, c in enumerate(others):
        c.client_setname(f"c{i}")
    me = r.client_id()
    rows = client_list(r)
    assert len(rows) == 6
    for row in rows:
        assert list(row)[:len(LIST_FIELDS)] != [] and all(f in row for f in LIST_FIELDS)
        assert row["flags"] == "N" and row["db"] == "0" and row["resp"] == "2"
        assert row["laddr"] == f"127.0.0.1:{server.port}"
        assert row["addr"].startswith("127.0.0.1:")
    assert sorted(row["name"] for row in rows) == ["", "c0", "c1", "c2", "c3", "c4"]
    mine = [row for row in rows if int(row["id"]) == me][0]
    assert mine["cmd"] == "client|list"
    assert [row["cmd"] for row in rows if row["name"] == "c0"] == ["client|setname"]
    assert len({row["id"] for row in rows}) == 6
    info = parse_line(r.execute_command("CLIENT", "INFO").decode().strip())
    assert int(info["id"]) == me and info["cmd"] == "client|info"
    assert info["addr"] == mine["addr"]
    ids = [str(others[0].client_id()), str(me)]
    assert sorted(row["id"] for row in client_list(r, "ID", *ids)) == sorted(ids)
    assert len(client_list(r, "TYPE", "normal")) == 6
    assert client_list(r, "TYPE", "pubsub") == []
    assert err(r.execute_command, "CLIENT", "LIST", "TYPE", "bogus").startswith(
        "Unknown client type")
    assert err(r.execute_command, "CLIENT", "LIST", "ID", "x") == "Invalid client ID"
    assert err(r.execute_command, "CLIENT", "LIST", "BOGUS") == "syntax error"
    for c in others:
        c.close()


def addr_of(r, cid):
    return [row["addr"] for row in client_list(r) if int(row["id"]) == cid][0]


def raw_id(raw):
    raw.cmd("CLIENT", "ID")
    t, v = raw.reply()
    assert t == b":"
    return int(v)


def test_client_kill_by_id_and_addr(server, r):
    victims = [server.raw() for _ in range(4)]
    ids = [raw_id(v) for v in victims]
    assert r.execute_command("CLIENT", "KILL", "ID", ids[0]) == 1
    assert victims[0].is_closed()
    assert r.execute_command("CLIENT", "KILL", "ADDR", addr_of(r, ids[1])) == 1
    assert victims[1].is_closed()
    assert r.execute_command("CLIENT", "KILL", addr_of(r, ids[2])) == b"OK"
    assert victims[2].is_closed()
    # The survivor still works; a killed client's next command fails.
    victims[3].cmd("PING")
    assert victims[3].reply() == (b"+", b"PONG")
    with pytest.raises((ConnectionError, OSError)):
        victims[0].cmd("PING")
        victims[0].reply()
    assert r.execute_command("CLIENT", "KILL", "ID", 999999) == 0
    assert err(r.execute_command, "CLIENT", "KILL", "1.2.3.4:5") == "No such client"
    assert err(r.execute_command, "CLIENT", "KILL", "ID", "x") == \
        "client-id should be greater than 0"
    assert err(r.execute_command, "CLIENT", "KILL", "ID", 1, "BOGUS", 1) == "syntax error"
    assert err(r.execute_command, "CLIENT", "KILL", "ID", 1, "ADDR") == "syntax error"
    assert err(r.execute_command, "CLIENT", "KILL", "ID") == "No such client"  # old form
    # SKIPME yes by default: killing by my own id spares me.
    me = r.client_id()
    assert r.execute_command("CLIENT", "KILL", "ID", me) == 0
    assert r.ping()
    assert len(client_list(r)) == 2
    victims[3].close()


def test_client_kill_self_replies_first(server):
    raw = server.raw()
    raw.cmd("CLIENT", "INFO")
    addr = parse_line(raw.reply()[1].decode().strip())["addr"]
    raw.cmd("CLIENT", "KILL", addr)
    assert raw.reply() == (b"+", b"OK")
    assert raw.is_closed()


def test_idle_timeout_closes_idle_clients():
    s = Server(args=["--timeout", "1"]).start()
    try:
        idle = s.raw()
        idle.cmd("PING")
        assert idle.reply() == (b"+", b"PONG")
        assert idle.is_closed()
        r = s.client()
        assert r.config_get("timeout") == {"timeout": "1"}
        r.config_set("timeout", 0)
        kept = s.raw()
        kept.cmd("PING")
        assert kept.reply() == (b"+", b"PONG")
        assert not kept.is_closed(timeout=3)
        kept.cmd("PING")
        assert kept.reply() == (b"+", b"PONG")
    finally:
        s.close()


def test_slowlog_get_on_empty_logs(r):
    # Regression: merging zero entries passed NULL to qsort (UBSan).
    # Logging off and the logs reset first: on a loaded machine a command
    # can take 10 ms and land in the log (this test was flaky that way).
    r.config_set("slowlog-log-slower-than", -1)
    try:
        r.slowlog_reset()
        assert r.execute_command("SLOWLOG", "GET") == []
        assert r.execute_command("SLOWLOG", "GET", 0) == []
        assert r.slowlog_len() == 0
    finally:
        r.config_set("slowlog-log-slower-than", 10000)


def test_slowlog_records_resets_and_truncates(server, r):
    assert r.config_get("slowlog-log-slower-than") == {"slowlog-log-slower-than": "10000"}
    assert r.config_get("slowlog-max-len") == {"slowlog-max-len": "128"}
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    clients = [server.client() for _ in range(4)]
    for i, c in enumerate(clients):
        c.client_setname(f"n{i}")
        c.set(f"k{i}", "v")
    r.execute_command("SET", "long", "x" * 200)
    r.execute_command("MSET", *[f"a{i}" for i in range(50)])
    assert r.slowlog_len() >= 10
    entries = r.execute_command("SLOWLOG", "GET", -1)
    ids = [e[0] for e in entries]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)
    for e in entries:
        assert len(e) == 6 and e[1] > 1000000000 and e[2] >= 0
        assert e[4].startswith(b"127.0.0.1:")
    by_cmd = {tuple(e[3][:2]): e for e in entries}
    mset = [e for e in entries if e[3][0] == b"MSET"][0]
    assert len(mset[3]) == 32 and mset[3][-1] == b"... (20 more arguments)"
    assert mset[3][1] == b"a0"
    long = [e for e in entries if e[3][:2] == [b"SET", b"long"]][0]
    assert long[3][2] == b"x" * 128 + b"... (72 more bytes)"
    named = [e for e in entries if e[3][0] == b"SET" and e[5].startswith(b"n")]
    assert sorted(e[5] for e in named) == [b"n0", b"n1", b"n2", b"n3"]
    assert (b"SLOWLOG", b"RESET") in by_cmd
    assert len(r.execute_command("SLOWLOG", "GET", 2)) == 2
    assert len(r.execute_command("SLOWLOG", "GET")) == 10
    assert r.execute_command("SLOWLOG", "GET", 0) == []
    r.slowlog_reset()
    assert r.slowlog_len() <= 1     # the RESET itself is recorded once it ends
    r.config_set("slowlog-log-slower-than", -1)
    r.slowlog_reset()
    r.ping()
    assert r.slowlog_len() == 0
    r.config_set("slowlog-log-slower-than", 0)
    r.config_set("slowlog-max-len", 3)
    for _ in range(10):
        r.ping()
    assert r.slowlog_len() <= 3 * 2
    assert err(r.execute_command, "SLOWLOG", "GET", -2) == \
        "count should be greater than or equal to -1"
    assert err(r.execute_command, "SLOWLOG", "BOGUS").startswith("unknown subcommand")
    assert err(r.execute_command, "CONFIG", "SET", "slowlog-log-slower-than", "-2").startswith(
        "CONFIG SET failed")
    r.config_set("slowlog-log-slower-than", 10000)
    for c in clients:
        c.close()


def test_info_stats_and_expires(r):
    r.set("a", "1")
    r.set("b", "1", ex=100)
    r.set("c", "1", px=100000)
    r.get("a")
    r.get("a")
    r.get("missing")
    ks = r.info("keyspace")["db0"]
    assert ks["keys"] == 3 and ks["expires"] == 2
    st = r.info("stats")
    assert st["keyspace_hits"] >= 2 and st["keyspace_misses"] >= 1
    assert st["total_commands_processed"] >= 6
    assert "instantaneous_ops_per_sec" in st
