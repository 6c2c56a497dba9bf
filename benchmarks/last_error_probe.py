"""Whether the last error line is still in the last request of an agent loop.

    python benchmarks/last_error_probe.py configs/coding_agent.yaml --budgets 16000 32000
    python benchmarks/last_error_probe.py configs/default.yaml \\
        --set '{"clear_tool_results": {"preview_chars": 0, "error_tail_chars": 0}}'

Reads the mini-swe-agent trajectories in ``../shared/data/trajectories-dev``
(``--data``; see the README there; never committed), written as a tool-using
agent would send them: each assistant reply's one ``bash`` block becomes a
``bash`` tool call and the harness' ``<returncode>`` answer its tool result
(``--native`` keeps them as the user messages they are). For every
trajectory whose history holds an error (a non-zero return code or a
traceback) with an output line, the last request (everything before the
last assistant reply) goes through the config at each budget, after the
five requests before it (warm, as an agent loop sends them); the probe
holds when the error's last output line is in what is sent.

``--set`` adds parameters to the config's strategies (a JSON object of
strategy type to parameters), one variant per ``--set``. Printed: config,
budget, variant, hits out of trajectories. A count, not a time: the
machine's load does not move it.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from memrules import from_openai, load_pipeline
from memrules._core.messages import part_text

BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
ROOT = Path(__file__).resolve().parents[1]
# ``../shared`` beside the main checkout (a worktree under ``wt/`` looks one further up).
SHARED = next((p for p in (ROOT.parent, ROOT.parents[1]) if (p / "shared").is_dir()), ROOT.parent)
DATA = SHARED / "shared" / "data" / "trajectories-dev"


def as_tool_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trajectory with each one-block reply a ``bash`` call and the
    output that answers it a tool result."""
    out: list[dict[str, Any]] = []
    pending = None
    for k, m in enumerate(messages):
        text = m["content"] if isinstance(m["content"], str) else ""
        if m["role"] == "assistant":
            blocks = BLOCK.findall(text)
            if len(blocks) == 1:
                pending = f"call_{k}"
                arguments = json.dumps({"command": blocks[0]})
                call = {"id": pending, "type": "function"}
                call["function"] = {"name": "bash", "arguments": arguments}
                thought = text.split("```bash")[0].strip() or None
                out.append({"role": "assistant", "content": thought, "tool_calls": [call]})
                continue
            pending = None
        elif m["role"] == "user" and pending and text.lstrip().startswith("<returncode>"):
            out.append({"role": "tool", "tool_call_id": pending, "content": text})
            pending = None
            continue
        out.append({"role": m["role"], "content": text})
    return out


def error_line(text: str) -> str | None:
    """The last output line of a failed command's output, or None."""
    code = RETURNCODE.search(text)
    failed = (code is not None and code.group(1) != "0") or "Traceback (most recent" in text
    if not failed:
        return None
    body = text.split("<output>", 1)[-1].split("</output>", 1)[0]
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    return lines[-1] if lines else None


def with_params(yaml: str, budget: int, variant: dict[str, dict[str, object]]) -> str:
    """The config at ``budget`` tokens, with ``variant``'s parameters added."""
    yaml = re.sub(r"^(max_tokens|max_fraction):.*$", f"max_tokens: {budget}", yaml, flags=re.M)
    for kind, params in variant.items():
        lines = "".join(f"    {k}: {json.dumps(v)}\n" for k, v in params.items())
        yaml = yaml.replace(f"  - type: {kind}\n", f"  - type: {kind}\n{lines}", 1)
    return yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("config", type=Path)
    parser.add_argument("--budgets", type=int, nargs="+", default=[16_000, 32_000])
    parser.add_argument("--set", action="append", default=[], dest="variants")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--native", action="store_true")
    args = parser.parse_args()
    variants = [json.loads(v) for v in args.variants] or [{}]
    yaml = args.config.read_text()
    hits: dict[tuple[int, str], list[int]] = {}
    paths = sorted(args.data.glob("*.traj.json"))
    if not paths:
        parser.error(f"no *.traj.json in {args.data} (--data)")
    for path in paths:
        raw = json.loads(path.read_text())["messages"]
        messages = raw if args.native else as_tool_calls(raw)
        asks = [k for k, m in enumerate(messages) if m["role"] == "assistant"]
        lines = [error_line(m["content"]) for m in messages[: asks[-1]] if m["content"]]
        found = [line for line in lines if line]
        if not found:
            continue
        for budget in args.budgets:
            for variant in variants:
                pipeline = load_pipeline(with_params(yaml, budget, variant))
                memo = pipeline.measure()
                for k in asks[-6:]:
                    result = pipeline.apply(from_openai(messages[:k]), memo=memo)
                sent = "\n".join(part_text(p) for m in result.messages for p in m.parts)
                tally = hits.setdefault((budget, json.dumps(variant)), [0, 0])
                tally[0] += found[-1] in sent
                tally[1] += 1
    for (budget, variant), (hit, total) in sorted(hits.items()):
        print(f"{args.config.name}  {budget}  {variant}  {hit}/{total}")


if __name__ == "__main__":
    main()
