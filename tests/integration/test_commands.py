# SPDX-License-Identifier: Apache-2.0
"""Every command of the first set through redis-py, error replies included
(Redis's exact texts), on a 2-shard server so keys land on both shards."""
import time

import pytest
import redis


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def test_ping_echo_select_time(r):
    assert r.ping()
    assert r.echo("x\x00y") == b"x\x00y"
    assert r.execute_command("SELECT", 0) is True
    assert err(r.execute_command, "SELECT", 16) == "DB index is out of range"
    assert err(r.execute_command, "SELECT", "x") == "value is not an integer or out of range"
    secs, usecs = r.time()
    assert abs(secs - time.time()) < 60 and 0 <= usecs < 1000000


def test_get_set_and_options(r):
    assert r.get("k") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    assert r.set("k", "w", nx=True) is None
    assert r.set("k2", "w", xx=True) is None
    assert r.get("k2") is None
    assert r.set("k", "w", xx=True) is True
    assert r.set("k", "z", get=True) == b"w"
    assert r.set("new", "z", get=True) is None
    assert r.get("new") == b"z"
    assert r.set("e", "1", ex=100)
    assert 98 <= r.ttl("e") <= 100
    assert r.set("e", "2", keepttl=True)
    assert 98 <= r.ttl("e") <= 100
    assert r.set("e", "3")
    assert r.ttl("e") == -1
    assert r.set("p", "1", px=100000)
    assert 99000 <= r.pttl("p") <= 100000
    assert r.set("a", "1", exat=int(time.time()) + 100)
    assert 98 <= r.ttl("a") <= 100
    assert r.set("past", "1", pxat=1000)
    assert r.get("past") is None


def test_set_errors(r):
    assert err(r.execute_command, "SET", "k", "v", "NX", "XX") == "syntax error"
    assert err(r.execute_command, "SET", "k", "v", "BOGUS") == "syntax error"
    assert err(r.execute_command, "SET", "k", "v", "EX") == "syntax error"
    assert err(r.execute_command, "SET", "k", "v", "EX", "0") == "invalid expire time in 'set' command"
    assert err(r.execute_command, "SET", "k", "v", "PX", "-1") == "invalid expire time in 'set' command"
    assert err(r.execute_command, "SET", "k", "v", "EX", "x") == "value is not an integer or out of range"
    assert err(r.execute_command, "SET", "k") == "wrong number of arguments for 'set' command"
    assert err(r.execute_command, "GET") == "wrong number of arguments for 'get' command"
    assert err(r.execute_command, "GET", "a", "b") == "wrong number of arguments for 'get' command"


def test_setnx_setex_getset_getdel(r):
    assert r.setnx("n", "1") is True
    assert r.setnx("n", "2") is False
    assert r.get("n") == b"1"
    assert r.setex("s", 100, "v")
    assert 98 <= r.ttl("s") <= 100
    assert r.psetex("ps", 100000, "v")
    assert 99000 <= r.pttl("ps") <= 100000
    assert err(r.execute_command, "SETEX", "s", "0", "v") == "invalid expire time in 'setex' command"
    assert err(r.execute_command, "PSETEX", "s", "-5", "v") == "invalid expire time in 'psetex' command"
    assert err(r.execute_command, "SETEX", "s", "x", "v") == "value is not an integer or out of range"
    assert r.getset("g", "1") is None
    assert r.getset("g", "2") == b"1"
    assert r.getdel("g") == b"2"
    assert r.getdel("g") is None
    assert r.exists("g") == 0


def test_incr_family(r):
    assert r.incr("c") == 1
    assert r.incrby("c", 10) == 11
    assert r.decr("c") == 10
    assert r.decrby("c", 20) == -10
    assert r.get("c") == b"-10"
    r.set("big", str(2**63 - 1))
    assert err(r.incr, "big") == "increment or decrement would overflow"
    assert r.get("big") == str(2**63 - 1).encode()
    r.set("str", "abc")
    assert err(r.incr, "str") == "value is not an integer or out of range"
    r.set("sp", " 1")
    assert err(r.incr, "sp") == "value is not an integer or out of range"
    assert err(r.execute_command, "INCRBY", "c", "1.5") == "value is not an integer or out of range"
    assert err(r.execute_command, "DECRBY", "c", str(-2**63)) == "decrement would overflow"
    r.set("t", "5", ex=100)
    assert r.incr("t") == 6
    assert r.ttl("t") > 0, "INCR keeps the expiry"


def test_append_strlen(r):
    assert r.append("ap", "ab") == 2
    assert r.append("ap", "cd") == 4
    assert r.get("ap") == b"abcd"
    assert r.strlen("ap") == 4
    assert r.strlen("nope") == 0


def test_multi_key_across_shards(r):
    keys = ["key:%d" % i for i in range(40)]
    assert r.mset({k: k.upper() for k in keys}) is True
    got = r.mget(keys + ["missing"])
    assert got == [k.upper().encode() for k in keys] + [None]
    assert r.exists(*keys, "missing", keys[0]) == 41
    assert r.dbsize() == 40
    assert r.delete(*keys[:10], "missing") == 10
    assert r.unlink(*keys[10:20]) == 10
    assert r.dbsize() == 20
    assert r.delete("missing") == 0
    assert err(r.execute_command, "MSET", "a", "1", "b") == "wrong number of arguments for 'mset' command"
    assert r.flushall() is True
    assert r.dbsize() == 0
    assert r.get(keys[30]) is None


def test_msetnx_sets_all_or_nothing_across_shards(r):
    keys = ["nx:%d" % i for i in range(20)]
    assert r.msetnx({k: "v1" for k in keys}) is True
    assert r.mget(keys) == [b"v1"] * 20
    # One key exists: nothing is written.
    fresh = ["nx2:%d" % i for i in range(20)]
    assert r.msetnx({**{k: "v2" for k in fresh}, keys[7]: "v2"}) is False
    assert r.mget(fresh) == [None] * 20
    assert r.get(keys[7]) == b"v1"
    assert err(r.execute_command, "MSETNX", "x", "1", "y") == \
        "wrong number of arguments for 'msetnx' command"
    assert r.exists("x") == 0
    # Inside a transaction.
    p = r.pipeline()
    p.msetnx({"t1": "a", "t2": "b"})
    p.msetnx({"t2": "c", "t3": "d"})
    assert p.execute() == [True, False]
    assert r.mget(["t1", "t2", "t3"]) == [b"a", b"b", None]


def test_expire_family_and_ttl(r):
    assert r.ttl("x") == -2 and r.pttl("x") == -2
    assert r.expire("x", 10) is False
    r.set("x", "v")
    assert r.ttl("x") == -1
    assert r.expire("x", 100) is True
    assert 98 <= r.ttl("x") <= 100
    assert r.pexpire("x", 50000) is True
    assert 49000 <= r.pttl("x") <= 50000
    assert r.expireat("x", int(time.time()) + 200) is True
    assert 198 <= r.ttl("x") <= 200
    assert r.pexpireat("x", int(time.time() * 1000) + 300000) is True
    assert r.persist("x") is True
    assert r.persist("x") is False
    assert r.ttl("x") == -1
    assert r.execute_command("EXPIRE", "x", 100, "XX") == 0
    assert r.execute_command("EXPIRE", "x", 100, "NX") == 1
    assert r.execute_command("EXPIRE", "x", 50, "GT") == 0
    assert r.execute_command("EXPIRE", "x", 500, "GT") == 1
    assert r.execute_command("EXPIRE", "x", 50, "LT") == 1
    assert 48 <= r.ttl("x") <= 50
    assert err(r.execute_command, "EXPIRE", "x", 5, "NX", "XX") == \
        "NX and XX, GT or LT options at the same time are not compatible"
    assert err(r.execute_command, "EXPIRE", "x", 5, "GT", "LT") == \
        "GT and LT options at the same time are not compatible"
    assert err(r.execute_command, "EXPIRE", "x", 5, "YY") == "Unsupported option YY"
    assert err(r.execute_command, "EXPIRE", "x", "soon") == "value is not an integer or out of range"
    assert err(r.execute_command, "EXPIRE", "x", str(2**62)) == "invalid expire time in 'expire' command"
    assert r.expire("x", -1) is True, "a time in the past deletes"
    assert r.exists("x") == 0
    r.set("y", "v")
    assert r.pexpire("y", 1) is True
    time.sleep(0.05)
    assert r.get("y") is None and r.ttl("y") == -2


def test_type(r):
    r.set("s", "v")
    assert r.type("s") == b"string"
    assert r.type("none") == b"none"


def test_limits_on_keys_and_values(server):
    from server_util import Server
    s = Server(args=["--max-key-bytes", "16", "--max-value-bytes", "100"]).start()
    try:
        c = s.client()
        assert err(c.set, "k" * 17, "v") == "key too long (max 16 bytes)"
        assert err(c.get, "k" * 17) == "key too long (max 16 bytes)"
        assert err(c.mget, "a", "k" * 17) == "key too long (max 16 bytes)"
        assert c.set("k" * 16, "v" * 100)
        # a longer bulk is a protocol error, from its header, and the connection
        # closes (test_protocol.py): a fresh one each, never reused after it
        assert err(s.client().set, "k", "v" * 101) == "Protocol error: invalid bulk length"
        assert err(s.client().mset, {"a": "1", "b": "v" * 101}) == \
            "Protocol error: invalid bulk length"
        assert c.get("a") is None, "MSET refused as a whole"
        c.set("ap", "v" * 90)
        assert err(c.append, "ap", "w" * 11) == \
            "string exceeds maximum allowed size (proto-max-bulk-len)"
        assert c.strlen("ap") == 90
        assert c.ping()
    finally:
        s.close()


def test_unknown_command_keeps_the_connection(r):
    e = err(r.execute_command, "NOSUCH", "a", "b")
    assert e == "unknown command 'NOSUCH', with args beginning with: 'a' 'b' "
    assert r.ping()


def test_command(server):
    c = server.raw()
    c.cmd("COMMAND", "COUNT")
    t, count = c.reply()
    assert t == b":" and int(count) > 30
    c.cmd("COMMAND", "INFO", "get", "nosuch")
    t, info = c.reply()
    assert info[0][1][0] == (b"$", b"get") and info[0][1][1] == (b":", b"2")
    assert info[1] == (b"*", None)
    c.cmd("COMMAND")
    t, all_ = c.reply()
    assert len(all_) == int(count)
    c.cmd("COMMAND", "DOCS")          # scree's own commands (tables) are documented
    t, docs = c.reply()
    assert t == b"*" and (b"$", b"row.range") in docs[::2]
    c.cmd("COMMAND", "DOCS", "get")
    assert c.reply() == (b"*", [])
    c.close()


def test_client_config_info(r):
    cid = r.client_id()
    assert cid > 0
    assert r.client_getname() is None
    assert r.client_setname("me") is True
    assert r.client_getname() == "me"
    assert err(r.execute_command, "CLIENT", "SETNAME", "a b") == \
        "Client names cannot contain spaces, newlines or special characters."
    assert r.execute_command("CLIENT", "SETINFO", "lib-name", "x") == b"OK"
    assert err(r.execute_command, "CLIENT", "NOPE").startswith("unknown subcommand 'NOPE'")
    cfg = r.config_get("max*")
    assert cfg["maxclients"] == "10000" and "max-key-bytes" in cfg and "port" not in cfg
    assert r.config_get("save") == {"save": ""}
    assert r.config_get("appendonly") == {"appendonly": "yes"}
    assert r.config_set("maxclients", "500") is True
    assert r.config_get("maxclients") == {"maxclients": "500"}
    e = err(r.config_set, "port", "1")
    assert e.startswith("CONFIG SET failed (possibly related to argument 'port')"), e
    e = err(r.config_set, "maxclients", "lots")
    assert e.startswith("CONFIG SET failed (possibly related to argument 'maxclients')"), e
    r.set("a", "1")
    r.set("b", "2")
    info = r.info()
    assert info["redis_version"] == "7.0.0"
    assert info["tcp_port"] > 0 and info["process_id"] > 0
    assert info["db0"]["keys"] == 2
    assert "shard0" in info and "shard1" in info
    assert r.info("keyspace") == {"db0": {"keys": 2, "expires": 0, "avg_ttl": 0}}


def test_redis_cli_works(server):
    import subprocess
    out = subprocess.run(["redis-cli", "-p", str(server.port), "set", "cli", "yes"],
                         capture_output=True, text=True, timeout=20)
    assert out.stdout.strip() == "OK" and out.stderr == ""
    out = subprocess.run(["redis-cli", "-p", str(server.port)], input="get cli\ninfo server\n",
                         capture_output=True, text=True, timeout=20)
    assert "yes" in out.stdout and "redis_version:7.0.0" in out.stdout, out


def test_config_set_reaches_every_shard(server, r):
    """Each shard keeps its own copy of the settings; CONFIG SET replies
    only once every shard has the change, so connections accepted by any
    shard see it at once."""
    assert r.config_set("maxclients", "777", "timeout", "0") is True
    clients = [server.client() for _ in range(12)]     # spread over both shards
    try:
        for c in clients:
            assert c.config_get("maxclients") == {"maxclients": "777"}
            assert c.info("clients")["maxclients"] == 777
        assert r.config_set("requirepass", "sekret") is True
        for _ in range(12):
            fresh = server.client()
            with pytest.raises(redis.AuthenticationError):
                fresh.get("x")
            assert fresh.execute_command("AUTH", "sekret") in (b"OK", True)
            fresh.close()
    finally:
        for c in clients:
            c.close()
