"""Forgetting an entity for real: `forget_entity`.

Everything else in Chronograph appends; this erases. Every entity ever called `name` in
the workspace is forgotten: each event of its stream is replaced, in place, by a
`ContentErased` that keeps the envelope (when, who, which call) and says which kind of
event it was, never what it said. Relations are keyed by the names they join, so every
relation created while a forgotten entity bore one of its names is erased whole too, and
moved to an opaque stream id (its old id spelled the names). A relation's stream may have
been taken up after by a relation of another entity that bears the name now (the first was
renamed away, a new one took its name): then only the forgotten relation's events are
erased, and the stream, the name of a live relation, stays. A merge into a forgotten entity
keeps its event, with the target's name redacted. Answers kept for retried calls go when
their call wrote what is erased or they quote a name or an observation of it. The views, snapshots, search
images and embeddings drop what they derived (the log's erase hook), and after the
commit the storage is scrubbed: the old copies of every changed page are zeroed once no
reader can see them. One `EntityForgotten` per entity records who asked, when and why.

What other entities say is theirs: an observation of Bob's that mentions Ada stays.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated

import msgspec
from chronograph.application.core.tenures import Tenure, tenures
from chronograph.application.engine.arguments import D, Name, WriteArgs
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.erasing import Reason, scrub_after, settle_after, unsettled
from chronograph.application.engine.outputs import Out
from chronograph.application.engine.registry import CORE
from chronograph.application.errors import NotFoundError
from chronograph.eventstore import (
    ERASED_NAME,
    ContentErased,
    EntityCreated,
    EntityForgotten,
    EntityMerged,
    Envelope,
    LogReader,
    RelationCreated,
)
from chronograph.eventstore.erasure import STANDS_ALONE

__all__ = ["ForgetEntity", "ForgetOut", "project_file_note"]


class ForgetEntity(WriteArgs, kw_only=True):
    name: Annotated[Name, D(description="The entity to erase")]
    reason: Annotated[Reason, D(description="Why (kept in the audit)")]


class ForgetOut(Out, kw_only=True):
    entities: Annotated[int, D(description="Entities erased (every one ever called so)")]
    relations: Annotated[int, D(description="Relations erased with them")]
    events: Annotated[int, D(description="Events whose content was erased")]
    redacted: Annotated[int, D(description="Events of other entities whose reference to the name was redacted")]
    streams: Annotated[list[str], D(description="The erased entities' stream ids (the audit's subjects)")]
    scrubbed: Annotated[bool, D(description="Whether every old copy of the erased bytes is overwritten")] = False
    message: str = ""
    elsewhere: Annotated[list[str], D(description=(
        "Copies out of the store's reach that may still hold it, each with what to do: stores a restore set "
        "aside, an n2n project's .mcp/memory.json"))] = []


class _Plan:
    """What one forget erases, found before anything is written."""

    def __init__(self, log: LogReader, streams: Sequence[str]) -> None:
        self.entities = {stream: list(log.stream(stream)) for stream in streams}
        held = [t for events in self.entities.values() for t in tenures(events)]
        first = min(events[0].position for events in self.entities.values() if events)
        needles = sorted({msgspec.msgpack.encode(t.name) for t in held})
        self.keys = sorted({form for t in held for form in (t.name.encode("utf-8", "surrogatepass"),
                                                            msgspec.json.encode(t.name)[1:-1])})
        """The names as index keys spell them (raw, and inside a relation's JSON id)."""
        texts = [(text.encode("utf-8", "surrogatepass"), name) for events in self.entities.values()
                 for text, name in _texts(events)]
        self.quoted = sorted({text for text, name in texts if name or len(text) >= STANDS_ALONE})
        """What makes a kept answer hold what the erasure is for (`erasure.forgotten_result`): every
        name of the entities, and each observation of `STANDS_ALONE` bytes or more. A shorter
        observation ("o", "yes") is no needle: an answer that tells of one of these entities'
        observations names the entity beside it (each tool's answer gives an observation under
        its entity's name), so the name finds it; alone, a short text is as likely another's."""
        self.relations: dict[str, str] = {}
        """relation stream -> the opaque id it moves to (itself where it is taken up by another's)"""
        self.kept: set[int] = set()
        """positions of the events of those streams that belong to another's relation"""
        self.owner: dict[str, str] = {}
        """relation stream -> the forgotten entity stream it named"""
        self.merges: list[int] = []
        """positions of merges into a forgotten entity (their `into` is redacted)"""
        workspaces: dict[str, str] = {}
        for envelope in log.mentions(needles, first):
            event, position = envelope.event, envelope.position
            if isinstance(event, RelationCreated) and envelope.stream not in self.relations:
                tenure = _covering(held, event, position)
                if tenure is not None:
                    self.owner[envelope.stream] = _stream_of(tenure, self.entities)
                    others = _others(log.stream(envelope.stream), held)
                    if others:  # another's relation lives on it: the stream stays, and its events with it
                        self.kept.update(others)
                    self.relations[envelope.stream] = envelope.stream if others else "erased:" + os.urandom(16).hex()
            elif isinstance(event, EntityMerged) and envelope.stream not in self.entities:
                workspace = workspaces.get(envelope.stream) or workspaces.setdefault(
                    envelope.stream, _workspace_of(log, envelope.stream))
                if any(tenure.covers(workspace, event.into, position) for tenure in held):
                    self.merges.append(position)
        self.workspace_of = {stream: _first_workspace(events) for stream, events in self.entities.items()}

    def redact(self, envelope: Envelope) -> ContentErased | None:
        """What an erased event becomes: its kind and workspace, nothing it said (None: it is of
        another entity's relation, and stays)."""
        if envelope.position in self.kept:
            return None
        event = envelope.event
        if isinstance(event, ContentErased):  # an earlier erasure's, moved with its stream as it is
            return event
        workspace = getattr(event, "workspace", "") or self.workspace_of.get(
            self.owner.get(envelope.stream, envelope.stream), "")
        return ContentErased(erased=envelope.type, workspace=workspace)


def _texts(events: Iterable[Envelope]) -> Iterator[tuple[str, bool]]:
    """Every name an entity's events gave it (True), and every observation they told of it."""
    for envelope in events:
        event = envelope.event
        for field in ("name", "previous"):
            if isinstance(text := getattr(event, field, None), str):
                yield text, True
        observations = getattr(event, "observations", ())
        if isinstance(observations, tuple):
            yield from ((text, False) for text in observations if isinstance(text, str))


def _covering(held: Sequence[Tenure], event: RelationCreated, position: int) -> Tenure | None:
    """The tenure under which one end of the relation `event` created named a forgotten entity."""
    for tenure in held:
        if any(tenure.covers(event.workspace, end, position) for end in (event.source, event.target)):
            return tenure
    return None


def _others(events: Iterable[Envelope], held: Sequence[Tenure]) -> list[int]:
    """The positions of the events of a relation stream that are not the forgotten entities', if
    another entity's relation lives on it (none: the stream moves whole). A relation's events
    belong to its creation: a creation no tenure covers is another's; what an earlier erasure
    left in place is erased already, and no reason to keep the stream's id (it spells the names)."""
    others: list[int] = []
    ours, another = False, False
    for envelope in events:
        event = envelope.event
        if isinstance(event, RelationCreated):
            ours = _covering(held, event, envelope.position) is not None
            another = another or not ours
        elif isinstance(event, ContentErased) and event.erased == RelationCreated.__struct_config__.tag:
            ours = False  # a relation an earlier erasure left in place: erased already
        if not ours:
            others.append(envelope.position)
    return others if another else []


def _stream_of(tenure: Tenure, entities: dict[str, list[Envelope]]) -> str:
    for stream, events in entities.items():
        if tenure in set(tenures(events)):
            return stream
    raise AssertionError("a tenure belongs to one of the forgotten entities")


def _first_workspace(events: Sequence[Envelope]) -> str:
    for envelope in events:
        if isinstance(envelope.event, EntityCreated):
            return envelope.event.workspace
    return ""


def _workspace_of(log: LogReader, stream: str) -> str:
    return _first_workspace(list(log.stream(stream, 1, 1)))


@CORE.command("forget_entity", "Forget Entity",
              "Erase an entity for good (every version, its relations); the audit keeps who, when, why",
              kind="delete", replayed=lambda batch: settle_after(batch, (), _finished))
def forget_entity(batch: Batch, args: ForgetEntity) -> ForgetOut:
    """Erase every entity ever called `name` in the workspace, and its relations; scrub after the commit.
    A retry of this process's forget whose commit was cut off answers as it would have, if it landed.

    Raises:
        NotFoundError: If no entity was ever called `name` in the workspace (nothing is erased).
    """
    subject = f"entity\x00{batch.workspace}\x00{args.name}"
    streams = batch.state.name_streams(batch.workspace, args.name)
    if not streams:
        landed = unsettled(batch, subject, _finished)
        if landed is not None:
            return landed
        raise NotFoundError(f"No entity named {args.name!r} ever existed in workspace {batch.workspace!r}, "
                            "or it was forgotten already; nothing was erased")
    plan = _Plan(batch.tx, streams)
    targets = {stream: stream for stream in plan.entities} | plan.relations
    originals = [envelope for envelope in batch.tx.erase(targets, plan.redact, plan.quoted)
                 if not isinstance(envelope.event, ContentErased)]  # an earlier erasure's, moved: not counted again
    for position in plan.merges:
        batch.tx.rewrite(position, EntityMerged(into=ERASED_NAME))
    for stream in plan.entities:
        moved = tuple(new for old, new in plan.relations.items() if plan.owner[old] == stream and new != old)
        count = len(plan.entities[stream]) + sum(
            1 for envelope in originals if plan.owner.get(envelope.stream) == stream)
        batch.emit(stream, EntityForgotten(workspace=plan.workspace_of[stream], reason=args.reason,
                                           events=count, relations=moved))
    scrub_after(batch, plan.keys, _finished, subject)
    note = project_file_note(batch.workspace)
    return ForgetOut(entities=len(plan.entities), relations=len(plan.relations), events=len(originals),
                     redacted=len(plan.merges), streams=list(plan.entities), elsewhere=[note] if note else [])


def _finished(output: ForgetOut, scrubbed: bool, message: str, elsewhere: list[str]) -> ForgetOut:
    return msgspec.structs.replace(output, scrubbed=scrubbed, message=message,
                                   elsewhere=[*elsewhere, *output.elsewhere])


def project_file_note(workspace: str) -> str:
    """What a forget in an n2n project's workspace says of the project's own copy, its
    `.mcp/memory.json`, until a server that keeps the file rewrites it ("" for another workspace):
    that file, changed since, would give back what was erased (`surfaces.projectfiles` takes the
    note out once it rewrote the file)."""
    if not workspace.startswith("n2n:"):
        return ""
    return (f"{workspace!r} is an n2n project's workspace, and its .mcp/memory.json was not rewritten: a server "
            "that keeps that file (--project-files) rewrites it at its next call on the project if the file is as "
            "that store last wrote it, but folds it back if it changed since (an edit, a git pull): take the entity "
            "out of it first (forget_entity through a server that keeps the project's files, or chronograph forget "
            "on the machine where one kept them, rewrites it at once)")
