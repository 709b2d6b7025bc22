"""The `chronograph` command: one entry point over the server and the operator tools.

    chronograph [serve] [--store PATH] ...   the MCP server (stdio by default)
    chronograph replay ...                   the graph at a past moment; diffs; rebuilds
    chronograph audit ...                    who changed what, when, in which call
    chronograph import FILE / export ...     move memories in and out
    chronograph backup -o FILE / restore FILE   the whole store in one file, and back
    chronograph forget NAME --reason R       erase an entity for real (and `scrub`)
    chronograph copy --from SRC --to DST     a log from LMDB to PostgreSQL or back, checked
    chronograph ui                           the graph and its history in a browser
    chronograph context / hooks claude-code  recall at a session's start, from a client's hooks
    chronograph suggest                      duplicates to merge, stale facts to invalidate
    chronograph token create|list|revoke     bearer tokens for HTTP: a principal and its grants

Each subcommand is a module with `add_arguments(parser)` and `run(args)`; the MCP SDK is
imported only when a server starts.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import signal
import sys
from typing import Any

from chronograph.tools.common.parsing import Parser, closed_output
from chronograph.tools.common.signals import Stopped, stopped_by_signals

import chronograph

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

SUBCOMMANDS = {
    "serve": ("chronograph.tools.serve", "serve the memory over MCP (stdio, or --http)"),
    "replay": ("chronograph.tools.replay", "the graph as of a time or position, diffs, rebuild and verify"),
    "audit": ("chronograph.tools.audit", "inspect the audit log: who changed what, when, by which call"),
    "import": ("chronograph.tools.import_graph", "import a memory: the official file, n2n, Agent Memory, Kuzu, ..."),
    "export": ("chronograph.tools.export_graph", "export the graph as JSONL, JSON, Markdown, Mermaid or DOT"),
    "backup": ("chronograph.tools.backup", "back the whole store up into one sealed file, beside a running server"),
    "restore": ("chronograph.tools.restore", "restore a store from a backup file, checked before and after"),
    "forget": ("chronograph.tools.forget", "erase an entity for real, from the log and everything derived from it"),
    "scrub": ("chronograph.tools.scrub", "overwrite what erasures left that a long reader still held"),
    "ui": ("chronograph.tools.ui", "see the graph and its history in a browser (read-only)"),
    "context": ("chronograph.tools.context", "print what memory holds for this session, for a client's hooks"),
    "suggest": ("chronograph.tools.suggest", "suggest duplicates to merge and stale facts to invalidate"),
    "hooks": ("chronograph.tools.hooks", "print or write a client's hooks that recall memory at each session"),
    "copy": ("chronograph.tools.copy_store", "copy a store's log between LMDB and PostgreSQL, checked event for event"),
    "token": ("chronograph.tools.tokens", "issue, list and revoke bearer tokens for HTTP (a principal, its grants)"),
}
"""name -> (module, one-line help)."""


class _Version(argparse.Action):
    """--version, looked up only when asked (reading the package's metadata takes 0.1 s)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.exit(0, f"chronograph {chronograph.__version__}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of `chronograph` and its subcommands (`only` that one: a command that
    runs from a client's hooks before every session does not import the others)."""
    parser = Parser(
        prog="chronograph",
        description="A memory for MCP agents in which nothing is ever overwritten. "
        "Without a subcommand, serves MCP over stdio.",
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name, (module, summary) in SUBCOMMANDS.items():
        if only is not None and name != only:
            continue
        tool = importlib.import_module(module)
        sub = commands.add_parser(name, help=summary, description=tool.__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        tool.add_arguments(sub)
    return parser


SERVERS = frozenset({"serve", "ui"})
"""The commands that serve until stopped and handle their signals themselves."""


def main(argv: list[str] | None = None) -> int:
    """Run `chronograph` with `argv` (default: the process arguments); return the exit code."""
    whole_process = argv is None  # the command itself, not a caller in this process (a test)
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:  # answered before anything else is imported
        print(f"chronograph {chronograph.__version__}")
        return 0
    if not argv or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        argv = ["serve", *argv]
    fast = argv[0] if argv[0] in SUBCOMMANDS and "-h" not in argv and "--help" not in argv else None
    args = build_parser(fast).parse_args(argv)
    module = importlib.import_module(SUBCOMMANDS[args.command][0])
    if args.command in SERVERS:  # they stop on signals as servers do (see tools/serve.py, uvicorn)
        return _run(module, args)
    try:
        with stopped_by_signals():
            return _run(module, args)
    except Stopped as stop:
        name = signal.Signals(stop.signum).name
        print(f"chronograph {args.command}: stopped by {name}; the store holds what was committed before it, "
              "and a file being written was removed", file=sys.stderr)
        if whole_process:  # die by the signal, cleaned up: a shell loop or systemd sees what ended it
            signal.signal(stop.signum, signal.SIG_DFL)
            signal.raise_signal(stop.signum)
        return 128 + stop.signum


def _run(module: Any, args: argparse.Namespace) -> int:
    from chronograph.eventstore.errors import StoreOpenError  # noqa: PLC0415 (the command imported it already)

    try:
        return int(module.run(args))
    except BrokenPipeError:
        return closed_output()
    except StoreOpenError as error:  # a store named by $CHRONOGRAPH_STORE refused where a command reads it
        print(f"chronograph {args.command}: {error}", file=sys.stderr)
        return 2
    except (MemoryError, ImportError) as error:  # a limit of the whole process: one line, as `restore` says it
        if isinstance(error, ImportError) and "failed to map segment" not in str(error):  # (a library, same cause)
            raise
        print(f"chronograph {args.command}: out of memory (the machine's, or this process's address space: "
              "ulimit -v); the store holds what was committed before it: run it again with more memory",
              file=sys.stderr)
        return 2
    except OSError as error:
        if error.errno not in (errno.EMFILE, errno.ENFILE):
            raise
        print(f"chronograph {args.command}: {error.strerror} ({_open_files()}); raise the limit and run it again",
              file=sys.stderr)
        return 2


def _open_files() -> str:
    """What limits the files this process may open, as a message says it."""
    try:
        import resource  # noqa: PLC0415 (Unix only, and only here)
    except ImportError:
        return "the system's limit"
    return f"this process may have {resource.getrlimit(resource.RLIMIT_NOFILE)[0]} open: ulimit -n"


if __name__ == "__main__":
    raise SystemExit(main())
