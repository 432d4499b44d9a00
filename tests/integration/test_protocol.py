# SPDX-License-Identifier: Apache-2.0
"""The protocol as clients use it: pipelines across shards in order,
RESP3, inline commands, binary data, protocol errors, AUTH, maxclients,
and a client that never reads its replies."""
import random
import socket
import time

import pytest
import redis

from server_util import Server, wait_for


def refused_and_closed(s, data, error):
    """Sends data on a new connection: error comes back and the server
    closes it."""
    c = s.raw()
    c.send(data)
    assert c.reply() == (b"-", error)
    assert c.is_closed()
    c.close()

def test_pipeline_of_10k_mixed_commands_replies_in_order(r):
    rng = random.Random(7)
    model, expect = {}, []
    p = r.pipeline(transaction=False)
    for i in range(10000):
        k = "p:%d" % rng.randrange(500)
        op = rng.randrange(6)
        if op == 0:
            v = "v%d" % i
            p.set(k, v)
            model[k] = v.encode()
            expect.append(True)
        elif op == 1:
            p.get(k)
            expect.append(model.get(k))
        elif op == 2:
            p.incr("n:" + k)
            model["n:" + k] = b"%d" % (int(model.get("n:" + k, b"0")) + 1)
            expect.append(int(model["n:" + k]))
        elif op == 3:
            p.delete(k)
            expect.append(1 if k in model else 0)
            model.pop(k, None)
        elif op == 4:
            p.exists(k, "p:none")
            expect.append(1 if k in model else 0)
        else:
            p.echo("e%d" % i)
            expect.append(b"e%d" % i)
    got = p.execute()
    assert got == expect


def test_resp3_via_hello(server):
    c = server.raw()
    c.cmd("HELLO", "3")
    t, m = c.reply()
    assert t == b"%"
    pairs = dict((k[1], v) for k, v in zip(m[::2], m[1::2]))
    assert pairs[b"server"] == (b"$", b"redis")
    assert pairs[b"proto"] == (b":", b"3")
    assert pairs[b"mode"] == (b"$", b"standalone") and pairs[b"role"] == (b"$", b"master")
    assert pairs[b"modules"] == (b"*", [])
    c.cmd("GET", "missing")
    assert c.reply() == (b"_", b"")
    c.cmd("CONFIG", "GET", "port")
    t, v = c.reply()
    assert t == b"%" and v[0] == (b"$", b"port")
    c.cmd("INFO", "server")
    t, v = c.reply()
    assert t == b"=" and v.startswith(b"txt:# Server")
    c.cmd("HELLO", "2")
    t, m = c.reply()
    assert t == b"*" and len(m) == 14
    c.cmd("GET", "missing")
    assert c.reply() == (b"$", None)
    c.cmd("HELLO", "4")
    assert c.reply() == (b"-", b"NOPROTO unsupported protocol version")
    c.cmd("HELLO", "3", "BOGUS")
    assert c.reply() == (b"-", b"ERR Syntax error in HELLO option 'BOGUS'")
    c.cmd("HELLO", "3", "SETNAME", "myname")
    c.reply()
    c.cmd("CLIENT", "GETNAME")
    assert c.reply() == (b"$", b"myname")
    c.close()


def test_inline_commands(server):
    c = server.raw()
    c.send(b"PING\r\nSET inl \"a b\"\r\nGET inl\nPING hello\r\nECHO 'x y'\r\n\r\nEXISTS inl nope\r\n")
    assert c.reply() == (b"+", b"PONG")
    assert c.reply() == (b"+", b"OK")
    assert c.reply() == (b"$", b"a b")
    assert c.reply() == (b"$", b"hello")
    assert c.reply() == (b"$", b"x y")
    assert c.reply() == (b":", b"1")
    c.close()


def test_binary_keys_and_values_and_the_empty_key(r):
    keys = [b"", b"\x00", b"a\x00b", b"\r\n", bytes(range(256)), b"\xff" * 100]
    for i, k in enumerate(keys):
        v = bytes([i]) + b"\x00\r\n" + bytes(range(256)) * 4
        assert r.set(k, v)
        assert r.get(k) == v
    assert r.exists(*keys) == len(keys)
    assert r.set(b"", b"")
    assert r.get(b"") == b""
    assert r.strlen(b"") == 0
    assert r.delete(*keys) == len(keys)
    assert r.get(b"") is None


def test_malformed_request_closes_only_that_connection(server):
    other = server.client()
    other.set("k", "v")
    bad = server.raw()
    bad.send(b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$x\r\n")
    assert bad.reply() == (b"+", b"PONG")
    t, text = bad.reply()
    assert t == b"-" and text == b"ERR Protocol error: invalid bulk length"
    assert bad.is_closed()
    bad.close()
    bad = server.raw()
    bad.send(b"*1\r\n$3\r\nfoo\r\n*abc\r\n")
    bad.reply()
    assert bad.reply() == (b"-", b"ERR Protocol error: invalid multibulk length")
    assert bad.is_closed()
    bad.close()
    assert other.get("k") == b"v"


def test_a_bulk_longer_than_any_value_is_refused_from_its_header():
    # Only the header is sent: the error and the close must come without
    # the body (the server used to wait for up to 64 MiB of it first).
    s = Server(args=["--max-value-bytes", "1000", "--max-key-bytes", "16"]).start()
    for header in (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1001\r\n",
                   b"*2\r\n$3\r\nset\r\n$999999999\r\n"):
        refused_and_closed(s, header, b"ERR Protocol error: invalid bulk length")
    refused_and_closed(s, b"*1048577\r\n", b"ERR Protocol error: invalid multibulk length")
    c = s.raw()
    c.cmd("SET", "k", b"v" * 1000)     # at the limit: read and run
    assert c.reply() == (b"+", b"OK")
    c.close()


def test_unknown_command_then_more_on_the_same_connection(server):
    c = server.raw()
    c.send(b"*2\r\n$4\r\nNOPE\r\n$1\r\nx\r\nPING\r\n")
    assert c.reply() == (b"-", b"ERR unknown command 'NOPE', with args beginning with: 'x' ")
    assert c.reply() == (b"+", b"PONG")
    c.close()


def test_requirepass_flow():
    s = Server(args=["--requirepass", "s3cret"]).start()
    try:
        c = s.raw()
        c.cmd("GET", "k")
        assert c.reply() == (b"-", b"NOAUTH Authentication required.")
        c.cmd("PING")       # as Redis 7.0: PING is not allowed before AUTH
        assert c.reply() == (b"-", b"NOAUTH Authentication required.")
        c.cmd("AUTH", "wrong")
        assert c.reply()[1].startswith(b"WRONGPASS")
        c.cmd("HELLO", "3")
        assert c.reply()[1].startswith(b"NOAUTH HELLO must be called")
        c.cmd("HELLO", "3", "AUTH", "default", "s3cret")
        assert c.reply()[0] == b"%"
        c.cmd("SET", "k", "v")
        assert c.reply() == (b"+", b"OK")
        c.close()
        r = s.client(password="s3cret")
        assert r.get("k") == b"v"
        # Before AUTH the parser takes at most 10 arguments (Redis's limit).
        refused_and_closed(s, b"*11\r\n", b"ERR Protocol error: unauthenticated multibulk length")
        c = s.raw()
        c.cmd("QUIT")
        assert c.reply() == (b"+", b"OK")
        assert c.is_closed()
    finally:
        s.close()


def test_auth_without_a_password_set(r):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("AUTH", "x")
    assert "called without any password configured" in str(e.value)
    assert r.execute_command("AUTH", "default", "anything") is True


def test_maxclients():
    s = Server(args=["--maxclients", "3"]).start()
    try:
        held = [s.raw() for _ in range(3)]
        for c in held:
            c.cmd("PING")
            assert c.reply() == (b"+", b"PONG")
        extra = s.raw()
        assert extra.line() == b"-ERR max number of clients reached"
        assert extra.is_closed()
        extra.close()
        held.pop().close()

        def admitted():
            # The server frees the slot when it sees the close: until then
            # a new client is refused (a fixed 0.2 s used to stand for it).
            c = s.raw()
            c.cmd("PING")
            try:
                if c.reply() == (b"+", b"PONG"):
                    return c
            except (ConnectionError, OSError):
                pass
            c.close()
            return None

        again = wait_for(admitted, "a client admitted after one of 3 left")
    finally:
        s.close()


def test_a_client_that_never_reads_does_not_grow_the_server():
    s = Server(smp=2).start()
    try:
        r = s.client()
        big = b"x" * (256 << 10)
        for k in ("big0", "big1", "big2", "big3"):
            r.set(k, big)
        base = s.rss_kib()
        slow = s.raw()
        slow.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.s.settimeout(5)
        req = b"".join(b"*2\r\n$3\r\nGET\r\n$4\r\nbig%d\r\n" % (i % 4) for i in range(4000))
        try:
            slow.s.sendall(req)     # 1 GiB of replies if the server never stopped reading
        except socket.timeout:
            pass                    # the server stopped reading: our send buffer filled up
        time.sleep(1.0)
        grown_mib = (s.rss_kib() - base) / 1024
        assert grown_mib < 200, "server grew by %.0f MiB" % grown_mib
        assert r.ping() and r.get("big1") == big, "others are still served"
        slow.close()
        time.sleep(0.2)
        assert r.dbsize() == 4
    finally:
        s.close()
