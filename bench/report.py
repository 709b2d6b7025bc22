"""How the benchmark scripts print their tables and write their JSON."""

from __future__ import annotations

import json
import platform
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def print_table(title: str, rows: Sequence[tuple[str, str, str]]) -> None:
    """Print `rows` of (measure, figure, target) under `title`, aligned."""
    header = ("measure", "figure", "target")
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(3)]
    print(f"\n{title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    print("  ".join("-" * w for w in widths))
    for measure, figure, target in rows:
        print(f"{measure.ljust(widths[0])}  {figure.rjust(widths[1])}  {target}".rstrip())


def write_json(path: Path, figures: dict[str, Any]) -> None:
    """Write `figures` with the machine and time they were measured on."""
    document = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        **figures,
    }
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")
