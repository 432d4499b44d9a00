# SPDX-License-Identifier: Apache-2.0
"""Tables against an in-memory model, through the server (issue 25):
random creates and drops, puts, deletes, multi-row writes (across
shards), range deletes, counts and paged range reads in both directions
with limits, every read checked; and tablet splits, merges and moves
(issue 26) between them, some after a SAVE so that the split tablets
share SSTables. Keys mix every part type at its edges
(0, -1, INT64_MIN, INT64_MAX, UINT64_MAX, empty bytes, 0x00, 0xFF, the
string NULL) and NULL parts. Seeded: a failure names its seed."""
import random

import pytest
import redis

I64 = [-(1 << 63), -1, 0, 1, (1 << 63) - 1, 42]
U64 = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 42]
BYTES = [b"", b"\x00", b"\xff", b"a\x00b", b"NULL", b"\\NULL", b"z" * 40, b"a", b"ab"]
TYPES = ["i64", "u64", "bytes"]


def part_value(rng, ty):
    if rng.random() < 0.12:
        return None
    if ty == "i64":
        return rng.choice(I64) if rng.random() < 0.7 else rng.randrange(-50, 50)
    if ty == "u64":
        return rng.choice(U64) if rng.random() < 0.7 else rng.randrange(0, 50)
    return rng.choice(BYTES) if rng.random() < 0.7 else bytes([rng.randrange(256)])


def arg(v):
    """A part as the command takes it: NULL, or the value (a bytes part of
    backslashes then NULL gains one backslash)."""
    if v is None:
        return b"NULL"
    if isinstance(v, bytes):
        if v.lstrip(b"\\") == b"NULL":
            return b"\\" + v
        return v
    return str(v).encode()


def sort_key(key):
    return tuple((0,) if v is None else (1, v) for v in key)


def decode_part(ty, x):
    if x is None:
        return None
    if ty == "bytes":
        return x
    return int(x)           # u64 above 2^63-1 comes as a bulk string (RESP2)


class Table:
    def __init__(self, rng, path):
        self.path = path
        self.types = [rng.choice(TYPES) for _ in range(rng.randrange(1, 4))]
        self.hashed = rng.random() < 0.3
        self.rows = {}      # key tuple -> value

    def create_args(self, rng):
        a = ["TABLE.CREATE", self.path, "KEY"] + self.types
        if self.hashed:
            a += ["HASHED", "PREFIX", 1, "TABLETS", rng.choice([1, 3, 8])]
        elif self.types[0] != "bytes" and rng.random() < 0.7:
            a += ["TABLETS", rng.choice([2, 5, 16])]
        return a

    def key(self, rng):
        return tuple(part_value(rng, ty) for ty in self.types)

    def decode_key(self, parts):
        return tuple(decode_part(ty, x) for ty, x in zip(self.types, parts))


def bounds(rng, t):
    """Random bounds: (args, predicate on a key). Hashed tables: none, or
    both with the same first part (one hash prefix)."""
    if t.hashed:
        if rng.random() < 0.4:
            return [], lambda k: True
        first = part_value(rng, t.types[0])
        lo = (first,) + tuple(part_value(rng, ty) for ty in t.types[1:rng.randrange(1, len(t.types) + 1)])
        hi = (first,) + tuple(part_value(rng, ty) for ty in t.types[1:rng.randrange(1, len(t.types) + 1)])
        specs = [("GE" if rng.random() < 0.5 else "GT", lo), ("LE" if rng.random() < 0.5 else "LT", hi)]
    else:
        specs = []
        for words in (("GE", "GT"), ("LE", "LT")):
            if rng.random() < 0.7:
                n = rng.randrange(1, len(t.types) + 1)
                specs.append((rng.choice(words), tuple(part_value(rng, ty) for ty in t.types[:n])))
    a, preds = [], []
    for word, p in specs:
        a += [word, len(p)] + [arg(v) for v in p]
        sp, n = sort_key(p), len(p)
        preds.append({"GE": lambda k, sp=sp, n=n: sort_key(k[:n]) >= sp,
                      "GT": lambda k, sp=sp, n=n: sort_key(k[:n]) > sp,
                      "LE": lambda k, sp=sp, n=n: sort_key(k[:n]) <= sp,
                      "LT": lambda k, sp=sp, n=n: sort_key(k[:n]) < sp}[word])
    return a, lambda k: all(p(k) for p in preds)


def check_range(r, rng, t):
    a, pred = bounds(rng, t)
    limit, rev = rng.choice([1, 2, 7, 50, 1000]), rng.random() < 0.5
    want = sorted((k for k in t.rows if pred(k)), key=sort_key, reverse=rev)
    got, cur, pages = [], "0", 0
    while True:
        try:
            cur, page = r.execute_command("ROW.RANGE", t.path, *a, "LIMIT", limit,
                                          *(["REV"] if rev else []), "CURSOR", cur)
        except redis.ResponseError as e:
            assert "start is after its end" in str(e) or "reversed" in str(e), str(e)
            assert not want
            return
        assert len(page) <= limit
        for key, value in page:
            k = t.decode_key(key)
            got.append(k)
            assert t.rows.get(k) == value, (k, value, t.rows.get(k))
        cur = cur.decode()
        pages += 1
        assert pages <= len(want) + 2
        if cur == "0":
            break
    if t.hashed and not a:
        assert sorted(got, key=sort_key) == sorted(want, key=sort_key)
        assert len(set(got)) == len(got)
    else:
        assert got == want
    assert r.execute_command("ROW.COUNT", t.path, *a) == len(want)


def split_some_tablet(r, rng, t):
    """Splits a tablet of t (its rows unchanged): a hashed table's at its
    middle, an ordered table's at a random key prefix, trying its tablets
    in turn until one holds the point (one on a boundary splits none).
    Returns whether it split one."""
    if rng.random() < 0.3:
        r.execute_command("SAVE")
    d = r.execute_command("TABLE.DESCRIBE", t.path)
    d = dict(zip(d[::2], d[1::2]))
    ids = [dict(zip(x[::2], x[1::2]))[b"id"] for x in d[b"tablets"]]
    if len(ids) > 40:
        return False
    at = []
    if not t.hashed:
        n = rng.randrange(1, len(t.types) + 1)
        at = ["AT", *[arg(part_value(rng, ty)) for ty in t.types[:n]]]
    for tid in rng.sample(ids, len(ids)):
        try:
            r.execute_command("TABLET.SPLIT", t.path, tid, *at)
            return True
        except redis.ResponseError as e:
            assert "not after" in str(e) or "not before" in str(e) or "too narrow" in str(e), e
    return False


def tablets_of(r, t):
    d = r.execute_command("TABLE.DESCRIBE", t.path)
    d = dict(zip(d[::2], d[1::2]))
    return [dict(zip(x[::2], x[1::2])) for x in d[b"tablets"]]


def merge_or_move(r, rng, t):
    """Moves a random tablet of t to the other shard, or merges two
    neighbours (moving one to the other's shard first). Returns 1 if it
    changed the layout."""
    ts = tablets_of(r, t)
    i = rng.randrange(len(ts))
    if rng.random() < 0.5 or len(ts) < 2:
        r.execute_command("TABLET.MOVE", t.path, ts[i][b"id"], 1 - ts[i][b"shard"])
        return 1
    i = min(i, len(ts) - 2)
    if ts[i][b"shard"] != ts[i + 1][b"shard"]:
        r.execute_command("TABLET.MOVE", t.path, ts[i + 1][b"id"], ts[i][b"shard"])
    r.execute_command("TABLET.MERGE", t.path, ts[i][b"id"])
    return 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_tables_against_a_model(r, seed):
    rng = random.Random(seed)
    r.execute_command("DIR.CREATE", "/m")
    tables, splits, changes = [], 0, 0
    for step in range(900):
        op = rng.random()
        if not tables or op < 0.02:
            t = Table(rng, f"/m/t{rng.randrange(4)}")
            if any(x.path == t.path for x in tables):
                continue
            r.execute_command(*t.create_args(rng))
            tables.append(t)
            continue
        t = rng.choice(tables)
        if op < 0.03:
            r.execute_command("TABLE.DROP", t.path)
            tables.remove(t)
            continue
        if op < 0.45:
            k, v = t.key(rng), b"v%d" % step
            r.execute_command("ROW.PUT", t.path, *[arg(x) for x in k], v)
            t.rows[k] = v
        elif op < 0.55:
            k = t.key(rng) if rng.random() < 0.3 or not t.rows else rng.choice(list(t.rows))
            assert r.execute_command("ROW.DEL", t.path, *[arg(x) for x in k]) == int(k in t.rows)
            t.rows.pop(k, None)
        elif op < 0.65:
            words, staged = [], {}
            for _ in range(rng.randrange(1, 6)):
                k = t.key(rng)
                if rng.random() < 0.7:
                    v = b"w%d" % step
                    words += ["PUT", *[arg(x) for x in k], v]
                    staged[k] = v
                else:
                    words += ["DEL", *[arg(x) for x in k]]
                    staged[k] = None
            r.execute_command("ROW.WRITE", t.path, *words)
            for k, v in staged.items():
                if v is None:
                    t.rows.pop(k, None)
                else:
                    t.rows[k] = v
        elif op < 0.70:
            a, pred = bounds(rng, t)
            gone = [k for k in t.rows if pred(k)]
            try:
                n = r.execute_command("ROW.DELRANGE", t.path, *a)
            except redis.ResponseError as e:
                assert not gone, str(e)
                continue
            assert n == len(gone)
            for k in gone:
                del t.rows[k]
        elif op < 0.73:
            splits += split_some_tablet(r, rng, t)
        elif op < 0.75:
            changes += merge_or_move(r, rng, t)
        elif op < 0.85:
            k = t.key(rng) if rng.random() < 0.3 or not t.rows else rng.choice(list(t.rows))
            assert r.execute_command("ROW.GET", t.path, *[arg(x) for x in k]) == t.rows.get(k)
        else:
            check_range(r, rng, t)
    for t in tables:
        check_range(r, rng, t)
    assert splits >= 10, splits
    assert changes >= 5, changes
