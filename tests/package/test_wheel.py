"""The built wheel: the package and its data, and nothing of the source tree
beside it (the benchmark harness, the tests, the benchmarks, the configs).

The wheel is built offline by the project's own build backend, through the
PEP 517 hook a pip install calls (``hatchling.build.build_wheel``; hatchling
is in the test extra), then unpacked and run without the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST_INFO = "memrules-0.1.0.dist-info"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling", reason="the build backend: the test extra installs it")
    out = tmp_path_factory.mktemp("wheel")
    build = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", build, str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {info.filename for info in archive.infolist() if not info.is_dir()}


def _source_files() -> set[str]:
    """Every file of the package in the source tree, as the wheel names it."""
    found = set()
    for path in (ROOT / "memrules").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            found.add(path.relative_to(ROOT).as_posix())
    return found


def test_the_wheel_holds_the_package_and_its_metadata_only(names: set[str]) -> None:
    tops = {PurePosixPath(name).parts[0] for name in names}
    assert tops == {"memrules", DIST_INFO}
    assert not [n for n in names if n.startswith(("memrules/_bench/", "benchmarks/"))]
    assert not [n for n in names if "/tests/" in n or n.startswith(("tests/", "configs/"))]


def test_the_benchmark_harness_is_not_in_the_wheel(names: set[str]) -> None:
    assert [n for n in names if "/_bench/" in n or "harness/" in n] == []


def test_every_file_of_the_package_is_in_the_wheel(names: set[str]) -> None:
    package = {n for n in names if n.startswith("memrules/")}
    assert package == _source_files()
    # the data the package reads at run time, and the typing marker
    assert {"memrules/py.typed", "memrules/seams/_data/minilm-vocab.txt.gz"} <= package


def test_the_wheel_declares_the_command(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        entry_points = archive.read(f"{DIST_INFO}/entry_points.txt").decode()
    assert "memrules = memrules._cli.main:main" in entry_points


def _unpacked(wheel: Path, where: Path) -> dict[str, str]:
    """The wheel unpacked into ``where`` (a pure-Python wheel installs so), and
    an environment that imports memrules from there, not from the checkout."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(where)
    return {**os.environ, "PYTHONPATH": str(where)}


def test_the_installed_package_runs_and_has_no_bench_command(wheel: Path, tmp_path: Path) -> None:
    env = _unpacked(wheel, tmp_path / "site")
    code = (
        "import memrules, sys\n"
        "print(memrules.__file__)\n"
        "print(len(memrules.load_pipeline('max_messages: 3').apply(()).messages))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(tmp_path / "site" / "memrules" / "__init__.py"), "0"]

    # The benchmark is a script of the source tree (benchmarks/run.py), not a command.
    done = subprocess.run(
        [sys.executable, "-m", "memrules", "bench", "--quick"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    assert "invalid choice: 'bench'" in done.stderr
    imports = ("import benchmarks", "from benchmarks", '"benchmarks.')
    sources = (tmp_path / "site" / "memrules").rglob("*.py")
    assert [p for p in sources if any(i in p.read_text(encoding="utf-8") for i in imports)] == []
