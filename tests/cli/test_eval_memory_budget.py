"""``memrules eval`` with a ``memory:`` entry: recall is what the route's
memory message would hold, as deep as the config says
(``retrieval_limit``, not ``-k``), and with ``retrieval_tokens`` inside
the budget: the context compacted to the budget less the reservation, the
memories filled in while the whole request fits, the tokens after counting
the memory message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memrules._cli.eval import EvalSettings, run_eval
from memrules._cli.eval_output import figures_json, per_question_lines
from tests.cli.test_eval import write
from tests.support.chat_server import ChatServer
from tests.support.seams import needs_memory_extras

NAMES = ("Anna", "Boris", "Chen", "Dara", "Emil", "Farah", "Goran", "Hana", "Ivo", "Jun")
COLOURS = ("red", "blue", "green", "amber", "violet", "ochre", "teal", "grey", "pink", "gold")


def _conversation() -> dict[str, Any]:
    """Ten facts, each a user turn and a short reply, then padding turns
    (so the facts are offloaded); one question needs four facts, another
    one."""
    messages: list[dict[str, Any]] = []
    for i, (name, colour) in enumerate(zip(NAMES, COLOURS, strict=True)):
        fact = f"{name} flies a {colour} kite."
        messages.append({"id": f"f{i}", "role": "user", "content": fact})
        messages.append({"id": f"r{i}", "role": "assistant", "content": "Noted."})
    for i in range(12):
        messages.append({"id": f"p{i}", "role": "user", "content": f"Padding line {i} here."})
        messages.append({"id": f"q{i}", "role": "assistant", "content": "Fine."})
    return {
        "id": "kites",
        "messages": messages,
        "questions": [
            {"id": "four", "question": "Which kites do Anna, Boris, Chen and Dara fly?",
             "answer": None, "evidence": ["f0", "f1", "f2", "f3"]},
            {"id": "one", "question": "What colour is the kite Emil flies?", "answer": None,
             "evidence": ["f4"]},
        ],
    }  # fmt: skip


def _config(path: Path, url: str, memory: str) -> Path:
    path.write_text(
        "encoder_name: cl100k_base\n"
        "survivors: {task: false}\n"  # the first fact is the task: let it be offloaded too
        "store: {backend: qdrant, path: ':memory:', search: lexical}\n"
        f"embedder: {{type: openai, base_url: '{url}', model: e, dimensions: 16}}\n"
        "stores:\n  memory:\n    backend: qdrant\n    path: ':memory:'\n    search: lexical\n"
        f"    embedding: {{type: openai, base_url: '{url}', model: e, dimensions: 16}}\n"
        f"memory: {memory}\n"
        "strategies:\n  - type: offload\n    turns: 1\n  - type: trim_to_budget\n",
        encoding="utf-8",
    )
    return path


@needs_memory_extras
def test_memory_fills_the_reserved_share_and_never_passes_the_budget(tmp_path: Path) -> None:
    """With 130 of 300 tokens reserved, the context is compacted to 170 and
    the memory message takes what is left: more memories than ``-k`` says
    (1), at most ``retrieval_limit`` (8), and every request as sent, with
    its memory message, under the budget. The four-fact question is
    recalled, which one hit could never do."""
    dataset = write(tmp_path / "d.jsonl", _conversation())
    with ChatServer() as server:
        config = _config(
            tmp_path / "m.yaml", server.url, "{retrieval_limit: 8, retrieval_tokens: 130}"
        )
        settings = EvalSettings(configs=(config,), dataset=dataset, k=1, max_tokens=300)
        run = run_eval(settings)
    (row,), (requests,) = run.rows, run.requests
    asked = [r for r in requests if r.question]
    assert [r.question_id for r in asked] == ["four", "one"]
    for r in asked:
        assert r.tokens_after < 300  # the budget is not reached (Budget.is_over)
        assert r.recall_count is not None
        assert 1 < r.recall_count <= 8
    four, one = asked
    assert not four.kept
    assert four.recalled
    assert one.recalled
    assert row.kept_or_recalled == 2
    assert row.recall_p50_ms is not None
    figures = figures_json(run.rows, run.settings)["pipelines"][0]
    assert figures["recall_p50_ms"] >= 0
    first = next(iter(per_question_lines(run)))
    assert '"recall": {"messages": ' in first


@needs_memory_extras
def test_the_tokens_after_count_the_memory_message(tmp_path: Path) -> None:
    """Without a reservation the memory message goes on top of the context,
    as the plugin sends it: the tokens after are the context's and the
    message's, over the budget the context alone fits."""
    dataset = write(tmp_path / "d.jsonl", _conversation())
    with ChatServer() as server:
        config = _config(tmp_path / "m.yaml", server.url, "{retrieval_limit: 3}")
        plain = _config(tmp_path / "p.yaml", server.url, "{enabled: false}")
        settings = EvalSettings(configs=(config, plain), dataset=dataset, k=1, max_tokens=300)
        run = run_eval(settings)
    with_memory = [r for r in run.requests[0] if r.question]
    without = [r for r in run.requests[1] if r.question]
    for a, b in zip(with_memory, without, strict=True):
        assert a.recall_count == 3  # the route's retrieval_limit, not -k
        assert b.recall_count == 1  # no memory entry: -k hits, as before
        assert b.tokens_after < 300
        assert a.tokens_after > b.tokens_after + 60  # the header alone is over 60 tokens
