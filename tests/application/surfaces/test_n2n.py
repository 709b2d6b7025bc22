"""n2n's project, resolved once per call: the grant check, the workspace the tool reads and
writes and everything after them use the one resolution, so a principal granted only its own
project cannot reach another through a link it flips, or a folder it swaps, after the check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from chronograph.application import Memory
from chronograph.application.errors import ChronographError
from support.projects import SECRET, Projects, projects, swap_for_link

PLANTED = {"entities": [{"name": "Planted", "entityType": "thing", "observations": ["mallory was here"]}]}


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "store", sync=False) as opened:
        yield opened


@pytest.fixture
def two(memory: Memory, tmp_path: Path) -> Projects:
    return projects(memory, tmp_path)


def flipped_after_the_check(two: Projects, monkeypatch: pytest.MonkeyPatch) -> None:
    two.after_the_check(lambda: two.aim(two.victim))


def flipped_at_every_resolution(two: Projects, monkeypatch: pytest.MonkeyPatch) -> None:
    two.flipped_at_every_resolution(monkeypatch)


FLIPS = [flipped_after_the_check, flipped_at_every_resolution]


@pytest.mark.parametrize("flip", FLIPS, ids=["after the check", "at every resolution"])
def test_a_link_flipped_after_the_grant_check_still_reads_the_project_that_was_checked(
        two: Projects, monkeypatch: pytest.MonkeyPatch, flip: Callable[[Projects, pytest.MonkeyPatch], None]) -> None:
    flip(two, monkeypatch)
    for tool in ("n2n_read_graph", "n2n_get_graph_summary", "n2n_search", "n2n_open_nodes"):
        two.aim(two.mine)
        arguments = {"query": "victim"} if tool == "n2n_search" else {"names": ["VictimSecret", "Mine"]} \
            if tool == "n2n_open_nodes" else {}
        reply = str(two.read(tool, arguments))
        assert SECRET not in reply and "VictimSecret" not in reply, tool


@pytest.mark.parametrize("flip", FLIPS, ids=["after the check", "at every resolution"])
def test_a_link_flipped_after_the_grant_check_still_writes_into_the_project_that_was_checked(
        two: Projects, monkeypatch: pytest.MonkeyPatch, flip: Callable[[Projects, pytest.MonkeyPatch], None]) -> None:
    flip(two, monkeypatch)
    two.write("n2n_add_entities", PLANTED)
    two.aim(two.mine)
    two.write("n2n_add_observations", {"observations": [{"entityName": "VictimSecret", "contents": ["overwritten"]}]})
    assert "Planted" not in two.victim_graph() and "overwritten" not in two.victim_graph()
    assert "Planted" in str(two.read("n2n_read_graph", {}, two.mine))


@pytest.mark.parametrize("kind", ["write", "read"])
def test_a_project_folder_swapped_for_a_link_after_the_check_is_refused_and_nothing_is_read_or_written(
        two: Projects, kind: str) -> None:
    """The path names no link when it is checked; the attacker then moves its own folder aside
    and puts a link to the victim's in its place."""
    two.after_the_check(lambda: swap_for_link(two.mine, two.victim))
    head = two.memory.log.head()
    with pytest.raises(ChronographError) as refused:
        if kind == "write":
            two.write("n2n_add_entities", PLANTED, two.mine)
        else:
            two.read("n2n_read_graph", {}, two.mine)
    assert refused.value.code == "conflict" and "changed while the call ran" in str(refused.value)
    assert str(two.victim) not in str(refused.value) and two.memory.log.head() == head
    assert "Planted" not in two.victim_graph()


def test_a_folder_above_the_project_swapped_after_the_check_is_refused(memory: Memory, tmp_path: Path) -> None:
    """The victim's project is `other/mine`: the attacker swaps its own project's parent for a link
    to `other`, so that the very path it was granted names the victim's project."""
    two = projects(memory, tmp_path, mine=tmp_path / "parent" / "mine", victim=tmp_path / "other" / "mine")
    two.after_the_check(lambda: swap_for_link(tmp_path / "parent", tmp_path / "other"))
    with pytest.raises(ChronographError, match="changed while the call ran"):
        two.read("n2n_read_graph", {}, two.mine)
    assert "Planted" not in two.victim_graph()
