# SPDX-License-Identifier: Apache-2.0
"""The library in a real process under the failures an embedding program
meets (tests/api/api_tool.c does the writing): kill -9 in the middle of
acknowledged writes (batch mode: every acknowledged row is there after a
reopen), and a disk that fills up (puts fail with ENOSPC -- no abort --,
go on by themselves once space returns, and every acknowledged row is
kept). The full-disk test mounts a small file system (root only; skipped
otherwise)."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from test_nospace import small_fs  # noqa: E402,F401  (the server full-disk test's fixture)

TOOL = os.environ["SCREE_API_TOOL"]
WAIT_S = 120


class Writer:
    """api_tool write, its acknowledged indexes read as they come."""

    def __init__(self, d, first, count, vbytes):
        self.p = subprocess.Popen([TOOL, "write", d, str(first), str(count), str(vbytes)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.acked = []
        self.errors = []
        self.done = False

    def read_until(self, pred, what):
        deadline = time.monotonic() + WAIT_S
        while not pred():
            assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
            line = self.p.stdout.readline()
            assert line, f"the writer ended before {what}: rc {self.p.poll()}"
            line = line.strip()
            if line == "done":
                self.done = True
            elif line.startswith("error"):
                self.errors.append(line)
            else:
                self.acked.append(int(line))

    def kill9(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait(timeout=WAIT_S)
        # Lines written before the kill are still in the pipe.
        for line in self.p.stdout:
            line = line.strip()
            if line and line[0].isdigit():
                self.acked.append(int(line))


def check(d, acked):
    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write("".join(f"{i}\n" for i in acked))
    try:
        out = subprocess.run([TOOL, "check", d, f.name], capture_output=True, text=True,
                             timeout=WAIT_S)
    finally:
        os.unlink(f.name)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == f"ok {len(acked)}", out.stdout


@pytest.mark.parametrize("rounds", [3])
def test_kill9_keeps_every_acknowledged_row(tmp_path, rounds):
    d = str(tmp_path / "db")
    acked = []
    for r in range(rounds):
        w = Writer(d, r * 1000000, 1000000, 200)
        w.read_until(lambda: len(w.acked) >= 300, "300 acknowledged rows")
        w.kill9()
        assert w.errors == []
        acked += w.acked
        check(d, acked)


def test_a_full_disk_fails_puts_and_they_go_on_once_space_returns(small_fs, tmp_path):
    d = os.path.join(small_fs.mnt, "db")
    filler = os.path.join(small_fs.mnt, "filler")
    w = Writer(d, 0, 200000, 16 << 10)
    w.read_until(lambda: len(w.acked) >= 50, "50 acknowledged rows")
    small_fs.fill(filler)
    w.read_until(lambda: w.errors, "a failed put")
    assert any(e.split()[1] == str(-28) for e in w.errors), w.errors     # -ENOSPC
    assert w.p.poll() is None, "the program died on a full disk"
    n = len(w.acked)
    os.unlink(filler)
    w.read_until(lambda: len(w.acked) >= n + 50, "puts after space returned")
    w.p.send_signal(signal.SIGKILL)
    w.p.wait(timeout=WAIT_S)
    # Reopen a copy on a roomy disk: opening makes new commit-log segments,
    # which the small one may lack room for (refused, not lost: -ENOSPC).
    copy = str(tmp_path / "db")
    shutil.copytree(d, copy)
    check(copy, w.acked)
