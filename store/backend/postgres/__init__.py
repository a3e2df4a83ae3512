"""The PostgreSQL backend (:class:`.backend.PostgresBackend`), from its parts: the schema and its
migrations (:mod:`.ddl`), one LIST partition per tenant (:mod:`.partitions`), the erasure
sequence that leaves no erased byte in the data directory (:mod:`.scrub`), connections that
never let one tenant's maintenance stall another (:mod:`.engine`), the advisory locks that let
different tenants' writers run together (:mod:`.locks`), BM25 keyword search
(:mod:`.keyword`), exact and approximate vector search (:mod:`.vectors`), change detection by
LISTEN/NOTIFY (:mod:`.changes`), typed errors (:mod:`.errors`) and the dialect's statements
(:mod:`.sql`). Needs the ``postgres`` extra (psycopg, pgvector) and a server with the pgvector
extension available."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .sql import SQL

if TYPE_CHECKING:  # loaded on open
    from .backend import PostgresBackend


def open_backend(path_or_url: str | Path, *, read_only: bool, create: bool, vector_dim: int | None = None) -> PostgresBackend:
    from .backend import PostgresBackend

    return PostgresBackend(path_or_url, read_only=read_only, create=create, vector_dim=vector_dim)


__all__ = ["SQL", "open_backend"]
