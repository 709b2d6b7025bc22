"""File locks as leases: decided on the clock of the call, whatever time the log has reached."""

from __future__ import annotations

import pytest
from chronograph.application import Memory
from chronograph.application.errors import LockedError
from freezegun import freeze_time
from support.team import call


def test_a_log_written_by_a_clock_ahead_does_not_free_a_live_lease(memory: Memory) -> None:
    with freeze_time("2026-05-01T10:00:00Z"):
        call(memory, "memory_file_lock", action="checkout", file_path="/skew.py", agent_id="A", expires_in=3600)
    with freeze_time("2026-05-01T12:00:00Z"):  # another machine, its clock two hours ahead, writes
        call(memory, "memory_org", action="create", name="elsewhere")
    with freeze_time("2026-05-01T10:00:05Z"):
        with pytest.raises(LockedError, match="locked by A until 2026-05-01T11:00:00"):
            memory.call("memory_file_lock", {"action": "checkout", "file_path": "/skew.py", "agent_id": "B"},
                        actor="agent")
        renewed = call(memory, "memory_file_lock", action="checkout", file_path="/skew.py", agent_id="A",
                       expires_in=60)
        assert renewed["renewed"] is True and renewed["lock"]["expiresAt"] == "2026-05-01T10:01:05.000000Z"
        status = call(memory, "memory_file_lock", action="status", file_path="/skew.py")
        assert status["lock"]["checkedOutBy"] == "A"
    with freeze_time("2026-05-01T10:02:00Z"):  # past the renewed lease, by the clock reads use too
        taken = call(memory, "memory_file_lock", action="checkout", file_path="/skew.py", agent_id="B")
        assert taken["lock"]["checkedOutBy"] == "B" and taken["renewed"] is False
