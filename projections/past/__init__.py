"""The past: time travel and version history.

`asof` folds the graph or one entity as it stood at a position or a time, from the
nearest `snapshots` image; `versions` reads every version of one stream.
"""

from chronograph.projections.past.asof import entity_as_of, fold_streams, graph_as_of, position_of, relation_as_of
from chronograph.projections.past.snapshots import Snapshots
from chronograph.projections.past.versions import Version, changes_of, stream_history, versions_of

__all__ = ["Snapshots", "Version", "changes_of", "entity_as_of", "fold_streams", "graph_as_of", "position_of",
           "relation_as_of", "stream_history", "versions_of"]
