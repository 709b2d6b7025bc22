"""The files of a bundled model: checked against their published digest before they are used."""

from __future__ import annotations

import hashlib
from pathlib import Path

from chronograph.projections.errors import EmbeddingsUnavailableError

__all__ = ["check_sha256"]


def check_sha256(path: Path, sha256: str, what: str, reinstall: str) -> None:
    """Refuse `path` (the file of `what`) unless its sha256 is `sha256`.

    Raises:
        EmbeddingsUnavailableError: If it cannot be read or is damaged, saying `reinstall`.
    """
    try:
        with path.open("rb") as file:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
    except OSError as error:
        raise EmbeddingsUnavailableError(
            f"{what}'s file {path} cannot be read ({error.strerror}). Reinstall it: {reinstall}") from None
    if digest != sha256:
        raise EmbeddingsUnavailableError(
            f"{what}'s file {path} is damaged (its sha256 is not the published one). Reinstall it: {reinstall}")
