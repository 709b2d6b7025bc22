"""Serve the memory over MCP: stdio by default (what Claude Desktop and Claude Code run), or
streamable HTTP with --http.

    chronograph serve                              stdio, the per-user store
    chronograph serve --store ~/memories/work      stdio, that store
    chronograph serve --profile official           only the nine official tools
    chronograph serve --http --port 8765           streamable HTTP on 127.0.0.1:8765/mcp
    chronograph serve --http --auth-issuer https://id.example.com --audience https://memory.example.com/mcp
                                                   ... taking that issuer's OAuth access tokens
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from chronograph.application import ChronographError, Memory
from chronograph.application.engine.config import (
    ACTOR_ENV,
    EMBEDDINGS_ENV,
    STORE_ENV,
    TERM_WEIGHTS_ENV,
    TOKEN_ENV,
    default_store,
    resolve_store,
)
from chronograph.application.engine.exportdir import DEFAULT_BUDGET, DEFAULT_MAX_EXPORT
from chronograph.application.engine.stores import shown
from chronograph.application.lifecycle.importing import FileImport
from chronograph.application.profiles import DEFAULT_PROFILE, PROFILES
from chronograph.eventstore.errors import advised
from chronograph.server.config import DEFAULT_MAX_BODY, DEFAULT_MAX_REPLY, MAX_MESSAGE, Settings
from chronograph.tools.common.listening import add_network_argument, may_listen
from chronograph.tools.common.oauth import add_oauth_arguments, oauth_of
from chronograph.tools.common.parsing import byte_size, port, positive, reply_size, seconds, store_location, store_size
from chronograph.tools.common.signals import stopped_by_signals

import chronograph

if TYPE_CHECKING:
    from chronograph.server.runtime import Runtime

__all__ = ["add_arguments", "run", "settings_of"]

EMBEDDINGS_KEY_ENV = "CHRONOGRAPH_EMBEDDINGS_KEY"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `serve`."""
    parser.add_argument(
        "--store", metavar="PATH|URL", type=store_location,
        help=f"store directory, or a postgresql:// URL to share one log between servers (default: ${STORE_ENV}, "
             f"else {default_store()})",
    )
    parser.add_argument(
        "--cache", metavar="DIR",
        help="with a postgresql:// store: where this server keeps its views (default: the per-user cache)",
    )
    parser.add_argument(
        "--actor", metavar="NAME",
        help=f"record events as NAME (default: ${ACTOR_ENV}, else the MCP client's name)",
    )
    parser.add_argument(
        "--profile", choices=list(PROFILES), default=None,
        help="which tools to present: " + "; ".join(f"{p.name}: {p.summary}" for p in PROFILES.values())
        + f" (default: {DEFAULT_PROFILE})",
    )
    parser.add_argument(
        "--tools", choices=["all", "official"], default=None,
        help="the same as --profile chronograph (all) or --profile official",
    )
    parser.add_argument(
        "--export-dir", metavar="DIR",
        help="let export_graph write files, only inside DIR, never dotfiles or into a store "
        "(default: it only returns content; over HTTP only with --allow-http-export)",
    )
    parser.add_argument(
        "--allow-http-export", action="store_true",
        help="with --http and --export-dir: let HTTP clients write export files too",
    )
    parser.add_argument(
        "--project-files", action="store_true",
        help="n2n profile: keep each project's memory in its .mcp/memory.json and .mcp/context.json too "
        "(n2n's format, for git), and fold what a git pull brings into the log",
    )
    parser.add_argument(
        "--export-max", type=byte_size, default=DEFAULT_MAX_EXPORT, metavar="SIZE",
        help="largest file one export may write (default: 64M)",
    )
    parser.add_argument(
        "--export-budget", type=byte_size, default=DEFAULT_BUDGET, metavar="SIZE",
        help="bytes all exports of this server may write together (default: 1G)",
    )
    parser.add_argument(
        "--max-size", type=store_size, metavar="SIZE",
        help="refuse writes (cleanly) once the store reaches SIZE, e.g. 500M or 20G (default: no ceiling)",
    )
    parser.add_argument(
        "--max-reply", type=reply_size, default=DEFAULT_MAX_REPLY, metavar="SIZE",
        help="refuse (with an error saying how to page) a read whose reply would exceed SIZE; "
        "MCP's TypeScript clients drop the connection beyond 10M (default: 9M; 0: no limit)",
    )
    parser.add_argument(
        "--max-message", type=byte_size, default=MAX_MESSAGE, metavar="SIZE",
        help="longest JSON-RPC message read from stdin; a longer one is refused with an error (default: 32M)",
    )
    parser.add_argument(
        "--embeddings", default=os.environ.get(EMBEDDINGS_ENV) or "auto", metavar="auto|local|off|URL",
        type=_embeddings,
        help="semantic search: the bundled model (local; auto uses it when the semantic extra is "
        "installed; that extra's term weights reorder the nearest with any embedder), off, or the URL "
        "of an OpenAI-compatible embeddings endpoint such as Ollama's "
        f"http://localhost:11434/v1 (default: ${EMBEDDINGS_ENV}, else auto)",
    )
    parser.add_argument(
        "--term-weights", default=os.environ.get(TERM_WEIGHTS_ENV) or "on", metavar="on|off", type=_switch,
        help="let the semantic extra's term weights (splade-tiny) reorder the nearest in a search by meaning; "
        f"off: by the embeddings alone, 1.5 to 2 times faster to embed (default: ${TERM_WEIGHTS_ENV}, else on)",
    )
    parser.add_argument(
        "--embeddings-model", metavar="NAME",
        help=f"the model an embeddings endpoint should use, e.g. nomic-embed-text; its API key, if any, "
        f"is read from ${EMBEDDINGS_KEY_ENV}",
    )
    parser.add_argument(
        "--prompts", action="store_true",
        help="offer the recall and remember prompts on every profile (chronograph, n2n and kuzu offer them "
        "unasked; official, agent-memory and workspace keep their reference server's capabilities)",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=port, default=8765, help="HTTP port (default: 8765)")
    parser.add_argument(
        "--allow-host", action="append", default=[], metavar="HOST",
        help="an extra Host/Origin name HTTP clients may use (repeatable)",
    )
    add_network_argument(parser)
    add_oauth_arguments(parser)
    parser.add_argument(
        "--max-body", type=positive, default=DEFAULT_MAX_BODY, metavar="BYTES",
        help=f"largest HTTP request body accepted (default: {DEFAULT_MAX_BODY})",
    )
    parser.add_argument(
        "--max-connections", type=positive, default=None, metavar="N",
        help="open HTTP connections at once (default: 1000, or fewer if file descriptors are short); a new one "
        "beyond takes the place of the one that began a request longest ago without finishing it",
    )
    parser.add_argument(
        "--request-timeout", type=seconds, default=30.0, metavar="SECONDS",
        help="close an HTTP connection whose request has not arrived whole this long after it began "
        "(default: 30; 2 while half the connections are taken, unless the request carries the token)",
    )
    parser.add_argument(
        "--max-sessions", type=positive, default=1000, metavar="N",
        help="MCP sessions open at once over HTTP (default: 1000); a new one beyond closes the least recently "
        "used idle one",
    )
    parser.add_argument(
        "--sessions-per-address", type=positive, default=100, metavar="N",
        help="MCP sessions one client address may hold (default: 100); a new one beyond closes that address's "
        "least recently used idle one (refused only when all are busy)",
    )
    parser.add_argument(
        "--session-idle", type=seconds, default=300.0, metavar="SECONDS",
        help="close an HTTP session after this long without a request (default: 300)",
    )
    parser.set_defaults(exit_at_once=True)  # the command's own process (a test calling `run` keeps its own)
    parser.add_argument(
        "--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="log level on stderr (default: WARNING)",
    )


def _embeddings(text: str) -> str:
    if text in ("auto", "local", "off") or text.startswith(("http://", "https://")):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: use auto, local, off or an http(s) URL")


def _switch(text: str) -> str:
    if text in ("on", "off"):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: use on or off (the option, or ${TERM_WEIGHTS_ENV})")


def _profile(args: argparse.Namespace) -> str:
    if args.profile is not None:
        return str(args.profile)
    if args.tools == "official":
        return "official"
    return DEFAULT_PROFILE


def settings_of(args: argparse.Namespace) -> Settings:
    """The server settings the options say (file exports over HTTP only when allowed)."""
    export_dir = Path(args.export_dir).expanduser() if args.export_dir else None
    if export_dir is not None and args.http and not args.allow_http_export:
        print("chronograph: export files are off over HTTP (any client could write them); "
              "add --allow-http-export to allow them", file=sys.stderr)
        export_dir = None
    if args.project_files and args.http and not args.allow_http_export:
        print("chronograph: project files are off over HTTP (any client could write into a project); "
              "add --allow-http-export to allow them", file=sys.stderr)
    return Settings(
        store=resolve_store(args.store),
        cache=Path(args.cache).expanduser() if args.cache else None,
        actor=args.actor or os.environ.get(ACTOR_ENV) or None,
        profile=_profile(args),
        export_dir=export_dir,
        project_files=not args.http or args.allow_http_export,
        mirror_projects=args.project_files,
        export_max=args.export_max,
        export_budget=args.export_budget,
        max_size=args.max_size,
        max_reply=args.max_reply,
        embeddings=args.embeddings,
        embeddings_model=args.embeddings_model,
        embeddings_key=os.environ.get(EMBEDDINGS_KEY_ENV) or None,
        term_weights=args.term_weights == "on",
        prompts=args.prompts,
    )


MEMORY_FILE_ENV = "MEMORY_FILE_PATH"
"""Where the official memory server keeps its file: a client config switched to Chronograph
often still sets it."""


ADOPTER = "memory-file"
"""The actor of the events an adoption of $MEMORY_FILE_PATH writes (the audit shows it)."""
ADOPTED = "memory-file adopted"
"""The idempotency key an adoption records once it has written the whole file."""
ADOPTED_IN_PART = "memory-file adopted in part"
"""The idempotency key an adoption records besides when it left lines of the file out (each later
start that is given the variable says so again, with the command that adds them)."""


def adopt_memory_file(memory: Memory) -> None:
    """Import the official server's file named by $MEMORY_FILE_PATH into an empty store, once;
    finish one that was cut off (a server killed while it imported: the store holds only what
    that import wrote, and no record that it ended); with a store that holds anything else,
    say that the variable is ignored and why."""
    named = os.environ.get(MEMORY_FILE_ENV)
    if not named:
        return
    path = Path(named).expanduser()
    with memory.lock:  # the embedding projector may be using the store already
        head = memory.log.head()
        resuming = head > 0 and _adoption_cut_off(memory)
    adding = advised(f"import {shlex.quote(str(path))}", memory.log.location)
    if head > 0 and not resuming:
        with memory.lock:
            in_part = memory.log.transact(lambda tx: tx.recall(ADOPTED_IN_PART)) is not None
        left = (" (its import when this store was new left out lines it could not take, named then: correct them "
                "in the file and run that command; what the store holds already is skipped)") if in_part else ""
        print(f"chronograph: ${MEMORY_FILE_ENV} ({path}) is ignored: the store at {memory.log.location} already "
              f"holds a memory; to add the file to it: {adding}{left}", file=sys.stderr)
        return
    if not path.is_file():
        print(f"chronograph: ${MEMORY_FILE_ENV} names {path}, which is not a file; nothing was imported",
              file=sys.stderr)
        return
    with FileImport(path, "default", actor=ADOPTER) as job:
        job.survey()
        job.check_ends(memory if resuming else None)
        if job.foreign:
            print(f"chronograph: ${MEMORY_FILE_ENV} ({path}) is not a memory file (most of its lines are not JSON); "
                  "nothing was imported", file=sys.stderr)
            return
        if job.empty:
            print(f"chronograph: ${MEMORY_FILE_ENV} ({path}) holds nothing to import", file=sys.stderr)
            return
        reports = [report for _, report in job.write(memory)]
    with memory.lock:
        memory.log.append([], actor=ADOPTER, idempotency_key=ADOPTED)
        if job.problems:
            memory.log.append([], actor=ADOPTER, idempotency_key=ADOPTED_IN_PART)
    into = "the store, finishing the import a stopped server began" if resuming else "the empty store, once"
    left = (f"; {len(job.problems)} line(s) not imported (below): correct them in the file, then add them with "
            f"{adding} (what the store holds already is skipped)") if job.problems else ""
    print(f"chronograph: imported {path} (${MEMORY_FILE_ENV}) into {into}: "
          f"{sum(r.created for r in reports)} entities, {sum(r.related for r in reports)} relations, "
          f"{sum(r.observations for r in reports)} observations{left} "
          f"(recorded in the audit log as actor '{ADOPTER}')", file=sys.stderr)
    from chronograph.tools.import_graph import ignored, report_problems  # noqa: PLC0415 (only here)

    if job.ignored:
        print(f"chronograph: {ignored(job)}", file=sys.stderr)
    report_problems(job)


def _adoption_cut_off(memory: Memory) -> bool:
    """Whether the store holds an adoption that did not end, and nothing else: every event is an
    adoption's (a memory of the user's own, written since, is never added to), and no adoption
    recorded its end."""
    with memory.log.read() as reader:  # the cheap questions first: this runs at every start the variable is set
        newest = reader.get(reader.head())
    if newest is None or newest.actor != ADOPTER or memory.log.transact(lambda tx: tx.recall(ADOPTED)) is not None:
        return False
    with memory.log.read() as reader:
        return all(envelope.actor == ADOPTER for envelope in reader.all())


def run(args: argparse.Namespace) -> int:
    """Open the store, then serve until the client (stdio) or a signal (HTTP) stops us."""
    from chronograph.eventstore import EventStoreError
    from chronograph.eventstore.files import store_of
    from chronograph.projections import ProjectionError
    from chronograph.server.runtime import Runtime

    settings = settings_of(args)
    if settings.export_dir is not None and (inside := store_of(settings.export_dir)) is not None:
        print(f"chronograph: --export-dir {settings.export_dir} lies inside the store at {inside}; name a folder "
              "outside every store", file=sys.stderr)
        return 2
    if settings.embeddings.startswith(("http://", "https://")) and not settings.embeddings_model:
        print("chronograph: --embeddings with an endpoint URL needs --embeddings-model NAME (the model to ask for)",
              file=sys.stderr)
        return 2
    oauth = oauth_of(args)
    if isinstance(oauth, str):
        print(f"chronograph: {oauth}", file=sys.stderr)
        return 2
    authenticators, resource = oauth
    sock = None
    if args.http:  # bind first: a port clash is one clear line, before anything is announced
        from chronograph.server.listener import bind

        try:
            sock = bind(args.host, args.port)
        except OSError as error:
            print(f"chronograph: cannot listen on {args.host}:{args.port}: {error.strerror}", file=sys.stderr)
            return 2
    runtime = Runtime(settings, offload=args.http)
    try:
        memory = runtime.open()
    except (EventStoreError, ProjectionError, ChronographError) as error:
        print(f"chronograph: {error}", file=sys.stderr)
        if sock is not None:
            sock.close()
        return 2
    try:
        adopt_memory_file(memory)
    except (EventStoreError, ProjectionError, ChronographError, OSError) as error:  # the store serves as it is
        said = f"cannot read it: {error.strerror or error}" if isinstance(error, OSError) else str(error)
        print(f"chronograph: ${MEMORY_FILE_ENV} ({os.environ.get(MEMORY_FILE_ENV)}) was not imported: {said}; "
              "serving the store as it is (the next start given the variable imports it, or finishes what it "
              "wrote)", file=sys.stderr)
    tokens = None
    if sock is not None:
        from chronograph.server.tokens import store_tokens

        tokens = store_tokens(runtime)
        token = os.environ.get(TOKEN_ENV) or ("(the store's tokens)" if tokens.any() else None)
        token = token or ("(an issuer's access tokens)" if authenticators else None)
        if not may_listen("chronograph", sock, token, args.allow_network_without_token, "read and write the memory"):
            sock.close()
            runtime.close()
            return 2
    try:
        version = chronograph.__version__
        if sock is None:
            print(f"chronograph {version}: serving {shown(settings.store)} over stdio (profile {settings.profile})",
                  file=sys.stderr)
            try:
                with stopped_by_signals():  # SIGTERM stops a stdio server as the end of stdin does
                    _serve_stdio(runtime, args)
            except KeyboardInterrupt:
                pass  # asked to stop: the store closes below, as when stdin closes
            except BaseExceptionGroup as group:  # a signal while the SDK's session was being set up
                if group.split(KeyboardInterrupt)[1] is not None:
                    raise
            runtime.shutdown()
            if getattr(args, "exit_at_once", False):
                _leave()
            return 0
        from chronograph.server.addresses import announced
        from chronograph.server.app import create_server  # the MCP SDK loads here
        from chronograph.server.http import http_app

        server = create_server(settings, runtime, log_level=args.log_level)
        from chronograph.server.listener import serve

        token = os.environ.get(TOKEN_ENV) or None
        app = http_app(server, runtime, host=args.host, token=token, allowed_hosts=args.allow_host,
                       max_body=args.max_body, max_sessions=args.max_sessions,
                       sessions_per_address=args.sessions_per_address, session_idle=args.session_idle,
                       authenticators=[*([] if tokens is None else [tokens]), *authenticators],
                       resource=resource)
        required = app.required()
        hosts = sorted(app.hosts - {"[::1]"})
        url = announced(args.host, sock.getsockname()[1], "/mcp")  # the port bound (--port 0: any free one)
        print(f"chronograph {version}: serving {shown(settings.store)} at {url} "
              f"(profile {settings.profile}{'; bearer token required' if required else ''})", file=sys.stderr)
        if resource is not None:
            print(f"chronograph: accepting access tokens of {args.auth_issuer} for {args.audience}; "
                  f"metadata at {resource.metadata_url}", file=sys.stderr)
        print(f"chronograph: answering requests whose Host is {', '.join(hosts)}"
              f"{' or any IP address' if app.any_ip else ''} (this machine's names only from "
              "this machine); add a name with --allow-host NAME", file=sys.stderr)
        serve(app, sock, log_level=args.log_level.lower(), max_connections=args.max_connections,
              request_timeout=args.request_timeout, vouch=app.vouches, on_stop=runtime.interrupt)
        return 0
    finally:
        if runtime.open_users:
            runtime.close()


def _leave() -> NoReturn:
    """End the process now that the store is closed (every write durable, the embedding
    projector's work committed): the interpreter's own teardown, freeing every object of the
    indexes and the model one by one, took 0.2 s at 5,000 entities and grows with the store."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _serve_stdio(runtime: Runtime, args: argparse.Namespace) -> None:
    """Serve over stdio: the front first, the SDK only if the session needs it (see server/front.py)."""
    from chronograph.server.front import Front
    from chronograph.server.lines import wire
    from chronograph.server.replies import ReplyCache

    with wire() as fds:
        cache = ReplyCache(runtime.memory, runtime.settings)
        handover = Front(runtime, cache, *fds, args.max_message).serve()
        if handover is None:
            return  # the client closed stdin: everything it asked was answered
        import anyio
        from chronograph.server.app import create_server  # the MCP SDK loads here
        from chronograph.server.stdio import run_stdio

        server = create_server(runtime.settings, runtime, log_level=args.log_level)
        anyio.run(partial(run_stdio, server, args.max_message, fds=fds, handover=handover, cache=cache,
                          stop_on_signals=True))
