#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Enforces scree's module layering (registered as a meson test, suite lint).

Includes point downward only: base <- reactor <- engine <- net; tools, perf
and tests sit on top and may include anything. liburing.h is included only by
reactor/uring.c, reactor/io.c and reactor/uring_int.h (plus perf and tests).
base/ includes nothing from the project except base/ and include/scree.
Exits 1 and lists every violation, 0 when clean.
"""
import os
import re
import sys

RANK = {"base": 0, "reactor": 1, "engine": 2, "net": 3}
URING_OK = {"reactor/uring.c", "reactor/io.c", "reactor/uring_int.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def violations(root):
    for mod in RANK:
        top = os.path.join(root, mod)
        for dirpath, _, files in os.walk(top):
            for name in files:
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for _, target in INCLUDE.findall(text):
                    first = target.split("/", 1)[0]
                    if first in RANK and RANK[first] > RANK[mod]:
                        yield f"{rel}: includes {target} ({mod} may not include {first})"
                    if target == "liburing.h" and rel not in URING_OK:
                        yield f"{rel}: includes liburing.h (only reactor/uring.c and reactor/io.c may)"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = list(violations(root))
    for v in found:
        print(v)
    print(f"check_layers: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
