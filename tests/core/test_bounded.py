"""The one bounded table (memrules._core.bounded) and that every cache uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memrules._core.bounded import BoundedTable

PACKAGE = Path(__file__).resolve().parents[2] / "memrules"


def test_add_keeps_first_in_first_out_and_never_replaces() -> None:
    table: BoundedTable[str, int] = BoundedTable(2)
    table.add("a", 1)
    table.add("b", 2)
    table.add("a", 9)  # another thread computed it first: kept as it was
    table.add("c", 3)
    assert dict(table) == {"b": 2, "c": 3}


def test_put_and_touch_keep_least_recently_used_first() -> None:
    table: BoundedTable[str, int] = BoundedTable(2)
    table.put("a", 1)
    table.put("b", 2)
    table.touch("a")
    table.touch("missing")
    table.put("c", 3)
    assert list(table.items()) == [("a", 1), ("c", 3)]


def test_trim_passes_over_entries_in_use() -> None:
    table: BoundedTable[str, int] = BoundedTable(1)
    for key, users in (("a", 1), ("b", 0), ("c", 0)):
        table[key] = users
    table.trim(keep=lambda users: users > 0)
    assert list(table) == ["a"]


def test_a_zero_cap_holds_nothing() -> None:
    table: BoundedTable[str, int] = BoundedTable(0)
    table.add("a", 1)
    assert len(table) == 0


def test_no_module_writes_its_own_bounded_table() -> None:
    own = PACKAGE / "_core" / "bounded.py"
    for path in PACKAGE.rglob("*.py"):
        if path != own:
            text = path.read_text(encoding="utf-8")
            for word in ("OrderedDict", "popitem(last=False)", "move_to_end"):
                assert word not in text, f"{path.relative_to(PACKAGE)} uses {word}"


def test_blocking_requests_go_through_httpx_not_urllib() -> None:
    code = (
        "import sys, threading, http.server, urllib.request\n"
        "def refuse(*args, **kwargs): raise AssertionError('urlopen called')\n"
        "urllib.request.urlopen = refuse\n"
        "from memrules._io.http import JSONClient\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('Content-Length', '2')\n"
        "        self.end_headers(); self.wfile.write(b'{}')\n"
        "    def log_message(self, *a): pass\n"
        "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
        "threading.Thread(target=s.serve_forever, daemon=True).start()\n"
        "c = JSONClient(base_url=f'http://127.0.0.1:{s.server_port}/v1')\n"
        "assert c.get('x') == {}\n"
        "print('httpx' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    assert out == ["True"]
