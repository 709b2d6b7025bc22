"""The log backends the contract tests run against, and reads through the `EventLog` interface only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from chronograph.eventstore import Envelope, EventLog, LmdbLog

from support.postgres import database


def _postgres(directory: Path) -> EventLog:
    from chronograph.eventstore.postgres.log import PgLog  # noqa: PLC0415 (the postgresql extra)

    return PgLog(database().log_url())


BACKENDS: dict[str, Callable[[Path], EventLog]] = {
    "lmdb": lambda directory: LmdbLog(directory / "store"),
    "postgresql": _postgres,
}
"""name -> opens a new, empty log in a fresh directory (LMDB) or schema (PostgreSQL)."""


def read_stream(log: EventLog, stream: str, from_version: int = 1, to_version: int | None = None) -> list[Envelope]:
    with log.read() as reader:
        return list(reader.stream(stream, from_version, to_version))


def read_all(
    log: EventLog, from_position: int = 1, to_position: int | None = None, batch_size: int = 1024
) -> list[Envelope]:
    with log.read() as reader:
        return list(reader.all(from_position, to_position, batch_size))


def position_at(log: EventLog, recorded_at: int) -> int:
    with log.read() as reader:
        return reader.position_at(recorded_at)


def stream_version(log: EventLog, stream: str) -> int:
    with log.read() as reader:
        return reader.stream_version(stream)
