"""Issue, list and revoke the bearer tokens an HTTP server accepts, each a principal with grants.

    chronograph token create alice --grant work=write --grant '*=read' --expires 90d
    chronograph token list [--json]
    chronograph token revoke alice

`create` prints the new token once, as the last line of its output: keep it (the store keeps
only its SHA-256 digest; nothing can show it again). A grant is WORKSPACE=LEVEL, LEVEL one of
read, write (read and write) or admin (write, erase, reset); WORKSPACE * grants every
workspace. --expires takes a number and a unit: s, m, h, d or w.

Once a store has any token, an HTTP server refuses (401) every request without a valid one;
revoking stops the token on every server of the store within a second. Tokens are events:
`chronograph audit --type token_issued --type token_revoked` shows who issued and revoked what.
A name is used once: a revoked token's name stays taken, so that the audit's principal always
means one token. "last used" is what the servers that keep their views beside this store (a
store folder; a database store's cache folder) saw, written at most once a minute.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

import msgspec
from chronograph.application.engine.config import resolve_store
from chronograph.application.engine.stores import open_store, shown, store_exists
from chronograph.application.engine.tokens import TokenRecord, Tokens, parse_duration, parse_grants
from chronograph.application.errors import ChronographError
from chronograph.eventstore import EventStoreError, clock
from chronograph.projections import ProjectionError, Views
from chronograph.server.tokens import last_used
from chronograph.tools.common.parsing import add_store_argument, script_main
from chronograph.tools.common.terminal import print_rows

__all__ = ["add_arguments", "main", "run"]

PROG = "chronograph token"
ACTIONS = ("create", "list", "revoke")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `token`."""
    parser.add_argument("action", choices=ACTIONS, metavar="ACTION",
                        help="create (issue a token; prints it once, as the last line), list (names, grants, "
                             "created, expires, last used, revoked; never a secret) or revoke (every server "
                             "refuses it within a second)")
    parser.add_argument("name", nargs="?", metavar="NAME",
                        help="the token's name, its principal's (letters, digits, . _ @ -): for create and revoke")
    parser.add_argument("--grant", action="append", default=[], metavar="WORKSPACE=LEVEL", dest="grants",
                        help="create: LEVEL read, write or admin; WORKSPACE * for every workspace (repeat for several)")
    parser.add_argument("--expires", metavar="DURATION", help="create: it stops working after this long: 90d, 12h, "
                        "30m, 2w (default: never)")
    parser.add_argument("--json", action="store_true", help="list: one JSON object per token, per line")
    add_store_argument(parser)


def _misused(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments of `args.action`, if anything."""
    if args.action == "list":
        if args.name is not None:
            return f"list takes no NAME (got {args.name!r})"
    elif args.name is None:
        return f"{args.action} needs the token's NAME"
    if args.action != "create" and (args.grants or args.expires):
        return "--grant and --expires are for create"
    if args.action != "list" and args.json:
        return "--json is for list"
    return None


def run(args: argparse.Namespace) -> int:
    """Carry out `token ACTION`; return the exit code."""
    misused = _misused(args)
    if misused is not None:
        print(f"{PROG} {args.action}: {misused} (see {PROG} --help)", file=sys.stderr)
        return 2
    try:
        grants = parse_grants(args.grants) if args.action == "create" else {}
        expires = parse_duration(args.expires) if args.action == "create" and args.expires else None
    except ChronographError as error:
        print(f"{PROG} {args.action}: {_problem(error)}", file=sys.stderr)
        return 2
    try:
        location = resolve_store(args.store)
        new = args.action == "create" and not store_exists(location)
        store = open_store(location, cache=args.cache, create=args.action == "create")
    except (EventStoreError, ValueError) as error:
        print(f"{PROG} {args.action}: {error}", file=sys.stderr)
        return 2
    if new:  # a mistyped --store would issue a token no server of the real store accepts
        print(f"{PROG} create: there was no store at {shown(location)}: a new one was made there for the token "
              "(if you meant another, pass its --store)", file=sys.stderr)
    try:
        # appends fold into the views too, so that their checkpoint stays at the head
        tokens = Tokens(store.log, views=None if args.action == "list" else Views(store.log, cache=store.cache))
        if args.action == "create":
            secret = tokens.issue(args.name, grants, expires_in=expires)
            print(f"issued the token {args.name!r} ({_grants(grants)}"
                  f"{'' if expires is None else ', expires ' + clock.isoformat(clock.now_us() + expires)}); "
                  "it is shown this once:", file=sys.stderr)
            print(secret)
        elif args.action == "revoke":
            tokens.revoke(args.name)
            print(f"revoked the token {args.name!r}", file=sys.stderr)
        else:
            folder = store.cache.path if store.cache is not None else Path(str(resolve_store(args.store)))
            _list(tokens.records(), last_used(folder), as_json=args.json)
        return 0
    except ChronographError as error:
        print(f"{PROG} {args.action}: {_problem(error)}", file=sys.stderr)
        return 2
    except (EventStoreError, ProjectionError) as error:
        print(f"{PROG} {args.action}: {error}", file=sys.stderr)
        return 2
    finally:
        store.log.close()
        if store.cache is not None:
            store.cache.close()


def _problem(error: ChronographError) -> str:
    return getattr(error, "problem", None) or str(error)


def _grants(grants: dict[str, str]) -> str:
    return ", ".join(f"{workspace}={level}" for workspace, level in sorted(grants.items()))


def _when(at: int | None) -> str | None:
    if at is None:
        return None
    try:
        return clock.isoformat(at)
    except (OverflowError, ValueError):  # a token an earlier version let expire past year 9999
        return "9999-12-31T23:59:59.999999Z"


def _list(records: list[TokenRecord], used: dict[str, int], *, as_json: bool) -> None:
    rows = [{"name": r.name, "grants": r.grants, "created": _when(r.created), "expires": _when(r.expires),
             "lastUsed": _when(used.get(r.name)), "revoked": _when(r.revoked)} for r in records]
    if as_json:
        for row in rows:
            print(msgspec.json.encode(row).decode())
        return
    print_rows(["name", "grants", "created", "expires", "last used", "revoked"],
               [[row["name"], _grants(row["grants"]), row["created"], row["expires"] or "never",  # type: ignore[arg-type]
                 row["lastUsed"] or "-", row["revoked"] or "-"] for row in rows], title="tokens")


def main(argv: list[str] | None = None) -> int:
    """`python tools/tokens.py ...` (see the module docstring)."""
    return script_main(PROG, __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
