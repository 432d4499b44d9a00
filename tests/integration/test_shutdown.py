# SPDX-License-Identifier: Apache-2.0
"""SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT] (issue 24): the server stops
as on SIGTERM -- exit status 0, every acknowledged write on disk -- and the
client gets no reply: its connection closes once the server is gone.
Redis's argument checks and errors, refused before AUTH and inside MULTI.
Every server is stopped by its own PID; nothing asserts a timing."""
import socket
import subprocess

import pytest
import redis

from server_util import WAIT_S, Server, wait_for

N_KEYS = 2000       # over both shards


def err(fn, *args):
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def exit_status(s):
    """Waits for the server's own exit (it was told to stop by SHUTDOWN)."""
    try:
        return s.proc.wait(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        raise AssertionError("SHUTDOWN did not stop the server: " + s.output()[-2000:]) from None


def test_shutdown_keeps_every_acknowledged_write_and_exits_0():
    # Periodic sync with a period longer than the test: the writes are
    # acknowledged before they are synced, so only a clean stop (the
    # engines closed, the log synced) keeps them.
    args = ["--commitlog-sync", "periodic", "--commitlog-sync-period-ms", "60000"]
    s = Server(args=args).start()
    r = s.client()
    r.mset({"k%d" % i: "v%d" % i for i in range(N_KEYS)})
    for i in range(0, N_KEYS, 7):
        r.incr("n%d" % i)
    assert r.shutdown() is None, "SHUTDOWN replied"      # redis-py: None once the socket closed
    assert exit_status(s) == 0
    out = s.output()
    assert "User requested shutdown: SHUTDOWN from client id=" in out, out
    assert "SHUTDOWN received, shutting down" in out, out
    assert "stopped cleanly" in out, out
    s.proc = None
    s.start()
    r = s.client()
    assert r.dbsize() == N_KEYS + len(range(0, N_KEYS, 7))
    got = r.mget(["k%d" % i for i in range(N_KEYS)])
    assert got == [b"v%d" % i for i in range(N_KEYS)]
    assert r.get("n7") == b"1"
    s.close()


def test_the_client_sees_its_socket_close_only_once_the_server_is_gone():
    # Like redis-cli shutdown && start again: the next server on the same
    # --dir (and port) starts at once, with no wait for the old process --
    # were the socket closed before the data directory's lock was given
    # up, the start would be refused ("in use by process ...").
    s = Server().start()
    c = s.raw()
    c.cmd("SET", "a", "1")
    assert c.reply() == (b"+", b"OK")
    c.cmd("SHUTDOWN", "NOW")
    assert c.is_closed(), "the connection stayed open"
    c.close()
    old = s.proc
    s2 = Server(dir=s.dir, port=s.port).start()
    assert s2.client().get("a") == b"1"
    assert old.wait(timeout=WAIT_S) == 0
    s2.close()
    s.close()


def test_commands_pipelined_after_shutdown_do_not_run():
    s = Server().start()
    c = s.raw()
    c.send(b"*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n*1\r\n$8\r\nSHUTDOWN\r\n"
           b"*3\r\n$3\r\nSET\r\n$1\r\nb\r\n$1\r\n2\r\n")
    assert c.reply() == (b"+", b"OK")
    assert c.is_closed(), "SHUTDOWN replied or the connection stayed open"
    c.close()
    assert exit_status(s) == 0
    s.proc = None
    s.start()
    r = s.client()
    assert r.get("a") == b"1" and r.exists("b") == 0
    s.close()


# net/conn.h: the server stops reading a client whose unsent replies pass this.
MAX_OUT_BYTES = 1 << 20


def unsent(r, c):
    """The server's unsent output to socket c (CLIENT LIST's obl) once it
    has stopped moving: the kernel's buffers toward a client that does
    not read are full."""
    port = c.getsockname()[1]

    def obl():
        for cl in r.client_list():
            if cl["addr"].endswith(":%d" % port):
                return int(cl["obl"])
        return None

    seen = []

    def settled():
        seen.append(obl())
        tail = seen[-25:]
        return len(tail) == 25 and tail[0] is not None and len(set(tail)) == 1

    wait_for(settled, "the output to a client that does not read to stop moving")
    return seen[-1]


def no_reader(port):
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.connect(("127.0.0.1", port))
    return c


def test_shutdown_from_a_client_that_does_not_read_its_replies_still_stops():
    # Found by review: the reply before SHUTDOWN fills the socket of a
    # client that never reads, so its send stays in flight; the stop
    # waited for it forever (SIGTERM too) until the client closed.
    # How much of the reply the kernel takes off the server depends on the
    # machine's TCP buffers (tcp_wmem), so it is measured first: the reply
    # is then sized to leave half the output limit unsent -- a send in
    # flight, yet under the limit, so the server still reads SHUTDOWN.
    s = Server(smp=1).start()
    r = s.client()
    r.set("big", b"x" * 8_000_000)
    with no_reader(s.port) as probe:
        probe.sendall(b"GET big\r\n")
        taken = 8_000_000 - unsent(r, probe)
    r.set("big", b"x" * (taken + MAX_OUT_BYTES // 2))
    c = no_reader(s.port)
    try:
        c.sendall(b"GET big\r\n")
        left = unsent(r, c)
        assert 0 < left < MAX_OUT_BYTES, "%d bytes unsent: no send in flight, or over the limit" % left
        c.sendall(b"SHUTDOWN\r\n")
        assert exit_status(s) == 0
    finally:
        c.close()


def test_shutdown_before_auth_is_refused():
    s = Server(args=["--requirepass", "s3cret"]).start()
    c = s.raw()
    c.cmd("SHUTDOWN")
    assert c.reply() == (b"-", b"NOAUTH Authentication required.")
    c.cmd("SHUTDOWN", "NOSAVE")
    assert c.reply() == (b"-", b"NOAUTH Authentication required.")
    r = s.client(password="s3cret")
    assert r.ping() and s.proc.poll() is None, "the server stopped"
    assert "User requested shutdown" not in s.output()
    c.cmd("AUTH", "s3cret")
    assert c.reply() == (b"+", b"OK")
    c.cmd("SHUTDOWN")
    assert c.is_closed()
    assert exit_status(s) == 0
    s.close()


def test_shutdown_options_as_redis():
    s = Server().start()
    r = s.client()
    r.set("k", "v")
    for args in (["FOO"], ["SAVE", "NOSAVE"], ["NOSAVE", "SAVE", "NOW"], ["ABORT", "NOW"],
                 ["FORCE", "ABORT"], ["NOSAVE", "ABORT"]):
        assert err(r.execute_command, "SHUTDOWN", *args) == "syntax error", args
    # No shutdown ever waits (no replicas), so none can be aborted.
    assert err(r.execute_command, "SHUTDOWN", "ABORT") == "No shutdown in progress."
    assert err(r.execute_command, "shutdown", "abort") == "No shutdown in progress."
    assert r.ping() and s.proc.poll() is None
    assert "User requested shutdown" not in s.output()
    # Every accepted combination stops the server; NOSAVE loses nothing
    # (there is no snapshot to skip: the log and the tables are the data).
    with pytest.raises(redis.ConnectionError):
        r.execute_command("SHUTDOWN", "nosave", "NOW", "force")
    assert exit_status(s) == 0
    assert "User requested shutdown: SHUTDOWN NOSAVE NOW FORCE" in s.output()
    s.proc = None
    s.start()
    assert s.client().get("k") == b"v"
    s.close()


def test_shutdown_inside_multi_is_refused_and_aborts_exec():
    # As Redis's suite ("MULTI with SHUTDOWN"): refused when queued, EXEC
    # then aborts, and the server goes on.
    s = Server().start()
    r = s.client()
    r.response_callbacks.clear()
    assert r.execute_command("MULTI") == b"OK"
    assert r.execute_command("SET", "foo", "bar") == b"QUEUED"
    assert err(r.execute_command, "SHUTDOWN") == "Command not allowed inside a transaction"
    with pytest.raises(redis.exceptions.ExecAbortError):
        r.execute_command("EXEC")
    assert r.execute_command("GET", "foo") is None
    assert r.execute_command("PING") == b"PONG" and s.proc.poll() is None
    s.close()


def test_sigterm_still_stops_cleanly():
    s = Server().start()
    s.client().set("k", "v")
    assert s.stop() == 0
    assert "received SIGTERM, shutting down" in s.output()
    assert "SHUTDOWN received" not in s.output()
    s.start()
    wait_for(lambda: s.client().get("k") == b"v", "the key after the restart")
    s.close()
