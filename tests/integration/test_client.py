# SPDX-License-Identifier: Apache-2.0
"""CLIENT as Redis 7.0 has it (issue 24): KILL's errors for an unknown type
or user; LIST and INFO with Redis's fields in its order and real buffer
figures; REPLY ON|OFF|SKIP; NO-EVICT under maxmemory-clients."""
import socket

import pytest
import redis

from server_util import RawClient, Server, WAIT_S, resp, wait_for

# Redis 7.0's CLIENT LIST fields, in its order (scree adds lib-name and
# lib-ver, Redis 7.2's, after them).
REDIS_FIELDS = ["id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
                "ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp",
                "obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp"]


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def fields(line):
    return dict(part.partition("=")[::2] for part in line.strip().split(" "))


def rows(c):
    c.cmd("CLIENT", "LIST")
    t, text = c.reply()
    assert t == b"$"
    return {int(f["id"]): f for f in map(fields, text.decode().splitlines())}


def client_id(c):
    c.cmd("CLIENT", "ID")
    t, v = c.reply()
    assert t == b":"
    return int(v)


def test_client_kill_with_an_unknown_type_or_user_is_an_error(r):
    assert err(r.execute_command, "CLIENT", "KILL", "TYPE", "wrong_type") == \
        "Unknown client type 'wrong_type'"
    assert err(r.execute_command, "CLIENT", "KILL", "USER", "wrong_user") == \
        "No such user 'wrong_user'"
    assert err(r.execute_command, "CLIENT", "LIST", "TYPE", "bogus") == \
        "Unknown client type 'bogus'"
    assert err(r.execute_command, "CLIENT", "KILL", "SKIPME", "maybe") == "syntax error"
    assert r.execute_command("CLIENT", "KILL", "USER", "default") == 0      # skips me
    assert r.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 0
    assert r.ping()


def test_client_info_has_redis_fields_in_order_and_real_figures(server):
    c = server.raw()
    c.cmd("CLIENT", "INFO")             # 26 bytes as RESP, as in Redis's own test
    t, text = c.reply()
    line = text.decode().strip()
    assert list(fields(line))[:len(REDIS_FIELDS)] == REDIS_FIELDS
    f = fields(line)
    assert (f["flags"], f["multi"], f["qbuf"], f["argv-mem"]) == ("N", "-1", "26", "10")
    assert (f["obl"], f["oll"], f["omem"], f["multi-mem"], f["events"]) == \
        ("0", "0", "0", "0", "r")
    assert int(f["qbuf-free"]) > 0 and int(f["tot-mem"]) > 16384
    t = server.raw()                    # in MULTI: flag x, the queue's length and memory
    tid = client_id(t)
    t.send(resp("MULTI") + resp("SET", "k", "v"))
    assert [t.reply(), t.reply()] == [(b"+", b"OK"), (b"+", b"QUEUED")]
    f = rows(c)[tid]
    assert (f["flags"], f["multi"], f["cmd"]) == ("x", "1", "set")
    assert int(f["multi-mem"]) > 0
    t.close()
    c.close()


def test_client_list_shows_a_partial_command_and_unsent_output():
    s = Server(smp=1).start()
    o = s.raw()
    o.cmd("CLIENT", "NO-EVICT", "on")   # the observer is never the one evicted
    assert o.reply() == (b"+", b"OK")
    o.cmd("SET", "big", b"x" * (512 << 10))
    assert o.reply() == (b"+", b"OK")
    part = s.raw()
    pid = client_id(part)
    half = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\nabc"
    part.send(half)
    wait_for(lambda: rows(o)[pid]["qbuf"] == str(len(half)), "qbuf = the partial command")
    # A client that never reads: its replies pile up past the kernel's buffers.
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.settimeout(WAIT_S)
    slow.connect(("127.0.0.1", s.port))
    slow = RawClient(slow)
    sid = client_id(slow)
    slow.send(resp("GET", "big") * 16)
    wait_for(lambda: int(rows(o)[sid]["omem"]) >= 512 << 10, "omem of the unsent replies")
    f = rows(o)[sid]
    assert int(f["obl"]) > 0 and int(f["oll"]) >= 1
    assert int(f["tot-mem"]) > int(f["omem"]) and "w" in f["events"]
    for _ in range(16):
        assert slow.reply() == (b"$", b"x" * (512 << 10))
    part.send(b"x" * 97 + b"\r\n")
    assert part.reply() == (b"+", b"OK")
    f = rows(o)
    assert (f[sid]["omem"], f[sid]["oll"], f[pid]["qbuf"]) == ("0", "0", "0")


def replies_of(server, data):
    """What one connection gets back for data, the last command being a
    PING 'end' that is never muted here."""
    c = server.raw()
    c.send(data + resp("PING", "end"))
    got = []
    while True:
        reply = c.reply()
        if reply == (b"$", b"end"):
            break
        got.append(reply)
    c.close()
    return got


def test_client_reply_off_on_skip(server):
    keys = ["k%d" % i for i in range(8)]        # on both shards
    sets = b"".join(resp("SET", k, k) for k in keys)
    gets = b"".join(resp("GET", k) for k in keys)
    assert replies_of(server, resp("CLIENT", "REPLY", "OFF") + sets + resp("NOSUCH") +
                      resp("PING") + resp("CLIENT", "REPLY", "ON") + gets) == \
        [(b"+", b"OK")] + [(b"$", k.encode()) for k in keys]
    # SKIP mutes the next command only (a second SKIP is that command)
    assert replies_of(server, resp("CLIENT", "REPLY", "SKIP") + resp("GET", "k1") +
                      resp("GET", "k2") + resp("CLIENT", "REPLY", "SKIP") +
                      resp("CLIENT", "REPLY", "SKIP") + resp("GET", "k3") +
                      resp("GET", "k4")) == [(b"$", b"k2"), (b"$", b"k4")]
    # ON clears a pending SKIP and replies; SKIP under OFF does nothing
    assert replies_of(server, resp("CLIENT", "REPLY", "SKIP") + resp("CLIENT", "REPLY", "ON") +
                      resp("CLIENT", "REPLY", "OFF") + resp("CLIENT", "REPLY", "SKIP") +
                      resp("CLIENT", "REPLY", "ON") + resp("GET", "k5")) == \
        [(b"+", b"OK"), (b"+", b"OK"), (b"$", b"k5")]
    assert replies_of(server, resp("CLIENT", "REPLY") + resp("CLIENT", "REPLY", "MAYBE")) == [
        (b"-", b"ERR wrong number of arguments for 'client|reply' command"),
        (b"-", b"ERR syntax error")]
    # muted in MULTI too: the stream stays whole
    assert replies_of(server, resp("MULTI") + resp("CLIENT", "REPLY", "OFF") +
                      resp("SET", "m", "1") + resp("EXEC") + resp("CLIENT", "REPLY", "ON") +
                      resp("GET", "m")) == [(b"+", b"OK"), (b"+", b"OK"), (b"$", b"1")]
    st = server.client().info("commandstats")["cmdstat_client|reply"]
    assert (st["calls"], st["rejected_calls"], st["failed_calls"]) == (13, 1, 1)


def test_client_no_evict_is_never_the_one_evicted():
    s = Server(smp=1, args=["--maxmemory-clients", "256kb"]).start()
    o = s.raw()
    o.cmd("CLIENT", "NO-EVICT", "on")
    assert o.reply() == (b"+", b"OK")
    o.cmd("CLIENT", "INFO")
    assert fields(o.reply()[1].decode())["flags"] == "e"
    o.cmd("SET", "big", b"x" * (512 << 10))
    assert o.reply() == (b"+", b"OK")

    def stuffed(no_evict):
        c = socket.socket()
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.settimeout(WAIT_S)
        c.connect(("127.0.0.1", s.port))
        c = RawClient(c)
        cid = None
        if no_evict:                    # (an evictable client's first reply may be its last)
            c.cmd("CLIENT", "NO-EVICT", "on")
            assert c.reply() == (b"+", b"OK")
            cid = client_id(c)
        c.send(resp("GET", "big") * 16)
        return c, cid

    def evicted():
        o.cmd("INFO", "stats")
        text = o.reply()[1].decode()
        return int(text.split("evicted_clients:")[1].split()[0])

    keep, kid = stuffed(True)
    wait_for(lambda: int(rows(o)[kid]["omem"]) >= 256 << 10, "the client over the limit")
    assert evicted() == 0
    gone, _ = stuffed(False)
    wait_for(lambda: evicted() == 1, "the other client evicted")
    assert sorted(rows(o)) == sorted([kid, client_id(o)])
    with pytest.raises(ConnectionError):
        for _ in range(16):
            gone.reply()
    for _ in range(16):
        assert keep.reply() == (b"$", b"x" * (512 << 10))
    assert err(s.client().execute_command, "CLIENT", "NO-EVICT", "maybe") == "syntax error"
    assert err(s.client().execute_command, "CLIENT", "NO-EVICT") == \
        "wrong number of arguments for 'client|no-evict' command"
    o.cmd("CLIENT", "NO-EVICT", "off")
    assert o.reply() == (b"+", b"OK")
    o.cmd("CLIENT", "INFO")
    assert fields(o.reply()[1].decode())["flags"] == "N"
