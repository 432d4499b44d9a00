#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that every Criterion suite is registered as a meson test.

tests/meson.build registers each TestSuite of the unit binaries as its own
meson test (criterion --filter NAME/*) from hand-written lists; a suite
left out of its list compiles and passes when run by hand but never runs
in CI. This lint finds every TestSuite(NAME ...) in tests/*/test_*.c and
requires NAME to appear quoted in a meson.build under tests/.

Usage: check_suites.py ROOT. Exits 1 and names each missing suite, 0 when
every suite is listed.
"""
import glob
import os
import re
import sys

SUITE = re.compile(r"^TestSuite\(\s*([A-Za-z0-9_]+)", re.M)


def suites(root):
    found = {}
    for path in sorted(glob.glob(os.path.join(root, "tests", "*", "test_*.c"))):
        with open(path, encoding="utf-8") as f:
            for name in SUITE.findall(f.read()):
                found[name] = os.path.relpath(path, root)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    build = ""
    for path in glob.glob(os.path.join(root, "tests", "**", "meson.build"), recursive=True):
        with open(path, encoding="utf-8") as f:
            build += f.read()
    missing = [(n, p) for n, p in suites(root).items()
               if f"'{n}'" not in build]
    for name, path in missing:
        print(f"{path}: suite '{name}' is not registered in any tests/ meson.build")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
