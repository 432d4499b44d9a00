# SPDX-License-Identifier: Apache-2.0
"""Tablets that split (issue 26) on a 2-shard server: TABLET.SPLIT's
replies and errors, rows kept across splits, restarts and kill -9, paged
ranges whose tablets split between pages, splits under concurrent
writes and reads, and kill -9 at random moments during splits."""
import random
import signal
import threading
import time

import pytest
import redis

from server_util import WAIT_S, Server, wait_for
from tablet_util import cmd, err, tablets


def fill(r, path, n, tag="v"):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.execute_command("ROW.PUT", path, i, f"{tag}{i}")
        if i % 1000 == 999:
            p.execute()
    p.execute()


def check_rows(r, path, n, tag="v"):
    """Every row 0..n-1 reads back, and a full range returns each once, in order."""
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.execute_command("ROW.GET", path, i)
    got = p.execute()
    bad = [i for i, g in enumerate(got) if g != f"{tag}{i}".encode()]
    assert not bad, f"{path}: {len(bad)} rows wrong, first {bad[:5]}"
    assert cmd(r, "ROW.COUNT", path) == n


def test_split_replies_and_errors(r):
    cmd(r, "TABLE.CREATE", "/h", "KEY", "u64", "HASHED", "TABLETS", 1)
    cmd(r, "TABLE.CREATE", "/o", "KEY", "u64", "bytes", "TABLETS", 1)
    h0, o0 = tablets(r, "/h")[0][b"id"], tablets(r, "/o")[0][b"id"]
    a, b = cmd(r, "TABLET.SPLIT", "/h", h0)                    # the middle of the hashes
    ts = tablets(r, "/h")
    assert [t[b"id"] for t in ts] == [a, b]
    assert ts[0][b"end"] == [b"8000000000000000"] == ts[1][b"start"]
    assert ts[0][b"shard"] == ts[1][b"shard"]
    c, d = cmd(r, "TABLET.SPLIT", "/h", b, "AT", "c000000000000000")
    assert [t[b"id"] for t in tablets(r, "/h")] == [a, c, d]
    assert "no tablet" in err(cmd, r, "TABLET.SPLIT", "/h", h0)        # gone: split
    assert "no tablet" in err(cmd, r, "TABLET.SPLIT", "/o", a)         # another table's
    assert "no table" in err(cmd, r, "TABLET.SPLIT", "/nope", a)
    assert "tablet id" in err(cmd, r, "TABLET.SPLIT", "/h", "x")
    for bad in ("12", "zz00000000000000", "0x00000000000000", "-1000000000000000"):
        assert "16 hex digits" in err(cmd, r, "TABLET.SPLIT", "/h", a, "AT", bad)
    assert "not after" in err(cmd, r, "TABLET.SPLIT", "/h", d, "AT", "c000000000000000")
    assert "not before" in err(cmd, r, "TABLET.SPLIT", "/h", a, "AT", "9000000000000000")
    assert "AT and a key prefix" in err(cmd, r, "TABLET.SPLIT", "/o", o0)
    assert "must be a u64" in err(cmd, r, "TABLET.SPLIT", "/o", o0, "AT", "x")
    assert "1 to 2 key parts" in err(cmd, r, "TABLET.SPLIT", "/o", o0, "AT", 1, "a", "b")
    assert "optionally AT" in err(cmd, r, "TABLET.SPLIT", "/o", o0, "NEAR", 5)
    e, f = cmd(r, "TABLET.SPLIT", "/o", o0, "AT", 5, "m")
    ts = tablets(r, "/o")
    assert ts[0][b"end"] == [5, b"m"] and ts[1][b"start"] == [5, b"m"]
    assert "not after" in err(cmd, r, "TABLET.SPLIT", "/o", f, "AT", 5, "m")
    # The Redis keyspace's tablets split too (the key stays on its shard).
    db = tablets(r, "/redis/db0")
    r.set("k", "v")
    cmd(r, "TABLET.SPLIT", "/redis/db0", db[0][b"id"])
    assert len(tablets(r, "/redis/db0")) == len(db) + 1 and r.get("k") == b"v"
    # Counted per shard in INFO scree (and scree_tablet_splits_total).
    info = r.info("scree")
    assert sum(v["tablet_splits"] for k, v in info.items() if k.startswith("shard")) == 4, info
    docs = r.execute_command("COMMAND DOCS", "tablet.split", NEVER_DECODE=True)
    assert docs[0] == b"tablet.split" and b"Splits a table's tablet" in docs[1][1]


@pytest.mark.parametrize("mode", ["ordered", "hashed"])
def test_rows_survive_splits_restarts_and_kill9(tmp_path, mode):
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    extra = ["HASHED"] if mode == "hashed" else []
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", *extra, "TABLETS", 1)
    n = 6000
    fill(r, "/t", n // 2)
    cmd(r, "SAVE")                      # half in SSTables, half in memtables
    for i in range(n // 2, n):
        cmd(r, "ROW.PUT", "/t", i, f"v{i}")
    for k in range(3):                  # the last tablet each time
        last = tablets(r, "/t")[-1]
        point = ["AT", n * (k + 1) // 4] if mode == "ordered" else []
        cmd(r, "TABLET.SPLIT", "/t", last[b"id"], *point)
    assert len(tablets(r, "/t")) == 4
    check_rows(r, "/t", n)
    s.stop(sig=signal.SIGKILL)
    s.start()
    r = s.client()
    assert len(tablets(r, "/t")) == 4
    check_rows(r, "/t", n)
    cmd(r, "SAVE")
    # The children separate: each file ends up with one tablet's rows.
    wait_for(lambda: sum(t[b"rows"] for t in tablets(r, "/t")) == n, "the separation")
    s.stop()
    s.start()
    check_rows(s.client(), "/t", n)
    s.close()


def test_paged_ranges_stay_right_while_tablets_split(r):
    cmd(r, "TABLE.CREATE", "/p", "KEY", "u64", "TABLETS", 1)
    n = 3000
    fill(r, "/p", n)
    for rev in (False, True):
        seen, cursor, splits = [], b"0", 0
        while True:
            args = ["ROW.RANGE", "/p", "LIMIT", 97] + (["REV"] if rev else [])
            cursor, rows = cmd(r, *args, "CURSOR", cursor)
            seen += [row[0][0] for row in rows]
            if cursor == b"0":
                break
            # Split the tablet holding the next row, at a key just past it.
            nxt = seen[-1] + (-1 if rev else 1)
            for t in tablets(r, "/p"):
                lo = -1 if t[b"start"] == b"-inf" else t[b"start"][0]
                hi = 1 << 64 if t[b"end"] == b"+inf" else t[b"end"][0]
                if lo <= nxt < hi and nxt + 2 < hi and nxt > lo:
                    cmd(r, "TABLET.SPLIT", "/p", t[b"id"], "AT", nxt + 2)
                    splits += 1
                    break
        assert seen == (sorted(range(n), reverse=rev)), "a row skipped or repeated"
        assert splits > 10


def test_splits_under_concurrent_writes_and_reads(server):
    r = server.client()
    cmd(r, "TABLE.CREATE", "/c", "KEY", "u64", "TABLETS", 1)
    cmd(r, "TABLE.CREATE", "/ch", "KEY", "u64", "HASHED", "TABLETS", 1)
    stop = threading.Event()
    acked = {"/c": {}, "/ch": {}}
    bad = []

    def writer(path, part):
        c = server.client()
        for i in range(100000):
            if stop.is_set():
                return
            k = (i * 2 + part) % 20000
            cmd(c, "ROW.PUT", path, k, f"{part}.{i}")
            acked[path][k] = f"{part}.{i}".encode()

    def reader(path):
        c = server.client()
        while not stop.is_set():
            for k, v in list(acked[path].items())[:200]:
                got = cmd(c, "ROW.GET", path, k)
                if got is None:
                    bad.append((path, k, "missing"))

    ts = [threading.Thread(target=writer, args=(p, i)) for p in acked for i in (0, 1)]
    ts += [threading.Thread(target=reader, args=(p,)) for p in acked]
    for t in ts:
        t.start()
    rng = random.Random(26)
    try:
        for k in range(24):
            path = "/c" if k % 2 else "/ch"
            t = rng.choice(tablets(r, path))
            if path == "/c":
                lo = 0 if t[b"start"] == b"-inf" else t[b"start"][0]
                hi = 20000 if t[b"end"] == b"+inf" else t[b"end"][0]
                if hi - lo < 4:
                    continue
                cmd(r, "TABLET.SPLIT", path, t[b"id"], "AT", rng.randrange(lo + 1, hi))
            else:
                cmd(r, "TABLET.SPLIT", path, t[b"id"])
    finally:
        stop.set()
        for t in ts:
            t.join(timeout=WAIT_S)
    assert not bad, bad[:5]
    for path, rows in acked.items():
        for k, v in rows.items():
            got = cmd(r, "ROW.GET", path, k)
            # the last acked write of k, or a later one that raced its ack
            assert got is not None and got[0:1] in (b"0", b"1"), (path, k, got)
    keys = [row[0][0] for row in cmd(r, "ROW.RANGE", "/c", "LIMIT", 100000)[1]]
    assert keys == sorted(set(keys)) and set(acked["/c"]) <= set(keys)
    assert len(tablets(r, "/c")) > 5 and len(tablets(r, "/ch")) > 5


def test_splits_survive_kill9_at_random_moments(tmp_path):
    """Splits and writes, kill -9 at a random moment, over rounds: the
    server starts, the tablets tile the table, every acknowledged row is
    there, and a range returns each row once."""
    rng = random.Random(2626)
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/k", "KEY", "u64", "TABLETS", 1)
    acked = {}
    for rnd in range(5):
        stop = threading.Event()

        def writer():
            c = s.client()
            for i in range(100000):
                if stop.is_set():
                    return
                k = rng.randrange(50000)
                try:
                    cmd(c, "ROW.PUT", "/k", k, f"{rnd}.{i}")
                except (redis.ConnectionError, redis.TimeoutError):
                    return
                acked[k] = f"{rnd}.{i}"

        def splitter():
            c = s.client()
            while not stop.is_set():
                try:
                    t = rng.choice(tablets(c, "/k"))
                    lo = 0 if t[b"start"] == b"-inf" else t[b"start"][0]
                    hi = 50000 if t[b"end"] == b"+inf" else t[b"end"][0]
                    if hi - lo > 4:
                        cmd(c, "TABLET.SPLIT", "/k", t[b"id"], "AT", rng.randrange(lo + 1, hi))
                    if rng.random() < 0.3:
                        cmd(c, "SAVE")
                except (redis.ConnectionError, redis.TimeoutError):
                    return
                except redis.ResponseError:
                    pass                # a tablet split meanwhile by nobody else: retry

        ws = [threading.Thread(target=writer, daemon=True),
              threading.Thread(target=splitter, daemon=True)]
        for w in ws:
            w.start()
        time.sleep(0.3 + rng.random())
        s.stop(sig=signal.SIGKILL)
        stop.set()
        for w in ws:
            w.join(timeout=WAIT_S)
        s.start()
        r = s.client()
        ts = tablets(r, "/k")
        assert ts[0][b"start"] == b"-inf" and ts[-1][b"end"] == b"+inf"
        assert all(a[b"end"] == b[b"start"] for a, b in zip(ts, ts[1:]))
        for k, v in acked.items():
            got = cmd(r, "ROW.GET", "/k", k)
            assert got is not None, f"round {rnd}: row {k} lost"
            assert tuple(map(int, got.decode().split("."))) >= tuple(map(int, v.split(".")))
        keys = [row[0][0] for row in cmd(r, "ROW.RANGE", "/k", "LIMIT", 100000)[1]]
        assert keys == sorted(set(keys)) and set(acked) <= set(keys)
    s.close()


def test_describe_shows_each_tablets_traffic_per_second(server, r):
    """Reads and writes per second per tablet (the last second's): the
    tablet taking the traffic shows it, its idle sibling shows none, and
    both fall back to 0 once the traffic stops."""
    cmd(r, "TABLE.CREATE", "/w", "KEY", "u64", "SPLIT", 1, 1000)
    stop = threading.Event()

    def load():
        c = server.client()
        for i in range(1000000):
            if stop.is_set():
                return
            cmd(c, "ROW.PUT", "/w", i % 500, "x" * 50)
            cmd(c, "ROW.GET", "/w", i % 500)

    t = threading.Thread(target=load)
    t.start()
    try:
        busy = wait_for(lambda: (lambda ts: ts if ts[0][b"writes-per-sec"] > 0 and
                                 ts[0][b"reads-per-sec"] > 0 else None)(tablets(r, "/w")),
                        "the busy tablet's rates")
        assert busy[0][b"write-bytes-per-sec"] >= 50 * busy[0][b"writes-per-sec"]
        assert busy[0][b"read-bytes-per-sec"] > 0
        assert busy[1][b"reads-per-sec"] == busy[1][b"writes-per-sec"] == 0
    finally:
        stop.set()
        t.join(timeout=WAIT_S)
    wait_for(lambda: all(x[b"reads-per-sec"] == x[b"writes-per-sec"] == 0 for x in tablets(r, "/w")),
             "the rates to fall to 0")
    # A range read counts its rows as reads of the tablets they came from.
    def scanning():
        cmd(r, "ROW.RANGE", "/w", "LIMIT", 1000)
        return tablets(r, "/w")[0][b"reads-per-sec"] >= 500
    wait_for(scanning, "the scanned rows counted")


def test_describe_names_a_tablets_hot_keys(server, r):
    """One key taking most of a tablet's traffic tops its hot keys, with
    an estimate of its accesses per second; raw keys (/redis/db0) too."""
    cmd(r, "TABLE.CREATE", "/hk", "KEY", "u64", "bytes", "TABLETS", 1)
    stop = threading.Event()

    def load():
        c = server.client()
        p = c.pipeline(transaction=False)
        for i in range(10000000):
            if stop.is_set():
                return
            p.execute_command("ROW.GET", "/hk", 42, "hot")
            p.execute_command("ROW.PUT", "/hk", i % 1000, "cold", "v")
            p.set("hotkey", "v")
            p.get("other%d" % (i % 1000))
            if i % 100 == 99:
                p.execute()

    t = threading.Thread(target=load)
    t.start()
    try:
        def hot():
            top = tablets(r, "/hk")[0][b"hot-keys"]
            return top if top and dict(zip(top[0][::2], top[0][1::2]))[b"key"] == [42, b"hot"] \
                else None
        top = wait_for(hot, "key (42, hot) on top")
        first = dict(zip(top[0][::2], top[0][1::2]))
        assert first[b"per-sec"] > 0
        def redis_hot():
            for tb in tablets(r, "/redis/db0"):
                for h in tb[b"hot-keys"]:
                    if dict(zip(h[::2], h[1::2]))[b"key"] == b"hotkey":
                        return True
            return False
        wait_for(redis_hot, "the Redis key among its tablet's hot keys")
    finally:
        stop.set()
        t.join(timeout=WAIT_S)


def busy(server, path, key_of, stop):
    """A pipelined load of gets and puts of key_of(i) until stop."""
    c = server.client()
    p = c.pipeline(transaction=False)
    for i in range(100000000):
        if stop.is_set():
            return
        p.execute_command("ROW.PUT", path, *key_of(i), "v")
        p.execute_command("ROW.GET", path, *key_of(i + 7))
        if i % 100 == 99:
            p.execute()


def test_a_tablet_taking_most_of_the_load_splits_by_load(server, r):
    cmd(r, "TABLE.CREATE", "/ld", "KEY", "u64", "TABLETS", 1, "AUTO-SPLIT-LOAD", "on",
        "SPLIT-LOAD-PERCENT", 1, "AUTO-SPLIT-SIZE", "off")
    stop = threading.Event()
    t = threading.Thread(target=busy, args=(server, "/ld", lambda i: (i * 7919 % 10000,), stop))
    t.start()
    try:
        ts = wait_for(lambda: (lambda x: x if len(x) > 1 else None)(tablets(r, "/ld")),
                      "a split by load")
    finally:
        stop.set()
        t.join(timeout=WAIT_S)
    mid = ts[0][b"end"][0]
    assert 1000 < mid < 9000, f"split at {mid}: not near the load's median"
    assert "split by load" in server.output()


def test_a_tablet_whose_load_is_one_key_is_reported_not_split(server, r):
    cmd(r, "TABLE.CREATE", "/one", "KEY", "u64", "TABLETS", 1, "AUTO-SPLIT-LOAD", "on",
        "SPLIT-LOAD-PERCENT", 1, "AUTO-SPLIT-SIZE", "off")
    stop = threading.Event()
    t = threading.Thread(target=busy, args=(server, "/one", lambda i: (42,), stop))
    t.start()
    try:
        wait_for(lambda: "takes most of the shard's load on one key" in server.output(),
                 "the hot key reported")
    finally:
        stop.set()
        t.join(timeout=WAIT_S)
    assert len(tablets(r, "/one")) == 1


def test_a_split_by_load_takes_the_median_of_the_whole_window(server, r):
    """Keys accessed in growing order: the split point is the median of
    the keys of the whole window the tablet was hot, not of its first
    samples (a reservoir whose random state stuck at 0 kept only those)."""
    cmd(r, "TABLE.CREATE", "/win", "KEY", "u64", "TABLETS", 1, "AUTO-SPLIT-LOAD", "on",
        "SPLIT-LOAD-PERCENT", 1, "AUTO-SPLIT-SIZE", "off")
    stop = threading.Event()
    reached = [0]

    def key_of(i):
        reached[0] = i
        return (i,)

    t = threading.Thread(target=busy, args=(server, "/win", key_of, stop))
    t.start()
    try:
        ts = wait_for(lambda: (lambda x: x if len(x) > 1 else None)(tablets(r, "/win")),
                      "a split by load")
    finally:
        stop.set()
        t.join(timeout=WAIT_S)
    point, top = ts[0][b"end"][0], reached[0]
    # Hot from about its first second to its sixth: the window's median
    # lies past a third of the keys reached by then.
    assert point > top / 3, f"split at {point} of {top}"
