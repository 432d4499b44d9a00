# SPDX-License-Identifier: Apache-2.0
"""Request collapsing: concurrent misses for one URL make one origin
request; the others wait (over both workers) and are answered from its
response; a response that may not be stored sends them to the origin
themselves; a failed fetch answers them all with its error."""
import threading

from proxy_util import Proxy, Route, request, wait_for

N = 12


def concurrent_gets(proxy, path, n=N):
    results = [None] * n

    def one(i):
        results[i] = request(proxy.port, "GET", path)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    return threads, results


def join(threads):
    for t in threads:
        t.join(60)
        assert not t.is_alive()


def test_concurrent_misses_make_one_origin_request(origin):
    p = Proxy([origin], threads=2).start()
    gate = threading.Event()
    body = b"slow body " * 10000
    origin.routes["/slow"] = Route(headers={"Cache-Control": "max-age=60"}, body=body, gate=gate)
    threads, results = concurrent_gets(p, "/slow")
    wait_for(lambda: origin.count("/slow") == 1, "the leader's origin request")
    wait_for(lambda: p.metrics()["scree_proxy_collapsed_waiting"] == N - 1,
             "the other %d requests waiting" % (N - 1))
    gate.set()
    join(threads)
    assert origin.count("/slow") == 1
    assert all(r.status == 200 and r.body == body for r in results)
    assert sorted(r["x-cache"] for r in results) == ["HIT"] * (N - 1) + ["MISS"]
    m = p.metrics()
    assert m["scree_proxy_cache_collapsed_total"] == N - 1
    assert m["scree_proxy_cache_misses_total"] == 1
    assert m["scree_proxy_collapsed_waiting"] == 0
    assert request(p.port, "GET", "/slow")["x-cache"] == "HIT"


def test_an_unstorable_response_sends_the_waiters_to_the_origin(origin, proxy):
    gate = threading.Event()
    origin.routes["/private"] = Route(headers={"Cache-Control": "private"}, body="mine",
                                      gate=gate)
    threads, results = concurrent_gets(proxy, "/private", 6)
    wait_for(lambda: proxy.metrics()["scree_proxy_collapsed_waiting"] == 5, "5 waiting")
    gate.set()
    join(threads)
    assert all(r.status == 200 and r.body == b"mine" and r["x-cache"] == "MISS"
               for r in results)
    assert origin.count("/private") == 6


def test_a_failed_fetch_answers_every_waiter(origin):
    p = Proxy([origin], args=["--origin-timeout", "1"]).start()
    gate = threading.Event()
    origin.routes["/hang"] = Route(gate=gate)
    threads, results = concurrent_gets(p, "/hang", 5)
    wait_for(lambda: origin.count("/hang") == 1, "the leader's request")
    join(threads)
    gate.set()
    assert [r.status for r in results] == [504] * 5
    assert origin.count("/hang") == 1
