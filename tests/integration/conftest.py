# SPDX-License-Identifier: Apache-2.0
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from server_util import Server  # noqa: E402


@pytest.fixture
def server():
    s = Server().start()
    yield s
    s.stop()
    shutil.rmtree(s.dir, ignore_errors=True)


@pytest.fixture
def r(server):
    c = server.client()
    yield c
    c.close()
