# SPDX-License-Identifier: Apache-2.0
"""The main program as a user runs it: clean start and stop, clear errors.

Run by meson (suite integration) with SCREE_BIN and SCREE_NO_URING set.
Every process started here is bounded by a timeout and stopped by its PID.
"""
import os
import signal
import subprocess
import time

BIN = os.environ.get("SCREE_BIN", "build/scree")
NO_URING = os.environ.get("SCREE_NO_URING", "build/tests/integration/no_uring")


def run(args, timeout=20):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def test_exits_at_once_with_a_clear_message_when_io_uring_is_blocked():
    started = time.monotonic()
    p = run([NO_URING, BIN, "--smp", "2"])
    if p.returncode == 77:
        import pytest
        pytest.skip("seccomp unavailable: " + p.stderr.strip())
    assert p.returncode == 1, p.stderr
    assert "cannot start" in p.stderr
    assert "io_uring is not permitted" in p.stderr
    assert "seccomp" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert time.monotonic() - started < 10


def run_until_signal(sig, after_s, interval):
    """Starts scree on 2 shards, sends sig after after_s; returns (rc, stderr)."""
    p = subprocess.Popen([BIN, "--smp", "2", "--stats-interval", str(interval)],
                         stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(after_s)
        assert p.poll() is None, "exited early"
        p.send_signal(sig)
        _, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err


def test_sigterm_stops_cleanly():
    rc, err = run_until_signal(signal.SIGTERM, 1.0, 0.2)
    assert rc == 0, err
    assert "io_uring: single_issuer=" in err
    assert "shard 1: utilization" in err
    assert "received SIGTERM" in err
    assert "stopped cleanly" in err


def test_sigint_stops_cleanly_and_pings_flow():
    rc, err = run_until_signal(signal.SIGINT, 1.5, 0.5)
    assert rc == 0, err
    assert "received SIGINT" in err
    lines = [l for l in err.splitlines() if "shard 0: utilization" in l]
    assert lines and "received 0," not in lines[-1], err


def test_bad_flags_are_named():
    p = run([BIN, "--bogus", "1"])
    assert p.returncode == 2
    assert "unknown flag '--bogus'" in p.stderr
    p = run([BIN, "--smp", "zero"])
    assert p.returncode == 2
    assert "--smp" in p.stderr
    p = run([BIN, "--smp", "0"])
    assert p.returncode == 2
    p = run([BIN, "--help"])
    assert p.returncode == 0
    assert "--smp N" in p.stdout


def test_more_shards_than_cpus_run():
    p = run([BIN, "--smp", "4", "--duration", "0.5", "--stats-interval", "0"])
    assert p.returncode == 0, p.stderr
    assert "4 shard(s)" in p.stderr
