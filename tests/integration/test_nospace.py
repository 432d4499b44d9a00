# SPDX-License-Identifier: Apache-2.0
"""A full disk, for real (issue 23, "Disk full"): a small tmpfs (or, where
tmpfs takes no O_DIRECT, a loop-mounted ext4 image) made and torn down by
the test. Writes fail with the MISCONF error once it is full, resume by
themselves once space is freed, every acknowledged write is kept, SIGTERM
on a full disk exits 0, and a start on a full disk either starts or fails
leaving the directory as it was. Needs root (mount); skipped otherwise.

Run by meson (suite integration) with SCREE_BIN set.
"""
import errno
import os
import shutil
import signal
import subprocess
import tempfile
import time

import pytest
import redis

from server_util import Server, WAIT_S, wait_for

BIN = os.environ.get("SCREE_BIN", "build/scree")
TOOL = os.path.join(os.path.dirname(os.path.abspath(BIN)), "scree-tool")
FS_MIB = 160
VALUE = 16 << 10


def tree(d):
    """Every file under d (relative) with its size."""
    out = {}
    for root, _, files in os.walk(d):
        for name in files:
            p = os.path.join(root, name)
            out[os.path.relpath(p, d)] = os.path.getsize(p)
    return out


def o_direct_works(d):
    p = os.path.join(d, "probe")
    try:
        fd = os.open(p, os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
    except OSError:
        return False
    try:
        import mmap
        buf = mmap.mmap(-1, 4096)
        os.pwrite(fd, buf, 0)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        os.unlink(p)


class SmallFs:
    """A FS_MIB file system at a fresh mount point; unmount() undoes all."""

    def __init__(self):
        self.mnt = tempfile.mkdtemp(prefix="scree-nospace-")
        self.img = None
        self.mounted = False
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={FS_MIB}m", "tmpfs", self.mnt],
                           capture_output=True, text=True)
        if r.returncode == 0:
            self.mounted = True
            if o_direct_works(self.mnt):
                return
            self.unmount_only()
        self.img = self.mnt + ".img"
        with open(self.img, "wb") as f:
            f.truncate(FS_MIB << 20)
        r = subprocess.run(["mkfs.ext4", "-q", "-F", self.img], capture_output=True, text=True)
        if r.returncode == 0:
            r = subprocess.run(["mount", "-o", "loop", self.img, self.mnt], capture_output=True,
                               text=True)
        if r.returncode != 0:
            self.unmount()
            pytest.skip("cannot mount a small file system: " + r.stderr.strip())
        self.mounted = True

    def unmount_only(self):
        if self.mounted:
            subprocess.run(["umount", self.mnt], check=False)
            self.mounted = False

    def unmount(self):
        self.unmount_only()
        if self.img and os.path.exists(self.img):
            os.unlink(self.img)
        os.rmdir(self.mnt)

    def free(self):
        st = os.statvfs(self.mnt)
        return st.f_bavail * st.f_frsize

    def fill(self, path, leave=0):
        """Writes path until at most `leave` bytes are free (or none is)."""
        chunk = b"\xa5" * (1 << 20)
        with open(path, "ab") as f:
            try:
                while self.free() > leave + len(chunk):
                    f.write(chunk)
                    f.flush()
                while True:
                    if self.free() <= leave:
                        break
                    f.write(chunk[:4096])
                    f.flush()
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
        os.sync()


@pytest.fixture
def small_fs():
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small file system")
    fs = SmallFs()
    try:
        yield fs
    finally:
        for s in list(Server.made):
            s.close()
        fs.unmount()


def value(i):
    return (b"%08d" % i) * (VALUE // 8)


def write_batch(c, first, n):
    """SETs keys first..first+n-1 in one pipeline; returns (acked indexes,
    the first error's text or None)."""
    p = c.pipeline(transaction=False)
    for i in range(first, first + n):
        p.set(f"k{i}", value(i))
    res = p.execute(raise_on_error=False)
    acked, err = [], None
    for i, r in zip(range(first, first + n), res):
        if isinstance(r, Exception):
            err = err or str(r)
        else:
            acked.append(i)
    return acked, err


def check_acked(c, acked):
    for lo in range(0, len(acked), 200):
        keys = acked[lo:lo + 200]
        got = c.mget([f"k{i}" for i in keys])
        for i, v in zip(keys, got):
            assert v == value(i), f"acknowledged k{i} lost or wrong"


def test_writes_resume_after_a_full_disk_and_a_stop_on_it_is_clean(small_fs):
    data = os.path.join(small_fs.mnt, "data")
    filler = os.path.join(small_fs.mnt, "filler")
    # Room for the log's first segment and its reserve (32 MiB each) and a
    # little more: the third segment or a flush runs out of space.
    small_fs.fill(filler, leave=72 << 20)
    srv = Server(dir=data, smp=1, args=["--memory", "64mb"]).start()
    c = srv.client()
    acked, err, i = [], None, 0
    while err is None:
        assert i < (FS_MIB << 20) // VALUE * 4, "the disk never filled"
        a, err = write_batch(c, i, 50)
        acked += a
        i += 50
    assert err.startswith("MISCONF disk full"), err
    with pytest.raises(redis.ResponseError, match="MISCONF disk full"):
        c.set("while-full", "x")
    assert c.get(f"k{acked[0]}") == value(acked[0]), "reads go on"

    # Space returns: writes resume by themselves, no restart.
    os.unlink(filler)

    def a_write_succeeds():
        try:
            return c.set("resumed", "1")
        except redis.ResponseError:
            return False
    wait_for(a_write_succeeds, "a write succeeding after space returned")
    a, err = write_batch(c, i, 1000)
    assert err is None, err
    acked += a
    i += 1000
    check_acked(c, acked)

    # Full again; a clean stop still succeeds with everything acknowledged.
    small_fs.fill(filler)
    a, _ = write_batch(c, i, 50)
    acked += a
    i += 50
    c.close()
    assert srv.stop() == 0, srv.output()[-3000:]
    before = tree(data)

    # A start on the full disk starts, or fails leaving the directory as it was.
    again = Server(dir=data, smp=1, args=["--memory", "64mb"]).start(wait=False)
    deadline = time.monotonic() + WAIT_S
    while (again.proc.poll() is None and "ready to accept connections" not in again.output()
           and time.monotonic() < deadline):
        time.sleep(0.05)
    if again.proc.poll() is None:
        assert "ready to accept connections" in again.output(), again.output()
        check_acked(again.client(), acked)
        assert again.stop() == 0, again.output()[-3000:]
    else:
        assert again.stop() != 0
        after = tree(data)
        # Nothing new and nothing changed; start-up's normal recovery may
        # have removed leftovers the manifest no longer names (old log
        # segments kept for reuse, unrecorded tables), as any start does.
        assert set(after) <= set(before), again.output()[-3000:]
        assert {n: after[n] for n in after} == {n: before[n] for n in after}, again.output()[-3000:]
        for gone in set(before) - set(after):
            assert gone.endswith((".log", ".sst", ".tmp")), gone
            assert "removing " + os.path.join(data, gone) in again.output()
    shard = os.path.join(data, "shard-0")
    if os.path.exists(TOOL):
        r = subprocess.run([TOOL, "verify", shard], capture_output=True, text=True, timeout=WAIT_S)
        assert r.returncode == 0, r.stdout + r.stderr

    # With space, everything acknowledged is back.
    os.unlink(filler)
    last = Server(dir=data, smp=1, args=["--memory", "64mb"]).start()
    c = last.client()
    check_acked(c, acked)
    c.close()
    assert last.stop() == 0
