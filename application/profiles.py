"""Profiles: the named sets of tools a server can present, all over the same store.

`chronograph` (the default) is Chronograph's own surface; `official` is exactly the nine
tools of the official MCP memory server. Profiles for the other memory servers our
users come from add their own tools, named and shaped as those servers name and shape
them, translated to the same commands and events.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from chronograph.application.engine.registry import CORE, Registry
from chronograph.application.surfaces.kuzu import KUZU, KUZU_TOOLS
from chronograph.application.surfaces.n2n import N2N, N2N_TOOLS
from chronograph.application.surfaces.workspace import WORKSPACE, WORKSPACE_TOOLS
from chronograph.application.team.common import TEAM

__all__ = ["DEFAULT_PROFILE", "OFFICIAL_TOOLS", "PROFILES", "SHARED_TEAM_TOOLS", "TEAM_ADDITIONS", "TEAM_TOOLS",
           "Profile", "profile"]

OFFICIAL_TOOLS = (
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
)
"""The official memory server's tools, in its order."""

TEAM_TOOLS = (
    "memory_org", "memory_project", "memory_session", "memory_tool", "memory_guideline", "memory_knowledge",
    "memory_tag", "memory_relation", "memory_file_lock", "memory_query", "memory_conflict", "memory_health",
    "memory_init", "memory_export", "memory_import",
)
"""Agent Memory's fifteen tools, in the order of its reference."""
TEAM_ADDITIONS = ("memory_forget",)
"""Tools the agent-memory profile offers beyond the reference's: erasing an entry for real."""


@dataclass(frozen=True)
class Profile:
    """A named surface: its tools and what a server says about itself when it presents them."""

    name: str
    summary: str
    select: Callable[[], Registry]
    """Picks the profile's tools from the registries (when asked: tools may be declared later)."""
    instructions: str
    errors: str = "text"
    """How a refused call reads: "text" (the error's own words, as the official server) or the
    JSON object of the server the profile mirrors ("agent-memory", "workspace", "kuzu", "n2n")."""
    exact: bool = False
    """Whether answers keep the mirrored server's shape exactly: what Chronograph adds to an
    answer unasked (a deleted name's history) rides in the result's `_meta` instead."""
    compact: bool = False
    """Whether an answer's text block is its compact JSON. Chronograph's own surfaces print
    it so: a model reads the text, and the two-space indentation every mirrored server prints
    (and its profile keeps) is a third of its tokens."""

    @property
    def tools(self) -> Registry:
        """The tools this profile presents, in order."""
        return self.select()


INSTRUCTIONS = (
    "Chronograph is a knowledge-graph memory that never overwrites: every change is kept, "
    "so past states can be read back and every change audited. Use it like the official "
    "memory server (entities, relations, observations). Fields many tools share: "
    '`workspace` (default "default"; workspaces are isolated from each other); '
    "`requestId` on writes (an idempotency key: a retried call with the same one returns the "
    "first answer and writes nothing); `expectedVersion` on an item (the write fails, writing "
    "nothing, unless the item is at that version; 0: it must not exist); `asOf` on reads "
    '(answer from the state then: an ISO-8601 time such as "2026-11-21T14:00:00Z" or a log position); '
    "`cursor` on paged reads (the `nextCursor` of the previous answer); valid time, when a fact was true "
    "in the world: `validFrom`/`validUntil` on observations and relations when writing (ISO-8601), "
    "`validAt` on reads (show what was true then; default now; combines with asOf); "
    "`includeProvenance` on reads (each observation's recordedAt, actor and call); "
    "`includeMetadata` on reads (each entity's and relation's createdAt and updatedAt, and its "
    "`version`, what expectedVersion takes, where answers do not carry it already); "
    "`summaryMode` on graph reads (names and types only: a cheap index); on searches, "
    "`matchesPerEntity` (each entity's best matching observations in ranked modes, as matchedObservations "
    "{text, score}; default 3, 0: none) and `observationsLimit` (at most that many observations per entity, "
    "the best matching)."
)


TEAM_INSTRUCTIONS = (
    "Agent Memory (served by Chronograph, whose log never overwrites): tools, guidelines and knowledge "
    "in scopes (global, org, project, session) that inherit downwards; versions with a changeReason; "
    "tags; relations between entries; file locks as leases; conflicts kept when two agents write one "
    "entry at once. Every tool takes an `action`. Reads (get, list, history, memory_query) take `asOf` "
    "(an ISO-8601 time or a log position) to answer as the memory stood then. Errors are JSON: "
    '{"error": message, "code": machine-readable code}.'
)


SHARED_TEAM_TOOLS = ("memory_session", "memory_file_lock")
"""The team memory's tools that make sense beside the graph: sessions (the actor context of
a connection's writes) and file locks."""


def _everything() -> Registry:
    """Every tool of every profile; where two surfaces use one name, ours is the one offered."""
    tools = {tool.name: tool for tool in _own_surface()}
    for registry in (TEAM, N2N, WORKSPACE, KUZU):
        for tool in registry:
            tools.setdefault(tool.name, tool)
    return Registry(tools.values())


def _own_surface() -> Registry:
    official = CORE.select(OFFICIAL_TOOLS)
    return Registry([*official, *(tool for tool in CORE if tool.name not in official),
                     *TEAM.select(SHARED_TEAM_TOOLS)])


PROFILES: dict[str, Profile] = {
    "chronograph": Profile("chronograph", "Chronograph's own tools: the official nine and history, time "
                           "travel, audit, context", _own_surface, INSTRUCTIONS, compact=True),
    "official": Profile("official", "exactly the nine tools of the official MCP memory server",
                        lambda: CORE.select(OFFICIAL_TOOLS), INSTRUCTIONS, exact=True),
    "agent-memory": Profile("agent-memory", "the fifteen tools of Agent Memory 0.3.0 (scopes, sessions, typed "
                            "entries, tags, file locks, conflicts) and memory_forget",
                            lambda: TEAM.select((*TEAM_TOOLS, *TEAM_ADDITIONS)),
                            TEAM_INSTRUCTIONS, errors="agent-memory"),
    "workspace": Profile("workspace", "the four tools of the workspace upsert server: workspaceName, upserts, "
                         "stable ids", lambda: WORKSPACE.select(WORKSPACE_TOOLS), (
                             "A knowledge graph partitioned by workspaceName, served by Chronograph (every change "
                             "is kept). Entities and relations are created or updated by upsert_entity and "
                             "upsert_relation; their ids are stable. Errors are {success: false, message, code}."),
                         errors="workspace"),
    "kuzu": Profile("kuzu", "the seven tools of the Kuzu memory graph: databases, snake_case arguments, "
                    "semantic search", lambda: KUZU.select(KUZU_TOOLS), (
                        "A knowledge graph in databases (kuzu://databases/list names them), served by "
                        "Chronograph: every change is kept, any past state can be read. Replies carry a "
                        "status; errors are {status: \"error\", message, code}."), errors="kuzu"),
    "n2n": Profile("n2n", "the twelve tools of n2n-memory: project-local memory found from projectPath, hot "
                   "context, fuzzy search", lambda: N2N.select(N2N_TOOLS), (
                       "Project-local memory (served by Chronograph: every change is kept). Every tool takes "
                       "projectPath, the absolute project root. A root without .mcp answers "
                       "AWAITING_CONFIRMATION with detectedRoot: call again with confirmNewProjectRoot set to it. "
                       "Start a session with n2n_read_graph summaryMode true."), errors="n2n"),
    "full": Profile("full", "every tool of every profile (for operators and tests); where two surfaces share a "
                    "name, Chronograph's own tool is the one offered", _everything, INSTRUCTIONS, compact=True),
}
"""Every profile, by name."""

DEFAULT_PROFILE = "chronograph"


def profile(name: str) -> Profile:
    """The profile called `name`.

    Raises:
        KeyError: If there is none, with the names there are.
    """
    try:
        return PROFILES[name]
    except KeyError:
        raise KeyError(f"no profile {name!r}; choose one of {', '.join(PROFILES)}") from None
