"""The team memory's tests: a fresh store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.application import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened
