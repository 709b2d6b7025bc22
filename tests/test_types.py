"""The type checker finds nothing wrong with the package (mypy, configured in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def package_tree(into: Path) -> Path:
    """The installed layout (`chronograph/<layer>/...`) as symbolic links into the checkout.

    setuptools maps the top-level folders onto `chronograph.*` (package-dir); mypy finds
    modules by their place on disk, so it is shown the layout the package installs as.
    """
    mapping = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    root = into / "chronograph"
    root.mkdir(parents=True)
    for item in (ROOT / mapping["chronograph"]).iterdir():
        (root / item.name).symlink_to(item)
    for package, folder in mapping.items():
        if package != "chronograph":
            (into / package.replace(".", "/")).symlink_to(ROOT / folder, target_is_directory=True)
    return into


def test_mypy_finds_no_errors_in_the_package() -> None:
    pytest.importorskip("mypy")
    layout = ROOT / ".mypy_cache" / "layout"  # one place, so that mypy's cache stays valid between runs
    shutil.rmtree(layout, ignore_errors=True)
    tree = package_tree(layout)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
         "--cache-dir", str(ROOT / ".mypy_cache"), "-p", "chronograph"],
        cwd=ROOT, capture_output=True, text=True, env={"MYPYPATH": str(tree), "PATH": ""},
    )
    report = done.stdout.replace(str(tree / "chronograph") + "/", "")
    assert done.returncode == 0, report
