"""Writing a backup when LMDB's copy fails (eventstore/lmdb/backup.py; restoring is tests/tools/test_backup.py's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import lmdb
import pytest
from chronograph.eventstore import LmdbLog, StorageFullError, StoreCorruptError
from chronograph.eventstore.lmdb.backup import BackupError, write_backup


class FailingCopy:
    """A log whose environment's copy fails as LMDB's `mdb_env_copyfd` does (the lowest layer
    Chronograph calls), reading through the real one otherwise."""

    def __init__(self, log: LmdbLog, error: lmdb.Error) -> None:
        self.log = log
        self.error = error
        self.environment = SimpleNamespace(env=self, read=log.environment.read, damaged=log.environment.damaged)
        self.reader = log.reader

    def copyfd(self, fd: int, compact: bool, txn: lmdb.Transaction) -> None:
        raise self.error


@pytest.fixture
def log(tmp_path: Path) -> Iterator[LmdbLog]:
    with LmdbLog(tmp_path / "store") as opened:
        yield opened


@pytest.mark.parametrize(("error", "kind", "says"), [
    (lmdb.DiskError("mdb_env_copyfd3: No space left on device"), StorageFullError, "is full"),
    (lmdb.Error("mdb_env_copyfd3: Disk quota exceeded"), StorageFullError, "is full"),
    (lmdb.CorruptedError("mdb_env_copyfd3: MDB_CORRUPTED"), StoreCorruptError, "damaged"),
    (lmdb.Error("mdb_env_copyfd3: Input/output error"), BackupError, "cannot copy"),
])
def test_a_copy_lmdb_fails_raises_the_event_store_s_error_naming_the_output_and_leaves_no_file(
    log: LmdbLog, tmp_path: Path, error: lmdb.Error, kind: type[Exception], says: str,
) -> None:
    output = tmp_path / "out" / "b.chronograph"
    output.parent.mkdir()
    with pytest.raises(kind, match=says) as raised:
        write_backup(FailingCopy(log, error), output)  # type: ignore[arg-type]
    assert str(output) in str(raised.value) or kind is StoreCorruptError
    assert list(output.parent.iterdir()) == []  # no backup, no partial file
