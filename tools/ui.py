"""See the graph and its history in a browser: the explorer page, served on its own.

    chronograph ui                              the per-user store, http://127.0.0.1:8766/ui/
    chronograph ui --store ~/team --port 9000   another store, another port

The page draws a neighbourhood of the graph (a search, or the most connected entities,
expanded from there), moves through time with a slider over the log (and compares two
moments), shows every version of an entity (who, when, which call, what changed) and the
audit feed as agents write. It only reads. Bound to loopback unless --host says otherwise,
and beyond loopback only with $CHRONOGRAPH_TOKEN (or --allow-network-without-token); with
the token set it prints the one link that opens it (the token travels once, then as a
cookie), and foreign Host and Origin headers are refused, as for the MCP server.
`chronograph serve --http` serves the same page under /ui beside /mcp.
"""

from __future__ import annotations

import argparse
import os
import sys

if __package__ in (None, ""):  # run as a script from a checkout
    import checkout  # type: ignore[import-not-found]  # tools/ is sys.path[0] in a script

    checkout.ensure_importable()

from chronograph.application.engine.config import TOKEN_ENV, resolve_store
from chronograph.application.engine.stores import shown, store_exists
from chronograph.application.errors import ChronographError
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError
from chronograph.tools.common.listening import add_network_argument, may_listen
from chronograph.tools.common.parsing import add_store_argument, script_main

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `ui`."""
    add_store_argument(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8766, help="port (default: 8766)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="also answer requests whose Host is NAME (repeatable)")
    add_network_argument(parser)


def run(args: argparse.Namespace) -> int:
    """Serve the explorer until a signal stops it; return the exit code."""
    store = resolve_store(args.store)
    if not store_exists(store):
        print(f"chronograph ui: there is no store at {shown(store)}", file=sys.stderr)
        return 2
    from chronograph.server.config import Settings
    from chronograph.server.listener import bind, serve
    from chronograph.server.runtime import Runtime

    try:
        sock = bind(args.host, args.port)
    except OSError as error:
        print(f"chronograph ui: cannot listen on {args.host}:{args.port}: {error.strerror}", file=sys.stderr)
        return 2
    token = os.environ.get(TOKEN_ENV) or None
    if not may_listen("chronograph ui", sock, token, args.allow_network_without_token, "read the whole memory"):
        sock.close()
        return 2
    from pathlib import Path

    runtime = Runtime(Settings(store=store, cache=Path(args.cache).expanduser() if args.cache else None,
                               embeddings="off"), offload=True)
    try:
        runtime.open()
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph ui: {error}", file=sys.stderr)
        return 2
    try:
        from chronograph.server.addresses import WILDCARDS, announced, served_names
        from chronograph.server.explorer import explorer_routes
        from chronograph.server.http import Guard
        from chronograph.server.tokens import store_tokens
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, RedirectResponse
        from starlette.routing import Route

        async def health(_: object) -> JSONResponse:
            return JSONResponse({"status": "ok"})

        async def home(_: object) -> RedirectResponse:
            return RedirectResponse("/ui/")

        app = Starlette(routes=[Route("/", home), Route("/health", health), *explorer_routes(runtime, token=token)])
        guarded = Guard(app, token=token, hosts=served_names(args.host, args.allow_host),
                        any_ip=args.host in WILDCARDS, authenticators=[store_tokens(runtime)])
        required = guarded.required()
        link = announced(args.host, sock.getsockname()[1], "/ui/")  # the port bound (--port 0: any free one)
        print(f"chronograph ui: {shown(store)} at {link}{'?token=...' if required else ''} (read-only)",
              file=sys.stderr, flush=True)  # whatever stderr is (a pipe, a file, a terminal): the link is needed now
        if required:
            print("chronograph ui: open the link with ?token= and a token of the store (chronograph token create) or "
                  "your $CHRONOGRAPH_TOKEN once; the page keeps it as a cookie", file=sys.stderr, flush=True)
        serve(guarded, sock, vouch=guarded.vouches)
        return 0
    finally:
        runtime.close()


def main(argv: list[str] | None = None) -> int:
    """`python tools/ui.py` (see the module docstring)."""
    return script_main("chronograph ui", __doc__, add_arguments, run, argv)


if __name__ == "__main__":
    raise SystemExit(main())
