"""``memrules show TRACE``: a trace for people to read.

``--html FILE`` writes a viewer: one self-contained page (plain HTML, a
little inline script, nothing loaded from elsewhere) with the trace's
pipelines, and for each request what came in, what each strategy run
removed, replaced or inserted (the messages themselves, not only their
indices), the seam calls with their requests and answers, and the tokens
before and after; navigable by conversation and request (the list on the
left, the ``#request-N`` address of each, and the ``j``/``k`` keys for the
next and previous request). Without ``--html``, one text line per request.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memrules._trace.reader import TraceLine, read_trace

__all__ = ["summary_text", "viewer_html"]

MAX_TEXT = 2000
"""How many characters of a message or seam call the viewer shows before it cuts."""

STYLE = """
body { font-family: system-ui, sans-serif; margin: 0; color: #222; background: #fff;
       display: flex; height: 100vh; }
nav { width: 18em; overflow-y: auto; border-right: 1px solid #ccc; padding: 0.5em;
      background: #fafafa; flex: none; }
nav h2 { font-size: 1em; margin: 0.8em 0 0.2em; }
nav a { display: block; padding: 0.1em 0.4em; color: #135; text-decoration: none;
        font-size: 0.9em; }
nav a.current { background: #dde8f5; }
main { flex: 1; overflow-y: auto; padding: 1em 2em; }
section.request { display: block; }
body.js section.request { display: none; }
body.js section.request.current { display: block; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
td.text { white-space: pre-wrap; max-width: 60em; font-family: ui-monospace, monospace;
          font-size: 0.85em; }
.removed { background: #fde2e2; }
.replaced { background: #fff2cc; }
.inserted { background: #e2f5e2; }
.error { color: #a00; }
.note { color: #555; font-size: 0.9em; }
pre { white-space: pre-wrap; font-size: 0.8em; background: #f7f7f7; padding: 0.4em;
      max-height: 20em; overflow-y: auto; }
"""

SCRIPT = """
(function () {
  document.body.classList.add("js");
  var sections = Array.prototype.slice.call(document.querySelectorAll("section.request"));
  var links = Array.prototype.slice.call(document.querySelectorAll("nav a.request"));
  function show(id) {
    var found = false;
    sections.forEach(function (s) {
      var on = s.id === id; s.classList.toggle("current", on); if (on) { found = true; }
    });
    links.forEach(function (a) {
      a.classList.toggle("current", a.getAttribute("href") === "#" + id);
    });
    if (!found && sections.length) { show(sections[0].id); }
  }
  function current() {
    for (var i = 0; i < sections.length; i++) {
      if (sections[i].classList.contains("current")) { return i; }
    }
    return 0;
  }
  window.addEventListener("hashchange", function () { show(location.hash.slice(1)); });
  document.addEventListener("keydown", function (e) {
    if (!sections.length) { return; }
    var i = current();
    if (e.key === "j" && i + 1 < sections.length) { location.hash = sections[i + 1].id; }
    if (e.key === "k" && i > 0) { location.hash = sections[i - 1].id; }
  });
  show(location.hash ? location.hash.slice(1) : (sections.length ? sections[0].id : ""));
})();
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _clip(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}… ({len(text) - MAX_TEXT:,} more characters)"


def _message_text(message: Mapping[str, Any]) -> str:
    """A message's parts as text: text as it is, tool calls and results
    named, anything else by its kind."""
    out = []
    for part in message.get("parts") or ():
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text":
            out.append(str(part.get("text", "")))
        elif kind == "tool_call":
            out.append(f"[call {part.get('name')} {part.get('id')}] {part.get('arguments')}")
        elif kind == "tool_result":
            content = part.get("content")
            shown = content if isinstance(content, str) else json.dumps(content)
            out.append(f"[result of {part.get('call_id')}] {shown}")
        else:
            out.append(f"[{kind} {part.get('kind', '')}]".rstrip(" ]") + "]")
    return _clip("\n".join(out))


def _messages_table(
    messages: Sequence[Any], marks: Mapping[int, str] | None = None, *, caption: str
) -> str:
    if not messages:
        return f"<p class=note>{_e(caption)}: none.</p>"
    rows = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        mark = (marks or {}).get(i, "")
        rows.append(
            f'<tr class="{mark}"><td>{i}</td><td>{_e(m.get("role"))}</td>'
            f"<td>{_e(m.get('id') or '')}</td><td class=text>{_e(_message_text(m))}</td></tr>"
        )
    return (
        f"<h4>{_e(caption)} ({len(messages)})</h4><table><thead><tr><th>#</th><th>role</th>"
        f"<th>id</th><th>text</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _json(value: Any) -> str:
    return _e(_clip(json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True)))


def _actions(report: Mapping[str, Any], messages: Sequence[Any]) -> str:
    """Each strategy run that did something (or failed): what it removed,
    replaced and inserted, as the messages of its input and output where
    the report's indices reach them (the first pass's input is the request's)."""
    actions = [a for a in report.get("actions") or () if isinstance(a, Mapping)]
    acted = [a for a in actions if a.get("changed") or a.get("error")]
    rows = []
    for a in acted:
        removed = a.get("removed") or []
        replaced = a.get("replaced") or []
        inserted = a.get("inserted") or []
        what = []
        if removed:
            ids = [str(i) for i in a.get("removed_ids") or ()]
            what.append(f"removed {len(removed)}: {', '.join(ids) or removed}")
        if replaced:
            ids = [str(i) for i in a.get("replaced_ids") or ()]
            what.append(f"replaced {len(replaced)}: {', '.join(ids) or replaced}")
        if inserted:
            what.append(f"inserted {len(inserted)} at {inserted}")
        if a.get("closed_calls"):
            what.append(f"closed calls {', '.join(map(str, a['closed_calls']))}")
        if a.get("note"):
            what.append(str(a["note"]))
        error = f"<div class=error>{_e(a['error'])}</div>" if a.get("error") else ""
        calls = a.get("seam_calls") or []
        seams = f"<div class=note>{len(calls)} seam call(s)</div>" if calls else ""
        rows.append(
            f"<tr><td>{_e(a.get('strategy'))}</td><td>{_e(a.get('pass'))}</td>"
            f"<td>{_e(a.get('messages_before'))} → {_e(a.get('messages_after'))}</td>"
            f"<td>{_e(a.get('tokens_before'))} → {_e(a.get('tokens_after'))}</td>"
            f"<td>{_e('; '.join(what))}{error}{seams}</td></tr>"
        )
    ran = len(actions)
    head = f"<h4>Strategies ({len(acted)} of {ran} runs acted)</h4>"
    if not rows:
        return head + "<p class=note>No strategy changed anything.</p>"
    return (
        head + "<table><thead><tr><th>strategy</th><th>pass</th><th>messages</th><th>tokens</th>"
        f"<th>what it did</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _input_marks(report: Mapping[str, Any], count: int) -> dict[int, str]:
    """Which input messages left the output (removed) or came out changed
    (replaced), from the report's ``origin``."""
    origin = report.get("origin") or []
    kept = {o for o in origin if isinstance(o, int)}
    marks = {i: "removed" for i in range(count) if i not in kept}
    first = next((a for a in report.get("actions") or () if isinstance(a, Mapping)), None)
    if first is not None and first.get("pass") == 1:
        for pair in first.get("replaced") or ():
            if isinstance(pair, list) and pair and pair[0] in kept:
                marks[pair[0]] = "replaced"
    return marks


def _output_marks(report: Mapping[str, Any]) -> dict[int, str]:
    origin = report.get("origin") or []
    return {j: "inserted" for j, o in enumerate(origin) if o is None}


def _calls(calls: Sequence[Any]) -> str:
    if not calls:
        return "<p class=note>No seam calls.</p>"
    rows = []
    for c in calls:
        if not isinstance(c, Mapping):
            continue
        error = f"<div class=error>{_e(c['error'])}</div>" if c.get("error") else ""
        depth = "&nbsp;&nbsp;" * int(c.get("depth", 0) or 0)
        rows.append(
            f"<tr><td>{depth}{_e(c.get('seam'))}.{_e(c.get('operation'))}</td>"
            f"<td><pre>{_json(c.get('request'))}</pre></td>"
            f"<td><pre>{_json(c.get('response'))}</pre>{error}</td></tr>"
        )
    return (
        f"<h4>Seam calls ({len(rows)})</h4><table><thead><tr><th>call</th><th>request</th>"
        f"<th>answer</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _n(value: object) -> str:
    return f"{value:,}" if isinstance(value, int) else "?"


def _tokens(data: Mapping[str, Any]) -> str:
    report = data.get("report")
    if not isinstance(report, Mapping):
        return ""
    return (
        f"<p>tokens {_n(report.get('tokens_before'))} → {_n(report.get('tokens_after'))}; "
        f"messages {report.get('messages_before', '?')} → {report.get('messages_after', '?')}; "
        f"{report.get('passes', 0)} pass(es), stopped: {_e(report.get('stop_reason'))}"
        f" (counted by {_e(report.get('counter') or '?')})</p>"
    )


def _section(number: int, data: Mapping[str, Any], pipelines: Sequence[str]) -> str:
    kind = str(data.get("kind"))
    index = data.get("pipeline")
    pipeline = pipelines[index] if isinstance(index, int) and 0 <= index < len(pipelines) else "?"
    conversation = data.get("conversation_id")
    title = f"Request {number}: {kind}, pipeline {pipeline}"
    if conversation is not None:
        title += f", conversation {conversation}"
    parts = [f'<section class="request" id="request-{number}"><h3>{_e(title)}</h3>']
    found = data.get("report")
    report: Mapping[str, Any] | None = found if isinstance(found, Mapping) else None
    given = data.get("messages")
    messages: list[Any] = given if isinstance(given, list) else []
    parts.append(_tokens(data))
    if kind == "recall":
        parts.append(f"<p>query: <q>{_e(data.get('query'))}</q>, k={_e(data.get('k'))}</p>")
        hits = data.get("hits") or []
        parts.append(f"<h4>Hits ({len(hits)})</h4><pre>{_json(hits)}</pre>")
    elif kind == "answer":
        parts.append(
            f"<p>question {_e(data.get('question'))}: <q>{_e(data.get('query'))}</q>; "
            f"reference: <q>{_e(data.get('reference'))}</q></p>"
            f"<p>answer ({_e(data.get('answer_model'))}): <q>{_e(data.get('answer'))}</q>; "
            f"judge ({_e(data.get('judge_model'))}): {_e(data.get('verdict'))}, "
            f"score {_e(data.get('score'))}</p>"
        )
        got = data.get("context")
        context: list[Any] = got if isinstance(got, list) else []
        parts.append(_messages_table(context, caption="Context the answer model got"))
    else:
        marks = _input_marks(report, len(messages)) if report is not None else {}
        parts.append(_messages_table(messages, marks, caption="What came in"))
        if report is not None:
            parts.append(_actions(report, messages))
        output = data.get("output")
        if isinstance(output, list):
            out_marks = _output_marks(report) if report is not None else {}
            parts.append(_messages_table(output, out_marks, caption="What went out"))
        if report is not None and report.get("errors"):
            errors = "".join(f"<li>{_e(e)}</li>" for e in report["errors"])
            parts.append(f"<h4 class=error>Errors</h4><ul class=error>{errors}</ul>")
    parts.append(_calls(data.get("calls") or []))
    parts.append("</section>")
    return "".join(parts)


def _navigation(entries: Sequence[tuple[int, Mapping[str, Any]]], pipelines: Sequence[str]) -> str:
    groups: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for number, data in entries:
        key = str(data.get("conversation_id") or "(no conversation)")
        groups.setdefault(key, []).append((number, data))
    parts = ["<nav><h1 style='font-size:1.1em'>memrules trace</h1>"]
    for conversation, items in groups.items():
        parts.append(f"<h2>{_e(conversation)}</h2>")
        for number, data in items:
            index = data.get("pipeline")
            name = (
                pipelines[index] if isinstance(index, int) and 0 <= index < len(pipelines) else "?"
            )
            parts.append(
                f'<a class="request" href="#request-{number}">{number}: {_e(data.get("kind"))}'
                f" · {_e(name)}</a>"
            )
    parts.append("</nav>")
    return "".join(parts)


def _header(header: Any) -> str:
    rows = []
    for entry in header.pipelines:
        config = entry.get("config") or {}
        strategies = ", ".join(
            str(s.get("type")) for s in config.get("strategies") or () if isinstance(s, Mapping)
        )
        missing = entry.get("not_rebuildable")
        warn = (
            f"<div class=error>not rebuildable: {_e(', '.join(missing))}</div>" if missing else ""
        )
        rows.append(
            f"<tr><td>{_e(entry.get('name'))}</td><td>{_e(str(entry.get('config_sha256'))[:12])}"
            f"</td><td>{_e(entry.get('encoder'))}</td><td>{_e(strategies)}{warn}</td></tr>"
        )
    return (
        f"<p class=note>format version {header.version}, written by memrules "
        f"{_e(header.memrules)}</p><h2>Pipelines</h2><table><thead><tr><th>name</th>"
        "<th>config sha256</th><th>encoder</th><th>strategies</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _numbered(lines: Iterable[TraceLine]) -> list[tuple[int, dict[str, Any]]]:
    out = []
    for line in lines:
        number = line.data.get("request")
        out.append((number if isinstance(number, int) else line.line - 2, line.data))
    return out


def viewer_html(path: str | os.PathLike[str]) -> str:
    """The viewer of the trace at ``path`` (see the module docs)."""
    header, lines = read_trace(path)
    entries = _numbered(lines)
    pipelines = [str(p.get("name")) for p in header.pipelines]
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>memrules trace {_e(os.path.basename(os.fspath(path)))}</title>",
        f"<style>{STYLE}</style></head><body>",
        _navigation(entries, pipelines),
        f"<main><h1>{_e(os.fspath(path))}</h1>",
        _header(header),
        f"<h2>Requests ({len(entries)})</h2>",
        "<p class=note>Pick a request on the left; j and k step to the next and previous one. "
        "Input rows in red left the output; yellow ones came out changed; green output rows "
        "were made by a strategy.</p>",
        *(_section(number, data, pipelines) for number, data in entries),
        "</main>",
        f"<script>{SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(body) + "\n"


def summary_text(path: str | os.PathLike[str]) -> str:
    """One line per request: number, kind, pipeline, conversation, tokens."""
    header, lines = read_trace(path)
    pipelines = [str(p.get("name")) for p in header.pipelines]
    out = []
    for number, data in _numbered(lines):
        index = data.get("pipeline")
        name = pipelines[index] if isinstance(index, int) and 0 <= index < len(pipelines) else "?"
        report = data.get("report")
        tokens = ""
        if isinstance(report, Mapping):
            tokens = f" tokens {report.get('tokens_before')} -> {report.get('tokens_after')}"
        conversation = data.get("conversation_id")
        who = "" if conversation is None else f" conversation {conversation}"
        out.append(f"{number}: {data.get('kind')} pipeline {name}{who}{tokens}")
    return "\n".join(out) + "\n"
