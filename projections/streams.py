"""Stream ids: how each aggregate of the graph maps onto a stream of the log."""

from __future__ import annotations

import os
import time

from chronograph.eventstore import compact

__all__ = ["context_stream", "new_entity_stream", "relation_stream"]



def new_entity_stream() -> str:
    """A fresh, stable id for a new entity: its name can change, its stream never does.

    Time first, then 64 random bits: new ids sort after old ones, so creating an
    entity appends to the ends of the B-trees keyed by stream instead of dirtying a
    random leaf of each (a durable create then costs the same at 1k and 1M entities).
    """
    return f"entity-{time.time_ns() // 1000:014x}{os.urandom(8).hex()}"


relation_stream = compact.relation_stream
"""The stream of the relation (workspace, from, relationType, to): one per identity (defined with
the log's compact records, which leave it out of a relation's first record that names it)."""


def context_stream(workspace: str) -> str:
    """The stream of a workspace's context."""
    return "context:" + workspace
