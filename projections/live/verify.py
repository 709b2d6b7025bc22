"""Verification: the log against its checksums, its index of streams against its events, then
the live views against the log folded afresh, at the same position.

Works on a read-only store while a server writes: both sides come from one snapshot.
"""

from __future__ import annotations

from itertools import islice

import msgspec
from chronograph.projections.live.catchup import Progress
from chronograph.projections.live.views import Views
from chronograph.projections.sealed import sound
from chronograph.projections.states.bulkload import rows
from chronograph.projections.states.dictstate import DictState, paused_gc
from chronograph.projections.tables import entries

__all__ = ["damaged_event", "verify"]


def verify(views: Views, progress: Progress | None = None, shown: int = 50) -> list[str]:
    """The damaged events of the log, else where its stream index disagrees with them, else the
    differences between the live views and a fresh fold of the log (none: the store is whole and
    the views agree with it)."""
    with views.snapshot() as (live, log):
        damaged = []
        for position in log.verify(1, live.position):
            damaged.append(damaged_event(position))
        if progress is not None:
            progress("checksums", live.position, live.position)
        if damaged:
            return _first(damaged, shown)
        unindexed = list(islice(log.index_problems(), shown + 1))
        if progress is not None:
            progress("index", live.position, live.position)
        if unindexed:
            return _first(unindexed, shown)
        state = DictState()
        with paused_gc():
            for batch in log.batches(1, live.position, batch_size=4096, slim=True):
                state.fold(batch)
                if progress is not None:
                    progress("fold", state.position, live.position)
        state.position = live.position
        differences = []
        for table, expected in rows(state).items():
            actual = dict(entries(live.txn, getattr(live.tables, table)))
            wanted = dict(expected)
            for key in sorted(wanted.keys() | actual.keys()):
                have, want = actual.get(key), wanted.get(key)
                if have == want:
                    continue
                if have is None:
                    differences.append(f"{table}: {_show(key)} is missing; the log says {_show(want)}")
                elif want is None:
                    differences.append(f"{table}: {_show(key)} should not exist; it holds {_show(have)}")
                else:
                    differences.append(f"{table}: {_show(key)} holds {_show(have)}; the log says {_show(want)}")
    return _first(differences, shown)


def damaged_event(position: int) -> str:
    """What `verify` says of an event whose bytes are damaged."""
    return f"log: the event at position {position} is damaged (its bytes fail their checksum or cannot be read)"


def _first(lines: list[str], shown: int) -> list[str]:
    if len(lines) > shown:
        return [*lines[:shown], f"... and {len(lines) - shown} more"]
    return lines


def _show(data: bytes | None) -> str:
    if data is None:
        return "nothing"
    try:
        if not sound(data):
            raise ValueError("it fails its checksum")
        return msgspec.json.encode(msgspec.msgpack.decode(data)[:-1]).decode()[:200]  # the CRC left out
    except (msgspec.DecodeError, TypeError, ValueError):  # damaged, or a stream key
        return data[:64].hex() + ("..." if len(data) > 64 else "")
