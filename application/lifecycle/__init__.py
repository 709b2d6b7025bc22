"""A memory's life beyond one write: forgetting, invalidating, reverting, renaming and
merging, and moving a graph in and out (import, export; `sources` and the `from_*` modules:
the other servers' memories an import reads). Tools declared in `CORE`.
"""

from chronograph.application.lifecycle import (  # noqa: F401 (each module declares its tools in CORE)  # noqa: F401 (each registers the format it reads)
    export,
    forgetting,
    from_agentmemory,
    from_basicmemory,
    from_kuzu,
    from_mem0,
    identity,
    importing,
    invalidation,
    revert,
    sources,
)

__all__ = ["export", "forgetting", "from_agentmemory", "from_basicmemory", "from_kuzu", "from_mem0", "identity",
           "importing", "invalidation", "revert", "sources"]
