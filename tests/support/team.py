"""Calling the team memory's tools the way a test wants to: on a `Memory`, the reply object back."""

from __future__ import annotations

from typing import Any

import pytest
from chronograph.application import ChronographError, Memory
from chronograph.application.engine.outputs import ObjectOut


def call(memory: Memory, tool: str, actor: str = "agent", **arguments: Any) -> dict[str, Any]:
    """The reply object of a team tool called as `actor`."""
    output = memory.call(tool, arguments, actor=actor).output
    assert isinstance(output, ObjectOut)
    return output.reply


def refused(memory: Memory, tool: str, **arguments: Any) -> ChronographError:
    """The error of a call that must be refused, having checked it wrote nothing."""
    head = memory.log.head()
    with pytest.raises(ChronographError) as caught:
        memory.call(tool, arguments, actor="agent")
    assert memory.log.head() == head
    return caught.value
