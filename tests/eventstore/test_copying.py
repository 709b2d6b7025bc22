"""Copying a log: a batch at a time, events and idempotency records alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from chronograph.eventstore import EntityCreated, LmdbLog, StreamWrite, copying
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
