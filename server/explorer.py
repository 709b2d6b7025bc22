"""The graph explorer: a web page under /ui and the JSON it reads, over the core, read-only.

Served by `chronograph serve --http` (beside /mcp) and by `chronograph ui` (alone), behind the
same guard: loopback by default, the same bearer token (a browser presents it as a cookie
that the page's first link, `/ui/?token=...`, sets), the same Host and Origin rules. Every
endpoint is a GET; nothing here writes.

    GET /ui/                            the page (static, shipped in the package: no CDN)
    GET /ui/api/overview?workspace=&asOf=
                                        workspaces, counts per type (as of then), the log's extent
    GET /ui/api/graph?workspace=&q=&names=&around=&asOf=&validAt=&limit=
                                        a neighbourhood: found by q (with the entities that
                                        relate two or more hits: `bridge`), the names given,
                                        one entity and its neighbours, or the most connected
    GET /ui/api/entity?workspace=&name= every version (who, when, which call, what changed)
                                        and the history of every relation that named it
    GET /ui/api/audit?workspace=&actor=&principal=&session=&types=&since=&until=&after=&limit=
                                        the change log, newest first (`after` to follow it)
    GET /ui/api/diff?workspace=&from=&to=
                                        what was created, changed, deleted between two moments

Each answer is for the request's principal (`PRINCIPAL_KEY` in its scope; the runtime's own,
the local user, when the guard put none): the core checks its read grant on the workspace.
Errors are `{"error": message, "code": code}` with 400 (bad input), 403 (`forbidden`: no
read grant on the workspace), 404 (not found) or 503 (the store cannot answer).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

import anyio
from chronograph.application import explorer, graphdiff
from chronograph.application.errors import ChronographError, ForbiddenError, InvalidArgumentsError, NotFoundError
from chronograph.eventstore import EventStoreError
from chronograph.projections import ProjectionError, written_position
from chronograph.server.http import TOKEN_COOKIE, UI_PATH, page_token
from chronograph.server.runtime import Runtime
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

__all__ = ["explorer_routes"]

STATIC = "static"
FILES = {"explorer.js": "text/javascript", "explorer.css": "text/css", "cytoscape.min.js": "text/javascript"}
"""The page's files (Cytoscape.js, MIT licence, ships beside it: the page works offline)."""


def explorer_routes(runtime: Runtime, *, token: str | None) -> list[Route]:
    """The page and its endpoints, answering from `runtime`'s store."""

    async def page(request: Request) -> Response:
        if request.query_params.get("token"):  # the guard let it in: it is the server's, or none is asked
            response: Response = RedirectResponse(UI_PATH + "/", status_code=303)  # the token leaves the address bar
            response.set_cookie(TOKEN_COOKIE, page_token(dict(request.headers), request.scope), httponly=True,
                                samesite="strict", path=UI_PATH)
            return response
        return _file("index.html", "text/html")

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in FILES:
            return JSONResponse({"error": f"no file {name!r}", "code": "not_found"}, status_code=404)
        return _file(name, FILES[name])

    def endpoint(answer: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def handle(request: Request) -> Response:
            try:
                body = await anyio.to_thread.run_sync(runtime.serialised, answer, request)
            except ForbiddenError as error:
                return JSONResponse({"error": str(error), "code": error.code}, status_code=403)
            except (InvalidArgumentsError, ValueError) as error:
                return JSONResponse({"error": str(error), "code": "invalid"}, status_code=400)
            except NotFoundError as error:
                return JSONResponse({"error": str(error), "code": "not_found"}, status_code=404)
            except (ChronographError, EventStoreError, ProjectionError, RuntimeError) as error:
                return JSONResponse({"error": str(error), "code": "unavailable"}, status_code=503)
            return JSONResponse(body)

        return handle

    def memory() -> Any:
        return runtime.memory

    def workspace(request: Request) -> str:
        return request.query_params.get("workspace") or "default"

    def moment(text: str | None) -> int | str | None:
        if not text:
            return None
        position = written_position(text)
        return text if position is None else position

    def number(request: Request, name: str, default: int, ceiling: int) -> int:
        text = request.query_params.get(name)
        if not text:
            return default
        if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= ceiling:
            raise ValueError(f"{name}: a whole number from 1 to {ceiling}")
        return int(text)

    def overview(request: Request) -> Any:
        return explorer.overview(memory(), workspace(request), as_of=moment(request.query_params.get("asOf")),
                                 principal=runtime.principal_of(request))

    def graph(request: Request) -> Any:
        q = request.query_params
        names = [n for n in q.getlist("names") if n] if "names" in q else None  # one parameter a name
        return explorer.graph(memory(), workspace(request), query=q.get("q") or None, names=names,
                              around=q.get("around") or None, as_of=moment(q.get("asOf")),
                              valid_at=q.get("validAt") or None, limit=number(request, "limit", explorer.LIMIT, 500),
                              principal=runtime.principal_of(request))

    def entity(request: Request) -> Any:
        name = request.query_params.get("name")
        if not name:
            raise ValueError("name: the entity to show")
        return explorer.entity_page(memory(), workspace(request), name, principal=runtime.principal_of(request))

    def audit(request: Request) -> Any:
        q = request.query_params
        after = q.get("after")
        if after is not None and not (after.isascii() and after.isdigit()):
            raise ValueError("after: a log position")
        return explorer.audit(memory(), workspace(request), actor=q.get("actor") or None,
                              by_principal=q.get("principal") or None, session=q.get("session") or None,
                              types=[t for t in q.get("types", "").split(",") if t] or None,
                              since=q.get("since") or None, until=q.get("until") or None,
                              after=int(after) if after else None, limit=number(request, "limit", 100, 1000),
                              principal=runtime.principal_of(request))

    def diff(request: Request) -> Any:
        q = request.query_params
        before, after = moment(q.get("from")), moment(q.get("to"))
        if before is None or after is None:
            raise ValueError("from and to: the two moments to compare (positions or ISO-8601 times)")
        return {"changes": graphdiff.diff(memory(), workspace(request), before, after,
                                         principal=runtime.principal_of(request))}

    api = {"overview": overview, "graph": graph, "entity": entity, "audit": audit, "diff": diff}
    return [
        Route(UI_PATH, page, methods=["GET"]),
        Route(UI_PATH + "/", page, methods=["GET"]),
        Route(UI_PATH + "/static/{name}", static, methods=["GET"]),
        *(Route(f"{UI_PATH}/api/{name}", endpoint(answer), methods=["GET"]) for name, answer in api.items()),
    ]


def _file(name: str, media_type: str) -> Response:
    path = resources.files("chronograph.server") / STATIC / name
    return FileResponse(str(path), media_type=media_type, headers={"Cache-Control": "no-cache"})
