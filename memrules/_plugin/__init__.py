"""The request hook, and the owner of what is live: the plugin opens the
stores and clients a config describes and closes them.

- :mod:`~memrules._plugin.request`: :class:`Request` and :class:`StepResult`, values.
- :mod:`~memrules._plugin.step`: the pure step, in named stages.
- :mod:`~memrules._plugin.plugin`: :class:`MemoryPlugin`, the stateful shell
  (conversation state, memory, trace; ``with ... as plugin:`` / ``close``).
- :mod:`~memrules._plugin.conversation_caches`: each conversation's memos.
"""
