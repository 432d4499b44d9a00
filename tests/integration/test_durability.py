# SPDX-License-Identifier: Apache-2.0
"""Restarts: data kept on the same --dir, every acknowledged write kept
across SIGTERM and (in batch mode) kill -9 under a write load, a
directory made with another --smp refused."""
import os
import signal
import subprocess
import threading
import time

import redis

from server_util import BIN, WAIT_S, Server, wait_for


def test_restart_on_the_same_dir_keeps_the_data():
    s = Server().start()
    try:
        r = s.client()
        r.mset({"k%d" % i: "v%d" % i for i in range(300)})
        r.set("ttl", "x", ex=1000)
        r.delete("k7")
        r.close()
        assert s.stop() == 0
        assert "stopped cleanly" in s.output()
        s.start()
        r = s.client()
        assert r.dbsize() == 300
        assert r.get("k5") == b"v5" and r.get("k7") is None
        assert 990 <= r.ttl("ttl") <= 1000
    finally:
        s.close()


class Writers:
    """A few clients writing distinct keys, recording what was acknowledged."""

    def __init__(self, port, n=4, seconds=2 * WAIT_S):
        self.port = port
        self.acked = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.deadline = time.monotonic() + seconds
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(n)]

    def run(self, t):
        try:
            r = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=WAIT_S)
            i = 0
            while not self.stop.is_set() and time.monotonic() < self.deadline:
                p = r.pipeline(transaction=False)
                batch = [("w%d:%d" % (t, i + j), "val-%d-%d" % (t, i + j)) for j in range(8)]
                for k, v in batch:
                    p.set(k, v)
                p.execute()
                with self.lock:
                    self.acked.update(batch)
                i += 8
        except (redis.ConnectionError, redis.TimeoutError, ConnectionError):
            pass

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=WAIT_S)


def check_all_present(s, acked):
    r = s.client()
    keys = list(acked)
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        got = r.mget(chunk)
        for k, v in zip(chunk, got):
            assert v == acked[k].encode(), "lost acknowledged write %s" % k


def run_load_then(sig, sync):
    s = Server(args=["--commitlog-sync", sync]).start()
    try:
        with Writers(s.port) as w:
            # Under load: once the writers got going, however long that
            # takes here (a fixed 0.8 s left a slow machine without load).
            wait_for(lambda: len(w.acked) > 1000, "1000 acknowledged writes")
            s.proc.send_signal(sig)
            s.proc.wait(timeout=WAIT_S)
        rc = s.proc.returncode
        s.proc = None
        assert len(w.acked) > 100, "the load never ran"
        s.start()
        check_all_present(s, w.acked)
        return rc, s
    finally:
        s.close()


def test_sigterm_under_write_load_keeps_every_acknowledged_write():
    rc, s = run_load_then(signal.SIGTERM, "batch")
    assert rc == 0


def test_sigterm_in_periodic_mode_keeps_every_acknowledged_write():
    rc, s = run_load_then(signal.SIGTERM, "periodic")
    assert rc == 0


def test_kill9_under_write_load_in_batch_mode_keeps_every_acknowledged_write():
    rc, s = run_load_then(signal.SIGKILL, "batch")
    assert rc == -9


def test_a_dir_from_another_smp_is_refused():
    s = Server(smp=2).start()
    s.client().set("a", "1")
    s.stop()
    try:
        p = subprocess.run([BIN, "--port", str(s.port), "--dir", s.dir, "--smp", "1"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 1
        assert "another --smp" in p.stderr, p.stderr
        s.start()
        assert s.client().get("a") == b"1", "the refused start changed nothing"
    finally:
        s.close()


def last_record_offset(segment):
    """The offset of the last record in a commit-log segment, from scree-tool."""
    tool = os.path.join(os.path.dirname(BIN), "scree-tool")
    p = subprocess.run([tool, "wal", segment, "--records"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    records = [l for l in p.stdout.splitlines() if l.startswith("record at ")]
    assert records, p.stdout
    return int(records[-1].split()[2].rstrip(":"))


def test_a_damaged_last_commit_log_record_is_refused_and_salvage_skips_it():
    """Issue 23: bit rot in the last record of the commit log was cut as a
    torn tail and acknowledged writes disappeared; the advice named a
    salvage option the server did not have."""
    s = Server(smp=1).start()
    try:
        r = s.client()
        for i in range(200):
            r.set("k%d" % i, "v%d" % i)     # one record each
        r.close()
        assert s.stop() == 0
        seg = os.path.join(s.dir, "shard-0", "0000000000000001.log")
        off = last_record_offset(seg)
        with open(seg, "r+b") as f:         # bit rot in the last record's payload
            f.seek(off + 45)
            b = f.read(1)[0]
            f.seek(off + 45)
            f.write(bytes([b ^ 0x10]))
        p = subprocess.run([BIN, "--port", str(s.port), "--dir", s.dir, "--smp", "1",
                            "--prefault", "no"], capture_output=True, text=True, timeout=60)
        assert p.returncode == 1, p.stderr
        assert "0000000000000001.log is corrupt at offset %d" % off in p.stderr, p.stderr
        assert "restart with --salvage (config file: salvage yes)" in p.stderr, p.stderr
        s.args = ["--salvage"]
        s.start()
        assert "warn  [shard 0] shard 0: salvage: skipping damaged commit-log records in " \
            in s.output(), s.output()
        assert "0000000000000001.log from offset %d " % off in s.output(), s.output()
        r = s.client()
        assert r.dbsize() == 199
        assert r.get("k199") is None and r.get("k198") == b"v198"
    finally:
        s.close()
