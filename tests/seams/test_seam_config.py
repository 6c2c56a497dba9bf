"""The store:, embedder: and summarizer: sections of a config: every
problem a ConfigError at its YAML path and line; seams built from them."""

from __future__ import annotations

import pytest

from memrules import ConfigError, MemoryConfig, load_config, load_pipeline
from memrules.seams._settings import SeamSettings, seam_settings
from tests.support.seams import HAS_MILVUS, HAS_QDRANT, MISSING_LOCAL

pytestmark = pytest.mark.skipif(
    not (HAS_MILVUS and HAS_QDRANT) or bool(MISSING_LOCAL),
    reason="needs the milvus, qdrant and local-embed extras: "
    "pip install -e '.[milvus,qdrant,local-embed]'",
)

OPENAI = "  type: openai\n  base_url: http://127.0.0.1:9/v1\n  model: m\n"

BAD = [
    # (yaml, yaml_path, line, words in the message)
    ("store: 5\n", "store", 1, "must be a mapping"),
    (
        "store:\n  backend: redis\n",
        "store.backend",
        2,
        "backend='redis' must be one of milvus, qdrant",
    ),
    ("store:\n  uri: memory.sqlite\n", "store.uri", 2, "Milvus Lite file"),
    ("store:\n  search: fuzzy\n", "store.search", 2, "search='fuzzy' must be one of hybrid"),
    ("store:\n  collection: my-memory\n", "store.collection", 2, "ASCII letters"),
    (
        "store:\n  backend: qdrant\n  uri: x.db\n",
        "store.uri",
        3,
        "unknown key 'uri' for backend qdrant",
    ),
    ("store:\n  backend: qdrant\n  url: ftp://x\n", "store.url", 3, "http(s)://host:port"),
    ("store:\n  backend: qdrant\n  url: http://x:6333\n  path: d\n", "store.path", 4, "both set"),
    ("store:\n  batch_size: 0\n", "store.batch_size", 2, "batch_size=0"),
    ("embedder:\n  type: local\n", "embedder", 1, "no store: section"),
    (
        "store: {}\nembedder:\n  type: onnx\n",
        "embedder.type",
        3,
        "type='onnx' must be one of local",
    ),
    ("store: {}\nembedder:\n  type: openai\n", "embedder", 2, "type openai needs base_url, model"),
    (
        "store: {}\nembedder:\n" + OPENAI + "  dimensions: 0\n",
        "embedder.dimensions",
        6,
        "dimensions=0",
    ),
    (
        "store: {}\nembedder:\n" + OPENAI + "  api_key: sk-123\n",
        "embedder.api_key",
        6,
        "unknown key 'api_key'",
    ),
    ("summarizer:\n  tipe: openai\n", "summarizer.tipe", 2, "unknown key 'tipe'"),
    ("summarizer:\n" + OPENAI + "  retries: -1\n", "summarizer.retries", 5, "retries=-1"),
    ("summarizer:\n" + OPENAI + "  timeout_s: 0\n", "summarizer.timeout_s", 5, "timeout_s=0"),
    (
        "summarizer:\n" + OPENAI + "  retries: 99999999999\n",
        "summarizer.retries",
        5,
        "from 0 to 10",
    ),
    (
        "store: {}\nembedder:\n" + OPENAI + "  retries: 11\n",
        "embedder.retries",
        6,
        "from 0 to 10",
    ),
    ("summarizer:\n" + OPENAI + "  timeout_s: 601\n", "summarizer.timeout_s", 5, "at most 600"),
    (
        "summarizer:\n" + OPENAI + "  api_key_env: 'A B'\n",
        "summarizer.api_key_env",
        5,
        "must name an environment variable",
    ),
    (
        "store: {}\nembedder:\n" + OPENAI + "  api_key_env: 1KEY\n",
        "embedder.api_key_env",
        6,
        "must name an environment variable",
    ),
    (
        "summarizer:\n  type: openai\n  base_url: nope\n  model: m\n",
        "summarizer.base_url",
        3,
        "http://",
    ),
    ("summarizer:\n  max_chars: 5\n", "summarizer.max_chars", 2, "max_chars=5"),
    ("summarizer: [extractive]\n", "summarizer", 1, "must be a mapping"),
]


@pytest.mark.parametrize(("text", "yaml_path", "line", "words"), BAD)
def test_bad_sections_name_path_and_line(text: str, yaml_path: str, line: int, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(text)
    problems = [p for p in info.value.problems if p.yaml_path == yaml_path]
    assert problems, info.value.problems
    assert problems[0].line == line
    assert words in problems[0].message, str(info.value)
    assert str(info.value).startswith(f"<YAML text>:{line}: ") or len(info.value.problems) > 1


def test_every_problem_of_every_section_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        load_config("store:\n  search: fuzzy\nsummarizer:\n  max_chars: 5\nmax_messages: 0\n")
    assert [p.yaml_path for p in info.value.problems] == [
        "store.search",
        "summarizer.max_chars",
        "max_messages",
    ]


def test_sections_read_as_settings_without_secrets(tmp_path: object) -> None:
    config = load_config(
        "store:\n  backend: qdrant\n  path: ':memory:'\n  search: lexical\n"
        "embedder:\n" + OPENAI + "  api_key_env: EMBED_KEY\n  dimensions: 8\n"
        "summarizer: extractive\n"
    )
    assert config.store == SeamSettings(
        section="store", kind="qdrant", params=(("path", ":memory:"), ("search", "lexical"))
    )
    assert config.summarizer is not None
    assert config.summarizer.kind == "extractive"
    assert "EMBED_KEY" in repr(config.embedder)
    assert repr(config.store) == "store(backend='qdrant', path=':memory:', search='lexical')"
    pipeline = load_pipeline(config)
    assert repr(pipeline.seams.store) == (
        "qdrant_store(path=':memory:', collection='memrules_memory', search='lexical')"
    )
    assert repr(pipeline.seams.summarizer).startswith("extractive_summarizer(")
    assert pipeline.seams.store.embedder.identity["dimensions"] == 8  # type: ignore[attr-defined]


def test_code_can_still_pass_its_own_seams() -> None:
    from memrules.seams import Seams, extractive_summarizer

    mine = extractive_summarizer(max_chars=300)
    pipeline = load_pipeline("summarizer:\n" + OPENAI, seams=Seams(summarizer=mine))
    assert pipeline.seams.summarizer is mine


def test_sections_from_python_are_checked() -> None:
    with pytest.raises(ConfigError, match="must be the settings of a store"):
        MemoryConfig(store="milvus")  # type: ignore[arg-type]
    settings = seam_settings("summarizer", "extractive")
    assert isinstance(settings, SeamSettings)
    assert MemoryConfig(summarizer=settings).summarizer is settings
    problems = seam_settings("store", {"backend": "qdrant", "url": "x"})
    assert isinstance(problems, list)
    assert problems[0].yaml_path == "store.url"
