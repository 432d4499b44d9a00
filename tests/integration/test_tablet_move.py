# SPDX-License-Identifier: Apache-2.0
"""Tablets that move between shards (issue 26) on a 2-shard server:
TABLET.MOVE's replies and errors, rows kept across moves, restarts and
kill -9 at random moments, and reads, writes, atomic multi-row writes and
paged ranges from many connections while tablets move underneath them --
never an error, never a lost or doubled row."""
import random
import signal
import threading
import time

import redis

from tablet_util import check_parts, check_rows, cmd, err, fill, part_writer, tablets, walk_pages
from server_util import Server, wait_for


def moves(r):
    info = r.info("scree")
    return sum(v["tablet_moves_in"] for k, v in info.items() if k.startswith("shard"))


def test_move_replies_and_errors(r):
    cmd(r, "TABLE.CREATE", "/mv", "KEY", "u64", "TABLETS", 1)
    want = {i: f"v{i}" for i in range(3000)}
    fill(r, "/mv", 0, 3000)
    t = tablets(r, "/mv")[0]
    other = 1 - t[b"shard"]
    assert cmd(r, "TABLET.MOVE", "/mv", t[b"id"], other) == b"OK"
    assert tablets(r, "/mv")[0][b"shard"] == other and tablets(r, "/mv")[0][b"id"] == t[b"id"]
    check_rows(r, "/mv", want)
    assert "already" in err(cmd, r, "TABLET.MOVE", "/mv", t[b"id"], other)
    assert "shard must be 0 to 1" in err(cmd, r, "TABLET.MOVE", "/mv", t[b"id"], 2)
    assert "table /mv has no tablet 999999" in err(cmd, r, "TABLET.MOVE", "/mv", 999999, 0)
    assert "no table" in err(cmd, r, "TABLET.MOVE", "/nope", t[b"id"], 0)
    assert "tablet id" in err(cmd, r, "TABLET.MOVE", "/mv", "x", 0)
    assert "holds Redis keys" in err(cmd, r, "TABLET.MOVE", "/redis/db0", 0, 1)
    o = tablets(r, "/scree/ordered")[0]
    assert "holds Redis keys" in err(cmd, r, "TABLET.MOVE", "/scree/ordered", o[b"id"],
                                     1 - o[b"shard"])
    assert cmd(r, "TABLET.MOVE", "/mv", t[b"id"], t[b"shard"]) == b"OK"
    check_rows(r, "/mv", want)
    assert moves(r) == 2
    # Two neighbours brought together merge.
    cmd(r, "TABLE.CREATE", "/two", "KEY", "u64", "TABLETS", 2)
    a, b = tablets(r, "/two")
    cmd(r, "TABLET.MOVE", "/two", b[b"id"], a[b"shard"])
    m = cmd(r, "TABLET.MERGE", "/two", a[b"id"])
    assert [t[b"id"] for t in tablets(r, "/two")] == [m]
    docs = r.execute_command("COMMAND DOCS", "tablet.move", NEVER_DECODE=True)
    assert docs[0] == b"tablet.move" and b"Moves a table's tablet" in docs[1][1]


def test_rows_survive_moves_restarts_and_kill9(tmp_path):
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "TABLETS", 4)
    want = {i: f"a{i}" for i in range(8000)}
    fill(r, "/t", 0, 8000, "a")
    cmd(r, "SAVE")
    fill(r, "/t", 0, 4000, "b")                 # in memtables: the move flushes them
    want.update({i: f"b{i}" for i in range(4000)})
    for t in tablets(r, "/t"):
        cmd(r, "TABLET.MOVE", "/t", t[b"id"], 1 - t[b"shard"])
    check_rows(r, "/t", want)
    s.stop(sig=signal.SIGKILL)
    s.start()
    r = s.client()
    check_rows(r, "/t", want)
    fill(r, "/t", 2000, 6000, "c")
    want.update({i: f"c{i}" for i in range(2000, 6000)})
    for t in tablets(r, "/t"):
        cmd(r, "TABLET.MOVE", "/t", t[b"id"], 1 - t[b"shard"])
    s.stop()
    s.start()
    check_rows(s.client(), "/t", want)
    s.close()


def test_moves_survive_kill9_at_random_moments(tmp_path):
    rnd = random.Random(26)
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/k", "KEY", "u64", "TABLETS", 2)
    acked = {}
    for rnd_i in range(5):
        stop = threading.Event()

        def mover():
            c = s.client()
            try:
                while not stop.is_set():
                    for t in tablets(c, "/k"):
                        cmd(c, "TABLET.MOVE", "/k", t[b"id"], 1 - t[b"shard"])
            except (redis.ConnectionError, redis.ResponseError):
                pass                # killed mid-move

        th = threading.Thread(target=mover)
        th.start()
        w = s.client()
        base = rnd_i * 100000
        deadline = time.monotonic() + rnd.uniform(0.2, 1.5)
        i = 0
        try:
            while time.monotonic() < deadline and i < 20000:
                cmd(w, "ROW.PUT", "/k", base + i, f"r{rnd_i}:{i}")
                acked[base + i] = f"r{rnd_i}:{i}"
                i += 1
        finally:
            s.stop(sig=signal.SIGKILL)
            stop.set()
            th.join()
        s.start()
        check_rows(s.client(), "/k", acked)
    s.close()


def test_reads_writes_and_ranges_keep_working_while_tablets_move(tmp_path):
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/w", "KEY", "u64", "u64", "TABLETS", 4)
    stop = threading.Event()
    errors = []
    written = [0] * 4
    pairs = [0]

    def pair_writer():
        """Atomic writes of two rows whose keys lie in different tablets."""
        c = s.client()
        try:
            i = 0
            while not stop.is_set() and i < 100000:
                cmd(c, "ROW.WRITE", "/w", "PUT", 7, i, "x", "PUT", (1 << 63) + 7, i, "y")
                pairs[0] = i + 1
                i += 1
        except Exception as e:      # noqa: BLE001
            errors.append(repr(e))

    def reader():
        c = s.client()
        try:
            while not stop.is_set():
                walk_pages(c, "/w")
                part = random.randrange(4)
                k = max(written[part] - 1, 0)
                if written[part]:
                    v = cmd(c, "ROW.GET", "/w", part, k)
                    assert v == f"{part}:{k}".encode(), (part, k, v)
        except Exception as e:      # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=part_writer, args=(s, "/w", p, stop, written, errors))
               for p in range(4)]
    threads += [threading.Thread(target=pair_writer)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for rnd in range(8):
            wait_for(lambda: min(written) > 300 * (rnd + 1) or errors, "writes")
            for t in tablets(r, "/w"):
                cmd(r, "TABLET.MOVE", "/w", t[b"id"], 1 - t[b"shard"])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    check_parts(r, "/w", written)
    n = pairs[0]
    for key in (7, (1 << 63) + 7):
        rows = cmd(r, "ROW.RANGE", "/w", "GE", 1, key, "LE", 1, key, "LIMIT", n + 10)[1]
        assert len(rows) in (n, n + 1), (key, len(rows), n)   # the last one may be in flight
    assert moves(r) >= 32
    s.close()


def test_a_write_over_two_tablets_goes_on_as_they_part_and_meet(tmp_path):
    """Regression: ROW.WRITE of two rows whose tablets shared a shard was
    sent there whole and, once one tablet moved away, refused there until
    -TRYAGAIN; it is planned again (one shard, or across shards)."""
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/p", "KEY", "u64", "TABLETS", 2)
    a, b = tablets(r, "/p")
    if a[b"shard"] != b[b"shard"]:
        cmd(r, "TABLET.MOVE", "/p", b[b"id"], a[b"shard"])
    stop = threading.Event()
    errors, n = [], [0]

    def writer():
        c = s.client()
        try:
            while not stop.is_set() and n[0] < 100000:
                cmd(c, "ROW.WRITE", "/p", "PUT", 7, f"x{n[0]}", "PUT", (1 << 63) + 7, f"y{n[0]}")
                n[0] += 1
        except Exception as e:      # noqa: BLE001 -- reported below
            errors.append(repr(e))

    th = threading.Thread(target=writer)
    th.start()
    try:
        for _ in range(12):
            before = n[0]
            b = tablets(r, "/p")[1]
            cmd(r, "TABLET.MOVE", "/p", b[b"id"], 1 - b[b"shard"])
            wait_for(lambda: n[0] > before + 20 or errors, "writes after the move")
    finally:
        stop.set()
        th.join()
    assert not errors, errors[:3]
    last = n[0] - 1
    assert cmd(r, "ROW.GET", "/p", 7) == f"x{last}".encode()
    assert cmd(r, "ROW.GET", "/p", (1 << 63) + 7) == f"y{last}".encode()
    s.close()
