"""Finding entities: word indexes, vectors and the embedders that make them.

`wordindex` is one workspace's postings (substring, BM25, fuzzy), `indexes` the store's
set of them kept current from the log; `vectors` the embeddings of a store's entities
(needs numpy: imported when vectors are first stored or searched), `embedder` what turns text into
vectors, with `minilm` (the bundled model) and `endpoint` (an OpenAI-compatible API).
"""

from chronograph.projections.search.embedder import Embedder, entity_text, open_embedder
from chronograph.projections.search.indexes import SearchIndex
from chronograph.projections.search.terms import matches, query_terms, terms
from chronograph.projections.search.wordindex import WorkspaceIndex

__all__ = ["Embedder", "SearchIndex", "WorkspaceIndex", "entity_text", "matches", "open_embedder", "query_terms",
           "terms"]
