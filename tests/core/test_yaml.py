"""The YAML reader's limits (memrules._core.yaml_nodes): configs built to stall or exhaust
the reader fail fast, with one line, and without using memory.

The times asserted are generous bounds (seconds where the reader takes
milliseconds), so the tests do not depend on the machine's speed; without
the limits these configs take minutes and gigabytes.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from memrules import ConfigError, load_config
from memrules._core.yaml_nodes import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_NODES, parse_yaml

BOUND_S = 5.0
"""Far above what the reader takes; a reader without limits takes minutes."""

MEMORY_BYTES = 16 * 1024 * 1024
"""The most the reader may allocate on its way to refusing a config."""


def alias_bomb(levels: int = 9, width: int = 10) -> str:
    """The "billion laughs": each level a list of ``width`` aliases of the one before."""
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def measured(action: Callable[[], object]) -> tuple[ConfigError, float, int]:
    """The error ``action`` raises, the seconds it took, and its peak allocation."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ConfigError) as info:
            action()
        elapsed = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return info.value, elapsed, peak


def test_alias_bomb_fails_fast_with_memory_flat(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    error, elapsed, peak = measured(lambda: load_config(path))
    assert f"more than {MAX_NODES:,} values once aliases are expanded" in str(error)
    assert error.path == str(path)
    assert error.line is not None
    assert "\n" not in str(error)
    assert elapsed < BOUND_S
    assert peak < MEMORY_BYTES


def test_a_100_mb_config_fails_fast_with_memory_flat(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    block = ("strategies:\n" + "  - type: drop_turns\n" * 50_000).encode()
    with path.open("wb") as file:
        while file.tell() < 100 * 1024 * 1024:
            file.write(block)
    error, elapsed, peak = measured(lambda: load_config(path))
    assert str(error).startswith(f"{path}: config file is ")
    assert f"the limit is {MAX_CONFIG_BYTES:,} bytes" in str(error)
    assert elapsed < BOUND_S
    assert peak < MEMORY_BYTES


def test_a_file_with_no_size_is_read_only_up_to_the_limit() -> None:
    # /dev/zero reports size 0 and never ends: the reader stops at the limit.
    error, _, peak = measured(lambda: load_config(Path("/dev/zero")))
    assert "over the limit" in str(error)
    assert peak < MEMORY_BYTES


def test_text_over_the_limit_is_refused() -> None:
    with pytest.raises(ConfigError, match="the limit is"):
        load_config("a: 1\n" * (MAX_CONFIG_BYTES // 5 + 1))


def test_many_values_without_aliases_are_refused() -> None:
    text = "a: [" + ",".join(["1"] * (MAX_NODES + 1)) + "]\n"
    assert len(text.encode()) < MAX_CONFIG_BYTES
    with pytest.raises(ConfigError, match=f"more than {MAX_NODES:,} values"):
        parse_yaml(text)


def test_limits_leave_room_for_real_configs() -> None:
    text = "a: [" + ",".join(["1"] * (MAX_NODES // 2)) + "]\n"
    node = parse_yaml(text)
    assert node is not None
    assert len(node.value["a"].value) == MAX_NODES // 2
    depth = MAX_DEPTH - 1  # lists inside the top-level mapping
    assert parse_yaml("a: " + "[" * depth + "]" * depth + "\n") is not None
    with pytest.raises(ConfigError, match=f"nested more than {MAX_DEPTH} levels"):
        parse_yaml("a: " + "[" * (depth + 1) + "]" * (depth + 1) + "\n")
    shared = "a: &a {x: 1}\nb: *a\n"
    node = parse_yaml(shared)
    assert node is not None
    assert node.value["b"].plain() == node.value["a"].plain()


@pytest.mark.parametrize(
    "text",
    [
        "strategies: &a [*a]\n",
        "a: &a {b: *a}\n",
        "a: &a [1, {b: [*a]}]\n",
    ],
)
def test_self_referencing_aliases_are_one_error(text: str) -> None:
    with pytest.raises(ConfigError, match="a cycle") as info:
        parse_yaml(text)
    assert info.value.line == 1


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("a: !!python/object/apply:os.system [echo hi]\n", "!!python/object/apply:os.system"),
        ("a: !!python/object/apply:os.system {args: [x]}\n", "!!python/object/apply:os.system"),
        ("a: !!binary aGk=\n", "!!binary"),
        ("a: !!set {x: null}\n", "!!set"),
        ("a: !local 3\n", "!local"),
    ],
)
def test_tags_outside_the_core_schema_are_refused(text: str, tag: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text)
    assert f"the tag {tag!r} is not allowed" in str(info.value)


def test_core_tags_are_read() -> None:
    node = parse_yaml("a: !!str 3\nb: !!int '4'\nc: !!float 1\nd: !!null ''\n")
    assert node is not None
    assert node.plain() == {"a": "3", "b": 4, "c": 1.0, "d": None}


def test_nul_byte_is_one_line_with_its_line() -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml("a: 1\nb: \x00\n")
    assert "\n" not in str(info.value)
    assert info.value.line == 2
    assert "#x0000" in str(info.value)
