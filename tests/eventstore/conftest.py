"""The `log` fixture: every contract test runs once per backend of the log."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from chronograph.eventstore import EventLog
from support.logs import BACKENDS


@pytest.fixture(params=sorted(BACKENDS))
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventLog]:
    """A new, empty log of each backend, closed after the test."""
    opened = BACKENDS[request.param](tmp_path)
    try:
        yield opened
    finally:
        opened.close()
