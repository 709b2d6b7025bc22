"""The wheel: one top-level name, `chronograph`, and a fresh environment that installs it runs it."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from support.mcp import call, entity

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.wire,  # builds and installs a wheel in subprocesses
    pytest.mark.xdist_group("wheel"),  # one build (see the lock in `wheel`)
]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # One build at a time across the workers (their base folders share a parent): setuptools
    # builds in the checkout's build/, and two builds there remove each other's files.
    with open(tmp_path_factory.getbasetemp().parent / "wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shutil.which("uv"):
            subprocess.run(["uv", "build", "--wheel", "--out-dir", str(out), str(ROOT)], check=True,
                           capture_output=True)
        else:
            subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(ROOT)],
                           check=True, capture_output=True)
    [built] = out.glob("chronograph-*.whl")
    return built


def test_the_wheel_holds_only_the_chronograph_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"chronograph", wheel.name.split("-py")[0] + ".dist-info"}
    packages = {"/".join(name.split("/")[:2]) for name in names if name.startswith("chronograph/")}
    assert packages == {
        "chronograph/__init__.py", "chronograph/__main__.py", "chronograph/py.typed", "chronograph/eventstore",
        "chronograph/projections", "chronograph/application", "chronograph/server", "chronograph/tools",
    }


@pytest.mark.anyio
async def test_a_fresh_environment_installs_the_wheel_and_serves_from_it(wheel: Path, tmp_path: Path) -> None:
    environment = tmp_path / "env"
    if shutil.which("uv"):
        subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(environment)], check=True)
        subprocess.run(["uv", "pip", "install", "-q", "--python", str(environment / "bin" / "python"), str(wheel)],
                       check=True, capture_output=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(environment)], check=True)
        subprocess.run([str(environment / "bin" / "pip"), "install", "-q", str(wheel)], check=True, capture_output=True)
    command = environment / "bin" / "chronograph"
    version = subprocess.run([str(command), "--version"], check=True, capture_output=True, text=True, cwd=tmp_path)
    assert version.stdout.startswith("chronograph ")
    params = StdioServerParameters(command=str(command), args=["serve", "--store", str(tmp_path / "store")],
                                   cwd=str(tmp_path))
    async with Client(params) as client:
        created = await call(client, "create_entities", {"entities": [entity("Ada", "person", "math")]})
    assert [e["name"] for e in created["entities"]] == ["Ada"]
