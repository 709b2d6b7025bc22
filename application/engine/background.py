"""What a memory does between calls, in threads of its own: following what other servers write
to a database store, and keeping the search indexes' images current once calls pause.

`Memory.follow` and `Memory.keep_images` start them; `Memory.close` sets `stopping`, and each
loop ends at its next look.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from chronograph.application.engine.erasing import settle_owed
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError

if TYPE_CHECKING:
    from chronograph.application.engine.service import Memory

__all__ = ["FOLLOW_PAUSE", "IMAGE_IDLE", "LOOK_ANSWER", "RECHECK", "following", "keeping"]

FOLLOW_PAUSE = 0.01
"""Seconds a follower waits after folding other servers' writes before it looks again."""

LOOK_ANSWER = 5.0
"""Seconds a follower's look at the log (a snapshot's read of the head, a LISTEN) waits for the
database's answer before it says the database does not answer: a working one answers those in
milliseconds, a loaded one within a second or two; a load balancer probing /ready every few
seconds learns of a hung one at its next probe or the one after. (The wait for a notification is
bounded by the look's own timeout, and a catch-up's reads, which fetch up to 4 MB per round
trip, by the log's usual bound.)"""

RECHECK = 10
"""Every how many looks a follower compares the views with the log even though its head stayed
(a log restored and written back to the same head between two looks)."""

IMAGE_IDLE = 1.0
"""Seconds without a tool call before a server saves the search images that changed."""


def following(memory: Memory) -> None:
    """Fold what other servers write into `memory`'s views as the log announces it (or every
    second), until the memory closes; say in `memory.reachable` why the database cannot be
    reached when it cannot."""
    stopping = memory.stopping
    looked: int | None = None  # the head at the last look (at first: where the views stand)
    looks = 0
    while not stopping.is_set():
        looks += 1
        try:
            after = memory.checkpoint()
            looked = after if looked is None else looked
            with memory.log.patience(1.0), memory.log.answering(LOOK_ANSWER):  # a database out of reach, or one
                # that does not answer, is said at once, and a stop not held up
                head, erasures = memory.log.watch(after, timeout=1.0)
            memory.views.observed_erasures = erasures
            memory.reachable = None
            checkpoint = memory.checkpoint()  # a write of this process may have brought the views there
            folded = head > checkpoint or erasures != memory.views.erasures_seen
            if folded or head != looked or looks % RECHECK == 0:  # a head that moved otherwise (and now and
                # then one that did not): the log may have gone back under the views (restored, failed
                # over), which their catch-up looks at (see `projections.live.anchor`)
                with memory.lock:  # to the head announced: asking the log for it again costs a snapshot
                    checkpoint = memory.views.catch_up(until=head)
            if memory.owed.scrub:  # an erasure of this process cut off: its scrub is finished now, not at a reopen
                with memory.lock:
                    settle_owed(memory)
            looked = head
            memory.followed = checkpoint
            if folded:  # what others announce meanwhile is folded together at the next look: a look
                # per write of every other server costs each follower CPU that N servers writing at
                # once do not have (a server's own writes catch its views up anyway)
                stopping.wait(FOLLOW_PAUSE)
        except (EventStoreError, ProjectionError) as error:
            memory.reachable = str(error)
            stopping.wait(1.0)
        except Exception as error:  # noqa: BLE001 (a follower that died would leave /ready saying ready
            # while the views stop following: anything else the driver raises is said, and looked at again)
            memory.reachable = f"the follower of {memory.log.location} failed: {type(error).__name__}: {error}"
            stopping.wait(1.0)


def keeping(memory: Memory, idle: float) -> None:
    """Save the images of the search indexes whose entities changed, and keep a database store's
    seed when the views have moved far enough past it, each time no call has begun for `idle`
    seconds, until the memory closes."""
    while not memory.stopping.wait(idle / 2):
        if time.monotonic() - memory.last_call < idle:
            continue
        try:
            memory.keep_images_now()
            memory.keep_seed_now()  # a database store's new caches start from it (outside the lock: reads only)
        except Exception:  # noqa: BLE001 (an image is an optimisation: tried again later, or the store closed)
            memory.stopping.wait(idle)
