"""Seeded, realistic agent histories for the benchmark.

:func:`agent_history` builds a coding agent's log: a long system prompt
first, then turns. A turn is a user request (English prose, sometimes Chinese
or Japanese, sometimes with a pasted traceback or code), a run of tool steps
(1 to 40, a fifth of them long), and the assistant's answer (prose and code).
A tool step is an assistant message with one call, or with 2 to 4 parallel
calls, followed by one tool message per call. The tools are ``read_file``
(2 to 8 KB of numbered source, docs or CJK docs; files get re-read after
edits), ``grep``, ``run_tests``, ``list_dir`` and ``edit_file`` (whose
arguments carry code).

Every message is built twice from the same draw: as a memrules
:class:`~memrules._core.messages.Message` and as an OpenAI chat-completions dict,
and ``from_openai(history.openai) == history.messages``. The same seed and
size give the same history, on any machine; each size is its own draw, not
a prefix of a bigger one. The history never ends inside a tool step (the
last message is a user message, a tool result that completes its step, or
an answer). In ``o200k_base`` a history averages about 500 tokens a message.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Sequence
from typing import Any

import attrs

from memrules._core.messages import Conversation, Message, Role, Text, ToolCall, ToolResult

__all__ = ["History", "agent_history", "request_points"]

OpenAIMessage = dict[str, Any]


@attrs.frozen(kw_only=True, slots=True)
class History:
    """One generated history, as memrules messages and as OpenAI dicts
    (index ``i`` of one is index ``i`` of the other)."""

    seed: int
    messages: Conversation
    openai: tuple[OpenAIMessage, ...]

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def text_bytes(self) -> int:
        """UTF-8 size of everything token counting sees (role and text)."""
        return sum(len(f"{m.role} {m.countable_text}".encode()) for m in self.messages)


# --------------------------------------------------------------------------- word pools


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_WORDS = _split(
    "the a an of to in for on with by from as at that this these those it its is are was be "
    "been will would should can could may might must not no and or but if then when while "
    "because so also only just still already yet again each every all some any function class "
    "method module package import export return value values type types string integer list "
    "dict tuple set map array buffer stream file files path paths directory config "
    "configuration setting settings option options flag flags default request response client "
    "server handler handlers router route routes endpoint token tokens budget window cache "
    "cached counter counts message messages conversation turn turns history summary summaries "
    "tool tools call calls result results error errors exception traceback test tests fixture "
    "fixtures assertion failure failures pass passes build builds release version versions "
    "dependency dependencies lock schema query queries index indices table tables row rows "
    "column columns database migration user users session sessions account permission "
    "permissions role roles policy retry retries timeout timeouts backoff latency throughput "
    "memory allocation leak thread threads lock locks queue worker workers task tasks job "
    "jobs scheduler event events log logs logger metric metrics trace span parser parsing "
    "serializer encoder decoder input output payload header headers body status code codes "
    "line lines change changes diff patch commit branch merge review refactor rename remove "
    "add update fix fixes bug bugs issue issues regression behaviour behavior edge case cases "
    "invariant invariants contract interface protocol implementation wrapper adapter strategy "
    "strategies pipeline step steps stage stages pass passes limit limits first last next "
    "previous newest oldest large small empty missing invalid valid slow fast expensive cheap "
    "safe unsafe stable flaky deterministic random seeded read write open close load save "
    "parse format render validate normalize compute check run start stop create delete keep "
    "drop trim split join merge sort filter look see think need want try found seems looks "
    "means makes takes gives returns raises handles expects keeps drops counts walks builds "
    "reads writes calls runs"
)
_NAMES = _split(
    "user session token cache budget window message history parser config router handler "
    "client server result error record entry item node graph state context request response "
    "payload buffer stream chunk batch page cursor offset limit counter metric span trace "
    "event queue worker task job schedule policy rule strategy pipeline step stage report "
    "summary index table column schema"
)
_VERBS = _split(
    "get set load save parse build make read write compute check validate normalize count "
    "trim merge split filter apply render resolve fetch send handle update create delete find "
    "collect format encode decode flush reset"
)
_EXCEPTIONS = ("ValueError", "KeyError", "TypeError", "RuntimeError", "ConfigError")
_ZH = (
    "请帮我看一下这个函数为什么在长对话里越来越慢。",
    "我们的代理每一轮都会把完整的历史记录发给模型，所以需要在请求前裁剪。",
    "这个测试在本地可以通过，但是在持续集成里偶尔失败。",
    "缓存的上限应该写在文档里，并且在超过上限时按先进先出淘汰。",
    "工具调用和工具结果必须成对出现，否则接口会直接拒绝请求。",
    "请不要修改公共接口，只在内部实现里做优化。",
    "我已经把配置文件改成了新的格式，请检查一下迁移脚本。",
    "这里的令牌预算是十万，系统提示大约占两千个令牌。",
    "如果最新的一轮本身就超过了预算，应该尽量保留最新的消息。",
    "日志显示在第三次重试之后连接超时了。",
    "这段代码的时间复杂度是平方级的，历史越长越明显。",
    "请用中文总结一下你做了哪些修改以及为什么。",
    "数据库迁移需要在部署之前完成，否则服务会启动失败。",
    "读取文件的结果太大了，可以考虑只保留最新的一次读取。",
    "我们需要一个基准测试来比较不同实现的速度和预算利用率。",
)
_JA = (
    "このテストはローカルでは通りますが、CIでは時々失敗します。",
    "長い会話履歴でトークン数を毎回数え直すのは無駄です。",
    "ツール呼び出しと結果のペアを壊さないように注意してください。",
    "設定ファイルの形式を変更したので、読み込み処理も直す必要があります。",
    "キャッシュの上限を超えたら古いものから削除します。",
    "最新のユーザーメッセージは必ず残してください。",
    "エラーメッセージには修正方法も書いておくと親切です。",
    "この関数は純粋関数なので、同じ入力には同じ出力を返します。",
    "変更点を日本語で簡単にまとめてください。",
    "ベンチマークの結果を表にして比較しましょう。",
)
_DIRS = ("src/app", "src/core", "src/api", "src/storage", "lib", "tests", "docs", "scripts")


class _Draw:
    """Text pieces from one seeded random source."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def ident(self) -> str:
        r = self.rng
        return f"{r.choice(_VERBS)}_{r.choice(_NAMES)}"

    def sentence(self, lo: int = 6, hi: int = 22) -> str:
        words = self.rng.choices(_WORDS, k=self.rng.randint(lo, hi))
        words[0] = words[0].capitalize()
        if self.rng.random() < 0.3:
            words.insert(self.rng.randrange(len(words)), f"`{self.ident()}()`")
        return " ".join(words) + self.rng.choice(".....?:")

    def paragraph(self, lo: int = 2, hi: int = 6) -> str:
        return " ".join(self.sentence() for _ in range(self.rng.randint(lo, hi)))

    def prose(self, paragraphs: int) -> str:
        return "\n\n".join(self.paragraph() for _ in range(paragraphs))

    def cjk(self, sentences: int) -> str:
        pool = _ZH if self.rng.random() < 0.6 else _JA
        return "".join(self.rng.choice(pool) for _ in range(sentences))

    def statement(self, indent: str) -> list[str]:
        r = self.rng
        a, b, c = r.choice(_NAMES), r.choice(_NAMES), r.choice(_NAMES)
        kind = r.randrange(8)
        if kind == 0:
            return [f"{indent}{a} = {self.ident()}({b}, {c}={r.randint(0, 4096)})"]
        if kind == 1:
            return [
                f"{indent}if {a} is None:",
                f'{indent}    msg = f"{self.sentence(3, 8)[:-1]}: {{{b}!r}}"',
                f"{indent}    raise {r.choice(_EXCEPTIONS)}(msg)",
            ]
        if kind == 2:
            return [
                f"{indent}for {a} in {b}s:",
                f"{indent}    {c}s.append({self.ident()}({a}))",
            ]
        if kind == 3:
            return [f"{indent}# {self.sentence(5, 14)}"]
        if kind == 4:
            return [
                f"{indent}{a}_{b} = {{{c!r}: {a}.{b} for {a} in {c}s if {a}.{r.choice(_NAMES)}}}"
            ]
        if kind == 5:
            return [
                f"{indent}try:",
                f"{indent}    {a} = self.{self.ident()}({b})",
                f"{indent}except {r.choice(_EXCEPTIONS)} as exc:",
                f'{indent}    log.warning("{self.sentence(3, 8)[:-1]}", exc_info=exc)',
            ]
        if kind == 6:
            return [f"{indent}total += len({a}.{b}) * {r.randint(2, 64)}"]
        return [f"{indent}return {self.ident()}({a}, {b})"]

    def function(self, indent: str = "") -> list[str]:
        r = self.rng
        args = ", ".join(
            f"{n}: {r.choice(('str', 'int', 'list[str]', 'Config'))}"
            for n in r.sample(_NAMES, r.randint(1, 3))
        )
        lines = [f"{indent}def {self.ident()}({args}) -> {r.choice(('int', 'str', 'None'))}:"]
        doc = self.sentence(5, 14) if r.random() < 0.85 else self.cjk(1)
        lines.append(f'{indent}    """{doc}"""')
        for _ in range(r.randint(3, 9)):
            lines.extend(self.statement(indent + "    "))
        lines.append("")
        return lines

    def code(self, target_bytes: int) -> str:
        r = self.rng
        lines = [f"from {r.choice(_NAMES)} import {self.ident()}, {self.ident()}", ""]
        size = 0
        while size < target_bytes:
            if r.random() < 0.25:
                cls = f"{r.choice(_NAMES).capitalize()}{r.choice(_NAMES).capitalize()}"
                block = [f"class {cls}:", f'    """{self.sentence()}"""', ""]
                for _ in range(r.randint(1, 3)):
                    block.extend(self.function("    "))
            else:
                block = self.function()
            lines.extend(block)
            size += sum(len(x) + 1 for x in block)
        return "\n".join(lines)

    def doc(self, target_bytes: int, cjk: bool) -> str:
        parts = [f"# {self.sentence(2, 6)[:-1]}"]
        size = 0
        while size < target_bytes:
            if cjk:
                piece = self.cjk(self.rng.randint(2, 6))
            elif self.rng.random() < 0.2:
                piece = "```python\n" + "\n".join(self.function()) + "```"
            else:
                piece = self.paragraph()
            if self.rng.random() < 0.2:
                piece = f"## {self.sentence(2, 5)[:-1]}\n\n{piece}"
            parts.append(piece)
            size += len(piece.encode())
        return "\n\n".join(parts)

    def call_id(self) -> str:
        return "call_" + "".join(self.rng.choices(string.ascii_letters + string.digits, k=24))


@attrs.define(slots=True)
class _File:
    path: str
    kind: str  # "code", "doc" or "cjk"
    body: str


def _numbered(body: str, limit: int) -> str:
    """``body`` with ``cat -n`` line numbers, cut to at most ``limit`` bytes
    (at a line end when one is near, as read tools truncate)."""
    text = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(body.split("\n"), 1))
    raw = text.encode()
    if len(raw) <= limit:
        return text
    cut = raw[:limit].decode(errors="ignore")
    end = cut.rfind("\n")
    return cut[:end] if end >= len(cut) - 200 else cut


class _Builder:
    """Appends messages in both forms; knows how many slots are left."""

    def __init__(self, seed: int, size: int) -> None:
        self.rng = random.Random(seed)
        self.draw = _Draw(self.rng)
        self.size = size
        self.messages: list[Message] = []
        self.openai: list[OpenAIMessage] = []
        self.files = [self._new_file(i) for i in range(max(24, size // 25))]
        self.cjk_turn = False

    @property
    def left(self) -> int:
        return self.size - len(self.messages)

    def _new_file(self, i: int) -> _File:
        r = self.rng
        kind = r.choices(("code", "doc", "cjk"), weights=(7, 2, 1))[0]
        stem = f"{r.choice(_NAMES)}_{r.choice(_NAMES)}_{i}"
        if kind == "code":
            return _File(
                f"{r.choice(_DIRS)}/{stem}.py", kind, self.draw.code(r.randint(3000, 9000))
            )
        suffix = "_zh.md" if kind == "cjk" else ".md"
        body = self.draw.doc(r.randint(2500, 8000), cjk=kind == "cjk")
        return _File(f"docs/{stem}{suffix}", kind, body)

    def add(self, message: Message, raw: OpenAIMessage) -> None:
        self.messages.append(message)
        self.openai.append(raw)

    def text(self, role: Role, text: str) -> None:
        self.add(Message(role=role, parts=(Text(text=text),)), {"role": role, "content": text})

    # ------------------------------------------------------------------ pieces

    def system(self) -> None:
        d = self.draw
        tools = "\n".join(
            f"- {name}: {d.sentence(8, 20)}"
            for name in ("read_file", "grep", "run_tests", "list_dir", "edit_file")
        )
        text = (
            "You are a careful coding agent working in the user's repository.\n\n"
            f"{d.prose(6)}\n\n## Tools\n{tools}\n\n## Rules\n"
            + "\n".join(f"{i}. {d.sentence(10, 24)}" for i in range(1, 16))
            + f"\n\n{d.prose(4)}\n\n{d.cjk(3)}"
        )
        self.text("system", text)

    def user(self) -> None:
        d, r = self.draw, self.rng
        self.cjk_turn = r.random() < 0.15
        body = d.cjk(r.randint(2, 8)) if self.cjk_turn else d.prose(r.randint(1, 3))
        roll = r.random()
        if roll < 0.15:
            file = r.choice(self.files)
            body += (
                f'\n\n```\nTraceback (most recent call last):\n  File "{file.path}", line '
                f"{r.randint(10, 300)}, in {d.ident()}\n    {d.ident()}()\n"
                f"{r.choice(_EXCEPTIONS)}: {d.sentence(4, 12)}\n```"
            )
        elif roll < 0.25:
            body += "\n\n```python\n" + "\n".join(d.function()) + "```"
        self.text("user", body)

    def answer(self) -> None:
        d, r = self.draw, self.rng
        chunks = [d.cjk(r.randint(3, 10)) if self.cjk_turn else d.prose(r.randint(1, 4))]
        if r.random() < 0.6:
            lines: list[str] = []
            for _ in range(r.randint(1, 3)):
                lines.extend(d.function())
            chunks.append("```python\n" + "\n".join(lines) + "```")
        if r.random() < 0.5:
            chunks.append("\n".join(f"- {d.sentence(5, 15)}" for _ in range(r.randint(2, 6))))
        self.text("assistant", "\n\n".join(chunks))

    def _call(self) -> tuple[str, dict[str, Any], str]:
        """One tool call: its name, its arguments, and the tool's answer."""
        d, r = self.draw, self.rng
        name = r.choices(
            ("read_file", "grep", "run_tests", "list_dir", "edit_file"), weights=(60, 12, 10, 6, 12)
        )[0]
        if name == "read_file":
            file = r.choice(self.files)
            return name, {"path": file.path}, _numbered(file.body, r.randint(2048 + 256, 8192))
        if name == "grep":
            pattern = d.ident()
            hits = [
                f"{r.choice(self.files).path}:{r.randint(1, 400)}:{r.choice(d.function())}"
                for _ in range(r.randint(3, 30))
            ]
            return name, {"pattern": pattern, "path": r.choice(_DIRS)}, "\n".join(hits)
        if name == "run_tests":
            target = r.choice(self.files).path
            n = r.randint(10, 400)
            failed = r.randint(0, 3)
            out = [f"============ test session starts ============\ncollected {n} items", ""]
            out += [f"tests/test_{r.choice(_NAMES)}.py " + "." * r.randint(5, 60) for _ in range(6)]
            for _ in range(failed):
                out += [
                    f"____ test_{d.ident()} ____",
                    *d.function("    ")[:6],
                    f"E   {r.choice(_EXCEPTIONS)}: {d.sentence(4, 12)}",
                ]
            out.append(f"==== {failed} failed, {n - failed} passed in {r.random() * 9:.2f}s ====")
            return name, {"target": target, "verbose": r.random() < 0.3}, "\n".join(out)
        if name == "list_dir":
            where = r.choice(_DIRS)
            names = sorted({f.path.rsplit("/", 1)[-1] for f in r.sample(self.files, 12)})
            return name, {"path": where}, "\n".join(names)
        i = r.randrange(len(self.files))
        file = self.files[i]
        old = "\n".join(d.function())
        new = "\n".join(d.function())
        if file.kind == "code":  # the next read of this path sees the edit
            self.files[i] = _File(file.path, file.kind, new + "\n" + file.body)
        args = {"path": file.path, "old_string": old, "new_string": new}
        return name, args, f"Edited {file.path}: replaced {old.count(chr(10)) + 1} lines."

    def tool_step(self, parallel: int) -> None:
        d, r = self.draw, self.rng
        calls = [self._call() for _ in range(parallel)]
        ids = [d.call_id() for _ in calls]
        lead = ""
        if r.random() < 0.4:
            lead = d.cjk(1) if self.cjk_turn else d.sentence(5, 16)
        parts: list[Text | ToolCall] = [Text(text=lead)] if lead else []
        raw_calls: list[dict[str, Any]] = []
        for cid, (name, args, _) in zip(ids, calls, strict=True):
            arguments = json.dumps(args, ensure_ascii=False)
            parts.append(ToolCall(id=cid, name=name, arguments=arguments))
            raw_calls.append(
                {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}
            )
        self.add(
            Message(role="assistant", parts=tuple(parts)),
            {"role": "assistant", "content": lead or None, "tool_calls": raw_calls},
        )
        for cid, (_, _, output) in zip(ids, calls, strict=True):
            self.add(
                Message(role="tool", parts=(ToolResult(call_id=cid, content=output),)),
                {"role": "tool", "tool_call_id": cid, "content": output},
            )

    def turn(self) -> None:
        r = self.rng
        self.user()
        band = r.random()
        steps = (
            r.randint(1, 4) if band < 0.3 else r.randint(5, 15) if band < 0.8 else r.randint(16, 40)
        )
        for _ in range(steps):
            if self.left < 3:
                return
            parallel = 1 if r.random() < 0.7 else r.randint(2, 4)
            self.tool_step(min(parallel, self.left - 2))
        if self.left >= 1:
            self.answer()


def agent_history(size: int, *, seed: int = 0) -> History:
    """A coding agent's history of exactly ``size`` messages (``size`` ≥ 2),
    the same for the same ``seed``.

    >>> h = agent_history(50, seed=1)
    >>> len(h), h.messages[0].role, h.openai[0]["role"]
    (50, 'system', 'system')
    """
    if size < 2:
        msg = f"size={size!r} is too small; an agent history needs at least 2 messages"
        raise ValueError(msg)
    builder = _Builder(seed, size)
    builder.system()
    while builder.left > 0:
        builder.turn()
    return History(seed=seed, messages=tuple(builder.messages), openai=tuple(builder.openai))


def request_points(history: History) -> Sequence[int]:
    """Prefix lengths at which an agent would send a request: the prefix ends
    with a user message or with the last result of a tool step."""
    msgs = history.messages
    points: list[int] = []
    for n in range(2, len(msgs) + 1):
        last = msgs[n - 1]
        following = msgs[n] if n < len(msgs) else None
        if last.role == "user" or (
            last.role == "tool" and (following is None or following.role != "tool")
        ):
            points.append(n)
    return points
