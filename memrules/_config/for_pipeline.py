"""The config `load_pipeline` reads: the pipeline's alone when that is all a
file sets, so that a pipeline of the core's keys imports nothing of the
service (memory, the graph, the seams)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from memrules._config.pipeline_config import PipelineConfig
from memrules._config.read import (
    allowed_imports,
    pipeline_config_from_yaml,
    pipeline_keys_only,
    read_config_text,
)
from memrules._engine.contract import StrategyFactory

__all__ = ["load_pipeline_config"]


def load_pipeline_config(
    source: str | Path,
    *,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
) -> PipelineConfig:
    """The config of a file or YAML text (as `load_config` reads it): a
    `PipelineConfig` when it sets only the pipeline's keys, else
    `load_config`'s `MemoryConfig` (a `PipelineConfig` too). The same
    problems raise the same `ConfigError` either way."""
    text = read_config_text(source)
    allowed = allowed_imports(allow_imports)
    if pipeline_keys_only(text):
        return pipeline_config_from_yaml(text, registry, allowed)
    # The service's reader, and with it memory, the graph and the seams, is
    # imported only for a file that has one of its keys.
    from memrules._config.load import config_from_yaml

    return config_from_yaml(text, registry, allowed)
