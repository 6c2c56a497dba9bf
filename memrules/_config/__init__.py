"""Config: YAML read, validated and turned into values; opens nothing.

- :mod:`~memrules._config.keys`: what each key accepts, the sections, the constants.
- :mod:`~memrules._config.config`: :class:`MemoryConfig`, the value.
- :mod:`~memrules._config.strategies`: building the ``strategies:`` list.
- :mod:`~memrules._config.load`: reading a file or YAML text (:func:`load_config`).
"""
