"""Where team entries live: organisations, projects and working sessions
(`memory_org`, `memory_project`, `memory_session`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from chronograph.application.engine.arguments import Metadata
from chronograph.application.engine.batch import Batch
from chronograph.application.engine.outputs import ObjectOut, object_out
from chronograph.application.engine.service import Memory
from chronograph.application.errors import DuplicateError, InvalidArgumentsError, NotFoundError
from chronograph.application.team.common import TEAM, Page, Short, Team, iso, new_id, page, require
from chronograph.eventstore.teamevents import (
    OrganizationCreated,
    ProjectCreated,
    ProjectUpdated,
    SessionEnded,
    SessionStarted,
)
from chronograph.projections.team.state import Organization, Project, Session
from msgspec import UNSET, Meta, UnsetType

__all__ = ["MemoryOrg", "MemoryProject", "MemorySession", "org_out", "project_out", "session_active", "session_out"]

Text = Annotated[str, Meta(max_length=16_384)]


def org_out(org: Organization) -> dict[str, Any]:
    return {"id": org.id, "name": org.name, "metadata": org.metadata, "createdAt": iso(org.created_at)}


def project_out(project: Project) -> dict[str, Any]:
    return {
        "id": project.id, "name": project.name, "orgId": project.org_id, "description": project.description,
        "rootPath": project.root_path, "metadata": project.metadata, "createdAt": iso(project.created_at),
        "updatedAt": iso(project.updated_at),
    }


def session_out(session: Session) -> dict[str, Any]:
    return {
        "id": session.id, "projectId": session.project_id, "name": session.name, "purpose": session.purpose,
        "agentId": session.agent_id, "status": session.status, "metadata": session.metadata,
        "startedAt": iso(session.started_at), "endedAt": iso(session.ended_at),
    }


class MemoryOrg(Page, kw_only=True):
    action: Literal["create", "list"]
    name: Short | UnsetType = UNSET
    metadata: Metadata | UnsetType = UNSET


@TEAM.command("memory_org", "Organizations", "Manage organizations (top-level grouping). Actions: create, list",
              reads={"list"})
def memory_org(host: Batch | Memory, args: MemoryOrg) -> ObjectOut:
    team = Team.of(host, "memory_org")
    if args.action == "list":
        orgs, meta = page(list(team.state.orgs.values()), args)
        return object_out(organizations=[org_out(org) for org in orgs], meta=meta)
    require("memory_org", "create", name=args.name)
    assert isinstance(args.name, str)
    if any(org.name == args.name for org in team.state.orgs.values()):
        raise DuplicateError(f"An organization named {args.name!r} already exists")
    org_id = new_id("org")
    team.emit(f"am/org/{org_id}", OrganizationCreated(
        org_id=org_id, name=args.name, metadata={} if args.metadata is UNSET else args.metadata), new=True)
    return object_out(success=True, organization=org_out(team.state.orgs[org_id]))


class MemoryProject(Page, kw_only=True):
    action: Literal["create", "list", "get", "update"]
    id: Short | UnsetType = UNSET
    name: Short | UnsetType = UNSET
    org_id: Short | UnsetType = UNSET
    description: Text | None | UnsetType = UNSET
    root_path: Text | None | UnsetType = UNSET
    metadata: Metadata | UnsetType = UNSET


@TEAM.command("memory_project", "Projects", "Manage projects within organizations. Actions: create, list, get, "
              "update", reads={"list", "get"})
def memory_project(host: Batch | Memory, args: MemoryProject) -> ObjectOut:
    team = Team.of(host, "memory_project")
    state = team.state
    org_id = None if args.org_id is UNSET else args.org_id
    if org_id is not None and org_id not in state.orgs:
        raise NotFoundError(f"Organization {org_id!r} does not exist")
    if args.action == "list":
        projects = [p for p in state.projects.values() if org_id is None or p.org_id == org_id]
        chosen, meta = page(projects, args)
        return object_out(projects=[project_out(p) for p in chosen], meta=meta)
    if args.action == "create":
        require("memory_project", "create", name=args.name)
        if any(p.name == args.name and p.org_id == org_id for p in state.projects.values()):
            raise DuplicateError(f"A project named {args.name!r} already exists"
                                 + (f" in organization {org_id}" if org_id else ""))
        project_id = new_id("proj")
        team.emit(f"am/project/{project_id}", ProjectCreated(
            project_id=project_id, name=str(args.name), org_id=org_id,
            description=None if args.description is UNSET else args.description,
            root_path=None if args.root_path is UNSET else args.root_path,
            metadata={} if args.metadata is UNSET else args.metadata), new=True)
        return object_out(success=True, project=project_out(state.projects[project_id]))
    project = _project(team, args, org_id)
    if args.action == "get":
        return object_out(project=project_out(project))
    if args.id is not UNSET and args.name is not UNSET and args.name != project.name:  # a rename: as create
        held = next((p for p in state.projects.values() if p.name == args.name and p.org_id == project.org_id), None)
        if held is not None:
            raise DuplicateError(f"A project named {args.name!r} already exists"
                                 + (f" in organization {project.org_id}" if project.org_id else "")
                                 + f" (id {held.id})")
    team.emit(f"am/project/{project.id}", ProjectUpdated(
        name=args.name, description=args.description, root_path=args.root_path, metadata=args.metadata))
    return object_out(success=True, project=project_out(project))


def _project(team: Team, args: MemoryProject, org_id: str | None) -> Project:
    if args.id is not UNSET:
        project = team.state.projects.get(args.id)
        if project is None:
            raise NotFoundError(f"Project {args.id!r} not found")
        if org_id is not None and project.org_id != org_id:  # orgId narrows the search, by id as by name
            raise NotFoundError(f"Project {args.id!r} not found in organization {org_id} (it is "
                                + (f"in organization {project.org_id})" if project.org_id else "in none)"))
        return project
    if args.name is UNSET:
        raise InvalidArgumentsError("memory_project", f"id (or name) is required for action {args.action!r}")
    named = [p for p in team.state.projects.values() if p.name == args.name and (org_id is None or p.org_id == org_id)]
    if len(named) > 1:  # one name in several organisations: which one is not ours to guess (an update least)
        held = ", ".join(f"{p.id} ({'in ' + p.org_id if p.org_id else 'in no organization'})" for p in named)
        raise InvalidArgumentsError("memory_project", f"name: several projects are named {args.name!r}: {held}; give "
                                    "id, or orgId, to say which")
    if not named:
        raise NotFoundError(f"Project named {args.name!r} not found")
    return named[0]


class MemorySession(Page, kw_only=True):
    action: Literal["start", "end", "list"]
    id: Short | UnsetType = UNSET
    project_id: Short | UnsetType = UNSET
    name: Text | UnsetType = UNSET
    purpose: Text | UnsetType = UNSET
    agent_id: Short | UnsetType = UNSET
    status: Literal["active", "completed", "discarded"] | UnsetType = UNSET
    metadata: Metadata | UnsetType = UNSET


@TEAM.command("memory_session", "Sessions", "Manage working sessions within projects. Actions: start, end, list",
              reads={"list"})
def memory_session(host: Batch | Memory, args: MemorySession) -> ObjectOut:
    team = Team.of(host, "memory_session")
    state = team.state
    if args.action == "list":
        sessions = [s for s in state.sessions.values()
                    if (args.project_id is UNSET or s.project_id == args.project_id)
                    and (args.status is UNSET or s.status == args.status)
                    and (args.agent_id is UNSET or s.agent_id == args.agent_id)]
        chosen, meta = page(sessions, args)
        return object_out(sessions=[session_out(s) for s in chosen], meta=meta)
    if args.action == "start":
        project_id = None if args.project_id is UNSET else args.project_id
        if project_id is not None and project_id not in state.projects:
            raise NotFoundError(f"Project {project_id!r} not found")
        session_id = new_id("sess")
        team.emit(f"am/session/{session_id}", SessionStarted(
            session_id=session_id, project_id=project_id, name=None if args.name is UNSET else args.name,
            purpose=None if args.purpose is UNSET else args.purpose,
            agent_id=None if args.agent_id is UNSET else args.agent_id,
            metadata={} if args.metadata is UNSET else args.metadata), new=True)
        return object_out(success=True, session=session_out(state.sessions[session_id]))
    require("memory_session", "end", id=args.id)
    session = state.sessions.get(str(args.id))
    if session is None:
        raise NotFoundError(f"Session {args.id!r} not found")
    if session.status != "active":
        raise InvalidArgumentsError("memory_session", f"id: session {session.id} already ended ({session.status})")
    status = "completed" if args.status is UNSET or args.status == "active" else args.status
    team.emit(f"am/session/{session.id}", SessionEnded(status=status))
    return object_out(success=True, session=session_out(session))


def session_active(memory: Memory, session_id: str) -> bool:
    """Whether the team session `session_id` is active now: not ended, by whoever ended it (any
    connection, any process on the store), nor emptied away by a reset."""
    with memory.lock:
        session = Team.of(memory, "memory_session").state.sessions.get(session_id)
    return session is not None and session.status == "active"
