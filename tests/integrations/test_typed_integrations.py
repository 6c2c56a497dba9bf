"""The integrations type-check against the installed frameworks' own types:
``mypy --strict`` over scripts that use them as their docs show."""

from __future__ import annotations

from pathlib import Path

import pytest

TYPED = Path(__file__).parent / "typed"


@pytest.mark.slow  # mypy over the framework's package: about 40 s
@pytest.mark.parametrize(
    ("script", "framework"),
    [("agents_session.py", "agents")],
)
def test_the_documented_use_type_checks(script: str, framework: str) -> None:
    pytest.importorskip(framework, reason=f"needs the {framework} extra")
    mypy_api = pytest.importorskip("mypy.api")
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--follow-imports=silent", str(TYPED / script)]
    )
    assert status == 0, out + err
