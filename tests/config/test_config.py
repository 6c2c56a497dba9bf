"""Reading configs: every problem named by file, YAML path and line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import memrules
import memrules._engine.contract
from memrules import Budget, ConfigError, MemoryConfig, load_config, load_pipeline
from memrules._counting.framing import FramedCounter
from memrules.strategies import (
    BUILTIN_ORDER,
    STRATEGIES,
    clamp_oversized_messages,
    clear_tool_results,
    deduplicate_file_reads,
    drop_observations,
    offload,
    register,
    sliding_window,
)
from tests.support.seams import config_params

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

BAD = [
    # (yaml, yaml_path, line, words in the message)
    ("strategies: [", "", 1, "invalid YAML"),
    ("max_messages: 6\n  bad indent: 1\n", "", 2, "invalid YAML"),
    ("- 1\n- 2\n", "", 1, "mapping of settings"),
    ("max_mesages: 6\n", "max_mesages", 1, "unknown key 'max_mesages'"),
    ("max_messages: six\n", "max_messages", 1, "whole number"),
    ("max_messages: 0\n", "max_messages", 1, "whole number"),
    ("max_messages: true\n", "max_messages", 1, "whole number"),
    ("max_fraction: 1.5\n", "max_fraction", 1, "max_fraction=1.5 must be a number above 0"),
    ("warn_fraction: -0.1\n", "warn_fraction", 1, "at most 1"),
    ("context_window_tokens: 12.5\n", "context_window_tokens", 1, "whole number"),
    ("encoder_name: gpt-nine\n", "encoder_name", 1, "such as 'gpt-4o', 'estimate', or 'hf:"),
    ("repair: yes please\n", "repair", 1, "repair='yes please' must be true, false or null"),
    ("user_first: 1\n", "user_first", 1, "user_first=1 must be true or false"),
    ("warning_marker: ''\n", "warning_marker", 1, "non-empty string"),
    ("count_rule: gemini\n", "count_rule", 1, "count_rule='gemini' must be one of openai"),
    ("count_rule: true\n", "count_rule", 1, "one of openai, anthropic, seed"),
    ("safety_margin: 1\n", "safety_margin", 1, "at least 0 and below 1"),
    ("safety_margin: -0.1\n", "safety_margin", 1, "at least 0 and below 1"),
    ("safety_margin: false\n", "safety_margin", 1, "at least 0 and below 1"),
    ("max_tokens: 1000\nmax_fraction: 0.5\n", "max_fraction", 2, "both set"),
    ("max_messages: 2\nmax_messages: 3\n", "max_messages", 2, "duplicate key"),
    ("strategies: sliding_window\n", "strategies", 1, "list of strategies"),
    ("strategies:\n  - sliding_window\n", "strategies[0]", 2, "mapping with a 'type'"),
    ("strategies:\n  - keep_messages: 4\n", "strategies[0].type", 2, "needs a 'type'"),
    ("strategies:\n  - type: sliding_windo\n", "strategies[0].type", 2, "unknown strategy"),
    (
        "strategies:\n  - type: sliding_window\n    keep_messages: four\n",
        "strategies[0].keep_messages",
        3,
        "keep_messages='four' must be a whole number or null",
    ),
    (
        "strategies:\n  - type: sliding_window\n    keep_messages: -1\n",
        "strategies[0].keep_messages",
        3,
        "keep_messages=-1",
    ),
    (
        "strategies:\n  - type: sliding_window\n    keep_mesages: 4\n",
        "strategies[0].keep_mesages",
        3,
        "(did you mean 'keep_messages'?); known parameters: keep_messages, keep_tokens",
    ),
    (
        "strategies:\n  - type: sliding_window\n    keep_message: 4\n",
        "strategies[0].keep_message",
        3,
        "did you mean 'keep_messages'?",
    ),
    (
        "max_drop_system_observations: 3\n",
        "max_drop_system_observations",
        1,
        "drop_observations.max_drop",
    ),
    ("keep_messages: 4\n", "keep_messages", 1, "a parameter of sliding_window"),
    ("offload_turn: 4\n", "offload_turn", 1, "did you mean 'offload_turns'?"),
    (
        "strategies:\n  - type: sliding_windo\n",
        "strategies[0].type",
        2,
        "did you mean 'sliding_window'?",
    ),
    (
        "strategies:\n  - type: clear_tool_results\n    exclude_tools: read_file\n",
        "strategies[0].exclude_tools",
        3,
        "exclude_tools='read_file' must be a list of strings",
    ),
    (
        "strategies:\n  - type: clear_tool_results\n    clear_tool_inputs: 1\n",
        "strategies[0].clear_tool_inputs",
        3,
        "clear_tool_inputs=1 must be true or false",
    ),
    (
        "strategies:\n  - type: clamp_oversized_messages\n    max_part_tokens: 5\n",
        "strategies[0].max_part_tokens",
        3,
        "max_part_tokens=5 must be at least 32",
    ),
    (
        "strategies:\n  - type: clear_tool_results\n    error_pattern: '(oops'\n",
        "strategies[0].error_pattern",
        3,
        "error_pattern='(oops' is not a regular expression",
    ),
    (
        "strategies:\n  - type: clamp_oversized_messages\n    recent_turns: -1\n",
        "strategies[0].recent_turns",
        3,
        "recent_turns=-1 must be at least 0",
    ),
    (
        "strategies:\n  - type: clear_tool_results\n    preview_chars: lots\n",
        "strategies[0].preview_chars",
        3,
        "preview_chars='lots' must be a whole number",
    ),
    (
        "strategies:\n  - type: drop_turns\n    turns: 3\n",
        "strategies[0].turns",
        3,
        "unknown parameter",
    ),
    ("strategies:\n  - type: 'os:system'\n", "strategies[0].type", 2, "importing 'os' is not"),
    ("strategies:\n  - type: 'a b:f'\n", "strategies[0].type", 2, "not 'package.module:function'"),
    # Limits and strictness of the YAML reader (memrules._core.yaml_nodes).
    ("a: \x00\n", "", 1, "unacceptable character #x0000"),
    ("strategies: &a [*a]\n", "strategies[0]", 1, "a cycle"),
    ("a: &a {b: *a}\n", "a.b", 1, "a cycle"),
    ("strategies: !!python/object/apply:os.system [ls]\n", "", 1, "tag '!!python/object"),
    ("strategies: !!python/object/apply:os.system {a: 1}\n", "", 1, "is not allowed"),
    ("max_messages: !custom 6\n", "", 1, "the tag '!custom' is not allowed"),
    ("max_messages: " + "9" * 5000 + "\n", "max_messages", 1, "Exceeds the limit"),
    ("a: &a {x: 1}\nb:\n  <<: *a\n", "b", 3, "merge keys (<<) are not supported"),
    ("a: " + "[" * 40 + "]" * 40 + "\n", "", 1, "nested more than 32 levels deep"),
    # The prompt cache: the cache: section and min_step on a strategies entry.
    ("max_tokens: 9\ncache:\n  compact_to: 1.5\n", "cache.compact_to", 3, "fraction of the"),
    ("cache:\n  compact_to: 0\n", "cache.compact_to", 2, "compact_to=0 must be"),
    ("cache:\n  compact_to: half\n", "cache.compact_to", 2, "whole number of tokens"),
    ("cache:\n  cold_trigger: 2\n", "cache.cold_trigger", 2, "above 0 and at most 1"),
    ("cache:\n  provider: gemini\n", "cache.provider", 2, "one of openai, anthropic"),
    ("cache:\n  model: ''\n", "cache.model", 2, "must be a model name or null"),
    ("cache:\n  compact: 0.5\n", "cache.compact", 2, "did you mean 'compact_to'"),
    ("cache: 0.5\n", "cache", 1, "cache is a mapping of compact_to"),
    (
        "strategies:\n  - type: trim_to_budget\n    min_step: -1\n",
        "strategies[0].min_step",
        3,
        "min_step=-1 must be a whole number",
    ),
    (
        "strategies:\n  - type: summarize\n    frozen: sometimes\n",
        "strategies[0].frozen",
        3,
        "frozen='sometimes'",
    ),
]

IMPORTS = [
    # Refused without allow_imports, whatever the module.
    ("strategies:\n  - type: 'os.path:nothing_here'\n", "no attribute"),
    ("strategies:\n  - type: 'no_such_pkg.mod:f'\n", "cannot import"),
    ("strategies:\n  - type: 'os:sep'\n", "not a callable"),
]


@pytest.mark.parametrize(("text", "words"), IMPORTS)
def test_import_errors_once_imports_are_allowed(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match="is not allowed"):
        load_config(text)
    with pytest.raises(ConfigError) as info:
        load_config(text, allow_imports=True)
    assert info.value.yaml_path == "strategies[0].type"
    assert info.value.line == 2
    assert words in str(info.value)


@pytest.mark.parametrize(("text", "yaml_path", "line", "words"), BAD)
def test_bad_yaml_raises_config_error(text: str, yaml_path: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.yaml_path == yaml_path
    assert error.line == line
    assert words in str(error)
    assert "\n" not in str(error)


def test_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text("context_window_tokens: 256\nstrategies:\n  - type: nope\n")
    with pytest.raises(ConfigError) as info:
        load_pipeline(path)
    assert info.value.path == str(path)
    assert str(info.value).startswith(f"{path}:3: strategies[0].type: unknown strategy")


def test_all_problems_are_listed_at_once() -> None:
    text = "max_messages: x\nfoo: 1\nstrategies:\n  - type: nope\n  - type: drop_turns\n    a: 1\n"
    with pytest.raises(ConfigError) as info:
        load_config(text)
    where = [(p.yaml_path, p.line) for p in info.value.problems]
    assert where == [
        ("max_messages", 1),
        ("foo", 2),
        ("strategies[0].type", 4),
        ("strategies[1].a", 6),
    ]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError, match="config file not found") as info:
        load_pipeline(str(missing))
    assert info.value.path == str(missing)


@pytest.mark.parametrize(
    "source",
    ["configs/seed_example", "absent.yml", "no-such-file"],
)
def test_a_str_without_newline_or_colon_is_a_path(source: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(source)
    assert info.value.path == source
    assert str(info.value).startswith(f"{source}: config file not found")
    assert "got str" not in str(info.value)


def test_a_path_is_always_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(Path("max_messages: 3"))
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)
    existing = tmp_path / "has: a colon"
    existing.write_text("max_messages: 3\n")
    assert load_config(str(existing)).max_messages == 3  # an existing file wins
    assert load_config(str(existing)).source == str(existing)


def test_a_str_with_newline_or_colon_is_yaml_text() -> None:
    config = load_config("encoder_name: o200k_base  # see foo.yaml")
    assert config.encoder_name == "o200k_base"
    assert config.source is None
    with pytest.raises(ConfigError) as info:
        load_config("max_messages: x")
    assert info.value.path == "<YAML text>"
    assert str(info.value).startswith("<YAML text>:1: max_messages: ")


def test_a_file_that_is_not_utf8_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"max_messages: 3\nwarning_marker: caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8") as info:
        load_config(bad)
    assert info.value.line == 2


def test_unknown_type_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as info:
        load_config("strategies:\n  - type: nope\n")
    for name in BUILTIN_ORDER:
        assert name in str(info.value)


def test_absent_max_fraction_defaults_and_max_tokens_replaces_it() -> None:
    assert load_config("{}").max_fraction == 0.8
    assert load_config("").max_fraction == 0.8
    only_tokens = load_config("max_tokens: 500\n")
    assert only_tokens.max_fraction is None
    assert load_pipeline("max_tokens: 500\n").budget() == Budget.tokens(500)
    explicit_null = load_config("max_tokens: 500\nmax_fraction: null\n")
    assert explicit_null.max_fraction is None
    assert load_pipeline("max_fraction: null\n").budget() == Budget.UNLIMITED


def test_budget_resolution_follows_the_seed() -> None:
    assert load_pipeline("{}").budget() == Budget.tokens(102_400)
    assert load_pipeline("context_window_tokens: 1000\n").budget() == Budget.tokens(800)
    assert load_pipeline("context_window_tokens: 1000\n").budget(window=2000) == Budget.tokens(1600)
    both = "max_messages: 6\nmax_tokens: 100\nmax_fraction: null\n"
    assert load_pipeline(both).budget() == Budget.messages(6)
    assert load_pipeline("max_messages: 6\n").budget() == Budget.messages(6)


def test_python_api_validates_like_yaml() -> None:
    with pytest.raises(ConfigError, match="both set"):
        MemoryConfig(max_tokens=100, max_fraction=0.5)
    assert MemoryConfig(max_tokens=100).max_fraction is None
    with pytest.raises(ConfigError, match="max_messages=0"):
        MemoryConfig(max_messages=0)
    with pytest.raises(ConfigError, match="repair='yes' must be true, false or null"):
        MemoryConfig(repair="yes")  # type: ignore[arg-type]


def test_python_and_yaml_give_the_same_problems() -> None:
    """One table of settings: the messages differ only by where they are."""
    with pytest.raises(ConfigError) as from_python:
        MemoryConfig(max_messages=0, warn_fraction=2.0, encoder_name="no-such")
    with pytest.raises(ConfigError) as from_yaml:
        load_config("max_messages: 0\nwarn_fraction: 2.0\nencoder_name: no-such\n")
    assert sorted(p.message for p in from_python.value.problems) == sorted(
        p.message for p in from_yaml.value.problems
    )
    assert [p.line for p in from_yaml.value.problems] == [1, 2, 3]


def test_unknown_encoder_is_rejected_at_build() -> None:
    with pytest.raises(ConfigError) as info:
        MemoryConfig(encoder_name="no-such")
    assert isinstance(info.value, memrules.MemrulesError)
    assert info.value.yaml_path == "encoder_name"
    assert "encoder_name='no-such'" in str(info.value)
    assert MemoryConfig(encoder_name="gpt-4o").encoder_name == "gpt-4o"


def test_estimate_is_an_encoder_name() -> None:
    assert load_config("encoder_name: estimate\n").encoder_name == "estimate"
    assert MemoryConfig(encoder_name="estimate").encoder_name == "estimate"


def test_estimate_selects_the_script_aware_counter() -> None:
    pipeline = load_pipeline("encoder_name: estimate\nmax_messages: 4\ncount_rule: seed\n")
    assert isinstance(pipeline.counter, memrules.EstimatingCounter)
    framed = load_pipeline("encoder_name: estimate\nmax_messages: 4\n")  # OpenAI's framing
    assert isinstance(framed.counter, FramedCounter)
    assert isinstance(framed.counter.base, memrules.EstimatingCounter)


def test_repair_and_user_first_are_read() -> None:
    config = load_config("repair: true\nuser_first: false\n")
    assert (config.repair, config.user_first) == (True, False)
    # repair: null by default, on in the request hook, off in Pipeline.apply
    assert (load_config("{}").repair, load_config("{}").user_first) == (None, True)


def test_default_pipeline_is_the_seeds_eight() -> None:
    config = load_config("{}")
    assert [s.name for s in config.strategies] == list(BUILTIN_ORDER)
    shipped = load_config(CONFIGS / "default.yaml")
    assert [repr(s.strategy) for s in shipped.strategies] == [
        repr(s.strategy) for s in config.strategies
    ]


@pytest.mark.parametrize("path", config_params(sorted(CONFIGS.glob("*.yaml"))))
def test_shipped_configs_load(path: Path) -> None:
    pipeline = load_pipeline(path)
    assert pipeline.config.source == str(path)
    assert pipeline.config.strategies


def test_strategy_repr_reads_like_yaml() -> None:
    config = load_config("strategies:\n  - type: sliding_window\n    keep_messages: 4\n")
    assert repr(config.strategies[0].strategy) == "sliding_window(keep_messages=4)"


def test_registry_holds_the_documented_built_ins() -> None:
    assert set(STRATEGIES) == {
        *BUILTIN_ORDER,
        "trim_to_budget",
        "strip_old_images",
        "clear_thinking",
    }
    assert not hasattr(memrules, "STRATEGIES")  # the registry is not top-level API


def test_the_registry_is_read_only() -> None:
    with pytest.raises(TypeError):
        STRATEGIES["mine"] = STRATEGIES["drop_turns"]  # type: ignore[index]
    with pytest.raises(TypeError):
        del STRATEGIES["drop_turns"]  # type: ignore[attr-defined]
    assert "mine" not in STRATEGIES


def test_register_fills_a_registry_of_your_own() -> None:
    mine: dict[str, memrules._engine.contract.StrategyFactory] = {}

    @register("keep_first", mine)
    def keep_first(*, count: int = 1) -> memrules.Strategy:
        return lambda conversation, context: conversation

    assert set(mine) == {"keep_first"}
    assert "keep_first" not in STRATEGIES
    config = load_config("strategies:\n  - type: keep_first\n    count: 2\n", registry=mine)
    assert [s.name for s in config.strategies] == ["keep_first"]
    with pytest.raises(ConfigError, match="count='2' must be a whole number"):
        keep_first(count="2")  # type: ignore[arg-type]


BAD_CALLS = [
    (sliding_window, {"keep_messages": -1}, "keep_messages", "keep_messages=-1 must be at least 0"),
    (sliding_window, {"keep_messages": "4"}, "keep_messages", "keep_messages='4' must be a whole"),
    (sliding_window, {"keep_message": 4}, "keep_message", "did you mean 'keep_messages'?"),
    (clamp_oversized_messages, {"max_part_tokens": 5}, "max_part_tokens", "at least 32"),
    (clear_tool_results, {"exclude_tools": "plan"}, "exclude_tools", "a list of strings"),
    (clear_tool_results, {"clear_tool_inputs": 1}, "clear_tool_inputs", "true or false"),
    (clear_tool_results, {"keep_first": -1}, "keep_first", "keep_first=-1 must be at least 0"),
    (clear_tool_results, {"error_pattern": 3}, "error_pattern", "a string or null"),
    (clamp_oversized_messages, {"error_tail_chars": -5}, "error_tail_chars", "at least 0"),
    (drop_observations, {"max_drop": 0}, "max_drop", "max_drop=0 must be at least 1"),
    (deduplicate_file_reads, {"tool_name": ""}, "tool_name", "tool_name=''"),
    (offload, {"turns": True}, "turns", "turns=True must be a whole number"),
]


@pytest.mark.parametrize(("factory", "params", "param", "words"), BAD_CALLS)
def test_factories_called_from_python_raise_config_error(
    factory: Any, params: dict[str, Any], param: str, words: str
) -> None:
    with pytest.raises(ConfigError) as info:
        factory(**params)
    error = info.value
    assert isinstance(error, memrules.MemrulesError)
    assert isinstance(error, ValueError)
    assert error.yaml_path == param
    assert words in str(error)


@pytest.mark.parametrize(("factory", "params", "param", "words"), BAD_CALLS)
def test_factories_check_yaml_and_python_the_same_way(
    factory: Any, params: dict[str, Any], param: str, words: str
) -> None:
    with pytest.raises(ConfigError) as from_python:
        factory(**params)
    name = next(n for n, f in STRATEGIES.items() if f is factory)
    entry = yaml.safe_dump([{"type": name, **params}], default_flow_style=False)
    with pytest.raises(ConfigError) as from_yaml:
        load_config("strategies:\n" + "".join(f"  {line}\n" for line in entry.splitlines()))
    assert [p.message for p in from_yaml.value.problems] == [
        p.message for p in from_python.value.problems
    ]
    assert from_yaml.value.yaml_path == f"strategies[0].{param}"


def test_good_python_calls_convert_like_yaml() -> None:
    assert (
        clear_tool_results(exclude_tools=["plan"])
        == load_config("strategies:\n  - type: clear_tool_results\n    exclude_tools: [plan]\n")
        .strategies[0]
        .strategy
    )


def test_custom_registry_is_an_argument() -> None:
    def keep_all(
        conversation: memrules.Conversation, context: memrules.StrategyContext
    ) -> memrules.Conversation:
        return conversation

    registry = {"keep_all": lambda: keep_all}
    config = load_config("strategies:\n  - type: keep_all\n", registry=registry)
    assert config.strategies[0].strategy is keep_all
    with pytest.raises(ConfigError, match="unknown strategy type 'sliding_window'"):
        load_config("strategies:\n  - type: sliding_window\n", registry=registry)


def test_custom_strategy_by_import_path() -> None:
    allow = ["tests.support.custom_strategies"]
    text = "strategies:\n  - type: 'tests.support.custom_strategies:drop_everything_old'\n"
    config = load_config(text, allow_imports=allow)
    assert config.strategies[0].name == "tests.support.custom_strategies:drop_everything_old"
    factory = "strategies:\n  - type: 'tests.support.custom_strategies:keep_last'\n    count: 2\n"
    assert repr(load_config(factory, allow_imports=allow).strategies[0].strategy) == (
        "keep_last(count=2)"
    )
    with pytest.raises(ConfigError, match="takes no parameters"):
        load_config(text + "    count: 2\n", allow_imports=allow)
    with pytest.raises(ConfigError, match="count='two' must be a whole number"):
        load_config(factory.replace("count: 2", "count: two"), allow_imports=allow)
    with pytest.raises(ConfigError, match="count=-1 must be at least 0"):
        load_config(factory.replace("count: 2", "count: -1"), allow_imports=allow)


def _probe_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """A module on sys.path that leaves a file behind when it is imported."""
    name = f"memrules_probe_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "imported"
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "strategies.py").write_text(
        "def keep(conversation, context):\n    return conversation\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, marker


def test_imports_are_refused_unless_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, marker = _probe_module(tmp_path, monkeypatch)
    text = (
        "max_messages: 4\nstrategies:\n  - type: sliding_window\n"
        f"  - type: '{name}.strategies:keep'\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(text)
    assert info.value.line == 4
    assert info.value.yaml_path == "strategies[1].type"
    assert f"importing '{name}.strategies' is not allowed" in str(info.value)
    with pytest.raises(ConfigError, match="is not allowed"):
        load_config(text, allow_imports=["tests", f"{name}x", f"{name}.strategies.sub"])
    assert name not in sys.modules
    assert f"{name}.strategies" not in sys.modules
    assert not marker.exists()
    # A listed package allows its submodules; True allows any module.
    config = load_config(text, allow_imports=[name])
    assert config.strategies[1].name == f"{name}.strategies:keep"
    assert marker.exists()
    assert load_config(text, allow_imports=True).strategies[1].name == f"{name}.strategies:keep"


def test_one_module_may_be_given_as_a_str() -> None:
    text = "strategies:\n  - type: 'tests.support.custom_strategies:keep_last'\n    count: 1\n"
    config = load_config(text, allow_imports="tests.support.custom_strategies")
    assert repr(config.strategies[0].strategy) == "keep_last(count=1)"


def test_load_config_refuses_imports_by_default_through_load_pipeline() -> None:
    with pytest.raises(ConfigError, match=r"'tests\.support\.custom_strategies' is not allowed"):
        load_pipeline(
            "strategies:\n  - type: 'tests.support.custom_strategies:keep_last'\n    count: 1\n"
        )


def test_custom_strategy_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "memrules_plugin_example-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memrules-plugin-example\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[memrules.strategies]\n"
        "only_survivors = tests.support.custom_strategies:drop_everything_old\n"
        "keep_last = tests.support.custom_strategies:keep_last\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = load_config(
        "strategies:\n  - type: only_survivors\n  - type: keep_last\n    count: 3\n"
    )
    assert [s.name for s in config.strategies] == ["only_survivors", "keep_last"]
    assert repr(config.strategies[1].strategy) == "keep_last(count=3)"
