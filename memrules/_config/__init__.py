"""Config: YAML read, validated and turned into values; opens nothing.

The pipeline's config (the core) and the service's are apart, so that a
pipeline of the core's keys imports nothing of memory, the graph or the seams
(an import-linter contract holds the first four modules to that):

- `memrules._config.keys`: what each of the pipeline's keys accepts, its sections, the constants.
- `memrules._config.pipeline_config`: `PipelineConfig`, the pipeline's value.
- `memrules._config.strategies`: building the ``strategies:`` list.
- `memrules._config.read`: reading a file or YAML text, and the pipeline's keys of it.
- `memrules._config.service_keys`: the service's sections and the whole table.
- `memrules._config.config`: `MemoryConfig`, the pipeline's fields and the service's.
- `memrules._config.load`: reading a whole file (`load_config`).
- `memrules._config.for_pipeline`: what `load_pipeline` reads (the pipeline's
  config alone when that is all a file sets).
"""
