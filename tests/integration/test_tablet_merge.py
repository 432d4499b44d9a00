# SPDX-License-Identifier: Apache-2.0
"""Tablets that merge (issue 26) on a 2-shard server: TABLET.MERGE's
replies and errors, rows kept across merges, restarts and kill -9,
automatic merges of small cold neighbours (and none below a pre-split's
count), merges while clients write and page through ranges, and kill -9
at random moments while tablets split and merge."""
import random
import signal
import threading
import time

import pytest
import redis

from tablet_util import check_parts, cmd, err, fill, part_writer, tablets, walk_pages
from tablet_util import check_rows as check_rows_one_way
from server_util import Server, wait_for


def check_rows(r, path, want):
    check_rows_one_way(r, path, want, both_ways=True)


def split_all(r, path, points):
    for p in points:
        owner = [t for t in tablets(r, path) if t[b"end"] == b"+inf" or t[b"end"][0] > p][0]
        cmd(r, "TABLET.SPLIT", path, owner[b"id"], "AT", p)


def test_merge_replies_and_errors(r):
    cmd(r, "TABLE.CREATE", "/m", "KEY", "u64", "TABLETS", 1)
    want = {i: f"v{i}" for i in range(3000)}
    fill(r, "/m", 0, 3000)
    split_all(r, "/m", [1000, 2000])
    ids = [t[b"id"] for t in tablets(r, "/m")]
    assert len(ids) == 3 and len({t[b"shard"] for t in tablets(r, "/m")}) == 1
    for i in range(0, 3000, 7):
        cmd(r, "ROW.DEL", "/m", i)
        want[i] = None
    m = cmd(r, "TABLET.MERGE", "/m", ids[1])
    ts = tablets(r, "/m")
    assert [t[b"id"] for t in ts] == [ids[0], m]
    assert ts[1][b"start"] == [1000] and ts[1][b"end"] == b"+inf"
    check_rows(r, "/m", want)
    assert "no tablet" in err(cmd, r, "TABLET.MERGE", "/m", ids[1])          # merged away
    assert "no tablet" in err(cmd, r, "TABLET.MERGE", "/m", 999999)
    assert "last" in err(cmd, r, "TABLET.MERGE", "/m", m)
    assert "no table" in err(cmd, r, "TABLET.MERGE", "/nope", m)
    assert "tablet id" in err(cmd, r, "TABLET.MERGE", "/m", "x")
    # Neighbours on different shards: move one first.
    cmd(r, "TABLE.CREATE", "/two", "KEY", "u64", "TABLETS", 2)
    a, b = tablets(r, "/two")
    assert a[b"shard"] != b[b"shard"]
    assert "move one" in err(cmd, r, "TABLET.MERGE", "/two", a[b"id"])
    m2 = cmd(r, "TABLET.MERGE", "/m", ids[0])
    assert [t[b"id"] for t in tablets(r, "/m")] == [m2]
    check_rows(r, "/m", want)
    info = r.info("scree")
    assert sum(v["tablet_merges"] for k, v in info.items() if k.startswith("shard")) == 2, info
    docs = r.execute_command("COMMAND DOCS", "tablet.merge", NEVER_DECODE=True)
    assert docs[0] == b"tablet.merge" and b"Merges a table's tablet" in docs[1][1]


@pytest.mark.parametrize("kill", [False, True])
def test_rows_survive_merges_and_restarts(tmp_path, kill):
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/t", "KEY", "u64", "TABLETS", 1)
    want = {i: f"a{i}" for i in range(6000)}
    fill(r, "/t", 0, 6000, "a")
    cmd(r, "SAVE")
    split_all(r, "/t", [2000, 4000])
    fill(r, "/t", 0, 6000, "b")                 # half in memtables, half flushed
    want = {i: f"b{i}" for i in range(6000)}
    cmd(r, "SAVE")
    fill(r, "/t", 0, 3000, "c")
    want.update({i: f"c{i}" for i in range(3000)})
    ids = [t[b"id"] for t in tablets(r, "/t")]
    cmd(r, "TABLET.MERGE", "/t", ids[0])
    fill(r, "/t", 2500, 3500, "d")
    want.update({i: f"d{i}" for i in range(2500, 3500)})
    check_rows(r, "/t", want)
    s.stop(sig=signal.SIGKILL if kill else signal.SIGTERM)
    s.start()
    r = s.client()
    assert len(tablets(r, "/t")) == 2
    check_rows(r, "/t", want)
    cmd(r, "TABLET.MERGE", "/t", tablets(r, "/t")[0][b"id"])
    check_rows(r, "/t", want)
    s.stop()
    s.start()
    check_rows(s.client(), "/t", want)
    s.close()


def test_small_cold_neighbours_merge_by_themselves(tmp_path):
    s = Server(dir=str(tmp_path / "d"), args=["--tablet-merge-after", "1"]).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/cold", "KEY", "u64", "TABLETS", 1)
    cmd(r, "TABLE.CREATE", "/pre", "KEY", "u64", "SPLIT", 1, 100, "SPLIT", 1, 200)
    cmd(r, "TABLE.CREATE", "/off", "KEY", "u64", "TABLETS", 1, "AUTO-SPLIT-SIZE", "off")
    fill(r, "/cold", 0, 2000)
    fill(r, "/off", 0, 2000)
    split_all(r, "/cold", [500, 1000, 1500])
    split_all(r, "/off", [1000])
    assert len(tablets(r, "/cold")) == 4
    wait_for(lambda: len(tablets(r, "/cold")) == 1, "the cold tablets' merges")
    check_rows(r, "/cold", {i: f"v{i}" for i in range(2000)})
    info = r.info("scree")
    assert sum(v["tablet_merges"] for k, v in info.items() if k.startswith("shard")) == 3
    # A pre-split table keeps its tablets (MIN-TABLETS defaults to the
    # count asked for); a table that does not split by itself never merges.
    d = cmd(r, "TABLE.DESCRIBE", "/pre")
    opts = d[d.index(b"options") + 1]
    assert len(tablets(r, "/pre")) == 3 and opts[opts.index(b"min-tablets") + 1] == 3
    assert len(tablets(r, "/off")) == 2
    s.close()


def test_merges_under_concurrent_writes_and_paged_reads(tmp_path):
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/w", "KEY", "u64", "u64", "TABLETS", 1)
    stop = threading.Event()
    errors = []
    written = [0, 0, 0, 0]

    def reader():
        c = s.client()
        try:
            while not stop.is_set():
                walk_pages(c, "/w")
        except Exception as e:      # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=part_writer, args=(s, "/w", p, stop, written, errors))
               for p in range(4)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for rnd in range(6):
            wait_for(lambda: min(written) > 200 * (rnd + 1) or errors, "writes")
            split_all(r, "/w", [1, 2, 3])
            while len(tablets(r, "/w")) > 1:
                cmd(r, "TABLET.MERGE", "/w", tablets(r, "/w")[0][b"id"])
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    check_parts(r, "/w", written)
    s.close()


def test_merges_survive_kill9_at_random_moments(tmp_path):
    """A thread splits and merges the table's tablets over and over while
    rows are written; kill -9 at a random moment, 5 rounds: every
    acknowledged row reads back, none twice."""
    rnd = random.Random(2626)
    s = Server(dir=str(tmp_path / "d")).start()
    r = s.client()
    cmd(r, "TABLE.CREATE", "/k", "KEY", "u64", "TABLETS", 1)
    acked, merges = {}, [0]
    for round_ in range(5):
        stop = threading.Event()

        def churn():
            c = s.client()
            try:
                while not stop.is_set():
                    ts = tablets(c, "/k")
                    if len(ts) < 4:
                        t = ts[rnd.randrange(len(ts))]
                        lo = t[b"start"][0] if t[b"start"] != b"-inf" else 0
                        hi = t[b"end"][0] if t[b"end"] != b"+inf" else 1 << 20
                        if hi - lo > 2:
                            cmd(c, "TABLET.SPLIT", "/k", t[b"id"], "AT", (lo + hi) // 2)
                    else:
                        cmd(c, "TABLET.MERGE", "/k", ts[rnd.randrange(len(ts) - 1)][b"id"])
                        merges[0] += 1
                    if rnd.random() < 0.3:
                        cmd(c, "SAVE")
            except (redis.ConnectionError, redis.ResponseError):
                pass            # killed mid-change

        th = threading.Thread(target=churn)
        th.start()
        w = s.client()
        deadline = time.monotonic() + rnd.uniform(0.3, 1.5)
        i = 0
        try:
            while time.monotonic() < deadline and i < 20000:
                k = rnd.randrange(1 << 20)
                cmd(w, "ROW.PUT", "/k", k, f"r{round_}:{i}")
                acked[k] = f"r{round_}:{i}"
                i += 1
        finally:
            s.stop(sig=signal.SIGKILL)
            stop.set()
            th.join()
        s.start()
        check_rows(s.client(), "/k", acked)
    assert merges[0] >= 3, merges
    s.close()
