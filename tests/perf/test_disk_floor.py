# SPDX-License-Identifier: Apache-2.0
"""Smoke test of build/perf/disk-floor (suite perf-smoke): a one-second run of
every job (readers, log, table writes, compaction reads) must exit 0, print
its four rows with counts that add up, leave only the readers' file behind,
and refuse bad values. Nothing here looks at timings."""
import os
import subprocess
import tempfile

import pytest

FLOOR = os.environ["SCREE_DISK_FLOOR_BIN"]


def run(d, *args):
    return subprocess.run([FLOOR, "--dir", d, "--file-mb", "16", "--seconds", "1", *args],
                          capture_output=True, text=True, timeout=60)


def rows(out):
    return {l.split()[0]: [float(x) for x in l.split()[1:]]
            for l in out.splitlines() if l and not l.startswith("#")}


def test_every_job_runs_and_cleans_up():
    with tempfile.TemporaryDirectory(prefix="scree-disk-floor-", dir="/var/tmp") as d:
        p = run(d, "--shards", "2", "--log-kib", "8", "--log-period-ms", "20",
                "--table-mbps", "4", "--compaction-read-mbps", "4", "--chunk-kib", "64")
        assert p.returncode == 0, p.stderr
        r = rows(p.stdout)
        assert set(r) == {"reads", "reads_during_log_sync", "reads_otherwise",
                          "log_write_fdatasync"}
        assert r["reads"][0] > 0
        assert r["reads"][0] == r["reads_during_log_sync"][0] + r["reads_otherwise"][0]
        # 2 shards, one sync each per 20 ms for 1 s: about 100. A slow or
        # cold disk may fall far behind, never ahead: only the upper bound
        # is the tool's; the floor is that the log synced at all.
        assert 1 <= r["log_write_fdatasync"][0] <= 100
        p50, p99 = r["reads"][2], r["reads"][4]
        assert 0 < p50 <= p99
        summary = [l for l in p.stdout.splitlines() if "of reads met a log sync" in l]
        assert len(summary) == 1
        table = float(summary[0].split("table writes ")[1].split()[0])
        cread = float(summary[0].split("compaction reads ")[1].split()[0])
        assert 0 < table <= 8.5 and 0 < cread <= 8.5, summary
        assert os.listdir(d) == ["reads"]
        assert os.path.getsize(os.path.join(d, "reads")) == 16 << 20


def test_no_log_means_no_sync():
    with tempfile.TemporaryDirectory(prefix="scree-disk-floor-", dir="/var/tmp") as d:
        p = run(d, "--shards", "1", "--log-period-ms", "0")
        assert p.returncode == 0, p.stderr
        r = rows(p.stdout)
        assert r["log_write_fdatasync"][0] == 0
        assert r["reads_during_log_sync"][0] == 0
        assert r["reads"][0] > 0


@pytest.mark.parametrize("args", [
    ["--shards", "0"], ["--chunk-kib", "6"], ["--log-kib", "10"], ["--table-mbps", "x"],
    ["--seconds", "0"], ["--bogus"], ["extra"], ["--file-mb", "1", "--chunk-kib", "2048"],
])
def test_bad_values_are_refused(args):
    with tempfile.TemporaryDirectory(prefix="scree-disk-floor-", dir="/var/tmp") as d:
        p = run(d, *args)
        assert p.returncode == 2
        assert "usage: disk-floor" in p.stderr
        assert os.listdir(d) == []


def test_unwritable_dir_is_an_error():
    p = run("/proc/scree-disk-floor-nope")
    assert p.returncode == 1
    assert "disk-floor: mkdir /proc/scree-disk-floor-nope" in p.stderr
