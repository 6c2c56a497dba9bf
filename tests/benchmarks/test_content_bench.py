"""The content benchmark's claims at a small size: every request the policy
sends is under the budget by the provider's rule, and the old count
undercounts what the provider bills."""

from __future__ import annotations

import pytest

pytest.importorskip("PIL")

from benchmarks.content.run import run


@pytest.mark.parametrize("style", ["openai", "anthropic"])
def test_every_request_is_under_the_budget_by_the_providers_rule(
    style: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(style, 10, 6000)
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert ", 0 sent over budget" in summary
    assert "0 requests over budget that the old count called under" not in summary
