"""Copying a log: a batch at a time, events and idempotency records alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chronograph.eventstore import EntityCreated, LmdbLog, StoreCorruptError, StreamWrite, copying
from chronograph.eventstore.copying import copy_log, verify_copy


def test_a_copy_holds_one_batch_of_events_and_of_idempotency_records_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(copying, "BATCH", 4)
    with LmdbLog(tmp_path / "source") as source, LmdbLog(tmp_path / "target") as target:
        for i in range(11):
            source.append([StreamWrite(f"s{i}", [EntityCreated(workspace="w", name=f"n{i}", entity_type="t")])],
                          actor="t", idempotency_key=f"key-{i}")
        held: list[int] = []
        transaction = target.transaction

        def counted(txn: Any) -> Any:
            tx = transaction(txn)
            restore, records = tx.restore, tx.restore_records
            tx.restore = lambda envelopes, stored=None: (held.append(len(envelopes)), restore(envelopes, stored))[1]
            tx.restore_records = lambda rows, erasures: (held.append(len(rows)), records(rows, erasures))[1]
            return tx

        monkeypatch.setattr(target, "transaction", counted)
        assert copy_log(source, target) == 11
        assert max(held) <= 4 and sum(held) == 22
        assert verify_copy(source, target) == []


@pytest.mark.parametrize("damaged", ["n1-middle", "n2-newest"])
def test_a_damaged_event_is_never_copied_under_a_new_checksum(tmp_path: Path, damaged: str) -> None:
    with LmdbLog(tmp_path / "source") as source:
        for name in ("n0-first", "n1-middle", "n2-newest"):
            source.append([StreamWrite(name, [EntityCreated(workspace="w", name=name, entity_type="t")])], actor="t")
    data = (tmp_path / "source" / "data.mdb").read_bytes()
    (tmp_path / "source" / "data.mdb").write_bytes(data.replace(damaged.encode(), damaged.upper().encode()))
    with pytest.raises(StoreCorruptError, match=f"position {2 if damaged == 'n1-middle' else 3} does not match"):
        with LmdbLog(tmp_path / "source", readonly=True) as source, LmdbLog(tmp_path / "target") as target:
            copy_log(source, target)
    if damaged == "n2-newest":  # the source refused to open: nothing was begun
        assert not (tmp_path / "target").exists()
        return
    with LmdbLog(tmp_path / "target", readonly=True) as target:
        assert target.head() == 0  # the batch that held it was not written
