"""``memrules eval --json`` also counts the questions with at least one
evidence message kept or recalled (LoCoMo's own count), beside "kept or
recalled", which needs every evidence message in the context or every one
among the hits."""

from __future__ import annotations

from pathlib import Path

from memrules._cli.eval import EvalSettings, evaluate
from memrules._cli.eval_figures import EvalSettings as FigureSettings
from memrules._cli.eval_output import figures_json
from tests.cli.test_eval import write
from tests.support.chat_server import ChatServer
from tests.support.seams import needs_memory_extras

SPLIT = {
    "id": "split",
    "messages": [
        {"id": "m0", "role": "system", "content": "You are terse."},
        {"id": "m1", "role": "user", "content": "The vault is in Lisbon."},
        {"id": "m2", "role": "assistant", "content": "Noted."},
        {"id": "m3", "role": "user", "content": "The key is blue."},
        {"id": "m4", "role": "assistant", "content": "Noted again."},
    ],
    "questions": [
        {"id": "q1", "question": "Where is the vault, and what colour is its key?",
         "answer": "Lisbon; blue", "evidence": ["m1", "m3"]},
        {"id": "q2", "question": "Who made the vault?", "answer": "Nobody said",
         "evidence": ["m2"]},
    ],
}  # fmt: skip


@needs_memory_extras
def test_any_evidence_kept_or_recalled_is_counted_apart(tmp_path: Path) -> None:
    """Offload moves the first turn (m1, m2) out; m3 stays in the context.
    q1 needs m1 and m3: neither the context nor the one hit holds both, so
    it is not kept or recalled, but one of its evidence messages is kept.
    q2's evidence (m2) is neither kept nor the hit the vault's words find."""
    dataset = write(tmp_path / "d.jsonl", SPLIT)
    with ChatServer() as server:
        config = tmp_path / "memory.yaml"
        config.write_text(
            "max_messages: 4\nsurvivors: {task: false}\n"  # the first turn (a fact) can go
            "store: {backend: qdrant, path: ':memory:', search: lexical}\n"
            f"embedder: {{type: openai, base_url: '{server.url}', model: e, dimensions: 16}}\n"
            "strategies:\n  - type: offload\n    turns: 1\n",
            encoding="utf-8",
        )
        settings = EvalSettings(configs=(config,), dataset=dataset, k=1)
        (row,) = evaluate(settings)
    assert (row.facts, row.kept, row.kept_or_recalled) == (2, 0, 0)
    assert (row.any_evidence, row.any_evidence_share) == (1, 0.5)
    (figures,) = figures_json([row], FigureSettings(configs=(config,), dataset=dataset))[
        "pipelines"
    ]
    assert figures["facts_any_evidence_kept_or_recalled"] == 1
    assert figures["any_evidence_kept_or_recalled_share"] == 0.5
    assert figures["kept_or_recalled_share"] == 0.0
