# SPDX-License-Identifier: Apache-2.0
"""Read-modify-writes while writes stall on a full memtable budget.

One server (--smp 2, --memory 16MiB, the smallest it takes; batch sync)
serves the whole module. During every test, background clients pipeline
SETs of 100 KB values on keys of their own, so the memtable budget stays
full and writes wait for flushes; each test checks that its writes did
stall (the shards' write-stall counters grew while it ran), so it cannot
quietly stop testing what it is for. Meanwhile clients on both shards pipeline INCR, SETNX/SET
NX, APPEND, SETRANGE, GETSET/SET GET, GETDEL, INCRBYFLOAT, MSETNX and
EXPIRE NX on shared keys, and every reply is checked: INCR replies on a
counter are exactly 1..N, one winner per race, a chain of previous values
with no value seen twice, and one connection's pipeline on one key
answered exactly as Redis answers in order (a model of each key).

Every phase is a fixed count of operations (seeded); a phase also stops
with an error if it is still running after PHASE_CAP_S, which is a hang
guard, not a timing: nothing here asserts a duration.
"""
import os
import random
import re
import threading
import time
import urllib.request

import pytest

from server_util import Pipe, RespError, Server, free_port

MEMORY = "16MiB"            # the smallest --memory scree accepts
BIG = 100_000               # the background clients' value size
PHASE_CAP_S = 45            # hang guard for one phase (meson's timeout is 120 s)


@pytest.fixture(scope="module")
def srv():
    s = Server(smp=2, args=["--memory", MEMORY, "--commitlog-sync", "batch",
                            "--metrics-port", str(free_port())])
    s.metrics_url = "http://127.0.0.1:%s/metrics" % s.args[-1]
    s.start()
    yield s
    # And INFO, what an operator reads, agrees that writes stalled.
    r = s.client()
    info = r.info("all")
    r.close()
    assert sum(info["shard%d" % i]["stalls"] for i in range(2)) > 0
    s.close()


def metric(srv, name):
    """[shard 0's value, shard 1's] of a per-shard metric. The metrics
    endpoint, not INFO: INFO counts every shard's keys by a scan, which
    takes half a second under this load."""
    with urllib.request.urlopen(srv.metrics_url, timeout=30) as f:
        text = f.read().decode()
    got = dict(re.findall(r'^%s\{shard="(\d+)"\} (\d+)$' % name, text, re.M))
    return [int(got["0"]), int(got["1"])]


def stalls(srv):
    return sum(metric(srv, "scree_write_stalls_total"))


class Churn:
    """Background clients pipelining SETs of BIG-byte values on keys of
    their own (redis-py pipelines, one thread each). Entering waits until
    writes stall; leaving checks that they went on stalling while the
    body ran, and re-raises a background client's error."""

    def __init__(self, srv, n=2):
        self.srv = srv
        self.stop = threading.Event()
        self.errors = []
        self.threads = [threading.Thread(target=self.run, args=(i,)) for i in range(n)]

    def run(self, t):
        try:
            r = self.srv.client()
            big = os.urandom(BIG)
            i = 0
            while not self.stop.is_set():
                p = r.pipeline(transaction=False)
                for _ in range(16):
                    p.set("big:%d:%d" % (t, i % 200), big)
                    i += 1
                assert all(p.execute())
            r.close()
        except Exception as e:  # noqa: BLE001 -- re-raised by __exit__
            self.errors.append(e)

    def __enter__(self):
        before = stalls(self.srv)
        for t in self.threads:
            t.start()
        deadline = time.monotonic() + PHASE_CAP_S
        while stalls(self.srv) == before and not self.errors:
            assert time.monotonic() < deadline, "writes never stalled"
            time.sleep(0.02)
        self.start_stalls = stalls(self.srv)
        return self

    def __exit__(self, exc_type, *exc):
        end_stalls = stalls(self.srv)
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)
        if exc_type is None:
            assert not self.errors, self.errors
            assert end_stalls > self.start_stalls, \
                "no write stalled during the test: it did not test what it is for"


class Phase:
    """A hang guard: check() fails once the phase has run PHASE_CAP_S."""

    def __init__(self):
        self.deadline = time.monotonic() + PHASE_CAP_S

    def check(self):
        assert time.monotonic() < self.deadline, "phase still running after %d s" % PHASE_CAP_S


def shard_conns(srv, per_shard):
    """per_shard Pipes on each of the two shards (the kernel spreads
    connections over the shards' SO_REUSEPORT sockets; the shards' counts
    of accepted connections tell where each one landed)."""
    got = [[], []]
    spare = []
    for _ in range(64 * per_shard):
        if all(len(g) >= per_shard for g in got):
            break
        before = metric(srv, "scree_connections_accepted_total")
        p = Pipe(srv.port)
        assert p.call("PING") == b"PONG"     # accepted and served by its shard
        after = metric(srv, "scree_connections_accepted_total")
        grew = [i for i in range(2) if after[i] > before[i]]
        if len(grew) == 1 and len(got[grew[0]]) < per_shard:
            got[grew[0]].append(p)
        else:
            spare.append(p)
    for p in spare:
        p.close()
    assert all(len(g) == per_shard for g in got), "no connection landed on one shard"
    return got[0] + got[1]


@pytest.fixture
def ctl(srv):
    c = srv.client()
    yield c
    c.close()


def close_all(conns):
    for p in conns:
        p.close()


def race(conns, cmds_of, rounds, phase):
    """rounds times: every connection sends its commands (cmds_of(conn
    index, round)), then every reply is read. Returns replies[round][conn]."""
    out = []
    for rnd in range(rounds):
        phase.check()
        sent = []
        for c, p in enumerate(conns):
            cmds = cmds_of(c, rnd)
            p.send(cmds)
            sent.append(len(cmds))
        out.append([p.replies(n) for p, n in zip(conns, sent)])
    return out


def no_errors(replies):
    bad = [r for r in replies if isinstance(r, RespError)]
    assert not bad, bad[:5]


# ---- INCR ----

def test_incr_replies_on_shared_counters_are_exactly_1_to_n(srv, ctl):
    K, R = 16, 12
    keys = ["ctr:%d" % j for j in range(K)]
    rng = random.Random(1)
    with Churn(srv):
        conns = shard_conns(srv, 3)
        phase = Phase()
        orders = {}

        def cmds(c, rnd):
            order = keys * 2
            rng.shuffle(order)
            orders[(c, rnd)] = order
            return [("INCR", k) for k in order]

        out = race(conns, cmds, R, phase)
        close_all(conns)
    per_key = {k: [] for k in keys}
    backwards = []                  # (key, reply) a connection saw after a bigger one
    for rnd in range(R):
        for c in range(len(conns)):
            last = {}
            for k, v in zip(orders[(c, rnd)], out[rnd][c]):
                assert isinstance(v, int), (k, v)
                if v <= last.get(k, 0):
                    backwards.append((k, v))
                last[k] = v
                per_key[k].append(v)
    n = 2 * R * len(conns)
    bad = {}
    for k in keys:
        got = sorted(per_key[k])
        if got != list(range(1, n + 1)):
            bad[k] = "%d repeated replies, max %d" % (len(got) - len(set(got)), got[-1])
    assert not bad, "%d INCRs per counter: %s" % (n, bad)
    assert not backwards, "one connection's INCRs answered out of order: %s" % backwards[:5]
    assert [int(v) for v in ctl.mget(keys)] == [n] * K


# ---- SETNX / SET NX ----

def test_setnx_and_set_nx_races_have_exactly_one_winner(srv, ctl):
    C, per_round, R = 4, 300, 5
    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        phase = Phase()

        def key(rnd, j):
            return "lock:%d:%d" % (rnd, j)

        def cmds(c, rnd):
            # even connections SETNX, odd ones SET NX: they race each other too
            if c % 2 == 0:
                return [("SETNX", key(rnd, j), c) for j in range(per_round)]
            return [("SET", key(rnd, j), c, "NX") for j in range(per_round)]

        out = race(conns, cmds, R, phase)
        close_all(conns)
        for rnd in range(R):
            holders = ctl.mget([key(rnd, j) for j in range(per_round)])
            for j in range(per_round):
                won = [c for c in range(C) if out[rnd][c][j] in (1, b"OK")]
                lost = [c for c in range(C) if out[rnd][c][j] in (0, None)]
                assert len(won) == 1 and len(lost) == C - 1, \
                    "%s: winners %s, replies %s" % (key(rnd, j), won,
                                                    [out[rnd][c][j] for c in range(C)])
                assert holders[j] == str(won[0]).encode()


# ---- one connection's pipeline on one key, against a model ----

INT_RE = re.compile(rb"^(0|-?[1-9][0-9]*)$")


def as_int(v):
    if v is None:
        return 0
    if not INT_RE.match(v):
        return None
    n = int(v)
    return n if -2**63 <= n < 2**63 else None


class Model:
    """Redis's answer to each command on one key whose value is v (bytes or
    None); returns (reply, new value). Errors are RespError(None): any text."""

    @staticmethod
    def apply(v, cmd):
        op = cmd[0]
        if op == "INCR":
            n = as_int(v)
            if n is None or n + 1 >= 2**63:
                return RespError(None), v
            return n + 1, str(n + 1).encode()
        if op == "DEL":
            return int(v is not None), None
        if op == "GET":
            return v, v
        if op == "EXISTS":
            return int(v is not None), v
        if op == "STRLEN":
            return len(v or b""), v
        if op == "APPEND":
            nv = (v or b"") + cmd[2]
            return len(nv), nv
        if op == "GETSET" or (op == "SET" and len(cmd) == 4):
            return v, cmd[2]
        if op == "SET":
            return b"OK", cmd[2]
        if op == "GETDEL":
            return v, None
        if op == "SETNX":
            return (1, cmd[2]) if v is None else (0, v)
        if op == "SETRANGE":
            off, s = cmd[2], cmd[3]
            nv = (v or b"").ljust(off, b"\0")
            nv = nv[:off] + s + nv[off + len(s):]
            return len(nv), nv
        raise AssertionError(op)


TEMPLATES = [
    ["INCR", "INCR", "DEL", "GET"],
    ["APPEND", "APPEND", "GETDEL", "GET"],
    ["GETSET", "SETGET", "GETDEL", "EXISTS"],
    ["INCR", "SET", "INCR", "GET"],
    ["SETNX", "APPEND", "STRLEN", "GETSET", "INCR"],
    ["SETRANGE", "GET", "INCR", "DEL", "SETNX", "GET"],
]
RANDOM_OPS = ["INCR", "INCR", "DEL", "GET", "APPEND", "GETSET", "SETGET", "GETDEL", "SETNX",
              "SETRANGE", "EXISTS", "STRLEN", "SET"]


def make_cmd(rng, op, k):
    val = (str(rng.randrange(1, 10**4)) if rng.random() < 0.6 else
           "".join(rng.choice("abcxyz") for _ in range(rng.randrange(1, 6)))).encode()
    if op == "APPEND":
        return ("APPEND", k, val)
    if op == "SETGET":
        return ("SET", k, val, "GET")
    if op in ("SET", "GETSET", "SETNX"):
        return (op, k, val)
    if op == "SETRANGE":
        return ("SETRANGE", k, rng.randrange(0, 8), val)
    return (op, k)


def test_one_connections_pipeline_on_one_key_is_answered_in_order(srv, ctl):
    NK, R = 50, 3
    rng = random.Random(3)
    conns = shard_conns(srv, 2)
    keys = [["ord:%d:%d" % (c, i) for i in range(NK)] for c in range(len(conns))]
    model = {}
    # Half the keys hold a number from before the load, so their first
    # reads go to flushed data.
    for c in range(len(conns)):
        seed = {k: str(10 + i) for i, k in enumerate(keys[c]) if i % 2 == 0}
        ctl.mset(seed)
        model.update({k.encode(): v.encode() for k, v in seed.items()})
    with Churn(srv):
        phase = Phase()
        for rnd in range(R):
            phase.check()
            sent = []
            for c, p in enumerate(conns):
                seqs = []
                for k in keys[c]:
                    ops = rng.choice(TEMPLATES + [None])
                    ops = ops or [rng.choice(RANDOM_OPS) for _ in range(rng.randrange(3, 8))]
                    seqs.append([make_cmd(rng, op, k.encode()) for op in ops])
                if rnd % 2:
                    # interleave the keys' sequences; each key's stays in order
                    cmds = []
                    while any(seqs):
                        s = rng.choice([s for s in seqs if s])
                        cmds.append(s.pop(0))
                else:
                    cmds = [cmd for s in seqs for cmd in s]
                p.send(cmds)
                sent.append(cmds)
            for p, cmds in zip(conns, sent):
                for cmd in cmds:
                    got = p.reply()
                    k = cmd[1]
                    want, model[k] = Model.apply(model.get(k), cmd)
                    if isinstance(want, RespError):
                        assert isinstance(got, RespError), (cmd, got)
                    else:
                        assert got == want, "%r: got %r, want %r (round %d)" % (cmd, got, want, rnd)
        close_all(conns)
    for c in range(len(conns)):
        got = ctl.mget(keys[c])
        assert got == [model.get(k.encode()) for k in keys[c]]


# ---- the other read-before-write commands, raced ----

def test_concurrent_appends_lose_nothing(srv, ctl):
    C, K, R = 4, 40, 15
    keys = ["app:%d" % j for j in range(K)]
    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        out = race(conns, lambda c, rnd: [("APPEND", k, "%d%03d" % (c, rnd)) for k in keys],
                   R, Phase())
        close_all(conns)
        values = ctl.mget(keys)
    n = C * R
    for j, k in enumerate(keys):
        lens = [out[rnd][c][j] for rnd in range(R) for c in range(C)]
        no_errors(lens)
        assert sorted(lens) == list(range(4, 4 * n + 1, 4)), "%s: lengths %s" % (k, sorted(lens))
        for c in range(C):
            mine = [out[rnd][c][j] for rnd in range(R)]
            assert mine == sorted(mine), "%s: client %d's lengths out of order" % (k, c)
        tokens = [values[j][i:i + 4] for i in range(0, len(values[j]), 4)]
        for c in range(C):
            assert [t for t in tokens if t[:1] == b"%d" % c] == \
                [b"%d%03d" % (c, rnd) for rnd in range(R)], "%s: client %d's appends" % (k, c)


def test_concurrent_setranges_lose_nothing(srv, ctl):
    C, K, R = 4, 40, 15
    keys = ["rng:%d" % j for j in range(K)]

    def off(c, rnd):
        return 4 * (rnd * C + c)

    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        out = race(conns, lambda c, rnd: [("SETRANGE", k, off(c, rnd), "%d%03d" % (c, rnd))
                                          for k in keys], R, Phase())
        close_all(conns)
        values = ctl.mget(keys)
    for j, k in enumerate(keys):
        for c in range(C):
            mine = [out[rnd][c][j] for rnd in range(R)]
            no_errors(mine)
            assert all(m >= off(c, rnd) + 4 for rnd, m in enumerate(mine)), (k, c, mine)
            assert mine == sorted(mine), "%s: client %d's lengths went down" % (k, c)
        want = b"".join(b"%d%03d" % (c, rnd) for rnd in range(R) for c in range(C))
        assert values[j] == want, "%s: a SETRANGE was lost" % k


def test_getset_and_set_get_return_each_previous_value_once(srv, ctl):
    C, K, R = 4, 40, 15
    keys = ["chain:%d" % j for j in range(K)]

    def cmd(c, rnd, k):
        v = "%d:%d" % (c, rnd)
        return ("GETSET", k, v) if (c + rnd) % 2 else ("SET", k, v, "GET")

    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        out = race(conns, lambda c, rnd: [cmd(c, rnd, k) for k in keys], R, Phase())
        close_all(conns)
        finals = ctl.mget(keys)
    written = sorted(b"%d:%d" % (c, rnd) for c in range(C) for rnd in range(R))
    for j, k in enumerate(keys):
        prev = [out[rnd][c][j] for rnd in range(R) for c in range(C)]
        no_errors(prev)
        assert prev.count(None) == 1, "%s: %d writers saw no previous value" % (k, prev.count(None))
        seen = sorted([p for p in prev if p is not None] + [finals[j]])
        assert seen == written, "%s: the chain of previous values is broken" % k


def test_getdel_races_have_exactly_one_taker(srv, ctl):
    C, K, R = 4, 200, 4
    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        phase = Phase()
        for rnd in range(R):
            keys = ["take:%d:%d" % (rnd, j) for j in range(K)]
            ctl.mset({k: "v" + k for k in keys})
            out = race(conns, lambda c, _: [("GETDEL", k) for k in keys], 1, phase)[0]
            for j, k in enumerate(keys):
                got = [out[c][j] for c in range(C)]
                assert sorted(got, key=lambda x: x is None) == \
                    [("v" + k).encode()] + [None] * (C - 1), "%s: %r" % (k, got)
            assert ctl.exists(*keys) == 0
        close_all(conns)


def test_incrbyfloat_replies_are_exactly_each_step(srv, ctl):
    C, K, R = 4, 40, 15
    keys = ["flt:%d" % j for j in range(K)]
    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        out = race(conns, lambda c, rnd: [("INCRBYFLOAT", k, "0.5") for k in keys], R, Phase())
        close_all(conns)
        finals = ctl.mget(keys)
    n = C * R
    for j, k in enumerate(keys):
        got = [out[rnd][c][j] for rnd in range(R) for c in range(C)]
        no_errors(got)
        assert sorted(float(g) for g in got) == [0.5 * i for i in range(1, n + 1)], k
        assert float(finals[j]) == 0.5 * n


def test_msetnx_races_are_all_or_nothing_with_one_winner(srv, ctl):
    C, G, R = 4, 25, 2
    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        phase = Phase()

        def group(rnd, g):
            return ["msnx:%d:%d:%d" % (rnd, g, i) for i in range(4)]   # most span both shards

        out = race(conns, lambda c, rnd: [("MSETNX",) + tuple(x for k in group(rnd, g)
                                                               for x in (k, c))
                                          for g in range(G)], R, phase)
        close_all(conns)
        for rnd in range(R):
            for g in range(G):
                got = [out[rnd][c][g] for c in range(C)]
                assert sorted(got) == [0] * (C - 1) + [1], "%s: %r" % (group(rnd, g), got)
                winner = str(got.index(1)).encode()
                assert ctl.mget(group(rnd, g)) == [winner] * 4, group(rnd, g)


def test_expire_nx_races_have_exactly_one_winner(srv, ctl):
    C, K, R = 4, 200, 3
    with Churn(srv):
        conns = shard_conns(srv, C // 2)
        phase = Phase()
        for rnd in range(R):
            keys = ["exnx:%d:%d" % (rnd, j) for j in range(K)]
            ctl.mset({k: "x" for k in keys})
            out = race(conns, lambda c, _: [("EXPIRE", k, 1000 * (c + 1), "NX") for k in keys],
                       1, phase)[0]
            p = ctl.pipeline(transaction=False)
            for k in keys:
                p.ttl(k)
            ttls = p.execute()
            for j, k in enumerate(keys):
                got = [out[c][j] for c in range(C)]
                assert sorted(got) == [0] * (C - 1) + [1], "%s: %r" % (k, got)
                want = 1000 * (got.index(1) + 1)
                assert want - 120 <= ttls[j] <= want, (k, got, ttls[j])
        close_all(conns)
