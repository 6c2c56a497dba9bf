"""The HTML report and the trace viewer, loaded in a real headless chromium:
no console errors, no uncaught errors, a screenshot that is not blank, and
the viewer's navigation by request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrules._cli.main import main
from tests.cli.test_eval import VAULT, WINDOW, write
from tests.support.browser import load_page, needs_chromium, not_blank

WHOLE = "strategies:\n  - type: sliding_window\n    keep_messages: 3\n"


def _categorised() -> dict[str, object]:
    questions = [
        dict(q, category=c) for q, c in zip(VAULT["questions"], ("place", "colour"), strict=True)
    ]  # type: ignore[call-overload]
    return {**VAULT, "questions": questions}


def _run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    window = tmp_path / "window.yaml"
    window.write_text(WINDOW, encoding="utf-8")
    whole = tmp_path / "whole.yaml"
    whole.write_text(WHOLE, encoding="utf-8")
    dataset = write(tmp_path / "d.jsonl", _categorised(), {**_categorised(), "id": "vault-2"})
    report, trace = tmp_path / "report.html", tmp_path / "t.jsonl"
    argv = ["eval", "--config", str(window), "--config", str(whole), str(dataset), "--bootstrap",
            "50", "--html", str(report), "--trace", str(trace), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    return report, trace


def test_the_report_is_one_self_contained_file_with_an_svg_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, _ = _run(tmp_path, capsys)
    text = report.read_text(encoding="utf-8")
    assert text.count("<svg") == 1
    assert "facts kept (%)" in text  # the plot's axis, drawn by matplotlib
    # Nothing is loaded from elsewhere (XML namespaces name, they do not load).
    for outside in ('src="http', 'href="http', "url(http", "@import", "<link", "<script src"):
        assert outside not in text
    assert "<td>place</td>" in text  # the categories
    assert "<td>colour</td>" in text
    assert "removed by sliding_window" not in text  # the evidence table says gone by …
    assert "gone by sliding_window" in text


@needs_chromium
def test_the_report_loads_in_chromium_without_errors_and_is_not_blank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, _ = _run(tmp_path, capsys)
    page = load_page(
        report,
        script="[document.querySelectorAll('table').length, "
        "document.querySelector('svg').getBoundingClientRect().width]",
    )
    assert page.console_errors == []
    assert page.errors == ()
    tables, plot_width = page.value
    assert tables == 4  # figures, categories, evidence, comparisons
    assert plot_width > 200
    colours, ink = not_blank(page.screenshot)
    assert colours > 50
    assert ink > 0.05
    (tmp_path / "report.png").write_bytes(page.screenshot)


@needs_chromium
def test_the_viewer_loads_navigates_by_request_and_is_not_blank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, trace = _run(tmp_path, capsys)
    viewer = tmp_path / "viewer.html"
    assert main(["show", str(trace), "--html", str(viewer)]) == 0
    requests = len(trace.read_text(encoding="utf-8").splitlines()) - 1
    page = load_page(
        viewer,
        script="""new Promise(function (done) {
          var before = document.querySelector('section.current').id;
          document.dispatchEvent(new KeyboardEvent('keydown', {key: 'j'}));
          setTimeout(function () {
            var shown = Array.prototype.filter.call(document.querySelectorAll('section.request'),
              function (s) { return getComputedStyle(s).display !== 'none'; });
            done([before, document.querySelector('section.current').id, shown.length,
                  document.querySelectorAll('nav a.request').length,
                  document.querySelectorAll('nav h2').length]);
          }, 200);
        })""",
    )
    assert page.console_errors == []
    assert page.errors == ()
    before, after, shown, links, conversations = page.value
    assert (before, after, shown) == ("request-0", "request-1", 1)
    assert links == requests
    assert conversations == 2  # vault and vault-2
    colours, ink = not_blank(page.screenshot)
    assert colours > 50
    assert ink > 0.05


def test_the_viewer_shows_what_each_strategy_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, trace = _run(tmp_path, capsys)
    viewer = tmp_path / "viewer.html"
    assert main(["show", str(trace), "--html", str(viewer)]) == 0
    text = viewer.read_text(encoding="utf-8")
    first = json.loads(trace.read_text(encoding="utf-8").splitlines()[1])
    assert first["kind"] == "apply"
    section = text.split('id="request-0"')[1].split("</section>")[0]
    assert "sliding_window" in section
    assert "removed 3: m1, m2, m3" in section  # 6 messages to 3: the system one, m4, the question
    assert '<tr class="removed"><td>1</td><td>user</td><td>m1</td>' in section
    assert "The vault is in Lisbon." in section
    assert main(["show", str(trace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("0: apply pipeline window conversation vault tokens ")
