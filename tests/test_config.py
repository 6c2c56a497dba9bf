"""Reading configs: every problem named by file, YAML path and line."""

from __future__ import annotations

from pathlib import Path

import pytest

import memrules
from memrules import Budget, ConfigError, MemoryConfig, load_config, load_pipeline
from memrules.strategies import BUILTIN_ORDER, STRATEGIES

CONFIGS = Path(__file__).resolve().parent.parent / "configs"

BAD = [
    # (yaml, yaml_path, line, words in the message)
    ("strategies: [", "", 1, "invalid YAML"),
    ("max_messages: 6\n  bad indent: 1\n", "", 2, "invalid YAML"),
    ("- 1\n- 2\n", "", 1, "mapping of settings"),
    ("max_mesages: 6\n", "max_mesages", 1, "unknown key 'max_mesages'"),
    ("max_messages: six\n", "max_messages", 1, "whole number"),
    ("max_messages: 0\n", "max_messages", 1, "whole number"),
    ("max_messages: true\n", "max_messages", 1, "whole number"),
    ("max_fraction: 1.5\n", "max_fraction", 1, "(0, 1]"),
    ("warn_fraction: -0.1\n", "warn_fraction", 1, "(0, 1]"),
    ("context_window_tokens: 12.5\n", "context_window_tokens", 1, "whole number"),
    ("encoder_name: gpt-nine\n", "encoder_name", 1, "unknown encoder or model"),
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
        "expected a whole number or null, got str 'four'",
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
        "known parameters: keep_messages, keep_tokens",
    ),
    (
        "strategies:\n  - type: clear_tool_results\n    exclude_tools: read_file\n",
        "strategies[0].exclude_tools",
        3,
        "a list of strings",
    ),
    (
        "strategies:\n  - type: clear_tool_results\n    clear_tool_inputs: 1\n",
        "strategies[0].clear_tool_inputs",
        3,
        "true or false",
    ),
    (
        "strategies:\n  - type: clamp_oversized_messages\n    max_part_tokens: 5\n",
        "strategies[0].max_part_tokens",
        3,
        "at least 32",
    ),
    (
        "strategies:\n  - type: drop_turns\n    turns: 3\n",
        "strategies[0].turns",
        3,
        "unknown parameter",
    ),
    ("strategies:\n  - type: 'os.path:nothing_here'\n", "strategies[0].type", 2, "no attribute"),
    ("strategies:\n  - type: 'no_such_pkg.mod:f'\n", "strategies[0].type", 2, "cannot import"),
    ("strategies:\n  - type: 'os:sep'\n", "strategies[0].type", 2, "not a callable"),
]


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
    with pytest.raises(ConfigError, match="cannot read config") as info:
        load_pipeline(str(missing))
    assert info.value.path == str(missing)


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


def test_default_pipeline_is_the_seeds_eight() -> None:
    config = load_config("{}")
    assert [s.name for s in config.strategies] == list(BUILTIN_ORDER)
    shipped = load_config(CONFIGS / "default.yaml")
    assert [repr(s.strategy) for s in shipped.strategies] == [
        repr(s.strategy) for s in config.strategies
    ]


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_load(path: Path) -> None:
    pipeline = load_pipeline(path)
    assert pipeline.config.source == str(path)
    assert pipeline.config.strategies


def test_strategy_repr_reads_like_yaml() -> None:
    config = load_config("strategies:\n  - type: sliding_window\n    keep_messages: 4\n")
    assert repr(config.strategies[0].strategy) == "sliding_window(keep_messages=4)"


def test_registry_holds_the_documented_built_ins() -> None:
    assert set(STRATEGIES) == {*BUILTIN_ORDER, "trim_to_budget"}
    assert not hasattr(memrules, "STRATEGIES")  # the registry is not top-level API


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
    text = "strategies:\n  - type: 'tests.custom_strategies:drop_everything_old'\n"
    config = load_config(text)
    assert config.strategies[0].name == "tests.custom_strategies:drop_everything_old"
    factory = "strategies:\n  - type: 'tests.custom_strategies:keep_last'\n    count: 2\n"
    assert repr(load_config(factory).strategies[0].strategy) == "keep_last(count=2)"
    with pytest.raises(ConfigError, match="takes no parameters"):
        load_config(text + "    count: 2\n")
    with pytest.raises(ConfigError, match="expected a whole number"):
        load_config(factory.replace("count: 2", "count: two"))


def test_custom_strategy_by_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "memrules_plugin_example-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memrules-plugin-example\nVersion: 1.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[memrules.strategies]\n"
        "only_survivors = tests.custom_strategies:drop_everything_old\n"
        "keep_last = tests.custom_strategies:keep_last\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = load_config(
        "strategies:\n  - type: only_survivors\n  - type: keep_last\n    count: 3\n"
    )
    assert [s.name for s in config.strategies] == ["only_survivors", "keep_last"]
    assert repr(config.strategies[1].strategy) == "keep_last(count=3)"
