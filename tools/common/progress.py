"""Progress on long work: a bar per stage on stderr when it is a terminal, nothing otherwise.

tqdm draws the bars (its rate and time left are smoothed, so the first tick shows no
absurd rate); each stage has its own bar and its own total.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

__all__ = ["Progress"]


class Progress:
    """Call with (stage, done, total) as work advances; `finish()` ends the last bar."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self._stage = ""
        self._bar: Any = None

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.live:
            return
        if stage != self._stage or self._bar is None:
            self.finish()
            from tqdm import tqdm  # only when a bar is drawn

            self._stage = stage
            self._bar = tqdm(total=total, desc=stage, file=self.stream, unit_scale=True, leave=True,
                             dynamic_ncols=True)
        if self._bar.total != total:
            self._bar.total = total
        self._bar.update(max(0, done - self._bar.n))

    def finish(self) -> None:
        """End the current bar."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        self._stage = ""
