# SPDX-License-Identifier: Apache-2.0
"""Per-partition rate limits over the Redis protocol (docs/tables.md,
"Per-partition rate limits"): PER-PARTITION-READS / -WRITES set by
TABLE.CREATE and TABLE.ALTER, shown by TABLE.DESCRIBE, kept across a
restart; a partition over its limit gets -RATELIMIT naming the limit,
while other partitions, other tables and tables without limits go on; a
refused multi-row write writes nothing.

No timing is asserted. A partition over its limit is driven with 200
pipelined commands against a limit of 5 a second: some must be refused
however slow the machine (that would take 40 ms a command). What must
pass stays well under the limit (at most 3 operations against 5), which
the limiter never refuses whatever the second; and the first 5 commands
of a fresh partition always pass."""
import pytest
import redis

from server_util import Server

T = "/app/t"
LIMIT = 5
BURST = 200


def cmd(r, *args):
    return r.execute_command(*args)


def pairs(flat):
    """A RESP2 map (a flat list) as a dict with str keys."""
    return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}


def options(r, table):
    return pairs(pairs(cmd(r, "TABLE.DESCRIBE", table))["options"])


def burst(r, *cmds):
    """Runs the commands pipelined; their replies, errors as exceptions."""
    p = r.pipeline(transaction=False)
    for c in cmds:
        p.execute_command(*c)
    return p.execute(raise_on_error=False)


def refused(replies, kind, table=T, limit=LIMIT):
    """How many replies are the rate limit's error, checking its text; every
    other reply must not be an error."""
    n = 0
    for x in replies:
        if isinstance(x, Exception):
            assert str(x) == f"RATELIMIT per-partition {kind} limit of {limit}/s exceeded for " \
                             f"{table}", x
            assert isinstance(x, redis.ResponseError)
            n += 1
    return n


@pytest.fixture
def r(server):
    c = server.client()
    cmd(c, "DIR.CREATE", "/app")
    yield c
    c.close()


def make(r, table=T, *opts, tablets=4):
    """A table of (user u64, n u64) hashed on user: user is the partition."""
    assert cmd(r, "TABLE.CREATE", table, "KEY", "u64", "u64", "HASHED", "PREFIX", 1,
               "TABLETS", tablets, *opts) == b"OK"


def puts(table, user, n, first=0):
    return [("ROW.PUT", table, user, i, f"v{i}") for i in range(first, first + n)]


def partition_rows(r, table, user):
    cur, rows = cmd(r, "ROW.RANGE", table, "GE", 1, user, "LE", 1, user, "LIMIT", 1000)
    assert cur == b"0"
    return {int(k[1]) for k, _ in rows}


def test_options_are_shown_altered_and_checked(r):
    make(r, T, "PER-PARTITION-WRITES", 100)
    o = options(r, T)
    assert o["per-partition-writes"] == 100 and o["per-partition-reads"] == 0
    assert cmd(r, "TABLE.ALTER", T, "per-partition-reads", 7) == b"OK"
    o = options(r, T)
    assert o["per-partition-reads"] == 7 and o["per-partition-writes"] == 100
    with pytest.raises(redis.ResponseError, match="PER-PARTITION-READS must be an integer "
                                                  "from 0 to 4294967295"):
        cmd(r, "TABLE.ALTER", T, "PER-PARTITION-READS", -1)
    with pytest.raises(redis.ResponseError, match="take no options|no options"):
        cmd(r, "TABLE.ALTER", "/redis/db0", "PER-PARTITION-READS", 5)


def test_a_partition_over_its_write_limit_is_refused_others_are_not(r):
    make(r, T, "PER-PARTITION-WRITES", LIMIT)
    replies = burst(r, *puts(T, 1, BURST))
    assert replies[:LIMIT] == [b"OK"] * LIMIT, "under the limit: never refused"
    assert refused(replies, "write") > 0
    # What was refused wrote nothing; what passed is there.
    passed = {i for i, x in enumerate(replies) if x == b"OK"}
    assert partition_rows(r, T, 1) == passed
    # Another partition of the same table, at once: not refused.
    assert burst(r, *puts(T, 2, 3)) == [b"OK"] * 3
    # Reads have their own limit (none here).
    replies = burst(r, *[("ROW.GET", T, 1, i) for i in range(BURST)])
    assert replies[0] == b"v0" and refused(replies, "read") == 0


def test_a_partition_over_its_read_limit_is_refused(r):
    make(r, T, "PER-PARTITION-READS", LIMIT)
    assert burst(r, *puts(T, 1, BURST)) == [b"OK"] * BURST, "writes have no limit"
    replies = burst(r, *[("ROW.GET", T, 1, 0)] * BURST)
    assert replies[:LIMIT] == [b"v0"] * LIMIT
    assert refused(replies, "read") > 0
    assert burst(r, *[("ROW.GET", T, 2, 0)] * 3) == [None] * 3, "a miss is a read, and passes"
    # A range within the partition is one read of it a call; ROW.DEL is a
    # write.
    rng = ("ROW.RANGE", T, "GE", 1, 3, "LE", 1, 3)
    replies = burst(r, *[rng] * BURST)
    assert all(x == [b"0", []] for x in replies[:LIMIT])
    assert refused(replies, "read") > 0
    replies = burst(r, *[("ROW.COUNT", T, "GE", 1, 4, "LE", 1, 4)] * BURST)
    assert replies[:LIMIT] == [0] * LIMIT and refused(replies, "read") > 0
    assert burst(r, *[("ROW.DEL", T, 1, i) for i in range(50)]) == [1] * 50
    # A range over the whole table (every partition) is not limited.
    replies = burst(r, *[("ROW.RANGE", T, "LIMIT", 1)] * BURST)
    assert refused(replies, "read") == 0


def test_a_table_without_limits_is_unaffected(r):
    make(r, "/app/free")
    make(r, T, "PER-PARTITION-READS", LIMIT, "PER-PARTITION-WRITES", LIMIT)
    assert burst(r, *puts("/app/free", 1, BURST)) == [b"OK"] * BURST
    assert burst(r, *[("ROW.GET", "/app/free", 1, 0)] * BURST) == [b"v0"] * BURST
    replies = burst(r, *[("ROW.WRITE", "/app/free", "PUT", 1, 0, "a", "DEL", 1, 1)] * BURST)
    assert replies == [b"OK"] * BURST
    # The Redis keyspace has no limits either.
    assert all(x in (True, b"OK") for x in burst(r, *[("SET", "k", "v")] * BURST))


def test_a_multi_row_write_with_one_partition_over_is_refused_whole(r):
    """Partitions 10..17 spread over both shards (8 tablets), so the write
    is a two-phase commit across them; partition 1 exhausted first, in the
    same pipeline. Refused: none of its rows; passed (the second turned
    between): all of them."""
    make(r, T, "PER-PARTITION-WRITES", LIMIT, tablets=8)
    refusals = 0
    for attempt in range(10):
        others = [("PUT", u, attempt, "x") for u in range(10, 18)]
        write = ("ROW.WRITE", T, *[w for op in others for w in op], "PUT", 1, 1000 + attempt, "y")
        replies = burst(r, *puts(T, 1, BURST, first=attempt * BURST), write)
        if isinstance(replies[-1], Exception):
            refused(replies[-1:], "write")
            refusals += 1
            want = None
        else:
            assert replies[-1] == b"OK"
            want = b"x"
        got = burst(r, *[("ROW.GET", T, u, attempt) for u in range(10, 18)])
        assert got == [want] * 8, f"attempt {attempt}: all or nothing"
    assert refusals > 0


def test_a_refused_cross_shard_write_gives_its_partitions_room_back(r):
    """A write of partitions u and h, h over its limit: when u's shard
    prepares first, u's write is counted and given back by the abort. 20
    such writes refused in one second, then u still has its room: 3 writes
    pass. (Pipelined writes run concurrently: u's room is taken from each
    prepare to its abort, so the 3 go in a later round trip.) The keys
    hash the same way every run, so the same pairs cross shards."""
    make(r, T, "PER-PARTITION-WRITES", LIMIT, tablets=8)
    checked = 0
    for h in range(1, 5):
        for u in range(100 * h, 100 * h + 4):
            writes = [("ROW.WRITE", T, "PUT", u, i, "x", "PUT", h, 1000 + i, "y")
                      for i in range(20)]
            replies = burst(r, *puts(T, h, BURST, first=u * BURST), *writes)
            if refused(replies[BURST:], "write") < 20:
                continue                # the second turned: u was written
            checked += 1
            assert burst(r, *puts(T, u, 3)) == [b"OK"] * 3, f"u {u}, h {h}"
    assert checked > 0


def test_a_single_shard_multi_row_write_is_refused_whole(r):
    make(r, T, "PER-PARTITION-WRITES", LIMIT, tablets=1)
    refusals = 0
    for attempt in range(10):
        write = ("ROW.WRITE", T, "PUT", 2, attempt, "x", "PUT", 3, attempt, "x",
                 "PUT", 1, 1000 + attempt, "y")
        replies = burst(r, *puts(T, 1, BURST, first=attempt * BURST), write)
        refusals += isinstance(replies[-1], Exception)
        want = None if isinstance(replies[-1], Exception) else b"x"
        assert burst(r, ("ROW.GET", T, 2, attempt), ("ROW.GET", T, 3, attempt)) == [want] * 2
    assert refusals > 0


def test_alter_sets_changes_and_lifts_the_limit(r):
    make(r, T)
    assert burst(r, *puts(T, 1, BURST)) == [b"OK"] * BURST
    assert cmd(r, "TABLE.ALTER", T, "PER-PARTITION-WRITES", LIMIT) == b"OK"
    assert refused(burst(r, *puts(T, 2, BURST)), "write") > 0, "on every shard at once"
    assert cmd(r, "TABLE.ALTER", T, "PER-PARTITION-WRITES", 2 * LIMIT) == b"OK"
    assert refused(burst(r, *puts(T, 3, BURST)), "write", limit=2 * LIMIT) > 0
    assert cmd(r, "TABLE.ALTER", T, "PER-PARTITION-WRITES", 0) == b"OK"
    assert burst(r, *puts(T, 3, BURST)) == [b"OK"] * BURST


def test_limits_survive_a_restart():
    s = Server().start()
    r = s.client()
    cmd(r, "DIR.CREATE", "/app")
    make(r, T, "PER-PARTITION-READS", 2 * LIMIT, "PER-PARTITION-WRITES", LIMIT)
    assert s.stop() == 0
    s.start()
    r = s.client()
    o = options(r, T)
    assert o["per-partition-reads"] == 2 * LIMIT and o["per-partition-writes"] == LIMIT
    replies = burst(r, *puts(T, 1, BURST))
    assert replies[:LIMIT] == [b"OK"] * LIMIT and refused(replies, "write") > 0
    # Counted by its prefix (redis-py parses "count=N" by its version).
    assert "count" in str(r.info("errorstats")["errorstat_RATELIMIT"])
    s.close()
