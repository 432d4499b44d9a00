# SPDX-License-Identifier: Apache-2.0
"""HTTP/1.1 on both sides: keep-alive and pipelining to clients,
keep-alive to the origin, bad and oversized requests, timeouts, origins
down or slow, several origins."""
import os
import socket
import tempfile
import threading
import time

import pytest

from proxy_util import (Client, Origin, Proxy, Route, build_request, curl, dead_port, request,
                        wait_for)

CACHED = {"Cache-Control": "max-age=60"}


def test_keep_alive_both_ways(origin, proxy):
    c = Client(proxy.port)
    for i in range(10):
        r = c.request("GET", "/k%d" % i)
        assert (r.status, r.body) == (200, b"body of /k%d" % i)
    for i in range(10):
        assert c.request("GET", "/k%d" % i)["x-cache"] == "HIT"
    c.close()
    assert origin.count() == 10
    assert len(origin.peers) <= 2       # reused origin connections (one per worker)


def test_pipelined_requests_are_answered_in_order(origin, proxy):
    origin.routes["/p404"] = Route(status=404, headers=CACHED, body="nope")
    assert request(proxy.port, "GET", "/p1").status == 200        # a hit below
    paths = ["/p1", "/p2", "/p404", "/p1", "/p3", "/p2"]
    c = Client(proxy.port)
    c.send(b"".join(build_request("GET", p) for p in paths) +
           build_request("HEAD", "/p3"))
    for p in paths:
        r = c.read_response()
        want = b"nope" if p == "/p404" else b"body of " + p.encode()
        assert r.body == want, p
    head = c.read_response(head=True)
    assert (head.status, head["content-length"]) == (200, str(len(b"body of /p3")))
    c.close()


def test_a_long_pipeline_fills_and_drains_the_queue(origin, proxy):
    for i in range(10):
        origin.routes["/q%d" % i] = Route(headers=CACHED, body="q%d" % i)
    c = Client(proxy.port)
    c.send(b"".join(build_request("GET", "/q%d" % (i % 10)) for i in range(100)))
    for i in range(100):
        assert c.read_response().body == b"q%d" % (i % 10)
    assert c.request("GET", "/q1").body == b"q1"
    c.close()


def expect_refused(port, data, status):
    c = Client(port)
    c.send(data)
    r = c.read_response()
    assert r.status == status, r.body
    assert r["connection"] == "close"
    assert c.is_closed()
    c.close()


@pytest.mark.parametrize("data,status", [
    (b"GARBAGE\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", 400),
    (b"GET / HTTP/9.9\r\nHost: x\r\n\r\n", 505),
    (b"GET / HTTP/1.1\r\n\r\n", 400),                                   # no Host
    (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: bad/host\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
     400),
    (b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
     400),
    (b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
], ids=["garbage", "bad-header", "version", "no-host", "two-hosts", "bad-host", "cl-and-te",
        "two-cl", "control-in-target"])
def test_a_malformed_request_gets_400_and_close(origin, proxy, data, status):
    expect_refused(proxy.port, data, status)
    assert origin.count() == 0


def test_after_a_bad_request_nothing_more_is_read(origin, proxy):
    c = Client(proxy.port)
    c.send(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\nBAD REQUEST\r\n\r\nGET /later HTTP/1.1\r\n"
           b"Host: x\r\n\r\n")
    assert c.read_response().status == 200
    assert c.read_response().status == 400
    assert c.is_closed()
    assert origin.count("/later") == 0


def test_huge_headers_get_431(origin, proxy):
    expect_refused(proxy.port, build_request("GET", "/", {"X-Big": "a" * 20000}), 431)
    many = {"X-H%d" % i: "v" for i in range(150)}
    expect_refused(proxy.port, build_request("GET", "/", many), 431)
    expect_refused(proxy.port, build_request("GET", "/" + "u" * 20000), 431)
    assert proxy.metrics()["scree_proxy_bad_requests_total"] == 3


def test_oversized_bodies_get_413(origin):
    p = Proxy([origin], args=["--max-body", "1k"]).start()
    # Told by Content-Length: refused before the body is sent.
    expect_refused(p.port, b"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n", 413)
    chunk = b"400\r\n" + b"x" * 1024 + b"\r\n"
    expect_refused(p.port, b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + chunk * 2 + b"0\r\n\r\n", 413)
    r = request(p.port, "POST", "/up", body=b"y" * 1000)
    assert r.status == 200 and origin.last("/up")[3] == b"y" * 1000


def test_a_chunked_request_body_is_forwarded(origin, proxy):
    c = Client(proxy.port)
    c.send(b"PUT /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
    assert c.read_response().status == 200
    assert origin.last("/chunked")[3] == b"hello world"


def test_expect_100_continue_with_curl(origin, proxy):
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"z" * 5000)
        f.flush()
        t0 = time.monotonic()
        status, _, _ = curl(proxy.url + "/expect", "--data-binary", "@" + f.name,
                            "-H", "Expect: 100-continue", "--expect100-timeout", "30")
    assert status == 200 and time.monotonic() - t0 < 25
    assert origin.last("/expect")[3] == b"z" * 5000


def test_the_header_timeout_closes_slow_requests(origin):
    p = Proxy([origin], args=["--header-timeout", "1"]).start()
    c = Client(p.port)
    c.send(b"GET / HTTP/1.1\r\nHost: x\r\n")        # and never the end
    t0 = time.monotonic()
    assert c.is_closed()
    assert time.monotonic() - t0 > 0.5
    # A body that stops coming is closed too.
    c = Client(p.port)
    c.send(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    assert c.is_closed()
    assert p.metrics()["scree_proxy_timeouts_total"] == 2


def test_the_idle_timeout_closes_kept_alive_connections(origin):
    p = Proxy([origin], args=["--idle-timeout", "1"]).start()
    c = Client(p.port)
    assert c.request("GET", "/idle").status == 200
    assert c.is_closed()
    c = Client(p.port)          # connected, never a byte
    assert c.is_closed()


def test_an_origin_that_is_down_gives_502(origin):
    p = Proxy(["127.0.0.1:%d" % dead_port()]).start()
    r = request(p.port, "GET", "/down")
    assert (r.status, r["x-cache"]) == (502, "MISS")
    assert request(p.port, "POST", "/down", body=b"x").status == 502
    assert p.metrics()["scree_proxy_origin_errors_total"] >= 2
    status, _, _ = curl(p.url + "/down")
    assert status == 502


def test_a_slow_origin_gives_504(origin):
    p = Proxy([origin], args=["--origin-timeout", "1"]).start()
    gate = threading.Event()
    origin.routes["/slow"] = Route(gate=gate)
    assert request(p.port, "GET", "/slow").status == 504
    gate.set()


def test_the_next_origin_serves_when_one_is_down(origin):
    p = Proxy(["127.0.0.1:%d" % dead_port(), origin]).start()
    for i in range(6):
        assert request(p.port, "GET", "/n%d" % i).status == 200
    assert origin.count() == 6


def test_origins_take_turns(origin):
    other = Origin()
    p = Proxy([origin, other], threads=1).start()
    for i in range(10):
        assert request(p.port, "GET", "/rr%d" % i).status == 200
    assert origin.count() == 5 and other.count() == 5
    other.close()


def test_absolute_form_targets_are_keyed_by_their_host(origin, proxy):
    origin.routes["/abs"] = Route(headers=CACHED, body="abs")
    c = Client(proxy.port)
    c.send(b"GET http://test.local/abs HTTP/1.1\r\nHost: ignored.test\r\n\r\n")
    assert c.read_response().body == b"abs"
    assert request(proxy.port, "GET", "/abs")["x-cache"] == "HIT"
    assert origin.last("/abs")[2]["Host"] == "test.local"


def test_upgrade_and_connect_are_refused(origin, proxy):
    expect_refused(proxy.port, b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                   b"Upgrade: websocket\r\n\r\n", 501)
    expect_refused(proxy.port, b"CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n", 501)


def test_a_client_that_leaves_mid_response_does_not_hurt(origin, proxy):
    big = os.urandom(4 << 20)
    origin.routes["/big"] = Route(headers={"Cache-Control": "no-store"}, body=big)
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", proxy.port))
        s.sendall(build_request("GET", "/big"))
        s.recv(1000)
        s.close()
    assert request(proxy.port, "GET", "/big").body == big


def test_out_of_descriptors_pauses_accepts_then_recovers(origin):
    import resource
    p = Proxy([origin])
    p.preexec = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    p.start()
    held = []
    try:
        for _ in range(80):             # more than the proxy has descriptors for
            held.append(socket.create_connection(("127.0.0.1", p.port)))
        wait_for(lambda: "pausing accepts" in p.output(), "accepts paused")
    finally:
        for s in held:
            s.close()
    wait_for(lambda: request(p.port, "GET", "/after").status == 200, "accepts again")


def test_pipelined_requests_with_bodies_are_taken_one_at_a_time(origin, proxy):
    c = Client(proxy.port)
    c.send(b"".join(build_request("POST", "/pb%d" % i, body=b"payload %d" % i)
                    for i in range(5)) + build_request("GET", "/pb-end"))
    for i in range(5):
        assert c.read_response().body == b"body of /pb%d" % i
        assert origin.last("/pb%d" % i)[3] == b"payload %d" % i
    assert c.read_response().body == b"body of /pb-end"
