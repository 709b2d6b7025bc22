"""A damaged store is reported, never served: flipped bytes, a truncated file, a failing disk."""

from __future__ import annotations

import os
from pathlib import Path

import lmdb
import pytest
from chronograph.eventstore import (
    EntityCreated,
    LmdbLog,
    StorageFullError,
    StoreCorruptError,
    StreamWrite,
)
from chronograph.eventstore.keys import pack_u64
from chronograph.eventstore.lmdb.env import LmdbEnv


def write(path: Path, marker: str) -> None:
    with LmdbLog(path) as log:
        for i in range(20):
            name = marker if i == 7 else f"entity number {i}"
            log.append([StreamWrite(f"s{i}", [EntityCreated(workspace="w", name=name, entity_type="t")])], actor="t")


def flip(path: Path, marker: str) -> None:
    """Flip one byte of `marker` wherever it lies (old copies of a page stay in free pages)."""
    data = (path / "data.mdb").read_bytes()
    damaged = marker[:3] + chr(ord(marker[3]) ^ 0x20) + marker[4:]  # still valid msgpack: another name
    (path / "data.mdb").write_bytes(data.replace(marker.encode(), damaged.encode()))


def test_a_flipped_byte_in_an_event_is_reported_with_its_position_never_served(store_path: Path) -> None:
    write(store_path, "Ada Lovelace")
    flip(store_path, "Ada Lovelace")
    with LmdbLog(store_path) as log, log.read() as reader:
        with pytest.raises(StoreCorruptError, match="position 8 does not match its checksum"):
            reader.get(8)
        with pytest.raises(StoreCorruptError, match="position 8"):
            list(reader.all())
        assert reader.get(9) is not None
        assert list(reader.verify()) == [8]


def test_a_scan_for_a_name_finds_a_flipped_byte_where_the_name_was_and_says_so(store_path: Path) -> None:
    write(store_path, "Ada Lovelace")
    flip(store_path, "Ada Lovelace")
    with LmdbLog(store_path) as log, log.read() as reader:
        for needle in (b"Ada Lovelace", b"entity number 3"):  # not served as "no event names her"
            with pytest.raises(StoreCorruptError, match="position 8 does not match its checksum"):
                list(reader.mentions([needle]))
        assert [e.position for e in reader.mentions([b"entity number 19"], 9)] == [20]  # past the damage


def test_a_search_by_time_that_reads_a_damaged_event_says_so(store_path: Path) -> None:
    write(store_path, "Ada Lovelace")
    with LmdbLog(store_path) as log:
        with log.read() as reader:
            middle = reader.get(10)
        assert middle is not None
        with log.environment.env.begin(write=True) as txn:  # position 10's time, one byte flipped
            value = bytearray(txn.get(pack_u64(10), db=log.dbs.log))
            at = bytes(value).index(middle.recorded_at.to_bytes(8, "big")) + 7
            value[at] ^= 0x01
            txn.put(pack_u64(10), bytes(value), db=log.dbs.log)
        with log.read() as reader, pytest.raises(StoreCorruptError, match="position 10 does not match its checksum"):
            reader.position_at(middle.recorded_at)


def test_a_truncated_data_file_is_refused_before_it_is_mapped(store_path: Path) -> None:
    write(store_path, "Ada Lovelace")
    with lmdb.open(str(store_path), readonly=True, lock=False) as env:  # its pages, not the zeros kept past them
        size = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    os.truncate(store_path / "data.mdb", size // 2)
    with pytest.raises(StoreCorruptError, match="truncated"):
        LmdbLog(store_path)


def test_a_data_file_cut_inside_its_meta_pages_is_refused(store_path: Path) -> None:
    write(store_path, "Ada Lovelace")
    os.truncate(store_path / "data.mdb", 100)
    with pytest.raises(StoreCorruptError):
        LmdbLog(store_path)


def test_a_commit_the_disk_refuses_with_an_io_error_is_a_storage_error(store_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    log = LmdbLog(store_path)
    real = LmdbEnv._begin_write

    class Failing:
        def __init__(self, txn: lmdb.Transaction) -> None:
            self.txn = txn

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self.txn, name)

        def commit(self) -> None:
            self.txn.abort()
            raise lmdb.Error("mdb_txn_commit: Input/output error")

    monkeypatch.setattr(LmdbEnv, "_begin_write", lambda self: Failing(real(self)))
    try:
        with pytest.raises(StorageFullError, match="full or failing .*nothing was written"):
            log.append([StreamWrite("a", [EntityCreated(workspace="w", name="x", entity_type="t")])], actor="t")
        monkeypatch.setattr(LmdbEnv, "_begin_write", real)
        assert log.head() == 0
    finally:
        log.close()
