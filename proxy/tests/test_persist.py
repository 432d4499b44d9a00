# SPDX-License-Identifier: Apache-2.0
"""The cache is scree's: a proxy restarted on the same --dir -- after a
clean stop, or after kill -9 -- serves what was stored at once, with the
origin gone."""
import signal

from proxy_util import Origin, Proxy, Route, request, wait_for


def fill(origin, proxy, n):
    for i in range(n):
        origin.routes["/p%d" % i] = Route(headers={"Cache-Control": "max-age=600"},
                                          body=("persisted %d " % i) * 50)
        assert request(proxy.port, "GET", "/p%d" % i)["x-cache"] == "MISS"
    wait_for(lambda: proxy.metrics()["scree_proxy_stores_total"] == n, "%d stores" % n)


def serve_without_origin(dir, origin, n):
    origin.close()      # nothing answers there any more
    p = Proxy([origin], dir=dir).start()
    for i in range(n):
        r = request(p.port, "GET", "/p%d" % i)
        assert (r.status, r["x-cache"]) == (200, "HIT"), r.body
        assert r.body == ("persisted %d " % i).encode() * 50
    assert request(p.port, "GET", "/never").status == 502
    return p


def test_a_restart_serves_from_the_cache(tmp_path):
    origin = Origin()
    p = Proxy([origin], dir=str(tmp_path)).start()
    fill(origin, p, 20)
    assert p.stop() == 0
    serve_without_origin(str(tmp_path), origin, 20)


def test_kill_9_then_restart_serves_from_the_cache(tmp_path):
    origin = Origin()
    p = Proxy([origin], dir=str(tmp_path), args=["--sync", "batch"]).start()
    fill(origin, p, 20)
    assert p.stop(signal.SIGKILL) == -signal.SIGKILL
    q = serve_without_origin(str(tmp_path), origin, 20)
    assert "batch" not in q.output()    # the default again: periodic


def test_the_shard_count_is_kept_with_the_cache(tmp_path):
    origin = Origin()
    p = Proxy([origin], dir=str(tmp_path), args=["--shards", "2"]).start()
    fill(origin, p, 3)
    p.stop()
    q = Proxy([origin], dir=str(tmp_path), args=["--shards", "1"])
    try:
        q.start()
        raise AssertionError("started with another --shards")
    except RuntimeError as e:
        assert "made with another --shards" in str(e)
    assert q.stop() == 1        # a start that fails: the cache refused it
    r = Proxy([origin], dir=str(tmp_path), threads=1, shards=None).start()
    assert "(2 shards" in r.output()
    assert request(r.port, "GET", "/p0")["x-cache"] == "HIT"
    origin.close()
