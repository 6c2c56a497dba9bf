"""Run the memrules benchmark: ``python benchmarks/run.py [--quick] [--json FILE] ...``.

The same as ``memrules bench``; see benchmarks/README.md for what it measures.
"""

from __future__ import annotations

import sys

from memrules._cli.main import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
