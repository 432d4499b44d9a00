# SPDX-License-Identifier: Apache-2.0
"""A damaged SSTable data block (issue 23): found when read, it fails only
the keys it holds, with an error naming the file and the block; the log
names them once; DBSIZE, SCAN and KEYS skip the block and go on; every
other key stays readable; scree-tool verify names the same block."""
import glob
import os
import re
import subprocess

import pytest
import redis

from server_util import BIN, Server, wait_for

N = 2000


def fill_and_flush(s):
    """Writes N keys, then restarts twice: the first restart flushes what
    the log replayed to SSTables, the second reads them cold."""
    c = s.client()
    for i in range(0, N, 100):
        c.mset({"key:%d" % j: "value-%d-%s" % (j, "x" * 40) for j in range(i, i + 100)})
    s.stop()
    s.start()
    c = s.client()

    def flushed():
        sh = c.info("scree")["shard0"]
        return sh["flushes"] > 0 and sh["imm_bytes"] == 0 and sh["memtable_bytes"] == 0

    wait_for(flushed, "the replayed writes flushed")
    s.stop()


def flip_byte(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x55]))


def test_a_damaged_block_fails_its_keys_and_the_rest_stays_readable():
    s = Server(smp=1)
    s.start()
    fill_and_flush(s)
    ssts = sorted(glob.glob(s.dir + "/shard-0/*.sst"))
    assert ssts
    bad = ssts[0]
    flip_byte(bad, 4096 + 200)     # data block 1
    s.start()
    c = s.client()

    failed = []
    for j in range(N):
        try:
            assert c.get("key:%d" % j) == ("value-%d-%s" % (j, "x" * 40)).encode()
        except redis.ResponseError as e:
            assert str(e) == ("engine: corrupt data in %s data block at offset 4096 "
                              "(4096 bytes: bad checksum, length or type)" % bad), str(e)
            failed.append(j)
    assert 0 < len(failed) < N
    live = N - len(failed)

    # Whole-keyspace reads skip the block and go on.
    assert c.dbsize() == live
    assert len(c.keys("*")) == live
    seen = set()
    cur = 0
    while True:
        cur, ks = c.scan(cur, count=100)
        seen.update(ks)
        if cur == 0:
            break
    assert len(seen) == live
    assert not seen & {("key:%d" % j).encode() for j in failed}

    # FLUSHALL does not pass it: an OK would claim every key is gone.
    with pytest.raises(redis.ResponseError, match=re.escape(bad) + " data block at offset 4096"):
        c.flushall()

    # Counted (INFO) and logged once, naming the file and the block.
    shard0 = c.info("all")["shard0"]
    assert shard0["corrupt_blocks"] == 1
    assert shard0["corrupt_reads"] >= len(failed)
    log = s.output()
    line = "SSTable %s is corrupt: data block 1 at offset 4096 (4096 bytes)" % bad
    assert log.count(line) == 1, log[-3000:]
    s.stop()

    tool = os.path.join(os.path.dirname(BIN), "scree-tool")
    v = subprocess.run([tool, "verify", s.dir + "/shard-0"], capture_output=True, text=True)
    assert v.returncode == 1
    assert "%s: CORRUPT at offset 4096: data block 1" % os.path.basename(bad) in v.stdout
