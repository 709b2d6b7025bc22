"""Two n2n projects on one server, and an attacker granted only its own: a link it flips between
them, or its project's folder (or one above it) swapped for a link to the other's, at the moment
a test chooses rather than when a racing thread is lucky."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import PROFILES, Memory
from chronograph.application.engine.access import caller
from chronograph.application.engine.principal import Principal
from chronograph.application.surfaces.projectroot import workspace_name

N2N = PROFILES["n2n"].tools
SECRET = "victim-password-hunter2"


@dataclass
class Projects:
    """`mine` (the attacker's, granted to `mallory`), `victim` (someone else's), and `link`,
    a symbolic link the attacker owns, aimed at `mine`."""

    memory: Memory
    mine: Path
    victim: Path
    link: Path
    mallory: Principal
    workspaces: tuple[str, str]
    """Of mallory's project and of the victim's, as they were set up."""

    def aim(self, target: Path) -> None:
        """Aim the link at `target`, atomically (a new link renamed over it)."""
        fresh = self.link.with_name(self.link.name + ".new")
        fresh.unlink(missing_ok=True)
        fresh.symlink_to(target, target_is_directory=True)
        os.replace(fresh, self.link)

    def flipped_at_every_resolution(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Aim the link at the other project each time it is resolved: the worst an attacker racing
        the server can do, every time. A call that resolves it twice sees both projects."""
        realpath = os.path.realpath

        def resolved(path: Any, *args: Any, **kwargs: Any) -> str:
            answer = realpath(path, *args, **kwargs)
            if os.fspath(path) == str(self.link):
                self.aim(self.victim if answer == str(self.mine) else self.mine)
            return answer

        monkeypatch.setattr(os.path, "realpath", resolved)

    def after_the_check(self, change: Callable[[], None]) -> None:
        """Make `change` the first thing the memory does after the grant check of each of mallory's calls."""

        def hook(memory: Memory, tool: Any, args: Any) -> None:
            if caller() is self.mallory:
                change()

        self.memory.before_call.insert(0, hook)

    def read(self, tool: str, arguments: dict[str, Any], path: Path | None = None) -> Any:
        """Mallory's call of the query `tool` on the project at `path` (the link by default)."""
        return self.memory.read(N2N[tool], {"projectPath": str(path or self.link), **arguments},
                                principal=self.mallory).reply

    def write(self, tool: str, arguments: dict[str, Any], path: Path | None = None) -> Any:
        """Mallory's call of the command `tool` on the project at `path` (the link by default)."""
        return self.memory.write(N2N[tool], {"projectPath": str(path or self.link), **arguments},
                                 actor="mallory", principal=self.mallory)

    def victim_graph(self) -> str:
        """The victim's project as its owner reads it (the local user)."""
        return str(self.memory.read(N2N["n2n_read_graph"], {"projectPath": str(self.victim)}).reply)


def projects(memory: Memory, tmp_path: Path, mine: Path | None = None, victim: Path | None = None) -> Projects:
    """Two adopted projects in `memory`: the victim's holding `SECRET`, and mallory's own."""
    mine, victim = mine or tmp_path / "mine", victim or tmp_path / "victim"
    for root, name, fact in ((victim, "VictimSecret", SECRET), (mine, "Mine", "mallory's own")):
        (root / ".git").mkdir(parents=True)
        memory.write(N2N["n2n_add_entities"], {"projectPath": str(root), "confirmNewProjectRoot": str(root),
                     "entities": [{"name": name, "entityType": "thing", "observations": [fact]}]}, actor="owner")
    link = tmp_path / "link"
    link.symlink_to(mine, target_is_directory=True)
    workspaces = (workspace_name(Path(os.path.realpath(mine))), workspace_name(Path(os.path.realpath(victim))))
    return Projects(memory, mine, victim, link, Principal("mallory", {workspaces[0]: "write"}), workspaces)


def swap_for_link(folder: Path, target: Path) -> None:
    """Move `folder` aside and put a link to `target` in its place (its owner may: it is theirs)."""
    folder.rename(folder.with_name(folder.name + ".moved"))
    folder.symlink_to(target, target_is_directory=True)
