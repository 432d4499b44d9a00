# SPDX-License-Identifier: Apache-2.0
"""Cross-shard isolation and transactions on a 2-shard server: MSET/MGET
and MULTI/EXEC never seen half-done by other connections, Redis's
MULTI/EXEC/WATCH semantics (texts included), redis-py's pipeline and
transaction helpers, and deadlock freedom. Every loop is bounded; nothing
asserts a timing."""
import threading

import pytest
import redis

KEYS = ["k%d" % i for i in range(16)]   # spread over both shards


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def run_threads(fns):
    errors = []

    def wrap(fn):
        try:
            fn()
        except Exception as e:  # noqa: BLE001 -- reported by the test
            errors.append(e)

    ts = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not any(t.is_alive() for t in ts), "a client never finished"
    assert not errors, errors


@pytest.fixture
def r(server):
    """Replies as the server sent them (no redis-py callbacks)."""
    c = server.client()
    c.response_callbacks.clear()
    yield c
    c.close()


def all_equal(vals):
    return len(set(vals)) == 1, vals


# ---- Redis semantics ----

def test_queued_and_exec_replies(r):
    r.set("n", 10)
    assert r.execute_command("MULTI") == b"OK"
    assert r.execute_command("INCR", "n") == b"QUEUED"
    assert r.execute_command("GET", "n") == b"QUEUED"
    assert r.execute_command("PING") == b"QUEUED"
    assert r.execute_command("EXEC") == [11, b"11", b"PONG"]


def test_empty_exec(r):
    assert r.execute_command("MULTI") == b"OK"
    assert r.execute_command("EXEC") == []


def test_runtime_errors_are_per_command(r):
    r.set("s", "abc")
    r.execute_command("MULTI")
    r.execute_command("INCR", "s")
    r.execute_command("SET", "t", "1")
    r.execute_command("INCR", "t")
    out = r.execute_command("EXEC")
    assert isinstance(out[0], redis.ResponseError)
    assert str(out[0]) == "value is not an integer or out of range"
    assert out[1:] == [b"OK", 2]
    assert r.get("t") == b"2"


@pytest.mark.parametrize("bad", [["NOSUCHCMD", "x"], ["GET"], ["SHUTDOWN"]])
def test_queuing_error_aborts_exec(r, bad):
    r.execute_command("MULTI")
    r.execute_command("SET", "a", "1")
    with pytest.raises(redis.ResponseError):
        r.execute_command(*bad)
    assert err(r.execute_command, "EXEC") == \
        "Transaction discarded because of previous errors."
    assert r.get("a") is None
    # the connection is out of MULTI again
    assert err(r.execute_command, "EXEC") == "EXEC without MULTI"


def test_multi_errors(r):
    assert err(r.execute_command, "EXEC") == "EXEC without MULTI"
    assert err(r.execute_command, "DISCARD") == "DISCARD without MULTI"
    r.execute_command("MULTI")
    assert err(r.execute_command, "MULTI") == "MULTI calls can not be nested"
    assert err(r.execute_command, "WATCH", "x") == "WATCH inside MULTI is not allowed"
    r.execute_command("SET", "a", "1")
    # neither error flags the transaction
    assert r.execute_command("EXEC") == [b"OK"]


def test_discard(r):
    r.execute_command("MULTI")
    r.execute_command("SET", "a", "1")
    assert r.execute_command("DISCARD") == b"OK"
    assert r.get("a") is None
    assert err(r.execute_command, "EXEC") == "EXEC without MULTI"


def test_watch_change_by_other_client_aborts(server, r):
    other = server.client()
    r.set("w", "1")
    assert r.execute_command("WATCH", "w", "absent") == b"OK"
    other.set("w", "2")
    r.execute_command("MULTI")
    r.execute_command("SET", "w", "mine")
    assert r.execute_command("EXEC") is None
    assert r.get("w") == b"2"
    other.close()


def test_watch_created_key_aborts(server, r):
    other = server.client()
    r.execute_command("WATCH", "absent")
    other.set("absent", "now")
    r.execute_command("MULTI")
    r.execute_command("GET", "absent")
    assert r.execute_command("EXEC") is None
    other.close()


def test_watch_without_change_runs_and_is_cleared(server, r):
    other = server.client()
    r.set("w", "1")
    r.execute_command("WATCH", "w", "k1", "k2")
    r.execute_command("MULTI")
    r.execute_command("SET", "w", "mine")
    assert r.execute_command("EXEC") == [b"OK"]
    # EXEC unwatched: a change now does not abort the next transaction
    other.set("w", "x")
    r.execute_command("MULTI")
    r.execute_command("GET", "w")
    assert r.execute_command("EXEC") == [b"x"]
    other.close()


def test_unwatch_and_discard_forget_watches(server, r):
    other = server.client()
    r.execute_command("WATCH", "w")
    assert r.execute_command("UNWATCH") == b"OK"
    other.set("w", "1")
    r.execute_command("MULTI")
    r.execute_command("GET", "w")
    assert r.execute_command("EXEC") == [b"1"]
    r.execute_command("WATCH", "w")
    r.execute_command("MULTI")
    r.execute_command("DISCARD")
    other.set("w", "2")
    r.execute_command("MULTI")
    r.execute_command("GET", "w")
    assert r.execute_command("EXEC") == [b"2"]
    other.close()


def test_multi_key_commands_inside_exec(r):
    r.execute_command("MULTI")
    r.execute_command("MSET", *sum(([k, "v" + k] for k in KEYS), []))
    r.execute_command("MGET", *KEYS)
    r.execute_command("DEL", *KEYS[:4])
    r.execute_command("EXISTS", *KEYS)
    out = r.execute_command("EXEC")
    assert out == [b"OK", [b"v" + k.encode() for k in KEYS], 4, len(KEYS) - 4]


def test_global_and_server_commands_run_at_exec(r):
    # Regression (issue 24): these were refused when queued ("'flushdb'
    # inside MULTI is not supported"); Redis queues them.
    r.mset({"a": 1, "b": 2, "c": 3})
    r.execute_command("MULTI")
    cmds = [("SET", "x", "1"), ("DBSIZE",), ("KEYS", "*"), ("EXISTS", "a"), ("FLUSHALL",),
            ("DBSIZE",), ("SET", "y", "2"), ("SCAN", "0", "COUNT", "100"), ("RANDOMKEY",),
            ("INFO", "keyspace"), ("FLUSHDB", "SYNC"), ("DBSIZE",), ("SET", "z", "3"),
            ("CONFIG", "GET", "slowlog-max-len"), ("CONFIG", "SET", "slowlog-max-len", "77"),
            ("CONFIG", "GET", "slowlog-max-len"), ("CLIENT", "SETNAME", "txname"),
            ("CLIENT", "GETNAME"), ("CLIENT", "ID"), ("SELECT", "0"), ("PING",)]
    for c in cmds:
        assert r.execute_command(*c) == b"QUEUED", c
    out = r.execute_command("EXEC")
    assert len(out) == len(cmds)
    assert out[:7] == [b"OK", 4, out[2], 1, b"OK", 0, b"OK"], out
    assert sorted(out[2]) == [b"a", b"b", b"c", b"x"], out
    cursor, keys = out[7]
    assert keys == [b"y"] or (keys == [] and cursor != b"0"), out[7]
    assert out[8] == b"y"
    assert b"db0:keys=1," in out[9], out[9]
    assert out[10:13] == [b"OK", 0, b"OK"]
    assert out[14] == b"OK" and out[15] == [b"slowlog-max-len", b"77"], out
    assert out[16:18] == [b"OK", b"txname"]
    assert out[18] == r.execute_command("CLIENT", "ID")
    assert out[19:] == [b"OK", b"PONG"]
    assert r.execute_command("CLIENT", "GETNAME") == b"txname"
    assert r.execute_command("KEYS", "*") == [b"z"]


def test_flushall_in_a_transaction_touches_the_watched_keys(server, r):
    # As Redis's "FLUSHALL is able to touch the watched keys" and "FLUSHDB
    # does not touch non affected keys", with the flush in another
    # client's transaction.
    other = server.client()
    for flush in ("FLUSHALL", "FLUSHDB"):
        r.set("w", "1")
        r.execute_command("WATCH", "w")
        other.execute_command("MULTI")
        other.execute_command(flush)
        assert other.execute_command("EXEC") == [b"OK"]
        r.execute_command("MULTI")
        r.execute_command("PING")
        assert r.execute_command("EXEC") is None, flush + " did not touch the watched key"
        r.execute_command("WATCH", "absent")
        other.execute_command("MULTI")
        other.execute_command(flush)
        other.execute_command("EXEC")
        r.execute_command("MULTI")
        r.execute_command("PING")
        assert r.execute_command("EXEC") == [b"PONG"], flush + " touched an absent key"
    other.close()


def test_redis_py_pipeline_is_a_transaction(r):
    p = r.pipeline()
    p.set("a", 1).incr("a").get("a").mget("a", "b")
    assert p.execute() == [b"OK", 2, b"2", [b"2", None]]


def test_pipeline_order_after_a_locked_command(r):
    """Regression: a command pipelined after MSET must see its writes."""
    for i in range(20):
        p = r.pipeline(transaction=False)
        p.mset({k: i for k in KEYS})
        for k in KEYS:
            p.get(k)
        out = p.execute()
        assert out[1:] == [str(i).encode()] * len(KEYS)


def test_watch_retry_increments_are_not_lost(server):
    n_clients, n_incr = 4, 25

    def worker():
        c = server.client()
        for _ in range(n_incr):
            def incr(pipe):
                v = int(pipe.get("counter") or 0)
                pipe.multi()
                pipe.set("counter", v + 1)
            c.transaction(incr, "counter")
        c.close()

    run_threads([worker] * n_clients)
    c = server.client()
    assert int(c.get("counter")) == n_clients * n_incr
    c.close()


# ---- isolation ----

def writer_mset(server, rounds, stop):
    def run():
        c = server.client()
        for i in range(rounds):
            c.mset({k: i for k in KEYS})
        stop.set()
        c.close()
    return run


def writer_multi(server, rounds, stop):
    def run():
        c = server.client()
        for i in range(rounds):
            p = c.pipeline()
            for k in KEYS:
                p.set(k, i)
            p.execute()
        stop.set()
        c.close()
    return run


def reader_mget(server, stop, limit=3000):
    def run():
        c = server.client()
        for _ in range(limit):
            ok, vals = all_equal(c.mget(KEYS))
            assert ok, vals
            if stop.is_set():
                break
        c.close()
    return run


def reader_multi_get(server, stop, limit=3000):
    def run():
        c = server.client()
        for _ in range(limit):
            p = c.pipeline()
            for k in KEYS:
                p.get(k)
            ok, vals = all_equal(p.execute())
            assert ok, vals
            if stop.is_set():
                break
        c.close()
    return run


@pytest.mark.parametrize("writer,reader", [
    (writer_mset, reader_mget), (writer_multi, reader_mget),
    (writer_mset, reader_multi_get), (writer_multi, reader_multi_get)])
def test_readers_never_see_half_a_write(server, writer, reader):
    c = server.client()
    c.mset({k: "init" for k in KEYS})
    c.close()
    stop = threading.Event()
    run_threads([writer(server, 150, stop), reader(server, stop), reader(server, stop)])


def test_single_key_reads_never_see_half_a_transaction(server):
    """GETs of two keys on one connection, between them another client's
    MSET: k0 is read first, so k1 is never older than k0."""
    stop = threading.Event()

    def reader():
        c = server.client()
        for _ in range(3000):
            a = int(c.get("k0"))
            b = int(c.get("k1"))
            assert b >= a, (a, b)
            if stop.is_set():
                break
        c.close()

    c = server.client()
    c.mset({"k0": 0, "k1": 0})
    c.close()
    run_threads([writer_mset(server, 150, stop), reader])


def test_opposite_order_msets_do_not_deadlock(server):
    fwd, back = KEYS, list(reversed(KEYS))

    def client(keys, tag):
        def run():
            c = server.client()
            for i in range(150):
                c.mset({k: "%s%d" % (tag, i) for k in keys})
                p = c.pipeline()
                for k in keys:
                    p.set(k, tag)
                p.execute()
            c.close()
        return run

    run_threads([client(fwd, "f"), client(back, "b"), reader_mget(server, threading.Event(), 300)])
    c = server.client()
    ok, vals = all_equal(c.mget(KEYS))
    assert ok, vals
    c.close()


def test_writes_of_a_transaction_survive_restart(server):
    c = server.client()
    p = c.pipeline()
    for k in KEYS:
        p.set(k, "durable")
    p.execute()
    c.close()
    server.stop()
    server.start()
    c = server.client()
    assert c.mget(KEYS) == [b"durable"] * len(KEYS)
    c.close()


def test_global_commands_in_a_transaction_are_isolated(server):
    """A transaction's DBSIZE and KEYS see all of another client's MSET or
    multi-key DEL or none of it, and a transaction's FLUSHALL never lands
    inside one: the transaction holds every shard's whole table."""
    stop = threading.Event()
    n = len(KEYS)

    def writer():
        c = server.client()
        for i in range(150):
            c.mset({k: i for k in KEYS})
            c.delete(*KEYS)
        stop.set()
        c.close()

    def counter():
        c = server.client()
        for _ in range(3000):
            p = c.pipeline()
            p.dbsize()
            p.keys("*")
            size, keys = p.execute()
            assert size in (0, n) and len(keys) == size, (size, keys)
            if stop.is_set():
                break
        c.close()

    def flusher():
        c = server.client()
        for _ in range(100):
            p = c.pipeline()
            p.flushall()
            p.mset({k: "f" for k in KEYS})
            p.execute()
            if stop.is_set():
                break
        c.close()

    run_threads([writer, counter, counter, flusher])


def test_global_transactions_and_key_commands_never_deadlock(server):
    """Transactions locking every shard's table run among single-key
    writes, multi-key commands and transactions on keys (which park behind
    them, or let a lock set holding keys take its next one): every client
    finishes, and MGET never sees half an MSET."""
    stop = threading.Event()

    def globals_():
        c = server.client()
        for i in range(100):
            p = c.pipeline()
            p.set("g", i)
            p.dbsize()
            p.flushdb() if i % 10 == 0 else p.keys("single*")
            p.get("g")
            out = p.execute()
            assert out[3] == (None if i % 10 == 0 else str(i).encode()), out
        c.close()

    def single():
        c = server.client()
        for i in range(1500):
            c.incr("single%d" % (i % 7))
            if stop.is_set():
                break
        c.close()

    run_threads([globals_, single, single, writer_mset(server, 150, stop),
                 writer_multi(server, 100, threading.Event()), reader_mget(server, stop)])
