"""A store in one file: a consistent, compacted copy of its LMDB environment, sealed.

    CHRONOGRAPH BACKUP 1\\n
    {"head": N, "recordedAt": "...", "bytes": B, ...}\\n      one JSON line
    <B bytes: the environment, compacted>                        mdb_env_copyfd
    END <B as 16 hex digits> <BLAKE2b-256 of the B bytes>\\n    fixed size

The copy is taken in one read transaction, so it is the store as of one position while a
server keeps writing (readers never block writers in LMDB). A file that is cut short,
altered or not a backup at all is refused before anything is written where it would be
restored; the store it restores is the original byte for byte in what it answers, log,
views and checksums included.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, BinaryIO

from chronograph.eventstore.clock import isoformat
from chronograph.eventstore.errors import StoreCorruptError, StoreOpenError
from chronograph.eventstore.lmdb.log import LmdbLog

__all__ = ["BackupError", "BackupInfo", "read_backup", "restore_backup", "write_backup"]

MAGIC = b"CHRONOGRAPH BACKUP 1\n"
TRAILER = re.compile(rb"END ([0-9a-f]{16}) ([0-9a-f]{64})\n")
TRAILER_BYTES = len(b"END ") + 16 + 1 + 64 + 1
CHUNK = 1 << 20
DATA_FILE = "data.mdb"

BackupInfo = dict[str, Any]
"""What a backup's header says: head, recordedAt, bytes, and what wrote it."""


class BackupError(StoreOpenError):
    """A backup cannot be written or restored (damaged file, occupied target); nothing was written."""


def write_backup(log: LmdbLog, output: Path, *, writer: str = "chronograph") -> BackupInfo:
    """Seal a consistent copy of `log`'s store into `output` (written whole or not at all)."""
    env = log.environment.env
    output = Path(output)
    temporary = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w+b") as file:
            with log.environment.read() as txn:  # one snapshot: the position reported is the one copied
                reader = log.reader(txn)
                head, last = reader.head(), reader.last_recorded_at()
                file.write(MAGIC)
                header_at = file.tell()
                file.write(b" " * 512 + b"\n")  # the header line, filled in once the size is known
                start = file.tell()
                file.flush()
                env.copyfd(file.fileno(), compact=True, txn=txn)
            file.seek(0, os.SEEK_END)
            size = file.tell() - start
            digest = _digest(file, start, size)
            info = {"head": head, "recordedAt": isoformat(last) if last else None, "bytes": size, "writer": writer}
            line = json.dumps(info).encode()
            if len(line) > 512:
                raise BackupError("the backup header is too long")
            file.seek(header_at)
            file.write(line.ljust(512) + b"\n")
            file.seek(0, os.SEEK_END)
            file.write(b"END %016x %s\n" % (size, digest.encode()))
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(output)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return info


def _digest(file: BinaryIO, start: int, size: int) -> str:
    hasher = hashlib.blake2b(digest_size=32)
    file.seek(start)
    remaining = size
    while remaining:
        chunk = file.read(min(CHUNK, remaining))
        if not chunk:
            raise BackupError("the backup ended before its data did")
        hasher.update(chunk)
        remaining -= len(chunk)
    return hasher.hexdigest()


def read_backup(path: Path) -> tuple[BackupInfo, int]:
    """The header of the backup at `path` and where its data starts, after checking it whole.

    Raises:
        BackupError: If it is not a backup, is cut short, or its data does not match its seal.
    """
    try:
        file = Path(path).open("rb")
    except OSError as error:
        raise BackupError(f"cannot read {path}: {error.strerror}") from None
    with file:
        if file.read(len(MAGIC)) != MAGIC:
            raise BackupError(f"{path} is not a Chronograph backup")
        try:
            info = json.loads(file.readline(600))
        except ValueError:
            raise BackupError(f"{path}: its header is damaged") from None
        start = file.tell()
        total = os.fstat(file.fileno()).st_size
        size = info.get("bytes") if isinstance(info, dict) else None
        if not isinstance(size, int) or total != start + size + TRAILER_BYTES:
            raise BackupError(f"{path} is cut short or padded ({total:,} bytes; its header says "
                              f"{start + (size or 0) + TRAILER_BYTES:,}): it cannot be restored")
        file.seek(start + size)
        sealed = TRAILER.fullmatch(file.read(TRAILER_BYTES))
        if sealed is None or int(sealed.group(1), 16) != size:
            raise BackupError(f"{path}: its seal is missing or damaged")
        if _digest(file, start, size) != sealed.group(2).decode():
            raise BackupError(f"{path}: its data does not match its seal (damaged in storage or transit)")
    return info, start


def restore_backup(path: Path, store: Path, *, replace: bool = False) -> BackupInfo:
    """Restore the backup at `path` as the store at `store` and check every event's checksum.

    Raises:
        BackupError: A damaged backup, or a `store` that holds anything (unless `replace`,
            which keeps the old one beside it as `<store>.replaced-<n>`); nothing was written.
        StoreCorruptError: If the restored log fails its checksums (it is removed again).
    """
    info, start = read_backup(path)
    store = Path(store)
    occupied = store.exists() and (not store.is_dir() or any(store.iterdir()))
    if occupied and not replace:
        raise BackupError(f"{store} is not empty; restore into a new folder, or pass --replace to keep the "
                          "current store beside it and restore in its place")
    store.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{store.name}.restoring-", dir=store.parent))
    try:
        with Path(path).open("rb") as source, (staging / DATA_FILE).open("wb") as target:
            source.seek(start)
            remaining = info["bytes"]
            while remaining:
                chunk = source.read(min(CHUNK, remaining))
                target.write(chunk)
                remaining -= len(chunk)
            target.flush()
            os.fsync(target.fileno())
        with LmdbLog(staging, create=False) as restored:
            with restored.read() as reader:
                damaged = next(iter(reader.verify()), None)
                head = reader.head()
            if damaged is not None or head != info["head"]:
                raise StoreCorruptError(f"the restored log fails its checks (position {damaged}, head {head} of "
                                        f"{info['head']})")
        if occupied:
            aside = _free_name(store)
            store.rename(aside)
            info["replaced"] = str(aside)
        elif store.exists():
            store.rmdir()
        staging.rename(store)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return info


def _free_name(store: Path) -> Path:
    n = 1
    while (candidate := store.with_name(f"{store.name}.replaced-{n}")).exists():
        n += 1
    return candidate
