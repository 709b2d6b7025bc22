"""The team memory (the Agent Memory surface) as the log made it.

`state` is its fold (organisations, projects, sessions, entries with their versions, tags,
relations, locks, conflicts); `view` keeps it in memory per process, caught up before use.
"""

from chronograph.projections.team.state import TeamState, fold
from chronograph.projections.team.view import TeamView

__all__ = ["TeamState", "TeamView", "fold"]
