"""What ``clear_tool_results`` and ``clamp_oversized_messages`` keep: a stub
that names the tool, the size and a preview; the latest error's tail; the
work in progress (the latest tool exchanges or turns); the first messages.

The peers' scenarios (LangChain's ClearToolUsesEdit, Anthropic's
``clear_tool_uses``, OpenHands' ``keep_first``) written as plain
conversations, with the expected text spelled out here."""

from __future__ import annotations

import json

import pytest

from memrules._core.budget import Budget
from memrules._core.errors import ConfigError
from memrules._core.messages import Conversation, Message, Text, ToolCall, ToolResult, part_text
from memrules._engine.contract import StrategyContext
from memrules.strategies import clamp_oversized_messages, clear_tool_results
from tests.support.strategies import COUNTER, check_strategy, unwrap

CTX = StrategyContext(counter=COUNTER)

TRACEBACK = "\n".join(
    [
        "============================= FAILURES =============================",
        *(f"tests/test_io.py:{k}: in test_case_{k}\n    assert read(x) == y" for k in range(60)),
        "Traceback (most recent call last):",
        '  File "astropy/io/ascii/html.py", line 412, in write',
        "    col.info.iter_str_vals()",
        "ValueError: formats ignored for column 'a' in HTML writer",
        "=========== 1 failed, 59 passed in 3.21s ===========",
    ]
)
LAST_ERROR_LINE = "ValueError: formats ignored for column 'a' in HTML writer"


def listing(k: int) -> str:
    return "\n".join(f"src/pkg/module_{k}_{j}.py: def handler_{j}(request): ..." for j in range(40))


def call(cid: str, name: str, **arguments: str) -> Message:
    return Message(
        role="assistant",
        parts=(ToolCall(id=cid, name=name, arguments=json.dumps(arguments)),),
    )


def result(cid: str, content: str, *, is_error: bool = False) -> Message:
    part = ToolResult(call_id=cid, content=content, is_error=is_error)
    return Message(role="tool", parts=(part,))


def agent_loop(outputs: list[tuple[str, str]]) -> Conversation:
    """A system prompt, the task, then one tool round per (tool, output)."""
    out = [
        Message(role="system", parts=(Text(text="You are a coding agent."),)),
        Message(role="user", parts=(Text(text="Fix the HTML writer's formats."),)),
    ]
    for k, (tool, output) in enumerate(outputs):
        out += [call(f"c{k}", tool, command=f"step {k}"), result(f"c{k}", output)]
    return tuple(out)


def content(conversation: Conversation, index: int) -> str:
    (part,) = conversation[index].parts
    return part_text(part)


# --- the stub ----------------------------------------------------------------------


def test_a_cleared_result_names_the_tool_and_the_size_and_shows_head_and_tail() -> None:
    text = listing(0)
    conversation = agent_loop([("find_files", text), ("bash", listing(1)), ("bash", listing(2))])
    out = unwrap(clear_tool_results(keep_pairs=1)(conversation, CTX))
    stub = content(out, 3)
    tokens = COUNTER.count_text(text)
    assert stub == (
        f"[memrules: find_files result cleared to save context ({tokens} tokens); "
        f"head and tail:]\n{text[:100]}\n[…]\n{text[-100:]}"
    )
    assert COUNTER.count_text(stub) < tokens
    assert content(out, 5).startswith("[memrules: bash result cleared")
    assert out[7] is conversation[7]  # the newest pair


def test_preview_chars_zero_leaves_a_one_line_stub() -> None:
    text = listing(0)
    conversation = agent_loop([("grep", text), ("bash", listing(1))])
    out = unwrap(clear_tool_results(keep_pairs=1, preview_chars=0)(conversation, CTX))
    tokens = COUNTER.count_text(text)
    assert content(out, 3) == f"[memrules: grep result cleared to save context ({tokens} tokens)]"


def test_a_cleared_result_sent_back_is_not_cleared_again() -> None:
    """A harness that sends back the last request's messages: the stubs
    stay as they are (a stub of a stub would count the stub)."""
    outputs = [("bash", listing(k) + "\n" + listing(k + 1)) for k in range(4)]
    strategy = clear_tool_results(keep_pairs=1)
    once = unwrap(strategy(agent_loop(outputs), CTX))
    assert unwrap(strategy(once, CTX)) is once
    grown = (*once, call("c9", "bash"), result("c9", listing(9)))
    again = unwrap(strategy(grown, CTX))
    assert [again[i] is grown[i] for i in (3, 5, 7)] == [True, True, True]
    assert again[9] is not grown[9]  # the newest before c9: cleared now


def test_a_result_shorter_than_its_stub_stays() -> None:
    conversation = agent_loop([("bash", "ok\n" * 60), ("bash", listing(1)), ("bash", listing(2))])
    out = unwrap(clear_tool_results(keep_pairs=1)(conversation, CTX))
    assert out[3] is conversation[3]  # 180 characters: the 200-character preview is longer
    assert out[5] is not conversation[5]


# --- the latest error --------------------------------------------------------------


def test_the_last_errors_tail_survives_clearing() -> None:
    conversation = agent_loop(
        [("bash", listing(0)), ("run_tests", TRACEBACK), ("bash", listing(1)), ("bash", listing(2))]
    )
    out = unwrap(clear_tool_results(keep_pairs=1)(conversation, CTX))
    assert content(out, 3).startswith("[memrules: bash result cleared")
    error = content(out, 5)
    assert error.startswith("[memrules: run_tests result cleared")
    assert error.endswith(TRACEBACK[-2000:])
    assert LAST_ERROR_LINE in error
    assert len(content(out, 7)) < 300  # an ordinary result keeps 200 characters


def test_an_older_error_is_an_ordinary_result() -> None:
    """Only the latest error keeps the long tail."""
    older = TRACEBACK.replace("ValueError", "KeyError")
    conversation = agent_loop(
        [("run_tests", older), ("run_tests", TRACEBACK), ("bash", listing(1)), ("bash", listing(2))]
    )
    out = unwrap(clear_tool_results(keep_pairs=1)(conversation, CTX))
    assert len(content(out, 3)) < 300
    assert LAST_ERROR_LINE in content(out, 5)


@pytest.mark.parametrize(
    "output",
    [
        "<returncode>1</returncode>\n<output>\n" + listing(3) + "\n</output>",
        listing(3) + "\nerror: could not compile `parser` due to previous error",
        listing(3) + "\nProcess exited with code 2",
        listing(3) + "\nFAILED tests/test_io.py::test_html - AssertionError",
    ],
    ids=["returncode", "error:", "exit code", "FAILED"],
)
def test_what_reads_as_an_error(output: str) -> None:
    conversation = agent_loop([("bash", output), ("bash", listing(1)), ("bash", listing(2))])
    out = unwrap(clear_tool_results(keep_pairs=1)(conversation, CTX))
    assert content(out, 3).endswith(output[-1000:])


def test_is_error_and_error_pattern_mark_an_error() -> None:
    marked = agent_loop([("bash", listing(0)), ("bash", listing(1)), ("bash", listing(2))])
    marked = (*marked[:4], result("c1", listing(1), is_error=True), *marked[5:])
    out = unwrap(clear_tool_results(keep_pairs=1)(marked, CTX))
    assert content(out, 5).endswith(listing(1)[-1000:])
    assert len(content(out, 3)) < 300
    custom = agent_loop([("bash", listing(0) + "\nDENIED"), ("bash", listing(1))])
    plain = unwrap(clear_tool_results(keep_pairs=1)(custom, CTX))
    assert not content(plain, 3).endswith("DENIED\n" + listing(0)[-500:])
    ruled = unwrap(clear_tool_results(keep_pairs=1, error_pattern="^DENIED$")(custom, CTX))
    assert content(ruled, 3).endswith(listing(0)[-1000:] + "\nDENIED")


def test_code_that_mentions_an_error_is_not_an_error() -> None:
    source = "\n".join(
        f"    try:\n        parse({k})\n    except ValueError: pass  # error: {k}"
        for k in range(40)
    )
    conversation = agent_loop([("read_file", source), ("bash", listing(1)), ("bash", listing(2))])
    out = unwrap(clear_tool_results(keep_pairs=1)(conversation, CTX))
    assert len(content(out, 3)) < 300


# --- the work in progress ------------------------------------------------------------


def test_clamp_leaves_a_big_tool_output_of_the_current_turn_whole() -> None:
    """The peers protect the latest turns: the output the model is about to
    read is not cut, however big; an older one is."""
    big = listing(0) * 20
    conversation = agent_loop([("bash", big), ("bash", big)])
    out = clamp_oversized_messages(max_part_tokens=256)(conversation, CTX)
    assert out[5] is conversation[5]
    assert COUNTER.count_text(content(out, 3)) <= 256
    everything = clamp_oversized_messages(max_part_tokens=256, recent_turns=0)(conversation, CTX)
    assert COUNTER.count_text(content(everything, 5)) <= 256


def test_clamp_cuts_the_current_output_when_it_alone_reaches_the_budget() -> None:
    """Whole, a huge fresh output would crowd out everything else: under a
    token budget it reaches with the survivors, it is clamped too."""
    big = listing(0) * 20
    conversation = agent_loop([("bash", "done"), ("bash", big)])
    strategy = clamp_oversized_messages(max_part_tokens=256)
    size = COUNTER.count_text(big)
    roomy = StrategyContext(counter=COUNTER, budget=Budget.tokens(size * 2))
    assert strategy(conversation, roomy) is conversation
    tight = StrategyContext(counter=COUNTER, budget=Budget.tokens(size // 2))
    out = strategy(conversation, tight)
    assert COUNTER.count_text(content(out, 5)) <= 256
    check_strategy(strategy, conversation, tight)


def test_the_clamp_marker_names_the_tool_and_both_sizes() -> None:
    big = listing(0) * 20
    conversation = agent_loop([("bash", big), ("bash", "done")])
    out = clamp_oversized_messages(max_part_tokens=256)(conversation, CTX)
    total = COUNTER.count_text(big)
    clamped = content(out, 3)
    assert f" of {total} tokens of this bash result]\n" in clamped
    assert clamped.startswith(big[:50])
    assert clamped.endswith(big[-50:])


def test_clamp_keeps_the_last_errors_tail_longer() -> None:
    error = listing(0) * 5 + "\n" + TRACEBACK
    conversation = agent_loop([("run_tests", error), ("bash", listing(1) * 5), ("bash", "ok")])
    out = clamp_oversized_messages(max_part_tokens=600)(conversation, CTX)
    failed, other = content(out, 3), content(out, 5)
    assert LAST_ERROR_LINE in failed
    back = failed.partition(" result]\n")[2]
    front = failed.partition("\n[memrules: clamped")[0]
    assert len(back) > 3 * len(front)
    head, _, tail = other.partition("\n[memrules: clamped")
    assert abs(len(head) - len(tail.partition("]\n")[2])) < 20  # an ordinary split is even


def test_clear_leaves_the_latest_exchanges_whole() -> None:
    outputs = [("bash", listing(k)) for k in range(4)]
    conversation = agent_loop(outputs)
    one = unwrap(clear_tool_results(keep_pairs=0)(conversation, CTX))
    assert [one[i] is conversation[i] for i in (3, 5, 7, 9)] == [False, False, False, True]
    two = unwrap(clear_tool_results(keep_pairs=0, recent_turns=2)(conversation, CTX))
    assert [two[i] is conversation[i] for i in (3, 5, 7, 9)] == [False, False, True, True]
    none = unwrap(clear_tool_results(keep_pairs=0, recent_turns=0)(conversation, CTX))
    assert all(none[i] is not conversation[i] for i in (3, 5, 7, 9))


def test_recent_units_are_exchanges_of_the_latest_turn_then_whole_turns() -> None:
    from memrules.strategies._keep import recent_start

    def user(text: str) -> Message:
        return Message(role="user", parts=(Text(text=text),))

    def said(text: str) -> Message:
        return Message(role="assistant", parts=(Text(text=text),))

    chat = (
        Message(role="system", parts=(Text(text="sys"),)),
        user("first"),  # 1: turn one
        call("a", "bash"),
        result("a", "x"),
        said("done"),
        user("second"),  # 5: turn two, the latest
        call("b", "bash"),  # 6: its first exchange (with the question)
        result("b", "y"),
        call("c", "bash"),  # 8: its second
        result("c", "z"),
    )
    assert [recent_start(chat, n) for n in range(5)] == [10, 8, 5, 1, 1]
    asked = (*chat, user("third"))  # a turn with no answer yet is one unit
    assert [recent_start(asked, n) for n in range(4)] == [11, 10, 5, 1]


# --- the first messages --------------------------------------------------------------


def test_keep_first_keeps_the_first_messages() -> None:
    outputs = [("bash", listing(k)) for k in range(5)]
    conversation = agent_loop(outputs)
    out = unwrap(clear_tool_results(keep_pairs=1, keep_first=3)(conversation, CTX))
    # Non-system messages 1, 2, 3: the task, the first call and its result.
    assert out[3] is conversation[3]
    assert out[5] is not conversation[5]
    big = listing(0) * 20
    clamped = clamp_oversized_messages(max_part_tokens=256, keep_first=3, recent_turns=0)
    looped = agent_loop([("bash", big), ("bash", big)])
    kept = clamped(looped, CTX)
    assert kept[3] is looped[3]
    assert kept[5] is not looped[5]


# --- settings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("factory", "params", "named"),
    [
        (clear_tool_results, {"preview_chars": -1}, "preview_chars=-1"),
        (clear_tool_results, {"recent_turns": -1}, "recent_turns=-1"),
        (clear_tool_results, {"keep_first": -2}, "keep_first=-2"),
        (clear_tool_results, {"error_tail_chars": -1}, "error_tail_chars=-1"),
        (clear_tool_results, {"error_pattern": "(unclosed"}, "error_pattern='(unclosed'"),
        (clamp_oversized_messages, {"recent_turns": -1}, "recent_turns=-1"),
        (clamp_oversized_messages, {"keep_first": -1}, "keep_first=-1"),
        (clamp_oversized_messages, {"error_pattern": "[z-a]"}, "error_pattern='[z-a]'"),
    ],
)
def test_bad_settings_raise_a_config_error_naming_them(
    factory: object, params: dict[str, object], named: str
) -> None:
    with pytest.raises(ConfigError, match=named.replace("(", r"\(").replace("[", r"\[")):
        factory(**params)  # type: ignore[operator]


def test_the_repr_reads_like_the_yaml() -> None:
    assert repr(clear_tool_results(error_pattern="DENIED")) == (
        "clear_tool_results(keep_pairs=3, clear_at_least=0, exclude_tools=(), "
        "clear_tool_inputs=False, preview_chars=200, recent_turns=1, keep_first=0, "
        "error_tail_chars=2000, error_pattern='DENIED')"
    )
    assert repr(clamp_oversized_messages()) == (
        "clamp_oversized_messages(max_part_tokens=4096, recent_turns=1, keep_first=0, "
        "error_tail_chars=2000)"
    )


def test_the_new_rules_keep_the_contract() -> None:
    conversation = agent_loop(
        [("bash", listing(0) * 5), ("run_tests", TRACEBACK), ("bash", listing(1) * 5)]
    )
    for strategy in (
        clear_tool_results(keep_pairs=0, keep_first=2),
        clear_tool_results(keep_pairs=1, preview_chars=0, recent_turns=0, error_tail_chars=0),
        clamp_oversized_messages(max_part_tokens=64, recent_turns=2),
    ):
        check_strategy(strategy, conversation, CTX)
