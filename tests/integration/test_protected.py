# SPDX-License-Identifier: Apache-2.0
"""Protected mode (issue 24): while no password is set, a client that does
not connect from a loopback address gets Redis's -DENIED text and is
closed, unless protected-mode is no (a flag, or CONFIG SET at run time).

The server has to be reached from an address that is not a loopback one,
and a test binds only 127.0.0.1 on the machine itself. So the tests named
test_inside_* run in a private network namespace (`unshare -n`, or `-rn`
with an unprivileged user namespace), started by the one outer test: there
lo also carries 10.200.0.1, the server binds 0.0.0.0 (nothing outside the
namespace can reach it), and a client connecting to 10.200.0.1 comes from
10.200.0.1. Without a namespace the outer test is skipped, saying why.
"""
import os
import shutil
import socket
import subprocess
import sys

import pytest

from server_util import RawClient, Server, WAIT_S

INSIDE = os.environ.get("SCREE_TEST_NETNS") == "1"
OTHER = "10.200.0.1"
DENIED = (b"DENIED Redis is running in protected mode because protected mode is enabled and "
          b"no password is set for the default user.")

inside_only = pytest.mark.skipif(not INSIDE, reason="run by the outer test in a network namespace")


def unshare_cmd():
    return ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]


@pytest.mark.skipif(INSIDE, reason="the outer test itself")
def test_protected_mode_in_a_private_network_namespace():
    if not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("needs unshare(1) and ip(8) to make a private network namespace")
    probe = subprocess.run(unshare_cmd() + ["ip", "link", "set", "lo", "up"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("cannot create a network namespace here: " + probe.stderr.strip())
    env = dict(os.environ, SCREE_TEST_NETNS="1")
    run = subprocess.run(unshare_cmd() + [sys.executable, "-m", "pytest", "-q", "-p",
                                          "no:cacheprovider", __file__, "-k", "inside"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "4 passed" in run.stdout, run.stdout[-2000:]


@pytest.fixture(scope="module")
def other_address():
    if INSIDE:
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", "addr", "add", OTHER + "/32", "dev", "lo"], check=True)
    return OTHER


def remote(port):
    """A raw client connecting from OTHER (not a loopback address)."""
    s = socket.create_connection((OTHER, port), timeout=WAIT_S)
    assert s.getsockname()[0] == OTHER
    return RawClient(s)


def denied(port):
    """True when a client from OTHER gets -DENIED and is closed."""
    c = remote(port)
    c.cmd("PING")
    t, text = c.reply()
    closed = c.is_closed()
    c.close()
    return t == b"-" and text.startswith(DENIED) and closed


def served(port):
    c = remote(port)
    c.cmd("PING")
    got = c.reply()
    c.close()
    return got == (b"+", b"PONG")


@inside_only
def test_inside_a_client_from_another_address_is_denied_and_loopback_is_served(other_address):
    s = Server(args=["--bind", "0.0.0.0"]).start()
    for _ in range(4):          # whichever shard accepts it
        assert denied(s.port)
    r = s.client()
    assert r.ping()
    assert r.set("k", "v") and r.get("k") == b"v"
    assert r.info("stats")["rejected_connections"] >= 4
    assert "protected mode is on" in s.output()
    assert s.close() == 0


@inside_only
def test_inside_the_whole_denied_text(other_address):
    s = Server(args=["--bind", "0.0.0.0"]).start()
    c = remote(s.port)
    text = c.line()
    assert text.startswith(b"-" + DENIED)
    assert b"'CONFIG SET protected-mode no'" in text
    assert b"'--protected-mode no'" in text
    assert text.endswith(b"in order for the server to start accepting connections from the "
                         b"outside.")
    assert c.is_closed()
    c.close()


@inside_only
def test_inside_protected_mode_no_serves_every_address(other_address):
    s = Server(args=["--bind", "0.0.0.0", "--protected-mode", "no"]).start()
    for _ in range(4):
        assert served(s.port)
    assert "protected-mode no: any host" in s.output()
    assert s.client().config_get("protected-mode") == {"protected-mode": "no"}


@inside_only
def test_inside_protected_mode_and_a_password_change_at_run_time(other_address):
    s = Server(args=["--bind", "0.0.0.0"]).start()
    r = s.client()
    assert r.config_set("protected-mode", "no")
    for _ in range(4):          # every shard has the change
        assert served(s.port)
    assert r.config_set("protected-mode", "yes")
    for _ in range(4):
        assert denied(s.port)
    assert r.config_set("requirepass", "pw")       # a password lifts protected mode
    for _ in range(4):
        c = remote(s.port)
        c.cmd("GET", "k")
        assert c.reply() == (b"-", b"NOAUTH Authentication required.")
        c.cmd("AUTH", "pw")
        assert c.reply() == (b"+", b"OK")
        c.close()
    c = s.raw()                 # loopback clients need the password too now
    c.cmd("GET", "k")
    assert c.reply() == (b"-", b"NOAUTH Authentication required.")
    c.close()
