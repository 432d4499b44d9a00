# SPDX-License-Identifier: Apache-2.0
"""The Prometheus endpoint on --metrics-port: the text parses strictly
(every sample `name{labels} value` with label values escaped as the text
format says, every family with HELP and TYPE before its samples, which
come together, no series twice, histograms cumulative up to +Inf and
consistent with _count), command counters grow, engine numbers are there
for both shards; each tablet's size, traffic and hot keys agree with
TABLE.DESCRIBE, across a split, with odd keys escaped, and a page holds at
most its bound of tablets; other paths, methods and oversized heads are
refused; a silent client does not block a fetch."""
import re
import socket
import threading
import urllib.error
import urllib.request

import pytest

from server_util import WAIT_S, Server, free_port, wait_for

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
                 "scree_commitlog_gathers_total",
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


# ---- per-tablet metrics ----

# The per-tablet numbers and the DESCRIBE field each mirrors.
TABLET_FAMILIES = {
    "scree_tablet_bytes": b"bytes",
    "scree_tablet_rows": b"rows",
    "scree_tablet_reads_per_second": b"reads-per-sec",
    "scree_tablet_writes_per_second": b"writes-per-sec",
    "scree_tablet_read_bytes_per_second": b"read-bytes-per-sec",
    "scree_tablet_write_bytes_per_second": b"write-bytes-per-sec",
}
HOT = "scree_tablet_hot_key_accesses_per_second"
# net/metrics_tablets.h: NET_METRICS_TABLETS_MAX, shared evenly by the shards.
TABLETS_MAX = 2048


def cmd(r, *args):
    return r.execute_command(*args)


def describe(r, path):
    d = cmd(r, "TABLE.DESCRIBE", path)
    d = dict(zip(d[::2], d[1::2]))
    return [dict(zip(t[::2], t[1::2])) for t in d[b"tablets"]]


def per_tablet(samples, name, table):
    """{tablet id: (shard, value)} of family name's samples of table."""
    out = {}
    for lab, v in samples.get(name, []):
        if lab["table"] == table:
            assert set(lab) == {"table", "tablet", "shard"}, lab
            out[int(lab["tablet"])] = (int(lab["shard"]), v)
    return out


def hot_keys(samples, table):
    """{tablet id: [(rank, key label, value)]} of table's hot keys."""
    out = {}
    for lab, v in samples.get(HOT, []):
        if lab["table"] == table:
            assert set(lab) == {"table", "tablet", "shard", "rank", "key"}, lab
            out.setdefault(int(lab["tablet"]), []).append((int(lab["rank"]), lab["key"], v))
    return out


def test_each_tablet_reports_what_describe_shows_across_a_split(msrv):
    fetch_ready(msrv)
    r = msrv.client()
    cmd(r, "DIR.CREATE", "/app")
    cmd(r, "TABLE.CREATE", "/app/t", "KEY", "bytes")
    odd = b'q"b\\c\nd\x01'
    p = r.pipeline(transaction=False)
    for i in range(300):
        p.execute_command("ROW.PUT", "/app/t", f"k{i:03}", "v" * 20)
    p.execute_command("ROW.PUT", "/app/t", odd, "v")
    p.execute()
    (parent,) = [t[b"id"] for t in describe(r, "/app/t")]
    a, b = cmd(r, "TABLET.SPLIT", "/app/t", parent, "AT", "k150")
    types, samples = parse(fetch(msrv))
    for name in list(TABLET_FAMILIES) + [HOT, "scree_tablets", "scree_tablets_omitted"]:
        assert types[name] == "gauge", name

    # Sizes: the same figures as DESCRIBE once neither moves between the
    # two looks (a compaction separating the children's files may).
    def sizes_agree():
        _, samples = parse(fetch(msrv))
        want = {t[b"id"]: t for t in describe(r, "/app/t")}
        for name, field in TABLET_FAMILIES.items():
            got = per_tablet(samples, name, "/app/t")
            assert set(got) == {a, b}, (name, got)      # the parent is gone
            assert all(got[i][0] == want[i][b"shard"] for i in got)
            if name in ("scree_tablet_bytes", "scree_tablet_rows") and \
                    any(got[i][1] != want[i][field] for i in got):
                return None
        return samples
    samples = wait_for(sizes_agree, "the tablets' sizes as DESCRIBE shows them")
    rows = per_tablet(samples, "scree_tablet_rows", "/app/t")
    assert rows[a][1] > 0 and rows[b][1] > 0 and rows[a][1] + rows[b][1] >= 301
    assert per_tablet(samples, "scree_tablet_bytes", "/app/t")[a][1] > 0

    # Every shard counts all its tablets: the built-in tables' too.
    held = {}
    for path in cmd(r, "TABLE.LIST"):
        for t in describe(r, path.decode()):
            held[str(t[b"shard"])] = held.get(str(t[b"shard"]), 0) + 1
    assert by_shard(samples, "scree_tablets") == held
    assert set(by_shard(samples, "scree_tablets_omitted").values()) == {0}
    # Empty, idle tablets of the Redis databases are left out.
    assert not any(lab["table"].startswith("/redis/") for lab, _ in samples["scree_tablet_bytes"])
    r.close()
    check_traffic(msrv, a, b, odd)


def check_traffic(msrv, a, b, odd):
    """Reads of odd (in tablet b) and writes of k000 (in a): the rates
    show them as DESCRIBE does, odd tops b's hot keys, escaped, and a
    busy Redis key's tablet shows up; the rates fall back to 0."""
    r = msrv.client()
    stop = threading.Event()

    def load():
        c = msrv.client()
        p = c.pipeline(transaction=False)
        while not stop.is_set():
            for _ in range(50):
                p.execute_command("ROW.GET", "/app/t", odd)
                p.execute_command("ROW.PUT", "/app/t", "k000", "w" * 30)
                p.get("busy")
            p.execute()
        c.close()

    def busy_seen():
        text = fetch(msrv)
        _, samples = parse(text)
        reads = per_tablet(samples, "scree_tablet_reads_per_second", "/app/t")
        writes = per_tablet(samples, "scree_tablet_writes_per_second", "/app/t")
        hot = hot_keys(samples, "/app/t").get(b, [])
        if not (reads[b][1] > 0 and writes[a][1] > 0 and hot and hot[0][0] == 1
                and hot[0][1] == 'q"b\\c\nd\\x01'):
            return None
        return text, samples

    t = threading.Thread(target=load)
    t.start()
    try:
        text, samples = wait_for(busy_seen, "tablet traffic and odd as the hot key")
        d = {x[b"id"]: x for x in describe(r, "/app/t")}
        assert d[b][b"reads-per-sec"] > 0 and d[a][b"writes-per-sec"] > 0
    finally:
        stop.set()
        t.join(timeout=WAIT_S)
    # The escapes as the text has them: \" \\ \n, and the control byte
    # shown as the characters \x01 (its backslash escaped in turn).
    assert '",rank="1",key="q\\"b\\\\c\\nd\\\\x01"} ' in text
    wb = per_tablet(samples, "scree_tablet_write_bytes_per_second", "/app/t")[a][1]
    assert wb >= 30 * per_tablet(samples, "scree_tablet_writes_per_second", "/app/t")[a][1]
    assert per_tablet(samples, "scree_tablet_read_bytes_per_second", "/app/t")[b][1] > 0
    assert any(lab["table"] == "/redis/db0" for lab, _ in samples["scree_tablet_bytes"])

    def idle():
        _, samples = parse(fetch(msrv))
        return all(v == 0 for name in TABLET_FAMILIES if name.endswith("_per_second")
                   for _, v in per_tablet(samples, name, "/app/t").values())
    wait_for(idle, "the tablets' rates to fall to 0")
    r.close()


def test_a_page_reports_at_most_its_bound_of_tablets_the_busiest_first(msrv):
    fetch_ready(msrv)
    r = msrv.client()
    n = 3000                                    # 1500 a shard: past its 1024
    cmd(r, "TABLE.CREATE", "/big", "KEY", "u64", "TABLETS", n, "MAX-TABLETS", n)
    cmd(r, "ROW.PUT", "/big", 2**64 - 1, "x")   # the last tablet: the only one with data
    ts = describe(r, "/big")
    last = ts[-1][b"id"]
    on = {str(s): sum(1 for t in ts if t[b"shard"] == s) for s in (0, 1)}
    _, samples = parse(fetch(msrv))
    cap = TABLETS_MAX // 2
    for name in list(TABLET_FAMILIES):
        got = per_tablet(samples, name, "/big")
        assert len(samples[name]) <= TABLETS_MAX
        for s in ("0", "1"):
            assert sum(1 for sh, _ in got.values() if str(sh) == s) == min(cap, on[s]), name
        assert last in got, "the tablet holding data is among the reported"
    assert by_shard(samples, "scree_tablets_omitted") == \
        {s: max(0, on[s] - cap) for s in ("0", "1")}
    r.close()
