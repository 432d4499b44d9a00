# SPDX-License-Identifier: Apache-2.0
"""CONFIG GET/SET as Redis 7 has them, and a stock redis.conf (issue 24).

CONFIG SET is atomic over the shards: a pair that fails, or a setting given
twice, changes nothing anywhere; racing CONFIG SETs leave every shard with
one CONFIG SET's values. Restart-only settings take their own value back.
CONFIG GET takes several patterns, lists aliases, hides hidden settings.
Redis's settings that mean nothing to scree are kept and shown back. And
Debian's /etc/redis/redis.conf, with only its port and directories edited,
starts scree: scree's settings take effect, the others get one warning
each, and an unknown name is a fatal error naming its line.
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading

import pytest
import redis

from server_util import BIN, WAIT_S, Server, child_output, free_port, wait_for

# Connections the kernel spreads over the shards (SO_REUSEPORT): with 12,
# every shard of two gets some but with odds of 1 in 2000.
N_CLIENTS = 12


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


@pytest.fixture
def clients(server):
    cs = [server.client() for _ in range(N_CLIENTS)]
    yield cs
    for c in cs:
        c.close()


def seen(clients, *names):
    """The values of names as every client's shard has them (one tuple each)."""
    return {tuple(c.config_get(n)[n] for n in names) for c in clients}


def test_config_set_refuses_a_setting_given_twice(r, clients):
    """Before issue 24 `CONFIG SET timeout 5 timeout 7` left shards with
    different values. Redis 7 refuses a duplicate, also in another case or
    through an alias, and then changes nothing."""
    for pairs in (["timeout", "5", "timeout", "7"], ["timeout", "5", "TIMEOUT", "7"],
                  ["slowlog-max-len", "5", "maxclients", "9", "slowlog-max-len", "6"],
                  ["loglevel", "debug", "log-level", "info"],
                  ["hash-max-ziplist-entries", "1", "hash-max-listpack-entries", "2"]):
        e = err(r.execute_command, "CONFIG", "SET", *pairs)
        assert e == ("CONFIG SET failed (possibly related to argument '%s') - duplicate "
                     "parameter" % pairs[-2]), e
    assert seen(clients, "timeout", "slowlog-max-len", "maxclients", "loglevel",
                "hash-max-listpack-entries") == {("0", "128", "10000", "notice", "512")}


def test_config_set_is_all_or_nothing_on_every_shard(r, clients):
    e = err(r.execute_command, "CONFIG", "SET", "maxclients", "500", "slowlog-max-len", "7",
            "maxmemory-clients", "200%")
    assert e == ("CONFIG SET failed (possibly related to argument 'maxmemory-clients') - "
                 "percentage argument must be less or equal to 100"), e
    e = err(r.execute_command, "CONFIG", "SET", "maxclients", "500", "no-such-setting", "1")
    assert e == "Unknown option or number of arguments for CONFIG SET - 'no-such-setting'", e
    e = err(r.execute_command, "CONFIG", "SET", "maxclients", "500", "port", "1")
    assert "can't set immutable config" in e, e
    assert seen(clients, "maxclients", "slowlog-max-len", "maxmemory-clients") == \
        {("10000", "128", "10%")}
    assert r.config_set("maxclients", "500", "slowlog-max-len", "7") is True
    assert seen(clients, "maxclients", "slowlog-max-len") == {("500", "7")}


def test_racing_config_sets_leave_every_shard_with_one_of_them(server, clients):
    """Two connections (likely on different shards) pipeline CONFIG SETs of
    the same two settings; each sets both to matching values. Afterwards
    every shard holds the pair of one CONFIG SET, the same everywhere."""
    def hammer(base):
        c = server.client()
        p = c.pipeline(transaction=False)
        for i in range(200):
            v = base + i
            p.execute_command("CONFIG", "SET", "slowlog-max-len", str(v), "maxclients",
                              str(v + 1000))
        assert all(x in (b"OK", True) for x in p.execute())
        c.close()

    threads = [threading.Thread(target=hammer, args=(b,)) for b in (0, 5000)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = seen(clients, "slowlog-max-len", "maxclients")
    assert len(got) == 1, got
    (slow, maxc), = got
    assert int(maxc) == int(slow) + 1000


def test_racing_config_sets_of_one_merged_setting_keep_both_changes(server, clients):
    """Found by review: client-output-buffer-limit merges a class into the
    current value, and each shard merged from its own current one, so two
    racing CONFIG SETs of different classes could both answer OK, one
    change lost, and the shards disagree. CONFIG SETs now run one at a
    time, each merged once: both classes' last values survive everywhere."""
    def hammer(cls, base):
        c = server.client()
        p = c.pipeline(transaction=False)
        for i in range(150):
            p.execute_command("CONFIG", "SET", "client-output-buffer-limit",
                              "%s %d 0 0" % (cls, base + i))
        assert all(x in (b"OK", True) for x in p.execute())
        c.close()

    threads = [threading.Thread(target=hammer, args=a) for a in (("pubsub", 1000),
                                                                 ("replica", 5000))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = seen(clients, "client-output-buffer-limit")
    assert len(got) == 1, got
    (val,), = got
    assert "slave 5149 0 0" in val and "pubsub 1149 0 0" in val, val   # Redis shows "slave"


def test_racing_config_sets_of_multi_word_values_all_succeed(server):
    """Found by review: the check of multi-word values (save,
    client-output-buffer-limit, ...) used strtok, whose state is global,
    while every shard checks a CONFIG SET at once: some failed at random."""
    save = " ".join("%d %d" % (3600 + i, 1 + i) for i in range(32))
    failures = []

    def hammer():
        c = server.client()
        p = c.pipeline(transaction=False)
        for _ in range(300):
            p.execute_command("CONFIG", "SET", "save", save)
        failures.extend(x for x in p.execute(raise_on_error=False) if x not in (b"OK", True))
        c.close()

    threads = [threading.Thread(target=hammer) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:3]


def test_a_pipelined_command_after_config_set_sees_it(server):
    """Found by review: CONFIG SET went on on every shard while the
    connection's next command ran, so a pipelined CONFIG GET saw the old
    value and an AUTH after setting requirepass failed."""
    c = server.client()
    p = c.pipeline(transaction=False)
    p.execute_command("CONFIG", "SET", "timeout", "123")
    p.execute_command("CONFIG", "GET", "timeout")
    p.execute_command("CONFIG", "SET", "requirepass", "sekrit")
    p.execute_command("AUTH", "sekrit")
    p.execute_command("CONFIG", "SET", "requirepass", "")
    got = p.execute()
    assert got[1] in ([b"timeout", b"123"], {b"timeout": b"123"}), got
    assert got[3] in (b"OK", True), got
    c.close()


def test_restart_only_settings_take_the_value_they_have(server, r):
    for name in ("port", "bind", "dir", "memory", "smp", "commitlog-sync", "databases",
                 "daemonize"):
        value = r.config_get(name)[name]
        assert r.config_set(name, value) is True, name
    assert r.config_set("memory", r.config_get("memory")["memory"] + "b") is True
    for name, value in (("port", str(free_port())), ("daemonize", "yes"), ("databases", "32"),
                        ("dir", "/elsewhere")):
        e = err(r.config_set, name, value)
        assert e.startswith("CONFIG SET failed (possibly related to argument '%s') - can't set "
                            "immutable config" % name), e
    assert r.config_get("port") == {"port": str(server.port)}


def test_config_get_takes_several_patterns_lists_aliases_hides_hidden(r):
    raw = r.execute_command("CONFIG", "GET", "maxmemory", "maxmemory*", "bind", "*of")
    names = raw[0::2]
    assert len(names) == len(set(names)), names
    res = dict(zip(names, raw[1::2]))
    for name in (b"slaveof", b"replicaof", b"maxmemory", b"maxmemory-samples",
                 b"maxmemory-clients", b"maxmemory-policy", b"bind"):
        assert name in res, (name, names)
    assert "key-load-delay" not in r.config_get("*")
    assert r.config_get("KEY-LOAD-DELAY") == {"key-load-delay": "0"}
    assert r.config_get("*max-*-entries") == {
        "hash-max-listpack-entries": "512", "hash-max-ziplist-entries": "512",
        "zset-max-listpack-entries": "128", "zset-max-ziplist-entries": "128",
        "set-max-intset-entries": "512"}


def test_every_setting_takes_its_own_value_back(r):
    """Redis's "CONFIG sanity": every setting CONFIG GET * shows takes its
    value back and keeps it."""
    before = r.config_get("*")
    assert len(before) > 150
    for name, value in before.items():
        assert r.config_set(name, value) is True, (name, value)
    assert r.config_get("*") == before


def test_redis_settings_clients_set_are_kept(r, clients):
    """Settings that clients and test suites set routinely: accepted,
    checked, kept on every shard and shown back (most have no effect)."""
    sets = {"save": "3600 1 300 100", "appendonly": "no", "appendfsync": "no",
            "maxmemory": "10000001", "maxmemory-policy": "allkeys-lru",
            "hash-max-listpack-entries": "64", "set-max-intset-entries": "7",
            "zset-max-listpack-value": "32", "list-max-listpack-size": "-1",
            "lazyfree-lazy-user-del": "yes", "activerehashing": "no",
            "latency-tracking": "no", "notify-keyspace-events": "AKE", "lua-time-limit": "100",
            "repl-backlog-size": "10000002",
            "client-output-buffer-limit": "normal 0 0 0 slave 1 2 3 pubsub 4 5 6"}
    for name, value in sets.items():
        assert r.config_set(name, value) is True, name
    for c in clients:
        got = c.config_get("*")
        for name, value in sets.items():
            assert got[name] == value, (name, got[name])
        assert got["busy-reply-threshold"] == "100"       # lua-time-limit is its old name
    assert r.config_get("maxmemory") == {"maxmemory": "10000001"}
    assert r.config_set("maxmemory", "1mb") is True
    assert r.config_get("maxmemory") == {"maxmemory": "1048576"}
    e = err(r.config_set, "maxmemory", "bla")
    assert e.startswith("CONFIG SET failed (possibly related to argument 'maxmemory')"), e
    # proto-max-bulk-len is scree's max-value-bytes, which takes effect at start only.
    assert r.config_get("proto-max-bulk-len")["proto-max-bulk-len"] == \
        r.config_get("max-value-bytes")["max-value-bytes"] == str(8 << 20)
    assert "immutable" in err(r.config_set, "proto-max-bulk-len", "1mb")
    # Features scree lacks are refused, not ignored.
    for name, value in (("tls-port", "6380"), ("cluster-enabled", "yes"),
                        ("replicaof", "127.0.0.1 1")):
        assert "is not supported" in err(r.config_set, name, value) or \
            "immutable" in err(r.config_set, name, value)


# ---- a stock redis.conf ----

STOCK = "/etc/redis/redis.conf"

# Settings of the stock file that scree has (and must not warn about).
SCREE_OWN = {"bind", "port", "timeout", "loglevel", "dir", "slowlog-log-slower-than",
             "slowlog-max-len"}


def stock_copy(tmp, port, extra=""):
    """Debian's redis.conf with its port and directories pointed at tmp.
    Returns (path, text)."""
    if not os.access(STOCK, os.R_OK):
        pytest.skip(STOCK + " not readable (Debian's redis-server package)")
    with open(STOCK) as f:
        text = f.read()
    text, n_port = re.subn(r"(?m)^port 6379$", "port %d" % port, text)
    text, n_dir = re.subn(r"(?m)^dir .*$", "dir %s/data" % tmp, text)
    # Unavoidable: the log goes to standard output, where the test reads it
    # (scree may honour logfile, and /var/log/redis is not the test's).
    text, _ = re.subn(r"(?m)^logfile .*$", 'logfile ""', text)
    assert n_port == 1 and n_dir == 1
    path = os.path.join(tmp, "redis.conf")
    with open(path, "w") as f:
        f.write(text + extra)
    return path, text


class ConfServer(Server):
    """A server started from a config file alone: no --port or --dir flag,
    so the file's are the ones used."""

    def __init__(self, conf, port, tmp):
        super().__init__(dir=tmp, port=port)
        self.conf = conf

    def start(self, wait=True):
        self.log = tempfile.TemporaryFile(mode="w+")
        # Not settings of the file: scree's own resources, kept small for
        # a test machine (the file has no memory or smp line).
        with child_output(self.log) as out:
            self.proc = subprocess.Popen([BIN, self.conf, "--smp", "2", "--prefault", "no"],
                                         stdout=out, stderr=subprocess.STDOUT, text=True)
        if wait:
            self.wait_ready()
        return self


def directives(text):
    """{name: first line number} of the file's settings."""
    first = {}
    for no, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if words and not words[0].startswith("#"):
            first.setdefault(words[0].lower(), no)
    return first


def test_a_stock_redis_conf_starts_scree():
    tmp = tempfile.mkdtemp(prefix="scree-conf-")
    port = free_port()
    try:
        path, text = stock_copy(tmp, port)
        s = ConfServer(path, port, tmp).start()
        c = s.client()
        assert c.set("k", "v") and c.get("k") == b"v"
        assert os.path.isdir(os.path.join(tmp, "data", "shard-0")), "the file's dir is used"
        got = c.config_get("*")
        assert got["port"] == str(port)
        assert got["bind"] == "127.0.0.1 -::1"
        assert got["dir"] == tmp + "/data"
        assert got["loglevel"] == "notice" and got["log-level"] == "info"
        assert got["timeout"] == "0" and got["slowlog-max-len"] == "128"
        assert got["appendonly"] == "no" and got["hz"] == "10"
        assert got["client-output-buffer-limit"] == \
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        assert got["databases"] == "16", "scree has 16 databases, whatever the file says"
        # bind's optional ::1 is listened on where the host has IPv6.
        try:
            with socket.create_connection(("::1", port), timeout=WAIT_S) as s6:
                s6.sendall(b"PING\r\n")
                assert s6.recv(64) == b"+PONG\r\n"
        except OSError as e:
            assert "optional address ::1 skipped" in s.output(), e
        c.close()
        out = s.output()
        warned = re.findall(r"warn  (.+?):(\d+): '([a-z0-9_-]+)' has no effect in scree", out)
        names = [w[2] for w in warned]
        assert len(names) == len(set(names)), "one warning per setting"
        first = directives(text)
        for f, no, name in warned:
            assert f == path and int(no) == first[name], (f, no, name)
        assert not SCREE_OWN & set(names), names
        for name in ("daemonize", "pidfile", "appendonly", "save" if "save" in first else "hz",
                     "client-output-buffer-limit", "databases", "hash-max-listpack-entries"):
            assert name in names, name
        assert s.close() == 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_a_redis_conf_with_an_unknown_name_is_refused_naming_the_line():
    tmp = tempfile.mkdtemp(prefix="scree-conf-")
    try:
        path, text = stock_copy(tmp, free_port(), extra="maxmemory-sideways yes\n")
        line = len(text.splitlines()) + 1
        p = subprocess.run([BIN, path, "--smp", "2", "--prefault", "no"], capture_output=True,
                           text=True, timeout=WAIT_S)
        assert p.returncode != 0
        assert "%s:%d: unknown setting 'maxmemory-sideways'" % (path, line) in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(tmp, "data")), "nothing made"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_the_warnings_of_a_config_file_go_to_its_log_file():
    """Found testing as a new user: the no-effect warnings went to stderr,
    before the log file the same file names was open, so whoever reads only
    the log never saw them."""
    tmp = tempfile.mkdtemp(prefix="scree-conf-")
    port = free_port()
    log = os.path.join(tmp, "scree.log")
    try:
        path, _ = stock_copy(tmp, port, extra="\nlogfile %s\n" % log)
        s = ConfServer(path, port, tmp).start(wait=False)

        def ready():
            assert s.proc.poll() is None, s.output()
            return os.path.exists(log) and "ready to accept connections" in open(log).read()

        wait_for(ready, "the server to log that it is ready")
        text = open(log).read()
        assert "'daemonize' has no effect in scree" in text, text[:2000]
        assert "has no effect" not in s.output(), s.output()[:2000]
        assert s.close() == 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
