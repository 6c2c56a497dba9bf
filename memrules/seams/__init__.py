"""The seams: where compaction reaches outside the pure core.

A seam is a Protocol. Strategies find seams in their context and do nothing
when the one they need is absent. The concrete seams:

- summarizers: :func:`extractive_summarizer` (deterministic, no model, the
  offline default) and :func:`openai_summarizer` (any OpenAI-compatible chat
  endpoint: llama.cpp, vLLM, Ollama, OpenAI);
- embedders: :func:`local_embedder` (all-MiniLM-L6-v2 as an int8 ONNX file,
  on the CPU, offline; the ``local-embed`` extra) and :func:`openai_embedder`
  (any ``/v1/embeddings`` endpoint);
- vector stores: :func:`milvus_store` (a Milvus Lite file, or a Milvus
  server by URI; the ``milvus`` extra) and :func:`qdrant_store` (Qdrant's
  local mode in memory or on disk, or a server by URL; the ``qdrant`` extra);
- :func:`recall_tool` and :func:`answer_recall`: a tool the model can call
  to fetch what was offloaded, and its answer.

Importing this module imports none of the optional packages; a seam imports
its own when it is first used, and says which extra to install when missing.
"""

from __future__ import annotations

from memrules._core.seam_protocols import (
    SEARCH_MODES,
    Embedder,
    JSONRequests,
    SeamCall,
    Seams,
    Summarizer,
    VectorStore,
)
from memrules._core.seam_records import MemoryRecord, RecallHit, Scope, StoreWrite
from memrules.seams._store import MessageStore
from memrules.seams.embedders import local_embedder, openai_embedder
from memrules.seams.milvus import milvus_store
from memrules.seams.qdrant import qdrant_store
from memrules.seams.recall import answer_recall, recall_tool
from memrules.seams.summarizers import extractive_summarizer, openai_summarizer

__all__ = [
    "SEARCH_MODES",
    "Embedder",
    "JSONRequests",
    "MemoryRecord",
    "MessageStore",
    "RecallHit",
    "Scope",
    "SeamCall",
    "Seams",
    "StoreWrite",
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
]
