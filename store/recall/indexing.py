"""Embedding what the store holds: batched, deduplicated by content hash within the tenant,
computed outside write transactions, and stamped with the model that made them."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from sqlalchemy import Connection, select

from ..backend import Backend, sql
from ..embedding import Embedder, LocalModelEmbedder
from ..errors import InvalidInputError, ModelMismatchError, ModelNotAvailableError
from ..schema import meta_t, vectors_t
from ..tenancy import Tenant
from .saved_index import SavedIndexes
from .vectors import VectorCache

EMBED_BATCH = 64
# Query vectors kept by text: the inspector's compare mode searches one query three ways, and a
# query typed again (or its prefix revisited with backspace) costs a model call of 4-17 ms here.
QUERY_VECTORS_KEPT = 256


def make_embedder(spec: Any) -> Embedder | None:
    """``"default"`` (the packaged all-MiniLM-L6-v2), None (keyword recall only), a model
    directory path, or any object with the :class:`~store.embedding.Embedder` methods."""
    if spec is None:
        return None
    if isinstance(spec, str) and spec == "default":
        return LocalModelEmbedder()
    if isinstance(spec, (str, Path)):
        return LocalModelEmbedder(spec)
    if all(hasattr(spec, attr) for attr in ("name", "embed", "dim")):
        return cast(Embedder, spec)
    raise InvalidInputError("embedder must be 'default', None, a model directory, or an Embedder")


def recorded_model(conn: Connection) -> tuple[str | None, int | None]:
    rows = dict(conn.execute(select(meta_t.c.key, meta_t.c.value).where(meta_t.c.key.in_(["embedding_model", "embedding_dim"]))).all())
    dim = rows.get("embedding_dim")
    return rows.get("embedding_model"), int(dim) if dim else None


def record_model(conn: Connection, embedder: Embedder) -> None:
    for key, value in (("embedding_model", embedder.name), ("embedding_dim", str(embedder.dim))):
        sql(conn).upsert(conn, meta_t, {"key": key, "value": value}, ["key"], {"value": value})


def check_model(conn: Connection, embedder: Embedder | None, path: Path | str) -> None:
    name, _ = recorded_model(conn)
    if embedder is not None and name is not None and name != embedder.name:
        raise ModelMismatchError(
            f"{path} holds vectors made with {name!r}, not {embedder.name!r}; open it with that model, "
            f"or re-embed everything with `memlens reembed {path}`"
        )


class Indexer:
    """The store's embedder plus its in-memory vector matrices, over one backend.

    ``erasures(conn)`` reads the store's erasure counter and ``erased(conn, after)`` lists the
    erasures recorded since (see :class:`~store.recall.vectors.VectorCache`); when the counter
    moves the cache drops the erased tenants' vectors, or everything without ``erased``."""

    def __init__(
        self,
        embedder: Embedder | None,
        backend: Backend,
        erasures: Callable[[Connection], int],
        erased: Callable[[Connection, int], list[tuple[int, str]]] | None = None,
    ):
        self.embedder = embedder
        self.backend = backend
        folder = backend.index_folder
        saved = None if folder is None else SavedIndexes(folder, writable=not backend.read_only)
        self.cache = VectorCache(backend.data_version, erasures, erased, saved, backend.read)
        self._queries: OrderedDict[tuple[int, str], np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    def known_query(self, text: str) -> np.ndarray | None:
        """The vector :meth:`encode_query` made for exactly this text with this model, if kept."""
        with self._queries_lock:
            vector = self._queries.get((id(self.embedder), text))
            if vector is not None:
                self._queries.move_to_end((id(self.embedder), text))
            return vector

    def encode_query(self, text: str) -> np.ndarray:
        """The query's vector from the model, kept for the same text (only the same text: a
        vector is never reused for another string, however close)."""
        vector = self.known_query(text)
        if vector is not None:
            return vector
        embedder = self.model
        vector = np.asarray(embedder.embed([text])[0])
        vector.setflags(write=False)  # shared between searches: nobody may change it
        with self._queries_lock:
            self._queries[(id(embedder), text)] = vector
            while len(self._queries) > QUERY_VECTORS_KEPT:
                self._queries.popitem(last=False)
        return vector

    def forget_queries(self) -> None:
        """Drop the kept query vectors: the next search of any text encodes it again."""
        with self._queries_lock:
            self._queries.clear()

    @property
    def enabled(self) -> bool:
        return self.embedder is not None

    @property
    def model(self) -> Embedder:
        """The embedder, on the paths that run only with one (their callers check :attr:`enabled`)."""
        if self.embedder is None:
            raise ModelNotAvailableError("this store was opened without an embedding model (embedder=None): keyword recall only")
        return self.embedder

    def embed(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> list[bytes]:
        """float32 bytes per text, in order, computed in batches."""
        out: list[bytes] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = self.model.embed(list(texts[start : start + EMBED_BATCH]))
            out.extend(row.tobytes() for row in batch)
            if progress:
                progress(len(batch))
        return out

    def vectors_for(self, conn: Connection, tenant: Tenant, kind: str, texts: Sequence[str], hashes: Sequence[str]) -> list[bytes]:
        """Vectors for ``texts``, reusing any this tenant already has for the same content."""
        known = self.known_vectors(conn, tenant, kind, set(hashes))
        missing = list(dict.fromkeys(h for h in hashes if h not in known))
        if missing:
            first_text = {h: t for t, h in zip(reversed(texts), reversed(hashes), strict=True)}
            known.update(zip(missing, self.embed([first_text[h] for h in missing]), strict=True))
        return [known[h] for h in hashes]

    @staticmethod
    def known_vectors(conn: Connection, tenant: Tenant, kind: str, hashes: set[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        wanted = list(hashes)
        for start in range(0, len(wanted), 500):
            stmt = tenant.select(vectors_t, vectors_t.c.content_hash, vectors_t.c.vector).where(
                vectors_t.c.kind == kind, vectors_t.c.content_hash.in_(wanted[start : start + 500])
            )
            found.update(conn.execute(stmt).all())
        return found

    @staticmethod
    def insert(conn: Connection, tenant: Tenant, kind: str, pks: Sequence[int], hashes: Sequence[str], vectors: Sequence[bytes]) -> None:
        rows = [
            tenant.stamp({"kind": kind, "item_pk": pk, "content_hash": h, "vector": v})
            for pk, h, v in zip(pks, hashes, vectors, strict=True)
        ]
        sql(conn).replace_renewing_versions(conn, vectors_t, rows)

    def prepare(self, tenant: Tenant, kind: str, texts: list[str], hashes: list[str]) -> list[bytes] | None:
        """Embeddings for new rows, computed before the write transaction so it stays short."""
        if not self.enabled or self.backend.read_only:
            return None
        with self.backend.read() as conn:
            return self.vectors_for(conn, tenant, kind, texts, hashes)

    def save(
        self, conn: Connection, tenant: Tenant, kind: str, pks: Sequence[int], hashes: Sequence[str], vectors: list[bytes] | None
    ) -> None:
        """Store what :meth:`prepare` made, inside the caller's write transaction."""
        if vectors is None:
            return
        if recorded_model(conn)[0] is None:
            # Writers of other tenants may be here at once: the first to record its model wins,
            # and a second of another model is refused rather than mixing vectors of two.
            sql(conn).serialise(conn, "embedding_model")
            recorded = recorded_model(conn)[0]
            if recorded is None:
                record_model(conn, self.model)
            elif recorded != self.model.name:
                raise ModelMismatchError(
                    f"{self.backend.path} now holds vectors made with {recorded!r}, not {self.model.name!r} "
                    "(another process recorded its model first); nothing was written: reopen with that model"
                )
        self.insert(conn, tenant, kind, pks, hashes, vectors)
