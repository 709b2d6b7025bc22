"""Chronograph's own tools over the graph, the official nine among them (declared in `CORE`).

One module per concept: `entities`, `relations`, `graph` (read_graph, open_nodes),
`search`, `history`, `context`, `overview`, `traversal`, `audit`, `suggestions`;
`recall` (what a session should know first: a query the prompts and hooks use); and what reads share:
`provenance` (where an observation came from), `validtime` (when a fact was true) and `tenures`
(which entity a name meant when).
"""

from chronograph.application.core import (  # noqa: F401 (each module declares its tools in CORE)
    audit,
    context,
    entities,
    graph,
    history,
    overview,
    relations,
    search,
    suggestions,
    traversal,
)

__all__ = ["audit", "context", "entities", "graph", "history", "overview", "relations", "search", "suggestions",
           "traversal"]
