"""Forget an entity or a team entry for real: erase it from the log and from everything derived from it.

    chronograph forget --store ~/memory "Ada Lovelace" --reason "asked by the data subject"
    chronograph forget --workspace lab --as alice NAME --reason R --json
    chronograph forget --entry kn_3f9a1c2b7d4e --reason "holds a customer's SSN"

Every entity ever called NAME in the workspace is erased: its names, observations and
metadata, in every version and every past state, with every relation that named it. The
events keep their place in the log (when, who, which call) and say only what kind of
change each was; one erasure record per entity says who asked, when and why (the reason
is kept: do not repeat what is forgotten in it). `--entry ID` erases a tool, guideline or
knowledge entry of the team memory instead (the Agent Memory surface; deactivating it or
`memory_init reset` keep its history, this does not): every version, its tags, relations
and conflicts, with one erasure record. Then the store is scrubbed: the old
copies of every changed page are overwritten, so that no file of the store keeps a byte
of it. A server may keep running meanwhile: its reads go on, its writes wait for the
erasure's one transaction.

An n2n project's `.mcp/memory.json` whose files a server kept for this store on this machine
is rewritten without what was erased, as `forget_entity` through that server would (what the
file gained since is folded in first); where it cannot be, the answer says so.

`chronograph scrub` finishes a scrub that a long reader held up.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import suppress
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

import msgspec
from chronograph.application import Memory
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.outputs import ObjectOut
from chronograph.application.engine.stores import shown, store_exists
from chronograph.application.errors import ChronographError
from chronograph.application.lifecycle import importindex
from chronograph.application.lifecycle.forgetting import ForgetOut
from chronograph.application.surfaces.projectfiles import ProjectFiles
from chronograph.eventstore import EventStoreError
from chronograph.eventstore.lmdb import staging
from chronograph.projections import ProjectionError
from chronograph.tools.common.parsing import add_store_argument, explain, given_name, script_main

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `forget`."""
    parser.add_argument("name", nargs="?", help="the entity to erase (every entity ever called so in the workspace)")
    parser.add_argument("--entry", metavar="ID", help="erase this team entry (tool_..., gl_..., kn_...) instead")
    parser.add_argument("--reason", required=True, help="why, kept in the audit (say why, not what)")
    add_store_argument(parser)
    parser.add_argument("--workspace", default="default", help='the workspace (default: "default")')
    parser.add_argument("--as", dest="actor", default="chronograph forget", type=given_name,
                        help='who asks, as the audit records it (default: "chronograph forget")')
    parser.add_argument("--json", action="store_true", help="print the answer as JSON")


def run(args: argparse.Namespace) -> int:
    """Carry out `forget`; return the exit code."""
    if (args.name is None) == (args.entry is None):
        print("chronograph forget: name the entity to erase, or give --entry ID (one of them)", file=sys.stderr)
        return 2
    store = resolve_store(args.store)
    if not store_exists(store):
        print(f"chronograph forget: there is no store at {shown(store)}", file=sys.stderr)
        return 2
    with suppress(OSError):  # best effort: what a killed import kept of its file's names,
        importindex.sweep()
    if isinstance(store, Path):
        with suppress(OSError):  # and a killed restore of the store
            staging.sweep(store)
    try:
        with Memory(store, cache=args.cache) as memory:
            ProjectFiles(always=True).install(memory)  # the projects it recorded, whose files a server kept
            if args.entry is not None:
                asked = {"id": args.entry, "reason": args.reason}
                entry = memory.write("memory_forget", asked, actor=args.actor).output
                assert isinstance(entry, ObjectOut)
                _say_elsewhere(entry.reply.get("elsewhere", []))
                return _report_entry(entry.reply, args.json)
            out = memory.write("forget_entity", {"name": args.name, "reason": args.reason,
                                                 "workspace": args.workspace}, actor=args.actor).output
            assert isinstance(out, ForgetOut)
    except ChronographError as error:
        print(f"chronograph forget: {explain(error, {'name': 'NAME', 'id': '--entry', 'reason': '--reason'})}",
              file=sys.stderr)
        return 1
    except (EventStoreError, ProjectionError) as error:
        print(f"chronograph forget: {error}", file=sys.stderr)
        return 2
    _say_elsewhere(out.elsewhere)
    if args.json:
        print(msgspec.json.encode(out).decode())
    else:
        print(f"erased {out.entities} entit{'y' if out.entities == 1 else 'ies'} called {args.name!r} in workspace "
              f"{args.workspace!r}, {out.relations} relation(s), {out.events} event(s)"
              + (f"; {out.redacted} reference(s) redacted" if out.redacted else "") + f". {out.message}")
    return 0 if out.scrubbed else 1


def _say_elsewhere(notes: list[str]) -> None:
    """Say what the answer says still holds what was erased out of the store's reach (stores a
    restore set aside, an n2n project's file), as the tool's answer says it (`erasing.scrub_after`)."""
    for note in notes:
        print(f"chronograph forget: {note}", file=sys.stderr)


def _report_entry(reply: dict[str, Any], as_json: bool) -> int:
    if as_json:
        print(msgspec.json.encode(reply).decode())
    else:
        gone = reply["forgotten"]
        print(f"erased {gone['type']} entry {gone['id']}: {gone['events']} event(s), with "
              f"{len(gone['streams'])} stream(s) of its tags, relations and conflicts. {reply['message']}")
    return 0 if reply["scrubbed"] else 1


def main(argv: list[str] | None = None) -> int:
    """`python tools/forget.py NAME --reason R`, or `--entry ID --reason R` (see the module docstring)."""
    return script_main("chronograph forget", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
