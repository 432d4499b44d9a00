# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the tablet tests (test_tablets.py,
test_tablet_merge.py, test_tablet_move.py, test_balancer.py): commands,
expected errors, a table's tablets as TABLE.DESCRIBE lists them, and
loading and checking rows of a one-part u64 table, and writers and
paged walks of a two-part one."""
import pytest
import redis


def cmd(r, *args):
    return r.execute_command(*args)


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def tablets(r, path):
    d = cmd(r, "TABLE.DESCRIBE", path)
    d = dict(zip(d[::2], d[1::2]))
    return [dict(zip(t[::2], t[1::2])) for t in d[b"tablets"]]


def fill(r, path, lo, hi, tag="v"):
    """Rows lo..hi-1 of path: tag followed by the row."""
    p = r.pipeline(transaction=False)
    for i in range(lo, hi):
        p.execute_command("ROW.PUT", path, i, f"{tag}{i}")
        if i % 1000 == 999:
            p.execute()
    p.execute()


def check_rows(r, path, want, both_ways=False):
    """Every row of want (row -> value, or None: absent) reads back; the
    count agrees; paged ranges (up, and down with both_ways) give the live
    rows once each, in order."""
    p = r.pipeline(transaction=False)
    for i in want:
        p.execute_command("ROW.GET", path, i)
    got = dict(zip(want, p.execute()))
    bad = [i for i, v in want.items() if got[i] != (v.encode() if v else None)]
    assert not bad, f"{path}: {len(bad)} rows wrong, first {bad[:5]}"
    live = sorted(i for i, v in want.items() if v)
    assert cmd(r, "ROW.COUNT", path) == len(live)
    for rev in ((), ("REV",)) if both_ways else ((),):
        rows, cursor = [], "0"
        while True:
            cursor, page = cmd(r, "ROW.RANGE", path, *rev, "LIMIT", 700, "CURSOR", cursor)
            rows += [row[0][0] for row in page]
            if cursor == b"0":
                break
        assert rows == (live[::-1] if rev else live)


def part_writer(s, path, part, stop, written, errors, limit=200000):
    """ROW.PUT of rows (part, i) = "part:i" of a two-part u64 table, i from
    0 until stop (or limit); written[part] counts the acknowledged ones,
    a failure goes to errors."""
    c = s.client()
    try:
        i = 0
        while not stop.is_set() and i < limit:
            cmd(c, "ROW.PUT", path, part, i, f"{part}:{i}")
            written[part] = i + 1
            i += 1
    except Exception as e:      # noqa: BLE001 -- the caller reports it
        errors.append(repr(e))


def walk_pages(c, path):
    """One paged ROW.RANGE over path (500 rows a page), the keys strictly
    rising across pages; how many rows it gave."""
    cursor, last, n = "0", None, 0
    while True:
        cursor, page = cmd(c, "ROW.RANGE", path, "LIMIT", 500, "CURSOR", cursor)
        for row in page:
            key = tuple(int(x) for x in row[0])     # a u64 above 2^63 is a bulk
            assert last is None or key > last, (last, key)
            last = key
        n += len(page)
        if cursor == b"0":
            return n


def check_parts(r, path, written):
    """Each part's acknowledged rows (part, 0..written[part]-1) are there, in order."""
    for part, n in enumerate(written):
        rows = cmd(r, "ROW.RANGE", path, "GE", 1, part, "LE", 1, part, "LIMIT", n + 10)[1]
        assert [row[0][1] for row in rows] == list(range(n)), part
