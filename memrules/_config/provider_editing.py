"""The config's ``provider_editing:`` section, read from YAML into a
`ProviderEditing` (see that module
for what the edits do). Every problem is gathered and raised as one
`ConfigError` at ``provider_editing.<field>``;
the section reader places each at its line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memrules._adapters.context_editing import (
    ClearThinking,
    ClearToolUses,
    Compaction,
    ProviderEditing,
)
from memrules._core.errors import ConfigError, ConfigProblem

__all__ = ["PROVIDER_EDITING_FIELDS", "provider_editing_from_config"]


def _problem(field: str, message: str) -> ConfigProblem:
    return ConfigProblem(message=message, yaml_path=f"provider_editing.{field}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_trigger(value: object, problems: list[ConfigProblem]) -> tuple[int | None, int | None]:
    where = "clear_tool_uses.trigger"
    if _whole(value):
        value = {"input_tokens": value}
    if not isinstance(value, Mapping) or len(value) != 1:
        problems.append(_problem(where, "expected {input_tokens: N} or {tool_uses: N}"))
        return None, None
    ((kind, number),) = value.items()
    if kind not in ("input_tokens", "tool_uses") or not _whole(number) or number < 1:
        message = (
            f"expected {{input_tokens: N}} or {{tool_uses: N}} with N >= 1, got {dict(value)!r}"
        )
        problems.append(_problem(where, message))
        return None, None
    return (number, None) if kind == "input_tokens" else (None, number)


def _read_tool_uses(value: object, problems: list[ConfigProblem]) -> ClearToolUses | None:
    if value is None or value is True:
        return ClearToolUses()
    if not isinstance(value, Mapping):
        problems.append(
            _problem("clear_tool_uses", "expected a mapping (or true for the defaults)")
        )
        return None
    known = ("trigger", "keep", "clear_at_least", "exclude_tools", "clear_tool_inputs")
    found = len(problems)
    fields: dict[str, Any] = {}
    for key, item in value.items():
        where = f"clear_tool_uses.{key}"
        if key not in known:
            problems.append(_problem(where, f"unknown key {key!r}; known: {', '.join(known)}"))
        elif key == "trigger":
            fields["trigger"], fields["trigger_tool_uses"] = _read_trigger(item, problems)
        elif key in ("keep", "clear_at_least"):
            if not _whole(item) or item < 0:
                problems.append(
                    _problem(where, f"expected a whole number of at least 0, got {item!r}")
                )
            else:
                fields[key] = item
        elif key == "exclude_tools":
            if not isinstance(item, (list, tuple)) or not all(
                isinstance(t, str) and t for t in item
            ):
                problems.append(_problem(where, f"expected a list of tool names, got {item!r}"))
            else:
                fields[key] = tuple(item)
        elif not isinstance(item, bool):
            problems.append(_problem(where, f"expected true or false, got {item!r}"))
        else:
            fields[key] = item
    if len(problems) > found:
        return None
    return ClearToolUses(**fields)


def _read_thinking(value: object, problems: list[ConfigProblem]) -> ClearThinking | None:
    if value is None or value is True:
        return ClearThinking()
    keep = value.get("keep", 1) if isinstance(value, Mapping) else None
    extra = [k for k in value if k != "keep"] if isinstance(value, Mapping) else []
    for key in extra:
        problems.append(_problem(f"clear_thinking.{key}", f"unknown key {key!r}; known: keep"))
    if keep != "all" and (not _whole(keep) or keep < 1):  # type: ignore[operator]
        message = (
            f"keep is a number of assistant turns of at least 1, or 'all'; got {keep!r} "
            "(the turn of a tool-use loop in progress must keep its thinking)"
        )
        problems.append(_problem("clear_thinking.keep", message))
        return None
    return ClearThinking(keep=keep)  # type: ignore[arg-type]


def _read_compaction(value: object, problems: list[ConfigProblem]) -> Compaction | None:
    number = value.get("compact_threshold") if isinstance(value, Mapping) else value
    extra = [k for k in value if k != "compact_threshold"] if isinstance(value, Mapping) else []
    for key in extra:
        problems.append(
            _problem(f"compaction.{key}", f"unknown key {key!r}; known: compact_threshold")
        )
    if not _whole(number) or number < 1:  # type: ignore[operator]
        message = f"expected compact_threshold: N (tokens, at least 1), got {number!r}"
        problems.append(_problem("compaction.compact_threshold", message))
        return None
    return Compaction(compact_threshold=number)  # type: ignore[arg-type]


_ABSENT: Any = object()


def provider_editing_from_config(
    *,
    clear_tool_uses: object = _ABSENT,
    clear_thinking: object = _ABSENT,
    compaction: object = _ABSENT,
    local: object = False,
) -> ProviderEditing:
    """The ``provider_editing:`` section's value, from its YAML fields (an
    edit given as null or ``true`` takes the provider's defaults, ``false``
    or absent asks for none). Raises
    `ConfigError` listing every problem at its
    ``provider_editing.<field>`` path. A section that asks for no edit is an
    error: it could never do anything."""
    problems: list[ConfigProblem] = []
    off = (_ABSENT, False)
    tools = None
    if not any(clear_tool_uses is o for o in off):
        tools = _read_tool_uses(clear_tool_uses, problems)
    thinking = None
    if not any(clear_thinking is o for o in off):
        thinking = _read_thinking(clear_thinking, problems)
    compact = None
    if not any(compaction is o for o in off):
        compact = _read_compaction(compaction, problems)
    if not isinstance(local, bool):
        problems.append(_problem("local", f"expected true or false, got {local!r}"))
    if not problems and tools is None and thinking is None and compact is None:
        known = "clear_tool_uses, clear_thinking, compaction"
        message = f"provider_editing asks for no edit; give one of {known}"
        problems.append(ConfigProblem(message=message, yaml_path="provider_editing"))
    if problems:
        raise ConfigError(problems)
    return ProviderEditing(
        clear_tool_uses=tools, clear_thinking=thinking, compaction=compact, local=bool(local)
    )


PROVIDER_EDITING_FIELDS = ("clear_tool_uses", "clear_thinking", "compaction", "local")
