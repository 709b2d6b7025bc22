"""Counting what the views yield, to check a query reads no more than its answer needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chronograph.projections.states.graph import LmdbGraph


def count_entities_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-item list holding how many entity records `LmdbGraph.entities` has yielded so far
    (reset it by assigning its item)."""
    count = [0]
    whole = LmdbGraph.entities

    def counted(self: LmdbGraph, *args: Any, **kwargs: Any) -> Iterator[Any]:
        for record in whole(self, *args, **kwargs):
            count[0] += 1
            yield record

    monkeypatch.setattr(LmdbGraph, "entities", counted)
    return count
