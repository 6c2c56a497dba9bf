"""``import memrules`` loads none of the library: each public name is
imported from its module the first time it is asked for, so a program (a
memory route's first request in a fresh process, a CLI command) pays only
for the parts it uses. Each check runs in a fresh interpreter, since this
test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Loaded by the eager package before; none of them is needed to import it.
HEAVY = (
    "attrs",
    "yaml",
    "tiktoken",
    "re2",
    "memrules._core.messages",
    "memrules._config",
    "memrules._counting",
    "memrules._engine",
    "memrules._plugin",
    "memrules._runtime",
    "memrules._trace",
    "memrules._replay",
    "memrules.graph",
    "memrules.memory",
    "memrules.seams",
    "memrules.strategies",
)


def _run(code: str) -> dict[str, object]:
    script = textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_import_memrules_loads_none_of_the_library() -> None:
    got = _run(
        """
        import json, sys
        import memrules
        print(json.dumps({"loaded": sorted(sys.modules)}))
        """
    )
    loaded = set(got["loaded"])  # type: ignore[arg-type]
    assert "memrules" in loaded
    assert sorted(m for m in HEAVY if m in loaded) == []
    assert sorted(m for m in loaded if m.startswith("memrules.")) == [
        "memrules._core",
        "memrules._core.public_names",
    ]


def test_a_name_loads_its_module_and_reports_the_package() -> None:
    got = _run(
        """
        import json, sys
        import memrules
        before = "memrules._core.messages" in sys.modules
        message = memrules.Message
        print(json.dumps({
            "before": before,
            "after": "memrules._core.messages" in sys.modules,
            "module": message.__module__,
            "same": message is sys.modules["memrules._core.messages"].Message,
            "cached": "Message" in vars(memrules),
            "graph": "memrules.graph" in sys.modules,
        }))
        """
    )
    assert got == {
        "before": False,
        "after": True,
        "module": "memrules",
        "same": True,
        "cached": True,
        "graph": False,
    }


def test_public_modules_resolve_and_retired_names_do_not() -> None:
    got = _run(
        """
        import json
        import memrules
        print(json.dumps({
            "strategies": memrules.strategies.__name__,
            "retired": not hasattr(memrules, "ConversionMemo"),
            "missing": not hasattr(memrules, "NoSuchName"),
            "listed": sorted(set(memrules.__all__) - set(dir(memrules))),
        }))
        """
    )
    assert got == {
        "strategies": "memrules.strategies",
        "retired": True,
        "missing": True,
        "listed": [],
    }


def test_the_local_embedder_does_not_load_the_http_client() -> None:
    # The local model's path (a memory route's first request) never talks
    # HTTP; the OpenAI-compatible embedder loads the client when it is made.
    got = _run(
        """
        import json, sys
        from memrules.seams.embedders import local_embedder, openai_embedder
        local_embedder()
        local = "memrules._io.http" in sys.modules
        embedder = openai_embedder(base_url="http://127.0.0.1:9/v1", model="m")
        print(json.dumps({
            "local": local,
            "openai": "memrules._io.http" in sys.modules,
            "repr": repr(embedder),
        }))
        """
    )
    assert got == {
        "local": False,
        "openai": True,
        "repr": "openai_embedder(base_url='http://127.0.0.1:9/v1', model='m')",
    }


def test_a_local_index_search_ranks_as_a_full_sort_without_numpy_ma() -> None:
    # More rows than k, many tied at the k-th score: the tied rows compete on
    # row order, exactly as a full sort by (score descending, row) would.
    got = _run(
        """
        import json, sys
        from memrules.seams._local_index import LocalIndex
        index = LocalIndex(2)
        vectors = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]] * 4
        index.upsert(
            (f"id{i}", ("u", "t", "c"), v, ([i % 3], [1.0 + i % 2]))
            for i, v in enumerate(vectors)
        )
        where = {"user": "u", "tenant": "t", "conversation": None}
        dense = {k: index.dense([1.0, 0.2], k=k, **where) for k in (1, 3, 5, 8, 30)}
        lexical = {k: index.lexical({1: 1.0}, k=k, **where) for k in (1, 3, 5, 30)}
        print(json.dumps({"ma": "numpy.ma" in sys.modules, "dense": dense, "lexical": lexical}))
        """
    )
    assert got["ma"] is False
    for name, ranked in (("dense", got["dense"]), ("lexical", got["lexical"])):
        full = ranked["30"]  # type: ignore[index]
        assert full == sorted(full, key=lambda hit: (-hit[1], int(hit[0][2:])))
        for k, hits in ranked.items():  # type: ignore[attr-defined]
            assert hits == full[: int(k)], (name, k)
