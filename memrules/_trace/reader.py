"""Reading a trace: its header, then its request lines one at a time, each
input whole again (``prefix`` followed)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import attrs

from memrules._core.errors import TraceError
from memrules._core.jsontext import TOO_DEEP, JSONTextError, parse_json
from memrules._trace.deltas import InputRebuilder
from memrules._trace.header import (
    READS_VERSIONS,
    TRACE_FORMAT,
    TraceHeader,
)

__all__ = ["MAX_HEADER_DEPTH", "TraceLine", "read_trace"]

MAX_HEADER_DEPTH = 64
"""How deep a header's pipeline entry may nest: a config file nests at most
`MAX_DEPTH` levels, and its entry a few
more. A deeper one is a `TraceError`, not a ``RecursionError`` from
whatever reads it next (hashing the config, rebuilding it)."""


def _deeper_than(value: Any, limit: int) -> str | None:
    """The path of a value nested more than ``limit`` levels deep in
    ``value``, if there is one (read without recursion)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict):
            children = [(v, f"{path}.{k}", depth + 1) for k, v in item.items()]
        elif isinstance(item, list):
            children = [(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(item)]
        else:
            continue
        if depth >= limit and children:
            return path
        stack.extend(children)
    return None


def _parse(raw: bytes, where: str) -> Any:
    try:
        return parse_json(raw)
    except JSONTextError as exc:
        raise TraceError(f"{where}: {_json_problem(exc)}") from None


def _json_problem(exc: JSONTextError) -> str:
    """What a line's `JSONTextError` says, as a trace reader words it."""
    if exc.reason == TOO_DEEP or exc.reason.startswith("not UTF-8"):
        return exc.reason
    where = f": line {exc.line} column {exc.column}" if exc.line is not None else ""
    return f"not JSON: {exc.reason}{where}"


def _read_header(data: Any, where: str) -> TraceHeader:
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        msg = f"{where}: not a memrules trace (its first line has no format {TRACE_FORMAT!r})"
        raise TraceError(msg)
    version = data.get("version")
    if version not in READS_VERSIONS or isinstance(version, bool):
        msg = (
            f"{where}: a trace of format version {version!r}; this memrules reads versions "
            f"{', '.join(map(str, READS_VERSIONS))}"
        )
        raise TraceError(msg)
    pipelines = data.get("pipelines")
    if not isinstance(pipelines, list) or not all(isinstance(p, dict) for p in pipelines):
        msg = f"{where}: the header's pipelines are not a list of objects"
        raise TraceError(msg)
    for i, entry in enumerate(pipelines):
        deep = _deeper_than(entry, MAX_HEADER_DEPTH)
        if deep is not None:
            msg = (
                f"{where}: pipelines[{i}]{deep[:80]}... is nested more than "
                f"{MAX_HEADER_DEPTH} levels deep; no pipeline's entry is"
            )
            raise TraceError(msg)
    return TraceHeader(
        version=version, memrules=str(data.get("memrules", "?")), pipelines=tuple(pipelines)
    )


@attrs.frozen(kw_only=True, slots=True)
class TraceLine:
    """One request line of a trace: where it is (``line``, 1-based), its
    bytes as written, the parsed value with its input whole (``prefix``
    followed), and the ``prefix`` as written (None for a line written whole)."""

    line: int
    raw: bytes
    data: dict[str, Any]
    prefix: Any = None


def read_trace(path: str | os.PathLike[str]) -> tuple[TraceHeader, Iterator[TraceLine]]:
    """The trace at ``path``: its header, and its request lines one at a
    time, each input whole (the file stays open until the iterator is
    exhausted or closed).
    Raises `TraceError` naming the file and line of
    anything that is not a trace."""
    name = str(path)
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed by the iterator
    except OSError as exc:
        msg = f"cannot read the trace {name}: {exc.strerror or exc}"
        raise TraceError(msg) from None
    first = file.readline()
    if not first:
        file.close()
        msg = f"{name}: empty, not a memrules trace"
        raise TraceError(msg)
    try:
        header = _read_header(_parse(first, f"{name}:1"), f"{name}:1")
    except TraceError:
        file.close()
        raise

    def lines() -> Iterator[TraceLine]:
        inputs = InputRebuilder(enabled=header.version >= 2)
        with file:
            for number, raw in enumerate(file, start=2):
                if not raw.strip():
                    continue
                where = f"{name}:{number}"
                data = _parse(raw, where)
                if not isinstance(data, dict) or "kind" not in data:
                    msg = f"{where}: not a trace line (an object with a kind)"
                    raise TraceError(msg)
                request = data.get("request")
                request = request if isinstance(request, int) else number - 2
                whole = inputs.rebuild(request, data, where)
                yield TraceLine(line=number, raw=raw, data=whole, prefix=data.get("prefix"))

    return header, lines()
