"""Deep-frozen values that keep their key order: what messages carry verbatim.

Provider fields memrules does not interpret (an image part, a vendor
extension, a thinking block) are kept inside messages and written back as they
came. Written back means byte for byte: provider prompt caches match the
prompt's bytes, and replay needs byte identity. So these values must be
immutable and hashable (a message is a value, hashed and cached) *and* keep
their keys in input order, whatever ``PYTHONHASHSEED`` is. pyrsistent's
``PMap`` iterates in hash order, so it cannot hold them; `FrozenDict`
can.

- `freeze` turns any value into a hashable one: mappings become
  `FrozenDict`, lists and tuples tuples, sets frozensets, all the way
  down. A value that cannot be made hashable, a string with a lone surrogate
  and a value nested more than `MAX_DEPTH` levels deep are refused,
  naming where they are.
- `freeze_json` does the same for parsed JSON, and refuses what JSON
  cannot carry or a UTF-8 writer cannot write: ``NaN`` and infinities,
  strings with lone surrogates (``"\\ud800"`` as ``json.loads`` returns it),
  keys that are not strings, values that are not JSON.
- `thaw` turns a frozen value back into fresh plain ``dict``/``list``
  values, keys in the same order, ready for ``json.dumps``.

>>> image = freeze({"type": "image_url", "image_url": {"url": "https://x/cat.png"}})
>>> list(image)
['type', 'image_url']
>>> image == {"image_url": {"url": "https://x/cat.png"}, "type": "image_url"}
True
>>> thaw(image)
{'type': 'image_url', 'image_url': {'url': 'https://x/cat.png'}}
"""

from __future__ import annotations

import math
import re
from collections.abc import (
    ItemsView,
    Iterator,
    KeysView,
    Mapping,
    Sequence,
    Set,
    ValuesView,
)
from typing import Any, TypeVar, final, overload

from memrules._core.errors import MessageTypeError

__all__ = [
    "MAX_DEPTH",
    "FrozenDict",
    "ValueProblem",
    "freeze",
    "freeze_json",
    "has_surrogate",
    "surrogate_problem",
    "thaw",
]

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

_SURROGATE = re.compile("[\\ud800-\\udfff]")
_TEXT = (str, bytes, bytearray)


@final
class FrozenDict(Mapping[K, V]):
    """An immutable, hashable mapping that keeps insertion order.

    Equal to any mapping with equal items, whatever their order (as ``dict``
    is); its hash is the hash of the frozenset of its items, which is
    order-independent and the same as pyrsistent's ``PMap``'s, so equal
    values hash alike. Iteration, ``repr`` and `thaw` follow insertion
    order, so what was read in is written out in the same order.

    ``FrozenDict(mapping)`` deep-freezes the values (see `freeze`).
    Nothing changes one; build a new one instead.
    """

    __slots__ = ("_hash", "_items")

    _items: dict[K, V]
    _hash: int | None

    def __init__(self, items: Mapping[K, V] | None = None, /) -> None:
        try:
            frozen = freeze_items(items) if items else {}
        except ValueProblem as problem:
            raise MessageTypeError(problem.problem, field=problem.where("")) from None
        object.__setattr__(self, "_items", frozen)
        object.__setattr__(self, "_hash", None)

    @classmethod
    def _of(cls, items: dict[K, V]) -> FrozenDict[K, V]:
        """Wrap ``items``, whose values are already frozen; it must not be
        changed afterwards (it is not copied)."""
        new = object.__new__(cls)
        object.__setattr__(new, "_items", items)
        object.__setattr__(new, "_hash", None)
        return new

    def __setattr__(self, name: str, value: object) -> None:
        msg = f"FrozenDict is immutable: cannot set {name!r}"
        raise AttributeError(msg)

    def __delattr__(self, name: str) -> None:
        msg = f"FrozenDict is immutable: cannot delete {name!r}"
        raise AttributeError(msg)

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V | D, /) -> V | D: ...
    def get(self, key: K, default: object = None, /) -> object:
        return self._items.get(key, default)

    def keys(self) -> KeysView[K]:
        return self._items.keys()

    def values(self) -> ValuesView[V]:
        return self._items.values()

    def items(self) -> ItemsView[K, V]:
        return self._items.items()

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if isinstance(other, FrozenDict):
            if self._hash is not None and other._hash is not None and self._hash != other._hash:
                return False
            return self._items == other._items
        if isinstance(other, dict):
            return self._items == other
        if isinstance(other, Mapping):
            return len(self._items) == len(other) and self._items == dict(other.items())
        return NotImplemented

    def __hash__(self) -> int:
        cached = self._hash
        if cached is None:
            cached = hash(frozenset(self._items.items()))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __repr__(self) -> str:
        return f"FrozenDict({self._items!r})"

    def __reduce__(self) -> tuple[type[FrozenDict[K, V]], tuple[dict[K, V]]]:
        return (FrozenDict, (self._items,))

    def __copy__(self) -> FrozenDict[K, V]:
        return self

    def __deepcopy__(self, memo: dict[int, object]) -> FrozenDict[K, V]:
        return self


class ValueProblem(Exception):  # noqa: N818 - internal; callers re-raise a MemrulesError
    """A value `freeze` or `freeze_json` refuses, and where it is.

    Internal: the callers turn it into a `MemrulesError`
    that names the field (``where(prefix)`` renders ``prefix.key[2]``).
    """

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[object] = []  # outermost last: filled as it propagates

    def inside(self, key: object) -> ValueProblem:
        self.path.append(key)
        return self

    def where(self, prefix: str) -> str:
        out = prefix
        for key in reversed(self.path):
            if isinstance(key, int):
                out += f"[{key}]"
            elif isinstance(key, str) and key.isidentifier():
                out += f".{key}" if out else key
            else:
                out += f"[{key!r}]"
        return out


MAX_DEPTH = 128
"""How deeply `freeze` and `freeze_json` go into nested values
(as serde_json does): deeper values are refused with a `ValueProblem`
rather than exhausting Python's recursion limit (a ``RecursionError``) here
or in whatever walks them later."""


def _too_deep() -> ValueProblem:
    return ValueProblem(
        f"is nested more than {MAX_DEPTH} levels deep; flatten it, or send it as JSON text"
    )


def freeze_items(items: Mapping[K, V], _depth: int = 0) -> dict[K, V]:
    """The items of ``items`` as a fresh dict of deep-frozen values, in order."""
    if _depth >= MAX_DEPTH:
        raise _too_deep()
    out: dict[K, V] = {}
    for key, value in items.items():
        try:
            if isinstance(key, str) and not key.isascii() and has_surrogate(key):
                raise ValueProblem(f"the key {surrogate_problem(key)}")
            out[key] = freeze(value, _depth + 1)
        except ValueProblem as problem:
            raise problem.inside(key) from None
    return out


def freeze(value: Any, _depth: int = 0) -> Any:
    """``value`` made deeply immutable and hashable, order kept.

    Mappings become `FrozenDict`, lists and other sequences tuples,
    sets frozensets; strings, numbers, ``None`` and other hashable objects stay
    as they are. A value that is already frozen is returned as it is (the same
    object), so freezing twice costs one walk. Raises `ValueProblem`,
    naming where it is, for a value that cannot be hashed (a ``bytearray``,
    an object with ``__hash__ = None``), a string with a lone surrogate (no
    UTF-8 writer can write it) and a value nested more than
    `MAX_DEPTH` levels deep.
    """
    kind = type(value)
    if kind is str:
        if value.isascii() or not has_surrogate(value):
            return value
        raise ValueProblem(surrogate_problem(value))
    if kind is int or kind is FrozenDict or value is None or kind is bool or kind is float:
        return value
    if isinstance(value, Mapping):
        return FrozenDict._of(freeze_items(value, _depth))
    if (
        kind is tuple
        or kind is list
        or (isinstance(value, Sequence) and not isinstance(value, _TEXT))
    ):
        return _freeze_sequence(value, _depth)
    if isinstance(value, Set):
        items = tuple(value)
        frozen_items = _freeze_sequence(items, _depth)
        if kind is frozenset and frozen_items is items:
            return value
        return frozenset(frozen_items)
    if isinstance(value, str):  # a subclass of str
        if has_surrogate(value):
            raise ValueProblem(surrogate_problem(value))
        return value
    try:
        hash(value)
    except TypeError:
        msg = (
            f"{type(value).__name__} is not hashable; use a JSON value, a tuple or a frozen object"
        )
        raise ValueProblem(msg) from None
    return value


def _freeze_sequence(value: Sequence[Any], depth: int) -> tuple[Any, ...]:
    if depth >= MAX_DEPTH:
        raise _too_deep()
    items = []
    changed = type(value) is not tuple
    for i, item in enumerate(value):
        try:
            frozen = freeze(item, depth + 1)
        except ValueProblem as problem:
            raise problem.inside(i) from None
        changed = changed or frozen is not item
        items.append(frozen)
    return tuple(items) if changed else value  # type: ignore[return-value]


def freeze_json(value: Any, _depth: int = 0) -> Any:
    """A parsed JSON value, deep-frozen like `freeze`, and checked.

    Raises `ValueProblem` naming where it is for what JSON cannot
    carry or UTF-8 cannot encode: ``NaN`` and infinities (``json.dumps``
    would write a bare ``NaN``, which no JSON parser reads), strings or keys
    with a lone surrogate (``"\\ud800"``, which ``json.loads`` returns for the
    escape but no UTF-8 writer can write), keys that are not strings, values
    that are not JSON (sets, bytes, objects), and values nested more than
    `MAX_DEPTH` levels deep.
    """
    kind = type(value)
    if kind is str:
        if not has_surrogate(value):
            return value
        raise ValueProblem(surrogate_problem(value))
    if kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        msg = f"{value!r} is not a JSON number; JSON has no NaN or infinities"
        raise ValueProblem(msg)
    if kind is dict or isinstance(value, Mapping):
        if _depth >= MAX_DEPTH:
            raise _too_deep()
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    msg = f"object keys must be strings, got {type(key).__name__} {key!r}"
                    raise ValueProblem(msg)
                key = str(key)
            try:
                if has_surrogate(key):
                    raise ValueProblem(f"the key {surrogate_problem(key)}")
                out[key] = freeze_json(item, _depth + 1)
            except ValueProblem as problem:
                raise problem.inside(key) from None
        return FrozenDict._of(out)
    if kind is list or kind is tuple:
        if _depth >= MAX_DEPTH:
            raise _too_deep()
        items = []
        for i, item in enumerate(value):
            try:
                items.append(freeze_json(item, _depth + 1))
            except ValueProblem as problem:
                raise problem.inside(i) from None
        return tuple(items)
    if isinstance(value, str):
        return freeze_json(str(value), _depth)
    if isinstance(value, int):
        return freeze_json(int(value), _depth)
    if isinstance(value, float):
        return freeze_json(float(value), _depth)
    if isinstance(value, Sequence) and not isinstance(value, _TEXT):
        return freeze_json(list(value), _depth)
    msg = f"{type(value).__name__} is not a JSON value"
    raise ValueProblem(msg)


def has_surrogate(text: str) -> bool:
    """True when ``text`` holds a lone surrogate (``"\\ud800"``): text that
    no UTF-8 writer can write. ASCII text is answered without a scan."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def surrogate_problem(text: str) -> str:
    """What is wrong with ``text``, for which `has_surrogate` is true."""
    match = _SURROGATE.search(text)
    position = match.start() if match else 0
    return (
        f"has a lone surrogate {text[position]!r} at index {position}, which UTF-8 cannot "
        "encode; send the character itself, or both halves of its surrogate pair"
    )


def thaw(value: Any) -> Any:
    """A frozen value back as fresh plain values: mappings as ``dict`` (same
    key order), sequences as ``list``; anything else as it is."""
    kind = type(value)
    if kind is str or kind is int or value is None or kind is bool or kind is float:
        return value
    if kind is FrozenDict or isinstance(value, Mapping):
        return {key: thaw(item) for key, item in value.items()}
    if (
        kind is tuple
        or kind is list
        or (isinstance(value, Sequence) and not isinstance(value, _TEXT))
    ):
        return [thaw(item) for item in value]
    return value
