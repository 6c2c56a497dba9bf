"""A request that compaction cannot bring within its budget is never sent in
silence: ``over_budget: warn`` (the default) warns, logs and flags the
report, ``raise`` raises :class:`OverBudgetError`, ``send`` is quiet; the
request hook and ``apply_async`` act once per request."""

from __future__ import annotations

import asyncio
import logging
import warnings

import pytest

from memrules import (
    ConfigError,
    MemoryConfig,
    MemoryPlugin,
    MemrulesError,
    MemrulesWarning,
    OverBudgetError,
    OverBudgetWarning,
    Request,
    load_config,
    load_pipeline,
)
from memrules._core.messages import message

# The first system message and the latest user message survive every
# strategy; together they cost far more than 40 tokens.
CONFIG = "{max_tokens: 40, strategies: [{type: sliding_window, keep_messages: 2}]}"
BIG = (message("system", "rules " * 60), message("assistant", "ok"), message("user", "hi " * 60))
SMALL = (message("user", "hi"),)


def test_a_request_that_cannot_fit_is_flagged_in_the_report_and_its_dict() -> None:
    pipeline = load_pipeline(CONFIG + "\n", counter=None)
    with pytest.warns(OverBudgetWarning):
        report = pipeline.apply(BIG).report
    assert report.over_budget
    assert report.to_dict()["over_budget"] is True
    fits = pipeline.apply(SMALL).report
    assert not fits.over_budget
    assert "over_budget" not in fits.to_dict()  # reports that fit read as before


def test_warn_is_the_default_and_says_it_once_with_a_log_record(
    caplog: pytest.LogCaptureFixture,
) -> None:
    pipeline = load_pipeline(CONFIG)
    assert pipeline.config.over_budget == "warn"
    with (
        caplog.at_level(logging.WARNING, logger="memrules"),
        pytest.warns(OverBudgetWarning) as caught,
    ):
        pipeline.apply(BIG)
    assert len(caught) == 1
    assert caught[0].filename == __file__  # points at the caller, not at memrules
    text = str(caught[0].message)
    assert "tokens" in text
    assert "budget of 40" in text
    records = [r for r in caplog.records if r.name == "memrules"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert records[0].memrules["memrules.over_budget"] is True  # type: ignore[attr-defined]
    assert issubclass(OverBudgetWarning, MemrulesWarning)
    assert issubclass(MemrulesWarning, UserWarning)


def test_raise_carries_the_survivors_cost_and_the_budget() -> None:
    pipeline = load_pipeline(CONFIG.replace("{", "{over_budget: raise, ", 1))
    with pytest.raises(OverBudgetError) as caught:
        pipeline.apply(BIG)
    error = caught.value
    assert isinstance(error, MemrulesError)
    assert isinstance(error, ValueError)
    assert error.budget.limit == 40
    assert error.tokens == error.report.tokens_after >= 40
    assert error.messages == 2  # the system message and the latest user message
    pipeline.apply(SMALL)  # a request that fits is sent


def test_send_is_silent_and_the_argument_overrides_the_config() -> None:
    pipeline = load_pipeline(CONFIG)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = pipeline.apply(BIG, over_budget="send")
    assert result.report.over_budget
    with pytest.raises(OverBudgetError):
        pipeline.apply(BIG, over_budget="raise")
    with pytest.raises(ConfigError, match="over_budget='loud' must be one of"):
        pipeline.apply(BIG, over_budget="loud")  # type: ignore[arg-type]


def test_the_config_key_is_checked_at_its_line() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("max_tokens: 40\nover_budget: loud\n")
    assert caught.value.line == 2
    assert "over_budget" in str(caught.value)
    assert "send, warn, raise" in str(caught.value)
    with pytest.raises(ConfigError, match="over_budget"):
        MemoryConfig(over_budget="never")  # type: ignore[arg-type]
    assert load_config("over_budget: send\n").over_budget == "send"


def test_apply_async_warns_once_and_raises_as_apply_does() -> None:
    pipeline = load_pipeline(CONFIG)
    with pytest.warns(OverBudgetWarning) as caught:
        result = asyncio.run(pipeline.apply_async(BIG))
    assert result.report.over_budget
    assert len(caught) == 1
    with pytest.raises(OverBudgetError):
        asyncio.run(pipeline.apply_async(BIG, over_budget="raise"))


def test_the_hook_warns_by_default_and_raises_before_anything_is_written() -> None:
    config = load_config(CONFIG)
    body = {"model": "gpt-4o", "messages": [{"role": m.role, "content": m.text} for m in BIG]}
    plugin = MemoryPlugin(config)
    with pytest.warns(OverBudgetWarning) as caught:
        plugin.on_openai_request(body)
    assert len(caught) == 1
    assert plugin.last_report is not None
    assert plugin.last_report.over_budget

    strict = MemoryPlugin(config, over_budget="raise")
    with pytest.raises(OverBudgetError):
        strict.on_openai_request(body)
    assert strict.last_result is None
    with pytest.raises(OverBudgetError):
        asyncio.run(strict.handle_async(Request(messages=BIG)))
    assert strict.last_result is None

    quiet = MemoryPlugin(config, over_budget="send")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet.on_request(Request(messages=BIG))
    with pytest.raises(ConfigError, match="over_budget"):
        MemoryPlugin(config, over_budget="sometimes")  # type: ignore[arg-type]


def test_the_hook_reads_the_config_key() -> None:
    plugin = MemoryPlugin(load_config(CONFIG.replace("{", "{over_budget: raise, ", 1)))
    with pytest.raises(OverBudgetError):
        plugin.on_request(Request(messages=BIG))
