"""The demo's vectors, kept between builds, so `memlens demo` embeds its ~630 texts once per
model instead of on every run.

Embedding is nearly all of a build: profiled here (2 cores, load 2-5), 15.3 s of an 18.0 s build
was onnxruntime encoding those texts, 0.6 s loading the model, about 2 s the inserts and the
rest. The demo writes the same texts on every run, so the second build onwards looks them up.

Keyed by what the model does, not by what it is called: the file's name carries the embedder's
name, its dimension and a digest of its vector for a fixed probe sentence (rounded, so float noise
between runs does not matter), so another model, or another version of it under the same name,
never gets these vectors. Within the file, vectors are looked up by the SHA-256 of their text.
A file that cannot be read as such (damaged, hostile, another shape) is ignored and replaced:
the cost is one build at the uncached speed, never a wrong vector.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .embedding import Embedder

PROBE = "memlens demo vectors: the probe sentence that identifies a model by what it computes"

# The full demo's vectors for the default model, shipped in the package (about 1 MB) so the very
# first `memlens demo` after installing looks them up too: embedding them was 22-26 s of a first
# build at load 2-6 here, against 4-5 s for a build that finds them. Used only when the installed
# model's identity (name, width, probe digest) is the one they were made with; written by
# `python -m store.demo_vectors` after a full build with the default model.
SHIPPED = Path(__file__).with_name("demo_data") / "vectors"


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class ReusedVectors:
    """An embedder that answers from the vectors a previous demo build kept, and asks the
    wrapped one (``inner``) only for texts it has not seen. ``save()`` keeps what it learnt."""

    def __init__(self, inner: Embedder, folder: str | Path):
        self.inner = inner
        self.name = inner.name
        self.folder = Path(folder)
        self.embedded = 0  # texts the wrapped model had to embed in this build
        self._known: dict[bytes, Any] | None = None
        self._added = False
        self._path: Path | None = None

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def is_warm(self) -> bool:
        return self.inner.is_warm

    def warm(self) -> None:
        self.inner.warm()

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        known = self._load()
        keys = [text_key(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in known))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                known[text_key(text)] = np.asarray(vector, dtype=np.float32)
            self.embedded += len(missing)
            self._added = True
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([known[k] for k in keys])

    def save(self) -> None:
        """Write the vectors back (atomically: a reader sees the old file or the new one)."""
        import numpy as np

        if not self._added or self._known is None or self._path is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        # Raw digests as rows of 32 bytes: numpy's "S32" would drop a digest's trailing zero bytes.
        keys = np.frombuffer(b"".join(self._known), dtype=np.uint8).reshape(-1, 32)
        vectors = np.stack(list(self._known.values())) if self._known else np.zeros((0, self.dim), np.float32)
        handle, partial = tempfile.mkstemp(dir=self.folder, prefix=".partial-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as out:
                np.savez(out, keys=keys, vectors=vectors)
            os.replace(partial, self._path)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
        self._added = False

    def _identity(self) -> str:
        import numpy as np

        probe = np.asarray(self.inner.embed([PROBE])[0], dtype=np.float32)
        digest = hashlib.sha256(np.rint(probe * 1e4).astype(np.int32).tobytes()).hexdigest()[:16]
        return f"{re.sub(r'[^A-Za-z0-9._-]', '_', self.name)[:80]}-{self.dim}-{digest}"

    def _load(self) -> dict[bytes, Any]:
        if self._known is not None:
            return self._known

        name = f"{self._identity()}.npz"
        self._path = self.folder / name
        self._known = self._read(self._path)
        if not self._known:
            self._known = self._read(SHIPPED / name)
            self._added = bool(self._known)  # kept in the cache folder from now on
        return self._known

    def _read(self, path: Path) -> dict[bytes, Any]:
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
                if (
                    keys.dtype == np.uint8
                    and keys.ndim == 2
                    and keys.shape[1] == 32
                    and vectors.dtype == np.float32
                    and vectors.shape == (len(keys), self.dim)
                ):
                    return {k.tobytes(): v for k, v in zip(keys, vectors, strict=True)}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            pass  # none yet, or unreadable: embed, and replace it on save
        return {}


def ship_from(cache_folder: Path) -> list[Path]:
    """Copy the cache folder's vector files into the package (run after a full demo build)."""
    import shutil

    SHIPPED.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy(path, SHIPPED / path.name)) for path in sorted(Path(cache_folder).glob("*.npz"))]


if __name__ == "__main__":
    from .embedding import cache_dir

    for shipped in ship_from(cache_dir() / "demo"):
        print(shipped)
