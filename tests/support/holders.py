"""A store held open by another process, for as long as a test needs it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOLDER = textwrap.dedent("""
    import sys, lmdb
    if sys.argv[2] == "lmdb":  # LMDB alone, as an older server or mdb_stat would hold it
        env = lmdb.open(sys.argv[1], max_dbs=64, readonly=True)
    else:
        from chronograph.eventstore import LmdbLog
        log = LmdbLog(sys.argv[1], readonly=sys.argv[2] == "reader", create=False)
    print("open", flush=True)
    sys.stdin.readline()
""")


@contextmanager
def held_open(store: Path, how: str = "reader") -> Iterator[subprocess.Popen[str]]:
    """`store` open in another process (`how`: a Chronograph `reader`, a `writer`, or `lmdb` alone)
    from when the block starts to when it ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store), how], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        yield holder
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
        assert holder.stdout is not None
        holder.stdout.close()
