"""The seam log: what the recorder keeps, and how the replayer answers and fails."""

from __future__ import annotations

import contextlib

import pytest

from memrules._core.errors import ReplayMismatch, StoreError, StrategyError
from memrules.seams._log import (
    RecordingLog,
    ReplayedError,
    ReplayingLog,
    active_log,
    rebuilt_error,
    seam_call,
)


def _echo(text: str, calls: list[str]) -> str:
    def send() -> str:
        calls.append(text)
        return text.upper()

    return seam_call(
        "summarizer",
        "summarize",
        lambda: {"text": text},
        send,
        answer=lambda t: {"text": t},
        rebuild=lambda data: data["text"],
    )


def test_without_a_log_the_call_is_made_and_nothing_is_kept() -> None:
    made: list[str] = []
    assert active_log() is None
    assert _echo("hi", made) == "HI"
    assert made == ["hi"]


def test_the_recorder_keeps_request_answer_and_nesting_in_start_order() -> None:
    log = RecordingLog()
    made: list[str] = []

    def outer() -> str:
        seam_call("embedder", "embed", lambda: {"texts": ["a"]}, lambda: [[1.0]], answer=len)
        return "stored"

    with log.active():
        seam_call("store", "add", lambda: {"ids": ("x",)}, outer, answer=lambda r: {"r": r})
        _echo("hi", made)
    assert active_log() is None
    assert log.calls == [
        {"seam": "store", "operation": "add", "request": {"ids": ["x"]},
         "response": {"r": "stored"}, "error": None},
        {"seam": "embedder", "operation": "embed", "depth": 1, "request": {"texts": ["a"]},
         "response": 1, "error": None},
        {"seam": "summarizer", "operation": "summarize", "request": {"text": "hi"},
         "response": {"text": "HI"}, "error": None},
    ]  # fmt: skip


def test_the_recorder_keeps_the_error_and_lets_it_through() -> None:
    log = RecordingLog()

    def fail() -> None:
        msg = "the collection is gone"
        raise StoreError(msg)

    with log.active(), pytest.raises(StoreError):
        seam_call("store", "search", lambda: {"q": 1}, fail, answer=str)
    assert log.calls[0]["error"] == "StoreError: the collection is gone"
    assert log.calls[0]["response"] is None


def test_the_replayer_answers_without_calling_and_copies_nested_calls() -> None:
    recording = RecordingLog()
    made: list[str] = []
    with recording.active():
        _echo("one", made)
        _echo("two", made)
    replaying = ReplayingLog(recording.calls, request=3)
    with replaying.active():
        assert _echo("one", made) == "ONE"
        assert _echo("two", made) == "TWO"
    assert made == ["one", "two"]  # nothing called again
    assert replaying.finish() is None
    assert replaying.calls == recording.calls


def test_a_recorded_error_is_raised_again_with_its_type_and_message() -> None:
    calls = [
        {"seam": "store", "operation": "add", "request": {}, "response": None,
         "error": "StoreError: milvus failed: disk full"},
    ]  # fmt: skip
    log = ReplayingLog(calls)
    with log.active(), pytest.raises(StoreError) as caught:
        seam_call("store", "add", dict, lambda: None, answer=str, rebuild=str)
    assert type(caught.value).__name__ == "StoreError"
    assert f"{type(caught.value).__name__}: {caught.value}" == calls[0]["error"]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("KeyError: 'x'", KeyError),
        ("StrategyError: offload failed", StrategyError),
        ("TimeoutError: timed out", TimeoutError),
        ("CustomSeamError: boom: twice", ReplayedError),
    ],
)
def test_rebuilt_errors_keep_name_and_message(text: str, kind: type[BaseException]) -> None:
    error = rebuilt_error(text)
    assert isinstance(error, kind)
    assert f"{type(error).__name__}: {error}" == text


def test_a_call_without_an_answer_fails_loudly_even_when_caught() -> None:
    log = ReplayingLog([], request=7)
    made: list[str] = []
    with log.active(), contextlib.suppress(Exception):
        _echo("unrecorded", made)  # a strategy catches every seam failure and goes on
    assert made == []
    failure = log.finish()
    assert isinstance(failure, ReplayMismatch)
    assert failure.request == 7
    assert "the run calls summarizer.summarize, and the trace has no answer" in str(failure)


def test_a_request_that_differs_names_where() -> None:
    recording = RecordingLog()
    with recording.active():
        _echo("the vault is in Lisbon", [])
    log = ReplayingLog(recording.calls)
    with log.active(), pytest.raises(ReplayMismatch) as caught:
        _echo("the vault is in Lisbom", [])
    assert caught.value.path == "calls[0].request"
    assert 'calls[0].request.text: recorded "the vault is in Lisbon"' in str(caught.value)
    assert "first difference at character 21" in str(caught.value)


def test_another_call_than_recorded_and_calls_never_made_are_failures() -> None:
    recording = RecordingLog()
    with recording.active():
        _echo("a", [])
        _echo("b", [])
    other = ReplayingLog(recording.calls)
    with other.active(), pytest.raises(ReplayMismatch, match=r"store\.add where the trace"):
        seam_call("store", "add", dict, lambda: None, answer=str, rebuild=str)
    fewer = ReplayingLog(recording.calls)
    with fewer.active():
        _echo("a", [])
    failure = fewer.finish()
    assert failure is not None
    assert "recorded 1 more calls, from summarizer.summarize on" in str(failure)


def test_an_unreadable_recorded_answer_is_a_mismatch() -> None:
    calls = [
        {"seam": "summarizer", "operation": "summarize", "request": {"text": "x"},
         "response": {"no text": True}, "error": None},
    ]  # fmt: skip
    log = ReplayingLog(calls)
    with log.active(), pytest.raises(ReplayMismatch, match="cannot be read"):
        _echo("x", [])


def test_a_nested_call_is_not_answered_on_its_own() -> None:
    calls = [
        {"seam": "embedder", "operation": "embed", "request": {"texts": []}, "response": {},
         "error": None},
    ]  # fmt: skip
    log = ReplayingLog(calls)
    with log.active(), pytest.raises(ReplayMismatch, match="answered only inside"):
        seam_call("embedder", "embed", lambda: {"texts": []}, list, answer=len)
