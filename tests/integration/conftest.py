# SPDX-License-Identifier: Apache-2.0
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from server_util import Server  # noqa: E402


@pytest.fixture(autouse=True)
def close_servers():
    """Stops every server a test started and removes its directory, so a
    test that fails (or forgets) leaves no process and no data behind.
    Servers of wider-scoped fixtures, made before this runs, are theirs."""
    before = set(map(id, Server.made))
    yield
    for s in [s for s in Server.made if id(s) not in before]:
        s.close()


@pytest.fixture
def server():
    s = Server().start()
    yield s
    s.close()


@pytest.fixture
def r(server):
    c = server.client()
    yield c
    c.close()
