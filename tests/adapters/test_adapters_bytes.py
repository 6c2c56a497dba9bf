"""Output bytes depend on the input and the config only, never on the hash seed.

Provider prompt caches match a prompt's bytes, and replay needs byte
identity, so a key order that moved with ``PYTHONHASHSEED`` would cost users
cache misses. Each case below runs in fresh interpreters under
``PYTHONHASHSEED=0..4`` (0 and 1 by default, all five with ``-m slow``):
read with the adapters, compacted by pipelines from the shipped configs and
a tiny one that makes every strategy act, written back. The bytes must be
identical across seeds, and the plain round trip must give back the input's
bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from tests.adapters.test_adapters import ANTHROPIC_DIALOGUE, OPENAI_DIALOGUE
from tests.support.adapter_json import anthropic_requests, openai_messages, shuffled

ROOT = Path(__file__).resolve().parents[2]
SEEDS = range(5)

TINY = """\
encoder_name: cl100k_base
context_window_tokens: 256
max_messages: 4
strategies:
  - type: deduplicate_file_reads
  - type: clear_tool_results
    keep_pairs: 0
    clear_tool_inputs: true
  - type: clamp_oversized_messages
    max_part_tokens: 32
  - type: drop_observations
  - type: sliding_window
    keep_messages: 2
"""

SCRIPT = """\
import json, sys
from pathlib import Path
from memrules import from_anthropic, from_openai, load_pipeline, to_anthropic, to_openai
from memrules._adapters.anthropic import to_anthropic_request

cases = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
pipelines = [load_pipeline(Path(path)) for path in sys.argv[2:]]
out = []
for case in cases:
    if case["format"] == "openai":
        read, writers = from_openai, (to_openai,)
    else:
        read, writers = from_anthropic, (to_anthropic, to_anthropic_request)
    conversation = read(case["input"])
    runs = [conversation]
    for pipeline in pipelines:
        runs.append(pipeline.apply(conversation).messages)
        runs.append(pipeline.compress(conversation).messages)
    out.append([[write(c) for write in writers] for c in runs])
sys.stdout.buffer.write(json.dumps(out, ensure_ascii=False).encode("utf-8"))
"""


def _run(seed: int, script: Path, cases: Path, configs: list[Path]) -> bytes:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), str(cases), *map(str, configs)],
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return done.stdout


cases = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"format": st.just("openai"), "input": shuffled(openai_messages(max_size=10))}
        ),
        st.fixed_dictionaries(
            {"format": st.just("anthropic"), "input": shuffled(anthropic_requests(max_size=10))}
        ),
    ),
    min_size=30,
    max_size=30,
)


def _drawn() -> list[dict[str, Any]]:
    """The generated cases: every example hypothesis draws (derandomized),
    drawn in this process and run together, one interpreter a seed."""
    drawn: list[dict[str, Any]] = []

    @settings(max_examples=2, phases=(Phase.explicit, Phase.generate))
    @given(cases)
    def draw(generated: list[dict[str, Any]]) -> None:
        drawn.extend(generated)

    draw()
    return drawn


def _same_bytes_under(seeds: range, folder: Path) -> None:
    tiny = folder / "tiny.yaml"
    tiny.write_text(TINY, encoding="utf-8")
    configs = [ROOT / "configs" / "default.yaml", ROOT / "configs" / "tiny_budget.yaml", tiny]
    fixed = [
        {"format": "openai", "input": OPENAI_DIALOGUE},
        {"format": "anthropic", "input": ANTHROPIC_DIALOGUE},
    ]
    all_cases = fixed + _drawn()
    source = folder / "cases.json"
    source.write_text(json.dumps(all_cases, ensure_ascii=False), encoding="utf-8")
    script = folder / "run.py"
    script.write_text(SCRIPT, encoding="utf-8")

    outputs = {seed: _run(seed, script, source, configs) for seed in seeds}

    assert len(set(outputs.values())) == 1, "output bytes differ between hash seeds"
    results = json.loads(outputs[seeds[0]])
    for case, runs in zip(all_cases, results, strict=True):
        # runs[0] is the plain round trip: the input's own bytes come back.
        if case["format"] == "openai":
            assert json.dumps(runs[0][0]) == json.dumps(case["input"])
        else:
            request = runs[0][1]
            assert json.dumps(request["messages"]) == json.dumps(case["input"]["messages"])
            assert json.dumps(request.get("system")) == json.dumps(case["input"].get("system"))


def test_output_bytes_are_the_same_under_two_hash_seeds(tmp_path: Path) -> None:
    """Seeds 0 and 1, two interpreters over every case: a key order that
    moves with the hash seed moves between any two seeds (set and str-hash
    order differ between them), so this catches it. The slow variant adds
    three more seeds."""
    _same_bytes_under(range(2), tmp_path)


@pytest.mark.slow
def test_output_bytes_are_the_same_under_every_hash_seed(tmp_path: Path) -> None:
    """Seeds 0 to 4, five interpreters over the same cases."""
    _same_bytes_under(SEEDS, tmp_path)
