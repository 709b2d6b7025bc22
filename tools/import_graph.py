"""Import a memory file of the official server (or the itseasy21 fork) into a store.

    chronograph import memory.jsonl                     the official JSONL file
    chronograph import memory.json                      its legacy file (JSONL, or {entities, relations})
    chronograph import --workspace lab --strict FILE    all or nothing

Everything becomes ordinary events, recorded as actor "import" under one correlation id.
Importing the same file again changes nothing: existing entities only gain observations
they lack, existing relations are skipped. The fork's createdAt/version are kept in each
entity's metadata (importedCreatedAt, importedVersion). Bad lines are reported with their
line numbers, relations whose ends exist nowhere are reported, not dropped in silence.
Without --strict the good lines are imported (exit code 1 if any line was bad); with
--strict, any problem aborts the import before anything is written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application import Memory
from chronograph.application.arguments import Limits, parse
from chronograph.application.config import resolve_store
from chronograph.application.entities import CreateEntities
from chronograph.application.errors import ChronographError, InvalidArgumentsError
from chronograph.application.relations import CreateRelations
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError
from chronograph.tools.parsing import add_store_argument, script_main
from chronograph.tools.progress import Progress

__all__ = ["Plan", "add_arguments", "main", "read_file", "run"]

ACTOR = "import"
FORK_FIELDS = {"createdAt": "importedCreatedAt", "version": "importedVersion", "updatedAt": "importedUpdatedAt"}


@dataclass
class Plan:
    """What a file holds, checked line by line."""

    entities: dict[str, dict[str, Any]] = field(default_factory=dict)
    relations: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """(from, to, relationType) -> the line it came from"""
    problems: list[str] = field(default_factory=list)
    lines: int = 0


def read_file(path: Path) -> Plan:
    """Parse an official JSONL file, a legacy JSON graph, or a fork file into a `Plan`.

    Raises:
        OSError: If the file cannot be read.
    """
    text = path.read_bytes().decode("utf-8", errors="replace")
    plan = Plan()
    stripped = text.strip()
    if stripped.startswith("{") and "\n{" not in stripped:
        try:
            document = json.loads(stripped)
        except ValueError:
            document = None
        if isinstance(document, dict) and ("entities" in document or "relations" in document):
            records = [{"type": "entity", **e} for e in document.get("entities", []) if isinstance(e, dict)]
            records += [{"type": "relation", **r} for r in document.get("relations", []) if isinstance(r, dict)]
            plan.lines = len(records)
            for number, record in enumerate(records, start=1):
                _take(plan, number, record)
            return plan
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        plan.lines += 1
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            plan.problems.append(f"line {number}: not JSON ({error.msg})")
            continue
        _take(plan, number, record)
    return plan


def _take(plan: Plan, number: int, record: Any) -> None:
    if not isinstance(record, dict) or record.get("type") not in ("entity", "relation"):
        plan.problems.append(f'line {number}: not an entity or relation (needs "type": "entity" or "relation")')
        return
    body = {k: v for k, v in record.items() if k != "type"}
    if record["type"] == "entity":
        extra = {FORK_FIELDS[k]: body.pop(k) for k in list(body) if k in FORK_FIELDS}
        if extra:
            body["metadata"] = {**(body.get("metadata") or {}), **extra}
        try:
            [item] = parse("import", {"entities": [body]}, CreateEntities).entities
        except InvalidArgumentsError as error:
            plan.problems.append(f"line {number}: {error.problem}")
            return
        known = plan.entities.get(item.name)
        if known is None:
            entry: dict[str, Any] = {
                "name": item.name, "entityType": item.entity_type, "observations": list(item.observations),
            }
            if item.metadata:
                entry["metadata"] = item.metadata
            plan.entities[item.name] = entry
        else:  # the same name twice in one file: one entity, every observation
            known["observations"] += [o for o in item.observations if o not in known["observations"]]
    else:
        body = {k: v for k, v in body.items() if k not in FORK_FIELDS}
        try:
            [relation] = parse("import", {"relations": [body]}, CreateRelations).relations
        except InvalidArgumentsError as error:
            plan.problems.append(f"line {number}: {error.problem}")
            return
        plan.relations.setdefault((relation.source, relation.target, relation.relation_type), number)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `import`."""
    parser.add_argument("file", type=Path, help="memory.jsonl, memory.json, or a fork's file")
    add_store_argument(parser)
    parser.add_argument("--workspace", default="default", help='workspace to import into (default: "default")')
    parser.add_argument("--strict", action="store_true", help="abort, writing nothing, on any bad line")


def run(args: argparse.Namespace) -> int:
    """Carry out `import`; return the exit code."""
    try:
        plan = read_file(args.file)
    except OSError as error:
        print(f"chronograph import: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 2
    try:
        with Memory(resolve_store(args.store)) as memory:
            return _import(memory, plan, args)
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph import: {error}", file=sys.stderr)
        return 2


def _import(memory: Memory, plan: Plan, args: argparse.Namespace) -> int:
    ws = args.workspace
    with memory.views.read() as graph:
        existing = {name for name in plan.entities if graph.entity(ws, name) is not None}
        ends = {name for relation in plan.relations for name in relation[:2]}
        present = {name for name in ends - plan.entities.keys() if graph.entity(ws, name) is not None}
    for (source, target, kind), number in list(plan.relations.items()):
        missing = [n for n in (source, target) if n not in plan.entities and n not in present]
        if missing:
            names = " and ".join(repr(n) for n in missing)
            plan.problems.append(f"line {number}: relation {source} -[{kind}]-> {target}: no entity {names} "
                                 "in the file or the store")
            del plan.relations[(source, target, kind)]
    plan.problems.sort(key=lambda p: int(p.split(":")[0].split()[1]))
    if plan.problems and args.strict:
        _report_problems(plan)
        print(f"--strict: {len(plan.problems)} problem(s); nothing was imported", file=sys.stderr)
        return 1

    correlation = os.urandom(16).hex()
    progress = Progress()
    total = len(plan.entities) + len(existing) + len(plan.relations)
    done = created = added = related = 0
    new = [e for name, e in plan.entities.items() if name not in existing]
    step = Limits.ITEMS

    def write(tool: str, arguments: dict[str, Any]) -> Any:
        return memory.write(tool, {**arguments, "workspace": ws}, actor=ACTOR, correlation_id=correlation).output

    for start in range(0, len(new), step):
        created += len(write("create_entities", {"entities": new[start : start + step]}).entities)
        done += len(new[start : start + step])
        progress("entities", done, total)
    merges = [{"entityName": name, "contents": plan.entities[name]["observations"]} for name in sorted(existing)]
    for start in range(0, len(merges), step):
        results = write("add_observations", {"observations": merges[start : start + step]}).results
        added += sum(len(r.added_observations) for r in results)
        done += len(merges[start : start + step])
        progress("observations", done, total)
    relations = [{"from": s, "to": t, "relationType": k} for s, t, k in plan.relations]
    for start in range(0, len(relations), step):
        related += len(write("create_relations", {"relations": relations[start : start + step]}).relations)
        done += len(relations[start : start + step])
        progress("relations", done, total)
    progress.finish()

    observations = sum(len(plan.entities[name]["observations"]) for name in plan.entities if name not in existing)
    skipped = (len(plan.entities) - created) + (len(plan.relations) - related)
    print(f"imported {args.file} into workspace {ws!r}: {created} entities, {related} relations, "
          f"{observations + added} observations; {skipped} already present (skipped); "
          f"{len(plan.problems)} error(s)")
    if plan.problems:
        _report_problems(plan)
        return 1
    return 0


def _report_problems(plan: Plan) -> None:
    for problem in plan.problems[:100]:
        print(f"  {problem}", file=sys.stderr)
    if len(plan.problems) > 100:
        print(f"  ... and {len(plan.problems) - 100} more", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """`python tools/import_graph.py FILE ...` (see the module docstring)."""
    return script_main("chronograph import", __doc__, add_arguments, run, argv)

if __name__ == "__main__":
    raise SystemExit(main())
