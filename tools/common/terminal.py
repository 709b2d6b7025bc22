"""Readable tables for the terminal: columns sized to their content, long cells cut."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from typing import Any

__all__ = ["format_rows", "print_rows"]

WIDEST = 60


def format_rows(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """The lines of a table: a header, a rule, one line per row."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return lines


def print_rows(header: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
    """Print a table (or "(none)" under its title when there are no rows)."""
    if title:
        print(f"{title} ({len(rows)})")
    if not rows:
        print("  (none)\n")
        return
    # Cut to the terminal's width only on a terminal: a pipe or a file gets whole lines.
    width = shutil.get_terminal_size((160, 24)).columns if sys.stdout.isatty() else None
    for line in format_rows(header, rows):
        print(line[:width])
    print()


def _cell(value: Any) -> str:
    text = "" if value is None else str(value).replace("\n", " ")
    return text if len(text) <= WIDEST else text[: WIDEST - 1] + "…"
