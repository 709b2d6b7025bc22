"""The graph explorer, driven as a person would in a real headless browser (Chromium through
Playwright): it draws the graph, finds and opens entities, travels back in time, compares two
moments, follows writes in the audit feed, says when the server is gone, and asks for the
token. (The pictures in docs/ are taken by docs/screenshots.py: tests write only under
temporary folders.)"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from chronograph.application import Memory
from freezegun import freeze_time
from support.explorer import ROOT, launch, serve, stop
from support.http import request

pytestmark = pytest.mark.wire
pytest.importorskip("playwright.sync_api")


def seed(store: Path) -> None:
    """A small history at known times: people and a language, a fact added, Bob deleted at the end."""
    with Memory(store, sync=False) as memory, freeze_time("2026-03-01T10:00:00Z") as clock:
        def write(tool: str, **arguments: Any) -> None:
            memory.write(tool, arguments, actor="claude-desktop")
            clock.tick(60)

        write("create_entities", entities=[
            {"name": "Ada Lovelace", "entityType": "person", "observations": ["wrote the first program"]},
            {"name": "Bob", "entityType": "person", "observations": ["likes tea"]},
            {"name": "Python", "entityType": "language", "observations": ["dynamic typing"]},
            {"name": "Analytical Engine", "entityType": "machine", "observations": ["designed by Babbage"]}])
        write("create_relations", relations=[
            {"from": "Ada Lovelace", "to": "Analytical Engine", "relationType": "programmed"},
            {"from": "Ada Lovelace", "to": "Bob", "relationType": "knows"},
            {"from": "Bob", "to": "Python", "relationType": "uses"}])
        write("add_observations", observations=[{"entityName": "Ada Lovelace", "contents": ["born 1815"]}])
        write("update_entities", entities=[{"name": "Python", "entityType": "programming language"}])
        write("delete_entities", entityNames=["Bob"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launch()


@pytest.fixture
def explorer(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    store = tmp_path / "store"
    seed(store)
    process, base = serve(store)
    try:
        yield store, base
    finally:
        stop(process)


@pytest.fixture
def page(browser: Any, explorer: tuple[Path, str]) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 760})
    opened = context.new_page()
    opened.goto(explorer[1] + "/ui/")
    opened.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
    yield opened
    context.close()


def shown(page: Any) -> list[str]:
    return page.eval_on_selector_all("#shown-list li > button", "buttons => buttons.map(b => b.textContent)")


def test_the_page_draws_the_most_connected_entities_with_their_types(page: Any) -> None:
    assert sorted(shown(page)) == ["Ada Lovelace", "Analytical Engine", "Python"]
    assert page.evaluate("cy.edges().length") == 1  # Bob's relations went with him
    assert "Now: 3 entities, 1 relation" in page.text_content("#legend")
    assert "person 1" in page.text_content("#legend")


def test_a_search_shows_what_it_finds(page: Any) -> None:
    page.fill("#q", "engine")
    page.click("#search button")
    page.wait_for_function("document.querySelectorAll('#shown-list li').length === 1")
    assert shown(page) == ["Analytical Engine"]


def test_an_entity_shows_every_version_with_who_when_and_what_changed(page: Any) -> None:
    page.click("#tab-shown")
    page.click("#shown-list button:text('Ada Lovelace')")
    page.wait_for_selector("#entity .version")
    text = page.text_content("#entity")
    assert "2 versions" in text and "+ born 1815" in text and "claude-desktop" in text
    assert "2026-03-01T10:02:00" in text and "programmed" in text  # when, and the relations over time


def test_moving_the_slider_back_shows_the_graph_as_it_was(page: Any) -> None:
    assert "Bob" not in shown(page)
    page.fill("#slider", "8")  # the update of Python: Bob was still alive
    page.wait_for_function("[...document.querySelectorAll('#shown-list li > button')]"
                           ".some(b => b.textContent === 'Bob')")
    assert "position 8" in page.text_content("#moment")
    assert page.evaluate("cy.edges().length") == 3
    page.fill("#slider", "0")
    page.wait_for_function("document.getElementById('status').textContent.includes('Before the first event')")
    assert shown(page) == []


def test_comparing_two_moments_lists_what_was_created_changed_and_deleted(page: Any) -> None:
    page.fill("#slider", "4")
    page.check("#diffmode")
    page.fill("#slider2", "11")  # the call that deleted Bob (and his relations) ends at 12
    page.wait_for_function("document.getElementById('moment2').textContent === 'position 11'")
    page.fill("#slider2", "12")
    page.wait_for_function("document.getElementById('diff').textContent.includes('deleted entity Bob')")
    changes = page.text_content("#diff")
    assert "deleted entity Bob" in changes and "changed entity Python" in changes
    assert "created relation Ada Lovelace -[programmed]-> Analytical Engine" in changes


def test_a_deleted_entity_s_page_shows_its_history(page: Any) -> None:
    page.fill("#slider", "8")
    page.wait_for_function("[...document.querySelectorAll('#shown-list li > button')]"
                           ".some(b => b.textContent === 'Bob')")
    page.click("#tab-shown")
    page.click("#shown-list button:text('Bob')")
    page.wait_for_selector("#entity .badge")
    text = page.text_content("#entity")
    assert "deleted" in text and "entity_deleted" in text and "+ likes tea" in text


def test_the_audit_feed_shows_a_write_made_while_the_page_is_open(page: Any, explorer: tuple[Path, str]) -> None:
    page.click("#tab-audit")
    assert "entity_deleted" in page.text_content("#feed")
    with Memory(explorer[0]) as memory:  # another process writes, as an agent would
        memory.write("create_entities", {"entities": [{"name": "Grace Hopper", "entityType": "person",
                                                       "observations": ["COBOL"]}]}, actor="claude-code")
    page.wait_for_selector("#feed li.new", timeout=20_000)
    assert "Grace Hopper" in page.text_content("#feed li.new")
    page.fill("#audit-filters input[name=actor]", "claude-code")
    page.click("#audit-filters button")
    page.wait_for_function("document.querySelectorAll('#feed li').length === 1")


def test_an_actor_with_spaces_is_found_by_the_feed_s_filter(page: Any, explorer: tuple[Path, str]) -> None:
    with Memory(explorer[0]) as memory:  # forget's own actor is "chronograph forget"
        memory.write("create_entities", {"entities": [{"name": "Grace Hopper", "entityType": "person",
                                                       "observations": []}]}, actor="night shift/s 1")
    page.click("#tab-audit")
    page.fill("#audit-filters input[name=actor]", " night shift/s 1 ")
    page.click("#audit-filters button")
    page.wait_for_function("document.querySelectorAll('#feed li').length === 1")
    assert "Grace Hopper" in page.text_content("#feed")
    page.fill("#audit-filters input[name=actor]", "")
    page.fill("#audit-filters input[name=session]", "s 1")
    page.click("#audit-filters button")
    page.wait_for_function("document.querySelectorAll('#feed li').length === 1")


def test_an_entity_whose_name_holds_a_line_break_stays_in_view_as_time_moves(page: Any,
                                                                               explorer: tuple[Path, str]) -> None:
    with Memory(explorer[0]) as memory:
        memory.write("create_entities", {"entities": [{"name": "Lone\nWolf", "entityType": "animal",
                                                       "observations": ["howls"]}]}, actor="t")
        head = memory.log.head()
        memory.write("add_observations", {"observations": [{"entityName": "Lone\nWolf", "contents": ["later"]}]},
                     actor="t")
    page.reload()
    page.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
    wolf = "cy.nodes().some(n => n.id() === 'Lone\\nWolf')"
    page.wait_for_function(wolf)
    page.fill("#slider", str(head))  # the view's names are asked for at that moment, each whole
    page.wait_for_function(f"document.getElementById('moment').textContent.includes('position {head} ')")
    page.wait_for_function(f"window.chronograph.lastSlide !== undefined && {wolf}")
    page.evaluate("name => showEntity(name)", "Lone\nWolf")
    page.wait_for_function("document.getElementById('entity').textContent.includes('What it says at position')")
    assert "howls" in page.text_content("#entity")


def test_the_feed_follows_from_the_end_of_the_log_whatever_its_filter_last_matched(page: Any) -> None:
    """It followed from its newest match: a filter that matched only old events (or a session
    whose events are all old) read everything after them again at every poll."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url) if "after=" in request.url else None)
    page.click("#tab-audit")
    page.fill("#audit-filters input[name=types]", "entity_created")  # the first four events
    page.click("#audit-filters button")
    page.wait_for_function("document.querySelectorAll('#feed li').length === 4")
    page.wait_for_timeout(4_000)  # two follows, at least
    afters = {url.split("after=", 1)[1].split("&", 1)[0] for url in asked if "types=" in url}
    assert afters == {"12"}  # the log's end when the feed was loaded (12 events)


def test_a_follow_of_the_feed_that_answers_after_its_first_load_shows_nothing_twice(
        browser: Any, explorer: tuple[Path, str]) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 760})
    page = context.new_page()
    loads: list[Any] = []
    follows: list[Any] = []
    held = [True]

    def hold(route: Any) -> None:
        if not held[0]:
            route.continue_()
        else:
            (follows if "after=" in route.request.url else loads).append(route)

    page.route("**/api/audit?*", hold)
    page.goto(explorer[1] + "/ui/")
    page.wait_for_timeout(3_500)  # a slow first load of the feed: the follow's timer ticks twice meanwhile
    held[0] = False
    for route in loads:
        route.continue_()
    page.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
    for route in follows:  # a follow sent before the load, answered after it (the CI run that found it)
        route.continue_()
    page.wait_for_timeout(2_000)  # what they answered, shown; the next tick's too
    positions = page.eval_on_selector_all("#feed li", "items => items.map(li => li.dataset.position)")
    context.close()
    assert positions and len(positions) == len(set(positions))
    assert "12" in positions  # Bob's deletion, shown once and not as new


def test_every_control_has_a_name_and_the_keyboard_reaches_them(page: Any) -> None:
    unnamed = page.evaluate("""() => [...document.querySelectorAll('input, select, button')].filter(e => {
        const label = e.labels && e.labels.length ? e.labels[0].textContent.trim() : '';
        return !(label || e.getAttribute('aria-label') || e.textContent.trim());
    }).map(e => e.outerHTML)""")
    assert unnamed == []
    reached = set()
    for _ in range(12):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("document.activeElement.id || document.activeElement.textContent"))
    assert {"workspace", "q", "top"} <= reached


def test_a_server_that_went_away_is_said_so(browser: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    seed(store)
    process, base = serve(store)
    context = browser.new_context()
    opened = context.new_page()
    try:
        opened.goto(base + "/ui/")
        opened.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
        stop(process)
        opened.click("#top")
        opened.wait_for_selector("#problem:not([hidden])")
        assert "cannot be reached" in opened.text_content("#problem")
    finally:
        context.close()
        if process.poll() is None:
            stop(process)


def test_with_a_token_the_page_opens_only_through_its_link(browser: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    seed(store)
    process, base = serve(store, env={"CHRONOGRAPH_TOKEN": "s3cret"})
    context = browser.new_context()
    opened = context.new_page()
    try:
        assert opened.goto(base + "/ui/").status == 401
        assert request(base + "/ui/api/overview")[0] == 401
        opened.goto(base + "/ui/?token=s3cret")
        opened.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
        assert "token" not in opened.url  # it left the address bar for a cookie
        assert request(base + "/ui/api/overview", headers={"Origin": "http://evil.example"})[0] == 403
    finally:
        context.close()
        stop(process)


def test_a_store_that_does_not_exist_is_one_clear_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "chronograph", "ui", "--store", str(tmp_path / "none")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "there is no store" in done.stderr


def test_a_valid_time_shows_which_observations_were_true_then(browser: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    with Memory(store, sync=False) as memory:
        memory.write("create_entities", {"entities": [{"name": "Alice", "entityType": "person", "observations": []}]},
                     actor="t")
        memory.write("add_observations", {"observations": [
            {"entityName": "Alice", "contents": ["works at Acme"], "validFrom": "2019-01-01T00:00:00Z",
             "validUntil": "2023-01-01T00:00:00Z"}]}, actor="t")
    process, base = serve(store)
    context = browser.new_context()
    opened = context.new_page()
    try:
        opened.goto(base + "/ui/")
        opened.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
        opened.fill("#validAt", "2020-06-01")
        opened.click("#tab-shown")
        opened.click("#shown-list button:text('Alice')")
        opened.wait_for_selector("#entity ul li")
        assert "not true then" not in opened.text_content("#entity")
        opened.fill("#validAt", "2024-06-01")
        opened.click("#tab-shown")
        opened.click("#shown-list button:text('Alice')")
        opened.wait_for_selector("#entity li.invalid")
        assert "works at Acme (not true then)" in opened.text_content("#entity")
    finally:
        context.close()
        stop(process)


def test_serve_over_http_offers_the_same_page_under_ui(tmp_path: Path) -> None:
    from support.http import start

    store = tmp_path / "store"
    seed(store)
    started = start(tmp_path, None)
    base = next(started)
    try:
        assert request(base + "/ui/api/overview")[1]["entities"] == 3
        status, body = request(base + "/ui/api/graph?asOf=banana")
        assert status == 400 and body["code"] == "invalid"
        for query in ("graph?limit=%C2%B2", "audit?after=%C2%B2", "audit?limit=%C2%B2", "graph?asOf=%C2%B2"):
            status, body = request(base + "/ui/api/" + query)  # "²": a digit to str.isdigit, not to int()
            assert status == 400 and "invalid literal" not in body["error"], (query, body)
        assert request(base + "/ui/api/entity?name=Nobody")[0] == 404
    finally:
        next(started, None)
