"""Team entries by meaning: `memory_query search` with `semanticSearch: true`, using the
server's embedder (`--embeddings`).

Entries are embedded when a query first needs them and kept per process by entry and
version, so a scope's second query embeds nothing; an entry's text is its name and the
fields that say what it is. The query is embedded before the call takes the store
(`Semantic.prepare`); entries a process embeds for the first time still are under it.
"""

from __future__ import annotations

from typing import Any

from chronograph.application.engine.service import Memory
from chronograph.application.errors import UnavailableError
from chronograph.projections.errors import EmbeddingsUnavailableError
from chronograph.projections.team.state import Entry

__all__ = ["DEFAULT_THRESHOLD", "entry_text", "similarities"]

DEFAULT_THRESHOLD = 0.7
"""Agent Memory's default semanticThreshold."""
TEXT_FIELDS = ("description", "content", "rationale", "constraints", "category", "source")
BATCH = 64


def entry_text(entry: Entry) -> str:
    """What is embedded of an entry: its name and what it says."""
    fields = entry.current.fields
    return ". ".join([entry.name, *(str(fields[k]) for k in TEXT_FIELDS if fields.get(k))])[:2000]


def similarities(memory: Memory, entries: list[Entry], query: str) -> dict[str, float] | None:
    """Cosine similarity of each entry to `query` (None: this server has no embedder).

    Raises:
        UnavailableError: If the embedder cannot run.
    """
    if memory.semantic is None or not entries:
        return None
    embedder = memory.semantic.embedder
    kept: dict[str, tuple[int, Any]] = memory.teams.vectors
    try:
        todo = [e for e in entries if kept.get(e.id, (0, None))[0] != e.current.number]
        for start in range(0, len(todo), BATCH):
            chunk = todo[start: start + BATCH]
            for entry, vector in zip(chunk, embedder.embed([entry_text(e) for e in chunk]), strict=True):
                kept[entry.id] = (entry.current.number, vector)
        asked = memory.semantic.nearness.asked(query).vector  # embedded before the call took the store (`prepare`)
    except (EmbeddingsUnavailableError, UnavailableError) as error:
        said = str(error).removeprefix("Semantic search is unavailable: ").split(". The other modes")[0]
        raise UnavailableError(f"Semantic search is unavailable: {said}; search without semanticSearch") from None
    return {e.id: float(kept[e.id][1] @ asked) for e in entries}
