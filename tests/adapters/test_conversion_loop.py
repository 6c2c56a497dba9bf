"""A caller that keeps its own list of message dicts and converts it every
turn (memrules._adapters.conversion_cache): exact whatever it does to the
list or, by default, to the dicts in it, and reading only the new dicts
when it promises not to edit them in place."""

from __future__ import annotations

import copy
import json
import sys
import threading
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrules import ConversionCache, MessageFormatError, from_anthropic, from_openai
from memrules._adapters import anthropic as anthropic_adapter
from memrules._adapters import openai as openai_adapter
from tests.support.adapter_json import openai_messages


class Watched(dict[str, Any]):
    """A message dict that counts how often it is compared by value."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        Watched.compared += 1
        return dict.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]


def _turns(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for i in range(count):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i}"})
    return out


def test_the_same_dicts_each_turn_read_only_the_new_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = openai_adapter._read_one

    def counting(raw: Any, index: int, state: Any) -> Any:
        reads.append(index)
        return real(raw, index, state)

    monkeypatch.setattr(openai_adapter, "_read_one", counting)
    history = [Watched(m) for m in _turns(150)]
    cache = ConversionCache(edits_in_place=False)
    log: list[Any] = []
    Watched.compared = 0
    for raw in history:
        log.append(raw)
        out = from_openai(log, memo=cache)
    assert Watched.compared == 0  # no earlier dict read again
    assert reads == list(range(len(history)))  # each converted once
    assert out == from_openai(copy.deepcopy(history))


def test_an_earlier_dict_edited_in_place_is_seen_by_default() -> None:
    log = _turns(20)
    cache = ConversionCache()
    from_openai(log, memo=cache)
    log[6]["content"] = "edited"  # a tool result, top level
    log[5]["tool_calls"][0]["function"]["arguments"] = '{"x": 1}'  # nested
    log.append({"role": "user", "content": "next"})
    assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))


def test_a_mapping_subclass_edited_in_place_is_seen_by_default() -> None:
    log: list[Any] = [Watched(m) for m in _turns(5)]
    cache = ConversionCache()
    from_openai(log, memo=cache)
    log[2]["content"] = "edited"
    assert from_openai(log, memo=cache) == from_openai([dict(m) for m in log])
    log[0]["content"] = "edited too"
    assert from_openai(log, memo=cache) == from_openai([dict(m) for m in log])


def test_replacing_inserting_and_truncating_are_seen_without_in_place_edits() -> None:
    log = _turns(10)
    cache = ConversionCache(edits_in_place=False)
    from_openai(log, memo=cache)
    log[3] = {**log[3], "content": "replaced"}
    assert from_openai(log, memo=cache)[3].text == "replaced"
    log.insert(1, {"role": "user", "content": "inserted"})
    assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))
    del log[8:]
    assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))
    log.append({"role": "user", "content": "grown again"})
    assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))
    reparsed = json.loads(json.dumps(log))  # new objects, equal
    assert from_openai(reparsed, memo=cache) == from_openai(copy.deepcopy(log))


def test_a_grown_list_sees_each_kind_of_edit_by_default() -> None:
    """Every turn appends a message, and one earlier message changed the way
    a caller changes it: the list is compared whole with the new items on
    the end of the remembered one, which must still see the change."""
    parts = {"role": "user", "content": [{"type": "text", "text": "a"}]}
    log: list[Any] = [*_turns(6), parts]
    repeated = log[3]
    log.append(repeated)  # the very same dict at two indices
    cache = ConversionCache()
    from_openai(log, memo=cache)
    edits = [
        lambda: parts["content"].append({"type": "text", "text": "b"}),  # a nested list
        lambda: log[3]["tool_calls"][0]["function"].__setitem__("arguments", '{"y": 2}'),
        lambda: repeated["tool_calls"].append(copy.deepcopy(repeated["tool_calls"][0])),
        lambda: log.__setitem__(2, {**log[2], "content": "replaced"}),  # a new dict
        lambda: log.__setitem__(4, copy.deepcopy(log[4])),  # replaced by an equal one
        lambda: log[0].__setitem__("content", "edited first"),
    ]
    for i, edit in enumerate(edits):
        edit()
        log.append({"role": "user", "content": f"turn {i}"})
        assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log)), i


def test_same_objects_grown_with_a_replaced_dict_or_a_bad_one() -> None:
    log = _turns(8)
    cache = ConversionCache(edits_in_place=False)
    from_openai(log, memo=cache)
    log[5] = {**log[5], "content": "replaced"}
    log.append({"role": "user", "content": "next"})
    assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))
    with pytest.raises(MessageFormatError, match=r"messages\[18\]\.role"):
        from_openai([*log, {"role": "robot"}], memo=cache)
    last = cache._last  # the failed request left the remembered list as it was
    assert len(last.raws) == last.length == len(log)
    log.append({"role": "user", "content": "after"})
    assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))


@pytest.mark.parametrize("edits_in_place", [True, False])
def test_threads_sharing_a_cache_get_what_converting_afresh_gives(edits_in_place: bool) -> None:
    """Threads hand prefixes of their own histories (equal but for a few tool
    results), growing and shrinking, to one cache, switching as often as the
    interpreter lets them: whoever appends to the remembered list, every
    answer is the prefix converted afresh."""
    histories = []
    for seed in range(4):
        history = _turns(40)
        for k in range(seed + 2, len(history), 6):
            history[k] = {**history[k], "content": f"thread {seed}"}
        histories.append(history)
    expected = [from_openai(copy.deepcopy(history)) for history in histories]
    wrong: list[int] = []

    def run(seed: int, cache: ConversionCache) -> None:
        history = histories[seed]
        for step in range(60):
            size = 1 + (seed * 31 + step * 17) % len(history) if step % 3 else len(history)
            if from_openai(history[:size], memo=cache) != expected[seed][:size]:
                wrong.append(size)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(10):
            cache = ConversionCache(edits_in_place=edits_in_place)
            threads = [threading.Thread(target=run, args=(seed, cache)) for seed in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []


def test_anthropics_system_prompt_is_read_again_only_when_it_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[Any] = []
    real = anthropic_adapter._read_system

    def counting(system: Any) -> Any:
        reads.append(copy.deepcopy(system))
        return real(system)

    blocks: list[Any] = [{"type": "text", "text": "Be terse."}]
    log: list[Any] = [{"role": "user", "content": "hi"}]
    cache = ConversionCache()

    def turn(system: Any) -> None:
        log.append({"role": "assistant" if len(log) % 2 else "user", "content": "ok"})
        expected = from_anthropic(copy.deepcopy(log), system=copy.deepcopy(system))
        monkeypatch.setattr(anthropic_adapter, "_read_system", counting)
        try:
            assert from_anthropic(log, system=system, memo=cache) == expected
        finally:
            monkeypatch.setattr(anthropic_adapter, "_read_system", real)

    for system in ("Be terse.", "Be terse.", blocks, blocks, "Be brief.", "Be brief."):
        turn(system)
    assert reads == ["Be terse.", blocks, "Be brief."]
    blocks[0]["text"] = "Be terser."  # edited in place: seen
    turn(blocks)
    blocks.append({"type": "text", "text": "Be kind."})
    turn(blocks)
    turn(blocks)
    assert len(reads) == 5
    assert reads[-1] == blocks


OPS = ("grow", "grow", "replace", "insert", "truncate", "rotate", "reparse", "same")


@given(
    st.data(),
    openai_messages(max_size=10),
    openai_messages(max_size=12),
    st.booleans(),
)
def test_a_list_handed_again_converts_as_afresh(
    data: st.DataObject, first: list[Any], extra: list[Any], edits_in_place: bool
) -> None:
    cache = ConversionCache(edits_in_place=edits_in_place)
    log = first
    for _ in range(6):
        assert from_openai(log, memo=cache) == from_openai(copy.deepcopy(log))
        op = data.draw(st.sampled_from(OPS), label="op")
        if op == "grow" and extra:
            log.append(extra.pop())
        elif op == "replace" and log and extra:
            log[data.draw(st.integers(0, len(log) - 1), label="at")] = extra.pop()
        elif op == "insert" and extra:
            log.insert(data.draw(st.integers(0, len(log)), label="at"), extra.pop())
        elif op == "truncate":
            del log[data.draw(st.integers(0, len(log)), label="keep") :]
        elif op == "rotate" and log:
            del log[: data.draw(st.integers(1, len(log)), label="drop")]
        elif op == "reparse":
            log = json.loads(json.dumps(log))
        if edits_in_place and log and data.draw(st.booleans(), label="edit"):
            at = data.draw(st.integers(0, len(log) - 1), label="edited")
            if log[at].get("role") != "function" and isinstance(log[at].get("content"), str):
                log[at]["content"] += " (edited)"


def test_the_option_is_checked_and_shown() -> None:
    with pytest.raises(ValueError, match="edits_in_place=1"):
        ConversionCache(edits_in_place=1)  # type: ignore[arg-type]
    assert repr(ConversionCache(8, edits_in_place=False)) == (
        "ConversionCache(size=8, edits_in_place=False)"
    )
    cache = ConversionCache(edits_in_place=False)
    log = [{"role": "user", "content": "hi"}]
    assert from_anthropic(log, memo=cache) == from_anthropic(copy.deepcopy(log))
