"""What every `chronograph` command shares: a parser with one-line usage errors, `--store`,
and the `main(argv)` of a script."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn

__all__ = ["Parser", "add_store_argument", "script_main"]


class Parser(argparse.ArgumentParser):
    """Usage errors in one line, pointing at --help, instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """--store, resolved by `server.config.resolve_store`."""
    parser.add_argument("--store", metavar="PATH",
                        help="store directory (default: $CHRONOGRAPH_STORE, else the per-user store)")


def script_main(
    prog: str,
    doc: str | None,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    run: Callable[[argparse.Namespace], int],
    argv: list[str] | None,
) -> int:
    """Parse `argv` for a tool script and run it; return the exit code."""
    parser = Parser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))
