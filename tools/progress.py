"""Progress on long work, on stderr: a live line on a terminal, a line per tenth otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Call with (stage, done, total) as work advances; `finish()` ends the line."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self._stage = ""
        self._started = time.monotonic()
        self._tenth = -1

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage != self._stage:
            self.finish()
            self._stage, self._started, self._tenth = stage, time.monotonic(), -1
        fraction = done / total if total else 1.0
        elapsed = time.monotonic() - self._started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate else 0.0
        line = f"{stage}: {done:,}/{total:,} ({fraction:5.1%}) {rate:,.0f}/s, {eta:,.0f}s left"
        if self.live:
            self.stream.write("\r" + line.ljust(78))
            self.stream.flush()
        elif int(fraction * 10) > self._tenth:
            self._tenth = int(fraction * 10)
            self.stream.write(line + "\n")

    def finish(self) -> None:
        """End the current live line."""
        if self.live and self._stage:
            self.stream.write("\n")
            self.stream.flush()
        self._stage = ""
