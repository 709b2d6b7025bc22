"""Leaving a store ready for a fast first spawn: what `import`, `copy`, `restore` and
`replay --rebuild` do last.

A server's first answers come fast when the store keeps two pieces of start-up state: the
search indexes' images (else the first search indexes every entity) and the MCP SDK's
answers for the stdio front (else the session imports the SDK). A command that makes or
remakes a store leaves both current, so that the spawn right after it is as fast as any.
Into a database store (an import, a rebuild), it keeps a seed of the views instead of the answers: a new server's
cache then loads it rather than folding the whole log (see `projections.live.seeding`).
"""

from __future__ import annotations

import sys

from chronograph.application import Memory
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.lmdb import resident
from chronograph.projections import ProjectionError

__all__ = ["keep_startup_state"]


def keep_startup_state(memory: Memory) -> int:
    """Save the search images and keep the SDK's opening answers in `memory`'s store; return how
    many images were saved. Loads the MCP SDK (about a second).

    Both are an optimisation: if they cannot be kept (a full disk or temporary folder), the
    command says so on stderr and succeeds (the first search builds the images, the first
    session keeps the answers).
    """
    try:
        images = memory.prepare_search()
    except (EventStoreError, ProjectionError, OSError) as error:
        print(f"chronograph: the search images were not kept ({error}); the first search builds them",
              file=sys.stderr)
        images = 0
    resident.release()  # the store pages the images were read from are not the SDK's to keep
    if memory.cache is not None and memory.keep_seed_now(spacing=0):
        print(f"chronograph: kept a seed of the views at position {memory.checkpoint():,}: new servers' caches "
              "start from it", file=sys.stderr)
    if memory.cache is None:  # a database log's views are each machine's own: its server keeps them
        try:
            from chronograph.server.priming import prime  # noqa: PLC0415 (the MCP SDK loads here)

            prime(memory)
        except Exception as error:  # noqa: BLE001 (whatever went wrong, the store itself is whole)
            print(f"chronograph: the server's start-up answers were not kept ({error!r}); the first session "
                  "keeps them", file=sys.stderr)
    return images
