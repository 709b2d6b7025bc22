"""What each view of the explorer says, in the real browser: at 800, 1280 and 1920 pixels wide
nothing runs off the panel; the legend counts the moment the graph shows; a type keeps its
colour in every view, and a dozen types get a dozen colours; one is "1 entity"; a search
shows what relates its hits; a restore reads as one; and the `ui` link reaches a pipe at once."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from freezegun import freeze_time
from support.explorer import ROOT, launch, opened, serve, stop

pytestmark = pytest.mark.wire
pytest.importorskip("playwright.sync_api")

KINDS = {"Ada": "person", "Grace": "person", "Navy": "organisation", "London": "place", "Notes": "paper",
         "Engine": "machine", "COBOL": "language", "Compilers": "concept", "Apollo": "mission", "Unix": "software",
         "Moon landing": "event", "Turing Award": "award", "Team A": "team"}
"""Thirteen entities of twelve types."""


def seed(store: Path) -> None:
    """Every entity at position 1 to 13, then relations (two people sharing an employer), a
    deletion and its restore."""
    with Memory(store, sync=False) as memory, freeze_time("2026-03-01T10:00:00Z") as clock:
        def write(tool: str, **arguments: Any) -> None:
            memory.write(tool, arguments, actor="claude-desktop")
            clock.tick(60)

        write("create_entities", entities=[{"name": n, "entityType": t, "observations": [f"a {t}"]}
                                           for n, t in KINDS.items()])
        write("create_relations", relations=[
            {"from": "Ada", "to": "Navy", "relationType": "advised"},
            {"from": "Grace", "to": "Navy", "relationType": "served_in"},
            {"from": "Ada", "to": "Notes", "relationType": "wrote"},
            {"from": "Grace", "to": "COBOL", "relationType": "shaped"},
            {"from": "Notes", "to": "Engine", "relationType": "describes"},
            {"from": "Apollo", "to": "Moon landing", "relationType": "made"}])
        write("delete_entities", entityNames=["Unix"])
        write("revert_entity", name="Unix", toVersion=1)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One server for the module: these tests only read."""
    store = tmp_path_factory.mktemp("views") / "store"
    seed(store)
    process, url = serve(store)
    try:
        yield url
    finally:
        stop(process)


@pytest.fixture
def page(browser: Any, base: str) -> Iterator[Any]:
    shown = opened(browser, base)
    yield shown
    shown.context.close()


def slide(page: Any, position: int) -> None:
    page.fill("#slider", str(position))
    page.wait_for_function(f"document.getElementById('legend').dataset.position === '{position}'")


@pytest.mark.parametrize("width", [800, 1280, 1920])
def test_the_audit_filters_stay_inside_the_panel_at_every_width(browser: Any, base: str, width: int) -> None:
    page = opened(browser, base, width=width, height=800)
    try:
        page.click("#tab-audit")
        overflow = page.evaluate("""() => {
            const side = document.getElementById('side');
            const edge = side.getBoundingClientRect().right - (side.offsetWidth - side.clientWidth);
            const out = [...document.querySelectorAll('#audit-filters input, #audit-filters button')]
                .filter(e => e.getBoundingClientRect().right > edge + 0.5).map(e => e.name || e.id || e.textContent);
            return {out, scrolls: side.scrollWidth > side.clientWidth, page: document.body.scrollWidth > innerWidth};
        }""")
        assert overflow == {"out": [], "scrolls": False, "page": False}
    finally:
        page.context.close()


def test_the_legend_counts_the_moment_the_graph_shows(page: Any) -> None:
    assert page.get_attribute("#legend", "data-position") == "now"
    assert "Now: 13 entities, 6 relations" in page.text_content("#legend")
    slide(page, 13)  # every entity created, no relation yet
    assert "At position 13: 13 entities, 0 relations" in page.text_content("#legend")
    assert "13 entities shown, 0 relations, as of position 13" in page.text_content("#status")
    page.click("#now")
    page.wait_for_function("document.getElementById('legend').dataset.position === 'now'")
    assert "Now: 13 entities, 6 relations" in page.text_content("#legend")


def colours(page: Any) -> dict[str, str]:
    """type -> its colour, as the graph draws it (the same for every node of the type)."""
    found: dict[str, set[str]] = {}
    for node in page.evaluate("cy.nodes().map(n => [n.data('type'), n.style('background-color')])"):
        found.setdefault(node[0], set()).add(node[1].replace(" ", ""))
    assert all(len(shades) == 1 for shades in found.values()), found
    return {kind: shades.pop() for kind, shades in found.items()}


def test_a_type_keeps_its_colour_in_every_view_and_twelve_types_get_twelve_colours(page: Any) -> None:
    now = colours(page)
    assert len(now) == 12 and len(set(now.values())) == 12
    swatches = page.evaluate("""[...document.querySelectorAll('#legend li')]
        .filter(li => li.querySelector('.swatch'))
        .map(li => [li.textContent.replace(/ \\d+$/, ''),
                    getComputedStyle(li.querySelector('.swatch')).backgroundColor])""")
    assert {kind: shade.replace(" ", "") for kind, shade in swatches} == now
    page.fill("#q", "person")
    page.click("#search button")
    page.wait_for_function("document.getElementById('status').textContent.includes('found')")
    assert colours(page).items() <= now.items()
    slide(page, 14)
    assert colours(page).items() <= now.items()


def test_one_is_one_entity_and_one_relation(page: Any) -> None:
    page.fill("#q", "COBOL")
    page.click("#search button")
    page.wait_for_function("document.getElementById('status').textContent.startsWith('1 entity found')")
    assert page.text_content("#status").startswith("1 entity found, 0 relations, as of now")
    assert "language, 1 relation" in page.text_content("#shown-list")
    assert "1 entities" not in page.content() and "1 relations" not in page.content()


def test_a_search_shows_the_entities_that_relate_its_hits(page: Any) -> None:
    page.fill("#q", "person")  # Ada and Grace, who never met; both worked with the Navy
    page.click("#search button")
    page.wait_for_function("document.getElementById('status').textContent.includes('relating them')")
    assert page.text_content("#status").startswith("2 entities found and 1 entity relating them, 2 relations")
    assert page.evaluate("cy.getElementById('Navy').hasClass('bridge')")
    assert sorted(page.evaluate("cy.edges().map(e => e.data('label'))")) == ["advised", "served_in"]


def test_a_restored_entity_reads_as_restored(page: Any) -> None:
    page.click("#tab-shown")
    page.click("#shown-list button:text-is('Unix')")
    page.wait_for_selector("#entity .version")
    text = page.text_content("#entity")
    assert "v3 entity_restored" in text and "restored as it was at version 1" in text


def test_the_ui_link_reaches_a_pipe_while_the_server_runs(tmp_path: Path) -> None:
    store = tmp_path / "store"
    seed(store)
    process = subprocess.Popen([sys.executable, "-m", "chronograph", "ui", "--store", str(store), "--port", "0"],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stderr is not None
        with selectors.DefaultSelector() as waiting:
            waiting.register(process.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + 60
            line = b""
            while not line.endswith(b"\n") and time.monotonic() < deadline:
                if waiting.select(timeout=deadline - time.monotonic()):
                    line += os.read(process.stderr.fileno(), 4096)
        assert process.poll() is None and b"http://127.0.0.1:" in line and b":0/" not in line, line
    finally:
        process.terminate()
        process.wait(timeout=30)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
