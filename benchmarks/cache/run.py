"""Replay a generated coding-agent loop request by request and measure the
provider prompt cache under each compaction policy.

    python benchmarks/cache/run.py                      # 1,200 messages, 32k and 100k
    python benchmarks/cache/run.py --config my.yaml     # add a policy from a config file

Every request of the loop (each point where an agent would call the model:
after a user message or after the last result of a tool step) is the history
so far, run through ``Pipeline.apply`` with the budget; what the policy sends
is measured against what it sent the request before with
:func:`memrules._counting.cache.measure`, under OpenAI's rule and under Anthropic's
with the request-level (automatic) breakpoint. Deterministic: the history is
seeded, and requests are ``--gap`` seconds apart (with ``--idle-every N``,
every N-th comes after ``--idle`` seconds instead, so caches expire). A
policy whose config has a ``cache:`` section is handed the previous request
(``previous=result.sent``) and the time, as the plugin does; with
``--memo-only``, ``configs/cache_aware.yaml`` is also run handed only the
conversation's measure (``memo=``), which remembers the request it sent.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.harness.histories import agent_history, request_points  # noqa: E402
from memrules import load_pipeline  # noqa: E402
from memrules._core.budget import Budget  # noqa: E402
from memrules._counting.cache import AnthropicRule, OpenAIRule, Sent, measure  # noqa: E402
from memrules._runtime.pipeline import Pipeline  # noqa: E402

ENCODER = "o200k_base"
OPENAI = OpenAIRule(model="gpt-5")
ANTHROPIC = AnthropicRule(model="claude-sonnet-4-5", automatic=True)


def builtin_policies() -> list[tuple[str, str]]:
    """(name, YAML text or config path) of the policies every run compares."""
    return [
        ("no compaction", f"encoder_name: {ENCODER}\nstrategies: []\n"),
        (
            "trim_to_budget every turn",
            f"encoder_name: {ENCODER}\nmax_tokens: 100000\nstrategies:\n  - type: trim_to_budget\n",
        ),
        ("configs/default.yaml", str(ROOT / "configs" / "default.yaml")),
        (
            "hysteresis: trim_to_budget, compact_to 0.25",
            f"encoder_name: {ENCODER}\nmax_tokens: 100000\ncache:\n  compact_to: 0.25\n"
            "strategies:\n  - type: trim_to_budget\n",
        ),
        (
            "hysteresis + clear_tool_results min_step 4000",
            f"encoder_name: {ENCODER}\nmax_tokens: 100000\ncache:\n  compact_to: 0.25\n"
            "strategies:\n  - type: clear_tool_results\n    keep_pairs: 5\n"
            "    min_step: 4000\n  - type: trim_to_budget\n",
        ),
        (
            "hysteresis + frozen summaries (extractive)",
            f"encoder_name: {ENCODER}\nmax_tokens: 100000\ncache:\n  compact_to: 0.25\n"
            "summarizer:\n  type: extractive\n"
            "strategies:\n  - type: summarize\n    turns: 4\n    frozen: true\n"
            "  - type: trim_to_budget\n",
        ),
        ("configs/cache_aware.yaml", str(ROOT / "configs" / "cache_aware.yaml")),
    ]


@attrs.frozen(kw_only=True)
class Row:
    policy: str
    budget: int
    requests: int
    input_tokens: int
    cached_openai: int
    cached_anthropic: int
    cost_openai: float
    cost_anthropic: float
    over_budget: int
    compactions: int
    seconds: float


def replay(
    name: str,
    pipeline: Pipeline,
    history: Sequence,
    points: Sequence[int],
    budget: int,
    times: Sequence[float],
    compact: bool,
    hand_previous: bool = True,
) -> Row:
    memo = pipeline.measure()
    ruler = load_pipeline(f"encoder_name: {ENCODER}\nstrategies: []\n").counter
    previous: Sent | None = None
    total = cached_o = cached_a = over = events = 0
    cost_o = cost_a = 0.0
    start = time.perf_counter()
    sent_before = None
    for k, n in enumerate(points):
        messages = history[:n]
        if compact:
            # Without previous=, the measure hands over the request it sent.
            handed = {"previous": sent_before} if hand_previous else {}
            result = pipeline.apply(
                messages, budget=Budget.tokens(budget), memo=memo, now=times[k], **handed
            )
            messages = result.messages
            events += any(a.changed and a.pass_number > 0 for a in result.report.actions)
            if pipeline.config.cache is not None:
                sent_before = result.sent
        sent = Sent(messages=tuple(messages), counts=ruler.counts(messages))
        tokens = sent.tokens
        over += tokens >= budget
        elapsed = times[k] - times[k - 1] if k else 0.0
        o = measure(previous, sent, OPENAI, elapsed=elapsed)
        a = measure(previous, sent, ANTHROPIC, elapsed=elapsed)
        total += tokens
        cached_o += o.cached
        cached_a += a.cached
        cost_o += o.cost
        cost_a += a.cost
        previous = sent
    return Row(
        policy=name,
        budget=budget,
        requests=len(points),
        input_tokens=total,
        cached_openai=cached_o,
        cached_anthropic=cached_a,
        cost_openai=cost_o,
        cost_anthropic=cost_a,
        over_budget=over,
        compactions=events,
        seconds=time.perf_counter() - start,
    )


def request_times(requests: int, gap: float, idle_every: int, idle: float) -> list[float]:
    """When each request is sent, in seconds: ``gap`` apart, and every
    ``idle_every``-th one (when not 0) after ``idle`` seconds instead."""
    times, now = [], 0.0
    for k in range(requests):
        if k:
            now += idle if idle_every and k % idle_every == 0 else gap
        times.append(now)
    return times


def table(rows: Sequence[Row]) -> str:
    head = (
        "| budget | policy | requests | input tokens | cache share (OpenAI / Anthropic) "
        "| cost, OpenAI gpt-5 | cost, Anthropic | over budget | compactions |"
    )
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        share_o = r.cached_openai / r.input_tokens if r.input_tokens else 0.0
        share_a = r.cached_anthropic / r.input_tokens if r.input_tokens else 0.0
        lines.append(
            f"| {r.budget // 1000}k | {r.policy} | {r.requests} | {r.input_tokens / 1e6:.2f}M "
            f"| {share_o:.1%} / {share_a:.1%} | {r.cost_openai / 1e6:.2f}M "
            f"| {r.cost_anthropic / 1e6:.2f}M | {r.over_budget} | {r.compactions} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--budgets", type=int, nargs="+", default=[32000, 100000])
    parser.add_argument("--gap", type=float, default=20.0, help="seconds between requests")
    parser.add_argument(
        "--idle-every",
        type=int,
        default=0,
        help="every N-th request comes after --idle seconds instead (0: never)",
    )
    parser.add_argument("--idle", type=float, default=900.0, help="seconds of an idle pause")
    parser.add_argument(
        "--config", action="append", default=[], help="another policy: a config file (repeatable)"
    )
    parser.add_argument(
        "--memo-only",
        action="store_true",
        help="also run configs/cache_aware.yaml handed only memo=, no previous=",
    )
    args = parser.parse_args(argv)
    history = agent_history(args.messages, seed=args.seed)
    points = request_points(history)
    times = request_times(len(points), args.gap, args.idle_every, args.idle)
    policies = builtin_policies() + [(path, path) for path in args.config]
    rows = []
    for budget in args.budgets:
        for name, source in policies:
            pipeline = load_pipeline(source)
            compact = name != "no compaction"
            rows.append(replay(name, pipeline, history.messages, points, budget, times, compact))
            print(f"  {name} at {budget}: {rows[-1].seconds:.1f}s", file=sys.stderr)
        if args.memo_only:
            name = "configs/cache_aware.yaml, memo= only"
            pipeline = load_pipeline(ROOT / "configs" / "cache_aware.yaml")
            row = replay(name, pipeline, history.messages, points, budget, times, True, False)
            rows.append(row)
            print(f"  {name} at {budget}: {row.seconds:.1f}s", file=sys.stderr)
    idle = f", every {args.idle_every}th after {args.idle:g}s idle" if args.idle_every else ""
    print(
        f"{args.messages} messages (seed {args.seed}), {len(points)} requests, "
        f"{args.gap:g}s apart{idle}; tokens in {ENCODER}; cost in input-token units "
        f"(OpenAI {OPENAI.name}; Anthropic {ANTHROPIC.name})"
    )
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
