"""What ``import memrules`` loads, and the import graph's shape.

``import memrules`` loads the pure core, counting, config and the pipeline,
and no HTTP client, TLS, event loop, store, model or framework package: each
of those loads when its feature is first used. Each check runs in a fresh
interpreter, since this test process has imported everything already.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import pytest

import memrules
import memrules.seams

PACKAGE = Path(memrules.__file__).parent

NOT_ON_IMPORT = (
    "http.client",
    "ssl",
    "asyncio",
    "urllib.request",
    "importlib.metadata",
    "httpx",
    "pymilvus",
    "qdrant_client",
    "onnxruntime",
    "tokenizers",
    "valkey",
    "langchain_core",
    "agents",
    "pydantic_ai",
    "llama_index",
    "autogen_core",
    "mcp",
    "opentelemetry",
    "prometheus_client",
    # memrules' own: the seams' backends, the HTTP client, the frameworks
    "memrules._io.http",
    "memrules.seams.embedders",
    "memrules.seams.summarizers",
    "memrules.seams.milvus",
    "memrules.seams.qdrant",
    "memrules.integrations",
    "memrules._bench",
    "memrules._cli",
)


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{textwrap.dedent(code)}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_memrules_loads_no_network_store_model_or_framework_module() -> None:
    # The package's names load their modules when first asked for: ask for them.
    loaded = _loaded_after("import memrules\nmemrules.Pipeline, memrules.MemoryPlugin")
    assert "memrules" in loaded
    assert "memrules._runtime.pipeline" in loaded  # the library itself is all there
    assert sorted(m for m in NOT_ON_IMPORT if m in loaded) == []


def _needs(module: str, extra: str) -> pytest.MarkDecorator:
    """Skip, naming the extra, where ``module`` is not installed."""
    missing = importlib.util.find_spec(module) is None
    reason = f"needs the {extra} extra: pip install -e '.[{extra}]'"
    return pytest.mark.skipif(missing, reason=reason)


@pytest.mark.parametrize(
    ("code", "needs"),
    [
        ("from memrules.seams import milvus_store", {"memrules.seams.milvus"}),
        ("from memrules.seams import qdrant_store", {"memrules.seams.qdrant"}),
        (
            "from memrules.seams import openai_embedder\n"
            "openai_embedder(base_url='http://127.0.0.1:9/v1', model='m')",
            {"memrules.seams.embedders", "memrules._io.http"},
        ),
        (
            "from memrules.seams import openai_summarizer",
            {"memrules.seams.summarizers", "memrules._io.http"},
        ),
        ("import memrules\nassert memrules.__version__", {"importlib.metadata"}),
        pytest.param(
            "import memrules\n"
            "memrules.load_config('store: {backend: qdrant}\\n"
            'embedder: {type: openai, base_url: "http://127.0.0.1:9/v1", model: m}\')',
            {"memrules.seams.qdrant", "memrules.seams.embedders"},
            marks=_needs("qdrant_client", "qdrant"),
        ),
        pytest.param(
            "import memrules.integrations.prometheus",
            {"prometheus_client"},
            marks=_needs("prometheus_client", "prometheus"),
        ),
    ],
    ids=["milvus", "qdrant", "embedder", "summarizer", "version", "config", "prometheus"],
)
def test_a_feature_loads_what_it_needs_when_used(code: str, needs: set[str]) -> None:
    assert needs <= _loaded_after(code)


def test_every_seam_name_resolves_and_is_listed() -> None:
    assert set(memrules.seams._WHERE) == set(memrules.seams.__all__)
    for name in memrules.seams.__all__:
        assert getattr(memrules.seams, name) is not None, name
        assert name in dir(memrules.seams)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memrules.seams.nope  # noqa: B018


def test_version_is_read_lazily_and_unknown_names_still_fail() -> None:
    assert memrules.__version__ == importlib.metadata.version("memrules")
    assert "__version__" in dir(memrules)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memrules.nope  # type: ignore[attr-defined]  # noqa: B018


def _imports_root(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.module == "memrules" and not node.level
    return isinstance(node, ast.Import) and any(a.name == "memrules" for a in node.names)


def test_no_module_of_memrules_imports_the_root_package() -> None:
    """The root package imports every layer; a module below that imports it
    (even inside a function) depends on everything, which no contract sees."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if _imports_root(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    """memrules' import graph, imports inside functions and under
    TYPE_CHECKING included (as lint-imports sees it)."""
    return grimp.build_graph("memrules", cache_dir=None)


def test_the_core_imports_nothing_above_it(graph: grimp.ImportGraph) -> None:
    upward = {
        (module, imported)
        for module in graph.find_descendants("memrules._core")
        for imported in graph.find_modules_directly_imported_by(module)
        if not imported.startswith("memrules._core")
    }
    assert upward == set()


def test_the_counters_do_not_know_each_other(graph: grimp.ImportGraph) -> None:
    inside = {
        imported
        for imported in graph.find_modules_directly_imported_by("memrules._counting.tokens")
        if imported.startswith("memrules._counting")
    }
    assert inside == set()
    for a, b in [("hf", "provider"), ("provider", "hf"), ("tokens", "schemes")]:
        chain = graph.find_shortest_chain(f"memrules._counting.{a}", f"memrules._counting.{b}")
        assert chain is None, chain


def test_counting_has_no_cycle(graph: grimp.ImportGraph) -> None:
    modules = graph.find_descendants("memrules._counting")
    cycles = {
        (a, b)
        for a in modules
        for b in graph.find_modules_directly_imported_by(a)
        if b in modules and graph.find_shortest_chain(b, a) is not None
    }
    assert cycles == set()
