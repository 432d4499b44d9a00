# SPDX-License-Identifier: Apache-2.0
"""scree-proxy's command line: --help, and a clear message with exit
status 2 for every bad argument; a port in use stops it with status 1."""
import socket
import subprocess

import pytest

from proxy_util import BIN, Proxy


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)


def test_help_and_version():
    r = run("--help")
    assert r.returncode == 0
    for opt in ("--listen", "--origin", "--dir", "--threads", "--memory", "--default-ttl",
                "--max-object", "--metrics-port", "--sync", "--help"):
        assert opt in r.stdout
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("scree-proxy ")


GOOD = ["--origin", "127.0.0.1:9", "--dir", "/nonexistent/never/used"]


@pytest.mark.parametrize("args,message", [
    ([], "no --origin"),
    (["--origin", "127.0.0.1:9"], "no --dir"),
    (GOOD + ["--listen", "nonsense"], "--listen nonsense"),
    (GOOD + ["--listen", "127.0.0.1:70000"], "--listen"),
    (["--origin", "host-without-port", "--dir", "d"], "--origin host-without-port"),
    (GOOD + ["--threads", "0"], "--threads 0"),
    (GOOD + ["--threads", "many"], "--threads many"),
    (GOOD + ["--memory", "lots"], "--memory lots"),
    (GOOD + ["--default-ttl", "-1"], "--default-ttl -1"),
    (GOOD + ["--max-object", "17m"], "--max-object 17m"),
    (GOOD + ["--metrics-port", "x"], "--metrics-port x"),
    (GOOD + ["--sync", "sometimes"], "--sync sometimes"),
    (GOOD + ["--header-timeout", "0"], "--header-timeout 0"),
    (GOOD + ["--purge-from", "everyone"], "--purge-from everyone"),
    (GOOD + ["--idle-poll-us", "0"], "--idle-poll-us 0"),
    (GOOD + ["--bogus"], "unknown option --bogus"),
    (GOOD + ["--dir"], "--dir needs a value"),
    (GOOD + ["stray"], "unexpected argument 'stray'"),
    (["--origin", "no.such.host.invalid:80", "--dir", "d"], "no.such.host.invalid"),
])
def test_bad_arguments_exit_2(args, message):
    r = run(*args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr, r.stderr
    assert r.stderr.startswith("scree-proxy: ")


def test_a_port_in_use_exits_1(origin, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("--origin", origin.addr, "--dir", str(tmp_path / "c"), "--listen",
                "127.0.0.1:%d" % port, "--shards", "1")
    assert r.returncode == 1
    assert "cannot listen on 127.0.0.1:%d" % port in r.stderr


def test_a_port_another_proxy_listens_on_exits_1(origin, tmp_path):
    """Regression: SO_REUSEPORT let a second scree-proxy of the same user
    share the port, splitting the requests between two caches."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    p = Proxy([origin], dir=str(tmp_path / "a")).start()
    try:
        r = run("--origin", origin.addr, "--dir", str(tmp_path / "b"), "--listen",
                "127.0.0.1:%d" % p.port, "--shards", "1")
        assert r.returncode == 1
        assert "cannot listen on 127.0.0.1:%d" % p.port in r.stderr
    finally:
        assert p.stop() == 0


def test_sigterm_stops_cleanly(origin):
    p = Proxy([origin]).start()
    assert p.stop() == 0
    assert "stopping" in p.output()


def test_the_start_line_is_one_write_to_a_log_of_its_own(origin):
    """The start line a test waits for came in three writes through the
    test's own file description: a write after the reader's seek(0) tore
    it for good (a start that never came, in CI). Now the proxy writes it
    at once, and its log is a description of its own, appending."""
    p = Proxy([origin]).start()
    try:
        with open("/proc/%d/fdinfo/2" % p.proc.pid) as f:
            flags = int(next(line for line in f if line.startswith("flags:")).split()[1], 8)
        assert flags & 0o2000, "the proxy's stderr is not in append mode"
        line = [ln for ln in p.output().splitlines() if "listening on" in ln]
        assert len(line) == 1 and line[0].startswith("scree-proxy: listening on 127.0.0.1:")
        assert line[0].endswith("1 origin")
    finally:
        assert p.stop() == 0
