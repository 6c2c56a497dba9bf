"""The ``index_context:`` key: what ``remember`` and ``offload`` index a
stored message by, set in YAML (checked, each error at its YAML path and
line), and offload indexing with the same context as remember."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from memrules import IndexContext, MemoryConfig, Message, Pipeline, Text, load_config
from memrules._core.errors import ConfigError
from memrules._core.seam_records import DEFAULT_CONTEXT
from memrules.seams import Embedder, Scope, Seams, qdrant_store
from memrules.strategies import offload
from tests.support.seams import needs_local
from tests.support.strategies import COUNTER


def test_index_context_is_read_from_yaml_at_the_top_and_in_a_route() -> None:
    config = load_config(
        "index_context:\n  before: 2\n  after: 1\n  neighbour_chars: 50\n  dates: false\n"
        "  time: 2023-05-08\n"
        "routes:\n  plain:\n    index_context: false\n  usual:\n    max_messages: 4\n"
    )
    assert config.index_context == IndexContext(
        before=2, after=1, neighbour_chars=50, dates=False, time=date(2023, 5, 8)
    )
    assert config.route_config("plain").index_context is None
    assert config.route_config("usual").index_context == DEFAULT_CONTEXT
    assert MemoryConfig().index_context == DEFAULT_CONTEXT
    assert load_config("index_context:\n").index_context == DEFAULT_CONTEXT


@pytest.mark.parametrize(
    ("text", "yaml_path", "line", "words"),
    [
        ("max_messages: 4\nindex_context:\n  before: 9\n", "index_context.before", 3, "0 to 8"),
        ("index_context:\n  after: 1\n  befor: 2\n", "index_context.befor", 3, "before"),
        ("index_context:\n  neighbour_chars: 0\n", "index_context.neighbour_chars", 2, "1 to"),
        ("index_context:\n  dates: maybe\n", "index_context.dates", 2, "true or false"),
        ("index_context:\n  time: yesterday\n", "index_context.time", 2, "date"),
        ("index_context: 3\n", "index_context", 1, "mapping"),
        (
            "routes:\n  r:\n    index_context:\n      after: -1\n",
            "routes.r.index_context.after",
            4,
            "0 to 8",
        ),
    ],
)
def test_a_bad_index_context_names_its_yaml_path_and_line(
    text: str, yaml_path: str, line: int, words: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(text)
    (problem,) = caught.value.problems
    assert (problem.yaml_path, problem.line) == (yaml_path, line)
    assert words in problem.message


def test_index_context_given_in_python_is_checked() -> None:
    with pytest.raises(ConfigError, match="index_context"):
        MemoryConfig(index_context={"before": 1})  # type: ignore[arg-type]


def _said(*pairs: tuple[str, str]) -> tuple[Message, ...]:
    return tuple(
        Message(role="user" if i % 2 == 0 else "assistant", parts=(Text(text=t),), name=n)
        for i, (n, t) in enumerate(pairs)
    )


DIALOGUE = _said(
    ("Melanie", "Did you end up going to the support group?"),
    ("Caroline", "Yes, I went yesterday and it was so powerful."),
    ("Melanie", "That's great! What did you talk about?"),
    ("Caroline", "Mostly about courage."),
)


def _texts(pipeline: Pipeline, conversation_id: str) -> dict[str, str]:
    store = pipeline.seams.store
    assert store is not None
    hits = store.scan(Scope(conversation_id=conversation_id, user="u"))  # type: ignore[attr-defined]
    return {h.message.text: h.text for h in hits}


@needs_local
def test_remember_indexes_by_the_configs_index_context(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    def pipeline(config: MemoryConfig, name: str) -> Pipeline:
        store = qdrant_store(path=str(tmp_path / name), embedder=local_embedder)
        return Pipeline.from_config(config, seams=Seams(store=store), counter=COUNTER)

    wide = pipeline(load_config("index_context:\n  before: 0\n  after: 1\n"), "wide")
    wide.remember(DIALOGUE, conversation_id="c", user="u")
    got = _texts(wide, "c")
    assert got[DIALOGUE[1].text] == (
        "Caroline: Yes, I went yesterday and it was so powerful.\n"
        "(after) Melanie: That's great! What did you talk about?"
    )
    plain = pipeline(load_config("index_context: false\n"), "plain")
    plain.remember(DIALOGUE, conversation_id="c", user="u")
    assert _texts(plain, "c")[DIALOGUE[1].text] == (
        "Caroline: Yes, I went yesterday and it was so powerful."
    )
    # What remember is given still wins over the config.
    plain.remember(DIALOGUE, conversation_id="d", user="u", context=IndexContext())
    assert "(before) Melanie: Did you end up" in _texts(plain, "d")[DIALOGUE[1].text]


@needs_local
def test_offload_indexes_its_records_with_the_configs_context(
    tmp_path: Path, local_embedder: Embedder
) -> None:
    """A reply offloaded from a live conversation is found by the question
    it answers, as a remembered one is; ``index_context: false`` keeps each
    message's own text."""
    history = (*DIALOGUE, *_said(("Melanie", "Anything new today?")))

    def offloaded(config_text: str, name: str) -> dict[str, str]:
        config = load_config(config_text)
        config = MemoryConfig(
            max_messages=2, strategies=[offload(turns=2)], index_context=config.index_context
        )
        store = qdrant_store(path=str(tmp_path / name), embedder=local_embedder)
        pipeline = Pipeline.from_config(config, seams=Seams(store=store), counter=COUNTER)
        result = pipeline.apply(history, conversation_id="c", user="u")
        assert len(result.messages) < len(history)
        return _texts(pipeline, "c")

    usual = offloaded("max_messages: 2\n", "usual")
    assert usual[DIALOGUE[1].text] == (
        "Caroline: Yes, I went yesterday and it was so powerful.\n"
        "(before) Melanie: Did you end up going to the support group?"
    )
    plain = offloaded("index_context: false\n", "plain")
    assert plain[DIALOGUE[1].text] == "Caroline: Yes, I went yesterday and it was so powerful."


def test_tool_calls_and_results_are_no_one_s_neighbours() -> None:
    """An agent's next call is not indexed with the file the last call
    read (a tool result is indexed with its own call already); the
    dialogue's messages still are each other's neighbours."""
    from memrules._core.messages import ToolCall, ToolResult, message
    from memrules._core.seam_records import contextual_text

    read = ToolCall(id="c1", name="read_file", arguments='{"path": "src/scheduler.py"}')
    agent = (
        message("user", "Tidy the scheduler."),
        message("assistant", "Reading src/scheduler.py.", read),
        message("tool", ToolResult(call_id="c1", content="cron.add(job, at='02:30')")),
        message("assistant", "Done: the export runs at 02:30."),
    )
    context = IndexContext(before=1, after=1)
    assert contextual_text(agent, 3, context) == (
        "assistant: Done: the export runs at 02:30.\n(before) user: Tidy the scheduler."
    )
    assert contextual_text(agent, 0, context) == (
        "user: Tidy the scheduler.\n(after) assistant: Done: the export runs at 02:30."
    )
