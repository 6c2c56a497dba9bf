"""The speed and budget-use benchmark (``python benchmarks/run.py``).

- :mod:`benchmarks.harness.histories` generates seeded agent histories;
- :mod:`benchmarks.harness.measure` measures memrules against a plain tiktoken
  loop and LangChain's ``trim_messages`` (when ``langchain-core``, the
  ``bench`` extra, is installed; imported only when a run asks for it);
- :mod:`benchmarks.harness.reference` counts OpenAI's framing on the JSON,
  independently of memrules' count rules, to judge the windows (the tests
  use it as their oracle too);
- :mod:`benchmarks.harness.render` turns the figures into tables;
- :mod:`benchmarks.harness.targets` judges them against the targets for
  speed, budget use and peak memory;
- :mod:`benchmarks.harness.command` holds the benchmark's arguments
  and :func:`~benchmarks.harness.command.run`.

The harness lives in the source tree, not in the package: the wheel does not
ship it, and nothing in ``memrules`` imports it. ``benchmarks/run.py`` puts
its checkout first on the path, so it measures the ``memrules`` beside it.
"""
