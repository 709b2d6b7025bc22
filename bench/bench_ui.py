"""Benchmark the graph explorer in a real browser on a big store.

    python bench/bench_ui.py [--events 200000] [--moves 15] [--json FILE]

Fills a store with bench_history's mixed workload (200,000 events: about 50,000 entities and
as many relations), opens it once (views, search images, snapshots of the past), serves it
with `chronograph ui`, and drives Debian's Chromium through Playwright: the first paint (from
navigation to the first graph drawn, the page's own performance mark) over --loads loads,
then --moves moves of the time slider to random positions (from the slider's input to the
neighbourhood redrawn, as the page measures it), p50 and max.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_history import fill
from chronograph.application import Memory
from playwright.sync_api import sync_playwright
from report import print_table, write_json

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--moves", type=int, default=15)
    parser.add_argument("--port", type=int, default=8797)
    parser.add_argument("--json", type=Path, default=Path("bench-ui.json"))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-ui-") as base:
        store = Path(base) / "store"
        fill(store, args.events)
        with Memory(store) as memory:
            head = memory.log.head()
            entities = memory.read("get_graph_summary", {"limit": 1}).entities
            memory.prepare_search()
            for position in range(100_000, head, 100_000):  # the snapshots time travel folds from
                memory.read("read_graph", {"asOf": position, "limit": 1})
        server = subprocess.Popen([sys.executable, "-m", "chronograph", "ui", "--store", str(store), "--port",
                                   str(args.port)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                  stderr=subprocess.DEVNULL)
        base_url = f"http://127.0.0.1:{args.port}"
        try:
            for _ in range(600):
                try:
                    urllib.request.urlopen(base_url + "/health", timeout=1)
                    break
                except OSError:
                    time.sleep(0.1)
            paints, slides, rng = [], [], random.Random(5)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
                page = browser.new_page(viewport={"width": 1400, "height": 850})
                for _ in range(args.loads):
                    page.goto(base_url + "/ui/")
                    page.wait_for_function("window.chronograph && window.chronograph.ready", timeout=60_000)
                    paints.append(page.evaluate(
                        "performance.getEntriesByName('chronograph-first-graph')[0].startTime"))
                for _ in range(args.moves):
                    position = rng.randint(1, head - 1)
                    before = page.evaluate("window.chronograph.redraws.length")
                    page.fill("#slider", str(position))
                    page.wait_for_function(f"window.chronograph.redraws.length > {before}", timeout=60_000)
                    page.wait_for_function("window.chronograph.lastSlide !== undefined")
                    slides.append(page.evaluate("window.chronograph.lastSlide"))
                    page.evaluate("window.chronograph.lastSlide = undefined")
                page.screenshot(path=str(Path(base) / "ui.png"))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
    figures = {
        "events": args.events, "entities": entities,
        "first_paint_ms": {"p50": round(statistics.median(paints)), "max": round(max(paints)), "samples": paints},
        "slider_redraw_ms": {"p50": round(statistics.median(slides)), "max": round(max(slides)), "samples": slides},
    }
    print_table(f"The explorer on {entities:,} entities ({args.events:,} events), Chromium headless", [
        ("first paint (navigation to the first graph), p50 / max",
         f"{figures['first_paint_ms']['p50']} / {figures['first_paint_ms']['max']} ms", "<= 1,000 ms"),
        ("slider moved: neighbourhood redrawn, p50 / max",
         f"{figures['slider_redraw_ms']['p50']} / {figures['slider_redraw_ms']['max']} ms", "<= 300 ms"),
    ])
    write_json(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
