"""The ``survivors:`` section: what no strategy may remove besides the first
system message and the most recent user message.

```yaml
survivors:
  task: true               # the first message from the person (the default)
  pin:                     # more messages to keep: each rule's fields must all match
    - role: user
      index: 1             # the second user message
    - pattern: "^REQUIREMENTS:"
  harness:                 # user messages the agent's harness wrote: never "the question"
    - pattern: "^Please always provide EXACTLY ONE action"
```

A message whose metadata says ``pinned: true`` is pinned, and one whose
metadata says ``harness: true`` is the harness's, whatever the rules say.
Values are checked here; `memrules._core.survivors` holds the rule itself.
"""

from __future__ import annotations

from collections.abc import Mapping

from memrules._core.errors import ConfigError, ConfigProblem
from memrules._core.messages import ROLES
from memrules._core.survivors import MessageRule, SurvivorRule

__all__ = ["RULE_FIELDS", "survivors_from_config"]

RULE_FIELDS = ("role", "index", "metadata", "pattern")


def _rule(value: object, where: str) -> MessageRule | list[ConfigProblem]:
    if not isinstance(value, Mapping) or not value:
        message = f"a rule is a mapping of one or more of {', '.join(RULE_FIELDS)}; got {value!r}"
        return [ConfigProblem(message=message, yaml_path=where)]
    problems = []
    for key in value:
        if key not in RULE_FIELDS:
            message = f"unknown key {key!r}; known: {', '.join(RULE_FIELDS)}"
            problems.append(ConfigProblem(message=message, yaml_path=f"{where}.{key}"))
    role, index = value.get("role"), value.get("index")
    metadata, pattern = value.get("metadata"), value.get("pattern")
    if role is not None and role not in ROLES:
        message = f"role={role!r} must be one of {', '.join(ROLES)}"
        problems.append(ConfigProblem(message=message, yaml_path=f"{where}.role"))
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        message = f"index={index!r} must be a whole number of at least 0"
        problems.append(ConfigProblem(message=message, yaml_path=f"{where}.index"))
    if metadata is not None and not (isinstance(metadata, str) and metadata):
        message = f"metadata={metadata!r} must be a metadata key (a non-empty string)"
        problems.append(ConfigProblem(message=message, yaml_path=f"{where}.metadata"))
    if pattern is not None:
        if not (isinstance(pattern, str) and pattern):
            message = f"pattern={pattern!r} must be a non-empty regular expression"
            problems.append(ConfigProblem(message=message, yaml_path=f"{where}.pattern"))
        else:
            try:
                MessageRule(pattern=pattern)
            except Exception as exc:  # re2.error: the pattern does not compile
                detail = exc.args[0] if exc.args else exc
                if isinstance(detail, bytes):
                    detail = detail.decode("utf-8", "replace")
                message = f"pattern={pattern!r} is not a regular expression RE2 reads: {detail}"
                problems.append(ConfigProblem(message=message, yaml_path=f"{where}.pattern"))
    if problems:
        return problems
    return MessageRule(role=role, index=index, metadata=metadata, pattern=pattern)


def _rules(value: object, key: str) -> tuple[tuple[MessageRule, ...], list[ConfigProblem]]:
    if value is None:
        return (), []
    if not isinstance(value, list | tuple):
        message = f"{key} is a list of rules; got {value!r}"
        return (), [ConfigProblem(message=message, yaml_path=f"survivors.{key}")]
    rules: list[MessageRule] = []
    problems: list[ConfigProblem] = []
    for k, item in enumerate(value):
        made = _rule(item, f"survivors.{key}[{k}]")
        if isinstance(made, MessageRule):
            rules.append(made)
        else:
            problems += made
    return tuple(rules), problems


def survivors_from_config(
    task: object = True, pin: object = None, harness: object = None
) -> SurvivorRule:
    """The `SurvivorRule` a ``survivors:`` section describes; one
    `ConfigError` naming every problem at its ``survivors.`` path."""
    problems: list[ConfigProblem] = []
    if not isinstance(task, bool):
        message = f"task={task!r} must be true or false"
        problems.append(ConfigProblem(message=message, yaml_path="survivors.task"))
    pins, found = _rules(pin, "pin")
    problems += found
    harnesses, found = _rules(harness, "harness")
    problems += found
    if problems:
        raise ConfigError(problems)
    return SurvivorRule(task=bool(task), pin=pins, harness=harnesses)
