"""The seams: where compaction reaches outside the pure core.

A seam is a Protocol. Strategies find seams in their context and do nothing
when the one they need is absent. The concrete seams:

- summarizers: `extractive_summarizer` (deterministic, no model, the
  offline default) and `openai_summarizer` (any OpenAI-compatible chat
  endpoint: llama.cpp, vLLM, Ollama, OpenAI);
- embedders: `local_embedder` (all-MiniLM-L6-v2 as an int8 ONNX file,
  on the CPU, offline; the ``local-embed`` extra) and `openai_embedder`
  (any ``/v1/embeddings`` endpoint);
- vector stores: `milvus_store` (a Milvus Lite file, or a Milvus
  server by URI; the ``milvus`` extra) and `qdrant_store` (Qdrant's
  local mode in memory or on disk, or a server by URL; the ``qdrant`` extra)
  and `valkey_store` (a Valkey or Redis server with its Search
  module's vector fields; the ``valkey`` extra);
- `recall_tool` and `answer_recall`: a tool the model can call
  to fetch what was offloaded, and its answer.

Importing this module imports none of the backends: each name below is
imported from its module on first access (PEP 562), so ``import memrules``
loads no HTTP client and no store or model package. A seam imports its
optional package when it is first used, and says which extra to install when
it is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memrules._core.public_names import report_public_module

if TYPE_CHECKING:
    from memrules._core.seam_protocols import (
        SEARCH_MODES,
        Embedder,
        JSONRequests,
        SeamCall,
        Seams,
        Summarizer,
        VectorStore,
    )
    from memrules._core.seam_records import RecallHit, Scope, StoredMessage, StoreWrite
    from memrules.seams._store import MessageStore
    from memrules.seams.embedders import local_embedder, openai_embedder
    from memrules.seams.milvus import milvus_store
    from memrules.seams.qdrant import qdrant_store
    from memrules.seams.recall import answer_recall, recall_tool
    from memrules.seams.summarizers import extractive_summarizer, openai_summarizer
    from memrules.seams.valkey import valkey_store

__all__ = [
    "SEARCH_MODES",
    "Embedder",
    "JSONRequests",
    "MessageStore",
    "RecallHit",
    "Scope",
    "SeamCall",
    "Seams",
    "StoreWrite",
    "StoredMessage",
    "Summarizer",
    "VectorStore",
    "answer_recall",
    "extractive_summarizer",
    "local_embedder",
    "milvus_store",
    "openai_embedder",
    "openai_summarizer",
    "qdrant_store",
    "recall_tool",
    "valkey_store",
]

# public name -> the module that defines it (imported on first access)
_WHERE: dict[str, str] = {
    **dict.fromkeys(
        (
            "SEARCH_MODES",
            "Embedder",
            "JSONRequests",
            "SeamCall",
            "Seams",
            "Summarizer",
            "VectorStore",
        ),
        "memrules._core.seam_protocols",
    ),
    **dict.fromkeys(
        ("StoredMessage", "RecallHit", "Scope", "StoreWrite"), "memrules._core.seam_records"
    ),
    "MessageStore": "memrules.seams._store",
    "local_embedder": "memrules.seams.embedders",
    "openai_embedder": "memrules.seams.embedders",
    "milvus_store": "memrules.seams.milvus",
    "qdrant_store": "memrules.seams.qdrant",
    "answer_recall": "memrules.seams.recall",
    "recall_tool": "memrules.seams.recall",
    "extractive_summarizer": "memrules.seams.summarizers",
    "openai_summarizer": "memrules.seams.summarizers",
    "valkey_store": "memrules.seams.valkey",
}


if not TYPE_CHECKING:  # type checkers see the imports above, and no name as Any

    def __getattr__(name: str) -> Any:
        """A public name, imported from its module the first time it is asked for."""
        module = _WHERE.get(name)
        if module is None:
            msg = f"module {__name__!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(module), name)
        report_public_module(__name__, (name,), {name: value})
        globals()[name] = value  # the next access finds it without this hook
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
