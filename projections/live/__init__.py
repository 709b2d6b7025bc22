"""The live views of a log: opened, kept current inline, rebuilt, verified, erased from.

`views` (`Views`) is what the core holds; `binding` the one place that knows whether
views and log share a transaction; `catchup` folds what a generation has not seen;
`rebuild` folds the whole log into the idle slot and swaps, `rebuilding` says when (also for a
cache whose log went back under it: `anchor` tells); `verify` compares the live
views with a fold of the log; `erasure` takes out of every view what forgetting removed;
`derived` tells what other versions derived; `images` keeps the search images current.
"""

from chronograph.projections.live.binding import Binding, Colocated, Remote, bind
from chronograph.projections.live.catchup import Progress, catch_up
from chronograph.projections.live.rebuild import RebuildReport, rebuild
from chronograph.projections.live.verify import verify
from chronograph.projections.live.views import Snapshot, Views

__all__ = ["Binding", "Colocated", "Progress", "RebuildReport", "Remote", "Snapshot", "Views", "bind", "catch_up",
           "rebuild", "verify"]
