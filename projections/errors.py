"""Errors raised by the projections: one base class, one line of meaning each."""

from __future__ import annotations


class ProjectionError(Exception):
    """Base class of every error the projections raise."""


class ViewsUnavailableError(ProjectionError):
    """The views cannot serve reads (missing in a read-only store, or behind the log)."""


class RebuildError(ProjectionError):
    """A rebuild could not complete; the views in use were left as they were."""


class ViewsDamagedError(ProjectionError):
    """A value of the views fails its checksum, or an index points at a record that is not
    there; a rebuild from the log repairs it. The message names the store once it is known."""

    def __init__(self, detail: str, store: str | None = None) -> None:
        self.detail = detail
        self.store = store
        where = f"the views of the store at {store}" if store else "the views"
        fix = f"chronograph replay --rebuild --store {store}" if store else "chronograph replay --rebuild"
        super().__init__(f"{where} are damaged ({detail}); rebuild them from the log: `{fix}`")

    def at(self, store: str) -> ViewsDamagedError:
        """The same damage, naming `store`."""
        return self if self.store is not None else ViewsDamagedError(self.detail, store)


class EmbeddingsUnavailableError(ProjectionError):
    """Texts cannot be embedded: the semantic extra is missing, the model is damaged or the
    embeddings endpoint does not answer. The other kinds of search are unaffected."""


class TermWeightsUnavailableError(EmbeddingsUnavailableError):
    """The term weighting model cannot run (a file is missing or damaged): search by meaning
    goes on with the embeddings alone."""
