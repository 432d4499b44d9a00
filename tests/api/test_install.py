# SPDX-License-Identifier: Apache-2.0
"""The library as an outside program gets it: `meson install` into a
temporary DESTDIR, then every docs/examples/*.c built with
`cc app.c $(pkg-config --cflags --libs scree)` against what was installed
(nothing from the source or build tree) and run on a fresh directory.
Also checks what the install holds: the shared library's SONAME and that
it exports only scree_* symbols, the static library, the headers, the
server and the tools."""
import glob
import os
import shutil
import subprocess
import tempfile

import pytest

BUILD = os.environ["SCREE_BUILD_ROOT"]
SOURCE = os.environ["SCREE_SOURCE_ROOT"]
EXAMPLES = sorted(glob.glob(os.path.join(SOURCE, "docs", "examples", "*.c")))


@pytest.fixture(scope="module")
def dest():
    root = tempfile.mkdtemp(prefix="scree-install-", dir="/var/tmp")
    subprocess.run(["meson", "install", "-C", BUILD, "--destdir", root, "--no-rebuild",
                    "--quiet"], check=True, timeout=600)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def find(root, pattern):
    hits = glob.glob(os.path.join(root, "**", pattern), recursive=True)
    assert hits, f"{pattern} is not installed under {root}"
    return hits[0]


def pkg_env(root):
    pc = find(root, "scree.pc")
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.path.dirname(pc)
    env["PKG_CONFIG_SYSROOT_DIR"] = root
    env["LD_LIBRARY_PATH"] = os.path.dirname(find(root, "libscree.so"))
    return env


def test_install_holds_the_library_headers_and_programs(dest):
    so = find(dest, "libscree.so.1")
    find(dest, "libscree.a")
    find(dest, "scree.h")
    find(dest, "scree_errors.h")
    for prog in ("scree", "scree-tool"):
        assert os.access(find(dest, prog), os.X_OK)
    dyn = subprocess.run(["objdump", "-p", so], capture_output=True, text=True, check=True)
    assert "SONAME               libscree.so.1" in dyn.stdout
    syms = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True, text=True,
                          check=True).stdout.split("\n")
    names = [line.split()[-1] for line in syms if line.strip()]
    exported = [n for n in names if not n.startswith("SCREE_")]
    assert exported and all(n.startswith("scree_") for n in exported), \
        [n for n in exported if not n.startswith("scree_")][:10]


@pytest.mark.parametrize("example", EXAMPLES, ids=[os.path.basename(e) for e in EXAMPLES])
def test_example_builds_with_pkg_config_and_runs(dest, example, tmp_path):
    env = pkg_env(dest)
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "scree"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    assert not any(SOURCE in f or BUILD in f for f in flags), flags
    exe = tmp_path / "app"
    subprocess.run(["cc", "-Wall", "-Werror", example, "-o", str(exe), *flags, "-lpthread"],
                   env=env, check=True, timeout=300)
    db = tmp_path / "db"
    out = subprocess.run([str(exe), str(db)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    # Run again on the same directory: the data is still there.
    out = subprocess.run([str(exe), str(db)], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
