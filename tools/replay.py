"""Time travel over a Chronograph store: the graph as of any moment, what changed, rebuilds.

    chronograph replay --at 2026-11-21T14:00:00Z          the graph then (a table)
    chronograph replay --position 1200 --json             as read_graph JSON: {entities, relations}
    chronograph replay --at ... --entity Ada              one entity then
    chronograph replay --diff 2026-11-20 2026-11-21       created, changed and deleted between two moments
    chronograph replay --rebuild                          rebuild every view from the log
    chronograph replay --verify                           check the log, its index and the views; exit 1 on a fault

Moments are ISO-8601 timestamps or log positions. Everything but --rebuild opens the
store read-only, so it runs safely beside a server using the same store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.engine.config import EMBEDDINGS_ENV, TERM_WEIGHTS_ENV, resolve_store
from chronograph.application.engine.stores import shown, store_exists
from chronograph.application.errors import ChronographError
from chronograph.application.graphdiff import diff
from chronograph.eventstore import EventStoreError, LmdbLog, StoreCorruptError
from chronograph.eventstore.errors import advised_copy
from chronograph.eventstore.lmdb import resident
from chronograph.projections import ProjectionError, RebuildError, damaged_event, verify, written_position
from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.tools.common.parsing import (
    add_store_argument,
    explain,
    missing_workspace,
    script_main,
    workspace_names,
)
from chronograph.tools.common.progress import Progress
from chronograph.tools.common.startup import keep_startup_state
from chronograph.tools.common.terminal import print_rows

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `replay`."""
    add_store_argument(parser)
    parser.add_argument("--workspace", default="default", help='workspace (default: "default")')
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--at", metavar="TIME", help="the graph as of this ISO-8601 time")
    what.add_argument("--position", metavar="N", type=int, help="the graph as of this log position")
    what.add_argument("--diff", nargs=2, metavar=("A", "B"), help="what changed from moment A to moment B")
    what.add_argument("--rebuild", action="store_true",
                      help="rebuild every view from the log (run alone, it also empties the views other versions "
                           "of Chronograph left in the store), then the embeddings that changed, with the term "
                           "weights unless $CHRONOGRAPH_TERM_WEIGHTS is off")
    what.add_argument("--verify", action="store_true",
                      help="check the log's checksums and its index of streams, fold it afresh and compare with "
                           "the views; exit 1 on any difference")
    parser.add_argument("--entity", metavar="NAME", help="with --at/--position: only this entity")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    """Carry out `replay`; return the exit code."""
    store = resolve_store(args.store)
    try:
        if args.rebuild:
            if not store_exists(store):  # a mistyped path is not a new, empty store to rebuild
                print(f"chronograph replay: there is no store at {shown(store)}", file=sys.stderr)
                return 2
            try:
                return _rebuild(store, args.cache)
            except RebuildError as error:  # (another rebuild swapped in, or a forget in a store folder)
                print(f"chronograph replay: {error}: run the rebuild again", file=sys.stderr)
                return 2
        with Memory(store, readonly=True, cache=args.cache) as memory:
            if args.verify:
                return _verify(memory)
            known = workspace_names(memory)
            missing = missing_workspace(args.workspace, known)
            if missing:
                print(f"chronograph replay: {missing}", file=sys.stderr)
                return 2
            if args.diff:
                return _diff(memory, args)
            return _at(memory, args)
    except (EventStoreError, ProjectionError, ChronographError) as error:
        if args.verify and isinstance(error, StoreCorruptError) and isinstance(store, Path):
            return _verify_damaged(store, error)
        flags = {"asOf": "--diff" if args.diff else "--position" if args.position is not None else "--at",
                 "workspace": "--workspace", "names": "--entity"}
        print(f"chronograph replay: {explain(error, flags)}", file=sys.stderr)
        return 2


def _at(memory: Memory, args: argparse.Namespace) -> int:
    moment: Any = args.position if args.position is not None else args.at
    _say_past_the_end(memory, [moment])
    if args.entity is not None:
        graph = memory.read("open_nodes", {"names": [args.entity], "asOf": moment, "workspace": args.workspace,
                                           "includeMetadata": True})
    else:
        graph = memory.read("read_graph", {"asOf": moment, "workspace": args.workspace, "includeMetadata": True})
    shown = _plain(graph)
    if args.json:
        print(json.dumps(shown, indent=2, ensure_ascii=False))
        return 0
    if args.entity is not None and not shown["entities"]:
        print(f"no entity {args.entity!r} in workspace {args.workspace!r} then")
        return 0
    print_rows(["name", "type", "observations", "version", "updated"], [
        [e["name"], e["entityType"], "; ".join(e["observations"]), e["version"], e["updatedAt"]]
        for e in shown["entities"]
    ], title=f"entities as of {moment}")
    print_rows(["from", "relation", "to", "version"], [
        [r["from"], r["relationType"], r["to"], r["version"]] for r in shown["relations"]
    ], title="relations")
    return 0


def _plain(output: Any) -> dict[str, Any]:
    full = msgspec.to_builtins(output)
    return {"entities": full["entities"], "relations": full["relations"]}


def _say_past_the_end(memory: Memory, moments: list[int | str]) -> None:
    """A note on stderr for each moment past the end of the log (the output stays parseable)."""
    for moment in moments:
        note = memory.timeline.past_the_end(moment)
        if note:
            print(f"chronograph replay: {note}", file=sys.stderr)


def _diff(memory: Memory, args: argparse.Namespace) -> int:
    _say_past_the_end(memory, list(args.diff))
    changes = diff(memory, args.workspace, *(_moment(m) for m in args.diff))
    if args.json:
        print(json.dumps(changes, indent=2, ensure_ascii=False))
        return 0
    rows = [[c["change"], c["kind"], c["what"], c.get("detail", "")] for c in changes]
    print_rows(["change", "kind", "what", "detail"], rows, title=f"from {args.diff[0]} to {args.diff[1]}")
    return 0


def _moment(text: str) -> Any:
    position = written_position(text)
    return text if position is None else position


def _rebuild(store: Path | str, cache: str | None) -> int:
    """Rebuild the views, then the search images and the embeddings (with the bundled model on
    every core, unless $CHRONOGRAPH_EMBEDDINGS says otherwise; a server re-embeds in the
    background what is missing). Vectors of entity versions the model already embedded are
    kept: only what changed is embedded again."""
    progress = Progress()
    spec = os.environ.get(EMBEDDINGS_ENV) or "auto"
    local = spec if spec in ("auto", "local") else "off"
    switch = os.environ.get(TERM_WEIGHTS_ENV) or "on"
    if switch not in ("on", "off"):
        print(f"chronograph replay: ${TERM_WEIGHTS_ENV} is {switch!r}: use on or off", file=sys.stderr)
        return 2
    weights = switch == "on"
    with Memory(store, progress=progress, embeddings=local, embedding_threads=0, term_weights=weights,
                cache=cache) as memory:
        report = memory.views.rebuild(progress, others=True)
        resident.release()  # what the rebuild read and wrote of the store is not the search's to keep
        started = time.perf_counter()
        images = keep_startup_state(memory)
        indexing = time.perf_counter() - started
        embedded = memory.semantic is not None
        if memory.semantic is not None:
            memory.semantic.rewind()  # vectors of unchanged entity versions are kept
            try:
                memory.semantic.catch_up(lambda done, head: progress("embedding", done, head))
                memory.semantic.drop_former()  # with weights: the plain vectors, all weighed now
            except EmbeddingsUnavailableError as error:
                print(f"chronograph replay: the embeddings were not rebuilt ({error}); a server "
                      "embeds the store in the background when it starts", file=sys.stderr)
                embedded = False
        computed = 0 if memory.semantic is None else memory.semantic.embedded
        model = "" if memory.semantic is None else memory.semantic.embedder.model
    progress.finish()
    print(f"rebuilt generation {report.generation}: {report.events:,} events, {report.keys:,} keys "
          f"in {report.seconds:.2f} s; {images} search index(es)"
          + (f"; embeddings rebuilt ({computed:,} brought up to date, the others kept) with {model}; other "
             "models' vectors left as they were" if embedded else ""))
    phases = ", ".join(f"{phase} {seconds:.2f}" for phase, seconds in report.phases.items())
    print(f"seconds: {phases}; word index {indexing:.2f}; {report.snapshots} snapshot(s) kept"
          + (f"; {report.segments:,} segment(s) folded onto the views written, to keep its memory bounded"
             if report.segments else "")
          + (f"; emptied {report.others} database(s) other versions derived (they fold them again if "
             "they open this store)" if report.others else ""))
    return 0


def _verify(memory: Memory) -> int:
    progress = Progress()
    differences = verify(memory.views, progress=progress)
    progress.finish()
    if differences:
        return _differences(differences, memory.log.location)
    with memory.views.read() as graph:
        print(f"the views agree with the log (position {graph.position:,})")
    return 0


def _verify_damaged(store: Path, refused: StoreCorruptError) -> int:
    """`--verify` of a store that would not open for damage (its newest event's, say): the events
    of its log whose bytes fail their checksum, else the error that refused it."""
    try:
        with LmdbLog(store, readonly=True, damaged=True) as log, log.read() as reader:
            damaged = [damaged_event(position) for position in reader.verify()]
    except EventStoreError:
        damaged = []
    if not damaged:
        print(f"chronograph replay: {refused}", file=sys.stderr)
        return 2
    return _differences(damaged, str(store))


def _differences(differences: list[str], location: str) -> int:
    """Print what `--verify` found, under a headline saying what to do; return 1."""
    n = len(differences)
    headline = {
        "log:": f"the log is damaged in {n} place(s); restore the store from a backup:",
        "index:": (f"the log's index of streams disagrees with its events in {n} place(s) (a write could reuse "
                   f"a version); copy the log into a new store, which indexes it anew "
                   f"({advised_copy(location)}), or restore from a backup:"),
    }.get(differences[0].split(" ", 1)[0], f"the views differ from the log in {n} place(s):")
    print(headline)
    for line in differences:
        print(f"  {line}")
    return 1


def main(argv: list[str] | None = None) -> int:
    """`python tools/replay.py ...` (see the module docstring)."""
    return script_main("chronograph replay", __doc__, add_arguments, run, argv)

if __name__ == "__main__":
    raise SystemExit(main())
