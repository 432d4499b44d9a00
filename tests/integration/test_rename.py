# SPDX-License-Identifier: Apache-2.0
"""RENAME, RENAMENX and COPY on a 2-shard server -- Redis's replies and
errors, the TTL moved or copied, isolation from concurrent readers, and
atomicity across a kill -9 when the two keys are on different shards --
and DEBUG (HELP, SLEEP, SET-ACTIVE-EXPIRE, PROTOCOL, enable-debug-command)."""
import random
import signal
import threading
import time

import pytest
import redis

from server_util import WAIT_S, Server, wait_for


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def test_rename_moves_value_and_ttl_on_and_across_shards(r):
    # 200 pairs: about half have their two keys on different shards.
    for i in range(200):
        r.set(f"src{i}", f"v{i}")
        if i % 2:
            r.pexpire(f"src{i}", 100000)
        r.set(f"dst{i}", "old", px=500000)      # the target's TTL is not kept
    for i in range(200):
        assert r.rename(f"src{i}", f"dst{i}") is True
    for i in range(200):
        assert r.get(f"dst{i}") == f"v{i}".encode()
        assert r.exists(f"src{i}") == 0
        ttl = r.pttl(f"dst{i}")
        assert (0 < ttl <= 100000) if i % 2 else ttl == -1


def test_rename_and_renamenx_errors_and_same_key(r):
    assert "no such key" in err(r.rename, "nokey", "x")
    assert "no such key" in err(r.renamenx, "nokey", "x")
    assert "no such key" in err(r.rename, "nokey", "nokey")
    assert "wrong number" in err(r.execute_command, "RENAME", "a")
    r.set("a", "1")
    assert r.rename("a", "a") is True and r.get("a") == b"1"
    assert r.renamenx("a", "a") is False and r.get("a") == b"1"
    r.set("b", "2")
    assert r.renamenx("a", "b") is False
    assert r.get("a") == b"1" and r.get("b") == b"2"
    assert r.renamenx("a", "c") is True
    assert r.get("c") == b"1" and r.exists("a") == 0


def test_copy_replies_options_and_errors(server, r):
    r.set("s", "v", px=200000)
    assert r.copy("s", "d") is True
    assert r.get("d") == b"v" and 0 < r.pttl("d") <= 200000
    r.set("d", "other")
    assert r.copy("s", "d") is False and r.get("d") == b"other"
    assert r.copy("s", "d", replace=True) is True and r.get("d") == b"v"
    r.set("d", "changed")
    assert r.get("s") == b"v"                   # independent copies
    r.set("p", "no ttl")
    assert r.copy("p", "q") is True and r.ttl("q") == -1
    assert r.copy("nokey", "x") is False
    assert r.copy("s", "s", destination_db=3) is True
    assert server.client(db=3).get("s") == b"v"
    assert r.copy("s", "s", destination_db=3) is False
    assert "same" in err(r.copy, "s", "s")
    assert "same" in err(r.execute_command, "COPY", "s", "s", "DB", 0)
    assert "not an integer" in err(r.execute_command, "COPY", "s", "t", "DB", "x")
    assert "out of range" in err(r.execute_command, "COPY", "s", "t", "DB", 16)
    assert "syntax" in err(r.execute_command, "COPY", "s", "t", "DB")
    assert "syntax" in err(r.execute_command, "COPY", "s", "t", "NOPE")
    assert r.exists("t") == 0


def test_rename_in_other_dbs_and_in_multi(server):
    r = server.client(db=4)
    r.set("x", "4")
    server.client().set("x", "0")
    p = r.pipeline(transaction=True)
    p.rename("x", "y")
    p.get("y")
    p.copy("y", "z")
    assert p.execute() == [True, b"4", True]
    assert r.get("z") == b"4" and r.exists("x") == 0
    assert server.client().get("x") == b"0"


def test_rename_is_isolated_from_readers(server):
    """Renames bounce each value between two names while readers check, with
    MGET, that exactly one of the two holds it at every moment."""
    names = [(f"a{i}", f"b{i}") for i in range(16)]
    r = server.client()
    for i, (a, _) in enumerate(names):
        r.set(a, f"v{i}")
    stop = threading.Event()
    bad = []

    def renamer(k):
        c = server.client()
        where = 0
        for _ in range(400):
            if stop.is_set():
                return
            src, dst = names[k][where], names[k][1 - where]
            assert c.rename(src, dst) is True
            where = 1 - where

    def reader():
        c = server.client()
        while not stop.is_set():
            for i, (a, b) in enumerate(names):
                got = c.mget(a, b)
                if sorted(got, key=lambda v: v is None) != [f"v{i}".encode(), None]:
                    bad.append((a, b, got))

    ts = [threading.Thread(target=renamer, args=(k,)) for k in range(len(names))]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in ts + readers:
        t.start()
    for t in ts:
        t.join(timeout=WAIT_S)
    stop.set()
    for t in readers:
        t.join(timeout=WAIT_S)
    assert not bad, bad[:5]


def test_renames_survive_kill9_whole(tmp_path):
    """Each key walks through names k<i>:<g> by RENAME; after a kill -9 at a
    random moment, each key has exactly one name (never none, never two),
    at or past its last acknowledged step. Batch mode: acknowledged is
    durable."""
    rng = random.Random(26)
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    n = 40
    gen = [0] * n
    for i in range(n):
        r.set(f"k{i}:0", f"value{i}")
    for rnd in range(4):
        acked = {}
        stop = threading.Event()

        def walker(part):
            c = s.client()
            mine = [i for i in range(n) if i % 2 == part]
            g = {i: gen[i] for i in mine}
            for step in range(100000):
                if stop.is_set():
                    return
                i = mine[step % len(mine)]
                try:
                    c.rename(f"k{i}:{g[i]}", f"k{i}:{g[i] + 1}")
                except (redis.ConnectionError, redis.TimeoutError):
                    return
                g[i] += 1
                acked[i] = g[i]

        ts = [threading.Thread(target=walker, args=(p,), daemon=True) for p in (0, 1)]
        for t in ts:
            t.start()
        deadline = time.monotonic() + 20
        want = 20 + rng.randrange(300)
        while sum(list(acked.values())) - sum(gen) < want and time.monotonic() < deadline:
            time.sleep(0.005)
        s.stop(sig=signal.SIGKILL)
        stop.set()
        for t in ts:
            t.join(timeout=WAIT_S)
        assert acked, f"round {rnd}: no rename was acknowledged"
        s.start()
        r = s.client()
        for i in range(n):
            names = r.keys(f"k{i}:*")
            assert len(names) == 1, f"round {rnd}, key {i}: {names}"
            g = int(names[0].decode().split(":")[1])
            low = acked.get(i, gen[i])
            assert low <= g <= low + 1, f"round {rnd}, key {i}: at {g}, acked {low}"
            assert r.get(names[0]) == f"value{i}".encode()
            gen[i] = g
    s.close()


def test_debug_help_protocol_and_active_expire(server, r):
    lines = r.execute_command("DEBUG", "HELP")
    assert any(b"SLEEP" in ln for ln in lines)
    assert r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0) == b"OK"
    r.set("e", "v", px=50)
    time.sleep(0.1)
    assert r.delete("e") == 0               # expired: gone for DEL too
    assert r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1) == b"OK"
    assert "not an integer" in err(r.execute_command, "DEBUG", "SET-ACTIVE-EXPIRE", "x")
    assert "Try DEBUG HELP" in err(r.execute_command, "DEBUG", "NOPE")
    assert "Try DEBUG HELP" in err(r.execute_command, "DEBUG", "SLEEP")
    assert r.execute_command("DEBUG", "SLEEP", "x") == b"OK"        # Redis reads 0
    assert r.execute_command("DEBUG", "SLEEP", "-5") == b"OK"
    raw = server.raw()
    raw.cmd("HELLO", 3)
    raw.reply()
    for name, want in [("string", (b"$", b"Hello World")), ("integer", (b":", b"12345")),
                       ("double", (b",", b"3.141")), ("true", (b"#", b"t")),
                       ("false", (b"#", b"f")), ("null", (b"_", b""))]:
        raw.cmd("DEBUG", "PROTOCOL", name)
        assert raw.reply() == want, name
    raw.cmd("DEBUG", "PROTOCOL", "attrib")
    assert raw.line() == b"|1"
    for want in (b"$14", b"key-popularity", b"*2", b"$7", b"key:123", b":90", b"$39",
                 b"Some real reply following the attribute"):
        assert raw.line() == want
    raw.close()
    assert r.execute_command("DEBUG", "PROTOCOL", "attrib") == \
        b"Some real reply following the attribute"
    assert r.execute_command("DEBUG", "PROTOCOL", "map") == [0, 0, 1, 1, 2, 0]
    assert "RESP2" in err(r.execute_command, "DEBUG", "PROTOCOL", "push")
    assert "Wrong protocol type" in err(r.execute_command, "DEBUG", "PROTOCOL", "nope")


def test_debug_sleep_waits_only_its_connection(server, r):
    other = server.client()
    done = []

    started = threading.Event()

    def sleeper():
        c = server.client()
        c.ping()
        started.set()
        t0 = time.monotonic()
        assert c.execute_command("DEBUG", "SLEEP", "2") == b"OK"
        done.append(time.monotonic() - t0)

    t = threading.Thread(target=sleeper)
    t.start()
    assert started.wait(WAIT_S)
    for _ in range(10):
        assert other.ping() is True             # not held up by the sleeper
    assert not done
    t.join(timeout=WAIT_S)
    assert done and done[0] >= 2
    assert r.execute_command("DEBUG", "SLEEP", 0) == b"OK"
    # SLOWLOG sees it as Redis does (slower than 0.2 s).
    r.config_set("slowlog-log-slower-than", 200000)
    r.slowlog_reset()
    r.execute_command("DEBUG", "SLEEP", "0.25")
    assert r.slowlog_get()[0]["command"] == b"DEBUG SLEEP 0.25"


def test_debug_sleep_is_a_barrier_for_its_pipeline(r):
    p = r.pipeline(transaction=False)
    p.set("pk", "1", px=300)
    p.execute_command("DEBUG", "SLEEP", "0.6")
    p.get("pk")
    assert p.execute() == [True, b"OK", None]


def test_debug_sleep_ends_when_its_client_goes(server, r):
    def clients():
        return r.info("clients")["connected_clients"]

    for _ in range(5):
        s = server.raw()
        s.cmd("DEBUG", "SLEEP", 3600)
        s.cmd("GET", "k")
        s.close()
    # Without the cut the five connections stayed for an hour.
    wait_for(lambda: clients() == 1, "the sleepers' connections to go")
    victim = server.client()
    victim.client_setname("sleeper")
    t = threading.Thread(target=lambda: pytest.raises(
        redis.ConnectionError, victim.execute_command, "DEBUG", "SLEEP", 3600), daemon=True)
    t.start()
    wait_for(lambda: b"cmd=debug" in r.execute_command("CLIENT", "LIST"), "the sleep")
    assert r.client_kill_filter(_type=None, skipme=True) >= 1
    wait_for(lambda: clients() == 1, "the killed sleeper to go")
    t.join(timeout=WAIT_S)


def test_debug_sleep_does_not_hold_up_a_stop():
    s = Server().start()
    c = s.client()
    replies = []

    def sleeper():
        try:
            replies.append(c.execute_command("DEBUG", "SLEEP", 3600))
        except (redis.ConnectionError, redis.TimeoutError) as e:
            replies.append(e)

    t = threading.Thread(target=sleeper)
    t.start()
    # The sleep has begun once the server's CLIENT LIST shows it running.
    watcher = s.client()
    wait_for(lambda: b"cmd=debug" in watcher.execute_command("CLIENT", "LIST"), "the sleep")
    watcher.close()
    t0 = time.monotonic()
    assert s.stop() == 0
    assert time.monotonic() - t0 < WAIT_S / 2
    t.join(timeout=WAIT_S)
    s.close()


def test_enable_debug_command():
    s = Server(args=["--enable-debug-command", "no"]).start()
    c = s.client()
    assert "DEBUG command not allowed" in err(c.execute_command, "DEBUG", "HELP")
    p = c.pipeline(transaction=True)
    p.set("x", "1")
    p.execute_command("DEBUG", "SLEEP", 0)
    # Refused as it is queued, as Redis does: EXEC aborts, nothing runs.
    assert "DEBUG command not allowed" in err(p.execute)
    assert c.get("x") is None
    assert c.config_get("enable-debug-command") == {"enable-debug-command": "no"}
    assert "immutable" in err(c.config_set, "enable-debug-command", "yes")
    s.close()
    s = Server(args=["--enable-debug-command", "yes"]).start()
    assert s.client().execute_command("DEBUG", "SLEEP", 0) == b"OK"
    s.close()
