# SPDX-License-Identifier: Apache-2.0
"""perf/compare end to end with tiny sizes (--quick): every row of the table
has figures and a ratio, and --plot writes three PNG charts. No timings."""
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(ROOT, "perf", "compare")
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))

ROW = re.compile(r"^(engine|scaling|server|check)\s+(.+?)\s{2,}.*\s([0-9.]+)x\s")


def have(*tools):
    return all(shutil.which(t) for t in tools)


@pytest.mark.skipif(not have("redis-server", "redis-benchmark", "redis-cli", "gnuplot"),
                    reason="needs redis-server, redis-tools and gnuplot-nox")
@pytest.mark.skipif(not os.access(os.path.join(BUILD, "perf", "scree-stress"), os.X_OK),
                    reason="perf/ not built")
def test_quick_run_prints_every_row_and_plots(tmp_path):
    out = tmp_path / "charts"
    r = subprocess.run([COMPARE, "--quick", "--plot", "--out", str(out)], capture_output=True,
                       text=True, timeout=600, env={**os.environ, "BUILD_DIR": BUILD})
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [m.groups() for m in map(ROW.match, r.stdout.splitlines()) if m]
    sections = [s for s, _, _ in rows]
    # rocksdb rows only when scree-bench was built with it: then 6 engine rows
    assert sections.count("scaling") == 2
    assert sections.count("server") == 8
    assert sections.count("check") == 4
    assert sections.count("engine") == 6
    for s, what, ratio in rows:
        assert float(ratio) > 0, (s, what)
    for png in ("engine_throughput.png", "server_throughput.png", "latency.png"):
        data = (out / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", png
        assert len(data) > 2000, png


def test_a_missing_build_is_a_clear_error_and_leaves_nothing(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    r = subprocess.run([COMPARE, "--quick"], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "BUILD_DIR": str(tmp_path),
                            "SCREE_BENCH_DIR": str(scratch)})
    assert r.returncode != 0
    assert "not built" in r.stderr or "not found" in r.stderr, r.stderr
    # Regression: the scratch directory was made before the check and leaked.
    assert list(scratch.iterdir()) == []


@pytest.mark.skipif(not have("redis-server", "redis-benchmark", "redis-cli"),
                    reason="needs redis-server and redis-tools")
@pytest.mark.skipif(not os.access(os.path.join(BUILD, "perf", "scree-stress"), os.X_OK),
                    reason="perf/ not built")
def test_stress_vs_redis_benchmark_runs_set_and_eval():
    # tiny: one round, both tools, SET and the server-bound EVAL check; the
    # script itself checks the server processed exactly what each tool sent
    r = subprocess.run([os.path.join(ROOT, "perf", "stress_vs_redis_benchmark")],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "BUILD_DIR": BUILD, "N": "300", "ROUNDS": "1",
                            "THREADS": "1", "PIPELINES": "1,4", "TESTS": "SET,EVAL",
                            "EVAL_SCRIPT": "return 1"})
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [l.split() for l in r.stdout.splitlines() if re.match(r"^\s+1\s+[14]\s+(SET|EVAL)\s", l)]
    assert sorted((row[1], row[2]) for row in rows) == [("1", "EVAL"), ("1", "SET"),
                                                      ("4", "EVAL"), ("4", "SET")]
    for row in rows:
        assert float(row[3]) > 0 and float(row[4]) > 0 and float(row[5]) > 0, row


@pytest.mark.skipif(not have("redis-server", "redis-cli"), reason="needs redis-server and redis-tools")
def test_exec_vs_pipeline_runs_every_server_and_checks_the_keys():
    # tiny: one round; the script checks DBSIZE after each server's EXEC
    r = subprocess.run([os.path.join(ROOT, "perf", "exec_vs_pipeline")], capture_output=True,
                       text=True, timeout=300,
                       env={**os.environ, "BUILD_DIR": BUILD, "N": "300", "ROUNDS": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [l.split() for l in r.stdout.splitlines()
            if l.split()[:1] and l.split()[0] in ("scree-batch", "scree-periodic", "redis")]
    assert [row[0] for row in rows] == ["scree-batch", "scree-periodic", "redis"]
    for row in rows:
        assert all(float(x) >= 0 for x in row[1:]), row     # 300 SETs may round to 0.000
