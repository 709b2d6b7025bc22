"""Calling the team memory's tools the way a test wants to: on a `Memory`, the reply object back."""

from __future__ import annotations

from typing import Any

from chronograph.application import Memory
from chronograph.application.engine.outputs import ObjectOut


def call(memory: Memory, tool: str, actor: str = "agent", **arguments: Any) -> dict[str, Any]:
    """The reply object of a team tool called as `actor`."""
    output = memory.call(tool, arguments, actor=actor).output
    assert isinstance(output, ObjectOut)
    return output.reply
