"""The working context of a workspace: what the agent is doing, why, and what comes next."""

from __future__ import annotations

from typing import Annotated, Literal

from chronograph.application.engine.arguments import AsOf, D, ReadArgs, Version, WriteArgs
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import AS_OF_POSITION, Out
from chronograph.application.engine.registry import CORE
from chronograph.application.engine.service import Memory
from chronograph.application.errors import ConflictError, InvalidArgumentsError
from chronograph.eventstore import ContextUpdated, clock
from chronograph.projections import ContextRecord, context_stream
from msgspec import UNSET, Meta, UnsetType

__all__ = ["ContextOut", "ReadContext", "UpdateContext", "context_out"]

Text = Annotated[str, Meta(max_length=4096)]
Status = Literal["IN_PROGRESS", "COMPLETED", "BLOCKED", "PLANNING"]


class ContextOut(Out, kw_only=True):
    workspace: str
    active_task: str | None = None
    status: str | None = None
    reason: str | None = None
    next_steps: list[str] | None = None
    last_commit: str | None = None
    version: Annotated[int, D(description="0 when the context was never set")]
    updated_at: str | UnsetType = UNSET
    as_of: Annotated[int, AS_OF_POSITION] | UnsetType = UNSET


def context_out(workspace: str, record: ContextRecord | None) -> ContextOut:
    """A workspace's context (version 0 and nothing set when it never was)."""
    if record is None:
        return ContextOut(workspace=workspace, version=0)
    return ContextOut(
        workspace=workspace,
        active_task=record.active_task,
        status=record.status,
        reason=record.reason,
        next_steps=None if record.next_steps is None else list(record.next_steps),
        last_commit=record.last_commit,
        version=record.version,
        updated_at=clock.isoformat(record.updated_at),
    )


class UpdateContext(WriteArgs, kw_only=True):
    active_task: Annotated[Text | None, D(description="The current task")] | UnsetType = UNSET
    status: Annotated[Status | None, D(description="Where the task stands")] | UnsetType = UNSET
    reason: Annotated[Text | None, D(description="Why it stands there")] | UnsetType = UNSET
    next_steps: Annotated[
        Annotated[list[Text], Meta(max_length=100)] | None, D(description="Next steps, in order")
    ] | UnsetType = UNSET
    last_commit: Annotated[Text | None, D(description="The last commit (hash or message)")] | UnsetType = UNSET
    expected_version: Version | UnsetType = UNSET


@CORE.command("update_context", "Update Context",
              "Record what you work on; the fields given merge into the context")
def update_context(batch: Batch, args: UpdateContext) -> ContextOut:
    """Merge the given fields into the workspace's context (updatedAt set by the server)."""
    changes = {field: getattr(args, field) for field in ContextRecord.FIELDS if getattr(args, field) is not UNSET}
    if not changes:
        raise InvalidArgumentsError(
            "update_context", "nothing to update: give activeTask, status, reason, nextSteps or lastCommit"
        )
    if isinstance(changes.get("next_steps"), list):
        changes["next_steps"] = tuple(changes["next_steps"])
    current = batch.context()
    version = 0 if current is None else current.version
    if args.expected_version is not UNSET and args.expected_version != version:
        raise ConflictError(f"the context of workspace {batch.workspace!r}", args.expected_version, version,
                            context_out(batch.workspace, current))
    batch.emit(context_stream(batch.workspace), ContextUpdated(workspace=batch.workspace, **changes))
    return context_out(batch.workspace, batch.context())


class ReadContext(ReadArgs, kw_only=True):
    as_of: AsOf | UnsetType = UNSET


@CORE.query("read_context", "Read Context", "Read the workspace's working context; start a session with it")
def read_context(memory: Memory, args: ReadContext) -> ContextOut:
    """The workspace's context, now or as of then."""
    with memory.timeline.at("read_context", args.as_of) as moment:
        answer = context_out(args.workspace, moment.graph.context(args.workspace))
        answer.as_of = moment.answered
        return answer
