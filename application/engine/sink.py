"""Where a long text goes as it is made: a `Sink` passes each piece on (to a file) or holds it
(an answer), and stops with `Overflow` once it passes its limit, so that an answer too large
for a reply is refused after the pieces the limit allows, not after the whole text was made.
Exports write into one (`lifecycle.export`, the team memory's `memory_export`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable
from typing import IO, Any

__all__ = ["MAIN", "SPILL", "Overflow", "Section", "Sink", "json_list"]

SPILL = 16 << 20
"""Characters of held sections a sink passing its text on keeps in memory (see `Sink`)."""
Section = tuple[int, str]
MAIN: Section = (0, "")
"""The section of every piece of a format written in order (all but Markdown's)."""


class Overflow(Exception):
    """A sink passed its limit: `chars` characters were written when it stopped."""

    def __init__(self, chars: int) -> None:
        super().__init__(chars)
        self.chars = chars


class Sink:
    """Where an export's text goes, a piece at a time: passed on to `write` as it comes (a file),
    or held (`text`). Pieces given a section other than `MAIN` are held until `close`, which
    writes every section in order of its key (Markdown writes its entities under their type); a
    sink that passes its text on keeps at most `spill` characters of them in memory, the rest
    in a temporary file until then.

    Raises `Overflow` once more than `limit` characters came (None: no limit)."""

    def __init__(self, write: Callable[[str], object] | None = None, *, limit: int | None = None,
                 spill: int = SPILL) -> None:
        self._write = write
        self._held: list[str] = []
        self._sections: dict[Section, list[str]] = {}
        self._sectioned = False
        self._pending = 0
        self._spill = spill
        self._file: IO[bytes] | None = None
        self._spilled: dict[Section, list[tuple[int, int]]] = {}
        """Each section's chunks in the temporary file: (offset, bytes)"""
        self.limit = limit
        self.chars = 0

    def __call__(self, text: str, section: Section = MAIN) -> None:
        self.chars += len(text)
        if self.limit is not None and self.chars > self.limit:
            raise Overflow(self.chars)
        if section == MAIN and not self._sectioned:
            self._emit(text)
            return
        self._sectioned = True
        self._sections.setdefault(section, []).append(text)
        self._pending += len(text)
        if self._write is not None and self._pending > self._spill:
            self._spill_sections()

    def _spill_sections(self) -> None:
        """Move the held sections into the temporary file, a chunk each."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="chronograph-export-")  # noqa: SIM115 (closed by close)
        for section, texts in self._sections.items():
            data = "".join(texts).encode("utf-8", "surrogatepass")
            self._spilled.setdefault(section, []).append((self._file.tell(), len(data)))
            self._file.write(data)
        self._sections.clear()
        self._pending = 0

    def _emit(self, text: str) -> None:
        if self._write is None:
            self._held.append(text)
        else:
            self._write(text)

    def close(self) -> None:
        """Write the held sections, in order."""
        try:
            for section in sorted(self._sections.keys() | self._spilled.keys()):
                for offset, length in self._spilled.pop(section, ()):
                    assert self._file is not None
                    self._file.seek(offset)
                    self._emit(self._file.read(length).decode("utf-8", "surrogatepass"))
                for text in self._sections.pop(section, ()):
                    self._emit(text)
        finally:
            if self._file is not None:
                self._file.close()
                self._file = None
            self._pending = 0

    def discard(self) -> None:
        """Drop what is held (the export failed): nothing more is written, the temporary file goes."""
        self._sections.clear()
        self._spilled.clear()
        if self._file is not None:
            self._file.close()
            self._file = None

    def text(self) -> str:
        """Everything written (a sink without `write`), once closed."""
        self.close()
        return "".join(self._held)


_INDENTED = json.JSONEncoder(ensure_ascii=False, indent=2)


def json_list(out: Sink, items: Iterable[Any], pad: str) -> None:
    """Write `items` as `json.dumps(..., indent=2)` writes a list nested at `pad`, an item at a time
    (JSON text holds no line break but between its parts, so an item's own dump, re-indented, is
    its place in the whole)."""
    inner = pad + "  "
    gap = "[\n" + inner
    for item in items:
        out(gap + _INDENTED.encode(item).replace("\n", "\n" + inner))
        gap = ",\n" + inner
    out("[]" if gap[0] == "[" else "\n" + pad + "]")
