# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the perf/ scripts: servers on free loopback ports,
started in their own scratch directories and stopped by their own PID,
and medians. Python 3 standard library only (/usr/bin/python3)."""
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD_DIR", os.path.join(ROOT, "build"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def server_requests(n, p):
    """Requests in a load-generator run at pipeline depth p: n * p, so that a
    run at -P 16 lasts seconds as one at -P 1 does. redis-benchmark's
    multi-threaded client reports its elapsed time in steps of 250 ms: 200k
    GETs at -P 16 read 397,614/s whatever the server did, against 712k
    single-threaded."""
    return n * p


def need(*tools):
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"{tool} not found (apt-get install redis-server redis-tools gnuplot-nox)")


def server_command(kind, port, d, smp="2", extra=()):
    """kind: scree (its default commit-log sync), scree-periodic,
    scree-batch, redis (no persistence) or redis-always (appendfsync
    always)."""
    if kind.startswith("scree"):
        cmd = [os.path.join(BUILD, "scree"), "--port", str(port), "--dir", d, "--smp", str(smp)]
        if kind != "scree":
            cmd += ["--commitlog-sync", "batch" if kind == "scree-batch" else "periodic"]
        return cmd + list(extra)
    args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
            "--save", "", "--daemonize", "no", "--logfile", ""]
    if kind == "redis-always":
        return args + ["--appendonly", "yes", "--appendfsync", "always"]
    return args + ["--appendonly", "no"]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """A server of `kind` on a free port in a scratch directory under
    /var/tmp; a context manager that stops it (SIGTERM, then SIGKILL) and
    removes the directory."""

    def __init__(self, kind, smp="2", extra=(), preexec_fn=None):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix="scree-perf-", dir="/var/tmp")
        self.port = free_port()
        self.proc = subprocess.Popen(server_command(kind, self.port, self.dir, smp, extra),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=preexec_fn)

    def __enter__(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                sys.exit(f"{self.kind} exited with {self.proc.returncode}")
            # A keyed command: scree answers -LOADING until its shards are open.
            r = subprocess.run(["redis-cli", "-p", str(self.port), "EXISTS", "perf:ready"],
                               capture_output=True, text=True)
            if r.stdout.strip() == "0" and self.settled():
                return self
            time.sleep(0.1)
        self.stop()
        sys.exit(f"{self.kind} on port {self.port} not ready")

    def settled(self):
        """scree faults its memtable memory in for a second or so after
        start (--prefault): measure after that, as a warmed-up server."""
        if not self.kind.startswith("scree"):
            return True
        r = subprocess.run(["redis-cli", "-p", str(self.port), "INFO", "scree"],
                           capture_output=True, text=True)
        pending = re.findall(r"prefault_pending=(\d+)", r.stdout)
        return bool(pending) and all(p == "0" for p in pending)

    def __exit__(self, *exc):
        self.stop()

    def cpu(self):
        return cpu_seconds(self.proc.pid)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
