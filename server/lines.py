"""The lines of the stdio wire: split in linear time, with a cap on a line's length.

Free of the MCP SDK, so that the fast front (`server/front.py`) reads with it before the
SDK is imported, and the SDK's transport (`server/stdio.py`) goes on from where it stopped.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["CHUNK", "HEAD", "PIPE", "Lines", "Oversized", "widen", "wire"]

CHUNK = 1 << 16
"""Bytes read from stdin at a time."""
HEAD = 4096
"""How much of an oversized line is kept: enough to find the id of the request it carried."""
PIPE = 1 << 20
"""Bytes the stdout pipe is asked to hold (Linux's default maximum for any user): a reply of a
megabyte goes out in one write instead of sixteen turns of the client reading 64 KiB."""


class Oversized(bytes):
    """The start of a line over the size limit (the rest was dropped as it arrived)."""


class Lines:
    """Splits a byte stream into lines, without their newline; an `Oversized` start stands for a
    line over `limit` bytes, which is dropped as it arrives (all but its first `HEAD` bytes),
    never held whole. Linear in the bytes fed, whatever the line lengths."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._pending = bytearray()
        self._dropping = False

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` completes."""
        done: list[bytes] = []
        pending, start = self._pending, 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end == -1 else chunk[start:end]
            if self._dropping:
                if len(pending) < HEAD:
                    pending += piece[: HEAD - len(pending)]
            else:
                pending += piece
                if len(pending) > self.limit:
                    self._dropping = True
                    del pending[HEAD:]
            if end == -1:
                return done
            done.append(Oversized(pending) if self._dropping else bytes(pending))
            pending.clear()
            self._dropping = False
            start = end + 1

    def end(self) -> list[bytes]:
        """The last line, if the stream ended without a newline."""
        if self._dropping:
            return [Oversized(self._pending)]
        return [bytes(self._pending)] if self._pending else []


@contextmanager
def wire() -> Iterator[tuple[int, int]]:
    """(stdin, stdout) as private descriptors of the wire; meanwhile fd 1 points at stderr,
    so that a stray print cannot corrupt the wire."""
    stdin, stdout, saved = os.dup(0), os.dup(1), os.dup(1)
    os.dup2(2, 1)
    widen(stdout)
    try:
        yield stdin, stdout
    finally:
        sys.stdout.flush()  # what was printed meanwhile goes to stderr, not after the last reply
        os.dup2(saved, 1)
        for fd in (saved, stdin, stdout):
            os.close(fd)


def widen(fd: int, size: int = PIPE) -> None:
    """Let the pipe `fd` writes to hold `size` bytes, where the system allows it (not a pipe,
    not Linux, or over the system's limit: it stays as it is)."""
    try:
        import fcntl  # noqa: PLC0415 (not on Windows)

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError):
        pass
