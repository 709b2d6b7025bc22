"""Driving the graph explorer as a person would: `chronograph ui` in a subprocess, and Debian's
Chromium (headless, through Playwright) to look at it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.http import announced_port, request

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


def launch() -> Iterator[Any]:
    """A headless Chromium for a module's tests (skipped, or failed where CI requires it, without one)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        message = f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)"
        if os.environ.get("CHRONOGRAPH_TEST_BROWSER_REQUIRED") == "1":
            pytest.fail(message)
        pytest.skip(message)
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield launched
        launched.close()


def serve(store: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """`chronograph ui` on `store`, answering its health probe: the process and its base URL."""
    process = subprocess.Popen([sys.executable, "-m", "chronograph", "ui", "--store", str(store), "--port",
                                "0", *extra], cwd=ROOT, text=True, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    base = f"http://127.0.0.1:{announced_port(process)[0]}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if request(base + "/health", headers={"Authorization": f"Bearer {(env or {}).get('CHRONOGRAPH_TOKEN')}"}
                       )[0] == 200:
                return process, base
        except OSError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "chronograph ui did not come up"
        time.sleep(0.1)


def stop(process: subprocess.Popen[str]) -> None:
    """Stop a server `serve` started."""
    process.terminate()
    process.wait(timeout=30)
    if process.stderr is not None:
        process.stderr.close()


def opened(browser: Any, base: str, width: int = 1280, height: int = 760) -> Any:
    """A new page (in its own context) on the explorer at `base`, drawn and ready."""
    page = browser.new_context(viewport={"width": width, "height": height}).new_page()
    page.goto(base + "/ui/")
    page.wait_for_function("window.chronograph && window.chronograph.ready", timeout=30_000)
    return page
