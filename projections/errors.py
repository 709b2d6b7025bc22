"""Errors raised by the projections: one base class, one line of meaning each."""

from __future__ import annotations


class ProjectionError(Exception):
    """Base class of every error the projections raise."""


class ViewsUnavailableError(ProjectionError):
    """The views cannot serve reads (missing in a read-only store, or behind the log)."""


class RebuildError(ProjectionError):
    """A rebuild could not complete; the views in use were left as they were."""


class ViewsDamagedError(ProjectionError):
    """An index of the views points at a record that is not there; a rebuild repairs it."""


class EmbeddingsUnavailableError(ProjectionError):
    """Texts cannot be embedded: the semantic extra is missing, the model is damaged or the
    embeddings endpoint does not answer. The other kinds of search are unaffected."""
