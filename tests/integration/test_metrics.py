# SPDX-License-Identifier: Apache-2.0
"""The Prometheus endpoint on --metrics-port: the text parses strictly
(every sample `name{labels} value` with label values escaped as the text
format says, every family with HELP and TYPE before its samples, which
come together, no series twice, histograms cumulative up to +Inf and
consistent with _count), command counters grow, engine numbers are there
for both shards; other paths, methods and oversized heads are refused; a
silent client does not block a fetch."""
import re
import socket
import urllib.error
import urllib.request

import pytest

from server_util import WAIT_S, Server, free_port

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
VALUE = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?|[-+]Inf|NaN")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


@pytest.fixture
def msrv():
    s = Server(args=["--metrics-port", str(free_port())])
    s.mport = int(s.args[1])
    s.start()
    yield s
    s.close()


def fetch(s, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{s.mport}{path}", timeout=WAIT_S) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return resp.read().decode()


def parse_labels(line, i):
    """The labels from line[i] == "{" on, values unescaped (only \\\\, \\" and
    \\n are escapes); returns (dict, index past "}")."""
    labels = {}
    i += 1
    while line[i] != "}":
        m = LABEL_NAME.match(line, i)
        assert m and line[m.end():m.end() + 2] == '="', f"bad label in {line!r}"
        name, i, value = m.group(0), m.end() + 2, []
        while line[i] != '"':
            if line[i] == "\\":
                assert line[i + 1] in '\\"n', f"bad escape in {line!r}"
                value.append("\n" if line[i + 1] == "n" else line[i + 1])
                i += 2
            else:
                value.append(line[i])
                i += 1
        assert name not in labels, f"label {name} twice in {line!r}"
        labels[name] = "".join(value)
        i += 1
        if line[i] == ",":
            i += 1
            assert line[i] != "}", f"trailing comma in {line!r}"
        else:
            assert line[i] == "}", f"bad label list in {line!r}"
    return labels, i + 1


def parse_sample(line):
    m = NAME.match(line)
    assert m, f"bad sample line {line!r}"
    labels, i = parse_labels(line, m.end()) if line[m.end():m.end() + 1] == "{" else ({}, m.end())
    assert line[i] == " " and VALUE.fullmatch(line[i + 1:]), f"bad value in {line!r}"
    return m.group(0), labels, float(line[i + 1:])


def family_of(name, types):
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    return base if name not in types and types.get(base) == "histogram" else name


def parse(text):
    """({family: type}, {name: [(labels dict, value)]}), checking the text
    strictly: every line a HELP, a TYPE or a sample; HELP and TYPE once per
    family and before its samples; a family's samples together; every
    series once; label values escaped as the format says."""
    assert text.endswith("\n")
    helps, types, samples, seen, done, current = set(), {}, {}, set(), set(), None
    for line in text[:-1].split("\n"):
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = line.split(" ", 3)
            assert NAME.fullmatch(name) and rest, line
            if kind == "HELP":
                assert name not in helps, f"HELP of {name} twice"
                helps.add(name)
            else:
                assert name not in types and rest in TYPES, line
                types[name] = rest
            assert name not in done and name != current, f"{kind} of {name} after its samples"
            continue
        name, labels, value = parse_sample(line)
        fam = family_of(name, types)
        assert fam in types and fam in helps, f"{name} without HELP/TYPE before it"
        if fam != current:
            assert fam not in done, f"family {fam}'s samples apart"
            done.add(current)
            current = fam
        series = (name, tuple(sorted(labels.items())))
        assert series not in seen, f"series twice: {series}"
        seen.add(series)
        samples.setdefault(name, []).append((labels, value))
    return types, samples


def by_shard(samples, name):
    return {lab["shard"]: v for lab, v in samples.get(name, [])}


def check_histograms(types, samples):
    for fam, typ in types.items():
        if typ != "histogram":
            continue
        # One series per shard and command (cmd="get"), as Redis's exporter
        # users expect of a per-command latency histogram.
        series = {}
        for lab, v in samples[fam + "_bucket"]:
            series.setdefault((lab["shard"], lab["cmd"]), []).append((lab["le"], v))
        counts = {(lab["shard"], lab["cmd"]): v for lab, v in samples[fam + "_count"]}
        sums = {(lab["shard"], lab["cmd"]) for lab, _ in samples[fam + "_sum"]}
        for key, buckets in series.items():
            assert buckets[-1][0] == "+Inf"
            bounds = [float(le) for le, _ in buckets[:-1]]
            assert bounds == sorted(bounds)
            values = [v for _, v in buckets]
            assert values == sorted(values), "buckets not cumulative"
            assert values[-1] == counts[key]
            assert key in sums


def fetch_ready(s):
    """The text once both engines are open (they open after the listeners)."""
    for _ in range(200):
        types, samples = parse(fetch(s))
        if sorted(by_shard(samples, "scree_engine_ready").values()) == [1, 1]:
            return types, samples
    raise AssertionError("engines never ready")


def test_metrics_text_counts_commands_and_reports_every_shard(msrv):
    types0, samples0 = fetch_ready(msrv)
    r = msrv.client()
    for i in range(20):
        r.set(f"k{i}", "v" * i)
        assert r.get(f"k{i}") == b"v" * i
    r.close()
    types, samples = parse(fetch(msrv))
    check_histograms(types, samples)

    def cmd_total(samples, cmd):
        return sum(v for lab, v in samples.get("scree_commands_total", []) if lab["cmd"] == cmd)

    assert cmd_total(samples, "set") >= cmd_total(samples0, "set") + 20
    assert cmd_total(samples, "get") >= cmd_total(samples0, "get") + 20
    total = sum(v for _, v in samples["scree_commands_total"])
    assert total == sum(v for _, v in samples["scree_command_duration_seconds_count"])
    # The histogram per command: GET's series hold its 20 calls.
    gets = [v for lab, v in samples["scree_command_duration_seconds_count"]
            if lab["cmd"] == "get"]
    assert sum(gets) >= 20
    for name in ["scree_memtable_bytes", "scree_sstables", "scree_sstable_bytes",
                 "scree_commitlog_bytes_written_total", "scree_commitlog_syncs_total",
                 "scree_block_cache_hits_total", "scree_block_cache_misses_total",
                 "scree_block_cache_bytes", "scree_compaction_bytes_read_total",
                 "scree_compaction_bytes_written_total", "scree_compaction_seconds_total",
                 "scree_flushes_total",
                 "scree_write_stalls_total", "scree_reactor_busy_seconds_total",
                 "scree_reactor_stalls_total", "scree_cross_shard_messages_total",
                 "scree_connections", "scree_connections_accepted_total",
                 "scree_memtable_blocks_prefaulted_total",
                 "scree_memtable_block_pool_misses_total"]:
        assert set(by_shard(samples, name)) == {"0", "1"}, name
        assert name.endswith("_total") == (types[name] == "counter"), name
    assert sum(by_shard(samples, "scree_memtable_bytes").values()) > 0
    assert sum(by_shard(samples, "scree_commitlog_bytes_written_total").values()) > 0
    assert sum(by_shard(samples, "scree_connections_accepted_total").values()) >= 1
    # Gathering the page is itself cross-shard messaging.
    assert sum(by_shard(samples, "scree_cross_shard_messages_total").values()) > 0


def raw(s, data, timeout=WAIT_S):
    """Sends data and returns what comes back until the server closes."""
    with socket.create_connection(("127.0.0.1", s.mport), timeout=timeout) as c:
        try:
            c.sendall(data)
            out = b""
            while len(out) < 1 << 20:
                part = c.recv(65536)
                if not part:
                    break
                out += part
        except (ConnectionResetError, BrokenPipeError):
            return None
    return out


def test_other_paths_methods_and_bad_requests_are_refused(msrv):
    with pytest.raises(urllib.error.HTTPError) as e:
        fetch(msrv, "/other")
    assert e.value.code == 404
    assert raw(msrv, b"POST /metrics HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 405 ")
    assert raw(msrv, b"nonsense\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert raw(msrv, b"GET /metrics HTTP/9.9\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    ok = raw(msrv, b"GET /metrics?x=1 HTTP/1.0\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200 ") and b"scree_commands_total" in ok


def test_a_huge_request_head_is_refused(msrv):
    head = b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n"
    out = raw(msrv, head)
    # 431, unless the reset for the unread rest of the head overtook it.
    assert out is None or out.startswith(b"HTTP/1.1 431 ")
    fetch(msrv)


def test_a_silent_client_does_not_block_a_fetch(msrv):
    silent = [socket.create_connection(("127.0.0.1", msrv.mport)) for _ in range(3)]
    half = socket.create_connection(("127.0.0.1", msrv.mport))
    half.sendall(b"GET /metr")
    try:
        types, samples = parse(fetch(msrv))
        assert "scree_commands_total" in types
    finally:
        for c in silent + [half]:
            c.close()


def test_a_silent_client_is_closed_at_its_deadline_and_stop_ends_the_rest(msrv):
    with socket.create_connection(("127.0.0.1", msrv.mport), timeout=30) as c:
        assert c.recv(100) == b""       # closed by the server (5 s deadline)
    # Left open across the stop: the server ends it and exits cleanly.
    stay = socket.create_connection(("127.0.0.1", msrv.mport))
    stay.sendall(b"GET /metrics HTTP/1.1\r\n")
    fetch(msrv)
    assert msrv.stop() == 0
    stay.close()

