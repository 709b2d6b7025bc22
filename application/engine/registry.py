"""The tool registry: each tool declared once, by decorating its handler.

A declaration gives the name, title, description and kind; the argument and output
Structs are the handler's own annotations. Commands (kinds write and delete) are
handlers `(batch, args) -> output` that decide events in one write transaction (see
`Batch`); queries (kinds read and export) are `(memory, args) -> output`. The MCP
adapter, the command line and the profiles all read the same `Tool` records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_type_hints

from chronograph.application.engine.arguments import Args
from chronograph.application.engine.outputs import Out

__all__ = ["CORE", "TEAM", "Files", "Kind", "Registry", "Tool", "find"]

Kind = Literal["read", "write", "delete", "export"]
"""read: answers without writing; write: appends events; delete: appends deletions (or
empties something); export: reads, and may write a file when the server allows it."""

Files = Literal["export-dir", "project"]
"""Where a tool may write files, whatever its kind: the server's --export-dir, or the project
root a call names (n2n: its export, and the `.mcp` marker that adopts a new root)."""

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Tool:
    """One tool: how it presents itself, what it takes, what it answers, who answers."""

    name: str
    title: str
    description: str
    arguments: type[Args]
    output: type[Out]
    kind: Kind
    handler: Callable[[Any, Any], Out]
    reads: frozenset[str] = frozenset()
    """The `action` values of a command that only read: they run as a query (no write
    transaction), with the handler given the memory instead of a batch."""
    files: Files | None = None
    """Where the tool may write files (None: nowhere); its annotations say so where the server allows it."""
    replayed: Callable[[Any], None] | None = None
    """For a command whose answer its commit stores before work that follows (an erasure's scrub):
    given a batch, registers that work again (`Batch.then`) for a retry with its requestId that
    finds the stored answer incomplete (the commit's answer lost, or the process ended between)."""

    @property
    def writes(self) -> bool:
        """Whether the tool is a command (it may append events)."""
        return self.kind in ("write", "delete")


class Registry:
    """Tools by name, in the order they were declared."""

    def __init__(self, tools: Iterable[Tool] = (), *, files: Files | None = None) -> None:
        self.files = files
        """Where every tool declared through this registry may write files (an export, whatever
        else its own declaration says, writes into the export directory)."""
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> Tool:
        """Register `tool`.

        Raises:
            ValueError: If a tool of that name is registered already.
        """
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is registered already")
        self._tools[tool.name] = tool
        return tool

    def command(
        self, name: str, title: str, description: str, *, kind: Kind = "write", reads: Iterable[str] = (),
        replayed: Callable[[Any], None] | None = None,
    ) -> Callable[[F], F]:
        """Declare the decorated `(batch, args) -> output` handler as a tool that writes
        (except for the `action` values in `reads`); `replayed`: see `Tool.replayed`."""
        return self._declare(name, title, description, kind, frozenset(reads), replayed)

    def query(self, name: str, title: str, description: str, *, kind: Kind = "read") -> Callable[[F], F]:
        """Declare the decorated `(memory, args) -> output` handler as a tool that reads."""
        return self._declare(name, title, description, kind, frozenset())

    def _declare(
        self, name: str, title: str, description: str, kind: Kind, reads: frozenset[str],
        replayed: Callable[[Any], None] | None = None,
    ) -> Callable[[F], F]:
        def decorator(handler: F) -> F:
            hints = get_type_hints(handler)
            arguments, output = hints.get("args"), hints.get("return")
            if not (isinstance(arguments, type) and issubclass(arguments, Args)):
                raise TypeError(f"{handler.__qualname__}: annotate its `args` parameter with an Args Struct")
            if not (isinstance(output, type) and issubclass(output, Out)):
                raise TypeError(f"{handler.__qualname__}: annotate its return with an Out Struct")
            files = self.files or ("export-dir" if kind == "export" else None)
            self.add(Tool(name, title, description, arguments, output, kind, handler, reads, files, replayed))
            return handler

        return decorator

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """The tool names, in declaration order."""
        return list(self._tools)

    def select(self, names: Iterable[str]) -> Registry:
        """The tools called `names`, in that order.

        Raises:
            KeyError: If one of them is not registered.
        """
        return Registry(self._tools[name] for name in names)


CORE = Registry()
"""Chronograph's own tools (the official nine among them), declared in the modules of the core."""

TEAM = Registry()
"""The team memory's fifteen tools, as Agent Memory names and shapes them (`application.team`)."""


def find(tool: Tool | str) -> Tool:
    """`tool`, or the tool of that name: Chronograph's own, else the team memory's.

    Raises:
        KeyError: If neither declares it.
    """
    if isinstance(tool, Tool):
        return tool
    return CORE[tool] if tool in CORE else TEAM[tool]
