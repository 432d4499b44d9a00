# SPDX-License-Identifier: Apache-2.0
"""scree-proxy's caching rules: hits and misses, freshness (s-maxage,
max-age, Expires against Date, the default TTL) and expiry, what is never
stored, HEAD from a stored GET, 301 and 404, requests that bypass or
refresh the cache, objects over --max-object, chunked origins, the headers
replayed, conditional hits."""
import time

import pytest

from proxy_util import Proxy, Route, curl, http_date, request, wait_for


def get(proxy, path, headers=None, method="GET"):
    return request(proxy.port, method, path, headers)


def test_a_miss_is_fetched_once_then_hit(origin, proxy):
    origin.routes["/a"] = Route(headers={"Cache-Control": "max-age=60"}, body="alpha")
    first = get(proxy, "/a")
    assert (first.status, first.body, first["x-cache"]) == (200, b"alpha", "MISS")
    for _ in range(3):
        again = get(proxy, "/a")
        assert (again.status, again.body, again["x-cache"]) == (200, b"alpha", "HIT")
        assert again["age"] is not None and int(again["age"]) >= 0
        assert again["content-length"] == "5"
    assert origin.count("/a") == 1


def test_curl_sees_miss_then_hit(origin, proxy):
    origin.routes["/c"] = Route(headers={"Cache-Control": "max-age=60"}, body="curl body")
    status, headers, body = curl(proxy.url + "/c")
    assert (status, headers["x-cache"], body) == (200, "MISS", b"curl body")
    status, headers, body = curl(proxy.url + "/c")
    assert (status, headers["x-cache"], body) == (200, "HIT", b"curl body")
    assert origin.count("/c") == 1


def test_the_host_is_part_of_the_key(origin, proxy):
    origin.routes["/h"] = Route(headers={"Cache-Control": "max-age=60"}, body="x")
    assert request(proxy.port, "GET", "/h", host="one.test")["x-cache"] == "MISS"
    assert request(proxy.port, "GET", "/h", host="two.test")["x-cache"] == "MISS"
    assert request(proxy.port, "GET", "/h", host="ONE.test")["x-cache"] == "HIT"
    assert origin.count("/h") == 2


def wait_expired(proxy, path, what):
    """Requests path until the proxy fetches it again (a MISS)."""
    return wait_for(lambda: get(proxy, path)["x-cache"] == "MISS", what)


def test_max_age_expires_and_refetches(origin, proxy):
    origin.routes["/m"] = Route(headers={"Cache-Control": "max-age=1"}, body="m")
    t0 = time.monotonic()       # before the miss: its second may be gone before the hit
    assert get(proxy, "/m")["x-cache"] == "MISS"
    assert get(proxy, "/m")["x-cache"] == "HIT"
    wait_expired(proxy, "/m", "max-age=1 to expire")
    assert time.monotonic() - t0 > 0.3
    assert origin.count("/m") == 2


def test_s_maxage_wins_over_max_age(origin, proxy):
    origin.routes["/s"] = Route(headers={"Cache-Control": "max-age=3600, s-maxage=1"})
    assert get(proxy, "/s")["x-cache"] == "MISS"
    wait_expired(proxy, "/s", "s-maxage=1 to win over max-age=3600")
    # And the other way round: a long s-maxage keeps a short max-age fresh.
    origin.routes["/s2"] = Route(headers={"Cache-Control": "max-age=1, s-maxage=3600"})
    assert get(proxy, "/s2")["x-cache"] == "MISS"
    hit = wait_for(lambda: (lambda r: r if r["x-cache"] == "HIT" and int(r["age"]) >= 2
                            else None)(get(proxy, "/s2")), "Age to pass max-age while HIT")
    assert hit.status == 200 and origin.count("/s2") == 1


def test_expires_counts_from_the_origins_date(origin, proxy):
    past = time.time() - 1000     # a Date far off: only Expires - Date counts
    origin.routes["/e"] = Route(headers={"Date": http_date(past),
                                         "Expires": http_date(past + 2)})
    assert get(proxy, "/e")["x-cache"] == "MISS"
    assert get(proxy, "/e")["x-cache"] == "HIT"
    wait_expired(proxy, "/e", "Expires = Date + 2 s to pass")
    # Expires before Date, or not a date: stale at once, never stored.
    origin.routes["/e2"] = Route(headers={"Date": http_date(past),
                                          "Expires": http_date(past - 5)})
    origin.routes["/e3"] = Route(headers={"Expires": "0"})
    for path in ("/e2", "/e3"):
        assert get(proxy, path)["x-cache"] == "MISS"
        assert get(proxy, path)["x-cache"] == "MISS"
        assert origin.count(path) == 2


def test_default_ttl_applies_without_freshness(origin):
    p = Proxy([origin], args=["--default-ttl", "1"]).start()
    assert get(p, "/d")["x-cache"] == "MISS"
    assert get(p, "/d")["x-cache"] == "HIT"
    wait_expired(p, "/d", "the default TTL of 1 s to pass")
    p.close()
    q = Proxy([origin], args=["--default-ttl", "0"]).start()
    assert get(q, "/d0")["x-cache"] == "MISS"
    assert get(q, "/d0")["x-cache"] == "MISS"
    origin.routes["/d1"] = Route(headers={"Cache-Control": "max-age=60"})
    assert get(q, "/d1")["x-cache"] == "MISS"
    assert get(q, "/d1")["x-cache"] == "HIT"


@pytest.mark.parametrize("headers", [
    {"Cache-Control": "no-store, max-age=60"},
    {"Cache-Control": "private, max-age=60"},
    {"Cache-Control": "no-cache"},
    {"Cache-Control": "max-age=60", "Set-Cookie": "id=1"},
    {"Cache-Control": "max-age=60", "Vary": "Accept-Encoding"},
    {"Cache-Control": "max-age=0"},
], ids=["no-store", "private", "no-cache", "set-cookie", "vary", "max-age=0"])
def test_responses_never_stored(origin, proxy, headers):
    origin.routes["/n"] = Route(headers=headers, body="secret")
    for _ in range(2):
        r = get(proxy, "/n")
        assert (r.status, r.body, r["x-cache"]) == (200, b"secret", "MISS")
    assert origin.count("/n") == 2
    assert proxy.metrics()["scree_proxy_not_stored_total"] == 2


@pytest.mark.parametrize("status,stored", [(200, True), (301, True), (404, True),
                                           (302, False), (500, False), (503, False)])
def test_which_statuses_are_stored(origin, proxy, status, stored):
    origin.routes["/st"] = Route(status=status, headers={"Cache-Control": "max-age=60",
                                                         "Location": "/elsewhere"}, body="b")
    first, second = get(proxy, "/st"), get(proxy, "/st")
    assert first.status == second.status == status
    assert second["x-cache"] == ("HIT" if stored else "MISS")
    assert origin.count("/st") == (1 if stored else 2)
    if status == 301:
        assert second["location"] == "/elsewhere"


def test_head_is_served_from_a_stored_get(origin, proxy):
    origin.routes["/g"] = Route(headers={"Cache-Control": "max-age=60"}, body="0123456789")
    assert get(proxy, "/g").body == b"0123456789"
    head = get(proxy, "/g", method="HEAD")
    assert (head.status, head["x-cache"], head["content-length"]) == (200, "HIT", "10")
    assert origin.count("/g") == 1
    status, headers, _ = curl(proxy.url + "/g", "-I", "-H", "Host: test.local")
    assert (status, headers["x-cache"], headers["content-length"]) == (200, "HIT", "10")


def test_a_head_miss_stores_the_get(origin, proxy):
    origin.routes["/hg"] = Route(headers={"Cache-Control": "max-age=60"}, body="full body")
    head = get(proxy, "/hg", method="HEAD")
    assert (head.status, head["x-cache"], head["content-length"]) == (200, "MISS", "9")
    assert origin.count("/hg", "GET") == 1 and origin.count("/hg", "HEAD") == 0
    wait_for(lambda: proxy.metrics()["scree_proxy_stores_total"] == 1, "the GET stored")
    r = get(proxy, "/hg")
    assert (r["x-cache"], r.body) == ("HIT", b"full body")


def test_request_no_cache_refreshes_the_stored_copy(origin, proxy):
    origin.routes["/r"] = Route(headers={"Cache-Control": "max-age=60"}, body="v1")
    assert get(proxy, "/r").body == b"v1"
    origin.routes["/r"] = Route(headers={"Cache-Control": "max-age=60"}, body="v2")
    assert get(proxy, "/r").body == b"v1"
    fresh = get(proxy, "/r", {"Cache-Control": "no-cache"})
    assert (fresh.body, fresh["x-cache"]) == (b"v2", "BYPASS")
    wait_for(lambda: get(proxy, "/r").body == b"v2", "the refreshed copy served")
    assert get(proxy, "/r")["x-cache"] == "HIT"
    assert get(proxy, "/r", {"Pragma": "no-cache"})["x-cache"] == "BYPASS"


@pytest.mark.parametrize("headers", [{"Cache-Control": "no-store"},
                                     {"Authorization": "Bearer x"},
                                     {"Range": "bytes=0-1"}],
                         ids=["no-store", "authorization", "range"])
def test_requests_that_bypass_the_cache(origin, proxy, headers):
    origin.routes["/b"] = Route(headers={"Cache-Control": "max-age=60"}, body="by")
    for _ in range(2):
        assert get(proxy, "/b", headers)["x-cache"] == "BYPASS"
    assert origin.count("/b") == 2
    # Nothing was stored for them: a plain request misses.
    assert get(proxy, "/b")["x-cache"] == "MISS"
    assert proxy.metrics()["scree_proxy_cache_bypasses_total"] == 2


def test_other_methods_pass_through_with_their_body(origin, proxy):
    r = request(proxy.port, "POST", "/form", body=b"a=1&b=2")
    assert (r.status, r["x-cache"]) == (200, "BYPASS")
    method, path, headers, body = origin.last("/form")
    assert (method, body) == ("POST", b"a=1&b=2")
    assert headers["X-Forwarded-For"] == "127.0.0.1"
    assert request(proxy.port, "PUT", "/form", body=b"x")["x-cache"] == "BYPASS"
    assert origin.count("/form") == 2


def test_a_chunked_origin_response_is_stored_de_chunked(origin, proxy):
    body = b"".join(b"line %d\n" % i for i in range(500))
    origin.routes["/ch"] = Route(headers={"Cache-Control": "max-age=60"}, body=body,
                                 chunked=True)
    first = get(proxy, "/ch")
    assert (first.body, first["x-cache"], first["transfer-encoding"]) == (body, "MISS",
                                                                          "chunked")
    wait_for(lambda: proxy.metrics()["scree_proxy_stores_total"] == 1, "the copy stored")
    hit = get(proxy, "/ch")
    assert (hit.body, hit["x-cache"], hit["content-length"]) == (body, "HIT", str(len(body)))
    assert hit["transfer-encoding"] is None


def test_a_close_delimited_origin_response(origin, proxy):
    origin.routes["/cl"] = Route(headers={"Cache-Control": "max-age=60"}, body=b"until close",
                                 close=True)
    assert get(proxy, "/cl").body == b"until close"
    wait_for(lambda: proxy.metrics()["scree_proxy_stores_total"] == 1, "the copy stored")
    assert get(proxy, "/cl")["x-cache"] == "HIT"


def test_objects_over_max_object_pass_through(origin):
    p = Proxy([origin], args=["--max-object", "64k"]).start()
    big = bytes(range(256)) * 4096             # 1 MiB
    origin.routes["/big"] = Route(headers={"Cache-Control": "max-age=60"}, body=big)
    origin.routes["/bigc"] = Route(headers={"Cache-Control": "max-age=60"}, body=big,
                                   chunked=True)
    small = b"s" * 60000
    origin.routes["/small"] = Route(headers={"Cache-Control": "max-age=60"}, body=small)
    for path in ("/big", "/bigc"):
        for _ in range(2):
            r = get(p, path)
            assert (r.status, r.body == big, r["x-cache"]) == (200, True, "MISS")
        assert origin.count(path) == 2
    assert get(p, "/small").body == small
    wait_for(lambda: p.metrics()["scree_proxy_stores_total"] == 1, "the small one stored")
    assert get(p, "/small")["x-cache"] == "HIT"
    status, headers, body = curl(p.url + "/big")
    assert (status, body == big) == (200, True)


def test_hop_by_hop_headers_are_not_replayed(origin, proxy):
    origin.routes["/hop"] = Route(headers=[("Cache-Control", "max-age=60"),
                                           ("Connection", "X-Private"),
                                           ("X-Private", "1"), ("Keep-Alive", "timeout=5"),
                                           ("X-Kept", "yes"), ("Age", "7")], body="hop")
    for want in ("MISS", "HIT"):
        r = get(proxy, "/hop")
        assert r["x-cache"] == want
        assert r["x-private"] is None and r["keep-alive"] is None
        assert r["x-kept"] == "yes"
        assert int(r["age"]) >= 7       # the origin's Age counts


def test_conditional_requests_get_304_from_the_cache(origin, proxy):
    origin.routes["/etag"] = Route(headers={"Cache-Control": "max-age=60", "ETag": '"v1"',
                                            "Last-Modified": http_date(time.time() - 3600)},
                                   body="tagged")
    assert get(proxy, "/etag").body == b"tagged"
    r = get(proxy, "/etag", {"If-None-Match": 'W/"v0", "v1"'})
    assert (r.status, r["x-cache"], r["etag"], r.body) == (304, "HIT", '"v1"', b"")
    assert get(proxy, "/etag", {"If-None-Match": '"v2"'}).status == 200
    assert get(proxy, "/etag", {"If-Modified-Since": http_date(time.time())}).status == 304
    assert get(proxy, "/etag", {"If-Modified-Since": http_date(time.time() - 7200)}).status \
        == 200
    assert origin.count("/etag") == 1


def test_an_http10_client_without_host(origin, proxy):
    origin.routes["/old"] = Route(headers={"Cache-Control": "max-age=60"}, body="old")
    from proxy_util import Client
    for want in ("MISS", "HIT"):
        c = Client(proxy.port)
        c.send(b"GET /old HTTP/1.0\r\n\r\n")
        r = c.read_response()
        assert (r.status, r.body, r["x-cache"], r["connection"]) == (200, b"old", want, "close")
        assert c.is_closed()
        c.close()
