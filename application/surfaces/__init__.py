"""Other memory servers' surfaces: their tools, names and shapes, translated to ours.

`n2n` (with `projectroot`, how n2n finds a project), `workspace` and `kuzu`, each a
registry of tools over the same commands and events (`from_n2n` reads an n2n project folder
for `chronograph import`). It imports nothing of `team`.
"""

from chronograph.application.surfaces import (
    from_n2n,  # noqa: F401 (registers n2n's project folder as a source)
    n2nmarkdown,  # noqa: F401 (registers n2n_export_markdown, n2n's last tool)
)
from chronograph.application.surfaces.kuzu import KUZU, KUZU_TOOLS
from chronograph.application.surfaces.n2n import N2N, N2N_TOOLS
from chronograph.application.surfaces.workspace import WORKSPACE, WORKSPACE_TOOLS

__all__ = ["KUZU", "KUZU_TOOLS", "N2N", "N2N_TOOLS", "WORKSPACE", "WORKSPACE_TOOLS"]
