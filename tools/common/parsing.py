"""What every `chronograph` command shares: a parser with one-line usage errors, `--store`,
errors that name the flags a user typed, a quiet exit when the output is closed, and the
`main(argv)` of a script."""

from __future__ import annotations

import argparse
import difflib
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from chronograph.application.engine.config import DATABASE_SCHEMES, url_scheme
from chronograph.application.errors import InvalidArgumentsError
from chronograph.eventstore import StoreOpenError
from chronograph.eventstore.postgres.address import refuse_mistyped_url, shown

__all__ = ["Parser", "add_store_argument", "closed_output", "explain", "missing_workspace", "script_main",
           "workspace_names"]

SIGPIPE_EXIT = 141
"""What a shell reports for a program whose reader went away (128 + SIGPIPE)."""


class Parser(argparse.ArgumentParser):
    """Usage errors in one line, pointing at the command's own --help, instead of the usage
    block; an unknown flag or command is named first, with the nearest known one, before a
    missing required argument could hide it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, checking the flags first; a command (no subcommands) refuses leftovers
        itself, so the message names the command, not `chronograph`."""
        args = list(sys.argv[1:] if args is None else args)
        self._check_flags(args)
        parsed, extras = super().parse_known_args(args, namespace)
        if extras and self._commands() is None:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def _commands(self) -> argparse._SubParsersAction[Any] | None:
        return next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)

    def _check_flags(self, args: list[str]) -> None:
        """Refuse the first `--flag` this parser does not know (a unique prefix of one it knows
        is argparse's to accept), and a subcommand that does not exist, naming the nearest."""
        commands = self._commands()
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        for arg in args:
            if arg == "--":
                return
            if arg.startswith("--"):
                flag = arg.split("=", 1)[0]
                if flag not in self._option_string_actions and not any(k.startswith(flag) for k in known):
                    self.error(f"unknown flag {flag}{_nearest(flag, known)}")
            elif commands is not None and not arg.startswith("-"):
                if arg not in commands.choices:
                    self.error(f"unknown command {arg!r}{_nearest(arg, list(commands.choices))}")
                return  # the rest is the subcommand's to check


def _nearest(typed: str, known: list[str]) -> str:
    """"; did you mean X?" for the known word nearest `typed`, if one is near enough."""
    close = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def store_location(text: str) -> str:
    """A store flag's value, checked: a folder, or a postgresql:// URL (its scheme in any case).

    Raises:
        argparse.ArgumentTypeError: If it is empty (an unset shell variable: it would have meant
            the per-user store), a URL of another scheme, or one missing a slash (either would
            have become a folder).
    """
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty (an unset variable?); name a folder or a postgresql:// URL")
    if url_scheme(text.strip()) is not None:  # a URL pasted with a space or a line break around it
        text = text.strip()
    scheme = url_scheme(text)
    if scheme is None:
        try:
            refuse_mistyped_url(text)  # `postgresql:/host/db` would have become a folder
        except StoreOpenError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return text
    if scheme not in DATABASE_SCHEMES:
        raise argparse.ArgumentTypeError(f"{shown(text)!r}: a store is a folder or a postgresql:// URL, not a "
                                         f"{text[:len(scheme)]}:// one")
    return scheme + text[len(scheme):]


def workspace_flag(text: str) -> str:
    """A --workspace value, checked as the tools check a workspace (1 to 128 characters).

    Raises:
        argparse.ArgumentTypeError: If it is not one.
    """
    import msgspec  # noqa: PLC0415 (only where the flag is)
    from chronograph.application.engine.arguments import Workspace  # noqa: PLC0415

    try:
        return msgspec.convert(text, Workspace)
    except msgspec.ValidationError:
        raise argparse.ArgumentTypeError(f"{text!r}: a workspace is named by 1 to 128 characters") from None


def given_name(text: str) -> str:
    """A name flag's value, checked not to be blank (an unset shell variable).

    Raises:
        argparse.ArgumentTypeError: If it is.
    """
    return _not_blank(text, "give a name")


def given_file(text: str) -> str:
    """A file or folder flag's value, checked not to be blank (an unset shell variable would have
    turned the option off).

    Raises:
        argparse.ArgumentTypeError: If it is.
    """
    return _not_blank(text, "name one")


def _not_blank(text: str, instead: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError(f"is empty (an unset variable?); {instead}, or leave the flag out")
    return text


def positive(text: str) -> int:
    """A count flag's value: a whole number of at least 1.

    Raises:
        argparse.ArgumentTypeError: If it is not one.
    """
    return _whole(text, "a whole number", 1, None, "must be at least 1")


def port(text: str) -> int:
    """A TCP port: 0 (any free one) to 65535.

    Raises:
        argparse.ArgumentTypeError: If it is not one.
    """
    return _whole(text, "a port number", 0, 65_535, "a port is 0 to 65535")


def _whole(text: str, what: str, low: int, high: int | None, bounds: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if value < low or (high is not None and value > high):
        raise argparse.ArgumentTypeError(f"{text}: {bounds}")
    return value


def seconds(text: str) -> float:
    """A duration flag's value: a finite number of seconds above 0.

    Raises:
        argparse.ArgumentTypeError: If it is not one.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be a number of seconds above 0")
    return value


def byte_size(text: str) -> int:
    """A size in bytes, with an optional unit (K, M, G, T; powers of 1,024; a trailing B allowed)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    number, unit = text.strip().upper().rstrip("B"), ""
    if number and number[-1] in units:
        number, unit = number[:-1], number[-1]
    try:
        value = int(float(number) * units[unit])
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (like 500M or 20G)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def reply_size(text: str) -> int | None:
    """A reply limit: 0 for none, else at least 64K."""
    value = byte_size(text)
    if value == 0:
        return None
    if value < 64 << 10:
        raise argparse.ArgumentTypeError(f"{text!r} is below the smallest reply limit (64K)")
    return value


def store_size(text: str) -> int:
    """A store's ceiling: at least 1M."""
    value = byte_size(text)
    if value < 1 << 20:
        raise argparse.ArgumentTypeError(f"{text!r} is below the smallest store (1M)")
    return value


def add_store_argument(parser: argparse.ArgumentParser) -> None:
    """--store (resolved by `application.config.resolve_store`) and --cache."""
    parser.add_argument("--store", metavar="PATH|URL", type=store_location,
                        help="store directory or postgresql:// URL (default: $CHRONOGRAPH_STORE, else the per-user "
                             "store)")
    parser.add_argument("--cache", metavar="DIR", type=given_file,
                        help="with a postgresql:// store: where this machine keeps its views (default: the per-user "
                             "cache)")


def explain(error: Exception, flags: dict[str, str]) -> str:
    """The error's text, naming the flag the user typed (`--at`) where the core names the tool
    argument it became (`asOf`)."""
    if isinstance(error, InvalidArgumentsError):
        problem = error.problem
        for field, flag in flags.items():
            if problem == field or problem.startswith((f"{field}:", f"{field}[", f"{field}.")):
                return flag + problem[len(field):]
        return problem
    return str(error)


def workspace_names(memory: Any) -> list[str]:
    """The workspaces `memory`'s store holds, as `list_workspaces` names them to the local user."""
    return [w.name for w in memory.read("list_workspaces", {}).workspaces]


def missing_workspace(workspace: str, known: list[str]) -> str | None:
    """A message when `workspace` is not among the `known` ones (the default always exists)."""
    if workspace == "default" or workspace in known:
        return None
    listed = ", ".join(repr(name) for name in known) or "none yet"
    return f"there is no workspace {workspace!r} in this store; the workspaces are: {listed}"


def closed_output() -> int:
    """Leave quietly when the reader of our output went away (`... | head`)."""
    try:  # Python would complain about the unflushed pipe at exit: point stdout elsewhere first
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    return SIGPIPE_EXIT


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
    args = parser.parse_args(argv)
    try:
        return run(args)
    except BrokenPipeError:
        return closed_output()
