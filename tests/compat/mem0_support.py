"""A mem0 embedder for tests (mem0's config accepts only its own providers' names: the tests
register this class under "openai"), so mem0 runs here with no service: a hash of the text."""

from __future__ import annotations

import hashlib

from mem0.embeddings.base import EmbeddingBase


class HashEmbedding(EmbeddingBase):
    def embed(self, text, memory_action=None):
        digest = hashlib.sha256(text.encode()).digest()
        return [byte / 255 for byte in digest[:8]]
