"""What the lifecycle's tests share: a store of their own, written without waiting for the disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.application import Memory


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened
