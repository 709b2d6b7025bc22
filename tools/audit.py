"""Inspect the audit log: who changed what, when, and in which tool call.

    chronograph audit                                     the newest 50 events, as a table
    chronograph audit --actor claude-ai --since 2026-11-20 --type entity_deleted
    chronograph audit --principal alice                   what the token `alice` wrote over HTTP
    chronograph audit --entity Ada --workspace default    every change to Ada (deleted or not)
    chronograph audit --correlation 3f2a... --json        one tool call, as JSON lines
    chronograph audit --follow                            print new events as other processes write them
    chronograph audit --stats                             counts per actor, type and day

Read-only: safe beside a running server.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

import msgspec
from chronograph.application.core.audit import EVENT_TYPES, AuditEventOut, event_out
from chronograph.application.core.subjects import Subjects
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import OpenStore, open_store
from chronograph.eventstore import Envelope, EventStoreError, LogReader, clock
from chronograph.projections import ProjectionError, Views
from chronograph.tools.common.parsing import add_store_argument, script_main
from chronograph.tools.common.terminal import print_rows

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `audit`."""
    add_store_argument(parser)
    parser.add_argument("--workspace", help="only this workspace")
    parser.add_argument("--entity", metavar="NAME", help="only changes to this entity (every incarnation)")
    parser.add_argument("--stream", help="only this stream (an entity id, a relation, a context)")
    parser.add_argument("--actor", help="only changes by this actor (the name a client gives itself)")
    parser.add_argument("--principal", metavar="NAME",
                        help="only changes made for this principal (local, or a token's name)")
    parser.add_argument("--type", action="append", dest="types", metavar="TYPE",
                        help="only this event type (repeatable), e.g. entity_deleted")
    parser.add_argument("--correlation", metavar="ID", help="only the changes of one tool call")
    parser.add_argument("--since", metavar="TIME", help="only changes at or after this ISO-8601 time")
    parser.add_argument("--until", metavar="TIME", help="only changes at or before this ISO-8601 time")
    parser.add_argument("--from-position", type=int, default=1, metavar="N", help="only positions >= N")
    parser.add_argument("--to-position", type=int, metavar="N", help="only positions <= N")
    parser.add_argument("--limit", type=int, default=50, help="at most this many events (default 50; 0: all)")
    parser.add_argument("--oldest-first", action="store_true", help="oldest first (default: newest first)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="JSON lines, one event per line")
    output.add_argument("--stats", action="store_true", help="counts per actor, event type and day")
    parser.add_argument("--follow", action="store_true", help="then keep printing new events (Ctrl-C stops)")
    parser.add_argument("--interval", type=float, default=0.5, help=argparse.SUPPRESS)


class Filter:
    """The event filters of one `audit` run."""

    def __init__(self, args: argparse.Namespace, views: Views | None, subjects: Subjects) -> None:
        self.args = args
        self.subjects = subjects
        self.types = set(args.types or ())
        self.streams: set[str] | None = None
        if args.stream:
            self.streams = {args.stream}
        if args.entity and views is not None:
            with views.read() as graph:
                found = set(graph.name_streams(args.workspace or "default", args.entity))
            self.streams = found if self.streams is None else self.streams & found

    def __call__(self, envelope: Envelope) -> bool:
        args = self.args
        if self.streams is not None and envelope.stream not in self.streams:
            return False
        if self.types and envelope.type not in self.types:
            return False
        if args.actor and envelope.actor != args.actor:
            return False
        if args.principal and envelope.principal != args.principal:
            return False
        if args.correlation and envelope.correlation_id != args.correlation:
            return False
        return not args.workspace or self.subjects.workspace(envelope) == args.workspace


def _selected(reader: LogReader, args: argparse.Namespace, keep: Filter) -> Iterator[Envelope]:
    low, high = max(args.from_position, 1), reader.head()
    if args.to_position is not None:
        high = min(high, args.to_position)
    if args.since:
        low = max(low, reader.position_at(clock.parse_iso(args.since) - 1) + 1)
    if args.until:
        high = min(high, reader.position_at(clock.parse_iso(args.until)))
    if low > high:
        return
    if keep.streams is not None:  # read only those streams
        found = [e for s in keep.streams for e in reader.stream(s) if low <= e.position <= high]
        ordered = sorted(found, key=lambda e: e.position, reverse=not args.oldest_first)
        yield from (e for e in ordered if keep(e))
        return
    batches = reader.batches(low, high, 512) if args.oldest_first else reader.batches_backward(high, low)
    for batch in batches:
        yield from (e for e in batch if keep(e))


def run(args: argparse.Namespace) -> int:
    """Carry out `audit`; return the exit code."""
    unknown = [name for name in args.types or () if name not in EVENT_TYPES]
    if unknown:
        print(f"chronograph audit: --type {unknown[0]!r} is not an event type; the types are: "
              f"{', '.join(EVENT_TYPES)}", file=sys.stderr)
        return 2
    for flag, text in (("--since", args.since), ("--until", args.until)):
        if text:
            try:
                clock.parse_iso(text)
            except ValueError as error:
                print(f"chronograph audit: {flag}: {error}", file=sys.stderr)
                return 2
    try:
        store = open_store(resolve_store(args.store), readonly=True, cache=args.cache, create=False)
        try:
            return _run(store, args)
        finally:
            store.log.close()
            if store.cache is not None:
                store.cache.close()
    except (EventStoreError, ProjectionError, ValueError) as error:
        print(f"chronograph audit: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0


def _run(store: OpenStore, args: argparse.Namespace) -> int:
    views = Views(store.log, cache=store.cache) if args.entity else None
    with store.log.read() as reader:
        subjects = Subjects(reader)
        keep = Filter(args, views, subjects)
        events: list[Envelope] = []
        for envelope in _selected(reader, args, keep):
            events.append(envelope)
            if args.limit and len(events) == args.limit and not args.stats:
                break
        rows = [event_out(e, *subjects.of(e)) for e in events]
        head = reader.head()
    if args.stats:
        _stats(rows)
    elif args.json:
        for row in rows:
            _print_json(row)
    else:
        print_rows(["position", "recorded", "actor", "principal", "type", "workspace", "subject", "version", "call"],
                   [[r.position, r.recorded_at, r.actor, r.principal, r.type, r.workspace, r.subject, r.version,
                     str(r.correlation_id)[:12]] for r in rows], title="events")
    if args.follow:
        _follow(store, views, args, head)
    return 0


def _print_json(row: msgspec.Struct) -> None:
    print(msgspec.json.encode(row).decode(), flush=True)


def _follow(store: OpenStore, views: Views | None, args: argparse.Namespace, seen: int) -> None:
    while True:
        time.sleep(args.interval)
        with store.log.read() as reader:
            head = reader.head()
            if head <= seen:
                continue
            subjects = Subjects(reader)
            keep = Filter(args, views, subjects)  # anew: a name may have been re-created
            for batch in reader.batches(seen + 1, head):
                for envelope in batch:
                    if keep(envelope):
                        row = event_out(envelope, *subjects.of(envelope))
                        if args.json:
                            _print_json(row)
                        else:
                            print(f"{row.position}  {row.recorded_at}  {row.actor}  {row.principal}  "
                                  f"{row.type}  {row.workspace}  {row.subject}", flush=True)
            seen = head


def _stats(rows: Sequence[AuditEventOut]) -> None:
    for title, key in (("per actor", "actor"), ("per principal", "principal"), ("per event type", "type"),
                       ("per day", "day")):
        counts = Counter(r.recorded_at[:10] if key == "day" else getattr(r, key) for r in rows)
        print_rows([key, "events"], sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])), title=title)


def main(argv: list[str] | None = None) -> int:
    """`python tools/audit.py ...` (see the module docstring)."""
    return script_main("chronograph audit", __doc__, add_arguments, run, argv)

if __name__ == "__main__":
    raise SystemExit(main())
