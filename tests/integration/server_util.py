# SPDX-License-Identifier: Apache-2.0
"""Starting and stopping the real build/scree for the integration tests.

Every server binds 127.0.0.1 on a free port, lives in a temporary --dir,
and is stopped by its own PID (SIGTERM, then SIGKILL after a timeout).
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

BIN = os.environ.get("SCREE_BIN", "build/scree")

# How long a test waits for an event (the server ready, a socket closed by
# the server, a stat reaching a value) before failing: generous, since a
# cold VM under load is slow. Tests wait for the event itself with
# wait_for() or a blocking call with this timeout, never for a fixed sleep.
WAIT_S = 60


def wait_for(cond, what, timeout=WAIT_S):
    """Polls cond() until it returns true (returned) or timeout seconds pass
    (AssertionError naming what)."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() < deadline, "waited %d s for %s" % (timeout, what)
        time.sleep(0.02)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_output(log):
    """log (a file this process reads back with seek and read) opened again
    for a child's stdout and stderr: in append mode, and a file description
    of its own -- sharing the reader's offset, a child's write landing after
    the reader's seek(0) would overwrite the file's start, and a start line
    written in pieces would be torn for good."""
    return open("/proc/self/fd/%d" % log.fileno(), "a")


class Server:
    """One scree process. close() stops it and removes the --dir it made;
    conftest.py closes every Server a test made, also when the test fails."""

    made = []       # every Server not yet closed, oldest first

    def __init__(self, dir=None, smp=2, args=(), port=None):
        Server.made.append(self)
        self.own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="scree-it-")
        self.smp = smp
        self.args = list(args)
        self.port = port or free_port()
        # A port picked here may be taken by a test running alongside before
        # the server binds it: the first start then tries another.
        self.port_picked = port is None
        self.proc = None
        self.log = None

    def start(self, wait=True):
        self.log = tempfile.TemporaryFile(mode="w+")
        # Tests start many servers: none faults its whole memtable budget in
        # (--prefault, 512 MiB by default) unless the test asks for it.
        prefault = [] if any(a.startswith("--prefault") for a in self.args) else ["--prefault", "no"]
        # Tablets stay where a test puts them unless it turns the balancer on.
        if not any(a.startswith("--tablet-balancer") for a in self.args):
            prefault += ["--tablet-balancer", "no"]
        with child_output(self.log) as out:
            self.proc = subprocess.Popen(
                [BIN, "--port", str(self.port), "--dir", self.dir, "--smp", str(self.smp)] +
                prefault + self.args,
                stdout=out, stderr=subprocess.STDOUT, text=True)
        if wait:
            try:
                self.wait_ready()
            except RuntimeError as e:
                if not (self.port_picked and "Address already in use" in str(e)):
                    raise
                self.port_picked = False
                self.port = free_port()
                self.proc.wait(timeout=WAIT_S)      # it has exited: wait_ready saw it
                return self.start(wait)
        self.port_picked = False
        return self

    def wait_ready(self, timeout=WAIT_S):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("scree exited: " + self.output())
            if "ready to accept connections" in self.output():
                return
            time.sleep(0.02)
        raise RuntimeError("scree not ready: " + self.output())

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, sig=signal.SIGTERM, timeout=WAIT_S):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        self.proc = None
        out = self.output()
        # A sanitizer build reports here: fail the test that ran into it.
        for bad in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert bad not in out, out[-4000:]
        return rc

    def close(self):
        """Stops the server (as stop()) and removes its directory unless the
        caller passed it in; returns stop()'s exit status."""
        try:
            return self.stop()
        finally:
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)
            if self in Server.made:
                Server.made.remove(self)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def client(self, **kw):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=WAIT_S, **kw)

    def raw(self):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=WAIT_S)
        return RawClient(s)


class RawClient:
    """A plain socket speaking RESP by hand, for what redis-py hides."""

    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def cmd(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.send(out)

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self):
        """One reply, decoded loosely: (type byte, value)."""
        line = self.line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b"-", b":", b",", b"(", b"#", b"_"):
            return (t, rest)
        if t in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return (t, None)
            data = self.exact(n + 2)[:-2]
            return (t, data)
        if t in (b"*", b"%", b"~", b">"):
            n = int(rest)
            if n < 0:
                return (t, None)
            count = n * 2 if t == b"%" else n
            return (t, [self.reply() for _ in range(count)])
        raise ValueError("bad reply line %r" % line)

    def is_closed(self, timeout=WAIT_S):
        """True once the server closed the connection (waited for up to
        timeout s); False if it is still open then. To check that a
        connection stays open, pass the short time to watch it."""
        self.s.settimeout(timeout)
        try:
            while True:
                if not self.s.recv(65536):
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.s.close()


def resp(*args):
    """One command as a RESP array of bulk strings (str, bytes or int args)."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RespError(Exception):
    """An error reply, returned (not raised) by Pipe.reply() so that a
    pipeline's other replies can still be read and checked."""

    def __eq__(self, other):
        return isinstance(other, RespError) and self.args == other.args

    def __hash__(self):
        return hash(self.args)


class Pipe:
    """A plain socket for pipelining many commands and reading their RESP2
    replies in order, fast enough for tens of thousands of commands from
    Python (RawClient keeps every reply's type and suits protocol tests;
    this one decodes: :n -> int, +s -> bytes, $ -> bytes or None, * ->
    list, -e -> RespError)."""

    def __init__(self, port, timeout=30):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def send(self, cmds):
        """Sends every command of cmds (tuples of arguments) in one write."""
        self.s.sendall(b"".join(resp(*c) for c in cmds))

    def reply(self):
        line = self.f.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("connection closed mid-reply: %r" % line)
        t, rest = line[:1], line[1:-2]
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("connection closed mid-reply")
            return data[:-2]
        if t == b"+":
            return rest
        if t == b"-":
            return RespError(rest.decode())
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError("bad reply line %r" % line)

    def replies(self, n):
        return [self.reply() for _ in range(n)]

    def call(self, *args):
        self.send([args])
        return self.reply()

    def close(self):
        self.f.close()
        self.s.close()
