"""The speed and budget-use benchmark (``memrules bench``, ``benchmarks/run.py``).

:mod:`memrules._bench.histories` generates seeded agent histories;
:mod:`memrules._bench.run` measures memrules against a plain tiktoken loop and
LangChain's ``trim_messages`` (when ``langchain-core`` is installed: the
``bench`` extra) and prints one table.
"""

from __future__ import annotations

from memrules._bench.run import main

__all__ = ["main"]
