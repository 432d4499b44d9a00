# SPDX-License-Identifier: Apache-2.0
"""SAVE, BGSAVE and LASTSAVE: a save flushes every shard's memtables into
SSTables, so what was written before it survives a kill -9 even in periodic
mode with a period longer than the test (when nothing else would have
synced it). SAVE replies when that is done; BGSAVE at once, LASTSAVE and
INFO's rdb_* fields telling when it ended. Refused inside MULTI."""
import signal

import pytest
import redis

from server_util import Server, wait_for

N_KEYS = 3000       # over both shards
PERIODIC = ["--commitlog-sync", "periodic", "--commitlog-sync-period-ms", "60000"]


def restart_after_kill(s):
    assert s.stop(signal.SIGKILL) == -signal.SIGKILL
    s.start()
    return s.client()


def test_save_makes_earlier_writes_survive_kill_9():
    s = Server(args=PERIODIC).start()
    r = s.client()
    before = r.lastsave()
    r.mset({"k%d" % i: "v%d" % i for i in range(N_KEYS)})
    assert r.save() is True
    assert r.lastsave() >= before
    assert r.info("persistence")["rdb_last_bgsave_status"] == "ok"
    r = restart_after_kill(s)
    assert r.dbsize() == N_KEYS
    assert r.mget(["k0", "k%d" % (N_KEYS - 1)]) == [b"v0", b"v%d" % (N_KEYS - 1)]


def test_without_save_the_same_writes_are_lost_to_kill_9():
    # The control: what the test above checks is SAVE's doing.
    s = Server(args=PERIODIC).start()
    r = s.client()
    r.mset({"k%d" % i: "v%d" % i for i in range(N_KEYS)})
    r = restart_after_kill(s)
    assert r.dbsize() < N_KEYS


def test_bgsave_replies_at_once_and_its_end_shows_in_info():
    s = Server(args=PERIODIC).start()
    r = s.client()
    r.mset({"b%d" % i: "x" * 100 for i in range(N_KEYS)})
    assert r.bgsave() is True       # "+Background saving started"
    wait_for(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0, "BGSAVE to end")
    assert r.info("persistence")["rdb_last_bgsave_status"] == "ok"
    r = restart_after_kill(s)
    assert r.dbsize() == N_KEYS


def test_bgsave_arguments_and_save_inside_multi():
    s = Server().start()
    r = s.client()
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("BGSAVE", "NOW")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("SAVE", "x")
    p = r.pipeline(transaction=True)
    p.set("foo", "bar")
    p.execute_command("SAVE")
    with pytest.raises(redis.ResponseError, match="not allowed inside a transaction"):
        p.execute()     # redis-py names the refused command; EXEC answered EXECABORT
    assert r.get("foo") is None
