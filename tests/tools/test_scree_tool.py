# SPDX-License-Identifier: Apache-2.0
"""scree-tool as an operator runs it, over fixtures from make_fixtures.

Run by meson (suites unit and tools) with SCREE_TOOL and MAKE_FIXTURES set.
make_fixtures writes a valid SSTable, commit-log segment and MANIFEST and
prints what they hold as JSON; each test checks the tool's output and exit status on
them or on a damaged copy: 0 all good, 1 corruption, 2 usage or I/O error.
"""
import json
import os
import random
import shutil
import subprocess

import pytest

TOOL = os.environ.get("SCREE_TOOL", "build/scree-tool")
MAKE = os.environ.get("MAKE_FIXTURES", "build/tests/tools/make_fixtures")


def run(*args):
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert p.returncode >= 0, f"killed by signal {-p.returncode}: {p.stderr}"
    # Sanitizer builds: a report must not pass for exit status 1 ("corrupt").
    assert "Sanitizer" not in p.stderr and "runtime error:" not in p.stderr, p.stderr
    return p


def make(d, forge=None):
    p = subprocess.run([MAKE, str(d)] + ([forge] if forge else []), capture_output=True,
                       text=True, timeout=60, check=True)
    return json.loads(p.stdout)


@pytest.fixture
def fx(tmp_path):
    """The fixture facts, with paths to the three files."""
    facts = make(tmp_path)
    facts["dir"] = tmp_path
    facts["sst"]["path"] = tmp_path / facts["sst"]["name"]
    facts["wal"]["path"] = tmp_path / facts["wal"]["name"]
    facts["manifest"]["path"] = tmp_path / "MANIFEST"
    return facts


def escaped(hexkey):
    """A key as the tool prints it: printable ASCII but '"' and '\\' as is."""
    out = ""
    for b in bytes.fromhex(hexkey):
        out += chr(b) if 0x20 <= b < 0x7f and chr(b) not in '"\\' else f"\\x{b:02x}"
    return f'"{out}"'


def flip(path, offset, mask=0x10):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([b ^ mask]))


# ---- sst ----

def test_sst_prints_footer_properties_and_index(fx):
    s = fx["sst"]
    p = run("sst", s["path"])
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    out = p.stdout
    assert "file id 0xa1" in out
    assert f"entries          {s['entries']} (tombstones {s['tombstones']}, " \
           f"with expiry {s['expiring']})" in out
    assert f"seq              {s['min_seq']} .. {s['max_seq']}" in out
    assert f"smallest key     {escaped(s['smallest'])}" in out
    assert '"bin\\x00\\xff\\x01"' in out
    assert f"largest key      {escaped(s['largest'])}" in out
    index = [l for l in out.splitlines() if l.startswith("  block ")]
    assert len(index) == s["blocks"]
    assert index[0].startswith("  block 0: offset 0, size 4096, last key ")
    assert index[-1].endswith(escaped(s["largest"]))
    assert f"verified: {s['entries']} entries in {s['blocks']} data blocks" in out


def test_sst_entries_prints_every_entry_escaped(fx):
    s = fx["sst"]
    p = run("sst", s["path"], "--entries")
    assert p.returncode == 0, p.stderr
    entries = [l for l in p.stdout.splitlines() if l.startswith("    ")]
    assert len(entries) == s["entries"]
    assert entries[0].startswith('    "bin\\x00\\xff\\x01" seq 16000 value expiry none len ')
    # Long values are cut after 32 bytes, non-printable bytes escaped.
    assert entries[0].endswith('"value-1-1-\\x01-then-enough-text-to-"...')
    tombstones = [l for l in entries if " tombstone " in l]
    assert len(tombstones) == s["tombstones"]
    assert all(l.endswith(' len 0 ""') for l in tombstones)
    assert len([l for l in entries if "expiry 17" in l]) == s["expiring"]
    assert len([l for l in p.stdout.splitlines() if l.startswith("data block ")]) == s["blocks"]


def test_sst_bit_flip_in_a_data_block_is_corruption(fx):
    flip(fx["sst"]["path"], 4096 + 200)     # inside data block 1
    p = run("sst", fx["sst"]["path"])
    assert p.returncode == 1
    assert "offset 4096: data block 1 (4096 bytes): bad checksum" in p.stderr
    assert fx["sst"]["name"] in p.stderr
    assert "verified" not in p.stdout


def test_sst_bit_flip_in_the_footer_is_corruption(fx):
    s = fx["sst"]
    flip(s["path"], s["size"] - 4096 + 30)  # the index offset field
    p = run("sst", s["path"])
    assert p.returncode == 1
    assert f"offset {s['size'] - 4096}: footer: checksum mismatch" in p.stderr


def test_sst_bit_flip_in_a_meta_block_names_the_block(fx):
    s = fx["sst"]
    footer = s["size"] - 4096
    flip(s["path"], footer - 4096 + 20)     # the properties block's content
    p = run("sst", s["path"])
    assert p.returncode == 1
    assert f"offset {footer - 4096}: properties block" in p.stderr


def test_sst_truncated_file_is_corruption(fx):
    s = fx["sst"]
    with open(s["path"], "r+b") as f:
        f.truncate(s["size"] - 100)
    p = run("sst", s["path"])
    assert p.returncode == 1
    assert "is not a whole number of 4096-byte pages" in p.stderr
    with open(s["path"], "r+b") as f:
        f.truncate(s["size"] - 4096)          # whole pages, footer gone
    p = run("sst", s["path"])
    assert p.returncode == 1
    assert "no footer" in p.stderr


def test_sst_file_id_comes_from_the_name_or_the_flag(fx):
    s = fx["sst"]
    other = fx["dir"] / "00000000000000a2.sst"
    shutil.copy(s["path"], other)
    p = run("sst", other)
    assert p.returncode == 1
    assert "footer: file id 0xa1, expected 0xa2" in p.stderr
    for given in ("0xa1", "161", "00000000000000a1"):
        assert run("sst", other, "--file-id", given).returncode == 0, given
    plain = fx["dir"] / "table.sst"
    shutil.copy(s["path"], plain)
    p = run("sst", plain)
    assert p.returncode == 2
    assert "cannot tell the file id" in p.stderr
    assert run("sst", plain, "--file-id", "0xa1").returncode == 0


def test_sst_an_empty_table_verifies(tmp_path):
    s = make(tmp_path, "empty")["sst"]
    p = run("sst", tmp_path / s["name"], "--entries")
    assert p.returncode == 0, p.stderr
    assert s["entries"] == 0 and s["blocks"] == 0
    assert "smallest key     \"\"" in p.stdout
    assert "expiry ms        none" in p.stdout
    assert "verified: 0 entries in 0 data blocks" in p.stdout


@pytest.mark.parametrize("forge,message", [
    ("props", "properties: entries {n1}, the data blocks hold {n}"),
    ("bloom", "bloom block: filter misses a key of data block 0"),
    ("order", "data block 0: entry out of order"),
])
def test_sst_forgeries_with_good_checksums_are_found(tmp_path, forge, message):
    facts = make(tmp_path, forge)
    s = facts["sst"]
    p = run("sst", tmp_path / s["name"])
    assert p.returncode == 1, p.stdout
    assert message.format(n=s["entries"], n1=s["entries"] + 1) in p.stderr


# ---- wal ----

def test_wal_prints_header_records_and_a_clean_end(fx):
    w = fx["wal"]
    p = run("wal", w["path"], "--records")
    assert p.returncode == 0, p.stderr
    assert "header: version 2, shard 1, segment 0x3" in p.stdout
    records = [l for l in p.stdout.splitlines() if l.startswith("record at ")]
    assert [int(l.split()[2].rstrip(":")) for l in records] == w["offsets"]
    assert records[0] == "record at 4096: seq 100, type batch, length 22, synced_upto 4096"
    n = len(w["offsets"])
    assert f"end: clean end at {w['end']} ({n} records, seq 100..{100 + n - 1})" in p.stdout
    assert "record at" not in run("wal", w["path"]).stdout


def test_wal_torn_tail_is_a_normal_end_but_reported(fx):
    w = fx["wal"]
    last = w["offsets"][-1]
    flip(w["path"], last + 45)               # the last record's payload; nothing vouches for it
    p = run("wal", w["path"])
    assert p.returncode == 0, p.stderr
    assert f"end: torn tail at {last}" in p.stdout
    with open(w["path"], "r+b") as f:
        f.truncate(last + 20)                # cut inside the last record's header
    p = run("wal", w["path"])
    assert p.returncode == 0
    assert f"end: torn tail at {last}" in p.stdout


def test_wal_corruption_in_the_middle_says_what_follows(fx):
    w = fx["wal"]
    off = w["offsets"]
    flip(w["path"], off[1] + 45)              # record 1; the group after it says it was durable
    p = run("wal", w["path"], "--records")
    assert p.returncode == 1
    assert f"corruption at {off[1]}: damaged record in bytes a later record says were durable" \
        in p.stdout
    assert f"resumed at {off[2]}" in p.stdout
    assert f"end: clean end at {w['end']}" in p.stdout
    assert f"offset {off[1]}: damaged record" in p.stderr
    assert w["name"] in p.stderr


def test_wal_damaged_last_record_before_a_sync_mark_is_corruption(tmp_path):
    """Issue 23: bit rot in the log's last record, synced, read as a torn
    tail and verify said OK. The writer's sync mark vouches for it."""
    w = make(tmp_path, "marked")["wal"]
    path = tmp_path / w["name"]
    last = w["offsets"][-1]
    p = run("wal", path)
    assert p.returncode == 0, p.stderr
    assert f"end: clean end at {w['end']}" in p.stdout
    flip(path, last + 45)
    p = run("wal", path)
    assert p.returncode == 1, p.stdout
    assert f"corruption at {last}: damaged record in bytes a later record says were durable" \
        in p.stdout
    p = run("verify", tmp_path)
    assert p.returncode == 1, p.stdout
    assert f"{w['name']}: CORRUPT at offset {last}" in p.stdout


def test_manifest_damaged_last_edit_before_a_sync_mark_is_corruption(tmp_path):
    """Issue 23, the manifest's side: its last edit, damaged after it was
    synced, read as a torn tail."""
    m = make(tmp_path, "marked")["manifest"]
    path = tmp_path / "MANIFEST"
    last = m["offsets"][-1]
    p = run("manifest", path)
    assert p.returncode == 0, p.stderr
    assert f"end: clean end at {m['size']}" in p.stdout
    flip(path, last + 33)
    p = run("manifest", path)
    assert p.returncode == 1, p.stdout
    assert f"offset {last}" in p.stderr
    p = run("verify", tmp_path)
    assert p.returncode == 1, p.stdout
    assert "MANIFEST: CORRUPT" in p.stdout
    # Without the mark (a crash before it was written) the same is a torn tail.
    with open(path, "r+b") as f:
        f.truncate(m["mark"])
    p = run("verify", tmp_path)
    assert p.returncode == 0, p.stdout
    assert f"MANIFEST: OK (manifest: torn tail at {last}" in p.stdout


def test_wal_bad_header_and_a_name_that_disagrees(fx):
    w = fx["wal"]
    other = fx["dir"] / "0000000000000004.log"
    shutil.copy(w["path"], other)
    p = run("wal", other)
    assert p.returncode == 1
    assert "segment 0x3, the file name says 0x4" in p.stderr
    flip(w["path"], 20)
    p = run("wal", w["path"])
    assert p.returncode == 1
    assert "offset 0: segment header: checksum mismatch" in p.stderr
    with open(w["path"], "r+b") as f:
        f.truncate(100)
    assert "shorter than the 4096-byte segment header" in run("wal", w["path"]).stderr


# ---- verify ----

def test_verify_a_good_directory(fx):
    p = run("verify", fx["dir"])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert f"{fx['sst']['name']}: OK (sstable: {fx['sst']['entries']} entries in " \
           f"{fx['sst']['blocks']} data blocks)" in lines
    assert any(l.startswith(f"{fx['wal']['name']}: OK (commit-log segment: clean end") for l in lines)
    assert f"MANIFEST: OK (manifest: clean end at {fx['manifest']['size']} (snapshot and 3 edits; " \
           "tables 1, next file id 0xa2, log segment 0x3))" in lines
    assert lines[-1].endswith("3 files: 3 OK, 0 CORRUPT, 0 ERROR, 0 SKIPPED, 0 UNREFERENCED; 0 MISSING")


def test_verify_skips_unknown_files_and_reports_corrupt_ones(fx):
    (fx["dir"] / "notes.txt").write_text("not a shard file\n")
    (fx["dir"] / "sub").mkdir()
    flip(fx["sst"]["path"], 100)
    p = run("verify", fx["dir"])
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert "notes.txt: SKIPPED (unknown kind of file)" in lines
    assert "sub: SKIPPED (not a regular file)" in lines
    assert f"{fx['sst']['name']}: CORRUPT at offset 0: data block 0 (4096 bytes): bad checksum, " \
           "length or type" in lines
    assert lines[-1].endswith("5 files: 2 OK, 1 CORRUPT, 0 ERROR, 2 SKIPPED, 0 UNREFERENCED; 0 MISSING")
    assert fx["sst"]["name"] in p.stderr


def test_verify_torn_tail_is_ok_and_an_unreadable_name_is_an_error(fx):
    w = fx["wal"]
    flip(w["path"], w["offsets"][-1] + 45)
    p = run("verify", fx["dir"])
    assert p.returncode == 0, p.stdout
    assert f"{w['name']}: OK (commit-log segment: torn tail at {w['offsets'][-1]}" in p.stdout
    shutil.copy(fx["sst"]["path"], fx["dir"] / "copy.sst")
    p = run("verify", fx["dir"])
    assert p.returncode == 2
    assert "copy.sst: ERROR at offset 0: cannot tell the file id" in p.stdout


def test_verify_corruption_outranks_errors(fx):
    shutil.copy(fx["sst"]["path"], fx["dir"] / "copy.sst")
    flip(fx["wal"]["path"], fx["wal"]["offsets"][1] + 45)
    assert run("verify", fx["dir"]).returncode == 1


# ---- manifest ----

def test_manifest_prints_records_and_the_state(fx):
    m, s = fx["manifest"], fx["sst"]
    p = run("manifest", m["path"])
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""
    out = p.stdout
    records = [l for l in out.splitlines() if l.startswith("record at ")]
    assert [int(l.split()[2].rstrip(":")) for l in records] == m["offsets"]
    assert records[0].startswith("record at 32: snapshot, ")
    assert all(", edit, " in l or ": edit, " in l for l in records[1:])
    assert f"    add table 0xa1: tablet 7, {s['size']} bytes, seq {s['min_seq']}..{s['max_seq']}" in out
    assert "    tablet 2 flushed to seq 50" in out
    assert f"end: clean end at {m['size']} (snapshot and 3 edits;" in out
    assert "  layout           shard 1 of 2, 8 tablets per shard" in out
    assert "  next file id     0xa2" in out
    assert "  log segment      0x3" in out
    assert "  tablet 0: flushed seq 60, table 0, [00000000, 0000000040)" in out
    assert out.rstrip().endswith(f"  tablet 7: flushed seq 0, table 0, [00000000c0, 00000001)\n"
                                 f"    table 0xa1: {s['size']} bytes, seq {s['min_seq']}..{s['max_seq']}")


def test_manifest_bit_flip_in_a_middle_record_is_corruption(fx):
    m = fx["manifest"]
    flip(m["path"], m["offsets"][1] + 40)    # edit 1's payload; edit 2 says it was durable
    p = run("manifest", m["path"])
    assert p.returncode == 1
    assert f"offset {m['offsets'][1]}: damaged record" in p.stderr
    p = run("verify", fx["dir"])
    assert p.returncode == 1
    assert f"MANIFEST: CORRUPT at offset {m['offsets'][1]}: damaged record" in p.stdout
    assert "MANIFEST did not verify: files not checked against it" in p.stdout


def test_manifest_torn_tail_is_a_normal_end_but_reported(fx):
    m = fx["manifest"]
    last = m["offsets"][-1]
    flip(m["path"], last + 40)               # the last edit: nothing vouches for it
    p = run("manifest", m["path"])
    assert p.returncode == 0, p.stderr
    assert f"end: torn tail at {last} (snapshot and 2 edits;" in p.stdout
    assert "start-up drops it" in p.stdout
    assert "tablet 0: flushed seq 0" in p.stdout, "the torn edit is not in the state"
    with open(m["path"], "r+b") as f:
        f.truncate(last + 20)                # cut inside its header
    p = run("verify", fx["dir"])
    assert p.returncode == 0, p.stdout
    assert f"MANIFEST: OK (manifest: torn tail at {last} " in p.stdout


def test_manifest_state_that_does_not_apply_is_corruption(tmp_path):
    m = make(tmp_path, "badedit")["manifest"]
    p = run("manifest", tmp_path / "MANIFEST")
    assert p.returncode == 1
    assert f"offset {m['offsets'][2]}: edit 2 does not apply to the state before it" in p.stderr
    assert run("verify", tmp_path).returncode == 1


def test_manifest_bad_header_and_short_file(fx):
    m = fx["manifest"]
    flip(m["path"], 3)
    p = run("manifest", m["path"])
    assert p.returncode == 1
    assert "offset 0: header: bad magic, checksum or version" in p.stderr
    with open(m["path"], "r+b") as f:
        f.truncate(20)
    assert "shorter than the 32-byte header" in run("manifest", m["path"]).stderr


def test_verify_a_named_table_missing_is_corruption(fx):
    s = fx["sst"]
    s["path"].unlink()
    p = run("verify", fx["dir"])
    assert p.returncode == 1
    assert f"{s['name']}: MISSING (the manifest names it: tablet 7, {s['size']} bytes)" in p.stdout
    assert f"names {s['name']}, which is missing" in p.stderr
    assert p.stdout.splitlines()[-1].endswith("0 UNREFERENCED; 1 MISSING")


def test_verify_a_table_of_another_size_is_corruption(fx):
    s = fx["sst"]
    with open(s["path"], "r+b") as f:
        f.truncate(s["size"] - 4096)
    p = run("verify", fx["dir"])
    assert p.returncode == 1
    assert f"{s['name']}: CORRUPT at offset 0: size {s['size'] - 4096} bytes, the manifest says " \
           f"{s['size']}" in p.stdout


def test_verify_unreferenced_files_are_reported_not_corrupt(fx):
    d = fx["dir"]
    shutil.copy(fx["sst"]["path"], d / "00000000000000b0.sst")
    shutil.copy(fx["wal"]["path"], d / "0000000000000001.log")
    (d / "MANIFEST.tmp").write_bytes(b"half a rewrite")
    p = run("verify", d)
    assert p.returncode == 0, p.stdout
    lines = p.stdout.splitlines()
    assert "00000000000000b0.sst: UNREFERENCED (the manifest does not name it; start-up deletes it)" \
        in lines
    assert "0000000000000001.log: UNREFERENCED (older than segment 0x3, the oldest the manifest " \
           "needs; start-up deletes it)" in lines
    assert any(l.startswith("MANIFEST.tmp: UNREFERENCED (a temporary file") for l in lines)
    assert lines[-1].endswith("6 files: 3 OK, 0 CORRUPT, 0 ERROR, 0 SKIPPED, 3 UNREFERENCED; 0 MISSING")


def test_verify_without_a_manifest_checks_files_alone(fx):
    fx["manifest"]["path"].unlink()
    fx["sst"]["path"].rename(fx["dir"] / "00000000000000b0.sst")
    p = run("verify", fx["dir"])
    assert p.returncode == 1, "the table's file id no longer matches its name"
    assert "no MANIFEST: files not checked against it" in p.stdout
    assert ": MISSING" not in p.stdout and ": UNREFERENCED" not in p.stdout


# ---- usage ----

@pytest.mark.parametrize("args,message", [
    ([], "usage: scree-tool"),
    (["bogus"], "unknown command 'bogus'"),
    (["sst"], "sst needs a FILE"),
    (["sst", "x.sst", "--file-id"], "--file-id needs a number"),
    (["sst", "x.sst", "--file-id", "12z"], "--file-id needs a number, got '12z'"),
    (["sst", "a.sst", "b.sst"], "unexpected argument 'b.sst'"),
    (["wal", "--bogus"], "unexpected argument '--bogus'"),
    (["verify"], "verify needs exactly one DIR"),
    (["manifest"], "manifest needs exactly one FILE"),
    (["manifest", "a", "b"], "manifest needs exactly one FILE"),
    (["manifest", "/nonexistent/MANIFEST"], "cannot open"),
    (["verify", "/nonexistent-scree-dir"], "/nonexistent-scree-dir: cannot list"),
    (["sst", "/nonexistent/00000000000000a1.sst"], "cannot open"),
    (["wal", "/nonexistent/0000000000000001.log"], "cannot open"),
])
def test_usage_and_io_errors_exit_2(args, message):
    p = run(*args)
    assert p.returncode == 2
    assert message in p.stderr


def test_help_exits_0():
    p = run("--help")
    assert p.returncode == 0
    assert "Exit status: 0 all good, 1 corruption found, 2 usage or I/O error." in p.stdout


# ---- robustness ----

def test_random_damage_never_crashes(fx):
    """Bit flips all over both files: the tool always answers 0 or 1 and
    never crashes (the sanitizer builds run this too). A flip may land in
    block padding, which no checksum covers, so 0 is allowed; but one in a
    block header or the footer's used bytes is always found."""
    rnd = random.Random(7)
    s, w = fx["sst"], fx["wal"]
    good_sst, good_wal = s["path"].read_bytes(), w["path"].read_bytes()
    footer = len(good_sst) - 4096
    for i in range(80):
        off = rnd.randrange(len(good_sst)) if i % 2 else rnd.randrange(0, len(good_sst), 4096) + \
            rnd.randrange(16)
        s["path"].write_bytes(good_sst)
        flip(s["path"], off, 1 << rnd.randrange(8))
        p = run("sst", s["path"], "--entries")
        assert p.returncode in (0, 1), (off, p.stderr)
        if off % 4096 < 16 or footer <= off < footer + 72:
            assert p.returncode == 1, off
    for _ in range(60):
        off = rnd.randrange(4096 + 64 * 16)
        w["path"].write_bytes(good_wal)
        flip(w["path"], off, 1 << rnd.randrange(8))
        assert run("wal", w["path"], "--records").returncode in (0, 1), off
    m = fx["manifest"]
    good_man = m["path"].read_bytes()
    for _ in range(60):
        off = rnd.randrange(len(good_man))
        m["path"].write_bytes(good_man)
        flip(m["path"], off, 1 << rnd.randrange(8))
        p = run("manifest", m["path"])
        assert p.returncode in (0, 1), (off, p.stderr)
        # The file header, or a record header that a later record vouches
        # for (padding after a payload is covered by no checksum).
        if off < 32 or any(o <= off < o + 32 for o in m["offsets"][:-1]):
            assert p.returncode == 1, off
