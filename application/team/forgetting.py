"""Forgetting a team entry for real: `memory_forget` (our addition to Agent Memory's tools).

Deactivating an entry hides it and `memory_init reset` starts the team memory afresh, but
both keep the past (`asOf` reads it back): that is what they are for. Forgetting erases:
each event of the entry's stream (its name, every version's content, deactivations) is
replaced, in place, by a `ContentErased` that keeps the envelope (when, who, which call)
and says which kind of event it was, never what it said; so is every event of the
streams that exist for it (its tagging, relations to or from it, conflicts over it),
found by a raw scan of the log for its id. One `EntryForgotten` on the entry's stream
records who asked, when, why and how much went; then the store is scrubbed, as
`forget_entity` does for an entity. An entry is found by id even after a reset.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from chronograph.application.engine.arguments import D
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.erasing import Reason, scrub_after, settle_after, unsettled
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.errors import NotFoundError
from chronograph.application.team.common import TEAM, Short, TeamArgs
from chronograph.eventstore import ContentErased, Envelope
from chronograph.eventstore.teamevents import (
    ConflictDetected,
    EntryAdded,
    EntryForgotten,
    EntryRelationCreated,
    TagAttached,
    TagDetached,
)

__all__ = ["MemoryForget", "forget_entry"]


class MemoryForget(TeamArgs, kw_only=True):
    id: Annotated[Short, D(description="The entry (tool_..., gl_..., kn_...)")]
    reason: Annotated[Reason, D(description="Why (kept in the audit: say why, not what)")]


@TEAM.command("memory_forget", "Forget Entry",
              "Erase a tool, guideline or knowledge entry for good: every version, its tags, relations and "
              "conflicts (deactivate and reset keep history; this does not). The audit keeps who, when, why",
              kind="delete", replayed=lambda batch: settle_after(batch, (), _finished))
def forget_entry(batch: Batch, args: MemoryForget) -> ObjectOut:
    """Erase the entry `id` and every stream that exists for it; scrub after the commit. A retry
    of this process's forget whose commit was cut off answers as it would have, if it landed.

    Raises:
        NotFoundError: If no entry `id` ever existed, or it was forgotten already (nothing is erased).
    """
    stream = f"am/entry/{args.id}"
    events = list(batch.tx.stream(stream))
    added = events[0].event if events else None
    if not isinstance(added, EntryAdded):
        landed = unsettled(batch, f"entry\x00{args.id}", _finished)
        if landed is not None:
            return landed
        raise NotFoundError(f"No entry {args.id!r} ever existed, or it was forgotten already; nothing was erased")
    others = sorted(_streams_for(batch, args.id, events[0].position))
    originals = batch.tx.erase({s: s for s in (stream, *others)}, _redact)
    batch.emit(stream, EntryForgotten(entry_type=added.entry_type, reason=args.reason, events=len(originals),
                                      streams=tuple(others)))
    scrub_after(batch, [added.name.encode("utf-8", "surrogatepass")], _finished, f"entry\x00{args.id}")
    return object_out(success=True, forgotten={"id": args.id, "type": added.entry_type, "events": len(originals),
                                               "streams": others})


def _streams_for(batch: Batch, entry_id: str, first: int) -> set[str]:
    """The streams that exist for the entry: its tagging, relations naming it, conflicts over it."""
    found: set[str] = set()
    for envelope in batch.tx.mentions([msgspec.msgpack.encode(entry_id)], first):
        event = envelope.event
        if (isinstance(event, TagAttached | TagDetached | ConflictDetected) and event.entry_id == entry_id) or (
                isinstance(event, EntryRelationCreated) and entry_id in (event.source_id, event.target_id)):
            found.add(envelope.stream)
    return found


def _redact(envelope: Envelope) -> ContentErased:
    return ContentErased(erased=envelope.type)


def _finished(output: ObjectOut, scrubbed: bool, message: str, elsewhere: list[str]) -> ObjectOut:
    return object_out(**output.reply, scrubbed=scrubbed, message=message, elsewhere=elsewhere or None)
