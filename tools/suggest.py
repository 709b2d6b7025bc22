"""Suggest what to clean up in a workspace: likely duplicate entities, repeated observations,
facts a newer one seems to replace. Writes nothing.

    chronograph suggest                          the default workspace, as tables
    chronograph suggest --workspace team --json  one JSON object: {merges, duplicateObservations, possiblyStale}
    chronograph suggest --threshold 0.6          less likely suggestions too (default 0.8)

Act on a suggestion with the tools (merge_entities, delete_observations,
invalidate_observations): each is an event, so each can be audited and undone. Read-only:
safe beside a running server.
"""

from __future__ import annotations

import argparse
import sys

from chronograph.tools.common.parsing import add_store_argument, missing_workspace, positive, workspace_names

__all__ = ["add_arguments", "run"]


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `suggest`."""
    add_store_argument(parser)
    parser.add_argument("--workspace", default="default", help="the workspace to look at (default: default)")
    parser.add_argument("--threshold", type=_share, default=0.8, metavar="0..1",
                        help="only suggestions at least this likely (default: 0.8)")
    parser.add_argument("--limit", type=positive, default=50, metavar="N", help="at most N of each kind (default: 50)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of tables")


def run(args: argparse.Namespace) -> int:
    """Print the suggestions; exit 2 when the store cannot be read."""
    import msgspec  # noqa: PLC0415
    from chronograph.application import Memory  # noqa: PLC0415
    from chronograph.application.core.suggestions import suggest  # noqa: PLC0415
    from chronograph.application.engine.config import resolve_store  # noqa: PLC0415
    from chronograph.eventstore import EventStoreError  # noqa: PLC0415
    from chronograph.projections import ProjectionError  # noqa: PLC0415
    from chronograph.tools.common.terminal import print_rows  # noqa: PLC0415

    store = resolve_store(args.store)
    if not isinstance(store, str) and not (store / "data.mdb").exists():
        print(f"chronograph suggest: no store at {store}", file=sys.stderr)
        return 2
    try:
        memory = Memory(store, readonly=True, cache=args.cache)
    except (EventStoreError, ProjectionError, OSError) as error:
        print(f"chronograph suggest: {error}", file=sys.stderr)
        return 2
    try:
        known = workspace_names(memory)
        missing = missing_workspace(args.workspace, known)
        if missing:
            print(f"chronograph suggest: {missing}", file=sys.stderr)
            return 2
        with memory.timeline.at("suggest") as moment:
            found = suggest(moment.graph, args.workspace, args.threshold, args.limit, moment.log, moment.position)
    finally:
        memory.close()
    if args.json:
        print(msgspec.json.encode(found).decode())
        return 0
    print_rows(("confidence", "entities", "evidence"),
               [(f"{m.confidence:.2f}", " = ".join(m.entities), "; ".join(m.evidence)) for m in found.merges],
               title="Likely the same entity (merge_entities)")
    print_rows(("entity", "observations", "similarity"),
               [(d.entity, " | ".join(d.observations), f"{d.similarity:.2f}") for d in found.duplicate_observations],
               title="Repeated observations (delete_observations)")
    print_rows(("entity", "older", "newer", "confidence"),
               [(s.entity, s.older, s.newer, f"{s.confidence:.2f}") for s in found.possibly_stale],
               title="Possibly stale (invalidate_observations)")
    return 0
