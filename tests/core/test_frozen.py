"""FrozenDict and the freezing functions: immutable, hashable, order kept."""

from __future__ import annotations

import copy
import json
import pickle
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyrsistent import pmap

from memrules._core.errors import MemrulesError, MessageTypeError
from memrules._core.frozen import FrozenDict, ValueProblem, freeze, freeze_json, thaw
from tests.support.adapter_json import json_values, reordered

objects = st.dictionaries(st.text(max_size=4), json_values(), max_size=6)
# Objects of objects and scalars: no arrays, which freeze to tuples (unequal to lists).
nested_objects = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=10,
).filter(lambda value: isinstance(value, dict))


@given(json_values(max_leaves=12))
def test_freeze_then_thaw_gives_the_same_json_bytes(value: Any) -> None:
    frozen = freeze(value)
    hash(frozen)
    assert json.dumps(thaw(frozen)) == json.dumps(value)
    assert json.dumps(thaw(freeze_json(value))) == json.dumps(value)


@given(objects, st.randoms(use_true_random=False))
def test_equal_and_hash_alike_whatever_the_order(value: dict[str, Any], rng: random.Random) -> None:
    other = reordered(value, rng)
    a, b = freeze(value), freeze(other)
    assert isinstance(a, FrozenDict)
    assert list(a) == list(value)
    assert list(b) == list(other)
    assert a == b
    assert hash(a) == hash(b)
    assert thaw(a) == other
    # Consistent with pyrsistent, which metadata still uses at the top level.
    as_pmap = pmap(a)
    assert a == as_pmap
    assert as_pmap == a
    assert hash(a) == hash(as_pmap)


@given(nested_objects, st.randoms(use_true_random=False))
def test_equal_to_plain_mappings_with_equal_items(
    value: dict[str, Any], rng: random.Random
) -> None:
    other = reordered(value, rng)
    frozen = freeze(value)
    assert frozen == value
    assert frozen == other
    assert other == frozen  # dict.__eq__ defers to the mapping
    assert frozen == pmap(other)


def test_arrays_freeze_to_tuples() -> None:
    frozen = freeze({"a": [1, 2]})
    assert frozen == {"a": (1, 2)}
    assert frozen != {"a": [1, 2]}
    assert thaw(frozen) == {"a": [1, 2]}


@given(objects, objects)
def test_unequal_items_are_unequal(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert (freeze(a) == freeze(b)) == (a == b)
    assert (freeze(a) != freeze(b)) == (a != b)


def test_keeps_insertion_order_in_iteration_repr_and_thaw() -> None:
    value = {
        "type": "image_url",
        "image_url": {"url": "u", "detail": "low"},
        "a": [{"z": 1, "y": 2}],
    }
    frozen = FrozenDict(value)
    assert list(frozen) == ["type", "image_url", "a"]
    assert list(frozen.keys()) == ["type", "image_url", "a"]
    assert [k for k, _ in frozen.items()] == ["type", "image_url", "a"]
    assert repr(frozen).startswith("FrozenDict({'type': 'image_url', 'image_url': FrozenDict(")
    assert json.dumps(thaw(frozen)) == json.dumps(value)
    assert frozen["a"] == (FrozenDict({"z": 1, "y": 2}),)


def test_cannot_be_changed() -> None:
    frozen = FrozenDict({"a": 1})
    with pytest.raises(TypeError):
        frozen["a"] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        frozen._items = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del frozen._items
    with pytest.raises(AttributeError):
        frozen.update({"b": 2})  # type: ignore[attr-defined]
    assert frozen == {"a": 1}


def test_the_constructor_freezes_and_the_input_can_change_afterwards() -> None:
    source: dict[str, Any] = {"a": [1, {"b": 2}]}
    frozen = FrozenDict(source)
    source["a"][1]["b"] = 3
    source["c"] = 4
    assert frozen == {"a": (1, {"b": 2})}
    assert thaw(frozen) == {"a": [1, {"b": 2}]}


def test_thaw_returns_fresh_values() -> None:
    frozen = freeze({"a": [1, {"b": 2}]})
    out = thaw(frozen)
    out["a"][1]["b"] = 3
    assert thaw(frozen) == {"a": [1, {"b": 2}]}


def test_pickle_and_copy() -> None:
    frozen = freeze({"b": [1, {"d": 2, "c": 3}], "a": None})
    loaded = pickle.loads(pickle.dumps(frozen))
    assert loaded == frozen
    assert list(loaded) == ["b", "a"]
    assert list(loaded["b"][1]) == ["d", "c"]
    assert copy.copy(frozen) is frozen
    assert copy.deepcopy(frozen) is frozen


def test_freezing_what_is_frozen_returns_it() -> None:
    frozen = freeze({"a": ({"b": 1},), "c": frozenset({1})})
    assert freeze(frozen) is frozen
    nested = (1, frozen, "x")
    assert freeze(nested) is nested


def test_freeze_goes_into_tuples_lists_and_sets() -> None:
    frozen = freeze({"k": ({"a": 1},), "s": {1, 2}, "l": [[{"x": [1]}]]})
    hash(frozen)
    assert frozen["k"] == (FrozenDict({"a": 1}),)
    assert frozen["s"] == frozenset({1, 2})
    assert frozen["l"] == ((FrozenDict({"x": (1,)}),),)


def test_what_cannot_be_hashed_is_refused_naming_the_place() -> None:
    with pytest.raises(ValueProblem) as caught:
        freeze({"k": [1, {"x y": bytearray(b"a")}]})
    assert caught.value.where("metadata") == "metadata.k[1]['x y']"
    assert "bytearray is not hashable" in caught.value.problem
    with pytest.raises(MessageTypeError, match=r"^a\[0\]: bytearray is not hashable") as error:
        FrozenDict({"a": [bytearray()]})
    assert isinstance(error.value, MemrulesError)
    assert isinstance(error.value, TypeError)


@pytest.mark.parametrize(
    ("value", "where", "problem"),
    [
        ({"a": float("nan")}, "x.a", "nan is not a JSON number"),
        ([1, {"b": float("inf")}], "x[1].b", "inf is not a JSON number"),
        ({"a": [float("-inf")]}, "x.a[0]", "-inf is not a JSON number"),
        ({"a": "ok \ud800"}, "x.a", "lone surrogate '\\ud800' at index 3"),
        ({"b\udfff": 1}, "x['b\\udfff']", "the key has a lone surrogate"),
        ({1: "a"}, "x", "object keys must be strings, got int 1"),
        ({"s": {1}}, "x.s", "set is not a JSON value"),
        ({"b": b"x"}, "x.b", "bytes is not a JSON value"),
        ({"o": object()}, "x.o", "object is not a JSON value"),
    ],
)
def test_freeze_json_refuses_what_json_cannot_carry(value: Any, where: str, problem: str) -> None:
    with pytest.raises(ValueProblem) as caught:
        freeze_json(value)
    assert caught.value.where("x") == where
    assert problem in caught.value.problem


def test_freeze_json_takes_surrogate_pairs_and_other_scripts() -> None:
    value = {"emoji": "\U0001f600", "cjk": "漢字", "pair": json.loads('"\\ud83d\\ude00"')}
    assert thaw(freeze_json(value)) == value
