"""The wheel: one top-level name, `chronograph`, and nothing of the benchmarks or the tests."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.wire  # builds a wheel in a subprocess


def test_the_wheel_holds_only_the_chronograph_package(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    [wheel] = tmp_path.glob("chronograph-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"chronograph", wheel.name.split("-py")[0] + ".dist-info"}
    packages = {"/".join(name.split("/")[:2]) for name in names if name.startswith("chronograph/")}
    assert packages == {
        "chronograph/__init__.py", "chronograph/__main__.py", "chronograph/py.typed", "chronograph/eventstore",
        "chronograph/projections", "chronograph/application", "chronograph/server", "chronograph/tools",
    }
