"""Shared fixtures: a fresh store directory per test, never an environment opened twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from eventstore import EventStore


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A path where no store exists yet."""
    return tmp_path / "store"


@pytest.fixture
def store(store_path: Path) -> Iterator[EventStore]:
    """A new, empty event store, closed after the test."""
    with EventStore(store_path) as opened:
        yield opened
