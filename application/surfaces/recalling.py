"""Recall and the end-of-session guide in each profile's words.

The recall itself is a query of the core (`core/recall.py`); what differs between
profiles is what a "project" names (a workspace, an n2n project root, a Kuzu database),
and which tools save what. The MCP prompts (`server/prompts.py`) and `chronograph
context` use what is here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

from chronograph.application.core.recall import Vocabulary, estimate_tokens
from chronograph.application.core.subjects import Subjects, live_names
from chronograph.application.engine.principal import LOCAL_PRINCIPAL, Principal
from chronograph.application.engine.service import Memory
from chronograph.application.errors import InvalidArgumentsError
from chronograph.application.surfaces.kuzu import PRIMARY
from chronograph.application.surfaces.projectroot import adopted_root, workspace_name

__all__ = ["PROMPTED", "VOCABULARIES", "Wrote", "remember_text", "session_writes", "workspace_of"]

VOCABULARIES: dict[str, Vocabulary] = {
    "chronograph": Vocabulary("Memory", "workspace", "entities", {
        "a new person, project, decision or thing": "create_entities",
        "a new fact about something already known": "add_observations",
        "how two things are linked": "create_relations",
        "what you are working on and what comes next": "update_context",
        "a fact that stopped being true (kept in history)": "invalidate_observations",
        "two entries that are one thing": "merge_entities",
    }),
    "n2n": Vocabulary("Project memory", "project", "entities", {
        "a new component, decision or convention": "n2n_add_entities",
        "a new fact about something already known": "n2n_add_observations",
        "how two things are linked": "n2n_create_relations",
        "the task, its status and next steps": "n2n_update_context",
    }),
    "kuzu": Vocabulary("Memory graph", "database", "entities", {
        "a new entity": "create_entity",
        "a new fact about an entity": "add_observations",
        "how two entities are linked": "create_relationship",
    }),
}
VOCABULARIES["full"] = VOCABULARIES["chronograph"]
PROMPTED = frozenset(VOCABULARIES)
"""The profiles that offer the `recall` and `remember` prompts unasked."""


def workspace_of(profile: str, project: str | None, known: Callable[[str], bool] | None = None,
                 readable: Callable[[str], bool] | None = None) -> str:
    """The workspace a recall of `project` reads in `profile`: a path names the project whose
    root holds it (the nearest adopted root above it whose workspace is `readable`, or the
    nearest n2n project whose files were imported, if its workspace is `known`: see `seen_by`);
    a Kuzu database names its own; any other name is a workspace. Nothing is adopted or written.

    Raises:
        InvalidArgumentsError: If `project` holds a NUL character, which no folder or workspace may.
    """
    if project and "\0" in project:
        raise InvalidArgumentsError("recall", "project: holds a NUL character, which no folder or workspace name may")
    if not project:
        return PRIMARY if profile == "kuzu" else "default"
    if profile != "kuzu" and os.path.isabs(project):
        root = adopted_root(project, known, readable)
        return "default" if root is None else workspace_name(root)
    return project


def seen_by(memory: Memory, principal: Principal = LOCAL_PRINCIPAL) -> Callable[[str], bool]:
    """Whether `memory`'s store holds a workspace `principal` may see (`list_workspaces`' answer,
    asked once, at the first question): a caller without a grant on a project's workspace
    learns nothing of it, its recall falls back to the default as for a folder never imported."""
    names: frozenset[str] | None = None

    def known(name: str) -> bool:
        nonlocal names
        if names is None:
            listed = memory.read("list_workspaces", {}, principal=principal)
            names = frozenset(record.name for record in listed.workspaces)  # type: ignore[attr-defined]
        return name in names

    return known


@dataclass(frozen=True)
class Wrote:
    """What one session wrote about one subject."""

    subject: str
    what: list[str]


def session_writes(memory: Memory, workspace: str, actor: str, after: int) -> list[Wrote]:
    """What `actor` wrote in `workspace` after log position `after` (this session), oldest first."""
    with memory.lock, memory.timeline.at("remember") as moment:
        log = moment.log
        subjects = Subjects(log, live_names(moment.live))
        found: dict[str, list[str]] = {}
        for envelope in log.all(after + 1):
            if envelope.actor.split("/", 1)[0] != actor:
                continue
            if subjects.workspace(envelope) == workspace:
                subject = subjects.of(envelope)[1]  # as it was called then: a rename says both names
                kinds = found.setdefault(subject, [])
                kind = envelope.type.replace("_", " ")
                if kind not in kinds:
                    kinds.append(kind)
        return [Wrote(subject, what) for subject, what in found.items()]


def remember_text(vocabulary: Vocabulary, workspace: str, wrote: list[Wrote], budget: int) -> str:
    """The end-of-session guide: what is worth saving, with which tool, and what this session
    already saved (so nothing is saved twice), within `budget` tokens."""
    lines = [
        f"Before this session ends, save what a later session should know in the {vocabulary.place} "
        f"{workspace!r}. Save facts, decisions, preferences and open threads; not what the code, the "
        "documents or the conversation already hold verbatim. One observation per fact, short, and "
        "name who or what it is about.",
        "",
        "Use:",
        *(f"- {tool} for {what}" for what, tool in vocabulary.tools.items()),
        "",
    ]
    if wrote:
        lines.append("Already saved in this session (do not save again):")
        used = estimate_tokens("\n".join(lines))
        for index, item in enumerate(wrote):
            line = f"- {item.subject}: {', '.join(item.what)}"
            if used + estimate_tokens(line) + 20 > budget:
                lines.append(f"- ... and {len(wrote) - index} more")
                break
            lines.append(line)
            used += estimate_tokens(line) + 1
    else:
        lines.append("Nothing was saved in this session yet.")
    return "\n".join(lines) + "\n"
