"""Print (or write) a client's hook settings that recall memory at each session's start.

    chronograph hooks claude-code                 the entries for .claude/settings.json
    chronograph hooks claude-code --write         merge them into ./.claude/settings.json
    chronograph hooks claude-code --write --user  ... into ~/.claude/settings.json

The hooks run `chronograph context` when a session starts (the hot context, recent
entities and what changed since the client's previous session) and when the user sends a
prompt (only the entities the prompt names or strongly matches). `--write` keeps
everything the file holds, adds only what is missing (a second run changes nothing),
saves the old file beside it as `settings.json.bak`, and refuses a file it cannot parse.
For clients with rules files instead of hooks (Cursor, Codex, Gemini CLI), see the README.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

from chronograph.tools.common.parsing import add_store_argument

__all__ = ["add_arguments", "entries", "merge", "run"]

CLIENTS = ("claude-code",)
SETTINGS_LIMIT = 16 << 20
"""The largest settings file read (Claude Code's are a few KiB)."""
EVENTS = {"SessionStart": "", "UserPromptSubmit": " --budget 400"}
"""Claude Code's hook events that add a command's stdout to the model's context."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `hooks`."""
    parser.add_argument("client", choices=CLIENTS, help="the client whose settings to print or write")
    add_store_argument(parser)
    parser.add_argument("--write", action="store_true", help="merge the entries into the settings file "
                        "(default: print them)")
    parser.add_argument("--user", action="store_true", help="with --write: the user's settings "
                        "(~/.claude/settings.json) instead of this project's (.claude/settings.json)")
    parser.add_argument("--client-name", default="claude-code", metavar="NAME",
                        help="the name the client's writes are recorded as (default: claude-code)")


def command(args: argparse.Namespace) -> str:
    """The command line the hooks run: this very installation, whatever PATH holds then."""
    words = [sys.executable, "-m", "chronograph", "context", "--client", args.client_name]
    if args.store:
        words += ["--store", str(Path(args.store).expanduser().resolve())
                  if "://" not in str(args.store) else str(args.store)]
    if args.cache:  # a PostgreSQL store's views: the folder named, not a second copy in the per-user cache
        words += ["--cache", str(Path(args.cache).expanduser().resolve())]
    return shlex.join(words)


def entries(run: str) -> dict[str, list[dict[str, Any]]]:
    """The `hooks` entries of Claude Code's settings that run `run` (plus each event's options)."""
    return {event: [{"hooks": [{"type": "command", "command": run + extra, "timeout": 10}]}]
            for event, extra in EVENTS.items()}


def merge(settings: dict[str, Any], wanted: dict[str, list[dict[str, Any]]]) -> bool:
    """Put `wanted`'s hook entries into `settings` in place of the hooks an earlier `hooks --write`
    wrote (another --store or --client-name: two would recall twice); whether anything changed.
    An event that already runs exactly the wanted commands is left as it is; other hooks, and
    the groups that hold them, are kept.

    Raises:
        ValueError: If `settings["hooks"]` (or an event's list in it) is not what Claude Code reads.
    """
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise ValueError('"hooks" is not an object')
    changed = False
    for event, groups in wanted.items():
        present = hooks.setdefault(event, [])
        if not isinstance(present, list):
            raise ValueError(f'"hooks.{event}" is not a list')
        commands = [h.get("command") for g in present if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                    for h in g["hooks"] if isinstance(h, dict) and _ours(h.get("command"))]
        if commands == [h["command"] for g in groups for h in g["hooks"]]:
            continue
        kept = []
        for group in present:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list) and group["hooks"]:
                rest = [h for h in group["hooks"] if not (isinstance(h, dict) and _ours(h.get("command")))]
                if not rest:
                    continue  # a group of ours alone
                group = {**group, "hooks": rest} if len(rest) < len(group["hooks"]) else group
            kept.append(group)
        present[:] = kept + groups
        changed = True
    return changed


def _cache_problem(cache: Path) -> str | None:
    """What `context` would refuse in the folder named as a cache, if anything."""
    from chronograph.eventstore.files import DATA_FILE  # noqa: PLC0415
    from chronograph.eventstore.lmdb.datafile import database_names  # noqa: PLC0415

    if not cache.exists():
        return None
    if not cache.is_dir():
        return "is a file"
    if not os.access(cache, os.W_OK | os.X_OK):  # a cache is written (its views follow the log)
        return "cannot be written (a read-only mount, or another user's)"
    if not (cache / DATA_FILE).exists():
        return "is not empty and holds no cache" if any(cache.iterdir()) else None
    try:
        return "holds a store's log, not a cache" if b"log" in database_names(cache) else None
    except Exception:  # noqa: BLE001 (LMDB's errors and the store's: unreadable is what to say)
        return "holds an LMDB file that cannot be read"


def _ours(command: Any) -> bool:
    """Whether `command` is one `hooks --write` writes: this command's words and nothing else
    (`<python> -m chronograph context` or `chronograph context`, then only --client, --store, --cache
    and --budget with their values; a shell operator makes it the user's own)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) > 3 and words[1:4] == ["-m", "chronograph", "context"]:
        rest = words[4:]
    elif len(words) > 1 and Path(words[0]).name == "chronograph" and words[1] == "context":
        rest = words[2:]
    else:
        return False
    return len(rest) % 2 == 0 and all(flag in ("--client", "--store", "--cache", "--budget") for flag in rest[::2])


def run(args: argparse.Namespace) -> int:
    """Print the entries, or merge them into the settings file."""
    from chronograph.eventstore.files import DATA_FILE, ReadRefused, WriteRefused, read_regular, write_file  # noqa: PLC0415
    from chronograph.eventstore.postgres.address import holds_secret  # noqa: PLC0415

    if args.store and "://" not in str(args.store) and not (Path(args.store).expanduser() / DATA_FILE).is_file():
        return _refuse(f"there is no store at {args.store}; the hooks would recall nothing (name a store that "
                       "exists, or leave --store out for the per-user store)")
    if args.store and "://" in str(args.store) and holds_secret(str(args.store)):
        return _refuse("the store's URL holds its database password, which the hooks would write into the settings "
                       "file (often committed): give it in PGPASSWORD or ~/.pgpass, and the URL without it")
    problem = _cache_problem(Path(args.cache).expanduser()) if args.cache else None
    if problem:  # context would refuse it at every session, on stderr, and recall nothing
        return _refuse(f"--cache {args.cache} {problem}; the hooks would recall nothing (name an empty or new "
                       "folder, or leave --cache out for the per-user cache)")
    wanted = entries(command(args))
    if not args.write:
        print(json.dumps({"hooks": wanted}, indent=2))
        return 0
    base = Path.home() if args.user else Path.cwd()
    path = base / ".claude" / "settings.json"
    settings: dict[str, Any] = {}
    try:  # never through a link, never blocking on a FIFO (a `.claude` link is checked at the write)
        old = read_regular(path, limit=SETTINGS_LIMIT, folder_links=True)
    except ReadRefused as error:  # says which: a link, a folder, a FIFO, too large
        return _refuse(f"{error} (settings are never read or written through a link)")
    except OSError as error:
        return _refuse(f"cannot read {path}: {error.strerror}")
    if old is not None:
        try:
            settings = json.loads(old, object_pairs_hook=_once) if old.strip() else {}
        except RecursionError:
            return _refuse(f"{path} nests too deep to be read; fix it or move it away, then run again")
        except _Twice as error:
            return _refuse(f"{path} holds {error} (it could not be written back whole); fix it, then run again")
        except ValueError as error:
            return _refuse(f"{path} is not JSON ({error}); fix it or move it away, then run again")
        try:
            json.dumps(settings, allow_nan=False)  # what is read is written back as it was
        except ValueError:
            return _refuse(f"{path} holds a number out of JSON's range (as 1e400 is), which would not be written "
                           "back as it is; fix it, then run again")
        if not isinstance(settings, dict):
            return _refuse(f"{path} holds no JSON object")
    try:
        added = merge(settings, wanted)
    except ValueError as error:
        return _refuse(f"{path}: {error}")
    if not added:
        print(f"{path} already runs chronograph context; nothing to change")
        return 0
    try:
        backup = _backup_name(path, old) if old is not None else None
        if backup is not None and old is not None:  # `within`: a `.claude` linked elsewhere is not written into
            private = stat.S_IMODE(os.lstat(path).st_mode)  # the copy is as private as the file (API keys)
            write_file(backup, old, overwrite=True, within=base, mode=private)
        write_file(path, (json.dumps(settings, indent=2) + "\n").encode(), overwrite=True, parents=True, within=base)
    except (WriteRefused, OSError) as error:
        return _refuse(f"cannot write {path}: {error}")
    saved = f" (the old file is {backup.name})" if backup is not None else ""
    print(f"wrote the hooks into {path}{saved}")
    return 0


class _Twice(ValueError):
    """A settings file holds a key twice in one object."""


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys each come once (writing back one that holds a key twice would drop one)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Twice(f"the key {key!r} twice in one object")
        found[key] = value
    return found


def _backup_name(path: Path, old: bytes) -> Path:
    """Where the old settings are kept: `<name>.bak`, or the first `<name>.bak.N` that holds
    nothing else (a backup someone kept is never written over)."""
    candidate, n = path.with_name(path.name + ".bak"), 0
    while not _free(candidate, old):
        n += 1
        candidate = path.with_name(f"{path.name}.bak.{n}")
    return candidate


def _free(candidate: Path, old: bytes) -> bool:
    """Whether the backup may be written at `candidate`: nothing is there, or a regular file
    holding `old` already (a link, a FIFO, a folder or any other file is someone else's)."""
    from chronograph.eventstore.files import ReadRefused, read_regular  # noqa: PLC0415

    try:
        found = read_regular(candidate, limit=len(old), folder_links=True)
    except (ReadRefused, OSError):
        return False
    return found is None or found == old


def _refuse(reason: str) -> int:
    print(f"chronograph hooks: {reason}; nothing was written", file=sys.stderr)
    return 2
