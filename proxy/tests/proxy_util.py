# SPDX-License-Identifier: Apache-2.0
"""Helpers for scree-proxy's tests: a small origin server, the proxy as a
process, and clients (curl and a raw-socket one).

Every server binds 127.0.0.1. The origin runs in the test's process (a
ThreadingHTTPServer whose handler counts requests and serves what the test
configured); the proxy is a process on a free port it picks itself
(--listen 127.0.0.1:0, the port read from its start line), in a temporary
--dir, stopped by its PID. Tests wait for events with wait_for() and a
generous deadline, never with fixed sleeps.
"""
import email.utils
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BIN = os.environ.get("SCREE_PROXY_BIN", "build/proxy/scree-proxy")
WAIT_S = 60


def wait_for(cond, what, timeout=WAIT_S):
    """Polls cond() until it returns something true (returned) or timeout
    seconds pass (AssertionError naming what)."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        assert time.monotonic() < deadline, "waited %d s for %s" % (timeout, what)
        time.sleep(0.02)


def http_date(t):
    return email.utils.formatdate(t, usegmt=True)


class Route:
    """What the origin answers for one path."""

    def __init__(self, status=200, headers=None, body=b"", chunked=False, close=False,
                 gate=None):
        self.status = status
        self.headers = list((headers or {}).items()) if isinstance(headers, dict) else \
            list(headers or [])
        self.body = body if isinstance(body, bytes) else body.encode()
        self.chunked = chunked      # Transfer-Encoding: chunked
        self.close = close          # no length: the body ends at the close
        self.gate = gate            # a threading.Event the handler waits for


class Origin:
    """An HTTP/1.1 origin on 127.0.0.1: routes[path] answers; anything else
    gets 200 "body of PATH" with no caching headers. count(path) is how many
    requests reached it; requests holds (method, path, headers, body)."""

    def __init__(self):
        self.routes = {}
        self.requests = []
        self.peers = set()          # the client addresses requests came from
        self.entered = threading.Semaphore(0)     # one release per request
        self.lock = threading.Lock()
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with origin.lock:
                    origin.requests.append((self.command, self.path, dict(self.headers), body))
                    origin.peers.add(self.client_address)
                origin.entered.release()
                route = origin.routes.get(self.path) or Route(body=b"body of " +
                                                              self.path.encode())
                if route.gate is not None:
                    route.gate.wait(WAIT_S)
                self.send_response(route.status)
                for k, v in route.headers:
                    self.send_header(k, v)
                if route.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                elif route.close:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if route.chunked:
                    step = max(1, len(route.body) // 3)
                    for i in range(0, len(route.body), step):
                        part = route.body[i:i + step]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.wfile.write(route.body)

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = handle_one

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A proxy that drops a connection mid-response is expected here.
        self.server.handle_error = lambda request, client_address: None
        self.port = self.server.server_address[1]
        self.addr = "127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def count(self, path=None, method=None):
        with self.lock:
            return sum(1 for m, p, _, _ in self.requests
                       if (path is None or p == path) and (method is None or m == method))

    def last(self, path):
        with self.lock:
            for r in reversed(self.requests):
                if r[1] == path:
                    return r
        return None

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def dead_port():
    """A 127.0.0.1 port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Proxy:
    """One scree-proxy process. start() waits for its start line; stop()
    sends SIGTERM (or sig) to its PID and waits; close() also removes the
    --dir it made."""

    made = []

    def __init__(self, origins, dir=None, args=(), threads=2, shards=1):
        Proxy.made.append(self)
        self.origins = [o if isinstance(o, str) else o.addr for o in origins]
        self.own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="scree-proxy-")
        self.args = list(args)
        self.threads = threads
        self.shards = shards        # None: as the directory was made
        self.proc = None
        self.preexec = None         # run in the child before exec (limits)
        self.port = self.metrics_port = None
        self.log = None

    def command(self):
        cmd = [BIN, "--listen", "127.0.0.1:0", "--metrics-port", "127.0.0.1:0", "--dir",
               os.path.join(self.dir, "cache"), "--threads", str(self.threads),
               "--memory", "64m"]
        if self.shards is not None and "--shards" not in self.args:
            cmd += ["--shards", str(self.shards)]
        for o in self.origins:
            cmd += ["--origin", o]
        return cmd + self.args

    def start(self):
        self.log = tempfile.TemporaryFile(mode="w+")
        # The child writes through a file description of its own, appending:
        # sharing this process's offset, a write landing after output()'s
        # seek(0) overwrote the file's start and tore the start line for good
        # (a start that "never" came, seen in CI).
        with open("/proc/self/fd/%d" % self.log.fileno(), "a") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         text=True, preexec_fn=self.preexec)
        try:
            line = wait_for(self._started, "scree-proxy to start")
        except AssertionError as e:
            raise AssertionError("%s; its output:\n%s\nits threads:\n%s"
                                 % (e, self.output(), self.backtraces())) from None
        self.port = int(re.search(r"listening on [^ ]+:(\d+) ", line).group(1))
        self.metrics_port = int(re.search(r"metrics on [^ ]+:(\d+),", line).group(1))
        self.url = "http://127.0.0.1:%d" % self.port
        return self

    def _started(self):
        if self.proc.poll() is not None:
            raise RuntimeError("scree-proxy exited %d: %s" % (self.proc.returncode,
                                                              self.output()))
        # Only a whole line: the proxy may be half way through writing it.
        for line in self.output().splitlines(keepends=True):
            if "listening on" in line and line.endswith("\n"):
                return line
        return None

    def backtraces(self):
        """Every thread's stack of the running proxy, from gdb when it is
        installed (for a start that never ends: which wait it is in)."""
        if not shutil.which("gdb"):
            return "(no gdb)"
        try:
            return subprocess.run(["gdb", "-p", str(self.proc.pid), "-batch", "-ex",
                                   "thread apply all bt"], capture_output=True, text=True,
                                  timeout=120).stdout
        except subprocess.TimeoutExpired:
            return "(gdb timed out)"

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self, sig=signal.SIGTERM):
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("scree-proxy did not stop: " + self.output()[-2000:])
        rc = self.proc.returncode
        self.proc = None
        out = self.output()
        for bad in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert bad not in out, out[-4000:]
        return rc

    def kill9(self):
        return self.stop(signal.SIGKILL)

    def close(self):
        try:
            return self.stop()
        finally:
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)
            if self in Proxy.made:
                Proxy.made.remove(self)

    def metrics(self):
        """The metrics endpoint's samples: {name or name{labels}: value}."""
        _, _, body = request(self.metrics_port, "GET", "/metrics")
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out


# ---- clients ----

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers          # lower-case name -> value (last one wins)
        self.body = body

    def __getitem__(self, name):
        return self.headers.get(name.lower())

    def __iter__(self):
        return iter((self.status, self.headers, self.body))


class Client:
    """A raw HTTP/1.1 client on one connection."""

    def __init__(self, port, timeout=WAIT_S):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data if isinstance(data, bytes) else data.encode())

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exactly(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_response(self, head=False):
        """Reads one response (head: to a HEAD request, no body)."""
        status = int(self._line().split(b" ", 2)[1])
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            k, v = line.split(b":", 1)
            headers[k.decode().strip().lower()] = v.decode().strip()
        if head or status in (204, 304) or 100 <= status < 200:
            return Response(status, headers, b"")
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    self._line()
                    break
                body += self._exactly(size)
                self._line()
            return Response(status, headers, body)
        if "content-length" in headers:
            return Response(status, headers, self._exactly(int(headers["content-length"])))
        while True:
            try:
                self._fill()
            except EOFError:
                break
        body, self.buf = self.buf, b""
        return Response(status, headers, body)

    def request(self, method, path, headers=None, body=b"", host="test.local"):
        self.send(build_request(method, path, headers, body, host))
        return self.read_response(head=method == "HEAD")

    def is_closed(self):
        """Whether the server closed the connection (waits for it)."""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False

    def close(self):
        self.sock.close()


def build_request(method, path, headers=None, body=b"", host="test.local"):
    body = body if isinstance(body, bytes) else body.encode()
    lines = ["%s %s HTTP/1.1" % (method, path)]
    if host is not None:
        lines.append("Host: " + host)
    for k, v in (headers or {}).items():
        lines.append("%s: %s" % (k, v))
    if body:
        lines.append("Content-Length: %d" % len(body))
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def request(port, method, path, headers=None, body=b"", host="test.local"):
    """One request on a new connection: a Response."""
    c = Client(port)
    try:
        return c.request(method, path, headers, body, host)
    finally:
        c.close()


def curl(url, *args):
    """curl -s: (status, headers dict, body bytes) of the last response."""
    with tempfile.NamedTemporaryFile() as hdr:
        out = subprocess.run(["curl", "-s", "-S", "--max-time", str(WAIT_S), "-D", hdr.name,
                              *args, url], capture_output=True, check=True).stdout
        blocks = open(hdr.name, "rb").read().decode().strip().split("\r\n\r\n")
    lines = blocks[-1].split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split()[1]), headers, out
