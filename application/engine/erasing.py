"""What every erasure command shares: its reason, and the scrub that follows its commit.

Forgetting an entity (`lifecycle/forgetting.py`) and a team entry (`team/forgetting.py`)
erase in the log's one write transaction, with the views' erase hook; once it commits,
the store's files are scrubbed of the old copies (`Memory.scrub`), and the answer says
whether every one of them was overwritten.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, TypeVar

from chronograph.application.engine.batch import Batch
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.errors import advised
from msgspec import Meta

__all__ = ["Reason", "scrub_after"]

Reason = Annotated[str, Meta(min_length=1, max_length=1024)]
"""Why something is forgotten (kept verbatim in the audit: say why, not what)."""

T = TypeVar("T")


def scrub_after(batch: Batch, needles: Sequence[bytes], finish: Callable[[T, bool, str], T]) -> None:
    """Once `batch` has committed, scrub the store (databases whose branch keys hold one of
    `needles` are repacked) and complete its answer with `finish(answer, scrubbed, message)`."""

    def scrub(output: T) -> T:
        assert batch.scrub is not None, "a command runs in a Memory's batch"
        try:
            done = batch.scrub(needles)
        except EventStoreError as error:
            return finish(output, False, (
                f"Erased from the log and every view, but the store's free pages could not be scrubbed: {error}. "
                f"Run {advised('scrub', batch.store)} to finish"))
        if done.held:
            return finish(output, False, (
                f"Erased from the log and every view; {done.held} old copies are still visible to a long reader (an "
                f"open transaction) and keep the old bytes until the next scrub ({advised('scrub', batch.store)}, or "
                "the next process that opens the store to write)"))
        if done.unreached:
            return finish(output, False, f"Erased from the log and every view; {done.unreached}")
        return finish(output, True, f"Erased; {done.zeroed} old pages of the store overwritten")

    batch.then(scrub)
