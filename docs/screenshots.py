"""The explorer's pictures in the README (docs/explorer-*.png), taken from a realistic example store.

    uv run --locked --group test python docs/screenshots.py [--out docs] [--widths 1280]

Builds an example memory: a history-of-computing reading group's notes, about fifty entities
of eight types (people, machines, languages, papers, concepts, organisations, places,
software) and seventy relations, written over four weeks by three agents, with the things
a memory lives through: observations added, a type corrected, a duplicate merged, a rename,
an entity deleted by mistake and restored. It serves the store with `chronograph ui` and
photographs the page in Debian's Chromium (headless, through Playwright; Playwright's own
browser download is not needed): the graph now, an entity's versions, the graph as it was,
and the audit feed. At a width other than 1280 the pictures are named with it
(explorer-graph-800.png), to check the layout at that width.

Not collected by pytest (the tests write only under temporary folders): run it when the page
changes on purpose, look at the pictures, and commit them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chronograph.application import Memory
from freezegun import freeze_time
from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
STORE = Path(tempfile.gettempdir()) / "chronograph-example" / "memory"
"""Where the example store is built (a readable path: the page shows it in its header)."""
SEEDED_RANDOM = """(() => {  // the layout's randomness, seeded: the same store gives the same picture
  let seed = 20261125;
  Math.random = () => {
    seed = (seed + 0x6D2B79F5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})();"""

E = tuple[str, str, list[str]]
WEEK_1: list[E] = [
    ("Ada Lovelace", "person", ["wrote the first published program", "translated Menabrea's paper on the engine"]),
    ("Charles Babbage", "person", ["Lucasian Professor of Mathematics at Cambridge"]),
    ("Analytical Engine", "project", ["a general-purpose mechanical computer, never built"]),
    ("Difference Engine", "machine", ["computes polynomial tables by finite differences"]),
    ("Notes on the Analytical Engine", "paper", ["published 1843", "Note G holds the Bernoulli program"]),
    ("Bernoulli numbers", "concept", ["what Note G computes"]),
    ("London", "place", []),
    ("Analytical Society", "organisation", ["founded 1812 at Cambridge"]),
    ("Cambridge", "place", []),
]
WEEK_2: list[E] = [
    ("Alan Turing", "person", ["defined computability with an abstract machine"]),
    ("On Computable Numbers", "paper", ["published 1936"]),
    ("Turing machine", "concept", ["a tape, a head and a table of rules"]),
    ("Princeton", "place", []),
    ("Grace Hopper", "person", ["rear admiral, US Navy"]),
    ("Mark I", "machine", ["electromechanical, 1944"]),
    ("Harvard Computation Lab", "organisation", []),
    ("COBOL", "language", ["business-oriented, 1959"]),
    ("Compilers", "concept", ["translate a language into machine code"]),
    ("G. Hopper", "person", ["found a moth in the Mark II relay"]),
]
WEEK_3: list[E] = [
    ("Margaret Hamilton", "person", ["led the Apollo flight software team"]),
    ("Apollo Guidance Computer", "machine", ["flew on every Apollo mission"]),
    ("MIT Instrumentation Lab", "organisation", ["built the AGC"]),
    ("NASA", "organisation", []),
    ("Katherine Johnson", "person", ["computed trajectories for Mercury and Apollo"]),
    ("Software engineering", "concept", ["the term Hamilton used to give the work its standing"]),
    ("Priority scheduling", "concept", ["saved the Apollo 11 landing from overload alarms"]),
    ("Friendship 7", "mission", ["John Glenn's orbital flight, 1962"]),
    ("Apollo 11", "mission", ["first crewed Moon landing, 1969"]),
]
WEEK_4: list[E] = [
    ("Dennis Ritchie", "person", ["co-created Unix"]),
    ("Ken Thompson", "person", ["co-created Unix", "wrote B"]),
    ("Unix", "software", ["first written in assembly, then in C"]),
    ("C", "language", ["1972"]),
    ("Bell Labs", "organisation", []),
    ("Barbara Liskov", "person", ["Turing Award 2008"]),
    ("CLU", "language", ["introduced abstract data types and iterators"]),
    ("Abstract data types", "concept", []),
    ("Edsger Dijkstra", "person", ["shortest paths, semaphores"]),
    ("Go To Statement Considered Harmful", "paper", ["a letter to CACM, 1968"]),
    ("Structured programming", "concept", []),
    ("ALGOL 60", "language", ["block structure, BNF"]),
    ("Donald Knuth", "person", ["analysis of algorithms"]),
    ("The Art of Computer Programming", "paper", ["volume 1 in 1968"]),
    ("TeX", "software", ["typesetting, 1978"]),
    ("Stanford", "organisation", []),
]
R = tuple[str, str, str]
RELATIONS_1: list[R] = [
    ("Ada Lovelace", "wrote", "Notes on the Analytical Engine"),
    ("Notes on the Analytical Engine", "describes", "Analytical Engine"),
    ("Notes on the Analytical Engine", "computes", "Bernoulli numbers"),
    ("Charles Babbage", "designed", "Analytical Engine"),
    ("Charles Babbage", "designed", "Difference Engine"),
    ("Ada Lovelace", "worked_with", "Charles Babbage"),
    ("Ada Lovelace", "lived_in", "London"),
    ("Charles Babbage", "lived_in", "London"),
    ("Charles Babbage", "founded", "Analytical Society"),
    ("Analytical Society", "based_in", "Cambridge"),
    ("Analytical Engine", "successor_of", "Difference Engine"),
]
RELATIONS_2: list[R] = [
    ("Alan Turing", "wrote", "On Computable Numbers"),
    ("On Computable Numbers", "introduced", "Turing machine"),
    ("Alan Turing", "studied_at", "Princeton"),
    ("Alan Turing", "studied_at", "Cambridge"),
    ("Alan Turing", "read", "Notes on the Analytical Engine"),
    ("Grace Hopper", "programmed", "Mark I"),
    ("Mark I", "built_at", "Harvard Computation Lab"),
    ("Grace Hopper", "worked_at", "Harvard Computation Lab"),
    ("Grace Hopper", "pioneered", "Compilers"),
    ("COBOL", "influenced_by", "Grace Hopper"),
    ("Mark I", "inspired_by", "Analytical Engine"),
    ("G. Hopper", "debugged", "Mark I"),
]
RELATIONS_3: list[R] = [
    ("Margaret Hamilton", "led_software_for", "Apollo Guidance Computer"),
    ("Margaret Hamilton", "worked_at", "MIT Instrumentation Lab"),
    ("Apollo Guidance Computer", "built_by", "MIT Instrumentation Lab"),
    ("Apollo Guidance Computer", "flew_on", "Apollo 11"),
    ("Apollo 11", "run_by", "NASA"),
    ("Friendship 7", "run_by", "NASA"),
    ("Katherine Johnson", "worked_at", "NASA"),
    ("Katherine Johnson", "computed_for", "Friendship 7"),
    ("Katherine Johnson", "computed_for", "Apollo 11"),
    ("Margaret Hamilton", "named", "Software engineering"),
    ("Apollo Guidance Computer", "used", "Priority scheduling"),
    ("Software engineering", "builds_on", "Compilers"),
]
RELATIONS_4: list[R] = [
    ("Dennis Ritchie", "created", "C"),
    ("Dennis Ritchie", "co_created", "Unix"),
    ("Ken Thompson", "co_created", "Unix"),
    ("Unix", "written_in", "C"),
    ("Dennis Ritchie", "worked_at", "Bell Labs"),
    ("Ken Thompson", "worked_at", "Bell Labs"),
    ("C", "influenced_by", "ALGOL 60"),
    ("Barbara Liskov", "created", "CLU"),
    ("CLU", "introduced", "Abstract data types"),
    ("Barbara Liskov", "worked_at", "MIT Instrumentation Lab"),
    ("Edsger Dijkstra", "wrote", "Go To Statement Considered Harmful"),
    ("Go To Statement Considered Harmful", "argues_for", "Structured programming"),
    ("Edsger Dijkstra", "contributed_to", "ALGOL 60"),
    ("CLU", "influenced_by", "ALGOL 60"),
    ("Donald Knuth", "wrote", "The Art of Computer Programming"),
    ("Donald Knuth", "created", "TeX"),
    ("Donald Knuth", "worked_at", "Stanford"),
    ("TeX", "written_in", "C"),
    ("The Art of Computer Programming", "cites", "Notes on the Analytical Engine"),
    ("Structured programming", "builds_on", "ALGOL 60"),
    ("Abstract data types", "builds_on", "Structured programming"),
    ("Barbara Liskov", "read", "Go To Statement Considered Harmful"),
]


def build(store: Path) -> None:
    """The example memory: four weeks of notes by three agents, at fixed times."""
    with Memory(store, sync=False) as memory, freeze_time("2026-10-05T09:00:00Z") as clock:
        def write(actor: str, tool: str, **arguments: Any) -> None:
            memory.write(tool, arguments, actor=actor)
            clock.tick(17 * 60)

        def week(entities: list[E], relations: list[R], actor: str) -> None:
            for start in range(0, len(entities), 4):
                write(actor, "create_entities", entities=[
                    {"name": n, "entityType": t, "observations": o} for n, t, o in entities[start:start + 4]])
            for start in range(0, len(relations), 5):
                write(actor, "create_relations", relations=[
                    {"from": a, "relationType": k, "to": b} for a, k, b in relations[start:start + 5]])

        def observe(actor: str, name: str, *contents: str) -> None:
            write(actor, "add_observations", observations=[{"entityName": name, "contents": list(contents)}])

        week(WEEK_1, RELATIONS_1, "claude-desktop")
        observe("claude-desktop", "Ada Lovelace", "saw that the engine could compose music")
        write("claude-desktop", "update_entities", entities=[{"name": "Analytical Engine", "entityType": "machine"}])
        clock.move_to("2026-10-12T09:30:00Z")
        week(WEEK_2, RELATIONS_2, "claude-code")
        write("claude-code", "merge_entities", target="Grace Hopper", sources=["G. Hopper"])
        write("claude-code", "rename_entity", name="Mark I", newName="Harvard Mark I")
        observe("claude-code", "Alan Turing", "proposed the imitation game in 1950")
        clock.move_to("2026-10-19T10:00:00Z")
        week(WEEK_3, RELATIONS_3, "cursor")
        observe("cursor", "Katherine Johnson", "John Glenn asked for her to check the computer's numbers")
        write("cursor", "delete_entities", entityNames=["Katherine Johnson"])  # a slip
        write("claude-desktop", "revert_entity", name="Katherine Johnson", toVersion=2)  # caught and restored
        clock.move_to("2026-10-26T09:15:00Z")
        week(WEEK_4, RELATIONS_4, "claude-code")
        observe("claude-code", "Edsger Dijkstra", "Turing Award 1972")
        observe("claude-desktop", "Grace Hopper", "Navy ships carry her name")
        write("claude-code", "update_context", activeTask="reading group: week 5, the Internet",
              status="IN_PROGRESS", nextSteps=["Vint Cerf", "Radia Perlman"])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def explorer(store: Path) -> Iterator[str]:
    """`chronograph ui` on `store`, until the block ends: its base URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "chronograph", "ui", "--store", str(store), "--port", str(port)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/health", timeout=1)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("chronograph ui did not start") from None
                time.sleep(0.1)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def ready(page: Page, base: str) -> None:
    page.goto(base + "/ui/")
    page.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)


def shoot(page: Page, base: str, out: Path, suffix: str) -> list[Path]:
    """The four pictures of the README, at the page's current width."""
    taken: list[Path] = []

    def save(name: str) -> None:
        page.wait_for_timeout(150)  # let the last frame paint
        path = out / f"explorer-{name}{suffix}.png"
        page.screenshot(path=str(path))
        taken.append(path)

    ready(page, base)
    save("graph")

    page.click("#tab-shown")
    page.click("#shown-list button:text-is('Katherine Johnson')")
    page.wait_for_selector("#entity .version")
    save("entity")

    ready(page, base)
    head = page.evaluate("window.chronograph.state.head")
    middle = page.evaluate("""async () => {  // the last event of the second week
        const answer = await (await fetch('/ui/api/audit?until=2026-10-18T23:59:59Z&limit=1')).json();
        return answer.events[0].position;
    }""")
    before = page.evaluate("window.chronograph.redraws.length")
    page.fill("#slider", str(middle))
    page.wait_for_function(f"window.chronograph.redraws.length > {before}")
    page.wait_for_function(f"document.getElementById('legend').dataset.position === '{middle}'")
    assert middle < head
    save("time")

    ready(page, base)
    page.click("#tab-audit")
    page.fill("#audit-filters input[name=actor]", "claude-desktop")
    page.click("#audit-filters button[type=submit]")
    page.wait_for_function("[...document.querySelectorAll('#feed li strong')].some(s => s.textContent === "
                           "'entity_restored')")
    save("audit")
    return taken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "docs", help="where the pictures go (default: docs/)")
    parser.add_argument("--widths", default="1280", help="comma-separated page widths (default: 1280)")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    if STORE.parent.exists():
        shutil.rmtree(STORE.parent)
    STORE.parent.mkdir(parents=True)
    try:
        build(STORE)
        args.out.mkdir(parents=True, exist_ok=True)
        with explorer(STORE) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            for width in (int(w) for w in args.widths.split(",")):
                context = browser.new_context(viewport={"width": width, "height": 800 if width < 1920 else 1000})
                context.add_init_script(SEEDED_RANDOM)
                page = context.new_page()
                for path in shoot(page, base, args.out, "" if width == 1280 else f"-{width}"):
                    print(path)
                context.close()
            browser.close()
    finally:
        shutil.rmtree(STORE.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
