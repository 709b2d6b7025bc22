"""SIGTERM taken as SIGINT is: the `KeyboardInterrupt` it raises unwinds the work, so every
`finally` runs: a half-written output file or a restore's staging folder is removed, a child
process killed, a store closed. `timeout`, systemd and docker stop a process with SIGTERM;
without this, Python's default ended it where it stood and left those behind."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Stopped", "stopped_by_signals"]


class Stopped(KeyboardInterrupt):
    """Work stopped by signal `signum` (SIGINT or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT raise `Stopped`; a second signal while the work
    unwinds ends the process at once. Outside the main thread (a test's), signals stay as they are."""

    def stop(signum: int, _: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        raise Stopped(signum)

    try:
        before = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
