# SPDX-License-Identifier: Apache-2.0
"""tools/check_layers.py on small made-up trees: it must pass a clean one and
name each kind of violation, tools/ reaching the reactor through a chain of
engine headers included. Run by meson (suite lint) with CHECK_LAYERS set."""
import os
import subprocess

LINT = os.environ.get("CHECK_LAYERS", "tools/check_layers.py")


def tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def lint(root):
    p = subprocess.run(["/usr/bin/python3", LINT, str(root)], capture_output=True, text=True,
                       timeout=30)
    return p.returncode, p.stdout


BASE = {
    "base/mem.h": "#include <stddef.h>\n",
    "include/scree/scree_errors.h": "",
    "reactor/loop.h": '#include "base/mem.h"\n',
    "engine/block.h": '#include "base/mem.h"\n#include <scree/scree_errors.h>\n',
    "engine/fs.h": '#include "reactor/loop.h"\n',
    "engine/sst_io.h": '#include "engine/block.h"\n#include "engine/fs.h"\n',
}


def test_a_tool_on_the_pure_engine_is_clean(tmp_path):
    tree(tmp_path, {**BASE, "tools/inspect.c": '#include "engine/block.h"\n#include <stdio.h>\n'})
    assert lint(tmp_path) == (0, "check_layers: 0 violation(s)\n")


def test_a_tool_reaching_the_reactor_through_engine_headers_is_named_with_the_chain(tmp_path):
    tree(tmp_path, {**BASE, "tools/dump.c": '#include "engine/sst_io.h"\n'})
    rc, out = lint(tmp_path)
    assert rc == 1
    assert ("tools/dump.c: reaches reactor/loop.h (tools/dump.c -> engine/sst_io.h -> "
            "engine/fs.h -> reactor/loop.h)") in out


def test_tools_may_not_include_liburing_or_net(tmp_path):
    tree(tmp_path, {**BASE, "net/server.h": "", "tools/a.c": '#include <liburing.h>\n',
                    "tools/b.c": '#include "net/server.h"\n'})
    rc, out = lint(tmp_path)
    assert rc == 1
    assert "tools/a.c: reaches liburing.h" in out
    assert "tools/b.c: reaches net/server.h" in out


def test_upward_includes_and_stray_liburing_are_still_caught(tmp_path):
    tree(tmp_path, {**BASE, "base/bad.c": '#include "engine/block.h"\n',
                    "engine/bad.c": '#include <liburing.h>\n'})
    rc, out = lint(tmp_path)
    assert rc == 1
    assert "base/bad.c: includes engine/block.h (base may not include engine)" in out
    assert "engine/bad.c: includes liburing.h" in out
