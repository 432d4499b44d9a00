# SPDX-License-Identifier: Apache-2.0
"""Key iteration (SCAN, KEYS, RANDOMKEY) and the range/float string
commands (GETRANGE, SETRANGE, GETEX, INCRBYFLOAT) on a 2-shard server."""
import threading
import time

import pytest
import redis

N_KEYS = 20000


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def fill(r, n, prefix="key:"):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.set(f"{prefix}{i}", i)
        if i % 1000 == 999:
            p.execute()
    p.execute()


def full_scan(r, count, match=None, max_calls=100000):
    seen, cur, calls = [], 0, 0
    while True:
        cur, keys = r.scan(cur, match=match, count=count)
        seen += keys
        calls += 1
        assert calls < max_calls
        if cur == 0:
            return seen


class Writer(threading.Thread):
    """Writes and deletes keys outside the scanned set until stopped."""

    def __init__(self, client):
        super().__init__(daemon=True)
        self.r = client
        self.stop = threading.Event()
        self.n = 0

    def run(self):
        while not self.stop.is_set() and self.n < 200000:
            self.r.set(f"other:{self.n}", "x")
            if self.n % 3 == 0:
                self.r.delete(f"other:{self.n // 2}")
            self.n += 1


@pytest.mark.parametrize("count", [10, 100, 1000])
def test_scan_complete_under_writes(server, r, count):
    fill(r, N_KEYS)
    w = Writer(server.client())
    w.start()
    try:
        seen = full_scan(r, count)
    finally:
        w.stop.set()
        w.join(30)
    mine = [k for k in seen if k.startswith(b"key:")]
    assert len(mine) == len(set(mine)), "a key was returned twice"
    assert set(mine) == {f"key:{i}".encode() for i in range(N_KEYS)}
    assert len(seen) == len(set(seen))
    assert w.n > 0


def test_scan_match_type_and_errors(r):
    fill(r, 3000)
    got = full_scan(r, 100, match="key:1*")
    want = {f"key:{i}".encode() for i in range(3000) if str(i).startswith("1")}
    assert sorted(got) == sorted(want)
    cur, keys, total = 0, None, []
    while True:
        cur, keys = r.scan(cur, count=50, _type="string")
        total += keys
        if cur == 0:
            break
    assert len(total) == 3000
    cur, calls = 0, 0
    while True:
        cur, keys = r.scan(cur, count=1000, _type="hash")
        assert keys == []
        calls += 1
        if cur == 0:
            break
    assert calls < 100
    assert err(r.execute_command, "SCAN", "x") == "invalid cursor"
    assert err(r.execute_command, "SCAN", "-1") == "invalid cursor"
    assert err(r.execute_command, "SCAN", "0", "COUNT", "0") == "syntax error"
    assert err(r.execute_command, "SCAN", "0", "COUNT", "x") == \
        "value is not an integer or out of range"
    assert err(r.execute_command, "SCAN", "0", "BOGUS", "1") == "syntax error"
    assert err(r.execute_command, "SCAN", "0", "MATCH") == "syntax error"


def test_scan_empty_and_huge_cursor(r):
    assert full_scan(r, 10) == []
    cur, keys = r.scan(2**64 - 1)
    assert cur == 0 and keys == []
    r.set("a", "1")
    assert full_scan(r, 1) == [b"a"]


def test_keys(r):
    assert r.keys("*") == []
    fill(r, 500)
    r.set("other", "1")
    assert len(r.keys("*")) == 501
    assert sorted(r.keys("key:4?")) == sorted(f"key:4{i}".encode() for i in range(10))
    assert r.keys("nomatch*") == []
    assert r.keys("other") == [b"other"]


def test_randomkey(r):
    assert r.randomkey() is None
    r.set("only", "1")
    for _ in range(10):
        assert r.randomkey() == b"only"
    fill(r, 200)
    seen = {r.randomkey() for _ in range(50)}
    assert len(seen) > 1
    assert all(k == b"only" or k.startswith(b"key:") for k in seen)


def test_getrange(r):
    r.set("s", "Hello World")
    assert r.getrange("s", 0, 4) == b"Hello"
    assert r.getrange("s", -5, -1) == b"World"
    assert r.getrange("s", -100, 4) == b"Hello"
    assert r.getrange("s", 6, 1000) == b"World"
    assert r.getrange("s", 5, 2) == b""
    assert r.getrange("s", -1, -5) == b""
    assert r.getrange("s", 0, -1) == b"Hello World"
    assert r.getrange("missing", 0, -1) == b""
    assert r.execute_command("SUBSTR", "s", 0, 0) == b"H"
    assert err(r.getrange, "s", "x", 1) == "value is not an integer or out of range"


def test_setrange(server, r):
    assert r.setrange("s", 0, "Hello") == 5
    assert r.setrange("s", 6, "World") == 11
    assert r.get("s") == b"Hello\x00World"
    assert r.setrange("s", 0, "J") == 11
    assert r.get("s") == b"Jello\x00World"
    assert r.setrange("new", 3, "x") == 4
    assert r.get("new") == b"\x00\x00\x00x"
    assert r.setrange("none", 5, "") == 0
    assert r.exists("none") == 0
    assert r.setrange("s", 100, "") == 11
    r.set("t", "abc", ex=100)
    r.setrange("t", 1, "B")
    assert r.get("t") == b"aBc" and r.ttl("t") > 90
    assert err(r.setrange, "s", -1, "x") == "offset is out of range"
    assert err(r.setrange, "s", "x", "x") == "value is not an integer or out of range"


STRING_MAX = "string exceeds maximum allowed size (proto-max-bulk-len)"


def test_setrange_and_append_past_max_value_bytes_give_redis_error_and_write_nothing():
    # Regression (issue 24): these said "value too long (max N bytes)";
    # Redis's text is what clients and its test suite match.
    from server_util import Server
    s = Server(args=["--max-value-bytes", "1000"]).start()
    try:
        r = s.client()
        assert r.setrange("k", 990, "x" * 10) == 1000
        assert err(r.setrange, "k", 991, "x" * 10) == STRING_MAX
        assert err(r.setrange, "k2", 1000, "x") == STRING_MAX
        assert err(r.setrange, "k2", 2**63 - 1, "x") == STRING_MAX
        assert r.exists("k2") == 0, "a refused SETRANGE created its key"
        assert r.setrange("k", 5000, "") == 1000, "an empty value is never too long"
        assert r.get("k") == b"\0" * 990 + b"x" * 10
        r.set("a", "y" * 999)
        assert err(r.append, "a", "zz") == STRING_MAX
        assert err(r.append, "a2", "z" * 1001) == STRING_MAX
        assert r.get("a") == b"y" * 999 and r.exists("a2") == 0
        assert r.append("a", "z") == 1000
    finally:
        s.close()


def test_getex(r):
    # Regression: GETEX without options read argv[2] (ASan).
    assert r.execute_command("GETEX", "missing") is None
    assert r.getex("missing") is None
    assert r.getex("missing", ex=10) is None
    assert r.exists("missing") == 0
    r.set("k", "v")
    assert r.getex("k") == b"v" and r.ttl("k") == -1
    assert r.getex("k", ex=100) == b"v" and 98 <= r.ttl("k") <= 100
    assert r.getex("k", px=200000) == b"v" and 199000 <= r.pttl("k") <= 200000
    assert r.getex("k", exat=int(time.time()) + 300) == b"v" and 298 <= r.ttl("k") <= 300
    assert r.getex("k", pxat=int(time.time() * 1000) + 400000) == b"v"
    assert 398 <= r.ttl("k") <= 400
    assert r.getex("k", persist=True) == b"v" and r.ttl("k") == -1
    assert r.execute_command("GETEX", "k", "PXAT", 1000) == b"v"
    assert r.get("k") is None
    r.set("k", "v")
    assert err(r.execute_command, "GETEX", "k", "EX", 0) == "invalid expire time in 'getex' command"
    assert err(r.execute_command, "GETEX", "k", "EX", -5) == "invalid expire time in 'getex' command"
    assert err(r.execute_command, "GETEX", "k", "EX") == "syntax error"
    assert err(r.execute_command, "GETEX", "k", "EX", 1, "PX", 1) == "syntax error"
    assert err(r.execute_command, "GETEX", "k", "BOGUS") == "syntax error"
    assert err(r.execute_command, "GETEX", "k", "EX", "x") == \
        "value is not an integer or out of range"


# (start value or None, increment, stored text) as Redis 7 stores it.
FLOAT_CASES = [
    (None, "3.0", b"3"),
    ("10.5", "0.1", b"10.6"),
    (None, "5.0e3", b"5000"),
    ("3", "1.5", b"4.5"),
    (None, "-0.0", b"0"),
    ("1", "-1", b"0"),
    (None, "1e20", b"100000000000000000000"),
    (None, "1e-5", b"0.00001"),
    (None, "1e-20", b"0"),
    (None, "0.1", b"0.1"),
    ("5", "-7.25", b"-2.25"),
    (None, "  ".strip() + "2", b"2"),
]


@pytest.mark.parametrize("start,by,want", FLOAT_CASES)
def test_incrbyfloat_formatting(r, start, by, want):
    if start is not None:
        r.set("f", start)
    r.incrbyfloat("f", by)
    assert r.get("f") == want
    raw = r.execute_command("GET", "f")
    assert raw == want


def test_incrbyfloat_errors_and_ttl(r):
    r.set("s", "abc")
    assert err(r.incrbyfloat, "s", 1) == "value is not a valid float"
    assert err(r.incrbyfloat, "x", "abc") == "value is not a valid float"
    assert err(r.incrbyfloat, "x", " 1") == "value is not a valid float"
    assert err(r.incrbyfloat, "x", "1 ") == "value is not a valid float"
    assert err(r.incrbyfloat, "x", "nan") == "value is not a valid float"
    assert err(r.incrbyfloat, "x", "inf") == "increment would produce NaN or Infinity"
    assert err(r.incrbyfloat, "x", "") == "value is not a valid float"
    assert err(r.incrbyfloat, "x", "1e5000") == "value is not a valid float"
    r.set("big", "1.1e4932")
    assert err(r.incrbyfloat, "big", "1.1e4932") == "increment would produce NaN or Infinity"
    assert r.exists("x") == 0
    r.set("t", "1.5", ex=100)
    r.incrbyfloat("t", "1")
    assert r.get("t") == b"2.5" and r.ttl("t") > 90
