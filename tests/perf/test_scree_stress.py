# SPDX-License-Identifier: Apache-2.0
"""Smoke test of build/perf/scree-stress (suite perf-smoke): tiny bounded
runs of every mode against a real server -- build/scree when it is built,
else redis-server -- on a free loopback port. Checks counts, output shapes,
what the server holds afterwards (with redis-cli), and that bad options and
failures give a clear error and a non-zero exit. Nothing looks at timings."""
import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration"))
import server_util  # noqa: E402

STRESS = os.environ["SCREE_STRESS_BIN"]
SCREE = os.environ.get("SCREE_BIN", "build/scree")
DISTS = ["uniform", "zipfian", "latest", "sequential", "gaussian"]

if not shutil.which("redis-cli"):
    pytest.skip("redis-cli not installed (apt-get install redis-tools)", allow_module_level=True)


class RedisServer:
    """redis-server without persistence, on a free port, stopped by PID."""

    def __init__(self, args=()):
        self.port = server_util.free_port()
        self.dir = tempfile.mkdtemp(prefix="scree-stress-redis-", dir="/var/tmp")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + server_util.WAIT_S
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_server(args=()):
    if os.access(SCREE, os.X_OK):
        server_util.BIN = SCREE
        s = server_util.Server(smp=2, args=list(args)).start()
        return s, s.close
    if shutil.which("redis-server"):
        s = RedisServer(args)
        return s, s.stop
    pytest.skip("neither build/scree nor redis-server is there")


@pytest.fixture(scope="module")
def server():
    s, stop = start_server()
    yield s
    stop()


def stress(port, *args, ok=True, timeout=120):
    p = subprocess.run([STRESS, "-p", str(port), "--quiet", *args], capture_output=True, text=True,
                       timeout=timeout)
    if ok:
        assert p.returncode == 0, p.stderr
    return p


def stress_json(port, *args):
    return json.loads(stress(port, "--json", *args).stdout)


def cli(port, *args):
    p = subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def commands_processed(port):
    for line in cli(port, "INFO", "stats").splitlines():
        if line.startswith("total_commands_processed:"):
            return int(line.split(":")[1])
    raise AssertionError("no total_commands_processed in INFO stats")


def count_keys(port, prefix):
    return len(cli(port, "--scan", "--pattern", prefix + "*").split())


def key(prefix, i):
    return "%s%012d" % (prefix, i)


def test_closed_loop_counts_every_op(server):
    r = stress_json(server.port, "-n", "2000", "-c", "4", "--threads", "2", "-r", "100",
                    "--key-prefix", "cl:")
    assert r["total"]["ops"] == 2000
    assert r["requests"] == 2000
    assert set(r["by_op"]) == {"SET", "GET"}
    assert r["by_op"]["SET"]["ops"] + r["by_op"]["GET"]["ops"] == 2000
    assert r["total"]["errors"] == 0
    assert r["open_loop"] is False and r["load"] is None
    for k in ("ops_per_sec", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "misses"):
        assert k in r["total"]
    assert r["total"]["p50_ms"] <= r["total"]["p99_ms"] <= r["total"]["max_ms"]


def test_pipelined_sets_write_exactly_the_keys(server):
    # sequential over 300 keys from one thread: 300 SETs touch each key once
    r = stress_json(server.port, "--ratio", "1:0", "--distribution", "sequential", "-r", "300",
                    "-n", "300", "-P", "16", "-c", "3", "--threads", "1", "-d", "20",
                    "--key-prefix", "pp:")
    assert r["pipeline"] == 16 and r["total"]["ops"] == 300
    assert list(r["by_op"]) == ["SET"]
    assert count_keys(server.port, "pp:") == 300
    assert cli(server.port, "GET", key("pp:", 299)).strip() == "x" * 20


def test_load_writes_the_keyspace_and_gets_find_it(server):
    r = stress_json(server.port, "--load", "-r", "500", "--ratio", "0:1", "-n", "1000", "-d", "37",
                    "-c", "5", "--key-prefix", "ld:")
    assert r["load"]["keys"] == 500 and r["load"]["errors"] == 0
    assert count_keys(server.port, "ld:") == 500
    assert cli(server.port, "GET", key("ld:", 7)).strip() == "x" * 37
    assert r["by_op"]["GET"]["ops"] == 1000
    assert r["by_op"]["GET"]["misses"] == 0


def test_a_command_after_the_options_is_every_operation(server):
    # as redis-benchmark's trailing command: __key__ and __data__ filled in
    r = stress_json(server.port, "--distribution", "sequential", "-r", "150", "-n", "150",
                    "-c", "3", "--threads", "1", "-d", "9", "--key-prefix", "cmd:",
                    "--", "SET", "__key__", "__data__")
    assert list(r["by_op"]) == ["SET"] and r["total"]["ops"] == 150
    assert r["total"]["errors"] == 0
    assert count_keys(server.port, "cmd:") == 150
    assert cli(server.port, "GET", key("cmd:", 149)).strip() == "x" * 9
    r = stress_json(server.port, "-n", "300", "-c", "2", "-P", "4", "PING")
    assert list(r["by_op"]) == ["PING"] and r["total"]["ops"] == 300
    assert r["total"]["errors"] == 0
    r = stress_json(server.port, "-n", "40", "-c", "2", "NOSUCHCOMMAND", "__key__")
    assert r["total"]["ops"] == 40 and r["total"]["errors"] == 40
    # options end at the command's first word, as in redis-benchmark: "-c"
    # here is the command's, and its name is quoted in JSON and CSV
    name = 'X,"Y'
    r = stress_json(server.port, "-n", "20", "-c", "2", name, "-c", "5")
    assert r["connections"] == 2 and r["total"]["ops"] == 20
    assert r["mode"] == "command" and r["workload"] == name
    assert r["command"] == [name, "-c", "5"] and list(r["by_op"]) == [name]
    rows = list(csv.DictReader(io.StringIO(stress(server.port, "--csv", "-n", "10", "-c", "1",
                                                  name).stdout)))
    assert [row["op"] for row in rows] == [name, "all"] and rows[0]["ops"] == "10"


def test_key_offset_and_scatter(server):
    # --key-offset moves the numbers; --key-scatter writes number i as
    # (i * 618033988749) mod 10^12, one to one
    r = stress_json(server.port, "--distribution", "sequential", "-r", "100", "-n", "100",
                    "-c", "2", "--threads", "1", "-d", "5", "--key-prefix", "ko:",
                    "--key-offset", "1000", "--", "SET", "__key__", "__data__")
    assert r["key_offset"] == 1000 and r["key_scatter"] is False
    assert count_keys(server.port, "ko:") == 100
    assert cli(server.port, "GET", key("ko:", 1099)).strip() == "x" * 5
    r = stress_json(server.port, "--distribution", "sequential", "-r", "50", "-n", "50",
                    "-c", "2", "--threads", "1", "-d", "6", "--key-prefix", "ks:",
                    "--key-offset", "10", "--key-scatter", "--", "SET", "__key__", "__data__")
    assert r["key_scatter"] is True and r["total"]["errors"] == 0
    want = {key("ks:", (i * 618033988749) % 10**12) for i in range(10, 60)}
    assert set(cli(server.port, "--scan", "--pattern", "ks:*").split()) == want
    # the same numbers read back: no misses
    r = stress_json(server.port, "-r", "50", "-n", "200", "-c", "2", "--key-prefix", "ks:",
                    "--key-offset", "10", "--key-scatter", "--", "GET", "__key__")
    assert r["total"]["misses"] == 0 and r["total"]["errors"] == 0


def test_gets_of_missing_keys_are_misses_not_errors(server):
    r = stress_json(server.port, "--ratio", "0:1", "-n", "200", "-c", "2", "--key-prefix", "none:")
    assert r["total"]["misses"] == 200 and r["total"]["errors"] == 0


def test_open_loop_at_a_rate(server):
    r = stress_json(server.port, "--rate", "2000", "-n", "400", "-c", "4", "-r", "100")
    assert r["open_loop"] is True and r["target_rate"] == 2000
    assert r["total"]["ops"] == 400 and r["late"] == 0


def test_open_loop_duration_sends_or_counts_every_due_op(server):
    # 1000/s for 0.5 s: 500 intended send times fall inside the run; each
    # is either sent or reported late, however the machine is doing
    r = stress_json(server.port, "--rate", "1000", "--duration", "0.5", "-c", "4", "-r", "100")
    assert abs(r["total"]["ops"] + r["late"] - 500) <= 4, r


def test_open_loop_poisson(server):
    r = stress_json(server.port, "--rate", "3000", "--poisson", "-n", "300", "-c", "3", "-r", "100")
    assert r["total"]["ops"] == 300


def test_duration_bounds_a_closed_loop(server):
    r = stress_json(server.port, "--duration", "0.3", "-c", "2", "-r", "100")
    assert r["total"]["ops"] > 0
    r = stress_json(server.port, "--duration", "30", "-n", "100", "-c", "2", "-r", "100")
    assert r["total"]["ops"] == 100     # -n came first


@pytest.mark.parametrize("dist", DISTS)
def test_each_distribution(server, dist):
    r = stress_json(server.port, "--distribution", dist, "-r", "50", "-n", "500", "-c", "4",
                    "--key-prefix", "d%s:" % dist)
    assert r["distribution"] == dist
    assert r["total"]["ops"] == 500 and r["total"]["errors"] == 0


@pytest.mark.parametrize("mix", list("ABCDEF"))
def test_each_ycsb_mix(server, mix):
    prefix = "y%s:" % mix
    r = stress_json(server.port, "--ycsb", mix, "--load", "-r", "200", "-n", "600", "-c", "4",
                    "-P", "4", "--key-prefix", prefix)
    want = {"A": {"read", "update"}, "B": {"read", "update"}, "C": {"read"},
            "D": {"read", "insert"}, "E": {"scan", "insert"}, "F": {"read", "rmw"}}[mix]
    assert r["mode"] == "ycsb" and r["workload"] == mix
    assert set(r["by_op"]) == want
    assert sum(o["ops"] for o in r["by_op"].values()) == r["total"]["ops"] == 600
    assert r["total"]["errors"] == 0
    # reads of loaded keys and scans of them find values
    assert r["total"]["misses"] == 0
    inserts = r["by_op"].get("insert", {}).get("ops", 0)
    assert count_keys(server.port, prefix) == 200 + inserts
    rmw = r["by_op"].get("rmw", {}).get("ops", 0)
    assert r["requests"] == 600 + rmw       # an rmw is a GET and a SET


def test_ycsb_distribution_can_be_overridden(server):
    r = stress_json(server.port, "--ycsb", "C", "--distribution", "uniform", "-n", "100", "-r", "10")
    assert r["distribution"] == "uniform"
    r = stress_json(server.port, "--ycsb", "D", "-n", "100", "-r", "10")
    assert r["distribution"] == "latest"


def test_text_and_csv_output(server):
    out = stress(server.port, "-n", "300", "-c", "3", "-r", "10").stdout.splitlines()
    assert out[0].startswith("# scree-stress: 127.0.0.1:%d" % server.port)
    assert out[1].split()[:3] == ["op", "ops", "ops/s"]
    assert [l.split()[0] for l in out[2:5]] == ["SET", "GET", "all"]
    assert out[-1].startswith("summary: 300 ops (300 requests)")
    rows = stress(server.port, "--csv", "-n", "300", "-c", "3", "-r", "10").stdout.splitlines()
    assert rows[0] == "op,ops,ops_per_sec,p50_ms,p90_ms,p99_ms,p999_ms,max_ms,errors,misses"
    assert [r.split(",")[0] for r in rows[1:]] == ["SET", "GET", "all"]
    assert rows[-1].split(",")[1] == "300"


def test_timeseries_file_adds_up(server, tmp_path):
    path = tmp_path / "ts.csv"
    stress(server.port, "-n", "1000", "-c", "4", "-r", "10", "--timeseries", str(path))
    lines = path.read_text().splitlines()
    assert lines[0] == "second,ops,errors,p50_ms,p99_ms"
    assert sum(int(l.split(",")[1]) for l in lines[1:]) == 1000


def test_more_threads_than_connections(server):
    r = stress_json(server.port, "--threads", "8", "-c", "3", "-n", "90", "-r", "10")
    assert r["threads"] == 3 and r["total"]["ops"] == 90


@pytest.mark.parametrize("args", [
    ["--ratio", "x"], ["--ratio", "0:0"], ["--ycsb", "G"], ["--distribution", "zipf"],
    ["-c", "0"], ["-P", "0"], ["-n", "abc"], ["--theta", "1.5"], ["--rate", "-1"],
    ["--ratio", "1:1", "--ycsb", "A"], ["--json", "--csv"], ["--poisson"], ["--nope"],
    ["-p", "70000"], ["--duration", "0"], ["--key-offset", "x"], ["--key-offset"],
    ["--ratio", "1:1", "GET", "k"], ["--ycsb", "A", "--", "PING"],
])
def test_bad_options_are_refused(args):
    p = subprocess.run([STRESS, *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, (args, p.stdout, p.stderr)
    assert "scree-stress" in p.stderr and p.stdout == ""


def test_no_server_is_a_clear_error():
    port = server_util.free_port()
    p = stress(port, "-n", "10", ok=False, timeout=30)
    assert p.returncode == 1
    assert "connecting to 127.0.0.1:%d" % port in p.stderr


def against_fake_server(conn_handler, conns, *args):
    """Runs scree-stress -n 10 against a loopback listener whose first
    `conns` accepted connections go to conn_handler(c); returns the
    finished process."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    lsock.settimeout(server_util.WAIT_S)

    def serve():
        try:
            for _ in range(conns):
                c, _ = lsock.accept()
                c.settimeout(server_util.WAIT_S)
                conn_handler(c)
                c.close()
        except OSError:
            pass

    t = threading.Thread(target=serve)
    t.start()
    p = stress(lsock.getsockname()[1], "-n", "10", *args, ok=False, timeout=2 * server_util.WAIT_S)
    t.join(timeout=server_util.WAIT_S)
    lsock.close()
    return p


def test_a_dropped_connection_is_a_clear_error():
    # read one request, then hang up
    p = against_fake_server(lambda c: c.recv(4096), 2, "-c", "2", "--threads", "1")
    assert p.returncode == 1
    assert "closed by the server" in p.stderr


def test_garbage_replies_are_a_clear_error():
    def garbage(c):
        c.recv(4096)
        c.sendall(b"?not resp\r\n")
        c.recv(4096)

    p = against_fake_server(garbage, 1, "-c", "1")
    assert p.returncode == 1
    assert "not RESP" in p.stderr


@pytest.fixture(scope="module")
def auth_server():
    s, stop = start_server(["--requirepass", "sekret"])
    yield s
    stop()


def test_auth(auth_server):
    r = stress_json(auth_server.port, "-a", "sekret", "-n", "200", "-c", "2", "-r", "10")
    assert r["total"]["ops"] == 200 and r["total"]["errors"] == 0
    p = stress(auth_server.port, "-a", "wrong", "-n", "10", "-c", "2", ok=False)
    assert p.returncode == 1 and "AUTH refused" in p.stderr


def test_error_replies_are_counted_or_fatal(auth_server):
    # no AUTH: every request is refused by the server
    r = stress_json(auth_server.port, "-n", "50", "-c", "2", "-r", "10")
    assert r["total"]["ops"] == 50 and r["total"]["errors"] == 50
    assert "NOAUTH" in r["first_error"]
    p = stress(auth_server.port, "--stop-on-error", "-n", "50", "-c", "2", ok=False)
    assert p.returncode == 1 and "NOAUTH" in p.stderr
    p = stress(auth_server.port, "--load", "-r", "10", "-n", "10", "-c", "2", ok=False)
    assert p.returncode == 1 and "pre-load" in p.stderr


def test_sigint_stops_and_reports(server):
    p = subprocess.Popen([STRESS, "-p", str(server.port), "--quiet", "--json", "--duration", "60",
                          "-c", "2", "-r", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    # Interrupt it once it is running (its handler is set before it
    # connects), not after a fixed 0.5 s: a slow start would die of SIGINT.
    before = commands_processed(server.port)
    server_util.wait_for(lambda: p.poll() is not None or commands_processed(server.port) > before + 100,
                         "scree-stress's commands on the server")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    r = json.loads(out)
    assert r["interrupted"] is True and r["total"]["errors"] == 0
