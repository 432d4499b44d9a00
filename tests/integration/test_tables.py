# SPDX-License-Identifier: Apache-2.0
"""Tables over the Redis protocol (docs/tables.md): directories, tables
with composite keys, rows, paged range reads, counts and range deletes,
bad input, and the catalog across restarts and kill -9, on a 2-shard
server driven by redis-py."""
import signal

import pytest
import redis

from server_util import Server


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def pairs(flat):
    """A RESP2 map (a flat list) as a dict with str keys."""
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def num(x):
    """A u64 part: an integer, or above 2^63-1 a bulk string (RESP2)."""
    return int(x)


def cmd(r, *args):
    return r.execute_command(*args)


def range_all(r, table, *args, limit=None, rev=False, max_pages=100000):
    """Every row of a paged ROW.RANGE: (rows, pages)."""
    rows, cur, pages = [], "0", 0
    while True:
        a = list(args) + (["LIMIT", limit] if limit else []) + (["REV"] if rev else []) + \
            ["CURSOR", cur]
        cur, page = cmd(r, "ROW.RANGE", table, *a)
        cur = cur.decode()
        rows += page
        pages += 1
        assert pages < max_pages
        if limit:
            assert len(page) <= limit
        if cur == "0":
            return rows, pages


def test_directories(r):
    assert cmd(r, "DIR.CREATE", "/app") == b"OK"
    assert cmd(r, "DIR.CREATE", "/app/sub") == b"OK"
    assert "exists" in err(cmd, r, "DIR.CREATE", "/app")
    assert err(cmd, r, "DIR.CREATE", "/nope/x")
    assert cmd(r, "TABLE.CREATE", "/app/t", "KEY", "u64") == b"OK"
    listing = pairs(cmd(r, "DIR.LIST", "/app"))
    assert listing == {"sub": b"directory", "t": b"table"}
    assert "redis" in pairs(cmd(r, "DIR.LIST"))
    assert err(cmd, r, "DIR.DROP", "/app")                  # not empty
    assert cmd(r, "DIR.DROP", "/app/sub") == b"OK"
    assert err(cmd, r, "DIR.LIST", "/app/sub")
    assert cmd(r, "PING") is True                           # still usable


def test_rows_of_a_composite_key_table(r):
    cmd(r, "DIR.CREATE", "/app")
    assert cmd(r, "TABLE.CREATE", "/app/events", "KEY", "u64", "i64", "bytes",
               "ORDERED", "TABLETS", 8) == b"OK"
    assert cmd(r, "ROW.PUT", "/app/events", 42, -5, "a", "v1") == b"OK"
    assert cmd(r, "ROW.GET", "/app/events", 42, -5, "a") == b"v1"
    assert cmd(r, "ROW.GET", "/app/events", 42, -5, "b") is None
    assert cmd(r, "ROW.PUT", "/app/events", 42, -5, "a", "v2", "PX", 100000) == b"OK"
    assert cmd(r, "ROW.GET", "/app/events", 42, -5, "a") == b"v2"
    assert cmd(r, "ROW.DEL", "/app/events", 42, -5, "a") == 1
    assert cmd(r, "ROW.DEL", "/app/events", 42, -5, "a") == 0
    assert cmd(r, "ROW.GET", "/app/events", 42, -5, "a") is None
    # NULL sorts before every value; "\NULL" is the string NULL.
    cmd(r, "ROW.PUT", "/app/events", 1, 0, "NULL", "null")
    cmd(r, "ROW.PUT", "/app/events", 1, 0, "\\NULL", "string")
    cmd(r, "ROW.PUT", "/app/events", 1, 0, "", "empty")
    _, rows = cmd(r, "ROW.RANGE", "/app/events", "GE", 1, 1, "LE", 1, 1)
    assert [row[0] for row in rows] == [[1, 0, None], [1, 0, b""], [1, 0, b"NULL"]]
    assert [row[1] for row in rows] == [b"null", b"empty", b"string"]


def test_bad_input_names_what_is_wrong(r):
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "bytes")
    assert "no table" in err(cmd, r, "ROW.GET", "/nope", 1, "a")
    assert "2 key parts" in err(cmd, r, "ROW.GET", "/t", 1)
    assert "u64" in err(cmd, r, "ROW.GET", "/t", -1, "a")
    assert "u64" in err(cmd, r, "ROW.PUT", "/t", "x", "a", "v")
    assert err(cmd, r, "ROW.RANGE", "/t", "GE", 1, 9, "LE", 1, 3)   # reversed
    assert err(cmd, r, "TABLE.CREATE", "/t2", "KEY", "float")
    assert err(cmd, r, "TABLE.CREATE", "/t2", "KEY", "u64", "SPLIT-SIZE", "lots")
    assert "exists" in err(cmd, r, "TABLE.CREATE", "/t", "KEY", "u64")
    assert "Redis keyspace" in err(cmd, r, "ROW.GET", "/redis/db0", "k")
    assert "Redis keyspace" in err(cmd, r, "TABLE.ALTER", "/redis/db0", "DEFAULT-TTL", 5)
    assert "Redis databases" in err(cmd, r, "TABLE.CREATE", "/redis/db16", "KEY", "bytes")
    big = "k" * 3000
    assert "2048" in err(cmd, r, "ROW.PUT", "/t", 1, big, "v")
    assert cmd(r, "ROW.GET", "/t", 1, big[:10]) is None
    assert cmd(r, "PING") is True


def test_paged_ranges_in_key_order_across_tablets_and_shards(r):
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "TABLETS", 16)
    tablets = pairs(cmd(r, "TABLE.DESCRIBE", "/t"))["tablets"]
    assert len(tablets) == 16
    assert {pairs(t)["shard"] for t in tablets} == {0, 1}
    step = (1 << 64) // 1000
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.execute_command("ROW.PUT", "/t", i * step, f"v{i}")
    p.execute()
    for limit in (1, 7, 100, 1000):
        rows, pages = range_all(r, "/t", limit=limit)
        assert [num(row[0][0]) for row in rows] == [i * step for i in range(1000)]
        assert [row[1] for row in rows] == [f"v{i}".encode() for i in range(1000)]
        back, _ = range_all(r, "/t", limit=limit, rev=True)
        assert back == rows[::-1]
    assert cmd(r, "ROW.COUNT", "/t") == 1000
    lo, hi = 100 * step, 200 * step
    for limit in (1, 3, 64):
        fwd, _ = range_all(r, "/t", "GE", 1, lo, "LE", 1, hi, limit=limit)
        back, _ = range_all(r, "/t", "GE", 1, lo, "LE", 1, hi, limit=limit, rev=True)
        assert len(fwd) == 101 and back == fwd[::-1]
    # A cursor is for its direction, and its table.
    cur, _ = cmd(r, "ROW.RANGE", "/t", "LIMIT", 5, "REV")
    assert "REV" in err(cmd, r, "ROW.RANGE", "/t", "LIMIT", 5, "CURSOR", cur)
    cmd(r, "TABLE.CREATE", "/t2", "KEY", "u64")
    assert "another table" in err(cmd, r, "ROW.RANGE", "/t2", "LIMIT", 5, "REV", "CURSOR", cur)
    assert cmd(r, "ROW.COUNT", "/t", "GE", 1, lo, "LT", 1, hi) == 100
    assert cmd(r, "ROW.COUNT", "/t", "GT", 1, lo, "LE", 1, hi) == 100
    assert cmd(r, "ROW.DELRANGE", "/t", "GE", 1, lo, "LT", 1, hi) == 100
    assert cmd(r, "ROW.COUNT", "/t") == 900
    assert cmd(r, "ROW.GET", "/t", lo) is None
    assert cmd(r, "ROW.GET", "/t", hi) == b"v200"
    rows = pairs(cmd(r, "TABLE.DESCRIBE", "/t"))["tablets"]
    assert sum(pairs(t)["rows"] for t in rows) >= 900


def test_prefix_ranges_of_a_composite_key(r):
    """All events of user 42 between t1 and t2 are one range read."""
    cmd(r, "TABLE.CREATE", "/ev", "KEY", "u64", "i64", "TABLETS", 4)
    p = r.pipeline(transaction=False)
    for user in (41, 42, 43):
        for ts in range(-50, 50):
            p.execute_command("ROW.PUT", "/ev", user, ts, f"{user}:{ts}")
    p.execute()
    rows, _ = range_all(r, "/ev", "GE", 2, 42, -10, "LE", 2, 42, 10, limit=6)
    assert [tuple(row[0]) for row in rows] == [(42, t) for t in range(-10, 11)]
    rows, _ = range_all(r, "/ev", "GE", 2, 42, -10, "LE", 2, 42, 10, limit=6, rev=True)
    assert [tuple(row[0]) for row in rows] == [(42, t) for t in range(10, -11, -1)]
    rows, _ = range_all(r, "/ev", "GE", 1, 42, "LE", 1, 42)
    assert len(rows) == 100
    rows, _ = range_all(r, "/ev", "GT", 1, 41, "LT", 1, 43)
    assert len(rows) == 100 and rows[0][0] == [42, -50]


def test_hashed_tables(r):
    cmd(r, "TABLE.CREATE", "/h", "KEY", "u64", "u64", "HASHED", "PREFIX", 1, "TABLETS", 8)
    d = pairs(cmd(r, "TABLE.DESCRIBE", "/h"))
    assert d["mode"] == b"hashed" and d["hash-prefix"] == 1
    p = r.pipeline(transaction=False)
    for user in range(20):
        for i in range(30):
            p.execute_command("ROW.PUT", "/h", user, i, f"{user}.{i}")
    p.execute()
    # One hash prefix: in key order.
    rows, _ = range_all(r, "/h", "GE", 1, 7, "LE", 1, 7, limit=4)
    assert [row[0] for row in rows] == [[7, i] for i in range(30)]
    # The whole table: every row once, in hash order.
    rows, _ = range_all(r, "/h", limit=33)
    assert sorted(tuple(row[0]) for row in rows) == [(u, i) for u in range(20) for i in range(30)]
    back, _ = range_all(r, "/h", limit=17, rev=True)
    assert back == rows[::-1]
    assert "hashed on its first 1" in err(cmd, r, "ROW.RANGE", "/h", "GE", 1, 1, "LE", 1, 2)


def test_drop_and_reuse_a_name(r):
    cmd(r, "TABLE.CREATE", "/t", "KEY", "bytes", "HASHED", "TABLETS", 4)
    assert "split points" in err(cmd, r, "TABLE.CREATE", "/o", "KEY", "bytes", "TABLETS", 4)
    for i in range(100):
        cmd(r, "ROW.PUT", "/t", f"k{i}", "old")
    assert cmd(r, "TABLE.DROP", "/t") == b"OK"
    assert "no table" in err(cmd, r, "ROW.GET", "/t", "k1")
    assert cmd(r, "TABLE.CREATE", "/t", "KEY", "bytes") == b"OK"     # at once
    assert cmd(r, "ROW.GET", "/t", "k1") is None
    assert cmd(r, "ROW.COUNT", "/t") == 0
    listed = [p.decode() for p in cmd(r, "TABLE.LIST", "/")]
    assert listed.count("/t") == 1 and listed == sorted(listed)


def test_alter_changes_options(r):
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "DEFAULT-TTL", 0)
    assert cmd(r, "TABLE.ALTER", "/t", "SPLIT-SIZE", "1gb", "AUTO-SPLIT-LOAD", "on") == b"OK"
    o = pairs(pairs(cmd(r, "TABLE.DESCRIBE", "/t"))["options"])
    assert o["split-size"] == 1 << 30 and o["auto-split-load"] == b"on"
    assert err(cmd, r, "TABLE.ALTER", "/t", "MIN-TABLETS", 0)
    assert err(cmd, r, "TABLE.ALTER", "/nope", "MIN-TABLETS", 2)


def test_tables_and_rows_survive_restarts_and_kill9():
    s = Server().start()
    r = s.client()
    cmd(r, "DIR.CREATE", "/app")
    cmd(r, "TABLE.CREATE", "/app/t", "KEY", "u64", "TABLETS", 8)
    cmd(r, "TABLE.CREATE", "/app/gone", "KEY", "u64")
    for i in range(200):
        cmd(r, "ROW.PUT", "/app/t", i << 56, f"v{i}")
        cmd(r, "ROW.PUT", "/app/gone", i, "x")
    cmd(r, "TABLE.DROP", "/app/gone")
    r.set("plain", "redis")
    assert s.stop() == 0
    s.start()
    r = s.client()
    assert cmd(r, "ROW.COUNT", "/app/t") == 200
    assert "no table" in err(cmd, r, "ROW.COUNT", "/app/gone")
    assert r.get("plain") == b"redis"
    cmd(r, "TABLE.CREATE", "/app/new", "KEY", "i64")
    cmd(r, "ROW.PUT", "/app/new", -1, "after")
    s.stop(sig=signal.SIGKILL)
    s.start()
    r = s.client()
    assert cmd(r, "ROW.GET", "/app/new", -1) == b"after"
    assert cmd(r, "ROW.COUNT", "/app/t") == 200
    s.close()


def raw_reply(r, *args):
    """A reply without redis-py's reshaping (it rewrites every COMMAND reply)."""
    conn = r.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        r.connection_pool.release(conn)


def test_command_docs_name_the_table_commands(r):
    names = ["dir.create", "dir.drop", "dir.list", "table.create", "table.drop", "table.alter",
             "table.list", "table.describe", "row.put", "row.get", "row.del", "row.write",
             "row.range", "row.count", "row.delrange"]
    docs = raw_reply(r, "COMMAND", "DOCS", *names)
    docs = {docs[i].decode(): pairs(docs[i + 1]) for i in range(0, len(docs), 2)}
    assert sorted(docs) == sorted(names)
    assert docs["row.range"]["summary"].startswith(b"Reads a page")
    args = [pairs(a)["name"] for a in docs["row.range"]["arguments"]]
    assert b"cursor" in args and b"rev" in args
    assert raw_reply(r, "COMMAND", "DOCS", "nosuch") == []


def shard_of(r, table, key):
    """The shard of the tablet holding u64 key in table (TABLE.DESCRIBE)."""
    for t in pairs(cmd(r, "TABLE.DESCRIBE", table))["tablets"]:
        t = pairs(t)
        start = -1 if t["start"] == b"-inf" else num(t["start"][0])
        end = 1 << 64 if t["end"] == b"+inf" else num(t["end"][0])
        if start <= key < end:
            return t["shard"]
    raise AssertionError("no tablet")


def test_row_write_across_shards_is_atomic(r):
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "TABLETS", 8)
    keys = [i << 61 for i in range(8)]
    assert {shard_of(r, "/t", k) for k in keys} == {0, 1}
    args = []
    for k in keys:
        args += ["PUT", k, f"v{k}"]
    assert cmd(r, "ROW.WRITE", "/t", *args) == b"OK"
    for k in keys:
        assert cmd(r, "ROW.GET", "/t", k) == f"v{k}".encode()
    assert cmd(r, "ROW.WRITE", "/t", "DEL", keys[0], "PUT", keys[7], "x", "PX", 100000,
               "DEL", keys[3]) == b"OK"
    assert cmd(r, "ROW.GET", "/t", keys[0]) is None
    assert cmd(r, "ROW.GET", "/t", keys[3]) is None
    assert cmd(r, "ROW.GET", "/t", keys[7]) == b"x"
    assert cmd(r, "ROW.COUNT", "/t") == 6
    # A bad row anywhere: nothing is written.
    assert err(cmd, r, "ROW.WRITE", "/t", "PUT", keys[1], "y", "PUT", "nan", "y")
    assert cmd(r, "ROW.GET", "/t", keys[1]) == f"v{keys[1]}".encode()


def test_row_writes_across_shards_survive_kill9_whole(tmp_path):
    """Each ROW.WRITE puts one value into a row on each shard; after kill -9
    at a random moment, every pair holds one value (both rows or neither),
    and every acknowledged write is there."""
    import random
    import threading

    rng = random.Random(25)
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "TABLETS", 2)
    a, b = 0, 1 << 63
    assert shard_of(r, "/t", a) != shard_of(r, "/t", b)
    for rnd in range(4):
        acked = []
        stop = threading.Event()

        def writer():
            c = s.client()
            for i in range(100000):
                if stop.is_set():
                    return
                pair = i % 50
                try:
                    cmd(c, "ROW.WRITE", "/t", "PUT", a + pair, f"{rnd}.{i}", "PUT", b + pair,
                        f"{rnd}.{i}")
                except (redis.ConnectionError, redis.TimeoutError):
                    return
                acked.append((pair, f"{rnd}.{i}"))

        t = threading.Thread(target=writer, daemon=True)
        t.start()
        deadline = __import__("time").monotonic() + 20
        while len(acked) < 20 + rng.randrange(200) and __import__("time").monotonic() < deadline:
            __import__("time").sleep(0.005)
        s.stop(sig=signal.SIGKILL)
        stop.set()
        t.join(timeout=30)
        assert acked, "no write was acknowledged"
        s.start()
        r = s.client()
        last = {}
        for pair, v in acked:
            last[pair] = v
        for pair in range(50):
            x, y = cmd(r, "ROW.GET", "/t", a + pair), cmd(r, "ROW.GET", "/t", b + pair)
            assert x == y, f"pair {pair}: {x} != {y}"
            if pair in last:
                # the last acknowledged value, or a later one in flight
                assert x is not None
                assert tuple(map(int, x.decode().split("."))) >= \
                    tuple(map(int, last[pair].split(".")))
    s.close()


def test_catalog_changes_survive_kill9_whole(tmp_path):
    """Creates, drops and directory changes under kill -9 at random moments:
    the server always starts (the catalog is whole), every acknowledged
    change is there, and a table's acknowledged rows with it."""
    import random
    import threading
    import time

    rng = random.Random(2511)
    s = Server(dir=str(tmp_path / "d")).start()
    done = {}           # path -> "table" | "dir" | None (dropped), acknowledged
    for rnd in range(5):
        stop = threading.Event()

        def changer(rnd=rnd):
            c = s.client()
            for i in range(10000):
                if stop.is_set():
                    return
                try:
                    if i % 3 == 2:
                        # in flight at a kill, a drop may or may not be done
                        done[f"/k{rnd}/t{i - 1}"] = "maybe"
                        cmd(c, "TABLE.DROP", f"/k{rnd}/t{i - 1}")
                        done[f"/k{rnd}/t{i - 1}"] = None
                    elif i == 0:
                        cmd(c, "DIR.CREATE", f"/k{rnd}")
                        done[f"/k{rnd}"] = "dir"
                    else:
                        cmd(c, "TABLE.CREATE", f"/k{rnd}/t{i}", "KEY", "u64", "TABLETS", 3)
                        cmd(c, "ROW.PUT", f"/k{rnd}/t{i}", i, "row")
                        done[f"/k{rnd}/t{i}"] = "table"
                except (redis.ConnectionError, redis.TimeoutError):
                    return
                except redis.ResponseError:
                    if stop.is_set():
                        return
                    raise

        t = threading.Thread(target=changer, daemon=True)
        t.start()
        deadline = time.monotonic() + 20
        want = 5 + rng.randrange(40)
        while len(done) < want and time.monotonic() < deadline:
            time.sleep(0.005)
        s.stop(sig=signal.SIGKILL)
        stop.set()
        t.join(timeout=30)
        s.start()
        r = s.client()
        tables = {p.decode() for p in cmd(r, "TABLE.LIST", "/")}
        for path, what in done.items():
            if what == "table":
                assert path in tables, path
                assert cmd(r, "ROW.COUNT", path) == 1, path
            elif what is None:
                assert path not in tables, path
            elif what == "dir":
                assert pairs(cmd(r, "DIR.LIST", "/")).get(path[1:]) == b"directory"
    s.close()
