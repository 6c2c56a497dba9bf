"""The speed and budget-use benchmark (``memrules bench``, ``benchmarks/run.py``).

- :mod:`memrules._bench.histories` generates seeded agent histories;
- :mod:`memrules._bench.measure` measures memrules against a plain tiktoken
  loop and LangChain's ``trim_messages`` (when ``langchain-core``, the
  ``bench`` extra, is installed; imported only when a run asks for it);
- :mod:`memrules._bench.reference` counts OpenAI's framing on the JSON,
  independently of memrules' count rules, to judge the windows;
- :mod:`memrules._bench.render` turns the figures into tables;
- :mod:`memrules._bench.targets` judges them against the speed issue's targets;
- :mod:`memrules._bench.command` is the ``memrules bench`` command's part of
  the command line's one parser, and :func:`~memrules._bench.command.run`.

Nothing in ``memrules`` imports this package; only the command line does.
"""
