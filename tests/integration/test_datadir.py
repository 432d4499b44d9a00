# SPDX-License-Identifier: Apache-2.0
"""The data directory: one server at a time (<dir>/LOCK), and a refused
start leaves the directory exactly as it was (issue 23).

Run by meson (suite integration) with SCREE_BIN and SCREE_NO_URING set.
Every process started here is bounded by a timeout and stopped by its PID.
"""
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from server_util import Server, free_port

BIN = os.environ.get("SCREE_BIN", "build/scree")
NO_URING = os.environ.get("SCREE_NO_URING", "build/tests/integration/no_uring")


def tree(d):
    """Every path under d (relative) with its size; directories as -1."""
    out = {}
    for root, dirs, files in os.walk(d):
        for name in dirs:
            out[os.path.relpath(os.path.join(root, name), d)] = -1
        for name in files:
            p = os.path.join(root, name)
            out[os.path.relpath(p, d)] = os.path.getsize(p)
    return out


def refused(args, timeout=30):
    """Runs scree with args; it must exit on its own, non-zero. Returns
    its stderr. A start that is not refused becomes ready and runs: it is
    stopped by its PID once the deadline passes, and the test fails."""
    p = subprocess.Popen([BIN, "--prefault", "no"] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail("scree %s was not refused; it ran until killed:\n%s" % (args, err[-2000:]))
    assert p.returncode != 0, err
    return err


def made(smp=2, keys=("a", "b")):
    """A stopped server's directory with some keys in it."""
    s = Server(smp=smp).start()
    r = s.client()
    for k in keys:
        r.set(k, "v-" + k)
    assert s.stop() == 0
    return s


def test_a_second_server_on_a_running_ones_dir_is_refused_and_loses_nothing():
    # Regression: the second one started, deleted the first one's commit
    # log, and a write the first had acknowledged was gone after restart.
    a = Server(smp=2).start()
    ra = a.client()
    for i in range(200):
        ra.set("before:%d" % i, "x" * 100)
    for smp in ("2", "1", "3"):
        err = refused(["--port", str(free_port()), "--dir", a.dir, "--smp", smp])
        assert ("data directory %s is in use by process %d (lock file %s/LOCK)"
                % (a.dir, a.proc.pid, a.dir)) in err, err
        assert len(err.strip().splitlines()) == 1, err
    with open(os.path.join(a.dir, "LOCK")) as f:
        assert f.read() == "%d\n" % a.proc.pid
    for i in range(200):
        ra.set("after:%d" % i, "y" * 100)
    ra.close()
    a.stop(signal.SIGKILL)              # every write above was acknowledged
    a.start()
    r = a.client()
    for i in range(200):
        assert r.get("before:%d" % i) == b"x" * 100, i
        assert r.get("after:%d" % i) == b"y" * 100, i


def test_a_dir_is_free_again_once_its_server_is_gone():
    s = made()
    s.start()                           # after a clean stop (LOCK stays, stale)
    assert s.client().get("a") == b"v-a"
    s.stop(signal.SIGKILL)
    s.start()                           # after kill -9: the kernel dropped the lock
    assert s.client().get("b") == b"v-b"


def test_refused_starts_leave_an_existing_dir_as_it_was():
    # Regression: --smp 3 on a 2-shard directory was refused only after
    # shard 2 had made its directory, manifest and 64 MiB of log segments.
    s = made(smp=2)
    before = tree(s.dir)
    assert "shard-0/MANIFEST" in before
    port = str(free_port())
    for smp in ("3", "1", "4"):
        err = refused(["--port", port, "--dir", s.dir, "--smp", smp])
        assert tree(s.dir) == before, smp
        assert "another --smp" in err and "start with --smp 2" in err, err
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        err = refused(["--port", str(busy.getsockname()[1]), "--dir", s.dir, "--smp", "2"])
        assert "cannot listen on" in err, err
        assert tree(s.dir) == before, "busy port"
        err = refused(["--port", port, "--metrics-port", str(busy.getsockname()[1]),
                       "--dir", s.dir, "--smp", "2"])
        assert "cannot listen on" in err, err
        assert tree(s.dir) == before, "busy metrics port"
    err = refused(["--port", port, "--dir", s.dir, "--smp", "2", "--bind", "nowhere"])
    assert "not an IPv4 or IPv6 address" in err, err
    assert tree(s.dir) == before, "bad --bind"
    err = refused(["--port", port, "--dir", s.dir, "--smp", "2", "--bogus", "1"])
    assert tree(s.dir) == before, "bad flag"
    # Held by another process: this one.
    with open(os.path.join(s.dir, "LOCK"), "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        err = refused(["--port", port, "--dir", s.dir, "--smp", "2"])
        fcntl.flock(f, fcntl.LOCK_UN)
    assert "is in use by" in err, err
    assert tree(s.dir) == before, "lock held"
    s.start()
    assert s.client().get("a") == b"v-a", "the refused starts changed nothing"


def test_refused_starts_leave_no_new_dir_behind():
    parent = tempfile.mkdtemp(prefix="scree-it-")
    d = os.path.join(parent, "data")
    try:
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen(1)
            refused(["--port", str(busy.getsockname()[1]), "--dir", d, "--smp", "2"])
        assert not os.path.exists(d), "busy port"
        refused(["--port", str(free_port()), "--dir", d, "--smp", "2", "--bind", "nowhere"])
        assert not os.path.exists(d), "bad --bind"
        p = subprocess.run([NO_URING, BIN, "--smp", "2", "--port", str(free_port()), "--dir", d,
                            "--prefault", "no"], capture_output=True, text=True, timeout=30)
        if p.returncode != 77:          # 77: seccomp unavailable, nothing ran
            assert p.returncode == 1 and "io_uring is not permitted" in p.stderr, p.stderr
            assert not os.path.exists(d), "io_uring blocked: %s" % tree(d)
        assert os.listdir(parent) == []
    finally:
        shutil.rmtree(parent, ignore_errors=True)


def test_a_corrupt_manifest_is_refused_before_anything_is_made():
    s = made(smp=2)
    shutil.rmtree(os.path.join(s.dir, "shard-0"))
    with open(os.path.join(s.dir, "shard-1", "MANIFEST"), "r+b") as f:
        f.seek(40)
        f.write(b"\xff" * 16)
    before = tree(s.dir)
    err = refused(["--port", str(free_port()), "--dir", s.dir, "--smp", "2"])
    assert tree(s.dir) == before
    assert "shard-1/MANIFEST" in err and "corrupt" in err, err


def test_an_engine_that_fails_to_open_leaves_no_new_shard_behind():
    # shard-0 is missing (a damaged copy) and shard 1's engine fails to
    # open (a directory where it deletes a leftover table): shard 0 starts
    # a fresh directory meanwhile, which the refused start removes again.
    s = made(smp=2)
    shutil.rmtree(os.path.join(s.dir, "shard-0"))
    os.mkdir(os.path.join(s.dir, "shard-1", "00000000000000ff.sst"))
    before = tree(s.dir)
    err = refused(["--port", str(free_port()), "--dir", s.dir, "--smp", "2"])
    assert "cannot open %s/shard-1" % s.dir in err, err
    assert tree(s.dir) == before
