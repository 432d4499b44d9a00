# SPDX-License-Identifier: Apache-2.0
"""The log file and SIGHUP (issue 24): SIGHUP never stops the server; with
--logfile it reopens the file, so a rotator that renamed it sees new lines
go to a new file under the configured name."""
import os
import signal
import subprocess

from server_util import BIN, Server, free_port, wait_for


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_sighup_reopens_a_renamed_log_file(tmp_path):
    log = str(tmp_path / "scree.log")
    s = Server(args=["--logfile", log]).start(wait=False)
    wait_for(lambda: "ready to accept connections" in read(log), "the ready line in the log file")
    assert "ready to accept connections" not in s.output(), "the log went to the file only"
    r = s.client()
    assert r.set("k", "v")

    os.rename(log, log + ".1")                      # what logrotate does
    s.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "reopened the log file " + log in read(log), "the reopen line in a new file")
    assert "reopening the log file" in read(log + ".1").splitlines()[-1]
    assert "ready to accept connections" not in read(log)
    assert r.get("k") == b"v", "still serving"
    assert r.set("k2", "v2")

    s.proc.send_signal(signal.SIGHUP)               # not renamed: the same file goes on
    wait_for(lambda: read(log).count("reopened the log file") == 2, "the second reopen")
    assert s.close() == 0
    assert "stopped cleanly" in read(log)
    assert "stopped cleanly" not in read(log + ".1")


def test_sighup_without_a_log_file_keeps_serving(server):
    r = server.client()
    assert r.set("k", "v")
    server.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "received SIGHUP" in server.output() or server.proc.poll() is not None,
             "the SIGHUP line on stderr")
    assert server.proc.poll() is None, "SIGHUP stopped the server: " + server.output()[-2000:]
    assert r.get("k") == b"v"
    assert server.close() == 0


def test_a_log_file_that_cannot_be_opened_refuses_the_start(tmp_path):
    d = str(tmp_path)
    bad = os.path.join(d, "missing-dir", "scree.log")
    run = subprocess.run([BIN, "--logfile", bad, "--dir", os.path.join(d, "data"),
                          "--port", str(free_port())],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "cannot open the log file " + bad in run.stderr
    assert not os.path.exists(os.path.join(d, "data")), "refused before touching --dir"


def test_logfile_shows_in_config_get(tmp_path):
    log = str(tmp_path / "s.log")
    s = Server(args=["--logfile", log]).start(wait=False)
    wait_for(lambda: "ready to accept connections" in read(log), "the ready line")
    assert s.client().config_get("logfile") == {"logfile": log}
    assert s.close() == 0
