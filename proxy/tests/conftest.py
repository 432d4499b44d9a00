# SPDX-License-Identifier: Apache-2.0
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from proxy_util import Origin, Proxy  # noqa: E402


@pytest.fixture(autouse=True)
def close_proxies():
    """Stops every proxy a test started (by PID) and removes its directory,
    also when the test fails."""
    before = set(map(id, Proxy.made))
    yield
    for p in [p for p in Proxy.made if id(p) not in before]:
        p.close()


@pytest.fixture
def origin():
    o = Origin()
    yield o
    o.close()


@pytest.fixture
def proxy(origin):
    p = Proxy([origin]).start()
    yield p
    p.close()
