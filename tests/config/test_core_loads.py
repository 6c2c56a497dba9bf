"""`load_pipeline` + `apply` of a config without the service's keys loads
the core alone: no module of memory, the graph, the seams, the plugin or the
provider formats. Each check runs in a child process, since this test
process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SERVICE = (
    "memrules.memory",
    "memrules.graph",
    "memrules.seams",
    "memrules._plugin",
    "memrules._adapters",
)

CORE_ONLY = """\
context_window_tokens: 4096
max_messages: 4
survivors: {task: true}
over_budget: send
strategies:
  - type: clamp_oversized_messages
  - type: sliding_window
    keep_messages: 3
"""


def _loaded(config: str) -> dict[str, object]:
    """What a fresh interpreter loads for `load_pipeline(config)` and an
    `apply` of a short conversation."""
    code = f"""
        import json, sys
        import memrules
        from memrules._core.messages import message

        pipeline = memrules.load_pipeline({config!r})
        turns = [message("system", "rules")]
        for i in range(6):
            turns += [message("user", f"question {{i}}"), message("assistant", f"answer {{i}}")]
        result = pipeline.apply(turns)
        names = sorted(m for m in sys.modules if m == "memrules" or m.startswith("memrules."))
        print(json.dumps({{
            "kept": len(result.messages),
            "config": type(pipeline.config).__name__,
            "modules": names,
        }}))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_a_pipeline_of_the_core_keys_loads_no_service_module() -> None:
    got = _loaded(CORE_ONLY)
    modules = got["modules"]
    assert isinstance(modules, list)
    assert got["kept"] == 3
    assert got["config"] == "PipelineConfig"
    assert [m for m in modules if m.startswith(SERVICE)] == []
    # 63 when this test was written (109 before the config was split); the
    # bound leaves room for the core to grow, not for the service to come back.
    assert len(modules) <= 80, len(modules)


@pytest.mark.parametrize("name", ["default.yaml", "chat_window.yaml", "coding_agent.yaml"])
def test_the_shipped_pipelines_without_seams_load_no_service_module(name: str) -> None:
    got = _loaded(str(ROOT / "configs" / name))
    modules = got["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith(SERVICE)] == []


def test_a_config_with_a_service_key_is_the_whole_config() -> None:
    """A file with one of the service's keys still loads, as before, into a
    `MemoryConfig`, with the modules that key needs."""
    got = _loaded(CORE_ONLY + "graph_limits: {max_nodes: 64}\n")
    modules = got["modules"]
    assert isinstance(modules, list)
    assert got["config"] == "MemoryConfig"
    assert "memrules.graph.limits" in modules


# --- the pipeline's config says what the whole config says -----------------------------

CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_the_pipelines_config_is_the_whole_configs_pipeline(path: Path) -> None:
    """For each shipped file, `load_pipeline`'s config has the values
    `load_config`'s has, and a trace hashes it the same."""
    from memrules import load_config, load_pipeline
    from memrules._config.load import service_config
    from memrules._trace.canonical import canonical_config, config_sha256

    whole = load_config(path)
    alone = load_pipeline(path).config
    assert service_config(alone) == whole
    assert config_sha256(canonical_config(alone)) == config_sha256(canonical_config(whole))


@pytest.mark.parametrize(
    "text",
    [
        "max_messages: 0\nsafety_margin: 2\n",
        "max_tokens: 10\nmax_fraction: 0.5\nsurvivors: {task: maybe}\n",
        "strategies: [{type: sliding_windw}]\nover_budget: loud\n",
        "max_mesages: 3\n",  # not a key of the pipeline: the whole reader says so
    ],
)
def test_a_bad_pipeline_file_says_what_load_config_says(text: str) -> None:
    from memrules import ConfigError, load_config, load_pipeline

    with pytest.raises(ConfigError) as alone:
        load_pipeline(text)
    with pytest.raises(ConfigError) as whole:
        load_config(text)
    assert str(alone.value) == str(whole.value)


def test_a_pipeline_config_gathers_every_problem() -> None:
    from memrules import ConfigError
    from memrules._config.pipeline_config import PipelineConfig

    with pytest.raises(ConfigError) as caught:
        PipelineConfig(max_messages=0, over_budget="loud", cache="yes")  # type: ignore[arg-type]
    assert [p.yaml_path for p in caught.value.problems] == ["max_messages", "over_budget", "cache"]
