"""The fenced code blocks of the docs site and the README, as values.

A block is read with its language, its ``title="..."`` (a file name, or
``Output`` for what the block before it prints), the HTML comments right
before it (how the docs tests run it), and the line its fence opens on.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")))

_FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<code>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
_TITLE = re.compile(r'title="(?P<title>[^"]+)"')
_COMMENT = re.compile(r"<!--\s*(?P<key>[a-z ]+):\s*(?P<value>.*?)\s*-->\s*$")
_NEEDS = re.compile(r"(?P<modules>[\w. ]+?)\s*\((?P<extra>[^)]+)\)")


@attrs.frozen(kw_only=True)
class Block:
    """One fenced block of ``page`` (a path relative to the checkout)."""

    page: str
    line: int
    language: str
    code: str
    title: str | None
    marks: tuple[tuple[str, str], ...]
    output_block: Block | None = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"

    def _mark(self, key: str) -> str | None:
        return next((v for k, v in self.marks if k == key), None)

    @property
    def skip(self) -> str | None:
        """Why the block is not run, when it is marked so."""
        return self._mark("not run")

    @property
    def loopback(self) -> bool:
        return self._mark("loopback") is not None

    @property
    def timeout(self) -> float:
        return float(self._mark("timeout") or 300)

    @property
    def needs(self) -> tuple[tuple[str, str], ...]:
        """(module, extra) pairs the block needs installed."""
        found = self._mark("needs")
        if found is None:
            return ()
        match = _NEEDS.fullmatch(found)
        if match is None:
            msg = f"{self}: <!-- needs: MODULE ... (EXTRA) --> expected, got {found!r}"
            raise ValueError(msg)
        return tuple((m, match["extra"]) for m in match["modules"].split())

    @property
    def output(self) -> str | None:
        return None if self.output_block is None else self.output_block.code

    def console_steps(self) -> list[tuple[str, str]]:
        """Each ``$ command`` of a console block with the lines shown under it."""
        steps: list[tuple[str, list[str]]] = []
        for line in self.code.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            elif steps:
                steps[-1][1].append(line)
            else:
                msg = f"{self}: a console block starts with a $ line"
                raise ValueError(msg)
        return [(command, "\n".join(shown)) for command, shown in steps]


def _marks(text: str, start: int) -> tuple[tuple[str, str], ...]:
    """The ``<!-- key: value -->`` comments on the lines right before ``start``."""
    lines = text[:start].splitlines()
    marks = []
    for line in reversed(lines):
        match = _COMMENT.match(line.strip())
        if match is None:
            break
        marks.append((match["key"].strip(), match["value"]))
    return tuple(reversed(marks))


def read_page(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    page = path.relative_to(ROOT).as_posix()
    found: list[Block] = []
    previous_end = -1
    for match in _FENCE.finditer(text):
        info = match["info"].strip()
        language = info.split()[0] if info else "text"
        title = _TITLE.search(info)
        block = Block(
            page=page,
            line=text.count("\n", 0, match.start()) + 1,
            language=language,
            code=match["code"],
            title=title["title"] if title else None,
            marks=_marks(text, match.start()),
        )
        if block.title == "Output" and found and not text[previous_end : match.start()].strip():
            found[-1] = attrs.evolve(found[-1], output_block=block)
        found.append(block)
        previous_end = match.end()
    return found


@functools.cache
def _pages() -> dict[str, tuple[Block, ...]]:
    return {p.relative_to(ROOT).as_posix(): tuple(read_page(p)) for p in PAGES}


def all_blocks() -> list[Block]:
    return [b for blocks in _pages().values() for b in blocks]


def page_blocks(page: str) -> tuple[Block, ...]:
    return _pages()[page]


def runnable(block: Block) -> bool:
    """Whether the docs tests run ``block`` (not a file, not shown output,
    not marked not run)."""
    if block.skip is not None or block.title is not None:
        return False
    return block.language in ("python", "sh", "console", "yaml")
