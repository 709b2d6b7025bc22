"""Stream ids: how each aggregate of the graph maps onto a stream of the log."""

from __future__ import annotations

import os
import time

import msgspec

__all__ = ["context_stream", "new_entity_stream", "relation_stream"]

_json = msgspec.json.Encoder()


def new_entity_stream() -> str:
    """A fresh, stable id for a new entity: its name can change, its stream never does.

    Time first, then 64 random bits: new ids sort after old ones, so creating an
    entity appends to the ends of the B-trees keyed by stream instead of dirtying a
    random leaf of each (a durable create then costs the same at 1k and 1M entities).
    """
    return f"entity-{time.time_ns() // 1000:014x}{os.urandom(8).hex()}"


def relation_stream(workspace: str, source: str, relation_type: str, target: str) -> str:
    """The stream of the relation (workspace, from, relationType, to): one per identity."""
    return "relation:" + _json.encode([workspace, source, relation_type, target]).decode()


def context_stream(workspace: str) -> str:
    """The stream of a workspace's context."""
    return "context:" + workspace
