# SPDX-License-Identifier: Apache-2.0
"""Smoke test of build/perf/scree-bench (suite perf-smoke): tiny runs of
every workload, distribution and output format in a few configurations must
exit 0 and print one row per workload, in order, with sane counts. Nothing
here looks at timings: the point is that the benchmark cannot rot
unnoticed."""
import csv
import io
import json
import os
import pty
import select
import subprocess
import tempfile
import time

import pytest

BENCH = os.environ["SCREE_BENCH_BIN"]
# The peer engines scree-bench was built with (perf/meson.build says which).
PEERS = {name: os.environ.get("SCREE_BENCH_" + name.upper()) == "1"
         for name in ("rocksdb", "leveldb", "lmdb")}
LIBRARY = {"rocksdb": "RocksDB", "leveldb": "LevelDB", "lmdb": "LMDB"}
WORKLOADS = ["fillseq", "fillrandom", "overwrite", "readrandom", "readmissing",
             "seekrandom", "deleterandom"]
YCSB = ["ycsba", "ycsbb", "ycsbc", "ycsbd", "ycsbe", "ycsbf"]
NUM = 2000


def run(*args, num=NUM):
    with tempfile.TemporaryDirectory(prefix="scree-bench-smoke-", dir="/var/tmp") as d:
        p = subprocess.run([BENCH, "--num", str(num), "--dir", d, "--max-seconds", "20", *args],
                           capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    return p.stdout


def rows(out):
    """The table's workload rows (not the comments, not the per-class rows)."""
    return [l.split() for l in out.splitlines() if l and not l.startswith(("#", " "))]


def json_rows(*args, num=NUM):
    return {r["name"]: r for r in map(json.loads, run("--json", *args, num=num).splitlines())}


@pytest.mark.parametrize("extra", [
    [],
    ["--shards", "2", "--table", "hashed"],
    ["--sync", "batch", "--inflight", "16", "--memtable-budget", "1"],
])
def test_every_workload_prints_a_line(extra):
    lines = rows(run(*extra))
    assert [l[0] for l in lines] == WORKLOADS
    for l in lines:
        assert l[1] == str(NUM), l


def test_json_lines_count_what_was_done():
    # batch: every write is in the log before it is acknowledged, so each
    # write workload has written log bytes by its end (periodic mode's
    # timer might not have fired yet in so short a run)
    by = json_rows("--sync", "batch", "--inflight", "64")
    assert list(by) == WORKLOADS
    assert by["fillseq"]["user_bytes"] == NUM * (16 + 100)
    assert by["fillseq"]["live_bytes"] == NUM * (16 + 100)
    assert by["readrandom"]["found"] == NUM          # fillseq wrote every key
    assert by["readmissing"]["found"] == 0
    assert by["seekrandom"]["entries"] > 0
    for w in ("fillseq", "fillrandom", "overwrite"):
        assert by[w]["wamp"] > 0, w                   # the commit log at least
    for r in by.values():
        assert r["engine"] == "scree"
        assert r["p50_us"] <= r["p90_us"] <= r["p99_us"] <= r["p999_us"] <= r["max_us"]
        assert r["space_bytes"] > 0 and r["space_amp"] > 0
        assert r["cpu_secs"] >= 0


def test_ycsb_mixes_and_readwhilewriting():
    by = json_rows("--benchmarks", "fillseq,readwhilewriting,ycsb", "--shards", "2")
    assert list(by) == ["fillseq", "readwhilewriting"] + YCSB
    assert by["readwhilewriting"]["ops"] == NUM and by["readwhilewriting"]["bg_ops"] > 0
    assert by["readwhilewriting"]["found"] == NUM
    want = {"ycsba": {"read", "update"}, "ycsbb": {"read", "update"}, "ycsbc": {"read"},
            "ycsbd": {"read", "insert"}, "ycsbe": {"scan", "insert"}, "ycsbf": {"read", "rmw"}}
    for w, classes in want.items():
        assert set(by[w]["classes"]) == classes, w
        assert sum(c["ops"] for c in by[w]["classes"].values()) == by[w]["ops"] == NUM
    assert by["ycsbc"]["found"] == NUM                # reads of loaded keys only
    assert by["ycsbe"]["entries"] > by["ycsbe"]["classes"]["scan"]["ops"]
    # inserts add live keys; D's latest reads find the new ones too
    assert by["ycsbd"]["live_bytes"] > NUM * (16 + 100)
    assert by["ycsbd"]["found"] == by["ycsbd"]["classes"]["read"]["ops"]


@pytest.mark.parametrize("dist", ["uniform", "zipfian", "latest", "sequential", "gaussian"])
def test_every_distribution(dist):
    by = json_rows("--benchmarks", "fillseq,readrandom,overwrite,ycsba", "--distribution", dist,
                   "--zipf-theta", "0.8", "--table", "hashed", "--shards", "2")
    assert by["readrandom"]["found"] == NUM
    assert by["ycsba"]["ops"] == NUM


def test_table_shows_classes_and_new_columns():
    out = run("--benchmarks", "fillseq,ycsbf")
    header = [l for l in out.splitlines() if l.startswith("# workload")]
    assert header and all(c in header[0] for c in ("p90us", "maxus", "samp", "cpu_s"))
    classes = [l.split()[0] for l in out.splitlines() if l.startswith("  .")]
    assert classes == [".read", ".rmw"]


def test_csv_has_a_row_per_workload_and_class():
    out = run("--csv", "--benchmarks", "fillseq,ycsbb")
    table = list(csv.DictReader(io.StringIO(out)))
    assert [(r["workload"], r["class"]) for r in table] == \
        [("fillseq", "all"), ("ycsbb", "all"), ("ycsbb", "read"), ("ycsbb", "update")]
    assert int(table[0]["ops"]) == NUM and float(table[0]["space_amp"]) > 0


def test_timeseries_file_has_lines_per_second():
    with tempfile.TemporaryDirectory(prefix="scree-bench-ts-", dir="/var/tmp") as d:
        ts = os.path.join(d, "ts.csv")
        p = subprocess.run([BENCH, "--num", str(NUM), "--dir", os.path.join(d, "db"),
                            "--benchmarks", "fillseq,readrandom", "--duration", "1",
                            "--timeseries", ts], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        with open(ts) as f:
            lines = list(csv.DictReader(f))
    assert {l["workload"] for l in lines} == {"fillseq", "readrandom"}
    for l in lines:
        assert int(l["ops"]) >= 0 and float(l["p99_us"]) >= float(l["p50_us"])
    assert sum(int(l["ops"]) for l in lines if l["workload"] == "readrandom") > 0


def test_open_loop_runs_at_the_rate_and_does_every_op():
    by = json_rows("--benchmarks", "fillseq,readrandom,readwhilewriting", "--rate", "4000",
                   "--write-rate", "1000", "--reads", "400", "--shards", "2", num=400)
    assert by["readrandom"]["ops"] == 400 and by["readrandom"]["found"] == 400
    # 400 ops at 4000/s take about 0.1 s: not much less
    assert by["readrandom"]["seconds"] >= 0.05
    assert by["readwhilewriting"]["bg_ops"] > 0


def test_a_paced_writer_keeps_its_rate_in_bursts_and_never_runs_ahead():
    # readwhilewriting's writer issues the writes that are due in bursts
    # (up to 32 in flight) and sleeps a millisecond or more when none is:
    # it must still do what its rate asks, and never more. The rate is far
    # below what a loaded machine writes (periodic sync: memory only), so
    # the floor checks the pacing, not this machine's speed; a writer that
    # slept its >= 1 ms tick per write would stay under 1000 writes/s.
    rate = 4000
    by = json_rows("--benchmarks", "fillseq,readwhilewriting", "--duration", "2",
                   "--write-rate", str(rate), "--shards", "2", "--sync", "periodic")
    r = by["readwhilewriting"]
    assert r["ops"] > 0
    # (the schedule starts when the run is posted, a little before the
    # readers' clock, so allow a few milliseconds of writes on top)
    assert 0.5 * rate * r["seconds"] <= r["bg_ops"] <= rate * (r["seconds"] + 0.01), r
    assert r["compaction_secs"] >= 0


def test_duration_bounds_a_run_by_time():
    by = json_rows("--benchmarks", "fillseq,readrandom", "--duration", "1")
    assert by["readrandom"]["ops"] > 0 and by["readrandom"]["seconds"] >= 0.9


def test_progress_line_on_a_terminal():
    with tempfile.TemporaryDirectory(prefix="scree-bench-tty-", dir="/var/tmp") as d:
        leader, follower = pty.openpty()
        p = subprocess.Popen([BENCH, "--num", str(NUM), "--dir", d, "--benchmarks",
                              "fillseq,readrandom", "--duration", "2"],
                             stdout=subprocess.PIPE, stderr=follower, text=True)
        os.close(follower)
        seen = b""
        end = time.monotonic() + 60
        while time.monotonic() < end:
            r, _, _ = select.select([leader], [], [], 1)
            if not r:
                if p.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
        out = p.communicate(timeout=30)[0]
        os.close(leader)
    assert p.returncode == 0
    assert b"\r" in seen and b"ops/s" in seen and b"elapsed" in seen and b"left" in seen
    assert "\r" not in out                            # stdout stays clean


def test_prefault_is_on_by_default_and_done_before_the_run():
    """Like the server's --prefault: the shards fault their memtable budget
    in before the first workload starts, unless told not to."""
    def bench(*args):
        with tempfile.TemporaryDirectory(prefix="scree-bench-smoke-", dir="/var/tmp") as d:
            return subprocess.run([BENCH, "--num", "500", "--dir", d, "--benchmarks", "fillseq",
                                   "--memtable-budget", "8", *args],
                                  capture_output=True, text=True, timeout=90)
    on, off = bench(), bench("--prefault", "off")
    assert on.returncode == 0 and off.returncode == 0, on.stderr + off.stderr
    assert "prefault=on" in on.stdout and "prefault=off" in off.stdout
    assert "memtable and cache memory faulted in" in on.stderr
    assert "faulted in" not in off.stderr


def test_compaction_options_reach_the_engine_and_the_header():
    """A 1 MiB memtable budget makes fillrandom and overwrite flush and
    compact. Whatever the readahead and the rate limit, the same seed must
    find the same keys as with compaction off, and the header must say
    what ran."""
    def found(*args):
        out = run("--benchmarks", "fillrandom,overwrite,readrandom", "--memtable-budget", "1",
                  *args, num=20000)
        lines = rows(out)
        assert [l[0] for l in lines] == ["fillrandom", "overwrite", "readrandom"]
        read = lines[2]
        return out.splitlines()[0], lines, int(read[read.index("found") + 1])

    _, _, want = found("--compaction", "off")
    assert want > 10000
    for args, header in [
        ([], "readahead=256KiB crate=64MiB/s"),
        (["--compaction-readahead", "8", "--compaction-rate", "4"], "readahead=8KiB crate=4MiB/s"),
        (["--compaction-readahead", "cached", "--compaction-rate", "off"],
         "readahead=cached crate=off"),
    ]:
        head, lines, got = found(*args)
        assert header in head, head
        assert any("compacting" in l for l in lines[:2]), lines
        assert got == want, (args, got, want)


@pytest.mark.parametrize("args,word", [
    (["--benchmarks", "fillnothing"], "--benchmarks"),
    (["--distribution", "pareto"], "--distribution"),
    (["--zipf-theta", "1.5"], "--zipf-theta"),
    (["--engine", "berkeleydb"], "--engine"),
    (["--rate", "0"], "--rate"),
    (["--scan-length", "0"], "--scan-length"),
    (["--key-size", "4", "--num", "3000000000"], "keys"),
    (["--timeseries", "/nonexistent-dir/ts.csv"], "/nonexistent-dir/ts.csv"),
    (["--num", "10", "extra"], "unexpected argument"),
    (["--prefault", "maybe"], "--prefault"),
    (["--compaction-readahead", "6"], "--compaction-readahead"),
    (["--compaction-readahead", "lots"], "--compaction-readahead"),
    (["--compaction-rate", "0"], "--compaction-rate"),
    (["--compaction-rate", "fast"], "--compaction-rate"),
])
def test_bad_options_are_refused(args, word):
    p = subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert word in p.stderr


def peer_engines(built):
    """The peer engines built (built=True) or not, as pytest parameters; with
    built, also "api" (libscree's public API, always built)."""
    api = [pytest.param("api", id="api")] if built else []
    return api + [pytest.param(name, id=name) for name, have in PEERS.items() if have == built]


def test_api_engine_with_ops_in_flight():
    """--engine api --inflight 16: asynchronous calls through completion
    queues, the same counts as one at a time."""
    args = ["--engine", "api", "--shards", "2", "--benchmarks",
            "fillrandom,readrandom,seekrandom,deleterandom,readmissing", "--seek-nexts", "9"]
    many, one = json_rows(*args, "--inflight", "16"), json_rows(*args)
    for w in ("fillrandom", "readrandom", "seekrandom", "deleterandom", "readmissing"):
        assert many[w]["ops"] == one[w]["ops"] == NUM, w
        assert many[w]["found"] == one[w]["found"], w
    assert many["seekrandom"]["entries"] == one["seekrandom"]["entries"] > 0
    # --api-shards: 4 host threads on a database of one shard
    by = json_rows("--engine", "api", "--shards", "4", "--api-shards", "1", "--sync", "batch",
                   "--benchmarks", "fillrandom", num=400)
    assert by["fillrandom"]["ops"] == 400


@pytest.mark.parametrize("engine", peer_engines(True))
def test_peer_engine_runs_the_same_workloads(engine):
    by = json_rows("--engine", engine, "--shards", "2", "--benchmarks",
                   ",".join(WORKLOADS + ["readwhilewriting"] + YCSB))
    assert list(by) == WORKLOADS + ["readwhilewriting"] + YCSB
    for r in by.values():
        assert r["engine"] == engine and r["ops"] == NUM, r["name"]
    assert by["readrandom"]["found"] == NUM
    assert by["readmissing"]["found"] == 0
    assert by["seekrandom"]["entries"] > 0
    assert by["fillseq"]["user_bytes"] == NUM * (16 + 100)
    assert by["readwhilewriting"]["bg_ops"] > 0
    assert set(by["ycsbf"]["classes"]) == {"read", "rmw"}


@pytest.mark.parametrize("engine", peer_engines(True))
def test_peer_engine_durable_writes_from_many_threads(engine):
    """--sync batch: every write synced before it returns (the durable
    workload of perf/engine_vs_embedded), from 4 threads at once."""
    by = json_rows("--engine", engine, "--shards", "4", "--sync", "batch",
                   "--benchmarks", "fillrandom,readrandom", num=400)
    assert by["fillrandom"]["ops"] == 400 and by["readrandom"]["ops"] == 400
    assert by["fillrandom"]["user_bytes"] == 400 * (16 + 100)


@pytest.mark.parametrize("engine", peer_engines(True))
def test_peer_engine_open_loop_and_the_same_keys_as_scree(engine):
    args = ["--shards", "2", "--benchmarks", "fillrandom,readrandom,ycsbd", "--rate", "20000",
            "--write-rate", "1000"]
    peer, scree = json_rows("--engine", engine, *args), json_rows(*args)
    # one generator for all: the same keys, so the same reads find the same
    for w in ("readrandom", "ycsbd"):
        assert peer[w]["found"] == scree[w]["found"], w
        assert peer[w]["ops"] == scree[w]["ops"] == NUM


@pytest.mark.parametrize("engine", peer_engines(True))
def test_peer_engine_scans_give_the_entries_asked_for(engine):
    # seekrandom: 1 + --seek-nexts entries a scan, as scree's (fewer only
    # near the end of the key space); the 100-row range read of
    # perf/engine_vs_embedded
    args = ["--benchmarks", "fillseq,seekrandom", "--seek-nexts", "99", "--reads", "200"]
    peer, scree = json_rows("--engine", engine, *args), json_rows(*args)
    assert peer["seekrandom"]["entries"] == scree["seekrandom"]["entries"]
    assert peer["seekrandom"]["entries"] > 200 * 90


@pytest.mark.parametrize("engine", peer_engines(False))
def test_peer_engine_absent_says_so(engine):
    p = subprocess.run([BENCH, "--engine", engine, "--num", "10"], capture_output=True,
                       text=True, timeout=30)
    assert p.returncode == 1 and f"without {LIBRARY[engine]}" in p.stderr
