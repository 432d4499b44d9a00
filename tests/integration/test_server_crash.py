# SPDX-License-Identifier: Apache-2.0
"""The server's kill -9 test under write stalls (server_crash.py): a few
rounds here; the long campaign is `tests/integration/server_crash.py
--rounds 100` or SCREE_CRASH_ROUNDS=100 with this test."""
import os

from server_crash import Campaign


def test_kill9_while_writes_stall_keeps_every_acknowledged_write(tmp_path):
    c = Campaign(rounds=int(os.environ.get("SCREE_CRASH_ROUNDS", "6")),
                 seed=int(os.environ.get("SCREE_CRASH_SEED", "1")), dir=str(tmp_path / "data"))
    c.run()     # raises Violation naming the round, the key or counter, and what was wrong
    assert c.stalled_rounds > 0
