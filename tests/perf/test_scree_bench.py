# SPDX-License-Identifier: Apache-2.0
"""Smoke test of build/perf/scree-bench (suite perf-smoke): tiny runs of
every workload in a few configurations must exit 0 and print one line per
workload, in order, with sane counts. Nothing here looks at timings: the
point is that the benchmark cannot rot unnoticed."""
import json
import os
import subprocess
import tempfile

import pytest

BENCH = os.environ["SCREE_BENCH_BIN"]
WORKLOADS = ["fillseq", "fillrandom", "overwrite", "readrandom", "readmissing",
             "seekrandom", "deleterandom"]
NUM = 2000


def run(*args):
    with tempfile.TemporaryDirectory(prefix="scree-bench-smoke-", dir="/var/tmp") as d:
        p = subprocess.run([BENCH, "--num", str(NUM), "--dir", d, "--max-seconds", "20", *args],
                           capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    return p.stdout


@pytest.mark.parametrize("extra", [
    [],
    ["--shards", "2", "--table", "hashed"],
    ["--sync", "batch", "--inflight", "16", "--memtable-budget", "1"],
])
def test_every_workload_prints_a_line(extra):
    lines = [l for l in run(*extra).splitlines() if not l.startswith("#")]
    assert [l.split()[0] for l in lines] == WORKLOADS
    for l in lines:
        assert l.split()[1] == str(NUM), l


def test_json_lines_count_what_was_done():
    # batch: every write is in the log before it is acknowledged, so each
    # write workload has written log bytes by its end (periodic mode's
    # timer might not have fired yet in so short a run)
    rows = [json.loads(l) for l in run("--json", "--sync", "batch", "--inflight", "64").splitlines()]
    by = {r["name"]: r for r in rows}
    assert list(by) == WORKLOADS
    assert by["fillseq"]["user_bytes"] == NUM * (16 + 100)
    assert by["readrandom"]["found"] == NUM          # fillseq wrote every key
    assert by["readmissing"]["found"] == 0
    assert by["seekrandom"]["entries"] > 0
    for w in ("fillseq", "fillrandom", "overwrite"):
        assert by[w]["wamp"] > 0, w                   # the commit log at least


def test_bad_options_are_refused():
    p = subprocess.run([BENCH, "--benchmarks", "fillnothing"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 2
