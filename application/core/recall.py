"""Recall: what an agent should know at the start of a session, as one query.

A recall holds, in this order of priority, the workspace's hot context (what the agent
works on and what comes next), the entities most relevant to a query (or, without one,
the ones changed last), and what changed since the client's previous session (the
events after the last one it wrote, by others). It is rendered as Markdown within a
token budget: the MCP `recall` prompt and `chronograph context` (for client hooks) are
adapters over it, in their profile's words. It decides no events.

Tokens are counted by `estimate_tokens` the way tokenizers split text first (each word, each
mark of punctuation), a long or rare word as several: it overcounts what LLM tokenizers
and WordPiece count on prose, names, numbers and Markdown, so a block within its budget
here is within it for the model that reads it (tested with a real tokenizer).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from chronograph.application.core.search import SearchNodes, search_nodes
from chronograph.application.core.subjects import Subjects
from chronograph.application.core.validtime import observations_at
from chronograph.application.engine.service import Memory
from chronograph.eventstore import LogReader, clock
from chronograph.projections import ContextRecord, EntityRecord
from chronograph.projections.search.terms import STOPWORDS, terms

__all__ = ["BUDGET", "Change", "Recall", "Recalled", "Vocabulary", "estimate_tokens", "recall", "render"]

BUDGET = 1500
"""Tokens a recall takes unless told otherwise."""
SCAN = 2000
"""Events read back from the head at most, looking for what changed since a client's last write."""
CHANGES = 30
"""Changes listed at most (the newest)."""
OBSERVATIONS = 5
"""Observations shown per entity at most (the newest)."""
_PIECE = re.compile(r"[A-Za-z0-9]+|[^\sA-Za-z0-9]")
MENTIONED_WORDS = 4
"""The longest run of words of a prompt looked up as an entity's name."""


def estimate_tokens(text: str) -> int:
    """Tokens `text` costs, overcounted: a word is one token and one more per four letters
    past its second; a mark of punctuation or a character outside ASCII is one."""
    count = 0
    for piece in _PIECE.findall(text):
        if piece[0].isalnum() and piece.isascii():
            count += 1 + max(0, len(piece) - 2) // 4
        else:
            count += len(piece.encode("utf-8")) if not piece.isascii() else 1
    return count


@dataclass(frozen=True)
class Recalled:
    """An entity worth knowing, with its newest observations."""

    name: str
    entity_type: str
    observations: tuple[str, ...]
    why: str
    """"mentioned", "relevant" (a search hit) or "recent"."""


@dataclass(frozen=True)
class Change:
    """Something another client changed since this one's previous session."""

    subject: str
    what: str
    actor: str
    at: str


@dataclass(frozen=True)
class Recall:
    """What a recall found, before rendering."""

    workspace: str
    context: ContextRecord | None
    entities: list[Recalled]
    changes: list[Change]
    since: int | None
    """The client's last write before this session (None: it never wrote, or too long ago)."""
    head: int


@dataclass(frozen=True)
class Vocabulary:
    """How a profile names what a recall shows."""

    title: str = "Memory"
    place: str = "workspace"
    entities: str = "entities"
    tools: dict[str, str] = field(default_factory=dict)


def recall(memory: Memory, workspace: str, *, query: str | None = None, client: str | None = None,
           before: int | None = None, limit: int = 12, strict: bool = False) -> Recall:
    """What `client` should know at the start of a session in `workspace`.

    `query` picks the relevant entities (else the ones changed last); `before` is where
    the current session began (its own writes are not "changes since"); `strict` keeps
    only entities the query names (for a hook on every prompt: silence beats noise, and a
    prompt's hook must answer from a cold process without loading the word index).
    """
    # Under the store's lock and the word indexes' (as Memory.read takes them): an adapter may
    # call this from a thread of its own (the SDK renders prompts in a worker thread).
    with memory.lock, memory.views.search.lock, memory.timeline.at("recall") as moment:
        graph, log = moment.graph, moment.log
        head = log.head()
        live = moment.live

        def current(stream: str) -> EntityRecord | None:  # a stream's entity now, under its name now
            record = live.entity_by_stream(stream)
            return record if record is not None and record.workspace == workspace else None

        since, changes, recent = _changes(log, workspace, client, head if before is None else before, head, limit,
                                          current)
        found: list[Recalled] = []
        seen: set[str] = set()
        now = clock.now_us()  # what is true now: a fact whose valid time ended is not recalled

        def add(record: EntityRecord | None, why: str) -> None:
            if record is not None and record.name not in seen and len(found) < limit:
                seen.add(record.name)
                found.append(Recalled(record.name, record.entity_type,
                                      tuple(observations_at(record, now)[-OBSERVATIONS:]), why))

        if query:
            for name in _mentioned(query):
                add(graph.entity(workspace, name), "mentioned")
            if terms(query) and not strict:  # a search loads the word index: 0.8 s cold at 50k entities
                hits = search_nodes(memory, SearchNodes(query=query, mode="ranked", workspace=workspace,
                                                        limit=limit)).entities
                for hit in hits:
                    add(graph.entity(workspace, hit.name), "relevant")
        if not strict:
            for stream in recent:
                add(current(stream), "recent")
        return Recall(workspace, graph.context(workspace), found, changes, since, head)


def _mentioned(text: str) -> list[str]:
    """Runs of up to MENTIONED_WORDS words of `text`, longest first, as they are written and
    capitalised: the names a prompt may mention."""
    words = [w.strip(".,;:!?()[]{}\"'`") for w in text.split()]
    words = [w for w in words if w]
    out: dict[str, None] = {}
    for size in range(min(MENTIONED_WORDS, len(words)), 0, -1):
        for start in range(len(words) - size + 1):
            run = words[start:start + size]
            if size == 1 and run[0].lower() in STOPWORDS:
                continue
            phrase = " ".join(run)
            out[phrase] = None
            out[" ".join(w[:1].upper() + w[1:] for w in run)] = None
    return list(out)[:400]


def _changes(log: LogReader, workspace: str, client: str | None, before: int, head: int, limit: int,
             current: Callable[[str], EntityRecord | None]) -> tuple[int | None, list[Change], list[str]]:
    """What others changed in `workspace` after `client`'s last write there before position `before`,
    newest first (an entity named as it is called now, `current`; one gone, as it was called at the
    change); and the streams of the `limit` entities changed last (newest first), for a recall with
    no query. Reads back at most SCAN events."""
    subjects = Subjects(log)
    changes: list[Change] = []
    recent: dict[str, None] = {}
    since: int | None = None
    read = 0
    for batch in log.batches_backward(head, 1):
        for envelope in batch:
            read += 1
            # what the client did elsewhere is not this recall's to say (nor when)
            if subjects.workspace(envelope) != workspace:
                continue
            mine = client is not None and envelope.actor.split("/", 1)[0] == client
            if mine and since is None and envelope.position <= before:
                since = envelope.position
            entity = envelope.type.startswith(("entity_", "observations_"))
            if entity and len(recent) < limit:
                recent.setdefault(envelope.stream, None)
            if since is None and not mine and len(changes) < CHANGES:
                now = current(envelope.stream) if entity else None
                subject = subjects.of(envelope)[1] if now is None else now.name
                changes.append(Change(subject, envelope.type.replace("_", " "),
                                      envelope.actor, clock.isoformat(envelope.recorded_at)))
        if read >= SCAN or (since is not None and len(recent) >= limit):
            break
    return since, changes if client is not None else [], list(recent)


def render(found: Recall, vocabulary: Vocabulary = Vocabulary(), budget: int = BUDGET) -> str:
    """`found` as Markdown within `budget` tokens: the context first, then entities, then changes;
    whatever does not fit is left out, and the block says how much was."""
    lines: list[str] = [f"# {vocabulary.title} ({vocabulary.place} {found.workspace})"]
    used = estimate_tokens(lines[0]) + 1
    left_out = 0

    def put(line: str) -> bool:
        nonlocal used, left_out
        cost = estimate_tokens(line) + 1
        if used + cost > budget - 12:  # room for the closing line
            left_out += 1
            return False
        lines.append(line)
        used += cost
        return True

    context = found.context
    if context is not None:
        put("## Context")
        for label, value in (("Task", context.active_task), ("Status", context.status), ("Why", context.reason),
                             ("Last commit", context.last_commit)):
            if value:
                put(f"- {label}: {value}")
        for step in context.next_steps or ():
            put(f"- Next: {step}")
    if found.entities:
        put(f"## {vocabulary.entities.capitalize()}")
        for entity in found.entities:
            if not put(f"- **{entity.name}** ({entity.entity_type})"):
                continue
            for observation in entity.observations:
                put(f"  - {observation}")
    if found.changes:
        put("## Changed since your last session" if found.since is not None else "## Recent changes by others")
        for change in found.changes:
            put(f"- {change.at[:16].replace('T', ' ')} {change.actor}: {change.what}: {change.subject}")
    if len(lines) == 1:
        return ""
    if left_out:
        lines.append(f"({left_out} more lines left out to stay within {budget} tokens)")
    return "\n".join(lines) + "\n"
