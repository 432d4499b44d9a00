# SPDX-License-Identifier: Apache-2.0
"""Bounded under abuse (issue 23): the memory all clients hold together
(maxmemory-clients), backpressure on a client that never reads, and the
bounds of one MULTI queue. Every load is bounded in count and time; the
tests wait for the server's counters, never for a fixed time, and assert
no timing."""
import socket
import time

import pytest
import redis

from server_util import Server

MIB = 1 << 20


def info(r, section):
    return r.info(section)


def wait_for(cond, timeout=30, what="condition"):
    """Polls cond() until it returns a true value (returned) or timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def never_reading_clients(server, n, req):
    """n connections that send req (as much as the server takes within
    half a second each) and never read."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", server.port))
        s.settimeout(0.5)
        try:
            s.sendall(req)
        except (socket.timeout, OSError):
            pass            # the server stopped reading (or closed us)
        socks.append(s)
    return socks


def big_gets(n_keys, count):
    return b"".join(b"*2\r\n$3\r\nGET\r\n$4\r\nbig%d\r\n" % (i % n_keys) for i in range(count))


def test_maxmemory_clients_setting(r):
    assert r.config_get("maxmemory-clients") == {"maxmemory-clients": "10%"}
    r.config_set("maxmemory-clients", "32mb")
    assert r.config_get("maxmemory-clients") == {"maxmemory-clients": str(32 * MIB)}
    r.config_set("maxmemory-clients", "5%")
    assert r.config_get("maxmemory-clients") == {"maxmemory-clients": "5%"}
    assert info(r, "memory")["maxmemory_clients"] == int(r.config_get("maxmemory")["maxmemory"]) * 5 // 100
    r.config_set("maxmemory-clients", "0")
    assert info(r, "memory")["maxmemory_clients"] == 0
    for bad in ("101%", "0%", "x", "-1", "%"):
        with pytest.raises(redis.ResponseError):
            r.config_set("maxmemory-clients", bad)


def test_clients_that_never_read_are_bounded_in_total_and_the_biggest_closed():
    # 24 connections pipelining GETs of 512 KiB values and never reading:
    # before the fix each held up to 256 replies (128 MiB; 3 GiB in all).
    s = Server(smp=2, args=["--maxmemory-clients", "16mb"]).start()
    socks = []
    try:
        r = s.client()
        big = b"x" * (512 << 10)
        for k in range(4):                      # on both shards
            r.set("big%d" % k, big)
        base = s.rss_kib()
        socks = never_reading_clients(s, 24, big_gets(4, 200))
        # The offenders are closed until the clients fit again.
        wait_for(lambda: info(r, "stats")["evicted_clients"] > 0, what="evicted_clients")
        wait_for(lambda: info(r, "memory")["mem_clients_normal"] <= 16 * MIB,
                 what="client memory under maxmemory-clients")
        assert info(r, "clients")["connected_clients"] < 25
        assert "over maxmemory-clients" in s.output()
        grown_mib = (s.rss_kib() - base) / 1024
        assert grown_mib < 160, "server grew by %.0f MiB" % grown_mib
        # Everyone else is still served.
        assert r.ping()
        assert r.get("big1") == big
    finally:
        for x in socks:
            x.close()
        s.close()


def test_a_client_that_never_reads_stops_being_read():
    # No total limit: only the connection's own backpressure bounds it.
    # Its replies come from both shards, so most wait behind the head or
    # are made on the other shard; before the fix they were not counted
    # and 256 of them (256 MiB) piled up.
    s = Server(smp=2, args=["--maxmemory-clients", "0"]).start()
    slow = None
    try:
        r = s.client()
        big = b"x" * MIB
        for k in range(4):
            r.set("big%d" % k, big)
        [slow] = never_reading_clients(s, 1, big_gets(4, 300))
        wait_for(lambda: info(r, "memory")["mem_clients_normal"] >= MIB, what="replies held")
        # Settled: the server no longer parses its commands, so what it
        # holds stops growing. Sample it while the server has every chance
        # to go on (each sample is a round trip through both shards).
        held = max(info(r, "memory")["mem_clients_normal"] for _ in range(40))
        assert held < 8 * MIB, "a client that never reads holds %.1f MiB" % (held / MIB)
        assert r.ping()
    finally:
        if slow:
            slow.close()
        s.close()
