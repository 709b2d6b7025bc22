"""Giving back the pages of a store's map a job read: they leave the RSS, the data stays."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from chronograph.eventstore import EntityCreated, LmdbLog, StreamWrite
from chronograph.eventstore.lmdb import resident

STATUS = Path("/proc/self/status")


def mapped_kib() -> int:
    """The file-backed pages this process has resident (KiB)."""
    fields = dict(line.split(":", 1) for line in STATUS.read_text().splitlines())
    return int(fields["RssFile"].split()[0])


def fill(store: LmdbLog, entities: int) -> None:
    """`entities` events of 2 KB each: about 2 MB of log per thousand."""
    text = "x" * 2000
    for start in range(0, entities, 1000):
        store.append([StreamWrite(f"s{i}", [EntityCreated(workspace="w", name=f"n{i}", entity_type="t",
                                                           observations=(text,))])
                      for i in range(start, start + 1000)], actor="t")


@pytest.mark.skipif(not STATUS.exists(), reason="needs /proc")
def test_the_pages_a_scan_read_leave_the_resident_set_and_read_back_the_same(store: LmdbLog) -> None:
    fill(store, 4000)
    resident.release()
    before = [e.event for e in store.read_all()]  # reads every page of the log
    read = mapped_kib()
    assert resident.release() > 0
    assert read - mapped_kib() >= 4 * 1024  # the log's 8 MB, less what the kernel reclaimed itself
    assert [e.event for e in store.read_all()] == before


@pytest.mark.skipif(not STATUS.exists(), reason="needs /proc")
def test_pages_are_kept_while_they_stay_under_the_limit_given(store: LmdbLog) -> None:
    store.append([StreamWrite("s", [EntityCreated(workspace="w", name="n", entity_type="t")])], actor="t")
    list(store.read_all())
    assert resident.release(above=resident.mapped() + (64 << 20)) == 0
    assert resident.release() > 0


@pytest.mark.skipif(not STATUS.exists(), reason="needs /proc")
def test_a_bounded_block_has_the_pages_it_reads_given_back_while_it_reads(store: LmdbLog) -> None:
    fill(store, 8000)
    resident.release()
    floor = mapped_kib()  # what no release gives back: the libraries' pages, and in a worker, more
    before = [e.event for e in store.read_all()]
    read = mapped_kib() - floor  # the log's 16 MB, read in one go
    resident.release()
    with resident.bounded(above=1 << 20, every=0.001):
        seen = [e.event for e in store.read_all()]
        deadline = time.monotonic() + 10
        while mapped_kib() - floor >= read / 2 and time.monotonic() < deadline:  # the watcher, not this thread
            time.sleep(0.01)
        given_back = mapped_kib() - floor < read / 2
    assert seen == before
    assert read >= 8 * 1024 and given_back
