"""What the docs pages and the README promise beyond running: the README is
short, the property test the strategies guide shows catches broken
strategies, the figures shown are the code's, and the words are the users'."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import Phase, settings

from tests.docs.blocks import PAGES, ROOT, page_blocks

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _python(page: str) -> list[str]:
    return [b.code for b in page_blocks(page) if b.language == "python"]


def test_the_readme_is_short_and_has_the_set_up_the_main_job_and_the_tests() -> None:
    assert len(README.splitlines()) <= 150
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[test]'" in README
    assert ".venv/bin/memrules compact --config configs/tiny_budget.yaml" in README
    assert ".venv/bin/python -m pytest -q" in README
    # The suite's duration on two idle cores: .ci/run's clean-clone run
    # (7 min 31 s in the last, one pytest-xdist worker a core).
    assert "about 8 minutes on two idle cores" in README
    assert "Twenty-two slow tests are left out by default" in README  # pytest --co -m slow
    assert ".venv/bin/python -m pytest -q -m slow" in README
    for link in re.findall(r"\]\(((?:docs/)[^)#]+)", README):
        assert (ROOT / link).is_file(), link


def test_the_readme_shows_a_users_install_per_extra_apart_from_the_contributors() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for_contributors = {"test", "test-integrations", "docs", "bench", "async"}
    extras = set(project["optional-dependencies"]) - for_contributors
    install, contribute = README.split("## Contribute", 1)
    assert "pip install memrules " in install
    assert "pip install -e" not in install
    assert "pip install -e '.[test]'" in contribute
    table = re.findall(r"^\| (`[^|]+`) \|", install, flags=re.MULTILINE)
    listed = {name for cell in table for name in re.findall(r"`([\w-]+)`", cell)}
    assert listed == extras


def test_every_page_in_the_nav_exists_and_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s+([\w/.-]+\.md)\s*$", nav, flags=re.MULTILINE))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert listed == pages
    for name in ("guide/cache.md", "guide/content.md", "guide/stores.md", "guide/recall.md",
                 "guide/evaluation.md"):  # fmt: skip
        assert name in listed


# --- the property test of the strategies guide catches broken strategies -------------

STRATEGIES_PAGE = "docs/guide/strategies.md"


def _property_test(code: str) -> Callable[[], None]:
    """The guide's property test, its strategy swapped for ``code``'s, without
    the call at its end."""
    namespace: dict[str, object] = {"__name__": "docs_strategy"}
    call = "\ntest_drop_long_observations_keeps_the_contract()\n"
    assert call in code
    exec(compile(code.replace(call, "\n"), "<docs>", "exec"), namespace)
    test = namespace["test_drop_long_observations_keeps_the_contract"]
    assert callable(test)
    return test  # type: ignore[return-value]


def _the_property_test() -> str:
    (code,) = [c for c in _python(STRATEGIES_PAGE) if "@given" in c]
    return code


BROKEN = {
    # Drops the first system message when it is long: invariant 1.
    "drops the first system message": (
        "i in survivors or ",
        "(i in survivors and m.role != 'system') or ",
        "removed or altered the first system message",
    ),
    # Returns a new tuple when it changed nothing: `new is old` no longer tells a no-op.
    "hides its no-ops": (
        "return conversation if len(keep) == len(conversation) else keep",
        "return keep",
        "changed nothing but returned a new tuple",
    ),
    # Depends on something other than its input (how often it ran): two runs differ.
    "is not deterministic": (
        "count(m) <= max_tokens)",
        "count(m) <= max_tokens * (len(RUNS) % 2))\n        RUNS.append(1)",
        "is not deterministic",
    ),
}


# The block itself (tests/docs/test_examples.py) runs the same property test
# under the same derandomized profile: the same examples, a second time.
@pytest.mark.slow
def test_the_property_test_passes_for_the_guides_strategy() -> None:
    _property_test(_the_property_test())()


# What is checked is that the property test fails, and why: the failure it
# finds first says that, so it is not shrunk (shrinking is most of the cost).
FIND_ONLY = (Phase.explicit, Phase.reuse, Phase.generate)


@pytest.mark.parametrize("fault", list(BROKEN))
def test_the_property_test_catches_a_broken_strategy(fault: str) -> None:
    old, new, words = BROKEN[fault]
    code = _the_property_test()
    assert old in code
    test = settings(phases=FIND_ONLY)(_property_test("RUNS = []\n" + code.replace(old, new)))
    with pytest.raises(AssertionError) as caught:
        test()
    assert words in str(caught.value)


# --- figures -------------------------------------------------------------------------


def test_the_estimator_table_holds_the_estimators_figures() -> None:
    from memrules import estimate_tokens

    text = (ROOT / "docs/guide/retrieval.md").read_text(encoding="utf-8")
    rows = [line.split("|") for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 6
    for row in rows:
        shown, estimate = row[1].strip().strip("`"), int(row[3])
        assert estimate_tokens(shown) == estimate, shown


# --- words users know ----------------------------------------------------------------

# "seed" stays only as the YAML value `count_rule: seed`, the file
# configs/seed_example.yaml and the bench option --seed, each explained.
_SEED_ALLOWED = re.compile(
    r"count_rule: seed|`seed`|seed_example\.yaml|--seed N|count rule seed|\"seed\""
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_the_page_uses_words_users_know(page: object) -> None:
    from pathlib import Path

    assert isinstance(page, Path)
    text = page.read_text(encoding="utf-8")
    seeds = [
        line
        for line in text.splitlines()
        if re.search(r"\bseed", _SEED_ALLOWED.sub("", line), flags=re.IGNORECASE)
    ]
    assert not seeds, seeds
    assert not re.findall(r"\bissues? \d+|#\d{1,4}\b", text)
    if page.name != "development.md":  # the contributors' page shows the package layout
        private = re.findall(r"memrules[./]_[a-z]+", text)
        assert not private, private
