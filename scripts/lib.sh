# SPDX-License-Identifier: Apache-2.0
# Shared by scripts/run and scripts/test: install what is missing, build into build/.
# Idempotent: with everything present it installs nothing and ninja rebuilds
# only what changed.

BUILD_PACKAGES="gcc pkg-config meson ninja-build liburing-dev libjemalloc-dev libxxhash-dev libhttp-parser-dev"
# librocksdb-dev, libleveldb-dev, liblmdb-dev: scree-bench --engine rocksdb|leveldb|lmdb
# (meson options rocksdb, leveldb, lmdb, auto) and their smoke tests, perf/engine_vs_embedded;
# redis-server and gnuplot-nox: perf/compare's smoke test (tests/perf/test_compare.py);
# prometheus-redis-exporter: tests/integration/test_info.py scrapes scree through it;
# curl: proxy/tests drive scree-proxy with it; gdb: a proxy that never
# prints its start line has its threads' stacks in the failure
TEST_PACKAGES="curl libcriterion-dev python3 python3-pytest python3-redis redis-tools librocksdb-dev libleveldb-dev liblmdb-dev redis-server gnuplot-nox prometheus-redis-exporter gdb"

as_root() {
        if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# install_missing PKG...: apt-get installs only the packages not yet installed.
install_missing() {
        local missing=() p
        for p in "$@"; do
                dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
                        missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        echo "scree: installing ${missing[*]}" >&2
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                "${missing[@]}" >/dev/null
}

# build DIR [MESON OPTIONS...]: configure once, then build incrementally.
build() {
        local dir=$1
        shift
        if [ ! -f "$dir/build.ninja" ]; then
                meson setup "$dir" "$@" >/dev/null
        fi
        ninja -C "$dir"
}

# summary DIR...: prints "tests: N passed, M failed" over the meson test logs
# given, after naming each failed test with the tail of its output (CI shows
# only the end of what it printed).
summary() {
        /usr/bin/python3 - "$@" <<'PY'
import json, sys
ok = bad = skip = 0
for d in sys.argv[1:]:
    try:
        lines = open(d + "/meson-logs/testlog.json").read().splitlines()
    except OSError:
        continue
    for line in lines:
        t = json.loads(line)
        r = t["result"]
        if r in ("OK", "EXPECTEDFAIL"):
            ok += 1
        elif r == "SKIP":
            skip += 1
        else:
            bad += 1
            tail = (t.get("stdout") or "").splitlines()[-25:]
            print(f"== FAILED ({r}): {d}: {t['name']}")
            print("\n".join("   " + l for l in tail))
print(f"tests: {ok} passed, {bad} failed, {skip} skipped")
PY
}
