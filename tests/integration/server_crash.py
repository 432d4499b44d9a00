#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""kill -9 the real server while its writes stall, round after round.

One data directory serves the whole campaign; build/scree (or $SCREE_BIN)
runs on it with --smp 2, --memory 16MiB (the smallest accepted) and batch
sync, and every start waits until each shard has loaded (INFO loading:0).
In each round six connections pipeline, two batches in flight each: two
heavy writers SET values of 100-200 KB (first deleting all but 16 of
their older keys), which keeps the memtable budget full so writes stall;
four others mix small SETs, INCRs on 8 shared counters and DELs of keys
they set earlier. Every SET is of a new key whose value encodes it. Once
writes have stalled (the shards' write-stall counter, INFO's `stalls`,
read from --metrics-port) and a seeded random delay of up to 1 s more has
passed, the server is SIGKILLed by its PID; one round in five also
SIGKILLs the next start at a random moment of its recovery. The next
start (not stopped cleanly: the next round loads it) is checked against
a model of every key:
  - every acknowledged SET's key holds its value, every acknowledged DEL's
    key is gone; a key whose SET or DEL was sent but not acknowledged may
    be either (a value must still be exact), and is then what was seen;
  - each counter is at least its highest acknowledged INCR reply, at most
    its value at the round's start plus the INCRs sent, and at most that
    reply plus the INCRs not acknowledged;
  - while the load ran: INCR replies on a counter never repeat and stay
    within those bounds, a DEL of a key known present answers 1, a SET OK;
  - writes stalled over the campaign (each round's count is printed).
Each round checks the keys it touched and 1000 older ones. After the last
round the server is stopped with SIGTERM (exit status 0), started again,
and 20 000 keys (all, if fewer) are checked.

usage: server_crash.py [--rounds N] [--seed S] [--connections C] [--dir D]
                       [--keep-going]
Environment: SCREE_BIN, and SCREE_CRASH_ROUNDS / SCREE_CRASH_SEED as the
defaults of --rounds / --seed. Exit status 0: every invariant held; 1: a
violation (printed, with the data directory kept); 2: usage.
"""
import argparse
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import Pipe, Server, free_port  # noqa: E402

MEMORY = "16MiB"
COUNTERS = ["ctr:%d" % j for j in range(8)]
BATCH = 32
HEAVY = 2                   # writers setting large values: they fill the memtables

# Key states in the model.
PRESENT, ABSENT, EITHER = "present", "absent", "either"


class Violation(AssertionError):
    pass


def value_of(key):
    """The one value ever written to key (bytes): the key repeated, 100
    to 200 KB for a heavy writer's key (h...), else 100 B to 2 KB, the size
    from a hash of the key."""
    h = zlib.crc32(key)
    size = 100_000 + h % 100_000 if key[:1] == b"h" else 100 + h % 2000
    return ((key + b"|") * (size // (len(key) + 1) + 1))[:size]


def metric(port, name):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as f:
        text = f.read().decode()
    return sum(int(v) for v in re.findall(r'^%s\{shard="\d+"\} (\d+)$' % name, text, re.M))


class Campaign:
    def __init__(self, rounds, seed, conns=6, dir=None, log=print, keep_going=False):
        self.rounds, self.seed, self.n_conns, self.log = rounds, seed, conns, log
        self.keep_going = keep_going
        self.violations = []
        self.rnd = 0
        self.own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="scree-crash-")
        self.keys = {}                      # key -> PRESENT / ABSENT / EITHER
        self.pools = [[] for _ in range(conns)]   # per writer: keys it may DEL
        self.counters = {c: 0 for c in COUNTERS}  # value after the last recovery
        self.stalls = 0
        self.stalled_rounds = 0
        self.server = None

    def violation(self, msg):
        """Raises Violation(msg), or with keep_going records and prints it
        (the model then takes what the server shows, so one loss is
        reported once)."""
        if not self.keep_going:
            raise Violation(msg)
        self.violations.append((self.rnd, msg))
        self.log("VIOLATION in round %d: %s" % (self.rnd, msg))

    # ---- the server ----

    def start(self):
        """Starts the server on the campaign's directory and waits until
        every shard has loaded. Returns the Server."""
        self.mport = free_port()
        s = Server(dir=self.dir, smp=2, args=["--memory", MEMORY, "--commitlog-sync", "batch",
                                             "--metrics-port", str(self.mport)])
        self.server = s
        s.start()
        r = s.client()
        deadline = time.monotonic() + 60
        while True:
            info = r.info("all")
            if all(info["shard%d" % i]["loading"] == 0 for i in range(2)):
                break
            if time.monotonic() > deadline:
                raise Violation("shards still loading after 60 s")
            time.sleep(0.02)
        r.close()
        return s

    def kill(self):
        """SIGKILLs the server by its PID and forgets it."""
        s = self.server
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait()
        s.proc = None
        s.close()                            # the directory is ours: close() keeps it
        self.server = None

    def kill_in_recovery(self, rng):
        s = Server(dir=self.dir, smp=2, args=["--memory", MEMORY, "--commitlog-sync", "batch"])
        self.server = s
        s.start(wait=False)
        time.sleep(rng.uniform(0, 0.05))     # the random kill moment
        self.kill()

    # ---- the load ----

    def batch(self, w, rnd, rng, st):
        """The next batch of writer w. A heavy writer (the first HEAVY) first
        deletes all but 16 of its older keys, then sets 12 large values and
        INCRs a counter a batch; the others mix small SETs, INCRs on the
        shared counters and DELs, 32 commands a batch."""
        pool, cmds = self.pools[w], []

        def set_new(prefix):
            k = b"%s%d:w%d:%d" % (prefix, rnd, w, st["i"])
            st["i"] += 1
            cmds.append(("SET", k, value_of(k)))
            st["touched"].append(k)
            self.keys[k] = EITHER

        def delete():
            k = pool.pop(rng.randrange(len(pool)))
            cmds.append(("DEL", k))
            st["deleted"].append(k)
            self.keys[k] = EITHER

        def incr():
            c = rng.choice(COUNTERS)
            cmds.append(("INCR", c))
            st["incr_sent"][c] += 1

        if w < HEAVY:
            # DELs are reads as well (their reply counts): done in a batch
            # at the round's start, they leave the rest of it to the SETs.
            if not st["i"] and len(pool) > 16:
                rng.shuffle(pool)
                while len(pool) > 16:
                    delete()
                return cmds
            for _ in range(12):
                set_new(b"h")
            incr()
            return cmds
        for _ in range(BATCH):
            x = rng.random()
            if x < 0.2 and pool:
                delete()
            elif x < 0.45:
                incr()
            else:
                set_new(b"r")
        return cmds

    def writer(self, w, rnd, port, st):
        """One connection's load until the server dies: two batches in
        flight. st is this writer's own record of what was sent and
        acknowledged (read by the caller after join)."""
        rng = random.Random("%d:%d:%d" % (self.seed, rnd, w))
        inflight = []
        try:
            p = Pipe(port)
            while True:
                while len(inflight) < 2:
                    cmds = self.batch(w, rnd, rng, st)
                    inflight.append(cmds)
                    st["unacked"] += len(cmds)
                    p.send(cmds)
                for cmd in inflight.pop(0):
                    got = p.reply()
                    st["unacked"] -= 1
                    self.acknowledged(w, cmd, got, st)
        except OSError:
            return                           # the kill: the rest stays unacknowledged
        except Exception as e:  # noqa: BLE001 -- reported by the round
            st["errors"].append(e)

    def acknowledged(self, w, cmd, got, st):
        op, k = cmd[0], cmd[1]
        if op == "SET":
            if got != b"OK":
                self.keys[k] = EITHER
                return self.violation("SET %r answered %r" % (k, got))
            self.keys[k] = PRESENT
            self.pools[w].append(k)
            st["set_acked"] += 1
        elif op == "DEL":
            self.keys[k] = ABSENT
            if got != 1:
                self.violation("DEL of %r, acknowledged earlier, answered %r" % (k, got))
            st["del_acked"] += 1
        else:
            if not isinstance(got, int):
                return self.violation("INCR %s answered %r" % (k, got))
            st["incr_replies"][k].append(got)

    def run_load(self, rnd, rng):
        """Runs the writers, SIGKILLs the server once writes have stalled
        and a random delay more has passed, and returns what was sent and
        acknowledged."""
        port, stalls0 = self.server.port, metric(self.mport, "scree_write_stalls_total")
        sts = [{"i": 0, "touched": [], "deleted": [], "unacked": 0, "set_acked": 0,
                "del_acked": 0, "errors": [], "incr_sent": {c: 0 for c in COUNTERS},
                "incr_replies": {c: [] for c in COUNTERS}} for _ in range(self.n_conns)]
        ths = [threading.Thread(target=self.writer, args=(w, rnd, port, sts[w]))
               for w in range(self.n_conns)]
        for t in ths:
            t.start()
        t0 = time.monotonic()
        stalls = stalls0
        while stalls == stalls0 and time.monotonic() < t0 + 10 and all(t.is_alive() for t in ths):
            time.sleep(0.01)
            stalls = metric(self.mport, "scree_write_stalls_total")
        delay = rng.uniform(0, 1.0)
        time.sleep(delay)                    # the random kill moment
        try:
            stalls = metric(self.mport, "scree_write_stalls_total")
        except OSError:
            pass
        self.kill()
        for t in ths:
            t.join(timeout=60)
        st = {"delay": time.monotonic() - t0, "stalls": stalls - stalls0}
        for k in ("touched", "deleted", "unacked", "set_acked", "del_acked", "errors"):
            st[k] = sum((x[k] for x in sts), [] if isinstance(sts[0][k], list) else 0)
        for k in ("incr_sent", "incr_replies"):
            st[k] = {c: sum((x[k][c] for x in sts), [] if k == "incr_replies" else 0)
                     for c in COUNTERS}
        if st["errors"]:
            raise st["errors"][0]
        self.stalls += st["stalls"]
        self.stalled_rounds += st["stalls"] > 0
        return st

    # ---- the checks ----

    def check_keys(self, r, keys):
        """Reads keys back and checks each against the model; resolves the
        EITHER ones to what is there. Returns the number checked."""
        keys = list(keys)
        for a in range(0, len(keys), 500):
            chunk = keys[a:a + 500]
            for k, v in zip(chunk, r.mget(chunk)):
                want = self.keys[k]
                if v is not None and v != value_of(k):
                    self.violation("%r holds a value never written (%d bytes)" % (k, len(v)))
                elif want == PRESENT and v is None:
                    self.violation("acknowledged SET of %r lost" % k)
                elif want == ABSENT and v is not None:
                    self.violation("acknowledged DEL of %r undone" % k)
                self.keys[k] = PRESENT if v is not None else ABSENT
        return len(keys)

    def check_counters(self, r, st):
        vals = r.mget(COUNTERS)
        for c, v in zip(COUNTERS, vals):
            v = int(v or 0)
            start, sent, reps = self.counters[c], st["incr_sent"][c], st["incr_replies"][c]
            if len(set(reps)) != len(reps):
                self.violation("%s: INCR replies repeated while the load ran: %d of %d" %
                               (c, len(reps) - len(set(reps)), len(reps)))
            if reps and not (start < min(reps) and max(reps) <= start + sent):
                self.violation("%s: INCR replies %d..%d outside %d..%d" %
                               (c, min(reps), max(reps), start + 1, start + sent))
            top = max(reps) if reps else start
            unacked = sent - len(reps)
            if v < top:
                self.violation("%s = %d after the restart: acknowledged INCR reply %d lost" %
                               (c, v, top))
            if v > start + sent or v > top + unacked:
                self.violation("%s = %d: more than %d at the start + %d INCRs sent "
                               "(highest reply %d, %d unacknowledged)" %
                               (c, v, start, sent, top, unacked))
            self.counters[c] = v

    # ---- the campaign ----

    def round(self, rnd, rng):
        """Loads the running server, kills it, restarts it and checks."""
        st = self.run_load(rnd, rng)
        if rng.random() < 0.2:
            self.kill_in_recovery(rng)
        r = self.start().client()
        either = {k for k in st["touched"] + st["deleted"] if self.keys[k] == EITHER}
        self.check_counters(r, st)
        older = rng.sample(list(self.keys), min(len(self.keys), 1000))
        n = self.check_keys(r, set(st["touched"]) | set(st["deleted"]) | set(older))
        r.close()
        for pool in self.pools:              # only what is there may be deleted later
            pool[:] = [k for k in pool if self.keys[k] == PRESENT]
        for k in either:                     # unacknowledged, and found there
            if self.keys[k] == PRESENT:
                self.pools[int(k.split(b":")[1][1:])].append(k)
        self.log("round %d: killed after %.2f s; acknowledged %d SETs, %d DELs, %d of %d INCRs; "
                 "%d unacknowledged at the kill; stalls %d; %d keys checked" %
                 (rnd, st["delay"], st["set_acked"], st["del_acked"],
                  sum(map(len, st["incr_replies"].values())), sum(st["incr_sent"].values()),
                  st["unacked"], st["stalls"], n))

    def run(self):
        """Every round on one server life after another (no clean stop in
        between), then a clean stop, a restart and a last check."""
        rng = random.Random(self.seed)
        try:
            self.start()
            for rnd in range(self.rounds):
                self.rnd = rnd
                self.round(rnd, rng)
            rc = self.server.stop()
            if rc != 0:
                raise Violation("SIGTERM after the last round: exit status %r" % rc)
            self.server.close()
            r = self.start().client()
            n = self.check_keys(r, rng.sample(list(self.keys), min(len(self.keys), 20_000)))
            r.close()
            self.server.close()
            self.server = None
            self.log("final check after a clean stop: %d of %d keys; %d writes stalled, "
                     "in %d of %d rounds" %
                     (n, len(self.keys), self.stalls, self.stalled_rounds, self.rounds))
            if self.stalls == 0:
                raise Violation("no write stalled in the whole run: it did not test what it is for")
            if self.violations:
                raise Violation("%d violations in %d rounds" %
                                (len(self.violations), len({v[0] for v in self.violations})))
        except BaseException:
            if self.server is not None:
                self.log("server output (last 2000 chars):\n" + self.server.output()[-2000:])
                self.server.close()
            self.log("data directory kept: " + self.dir)
            raise
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("SCREE_CRASH_ROUNDS", "100")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SCREE_CRASH_SEED", "1")))
    ap.add_argument("--connections", type=int, default=6)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--keep-going", action="store_true",
                    help="report every violation and finish the rounds (exit 1 at the end)")
    a = ap.parse_args()
    t0 = time.monotonic()
    try:
        Campaign(a.rounds, a.seed, a.connections, a.dir,
                 log=lambda m: print(m, flush=True), keep_going=a.keep_going).run()
    except Violation as e:
        print("VIOLATION: %s" % e, flush=True)
        return 1
    print("ok: %d rounds in %.0f s" % (a.rounds, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
