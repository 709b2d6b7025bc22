"""Lets `python tools/<script>.py` run from a checkout in which Chronograph is not installed.

The layers live in top-level folders that install as `chronograph.*`; without an
install, the root package is loaded from `chronograph/` with the checkout as a second
place to find its subpackages.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["ensure_importable"]


def ensure_importable() -> None:
    """Make `import chronograph` work, from the checkout when it is not installed."""
    if importlib.util.find_spec("chronograph") is not None:
        return
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "chronograph", root / "chronograph" / "__init__.py",
        submodule_search_locations=[str(root / "chronograph"), str(root)],
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["chronograph"] = module
    spec.loader.exec_module(module)
