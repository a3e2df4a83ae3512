"""A mem0 embedder for tests (mem0's config accepts only its own providers' names: the tests
register this class under "openai"), so mem0 runs here with no service: a hash of the text."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from mem0.embeddings.base import EmbeddingBase


class HashEmbedding(EmbeddingBase):
    def embed(self, text, memory_action=None):
        digest = hashlib.sha256(text.encode()).digest()
        return [byte / 255 for byte in digest[:8]]


def local_config(folder: Path, collection: str = "agent") -> dict[str, Any]:
    """mem0's config for a memory kept in ``folder`` (a local Qdrant collection and its history
    database), its embedder this module's (registered under "openai" by the caller), no LLM call."""
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": str(folder / "qdrant"), "collection_name": collection, "embedding_model_dims": 8},
        },
        "embedder": {"provider": "openai", "config": {"api_key": "unused"}},
        "llm": {"provider": "openai", "config": {"api_key": "unused"}},
        "history_db_path": str(folder / "history.db"),
    }
