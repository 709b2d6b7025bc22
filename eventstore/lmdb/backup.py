"""A store in one file: a consistent, compacted copy of its LMDB environment, sealed.

    CHRONOGRAPH BACKUP 1\\n
    {"head": N, "recordedAt": "...", "bytes": B, ...}\\n      one JSON line (padded)
    <B bytes: the environment, compacted>                        mdb_env_copyfd
    END <B as 16 hex digits> <the seal: 64 hex digits>\\n        fixed size

The copy is taken in one read transaction, so it is the store as of one position while a
server keeps writing (readers never block writers in LMDB). The seal is BLAKE2b-256 of the
B bytes: it detects damage (a bad disk, a cut-short copy), not forgery, since anyone can
compute it again. A backup sealed with a key (`key_of(key file)`; the header says
`"seal": "keyed"` and the key's fingerprint) carries keyed BLAKE2b of everything before
the seal, header included: only a holder of the key can make one that verifies, so a
backup that travelled can be restored knowing nobody altered it. A file that is cut
short, altered or not a backup at all is refused before anything is written where it
would be restored (see `staging.py` for what restoring checks after that).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path
from typing import Any, BinaryIO

import lmdb
from chronograph.eventstore.clock import isoformat
from chronograph.eventstore.errors import EventStoreError, StorageFullError, StoreOpenError
from chronograph.eventstore.files import guarded_file
from chronograph.eventstore.lmdb.env import DAMAGE
from chronograph.eventstore.lmdb.log import LmdbLog

__all__ = ["BackupError", "BackupInfo", "key_of", "read_backup", "write_backup"]

MAGIC = b"CHRONOGRAPH BACKUP 1\n"
TRAILER = re.compile(rb"END ([0-9a-f]{16}) ([0-9a-f]{64})\n")
TRAILER_BYTES = len(b"END ") + 16 + 1 + 64 + 1
CHUNK = 1 << 20
HEADER_BYTES = 512
KEYED = "keyed"
"""The header's `seal` of a backup sealed with a key (no `seal`: the unkeyed digest of the data)."""
_FULL_DISK = ("No space left", "Disk quota exceeded")
"""What LMDB says when the file it copies into cannot grow (ENOSPC is `DiskError`; EDQUOT is not)."""
MIN_KEY_BYTES = 16
MAX_KEY_BYTES = 1 << 16

BackupInfo = dict[str, Any]
"""What a backup's header says: head, recordedAt, bytes, what wrote it (and the seal's key)."""


class BackupError(StoreOpenError):
    """A backup cannot be written or restored (damaged file, wrong key, occupied target); nothing was written."""


def key_of(path: Path) -> bytes:
    """The sealing key kept in the file at `path` (any bytes, at least 16: `head -c 32 /dev/urandom`).

    Raises:
        BackupError: If it cannot be read or is too short to be a secret.
    """
    try:
        with Path(path).open("rb") as file:
            secret = file.read(MAX_KEY_BYTES + 1)  # /dev/zero is no key either
    except OSError as error:
        raise BackupError(f"cannot read the key file {path}: {error.strerror}") from None
    if len(secret) > MAX_KEY_BYTES:
        raise BackupError(f"the key file {path} holds over {MAX_KEY_BYTES:,} bytes; a key is a short secret")
    if len(secret.strip()) < MIN_KEY_BYTES:
        raise BackupError(f"the key file {path} holds {len(secret.strip())} bytes; a key is at least {MIN_KEY_BYTES} "
                          "(make one with: head -c 32 /dev/urandom > KEYFILE)")
    return hashlib.blake2b(secret, digest_size=32, person=b"chronograph-key").digest()


def fingerprint(key: bytes) -> str:
    """What a backup's header says about its key: enough to tell keys apart, nothing of the key."""
    return hashlib.blake2b(key, digest_size=8, person=b"chronograph-kid").hexdigest()


def write_backup(log: LmdbLog, output: Path, *, writer: str = "chronograph", overwrite: bool = False,
                 key: bytes | None = None, flag: str = "--force") -> BackupInfo:
    """Seal a consistent copy of `log`'s store into `output`, written whole or not at all
    through the guarded writer (never into a store, through a link, or over a file unless
    `overwrite`); sealed with `key` when given.

    Raises:
        WriteRefused: If `output` may not be written (the message names `flag`).
        StorageFullError: If the disk holding `output` is full; nothing is left of it.
        StoreCorruptError: If LMDB finds the store's pages damaged while it copies them.
        BackupError: If LMDB cannot copy the store for another reason.
        OSError: If the file system refuses the write; nothing is left of it.
    """
    env = log.environment.env
    with guarded_file(output, overwrite=overwrite, flag=flag, mode=0o600) as file:
        with log.environment.read() as txn:  # one snapshot: the position reported is the one copied
            reader = log.reader(txn)
            head, last = reader.head(), reader.last_recorded_at()
            file.write(MAGIC)
            header_at = file.tell()
            file.write(b" " * HEADER_BYTES + b"\n")  # the header line, filled in once the size is known
            start = file.tell()
            file.flush()
            try:
                env.copyfd(file.fileno(), compact=True, txn=txn)
            except lmdb.Error as error:
                raise _copy_failed(error, output, log) from None
        file.seek(0, os.SEEK_END)
        size = file.tell() - start
        info: BackupInfo = {"head": head, "recordedAt": isoformat(last) if last else None, "bytes": size,
                            "writer": writer}
        if key is not None:
            info |= {"seal": KEYED, "key": fingerprint(key)}
        line = json.dumps(info).encode()
        if len(line) > HEADER_BYTES:
            raise BackupError("the backup header is too long")
        file.seek(header_at)
        file.write(line.ljust(HEADER_BYTES) + b"\n")
        file.flush()
        seal = _seal(file, start, size, key)
        file.seek(0, os.SEEK_END)
        file.write(b"END %016x %s\n" % (size, seal.encode()))
    return info


def _copy_failed(error: lmdb.Error, output: Path, log: LmdbLog) -> EventStoreError:
    """What LMDB's failure to copy the store into `output` means (the guarded writer then removes
    what was written of it)."""
    if isinstance(error, lmdb.DiskError) or any(sign in str(error) for sign in _FULL_DISK):
        return StorageFullError(f"the disk holding {output} is full ({error}); no backup was written. Free some "
                                "space and retry")
    if isinstance(error, DAMAGE):
        return log.environment.damaged(error)
    return BackupError(f"cannot copy the store into {output} (LMDB: {error}); no backup was written")


def _seal(file: BinaryIO, start: int, size: int, key: bytes | None) -> str:
    """Unkeyed: BLAKE2b-256 of the data. Keyed: keyed BLAKE2b-256 of the file up to the seal."""
    hasher = hashlib.blake2b(digest_size=32) if key is None else hashlib.blake2b(digest_size=32, key=key)
    first = start if key is None else 0
    file.seek(first)
    remaining = start + size - first
    while remaining:
        chunk = file.read(min(CHUNK, remaining))
        if not chunk:
            raise BackupError("the backup ended before its data did")
        hasher.update(chunk)
        remaining -= len(chunk)
    return hasher.hexdigest()


def read_backup(path: Path, key: bytes | None = None) -> tuple[BackupInfo, int]:
    """The header of the backup at `path` and where its data starts, after checking it whole,
    against `key` when given (a keyed seal is then required).

    Raises:
        BackupError: If it is not a backup, is cut short, its data does not match its seal, it
            is sealed with a key that was not given (or another one), or a key was given and
            it has no keyed seal.
    """
    try:
        file = Path(path).open("rb")
    except OSError as error:
        raise BackupError(f"cannot read {path}: {error.strerror}") from None
    with file:
        if file.read(len(MAGIC)) != MAGIC:
            raise BackupError(f"{path} is not a Chronograph backup")
        try:
            info = json.loads(file.readline(HEADER_BYTES + 88))
        except ValueError:
            raise BackupError(f"{path}: its header is damaged") from None
        start = file.tell()
        total = os.fstat(file.fileno()).st_size
        size = info.get("bytes") if isinstance(info, dict) else None
        if not isinstance(size, int) or size < 0 or total != start + size + TRAILER_BYTES:
            raise BackupError(f"{path} is cut short or padded ({total:,} bytes; its header says "
                              f"{start + (size if isinstance(size, int) else 0) + TRAILER_BYTES:,}): it cannot be "
                              "restored")
        _check_key(path, info, key)
        file.seek(start + size)
        sealed = TRAILER.fullmatch(file.read(TRAILER_BYTES))
        if sealed is None or int(sealed.group(1), 16) != size:
            raise BackupError(f"{path}: its seal is missing or damaged")
        if not hmac.compare_digest(_seal(file, start, size, key), sealed.group(2).decode()):
            what = "was altered or damaged (it does not match its keyed seal)" if key else \
                "does not match its seal (damaged in storage or transit)"
            raise BackupError(f"{path}: its data {what}")
    return info, start


def _check_key(path: Path, info: BackupInfo, key: bytes | None) -> None:
    keyed = info.get("seal") == KEYED
    if keyed and key is None:
        raise BackupError(f"{path} is sealed with a key (fingerprint {info.get('key')}); pass --key-file with it")
    if not keyed and key is not None:
        raise BackupError(f"{path} has no keyed seal, so it cannot be told apart from a forgery; restore it without "
                          "--key-file only if you trust where it came from")
    if keyed and key is not None and info.get("key") != fingerprint(key):
        raise BackupError(f"{path} is sealed with another key (fingerprint {info.get('key')}, yours "
                          f"{fingerprint(key)})")
