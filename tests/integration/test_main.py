# SPDX-License-Identifier: Apache-2.0
"""The main program as a user runs it: clean start and stop, clear errors.

Run by meson (suite integration) with SCREE_BIN and SCREE_NO_URING set.
Every process started here is bounded by a timeout and stopped by its PID.
"""
import os
import shutil
import signal
import subprocess
import tempfile
import time

from server_util import WAIT_S, Server, free_port, wait_for

BIN = os.environ.get("SCREE_BIN", "build/scree")
NO_URING = os.environ.get("SCREE_NO_URING", "build/tests/integration/no_uring")


def run(args, timeout=WAIT_S):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


def test_exits_at_once_with_a_clear_message_when_io_uring_is_blocked():
    d = tempfile.mkdtemp(prefix="scree-it-")
    try:
        p = run([NO_URING, BIN, "--smp", "2", "--port", str(free_port()), "--dir", d])
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if p.returncode == 77:
        import pytest
        pytest.skip("seccomp unavailable: " + p.stderr.strip())
    assert p.returncode == 1, p.stderr
    assert "cannot start" in p.stderr
    assert "io_uring is not permitted" in p.stderr
    assert "seccomp" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    # "At once" is run()'s timeout: a hang fails there, a slow machine not.


def stop_with(sig):
    s = Server().start()
    try:
        assert s.client().ping()
        rc = s.stop(sig)
        return rc, s.output()
    finally:
        s.close()


def test_a_closed_server_leaves_no_directory_behind():
    # Regression: servers that tests stopped kept their --dir (two 32 MiB
    # log segments a shard): eight a run, 74 GB in /tmp after a day of runs.
    s = Server().start()
    s.client().set("k", "v")
    made = s.dir
    assert os.path.isdir(os.path.join(made, "shard-0"))
    assert s.close() == 0
    assert not os.path.exists(made)
    given = tempfile.mkdtemp(prefix="scree-it-")
    try:
        s = Server(dir=given).start()
        s.close()
        assert os.path.isdir(os.path.join(given, "shard-0")), "a --dir passed in is the caller's"
    finally:
        shutil.rmtree(given, ignore_errors=True)


def test_sigterm_stops_cleanly():
    rc, out = stop_with(signal.SIGTERM)
    assert rc == 0, out
    assert "2 shard(s), listening on 127.0.0.1:" in out
    assert "received SIGTERM" in out and "stopped cleanly" in out


def test_sigint_stops_cleanly():
    rc, out = stop_with(signal.SIGINT)
    assert rc == 0, out
    assert "received SIGINT" in out and "stopped cleanly" in out


def test_bad_flags_are_named():
    p = run([BIN, "--bogus", "1"])
    assert p.returncode == 2
    assert "unknown flag '--bogus'" in p.stderr
    p = run([BIN, "--smp", "zero"])
    assert p.returncode == 2
    assert "'smp'" in p.stderr
    p = run([BIN, "--help"])
    assert p.returncode == 0
    assert "--smp" in p.stdout and "--port" in p.stdout


def test_a_busy_port_is_named():
    s = Server(smp=1).start()
    d = tempfile.mkdtemp(prefix="scree-it-")
    try:
        p = run([BIN, "--port", str(s.port), "--dir", d, "--smp", "1"])
        assert p.returncode == 1
        assert "cannot listen on 127.0.0.1:%d" % s.port in p.stderr, p.stderr
    finally:
        s.stop()
        shutil.rmtree(d, ignore_errors=True)


def test_a_restart_right_after_kill9_binds_the_same_ports():
    # Regression (issue 23): a restart right after kill -9 sometimes failed
    # with "cannot listen ...: Address already in use" -- the killed
    # process's listeners live until its io_uring has torn down, tens of ms
    # after waitpid. Each round keeps a client connection ESTABLISHED over
    # the kill and restarts at once (stop() waits for the exit by waitpid;
    # start() fails if the server exits instead of becoming ready).
    s = Server(smp=2, args=["--metrics-port", str(free_port())]).start()
    for i in range(20):
        c = s.raw()
        c.cmd("PING")
        assert c.reply() == (b"+", b"PONG")
        assert s.stop(signal.SIGKILL) == -signal.SIGKILL
        try:
            s.start()
        except RuntimeError as e:
            raise AssertionError("round %d: %s" % (i, e)) from None
        finally:
            c.close()
    assert s.client().ping()


def test_prefault_faults_the_memtable_budget_in_after_start():
    s = Server(smp=2, args=["--prefault", "yes", "--memory", "64MiB"]).start()
    try:
        r = s.client()
        assert r.config_get("prefault") == {"prefault": "yes"}

        def prefaulted():
            shards = r.info("scree")
            pending = [v["prefault_pending"] for k, v in shards.items() if k.startswith("shard")]
            return pending and not any(pending)

        # Memory this machine never touched may take long to fault in (issue 23).
        wait_for(prefaulted, "prefault_pending 0 on every shard")
        shards = r.info("scree")
        for k, v in shards.items():
            if k.startswith("shard"):
                assert v["prefault_pending"] == 0, shards
                assert v["blocks_prefaulted"] > 0, shards
        r.mset({"p%d" % i: "v" * 100 for i in range(2000)})
        assert r.get("p1999") == b"v" * 100
        assert "MiB of memtable and cache memory faulted in" in s.output()
    finally:
        s.close()


def proc_status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError("no %s in /proc/%d/status" % (field, pid))


def test_prefault_faults_in_no_more_than_memory():
    # Regression (issue 24): --memory 64MiB on 2 shards was 97 MiB resident
    # once prefaulted: each shard faulted its pool's whole capacity in
    # (memtable budget, a block per tablet, the cache and its overrun).
    # Now at most the memtables' half and the cache's quarter are.
    s = Server(smp=2, args=["--prefault", "yes", "--memory", "64MiB"]).start()
    try:
        with open("/proc/%d/maps" % s.proc.pid) as f:
            if "libasan" in f.read():
                import pytest
                pytest.skip("ASan's shadow memory counts in the RSS")
        r = s.client()

        def shards():
            return [v for k, v in r.info("scree").items() if k.startswith("shard")]

        wait_for(lambda: shards() and not any(v["prefault_pending"] for v in shards()),
                 "prefault_pending 0 on every shard")
        assert all(v["blocks_prefaulted"] > 0 for v in shards()), shards()
        anon_kib = proc_status_kib(s.proc.pid, "RssAnon")
        rss_kib = proc_status_kib(s.proc.pid, "VmRSS")
        assert anon_kib <= 64 << 10, "%d KiB anonymous memory resident for --memory 64MiB" % anon_kib
        assert rss_kib <= 64 << 10, "%d KiB resident for --memory 64MiB" % rss_kib
    finally:
        s.close()


def test_without_prefault_nothing_is_faulted_ahead():
    s = Server(smp=1, args=["--prefault", "no"]).start()
    try:
        r = s.client()
        assert r.config_get("prefault") == {"prefault": "no"}
        r.set("k", "v")
        shard = r.info("scree")["shard0"]
        assert shard["blocks_prefaulted"] == 0 and shard["prefault_pending"] == 0, shard
    finally:
        s.close()
    p = run([BIN, "--prefault", "maybe"])
    assert p.returncode == 2 and "'prefault'" in p.stderr, p.stderr


def test_more_shards_than_cpus_run():
    s = Server(smp=4).start()
    try:
        r = s.client()
        r.mset({"m%d" % i: i for i in range(100)})
        assert r.dbsize() == 100
        assert "4 shard(s)" in s.output()
    finally:
        s.close()


def test_data_commands_and_ping_answer_loading_until_every_shard_has_loaded():
    # Redis has one loading state. Regression (issue 23's reproducers):
    # a shard with nothing to replay served its keys while the other still
    # replayed its log, so a client probing one key took the server for
    # ready and the next command got -LOADING. PING, a readiness probe,
    # answers -LOADING too (issue 24), and INFO works meanwhile.
    import redis
    s = Server(smp=2, args=["--memory", "1GiB"]).start()
    r = s.client()
    owner = {}
    for i in range(64):
        k = "probe%d" % i
        before = shard_writes(r)
        r.set(k, "v")
        after = shard_writes(r)
        owner[k] = [j for j in after if after[j] > before[j]][0]
    k0 = [k for k in owner if owner[k] == 0][0]
    k1 = [k for k in owner if owner[k] == 1][:8]
    # A long log on shard 1 only: overwrites of a few of its keys.
    raw = s.raw()
    val = "x" * 200
    batch = b"".join(resp_cmd("SET", k, val) for k in k1) * 125     # 1000 SETs
    for _ in range(400):                         # 400k writes
        raw.send(batch)
        for _ in range(1000):
            assert raw.reply() == (b"+", b"OK")
    s.stop(signal.SIGKILL)
    s.start(wait=False)
    probe = None
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        try:
            probe = probe or s.client()
            pong = probe.ping()
        except redis.exceptions.BusyLoadingError:
            pong = False
            assert probe.info("server")["tcp_port"] == s.port
        except redis.exceptions.ConnectionError:
            probe = None
            continue
        if pong:
            loading = {k: v["loading"] for k, v in probe.info("all").items()
                       if k.startswith("shard") and k[5:].isdigit()}
            assert all(v == 0 for v in loading.values()), \
                "PONG while a shard still loaded: %s" % loading
        try:
            got = probe.get(k0)
        except redis.exceptions.BusyLoadingError:
            continue
        except redis.exceptions.ConnectionError:
            probe = None
            continue
        assert got == b"v"
        shards = probe.info("all")
        loading = {k: v["loading"] for k, v in shards.items()
                   if k.startswith("shard") and k[5:].isdigit()}
        assert all(v == 0 for v in loading.values()), \
            "a key was served while a shard still loaded: %s" % loading
        break
    else:
        raise AssertionError("never served")
    s.close()


def shard_writes(r):
    return {int(k[5:]): v["writes"] for k, v in r.info("all").items()
            if k.startswith("shard") and k[5:].isdigit()}


def resp_cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode() if isinstance(a, str) else a
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def test_the_servers_log_is_a_description_of_its_own_appending():
    """server_util gives the server its log in append mode through a file
    description of its own: sharing the reader's offset, a write after the
    reader's seek(0) overwrote the log's start (the proxy's tests lost a
    start line that way)."""
    s = Server().start()
    try:
        with open("/proc/%d/fdinfo/1" % s.proc.pid) as f:
            flags = int(next(line for line in f if line.startswith("flags:")).split()[1], 8)
        assert flags & 0o2000, "the server's stdout is not in append mode"
        assert "ready to accept connections" in s.output()
    finally:
        s.close()
