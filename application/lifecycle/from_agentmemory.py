"""Agent Memory's SQLite database imported into the team memory (`--from agent-memory`).

Agent Memory keeps organisations, projects and sessions, and three kinds of entries (tools,
guidelines, knowledge), each a row with its scope and the id of its current version, its
versions in `<kind>_versions` (append-only, numbered), tags in `tags` + `entry_tags`, and
relations between entries in `entry_relations` (its drizzle schema, `src/db/migrations`).
Chronograph serves those entries as the team memory (the `agent-memory` profile), whose own
events they become, not entities of the graph: the import writes through the team memory's
tools, as a client of Agent Memory would (`memory_org`, `memory_project`, `memory_import`, then
`memory_tool` / `memory_guideline` / `memory_knowledge` for each later version and for a
deactivation), recorded as the actor `import:agent-memory` with `createdBy` the same.

- Organisations and projects are matched by name (a project within its organisation) and
  created when missing; entries keep Agent Memory's ids (`memory_import` keeps an id not taken).
- A session-scoped entry goes to its session's project (global without one): sessions are one
  agent's working time, and the team memory starts its own.
- An entry new to the store gets every version in order (its first through `memory_import`,
  with its tags, the later ones as updates with their change reasons), so its history is
  Agent Memory's; an entry the store holds (same id, or same kind, scope and name) is brought
  to the source's current version, which writes nothing when it already is there.
- An entry whose history here is the start of what this import writes for it (each version
  with the source's fields, its change reason and the import as `createdBy`: an import killed
  or failed between an entry's versions, or a database used since) gets the source's
  remaining versions in order, so running the import again completes it.
- A deactivated entry is imported and deactivated.

So a second import writes nothing. The database is opened read-only and read a chunk of
entries at a time.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronograph.application.engine.outputs import ObjectOut, Out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import ChronographError, StorageError, UnavailableError
from chronograph.application.lifecycle.sources import Source, SourceError, register
from chronograph.eventstore import clock

__all__ = ["AGENT_MEMORY", "TeamReport", "import_team"]

HEADER = b"SQLite format 3\x00"
CHUNK = 200
"""Entries read and written at a time."""
KINDS = {  # kind: (table, versions table, its key, plural, what names an entry)
    "tool": ("tools", "tool_versions", "tool_id", "tools", "name"),
    "guideline": ("guidelines", "guideline_versions", "guideline_id", "guidelines", "name"),
    "knowledge": ("knowledge", "knowledge_versions", "knowledge_id", "knowledge", "title"),
}
MAIN = {"tool": ("category",), "guideline": ("category", "priority"), "knowledge": ("category",)}
VERSIONED = {  # column: field
    "tool": {"description": "description", "parameters": "parameters", "examples": "examples",
             "constraints": "constraints"},
    "guideline": {"content": "content", "rationale": "rationale", "examples": "examples"},
    "knowledge": {"content": "content", "source": "source", "confidence": "confidence", "valid_until": "validUntil"},
}
JSON_FIELDS = {"parameters", "examples"}


@dataclass
class TeamReport:
    """What an import of Agent Memory holds (a plan) or wrote."""

    scopes: dict[str, int] = field(default_factory=lambda: {"organizations": 0, "projects": 0})
    entries: dict[str, int] = field(default_factory=lambda: {plural: 0 for *_, plural, _ in KINDS.values()})
    versions: int = 0
    inactive: int = 0
    tags: int = 0
    relations: int = 0
    created: dict[str, int] = field(default_factory=lambda: {"organizations": 0, "projects": 0, "entries": 0})
    updated: int = 0
    """Entries the store held, brought to the source's current version"""


def _recognises(path: Path) -> bool:
    if not path.is_file():
        return False
    with path.open("rb") as file:
        if file.read(len(HEADER)) != HEADER:
            return False
    try:
        connection = _open(path)
    except SourceError:
        return False
    try:
        return {"tools", "guidelines", "knowledge"} <= _tables(connection)
    except sqlite3.Error:
        return False
    finally:
        connection.close()


def _open(path: Path) -> sqlite3.Connection:
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as error:
        raise SourceError(f"{path} cannot be read as a SQLite database ({error}); nothing was written") from None
    connection.row_factory = sqlite3.Row
    return connection


def _tables(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _check(path: Path, connection: sqlite3.Connection) -> None:
    wanted = {"organizations", "projects", "sessions", "tags", "entry_tags", "entry_relations"}
    for table, versions, *_ in KINDS.values():
        wanted |= {table, versions}
    missing = wanted - _tables(connection)
    if missing:
        raise SourceError(f"{path} is not Agent Memory's database (no table {', '.join(sorted(missing))}); nothing "
                          "was written")
    try:
        for table in sorted(wanted):
            connection.execute(f"SELECT * FROM {table} LIMIT 1").fetchall()  # noqa: S608 (our own names)
    except sqlite3.Error as error:
        raise SourceError(f"{path} cannot be read ({error}); a damaged database, nothing was written") from None


def import_team(memory: Memory | None, path: Path, actor: str) -> TeamReport:
    """Import Agent Memory's database at `path` into `memory`'s team memory (None: check and
    count what it holds, writing nothing).

    The check is a rehearsal: the whole import is written through the same tools into an empty
    store of its own, thrown away after, so that whatever the team memory refuses in it (a
    confidence past 1, a date that is none, a title past the limit, an organisation without a
    name) is found before the first write to `memory`.

    Raises:
        SourceError: If it is not Agent Memory's database, a damaged one, or holds what the team
            memory refuses (all found by the check).
        ChronographError: If the store refuses a write the rehearsal took (the writes before it stay).
    """
    connection = _open(path)
    try:
        _check(path, connection)
        if memory is not None:
            return _Import(memory, connection, actor).run()
        # named as an import's index is, so that one a killed import left is swept (see importindex.sweep)
        with tempfile.TemporaryDirectory(prefix=f"chronograph-import-{os.getpid()}-") as scratch, \
                Memory(Path(scratch) / "store", sync=False) as rehearsal:
            try:
                return _Import(rehearsal, connection, actor).run()
            except (StorageError, UnavailableError):
                raise  # the scratch store's own trouble (a full disk), not the database's content
            except ChronographError as error:
                said = str(error).removesuffix("; nothing was imported")
                raise SourceError(f"{path} holds what the team memory refuses: {said}; nothing was written") from None
    except sqlite3.Error as error:
        raise SourceError(f"{path} cannot be read ({error}); a damaged database") from None
    finally:
        connection.close()


class _Import:
    def __init__(self, memory: Memory | None, connection: sqlite3.Connection, actor: str) -> None:
        self.memory = memory
        self.db = connection
        self.actor = actor
        self.report = TeamReport()
        self.mapping: dict[str, dict[str, Any]] = {}
        """Agent Memory's scope ("project:<id>") -> ours ({type, id})"""
        self.named: dict[tuple[str, str, str | None, str], tuple[str, bool]] = {}
        """(kind, scope type, scope id, name) -> (our entry id, active), of the store's entries"""
        self.ours: dict[str, str] = {}
        """Agent Memory's id of an entry the store held under another id -> that id (for relations)"""
        self.histories: dict[str, list[dict[str, Any]]] = {}
        """Our id of an entry the store holds -> its versions, oldest first (as `memory_export` shows them)"""

    def run(self) -> TeamReport:
        self._scopes()
        if self.memory is not None:
            self._existing()
        for kind in KINDS:
            for chunk in self._entries(kind):
                self._write(kind, chunk)
        self._relations()
        return self.report

    def write(self, tool: str, arguments: dict[str, Any]) -> Any:
        assert self.memory is not None
        return _reply(self.memory.write(tool, arguments, actor=self.actor).output)

    # --- scopes ---------------------------------------------------------------------------

    def _scopes(self) -> None:
        orgs = {row["id"]: row["name"] for row in self.db.execute("SELECT id, name FROM organizations")}
        self.report.scopes["organizations"] = len(orgs)
        ours_orgs: dict[str, str] = {}
        if self.memory is not None:
            listed = _reply(self.memory.read("memory_org", {"action": "list", "limit": 1000}))
            ours_orgs = {o["name"]: o["id"] for o in listed["organizations"]}
        for source_id, name in orgs.items():
            if self.memory is not None and name not in ours_orgs:
                created = self.write("memory_org", {"action": "create", "name": name})
                ours_orgs[name] = created["organization"]["id"]
                self.report.created["organizations"] += 1
            self.mapping[f"org:{source_id}"] = {"type": "org", "id": ours_orgs.get(name, source_id)}
        ours_projects: dict[tuple[str, str | None], str] = {}
        if self.memory is not None:
            listed = _reply(self.memory.read("memory_project", {"action": "list", "limit": 1000}))
            ours_projects = {(p["name"], p.get("orgId")): p["id"] for p in listed["projects"]}
        for row in self.db.execute("SELECT id, org_id, name, description, root_path FROM projects"):
            self.report.scopes["projects"] += 1
            org = self.mapping.get(f"org:{row['org_id']}", {}).get("id") if row["org_id"] else None
            key = (row["name"], org)
            if self.memory is not None and key not in ours_projects:
                arguments = {"action": "create", "name": row["name"], **({"orgId": org} if org else {})}
                arguments.update({k: row[c] for k, c in (("description", "description"), ("rootPath", "root_path"))
                                  if row[c]})
                created = self.write("memory_project", arguments)
                ours_projects[key] = created["project"]["id"]
                self.report.created["projects"] += 1
            self.mapping[f"project:{row['id']}"] = {"type": "project", "id": ours_projects.get(key, row["id"])}
        for row in self.db.execute("SELECT id, project_id FROM sessions"):
            project = self.mapping.get(f"project:{row['project_id']}")
            self.mapping[f"session:{row['id']}"] = dict(project) if project else {"type": "global"}

    def _scope(self, scope_type: str, scope_id: str | None) -> tuple[str, str | None]:
        if scope_type == "global":
            return "global", None
        mapped = self.mapping.get(f"{scope_type}:{scope_id}")
        if mapped is None:
            return scope_type, scope_id  # a scope the database does not hold: the import says so
        return mapped["type"], mapped.get("id")

    def _existing(self) -> None:
        assert self.memory is not None
        for kind, (*_, plural, label) in KINDS.items():
            content = _reply(self.memory.read("memory_export", {"action": "export", "types": [plural],
                                                                "includeInactive": True, "includeVersions": True}))
            for entry in json.loads(content["content"])["entries"][plural]:
                held = (entry["id"], entry["isActive"])
                self.histories[entry["id"]] = entry["versions"]
                self.named[(kind, entry["scopeType"], entry.get("scopeId"), entry[label])] = held
                self.named[(kind, "id", entry["id"], f"{entry['scopeType']}:{entry.get('scopeId')}")] = held

    # --- entries ----------------------------------------------------------------------------

    def _entries(self, kind: str) -> Iterator[list[dict[str, Any]]]:
        table, versions, key, _, label = KINDS[kind]
        main = ", ".join(MAIN[kind])
        rows = self.db.execute(f"SELECT id, scope_type, scope_id, {label} AS name, {main}, is_active, "  # noqa: S608
                               f"current_version_id FROM {table} ORDER BY created_at, id")
        while chunk := rows.fetchmany(CHUNK):
            entries = [dict(row) for row in chunk]
            ids = [e["id"] for e in entries]
            marks = ", ".join("?" * len(ids))
            columns = ", ".join(VERSIONED[kind])
            held: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
            for row in self.db.execute(f"SELECT id, {key} AS entry, version_num, change_reason, {columns} FROM "  # noqa: S608
                                       f"{versions} WHERE {key} IN ({marks}) ORDER BY {key}, version_num", ids):
                held[row["entry"]].append(dict(row))
            tags: dict[str, list[str]] = {i: [] for i in ids}
            for row in self.db.execute(f"SELECT et.entry_id, t.name FROM entry_tags et JOIN tags t ON t.id = "  # noqa: S608
                                       f"et.tag_id WHERE et.entry_type = ? AND et.entry_id IN ({marks}) ORDER BY "
                                       "et.created_at, t.name", [kind, *ids]):
                tags[row["entry_id"]].append(row["name"])
            for entry in entries:
                entry["versions"] = _up_to_current(held[entry["id"]], entry["current_version_id"])
                entry["tags"] = tags[entry["id"]]
            yield [e for e in entries if e["versions"]]

    def _write(self, kind: str, entries: list[dict[str, Any]]) -> None:
        plural, label = KINDS[kind][3], KINDS[kind][4]
        report = self.report
        report.entries[plural] += len(entries)
        report.versions += sum(len(e["versions"]) for e in entries)
        report.inactive += sum(1 for e in entries if not e["is_active"])
        report.tags += sum(len(e["tags"]) for e in entries)
        if self.memory is None:
            return
        items, known = [], []
        # (entry, our id if the store holds it, the versions it still needs)
        later: list[tuple[dict[str, Any], str | None, list[dict[str, Any]]]] = []
        resumed = 0
        for entry in entries:
            scope = self._scope(entry["scope_type"], entry["scope_id"])
            # by id only in the scope it goes to, as memory_import matches it (elsewhere it is another entry)
            ours = (self.named.get((kind, "id", entry["id"], f"{scope[0]}:{scope[1]}"))
                    or self.named.get((kind, *scope, entry["name"])))
            # how many of its versions are written: an entry held here is at its current version,
            # unless its history is the start of this import's (see `_written`)
            done = 1 if ours is None else _written(kind, entry["versions"], self.histories.get(ours[0], []),
                                                   self.actor)
            item = {"id": entry["id"], label: entry["name"], "scopeType": scope[0], "scopeId": scope[1],
                    "tags": entry["tags"], **{k: entry[k] for k in MAIN[kind] if entry[k] is not None},
                    "currentVersion": _fields(kind, entry["versions"][done - 1])}
            items.append(item)
            if ours is None:
                later.append((entry, None, entry["versions"][1:]))
            else:
                known.append((entry, ours))
                if done < len(entry["versions"]):
                    later.append((entry, ours[0], entry["versions"][done:]))
                    resumed += 1
                if ours[0] != entry["id"]:
                    self.ours[entry["id"]] = ours[0]
        document = {"entries": {plural: items}}
        out = self.write("memory_import", {"action": "import", "content": json.dumps(document),
                                           "conflictStrategy": "update", "importedBy": self.actor})
        report.created["entries"] += out["created"]
        # memory_import leaves a resumed entry as it is (at the version written last), unless Agent
        # Memory changed its category or priority since: then it is counted twice
        report.updated += out["updated"] + resumed
        moved = {renamed["id"]: renamed["newId"] for renamed in out.get("newIds", [])}  # ids held or forgotten here
        self.ours.update(moved)
        for entry, our_id, versions in later:
            for version in versions:
                self.write(f"memory_{kind}", {"action": "update", "id": our_id or moved.get(entry["id"], entry["id"]),
                                              **_fields(kind, version),
                                              "changeReason": version["change_reason"] or "Imported",
                                              "createdBy": self.actor})
        for entry, our_id, _ in later:
            if not entry["is_active"] and our_id is None:  # a held one is deactivated below
                self.write(f"memory_{kind}", {"action": "deactivate", "id": moved.get(entry["id"], entry["id"])})
        for entry, (our_id, active) in known:
            if not entry["is_active"] and active:
                self.write(f"memory_{kind}", {"action": "deactivate", "id": our_id})

    def _relations(self) -> None:
        rows = self.db.execute("SELECT source_type, source_id, target_type, target_id, relation_type FROM "
                               "entry_relations ORDER BY created_at, id")
        while chunk := rows.fetchmany(CHUNK):
            relations = []
            for row in chunk:
                ends = []
                for side in ("source", "target"):
                    end_type, end_id = row[f"{side}_type"], row[f"{side}_id"]
                    if end_type == "project":
                        end_id = self.mapping.get(f"project:{end_id}", {}).get("id", end_id)
                    else:
                        end_id = self.ours.get(end_id, end_id)
                    ends.append((end_type, end_id))
                relations.append({"sourceType": ends[0][0], "sourceId": ends[0][1], "targetType": ends[1][0],
                                  "targetId": ends[1][1], "relationType": row["relation_type"]})
            self.report.relations += len(relations)
            if self.memory is not None:
                self.write("memory_import", {"action": "import", "content": json.dumps(
                    {"entries": {}, "relations": relations}), "conflictStrategy": "skip", "importedBy": self.actor})


def _reply(out: Out) -> dict[str, Any]:
    """A team tool's answer (Agent Memory's JSON object)."""
    assert isinstance(out, ObjectOut)
    return out.reply


def _up_to_current(versions: list[dict[str, Any]], current: str | None) -> list[dict[str, Any]]:
    """An entry's versions up to its current one (Agent Memory points at it; the last without)."""
    for index, version in enumerate(versions):
        if version["id"] == current:
            return versions[: index + 1]
    return versions


def _fields(kind: str, version: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for column, name in VERSIONED[kind].items():
        value = version[column]
        if value is None:
            continue
        if name in JSON_FIELDS:
            try:
                value = json.loads(value)
            except (TypeError, ValueError):
                continue
        elif name == "validUntil" and isinstance(value, str):
            try:  # as the team memory stores it, so that a version here compares equal
                value = clock.isoformat(clock.parse_iso(value))
            except ValueError:
                pass  # the tool refuses it (the rehearsal says so)
        out[name] = value
    return out


def _written(kind: str, versions: list[dict[str, Any]], held: list[dict[str, Any]], actor: str) -> int:
    """How many of an entry's source `versions` the store's entry holds, given its versions `held`
    (oldest first, as `memory_export` shows them): as many as this import writes for the first of
    them, when `held` is the start of that (an import stopped between an entry's versions, or
    Agent Memory's entry updated since); else all, for the store's entry is another writer's too.

    The import writes the first version through `memory_import` (no change reason), each later
    one as an update with its change reason (or "Imported"), all with `createdBy` the import's
    actor; an update that changes nothing writes no version. A version here is the import's
    when it says all that and holds every field the source's version sets.
    """
    def holds(version: dict[str, Any], source: dict[str, Any]) -> bool:
        return all(version.get(key) == value for key, value in _fields(kind, source).items())

    whole = len(versions)
    if not held or held[0].get("createdBy") != actor or held[0].get("changeReason") is not None \
            or not holds(held[0], versions[0]):
        return whole
    at = 1  # versions of `held` accounted for
    for index, version in enumerate(versions[1:], 1):
        if holds(held[at - 1], version):
            continue  # this update writes nothing
        if at == len(held):
            return index  # the rest is still to be written
        here = held[at]
        if (here.get("createdBy") != actor or here.get("changeReason") != (version["change_reason"] or "Imported")
                or not holds(here, version)):
            return whole
        at += 1
    return whole


AGENT_MEMORY = register(Source("agent-memory", "Agent Memory's SQLite database (into the team memory)",
                               _recognises, team=import_team))
