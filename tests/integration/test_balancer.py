# SPDX-License-Identifier: Apache-2.0
"""The tablet balancer (issue 26) on a 2-shard server: with every tablet
of a table on one shard and a uniform load it converges -- each shard
ends with a fair share -- and then stops moving; BALANCER
PAUSE/RESUME/STATUS; the setting that turns it off; tablets stay where
they are across a restart; and its metrics."""
import random
import threading
import time
import urllib.request

import pytest
import redis

from tablet_util import cmd, tablets
from server_util import WAIT_S, Server, free_port, wait_for


def status(r):
    s = cmd(r, "BALANCER", "STATUS")
    return dict(zip(s[::2], s[1::2]))


def on_one_shard(r, path, n):
    """A table of n tablets, all on one shard (moved there by hand)."""
    cmd(r, "TABLE.CREATE", path, "KEY", "u64", "TABLETS", n)
    for t in tablets(r, path):
        if t[b"shard"] != 0:
            cmd(r, "TABLET.MOVE", path, t[b"id"], 0)
    assert {t[b"shard"] for t in tablets(r, path)} == {0}


def per_shard(r, path):
    ts = tablets(r, path)
    return [sum(1 for t in ts if t[b"shard"] == s) for s in (0, 1)]


def test_it_converges_under_a_uniform_load_and_then_stays(tmp_path):
    s = Server(dir=str(tmp_path / "d"), args=["--tablet-balancer", "yes"]).start()
    r = s.client()
    cmd(r, "BALANCER", "PAUSE")
    assert status(r)[b"state"] == b"paused"
    on_one_shard(r, "/u", 8)
    stop = threading.Event()
    errors = []

    def load(k):
        c = s.client()
        try:
            rnd = random.Random(k)
            i = 0
            while not stop.is_set() and i < 10 ** 7:
                cmd(c, "ROW.PUT", "/u", rnd.getrandbits(64), "x")   # every tablet alike
                i += 1
        except Exception as e:      # noqa: BLE001 -- reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=load, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    try:
        cmd(r, "BALANCER", "RESUME")
        wait_for(lambda: per_shard(r, "/u") == [4, 4] or errors, "an even spread",
                 timeout=WAIT_S * 4)
        moves = status(r)[b"moves"]
        assert moves >= 4
        # Nothing moves back and forth: a few more rounds change nothing.
        time.sleep(6)
        assert per_shard(r, "/u") == [4, 4]
        assert status(r)[b"moves"] == moves
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
    s.stop()
    s.start()                       # tablets stay where they were
    assert per_shard(s.client(), "/u") == [4, 4]
    s.close()


def test_idle_tablets_spread_by_count_and_pause_holds_them(tmp_path):
    port = free_port()
    s = Server(dir=str(tmp_path / "d"), args=["--tablet-balancer", "yes",
                                              "--metrics-port", str(port)]).start()
    r = s.client()
    cmd(r, "BALANCER", "PAUSE")
    on_one_shard(r, "/idle", 6)
    time.sleep(3)
    assert per_shard(r, "/idle") == [6, 0], "paused: nothing moves"
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT_S).read()
    assert b'scree_balancer_paused{shard="0"} 1' in text
    cmd(r, "BALANCER", "RESUME")
    wait_for(lambda: per_shard(r, "/idle") == [3, 3], "a spread by count", timeout=WAIT_S * 4)
    st = status(r)
    assert st[b"state"] in (b"running", b"moving") and st[b"moves"] == 3 and b"tablet" in st[b"last"]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT_S).read()
    assert b'scree_balancer_moves_total{shard="0"} 3' in text
    assert b'scree_balancer_paused{shard="0"} 0' in text
    with pytest.raises(redis.ResponseError, match="STATUS, PAUSE or RESUME"):
        cmd(r, "BALANCER", "NOW")
    # The setting turns it off, at run time too.
    cmd(r, "CONFIG", "SET", "tablet-balancer", "no")
    assert status(r)[b"state"] == b"off"
    on_one_shard(r, "/idle2", 4)
    time.sleep(3)
    assert per_shard(r, "/idle2") == [4, 0]
    s.close()
