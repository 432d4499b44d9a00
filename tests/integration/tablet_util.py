# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the tablet tests (test_tablets.py,
test_tablet_merge.py, test_tablet_move.py, test_balancer.py): commands,
expected errors, a table's tablets as TABLE.DESCRIBE lists them, and
loading and checking rows of a one-part u64 table."""
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
