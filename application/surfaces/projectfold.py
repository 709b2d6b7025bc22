"""Folding n2n's project files into the log: what `.mcp/memory.json` and `context.json`
hold that the workspace does not, decided as one command recorded as the actor
"project file", and the format of those files.

Folding only adds: new entities, observations and relations, and a hot context a
teammate wrote after ours. What would overwrite or bring back what this log deleted is
parked as an observation of the entity "Project file conflicts" (type CONFLICT): an
entity, observation or relation this log deleted, an entity typed differently, a
relation missing an end, a hot context both sides changed. Which context is newer is
told by lineage (`revision`, `basedOn`; see `projectfiles`), not by clocks.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

import msgspec
from chronograph.application.core.context import Text
from chronograph.application.engine.arguments import Limits, Name, Observation, TypeName, WriteArgs, parse
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.registry import Registry
from chronograph.application.errors import ChronographError, InvalidArgumentsError
from chronograph.eventstore import (
    ContextUpdated,
    EntityCreated,
    LogReader,
    ObservationsAdded,
    ObservationsDeleted,
    RelationCreated,
)
from chronograph.eventstore.events import ContextStatus
from chronograph.eventstore.keys import digest
from chronograph.projections import ContextRecord, context_stream, new_entity_stream, relation_stream
from msgspec import Meta

__all__ = ["ACTOR", "CONFLICTS", "CONTEXT_FIELDS", "FILES", "ProjectFileError", "context_values", "fields_of",
           "in_format", "revision"]

F = TypeVar("F", bound=msgspec.Struct)
ACTOR = "project file"
"""Who the events folded from a project's files are recorded as."""
CONFLICTS = "Project file conflicts"
"""The entity what could not be folded is parked in (type CONFLICT)."""
CONTEXT_FIELDS = {"active_task": "activeTask", "status": "status", "reason": "reason", "next_steps": "nextSteps",
                  "last_commit": "lastCommit"}
FILES = Registry()
"""The command that folds a project's files into its workspace (offered by no profile)."""


class ProjectFileError(ChronographError):
    """A project file exists but cannot be read as n2n's format; nothing was folded."""

    code = "invalid"


# --- the files' format -------------------------------------------------------------------
# The very types (and so limits) the tools take: what n2n_add_entities, n2n_create_relations
# (through create_relations) and n2n_update_context (through update_context) accept is what
# the files may hold, no more and no less, so the mirror of anything written reads back.


class FileEntity(msgspec.Struct, rename="camel"):
    name: Name
    entity_type: TypeName
    observations: list[Observation] = []


class FileRelation(msgspec.Struct, rename="camel"):
    source: Name = msgspec.field(name="from")
    target: Name = msgspec.field(name="to")
    relation_type: TypeName


class FileGraph(msgspec.Struct):
    entities: list[FileEntity] = []
    relations: list[FileRelation] = []


class FileContext(msgspec.Struct, rename="camel"):
    active_task: Text | None = None
    status: ContextStatus | None = None
    reason: Text | None = None
    next_steps: Annotated[list[Text], Meta(max_length=100)] | None = None
    last_commit: Text | None = None
    updated_at: str | None = None
    revision: str | None = None
    based_on: list[str] = []


def in_format(value: Any, kind: type[F], where: str) -> F:
    """`value` (a project file's JSON, `where` naming it) as `kind`, checked by the tools' own
    parser: their limits, and no blank name or type, none holding NUL.

    Raises:
        ProjectFileError: Naming the file, the field and what is wrong with it.
    """
    if not isinstance(value, dict):
        raise ProjectFileError(f"{where} is not in n2n's format: it holds no JSON object; nothing was read from it")
    try:
        return parse("fold_project_files", value, kind)
    except InvalidArgumentsError as error:
        raise ProjectFileError(f"{where} is not in n2n's format: {error.problem}; nothing was read from it") from None


def revision(fields: dict[str, Any]) -> str:
    """A context's identity across clones: a digest of its n2n fields, as n2n reads them (no
    status is PLANNING, no next steps an empty list), so a file and the log agree on it."""
    canonical = json.dumps(_as_n2n_reads(fields), sort_keys=True, ensure_ascii=False)
    return digest(canonical.encode("utf-8", "surrogatepass"), 8).hex()


def fields_of(record: ContextRecord | FileContext) -> dict[str, Any]:
    """A context's n2n fields (our names), lists for tuples."""
    out = {k: getattr(record, k) for k in CONTEXT_FIELDS}
    if out["next_steps"] is not None:
        out["next_steps"] = list(out["next_steps"])
    return out


def _as_n2n_reads(fields: dict[str, Any]) -> dict[str, Any]:
    out = {k: fields.get(k) for k in CONTEXT_FIELDS}
    out["status"] = out["status"] or "PLANNING"
    out["next_steps"] = list(out["next_steps"] or [])
    return out


# --- folding -----------------------------------------------------------------------------


class FoldArgs(WriteArgs, kw_only=True):
    graph: dict[str, Any]
    context: dict[str, Any] | None = None


@FILES.command("fold_project_files", "Fold Project Files", "Fold what a project's .mcp files hold that the log "
               "does not into the log (conflicts parked)")
def fold_project_files(batch: Batch, args: FoldArgs) -> ObjectOut:
    graph = in_format(args.graph, FileGraph, ".mcp/memory.json")
    context = None if args.context is None else in_format(args.context, FileContext, ".mcp/context.json")
    parked: list[str] = []
    counts = {"entities": 0, "observations": 0, "relations": 0, "context": 0}
    for item in graph.entities:
        live = batch.entity(item.name)
        observations = tuple(dict.fromkeys(item.observations))
        if live is None:
            if batch.state.name_streams(batch.workspace, item.name):
                parked.append(f"The project file holds entity {item.name!r} ({item.entity_type}), which this "
                              f"memory deleted; its observations: {json.dumps(list(observations))}")
                continue
            batch.emit(new_entity_stream(), EntityCreated(workspace=batch.workspace, name=item.name,
                                                          entity_type=item.entity_type,
                                                          observations=observations), new=True)
            counts["entities"] += 1
            continue
        if live.entity_type != item.entity_type and item.name != CONFLICTS:
            parked.append(f"The project file gives entity {item.name!r} the type {item.entity_type!r}; this "
                          f"memory has {live.entity_type!r}")
        held = set(live.observations)
        fresh = [o for o in observations if o not in held]
        if fresh:
            deleted = _deleted_observations(batch, live.stream)
            for observation in (o for o in fresh if o in deleted):
                parked.append(f"The project file holds observation {observation!r} of entity {item.name!r}, "
                              "which this memory deleted")
            fresh = [o for o in fresh if o not in deleted]
        if fresh:
            batch.emit(live.stream, ObservationsAdded(observations=tuple(fresh)))
            counts["observations"] += len(fresh)
    for relation in graph.relations:
        if batch.relation(relation.source, relation.relation_type, relation.target) is not None:
            continue
        stream = relation_stream(batch.workspace, relation.source, relation.relation_type, relation.target)
        if batch.tx.stream_version(stream) > 0:
            parked.append(f"The project file holds relation {relation.source!r} -[{relation.relation_type}]-> "
                          f"{relation.target!r}, which this memory deleted")
            continue
        if not batch.exists(relation.source) or not batch.exists(relation.target):
            parked.append(f"The project file holds relation {relation.source!r} -[{relation.relation_type}]-> "
                          f"{relation.target!r}, but an end of it is not in this memory")
            continue
        batch.emit(stream, RelationCreated(workspace=batch.workspace, source=relation.source,
                                           target=relation.target, relation_type=relation.relation_type))
        counts["relations"] += 1
    if context is not None:
        counts["context"] = _fold_context(batch, context, parked)
    if parked:
        _park(batch, parked)
    return object_out(status="success", folded=counts, parked=parked)


def _deleted_observations(batch: Batch, stream: str) -> set[str]:
    """The observations ever deleted from the entity `stream` (a file may not bring them back)."""
    return {o for envelope in batch.tx.stream(stream) if isinstance(envelope.event, ObservationsDeleted)
            for o in envelope.event.observations}


def _fold_context(batch: Batch, file: FileContext, parked: list[str]) -> int:
    theirs = fields_of(file)
    current = batch.context()
    ours = None if current is None else fields_of(current)
    if ours is not None and revision(ours) == revision(theirs) or all(v is None for v in theirs.values()):
        return 0
    seen = {revision(values) for values in context_values(batch.tx, batch.workspace)}
    if revision(theirs) in seen:
        return 0  # a context this memory held before: the file is behind, the mirror brings it up
    if ours is None or revision(ours) in file.based_on:
        changes: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in theirs.items()
                                   if ours is None or ours[k] != v}
        batch.emit(context_stream(batch.workspace), ContextUpdated(workspace=batch.workspace, **changes))
        return 1
    shown = {CONTEXT_FIELDS[k]: v for k, v in theirs.items() if v is not None}
    parked.append(f"The project file holds a hot context written while this memory's changed too: "
                  f"{json.dumps(shown, ensure_ascii=False, sort_keys=True)}")
    return 0


def context_values(log: LogReader, workspace: str) -> list[dict[str, Any]]:
    """Every value the workspace's context has had, oldest first (its fields, n2n's names aside)."""
    values: dict[str, Any] = dict.fromkeys(CONTEXT_FIELDS)
    history = []
    for envelope in log.stream(context_stream(workspace)):
        event = envelope.event
        if isinstance(event, ContextUpdated):
            for field in CONTEXT_FIELDS:
                value = getattr(event, field)
                if value is not msgspec.UNSET:
                    values[field] = list(value) if isinstance(value, tuple) else value
            history.append(dict(values))
    return history


def _park(batch: Batch, parked: list[str]) -> None:
    notes = parts(parked)
    entity = batch.entity(CONFLICTS)
    if entity is None:
        batch.emit(new_entity_stream(), EntityCreated(workspace=batch.workspace, name=CONFLICTS,
                                                      entity_type="CONFLICT", observations=notes), new=True)
        return
    fresh = tuple(p for p in notes if p not in set(entity.observations))
    if fresh:
        batch.emit(entity.stream, ObservationsAdded(observations=fresh))


PART = "[parked note {}, part {:0{}d} of {}] "
"""What begins each piece of a parked note too long for one observation: the note's digest
(which pieces belong together), the piece's number (zero-padded: the mirror sorts them)."""


def parts(notes: list[str]) -> tuple[str, ...]:
    """The parked `notes` as observations the store keeps (each at most `Limits.OBSERVATION`
    characters, as every tool and import takes them): a longer note is cut into pieces marked
    `PART`, so the mirror, an export and its import keep it whole, to be joined back in order."""
    out: dict[str, None] = {}
    for note in notes:
        if len(note) <= Limits.OBSERVATION:
            out[note] = None
            continue
        key = digest(note.encode("utf-8", "surrogatepass"), 4).hex()
        room = Limits.OBSERVATION - len(PART.format(key, 0, 9, 10**9))
        pieces = [note[i:i + room] for i in range(0, len(note), room)]
        width = len(str(len(pieces)))
        out.update((PART.format(key, n, width, len(pieces)) + piece, None) for n, piece in enumerate(pieces, 1))
    return tuple(out)
