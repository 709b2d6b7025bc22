"""A memory's life beyond one write: forgetting, invalidating, reverting, renaming and
merging, and moving a graph in and out (import, export). Tools declared in `CORE`.
"""

from chronograph.application.lifecycle import (  # noqa: F401 (each module declares its tools in CORE)
    export,
    forgetting,
    identity,
    importing,
    invalidation,
    revert,
)

__all__ = ["export", "forgetting", "identity", "importing", "invalidation", "revert"]
