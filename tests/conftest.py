"""Shared fixtures: a fresh store directory per test, never an environment opened twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chronograph.eventstore import LmdbLog


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A path where no store exists yet."""
    return tmp_path / "store"


@pytest.fixture
def store(store_path: Path) -> Iterator[LmdbLog]:
    """A new, empty event store, closed after the test."""
    with LmdbLog(store_path) as opened:
        yield opened
