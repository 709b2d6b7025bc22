"""A small filesystem of a test's own, full or nearly (it needs root, to mount it; else the test is
skipped)."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def full_filesystem(folder: Path, size: str = "1m", leave: int = 0) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `folder` (made), filled until at most `leave` bytes are free
    by the file `filler` (remove it to give the room back); unmounted when the block ends."""
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small filesystem here (needs root)")
    try:
        with (folder / "filler").open("wb", buffering=0) as filler, contextlib.suppress(OSError):
            while (free := _free(folder) - leave) > 0 and filler.write(bytes(min(free, 4096))):
                pass
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def _free(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize
