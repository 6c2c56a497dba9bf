"""Run the memrules benchmark: ``python benchmarks/run.py [--quick] [--json FILE] ...``.

The same as ``memrules bench``, with this checkout's ``memrules`` first on
the path, so the harness measures the code beside it; see
benchmarks/README.md for what it measures.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memrules._cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
