"""The team memory: Agent Memory's fifteen tools and our `memory_forget` (declared in `TEAM`).

`common` is what every team tool shares (the `Team` a call works on, ids, scopes, pages);
then one module per concept: `scopes`, `entries`, `links`, `locks`, `conflicts`, `query`
(with `semantic`), `transfer`, `admin` and `forgetting`. It imports nothing of `surfaces`.
"""

from chronograph.application.team import (  # noqa: F401 (each module declares its tools in TEAM)
    admin,
    conflicts,
    entries,
    forgetting,
    links,
    locks,
    query,
    scopes,
    transfer,
)

__all__ = ["admin", "conflicts", "entries", "forgetting", "links", "locks", "query", "scopes", "transfer"]
