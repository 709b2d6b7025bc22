"""Which calls search by meaning: the query a call embeds, if it does, which the service embeds
before the call takes the store's lock (see `Semantic.prepare`)."""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

__all__ = ["SEMANTIC_MODES", "by_meaning"]

SEMANTIC_MODES = frozenset({"semantic", "hybrid"})
"""The modes of `search_nodes` that search by meaning."""


def by_meaning(tool: str, args: Any) -> str | None:
    """The query a call embeds to search by meaning in the present, if it does (the team memory's
    `memory_query` asks for it with `semanticSearch` and names it `search`)."""
    if getattr(args, "semantic_search", None) is True:
        search = getattr(args, "search", None)
        return search if isinstance(search, str) and search.strip() else None
    query = getattr(args, "query", None)
    if not isinstance(query, str) or not query.strip() or getattr(args, "as_of", UNSET) is not UNSET:
        return None
    return query if tool == "semantic_search" or getattr(args, "mode", None) in SEMANTIC_MODES else None
