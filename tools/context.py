"""Print what memory holds for this session, as Markdown, for a client's hooks.

    chronograph context                          the default workspace (or the project of this folder)
    chronograph context --project ~/src/app      the memory of the project at that root
    chronograph context --query "billing bug"    the entities most relevant to a question
    echo '{"hook_event_name": "UserPromptSubmit", "prompt": "...", "cwd": "..."}' | chronograph context

Clients such as Claude Code run a command when a session starts and when the user sends a
prompt, and add what it prints to the model's context. Given the hook's JSON on stdin, the
project is found from its `cwd` (the nearest n2n project root above it that a client adopted or
whose files were imported) and, on a prompt, only entities the prompt names are printed: nothing
at all when none does. It only reads, works while a server holds the store, and never breaks the
client's session: whatever goes wrong (no store, a damaged one, a misspelt --workspace, garbage on
stdin), it exits 0 with nothing on stdout and one line on stderr. `chronograph hooks claude-code`
prints the settings that run it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from chronograph.tools.common.parsing import add_store_argument

__all__ = ["add_arguments", "run"]

PROMPT_EVENTS = frozenset({"UserPromptSubmit", "BeforeAgent", "beforeSubmitPrompt"})
"""Hook events that carry the user's prompt (Claude Code's, Gemini CLI's, Cursor's)."""
MAX_STDIN = 1 << 20
"""The most of a hook's JSON read (a prompt can be long; a stream that never ends is not)."""

DAY = 86_400.0
"""The longest --timeout armed: a longer one (or an infinite one) is none."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `context`."""
    add_store_argument(parser)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workspace", help="the workspace to recall (default: the project of the hook's cwd, "
                       "else default)")
    where.add_argument("--project", metavar="PATH", help="the project whose memory to recall (its root, or a "
                       "folder inside it)")
    parser.add_argument("--query", help="what the session is about: picks the entities shown")
    parser.add_argument("--budget", type=int, default=None, metavar="TOKENS",
                        help="print at most this many tokens (default: 1500 at a session's start, 400 on a prompt)")
    parser.add_argument("--client", metavar="NAME", default=os.environ.get("CHRONOGRAPH_ACTOR") or None,
                        help="the client whose previous session 'what changed since' counts from: the name its "
                        "writes are recorded as, e.g. claude-code (default: $CHRONOGRAPH_ACTOR)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS",
                        help="give up (printing nothing) after this long (default: 5)")
    parser.add_argument("--profile", default="chronograph", choices=["chronograph", "n2n", "kuzu"],
                        help="whose words to use (default: chronograph)")


def run(args: argparse.Namespace) -> int:
    """Print the recall block; exit 0 whatever happens (a hook must never break a session)."""
    try:
        with _deadline(args.timeout):
            text = _recall(args, _hook())
    except Exception as error:  # noqa: BLE001 (any failure: say it in one line, print nothing)
        reason = " ".join(str(error).split()) or type(error).__name__
        print(f"chronograph context: nothing recalled: {reason}", file=sys.stderr)
        return 0
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the block once `seconds` have passed (none: 0 or less, not finite, or
    more than a day; or a system without SIGALRM). Armed and disarmed inside the block's `try`,
    so that even a deadline that passes at once is the block's TimeoutError."""
    armed = 0 < seconds <= DAY and hasattr(signal, "SIGALRM")  # False for NaN and infinity too
    try:
        if armed:
            signal.signal(signal.SIGALRM, _late)
            signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    finally:
        if armed:
            signal.setitimer(signal.ITIMER_REAL, 0)



def _late(signum: int, frame: object) -> None:
    raise TimeoutError("it took longer than --timeout")


def _busy(store: Path) -> bool:
    """Whether the store is being replaced (a restore holds it exclusively): opening it would wait."""
    from chronograph.eventstore.files import LOCK_FILE  # noqa: PLC0415

    try:
        fd = os.open(store / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _hook() -> dict[str, Any]:
    """The hook's JSON object from stdin, if stdin is not a terminal and holds one."""
    if sys.stdin is None or sys.stdin.isatty():
        return {}
    data = sys.stdin.buffer.read(MAX_STDIN + 1)
    if not data.strip():
        return {}
    if len(data) > MAX_STDIN:
        raise ValueError(f"the hook's input on stdin is over {MAX_STDIN:,} bytes")
    try:
        hook = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ValueError("stdin is not the hook's JSON object") from None
    if not isinstance(hook, dict):
        raise ValueError("stdin is not the hook's JSON object")
    return hook


def _recall(args: argparse.Namespace, hook: dict[str, Any]) -> str:
    from chronograph.application.core.recall import BUDGET, recall, render  # noqa: PLC0415 (after the cheap checks)
    from chronograph.application.engine.config import resolve_store  # noqa: PLC0415
    from chronograph.application.surfaces.recalling import VOCABULARIES, seen_by, workspace_of  # noqa: PLC0415
    from chronograph.tools.common.parsing import missing_workspace, workspace_names  # noqa: PLC0415

    store = resolve_store(args.store)
    if not isinstance(store, str):
        if not (store / "data.mdb").exists():
            raise FileNotFoundError(f"no store at {store}")
        if _busy(store):
            raise BlockingIOError(f"the store at {store} is being replaced (a restore)")
    prompted = hook.get("hook_event_name") in PROMPT_EVENTS
    query = args.query or (_text(hook.get("prompt")) if prompted else None)
    budget = args.budget or (400 if prompted else BUDGET)
    from chronograph.application.engine.service import Memory  # noqa: PLC0415

    memory = Memory(store, readonly=True, embeddings="off", cache=args.cache)
    try:
        if args.workspace:
            workspace = args.workspace
            known = workspace_names(memory)
            missing = missing_workspace(workspace, known)
            if missing:  # a misspelt name recalls nothing rather than an empty memory, and says why
                raise ValueError(missing)
        else:
            project = args.project or _text(hook.get("cwd")) or (None if hook else os.getcwd())
            if project is not None:
                project = os.path.abspath(os.path.expanduser(project))
            workspace = workspace_of(args.profile, project, seen_by(memory))
        found = recall(memory, workspace, query=query, client=args.client, strict=prompted)
    finally:
        memory.close()
    if prompted:
        if not found.entities:
            return ""  # silence beats noise
        found = replace(found, context=None, changes=[])  # said at the session's start already
    return render(found, VOCABULARIES[args.profile], max(100, budget))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None
