"""Suite-wide setup: the hypothesis profile, and a shared token counter.

The profile is ``ci`` (derandomized, reproducible) unless the environment
variable ``HYPOTHESIS_PROFILE`` names another (``dev`` runs 1000 examples).
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import settings

from memrules._counting.named import counter_for
from memrules._counting.tokens import TiktokenCounter
from memrules.testing import register_profiles

register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def cl100k() -> TiktokenCounter:
    """The shared cl100k_base counter (session-scoped, so hypothesis tests may use it)."""
    counter = counter_for("cl100k_base")
    assert isinstance(counter, TiktokenCounter)
    return counter


@pytest.fixture(scope="session")
def local_embedder():  # type: ignore[no-untyped-def]
    """The real local embedder (all-MiniLM-L6-v2, int8 ONNX), loaded once per
    session; the test is skipped when the local-embed extra is missing."""
    from memrules.seams import local_embedder as make
    from memrules.seams.embedders import local_embedder_missing

    missing = local_embedder_missing()
    if missing:
        pytest.skip(
            f"needs the local-embed extra ({', '.join(missing)} missing): "
            "pip install -e '.[local-embed]'"
        )
    embedder = make()
    embedder.load()  # type: ignore[attr-defined]
    return embedder


# A test that needs an optional part skips without it, naming the extra.
# Most say so themselves (importorskip); this catches the rest: a failure
# whose text is memrules' own "pip install 'memrules[<extra>]'" error
# becomes a skip, but only when that extra's packages are really missing
# (with them installed it stays a failure).

_EXTRA = re.compile(r"pip install '?memrules\[([\w-]+)\]")
_PROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text("utf-8"))


def _missing_extra(text: str) -> str | None:
    """The first extra ``text`` asks for whose packages are not all installed."""
    extras = _PROJECT["project"]["optional-dependencies"]
    for extra in _EXTRA.findall(text):
        for requirement in extras.get(extra, ()):
            name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
            try:
                metadata.version(name)
            except metadata.PackageNotFoundError:
                return extra
    return None


def _as_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    if report.failed:
        extra = _missing_extra(str(report.longrepr))
        if extra is not None:
            report.outcome = "skipped"
            where = str(report.fspath)
            report.longrepr = (where, 0, f"needs the {extra} extra: pip install -e '.[{extra}]'")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    _as_skip(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):  # type: ignore[no-untyped-def]
    outcome = yield
    _as_skip(outcome.get_result())
