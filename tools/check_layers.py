#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Enforces scree's module layering (registered as a meson test, suite lint).

Includes point downward only: base <- reactor <- engine <- net; perf and
tests sit on top and may include anything. liburing.h is included only by
reactor/uring.c, reactor/io.c and reactor/uring_int.h (plus perf and tests).
base/ includes nothing from the project except base/ and include/scree.

tools/ holds offline programs that read a stopped shard's files with plain
syscalls: they link the engine's pure format code (engine_pure_dep), never
the reactor. So nothing a tools/ file includes may reach reactor/, net/ or
liburing.h, directly or through any chain of project headers (engine/fs.h,
for one, pulls in the reactor).

Exits 1 and lists every violation, 0 when clean.
"""
import os
import re
import sys

RANK = {"base": 0, "reactor": 1, "engine": 2, "net": 3}
URING_OK = {"reactor/uring.c", "reactor/io.c", "reactor/uring_int.h"}
TOOLS_FORBIDDEN = ("reactor", "net")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]', re.M)


def includes(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        return [target for _, target in INCLUDE.findall(f.read())]


def sources(root, top):
    for dirpath, _, files in os.walk(os.path.join(root, top)):
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(dirpath, name), root)


def resolve(root, target):
    """The project file an include names (root-relative or under include/), or None."""
    for rel in (target, os.path.join("include", target)):
        if os.path.isfile(os.path.join(root, rel)):
            return os.path.normpath(rel)
    return None


def module_violations(root):
    for mod in RANK:
        for rel in sources(root, mod):
            for target in includes(root, rel):
                first = target.split("/", 1)[0]
                if first in RANK and RANK[first] > RANK[mod]:
                    yield f"{rel}: includes {target} ({mod} may not include {first})"
                if target == "liburing.h" and rel not in URING_OK:
                    yield f"{rel}: includes liburing.h (only reactor/uring.c and reactor/io.c may)"


def forbidden_for_tools(target):
    return target == "liburing.h" or target.split("/", 1)[0] in TOOLS_FORBIDDEN


def tool_violations(root):
    """Walks every include chain from each tools/ file; reports the first
    forbidden header each chain reaches, with the chain."""
    for start in sources(root, "tools"):
        chain = {start: None}
        todo = [start]
        while todo:
            rel = todo.pop(0)
            for target in includes(root, rel):
                if forbidden_for_tools(target):
                    path = [target, rel]
                    while chain[path[-1]] is not None:
                        path.append(chain[path[-1]])
                    yield (f"{start}: reaches {target} ({' -> '.join(reversed(path))}); "
                           "tools link the engine's pure code only")
                    continue
                dep = resolve(root, target)
                if dep and dep not in chain:
                    chain[dep] = rel
                    todo.append(dep)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = list(module_violations(root)) + list(tool_violations(root))
    for v in found:
        print(v)
    print(f"check_layers: {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
