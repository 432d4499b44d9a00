# SPDX-License-Identifier: Apache-2.0
"""The metrics endpoint: Prometheus text format (HELP and TYPE before each
family's samples, valid names, labels and values, cumulative histogram
buckets) whose counters follow what the proxy did."""
import re

from proxy_util import Client, Route, request

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
SAMPLE = re.compile(r"^(%s)(\{(%s=\"[^\"\\]*\")(,%s=\"[^\"\\]*\")*\})? "
                    r"(-?[0-9.]+(e[+-]?[0-9]+)?|\+Inf|NaN)$" % (NAME, NAME, NAME))


def parse(text):
    """{family: type}, [(name, labels, value)]; asserts the format."""
    types, samples, helped = {}, [], set()
    for line in text.splitlines():
        if line.startswith("# HELP "):
            helped.add(line.split()[2])
        elif line.startswith("# TYPE "):
            _, _, fam, typ = line.split()
            assert typ in ("counter", "gauge", "histogram", "summary", "untyped"), line
            assert fam not in types, "family typed twice: " + fam
            types[fam] = typ
        else:
            m = SAMPLE.match(line)
            assert m, "not a sample line: %r" % line
            name = m.group(1)
            fam = re.sub(r"_(bucket|sum|count)$", "", name) if name not in types else name
            assert fam in types, "sample before its TYPE: " + line
            samples.append((name, m.group(2) or "", float(m.group(5))))
    return types, samples


def test_metrics_parse_and_count(origin, proxy):
    origin.routes["/m"] = Route(headers={"Cache-Control": "max-age=60"}, body="12345")
    request(proxy.port, "GET", "/m")
    request(proxy.port, "GET", "/m")
    request(proxy.port, "GET", "/m")
    request(proxy.port, "POST", "/m", body=b"x")
    c = Client(proxy.metrics_port)
    r = c.request("GET", "/metrics")
    assert r.status == 200 and r["content-type"].startswith("text/plain; version=0.0.4")
    types, samples = parse(r.body.decode())
    values = {n + l: v for n, l, v in samples}
    assert values["scree_proxy_cache_hits_total"] == 2
    assert values["scree_proxy_cache_misses_total"] == 1
    assert values["scree_proxy_cache_bypasses_total"] == 1
    assert values["scree_proxy_requests_total"] == 4
    assert values["scree_proxy_origin_requests_total"] == 2
    assert values['scree_proxy_served_bytes_total{source="cache"}'] > 10
    assert values['scree_proxy_served_bytes_total{source="origin"}'] > 10
    assert values["scree_proxy_connections"] >= 1      # this one
    assert values['scree_proxy_responses_total{code="2xx"}'] == 4
    assert types["scree_proxy_origin_duration_seconds"] == "histogram"
    buckets = [v for n, l, v in samples if n == "scree_proxy_origin_duration_seconds_bucket"]
    assert buckets == sorted(buckets) and buckets[-1] == 2
    assert values["scree_proxy_origin_duration_seconds_count"] == 2
    assert any(n.startswith("scree_proxy_engine_") for n, _, _ in samples)
    assert c.request("GET", "/other").status == 404
    assert c.request("POST", "/metrics").status == 405
    c.close()


def test_the_client_port_has_no_metrics(origin, proxy):
    r = request(proxy.port, "GET", "/metrics")
    assert r.body == b"body of /metrics"
