"""Benchmark the event log against the floor LMDB itself sets, all in one run on one disk.

    python bench/bench_eventstore.py [--events 1000000] [--rounds 5] [--json FILE]

(a) raw LMDB synchronous single-put commits/s: the fsync floor;
(a3) raw LMDB synchronous commits that put one row in each of the three B-trees an append
     writes (log, stream index, stream heads): the floor for our format;
(b) our durable single-event appends/s, with the expected-version check;
(c) events/s appended in durable batches of 100 and of 1000;
(d) events/s read back and decoded with `read_all`;
(e) bytes on disk per event.
(a), (a3) and (b) alternate round by round so both see the same disk; medians are reported.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import lmdb
from chronograph.eventstore import (
    EntityCreated,
    Event,
    LmdbLog,
    ObservationsAdded,
    RelationCreated,
    StreamWrite,
)
from report import print_table, write_json

PAYLOAD = b"x" * 160  # about the size of one of our stored envelopes


def sample_event(i: int) -> tuple[str, Event]:
    """A realistic mix: a third new entities, half observations, the rest relations."""
    kind = i % 6
    if kind < 2:
        return f"entity-{i}", EntityCreated(
            workspace="default", name=f"Entity {i}", entity_type="person",
            observations=(f"works on project {i % 97}", "likes coffee"),
        )
    if kind < 5:
        return f"entity-{i - i % 6}", ObservationsAdded(observations=(f"met on day {i}",))
    return f"relation-{i}", RelationCreated(
        workspace="default", source=f"Entity {i - 5}", target=f"Entity {i - 4}",
        relation_type="knows",
    )


def rate(count: int, work: Callable[[], None]) -> float:
    started = time.perf_counter()
    work()
    return count / (time.perf_counter() - started)


def raw_commits(env: lmdb.Environment, start: int, count: int) -> None:
    for i in range(start, start + count):
        with env.begin(write=True) as txn:
            txn.put(i.to_bytes(8, "big"), PAYLOAD, append=True)


def raw_three_tree_commits(env: lmdb.Environment, dbs: list, start: int, count: int) -> None:
    log, streams, heads = dbs
    for i in range(start, start + count):
        stream = f"single-{i}".encode()
        with env.begin(write=True) as txn:
            txn.put(i.to_bytes(8, "big"), PAYLOAD, append=True, db=log)
            txn.put(stream + (1).to_bytes(8, "big"), i.to_bytes(8, "big"), db=streams)
            txn.put(stream, (1).to_bytes(8, "big"), db=heads)


def grow_like_batches(env: lmdb.Environment, dbs: list, head: int) -> None:
    """Untimed: give the three-tree floor as many rows as the batches gave our store."""
    log, streams, heads = dbs
    with env.begin(write=True) as txn:
        last = txn.cursor(db=log)
        start = int.from_bytes(last.key(), "big") + 1 if last.last() else 1
        for i in range(start, head + 1):
            stream = f"batch-{i // 100}".encode()
            txn.put(i.to_bytes(8, "big"), PAYLOAD, append=True, db=log)
            txn.put(stream + i.to_bytes(8, "big"), i.to_bytes(8, "big"), db=streams)
            txn.put(stream, i.to_bytes(8, "big"), db=heads)


def our_appends(store: LmdbLog, start: int, count: int) -> None:
    for i in range(start, start + count):
        stream = f"single-{i}"
        store.append([StreamWrite(stream, [sample_event(i)[1]], expected=0)], actor="bench")


def batched(store: LmdbLog, start: int, count: int, size: int) -> None:
    for base in range(start, start + count, size):
        events = [sample_event(i)[1] for i in range(base, base + size)]
        store.append([StreamWrite(f"batch-{base}", events)], actor="bench")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table; return 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the read test")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per measurement")
    parser.add_argument("--singles", type=int, default=300, help="commits per round in (a), (b)")
    parser.add_argument("--json", type=Path, default=Path("bench-eventstore.json"))
    parser.add_argument("--dir", type=Path, default=None, help="where to put the stores")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        env = lmdb.open(str(root / "raw"), map_size=1 << 30, sync=True, metasync=True)
        env3 = lmdb.open(str(root / "raw3"), map_size=1 << 30, sync=True, metasync=True, max_dbs=4)
        dbs3 = [env3.open_db(name) for name in (b"log", b"streams", b"heads")]
        store = LmdbLog(root / "store", map_size=1 << 30)
        raw, raw3, ours, b100, b1000 = [], [], [], [], []
        for r in range(args.rounds):
            first = r * args.singles
            raw.append(rate(args.singles, lambda f=first: raw_commits(env, f + 1, args.singles)))
            raw3.append(rate(args.singles,
                             lambda f=first: raw_three_tree_commits(env3, dbs3, f + 1, args.singles)))
            ours.append(rate(args.singles, lambda f=first: our_appends(store, f, args.singles)))
            b100.append(rate(10_000, lambda: batched(store, 0, 10_000, 100)))
            b1000.append(rate(20_000, lambda: batched(store, 0, 20_000, 1000)))
            grow_like_batches(env3, dbs3, store.head())
        env.close()
        env3.close()
        store.close()

        big = LmdbLog(root / "big", map_size=1 << 32)
        for base in range(0, args.events, 1000):
            writes = [StreamWrite(s, [e]) for s, e in map(sample_event, range(base, base + 1000))]
            big.append(writes, actor="bench")
        reads = []
        for _ in range(args.rounds):
            reads.append(rate(args.events, lambda: sum(1 for _ in big.read_all())))
        info, stat = big.env.info(), big.env.stat()
        bytes_per_event = (info["last_pgno"] + 1) * stat["psize"] / args.events
        big.close()

    a, a3, b = statistics.median(raw), statistics.median(raw3), statistics.median(ours)
    figures = {
        "a_raw_lmdb_sync_commits_per_s": a,
        "a3_raw_lmdb_three_tree_commits_per_s": a3,
        "b_durable_single_appends_per_s": b,
        "b_over_a": b / a,
        "b_over_a3": b / a3,
        "c_batch_100_events_per_s": statistics.median(b100),
        "c_batch_1000_events_per_s": statistics.median(b1000),
        "d_read_all_events_per_s": statistics.median(reads),
        "e_bytes_on_disk_per_event": bytes_per_event,
        "rounds": args.rounds,
        "events_read": args.events,
    }
    print_table(
        f"event store (medians of {args.rounds} rounds)",
        [
            ("(a) raw LMDB sync single-put commits/s", f"{a:,.0f}", ""),
            ("(b) durable single-event appends/s", f"{b:,.0f}", "b/a >= 0.8"),
            ("    b/a", f"{b / a:.2f}", ""),
            ("(a3) raw LMDB sync commits, three B-trees", f"{a3:,.0f}", ""),
            ("    b/a3", f"{b / a3:.2f}", ""),
            ("(c) batches of 100, events/s", f"{figures['c_batch_100_events_per_s']:,.0f}", ""),
            ("(c) batches of 1000, events/s", f"{figures['c_batch_1000_events_per_s']:,.0f}",
             ">= 200,000"),
            (f"(d) read_all over {args.events:,} events, events/s",
             f"{figures['d_read_all_events_per_s']:,.0f}", ">= 1,000,000"),
            ("(e) bytes on disk per event", f"{bytes_per_event:,.0f}", ""),
        ],
    )
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
