# SPDX-License-Identifier: Apache-2.0
"""PURGE: one URL (one row), a prefix with a trailing * (one range delete
of [host 0x00 prefix, successor)), hosts kept apart, who may purge."""
from proxy_util import Proxy, Route, request, wait_for

CACHED = {"Cache-Control": "max-age=600"}


def fill(origin, proxy, paths, host="test.local"):
    for p in paths:
        origin.routes[p] = Route(headers=CACHED, body="body " + p)
        assert request(proxy.port, "GET", p, host=host).status == 200
    want = len(paths)
    wait_for(lambda: proxy.metrics()["scree_proxy_stores_total"] >= want, "the stores")


def cache_state(proxy, paths, host="test.local"):
    return {p: request(proxy.port, "HEAD", p, host=host)["x-cache"] for p in paths}


def test_purge_one_url(origin, proxy):
    fill(origin, proxy, ["/a", "/a/b", "/ab"])
    r = request(proxy.port, "PURGE", "/a")
    assert (r.status, r.body) == (200, b"purged 1\n")
    assert request(proxy.port, "PURGE", "/a").status == 404
    # Only /a went (HEAD misses refetch it: /a is stored again).
    assert cache_state(proxy, ["/a/b", "/ab"]) == {"/a/b": "HIT", "/ab": "HIT"}
    assert request(proxy.port, "GET", "/a")["x-cache"] == "MISS"
    assert proxy.metrics()["scree_proxy_purges_total"] == 2


def test_purge_a_prefix(origin, proxy):
    paths = ["/images/a.png", "/images/b/c.png", "/images", "/imagesX", "/img/x", "/", "/z"]
    fill(origin, proxy, paths)
    fill(origin, proxy, ["/images/other-host.png"], host="other.test")
    r = request(proxy.port, "PURGE", "/images/*")
    assert (r.status, r.body) == (200, b"purged 2\n")
    assert cache_state(proxy, ["/images", "/imagesX", "/img/x", "/", "/z"]) == dict.fromkeys(
        ["/images", "/imagesX", "/img/x", "/", "/z"], "HIT")
    assert request(proxy.port, "HEAD", "/images/other-host.png",
                   host="other.test")["x-cache"] == "HIT"
    for p in ("/images/a.png", "/images/b/c.png"):
        assert request(proxy.port, "GET", p)["x-cache"] == "MISS"
    assert proxy.metrics()["scree_proxy_purged_objects_total"] == 2
    # Nothing under the prefix: 200, 0.
    assert request(proxy.port, "PURGE", "/nothing/*").body == b"purged 0\n"


def test_purge_a_whole_host(origin, proxy):
    fill(origin, proxy, ["/x", "/y?q=1"])
    fill(origin, proxy, ["/x"], host="keep.test")
    r = request(proxy.port, "PURGE", "/*")
    assert r.body == b"purged 2\n"
    assert request(proxy.port, "HEAD", "/x", host="keep.test")["x-cache"] == "HIT"


def test_purge_from_is_enforced(origin):
    p = Proxy([origin], args=["--purge-from", "none"]).start()
    assert request(p.port, "PURGE", "/a").status == 403
    p.close()
    q = Proxy([origin], args=["--purge-from", "any"]).start()
    assert request(q.port, "PURGE", "/a").status == 404
