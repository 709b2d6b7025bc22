"""Checksums of the stored envelopes, kept in whole pages of digests at the end of their B-tree."""

from __future__ import annotations

from chronograph.eventstore import EntityCreated, LmdbLog, StreamWrite, checksums
from chronograph.eventstore.keys import pack_u64


def append(log: LmdbLog, count: int) -> None:
    log.append([StreamWrite(f"s{i}", [EntityCreated(workspace="w", name=f"n{i}", entity_type="t")])
                for i in range(count)], actor="t")


def test_a_page_of_digests_is_written_whole_and_positions_past_the_head_read_as_none(store: LmdbLog) -> None:
    append(store, 300)
    with store.read() as reader:
        pages = [(bytes(k), len(v)) for k, v in reader.txn.cursor(store.dbs.sums)]
        assert pages == [(pack_u64(0), 4 * checksums.PAGE), (pack_u64(1), 4 * checksums.PAGE)]
        digests = checksums.read(reader.txn, store.dbs.sums, 250, 60)
    assert all(digests[:51]) and digests[51:] == [0] * 9  # 300 is the head
    assert list(store.read_all())[-1].position == 300


def test_a_page_an_older_version_grew_a_digest_at_a_time_is_made_whole_and_kept(store: LmdbLog) -> None:
    append(store, 3)
    with store.environment.env.begin(write=True) as txn:  # as an older version left it after two events
        before = checksums.read(txn, store.dbs.sums, 1, 3)
        txn.put(pack_u64(0), bytes(txn.get(pack_u64(0), db=store.dbs.sums))[:12], db=store.dbs.sums)
    append(store, 2)
    with store.read() as reader:
        assert len(reader.txn.get(pack_u64(0), db=store.dbs.sums)) == 4 * checksums.PAGE
        after = checksums.read(reader.txn, store.dbs.sums, 1, 5)
        assert after[:2] == before[:2] and after[2] == 0 and all(after[3:])  # 3: none recorded
        assert list(reader.verify()) == []
    assert len(list(store.read_all())) == 5
