"""Replay: run a trace again with its recorded answers, and say what differs.

`replay_trace` reads a trace (`memrules._trace.record`) one line at a
time. It rebuilds each pipeline from the canonical config in the header,
checks that the config still hashes as recorded and that this machine's
encoder has the recorded vocabulary, and puts stand-ins where the seams
were: no summarizer model, embedder, vector store, graph extractor or state
store is called, and no network is touched. Every seam call of a request is
answered from the line (`ReplayingLog`), which
fails loudly on a call it has no answer for or whose request differs. Then
the request's line is written again from what the replay produced and
compared with the recorded one: identical means byte for byte.

What differs is reported per request, with where: the message index and
field of an output, the seam call and field of an answer:

    request 2 (apply, conversation c1): output message 5: parts[0].text:
    recorded "…is in Lisbon…", replayed "…is in Lisbom…" (first difference
    at character 40)

A line whose input is a delta (``prefix``) is compared as a whole: the
reader rebuilds the input, and the replayed line is written as the trace's
version writes it (a delta against the conversation's previous line), so
message indices are those of the whole input.

With ``update=True`` the trace is rewritten from the replay (a deliberate
change of behaviour, accepted), atomically, unless a request made a seam
call the trace cannot answer. The rewrite is of the current version, with
deltas (a version 1 trace comes back as version 2).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from memrules._config.load import MemoryConfig, service_config
from memrules._core.errors import ReplayMismatch, TraceError
from memrules._core.seam_protocols import Seams, Summarizer
from memrules._engine.contract import StrategyFactory
from memrules._io.files import AtomicFile
from memrules._io.version import memrules_version
from memrules._plugin.plugin import MemoryPlugin, Request
from memrules._replay.answers import replay_answer
from memrules._replay.compare import (
    about,
    compare_request,
    config_differences,
)
from memrules._runtime.logged import (
    LoggedClock,
    LoggedExtractor,
    LoggedResolver,
    LoggedStateStore,
    LoggedStore,
    RecordedRequests,
    ReplayStateStore,
    StandIn,
    logged_seams,
)
from memrules._runtime.pipeline import Pipeline
from memrules._runtime.progress import Progress
from memrules._trace.canonical import (
    canonical_config,
    config_sha256,
    encoder_fingerprint,
    rebuild_config,
)
from memrules._trace.record import (
    INPUTS,
    OPTIONAL_INPUTS,
    TRACE_VERSION,
    InputDeltas,
    SentRequests,
    TraceHeader,
    TraceLine,
    budget_from,
    dump_line,
    messages_from,
    messages_json,
    read_trace,
    request_line,
    response_line,
    run_line,
)
from memrules._trace.run_inputs import context_from, rule_from, time_from
from memrules.seams._log import ReplayingLog

__all__ = ["ReplaySummary", "replay_trace"]


@attrs.frozen(kw_only=True, slots=True)
class ReplaySummary:
    """What a replay found: how many ``requests`` it replayed, how many of
    them ``differed``, each difference as a line (at most ``limit`` of them,
    then one that says how many more), ``notes`` that are no differences
    (the trace was written by another memrules), and whether the trace was
    ``updated``."""

    path: str
    requests: int
    differed: int
    differences: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    updated: bool = False

    @property
    def identical(self) -> bool:
        return not self.differences


# --- rebuilding each pipeline ----------------------------------------------------------


def _summarizer(seams: Mapping[str, Any], config: MemoryConfig) -> Summarizer | None:
    """The summarizer a replay asks for requests: the config's own, rebuilt,
    when it is the recorded one; else a stand-in that says the recorded ones."""
    recorded = seams.get("summarizer")
    if recorded is None:
        return None
    described = str(recorded.get("repr", "summarizer"))
    if config.summarizer is not None:
        from memrules._trace.canonical import described as describe_seam

        built: Summarizer = config.summarizer.build()
        if describe_seam(built) == described:
            return built
    if recorded.get("json_requests"):
        return RecordedRequests("summarizer", described)
    return StandIn("summarizer", described)


def _recorded_seams(entry: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A header entry's ``seams``: an object (null: none) whose
    ``summarizer`` is an object or null; else `TraceError`."""
    seams = entry.get("seams")
    if seams is None:
        return {}
    if not isinstance(seams, Mapping):
        msg = f"{where}: seams={seams!r:.80} is not an object (each seam by its role)"
        raise TraceError(msg)
    summarizer = seams.get("summarizer")
    if summarizer is not None and not isinstance(summarizer, Mapping):
        msg = f"{where}: seams.summarizer={summarizer!r:.80} is not an object (repr, json_requests)"
        raise TraceError(msg)
    return seams


class _Replayer:
    """One pipeline of the trace, rebuilt with stand-ins for its seams."""

    def __init__(
        self,
        entry: Mapping[str, Any],
        index: int,
        *,
        given: Pipeline | None,
        registry: Mapping[str, StrategyFactory] | None,
        allow_imports: bool | Iterable[str],
        where: str,
    ) -> None:
        self.entry = entry
        self.index = index
        self.problems: list[str] = []
        self._sent = SentRequests()  # each conversation's last apply replayed
        recorded = entry.get("config")
        if not isinstance(recorded, Mapping):
            msg = f"{where}: pipelines[{index}] has no config"
            raise TraceError(msg)
        name = f"pipeline {index} ({entry.get('name')})"
        if config_sha256(recorded) != entry.get("config_sha256"):
            self.problems.append(
                f"header: {name}: its config does not hash to the recorded config_sha256 "
                "(the trace was edited)"
            )
        encoder = str(entry.get("encoder", ""))
        if encoder.startswith("anthropic:"):
            msg = (
                f"{where}: {name} counted tokens with {encoder}, an endpoint; a replay calls "
                "no endpoint, so it cannot count as the run did"
            )
            raise TraceError(msg)
        config = (
            service_config(given.config)
            if given is not None
            else rebuild_config(
                recorded, registry=registry, allow_imports=allow_imports, where=f"{where}: {name}"
            )
        )
        for key in config_differences(recorded, canonical_config(config)):
            self.problems.append(f"header: {name}: its config rebuilds differently at {key}")
        seams = _recorded_seams(entry, f"{where}: {name}")
        summarizer = _summarizer(seams, config)
        if given is not None and given.seams.summarizer is not None:
            summarizer = given.seams.summarizer
        store = None if seams.get("store") is None else StandIn("store", str(seams["store"]))
        self.seams = logged_seams(Seams(summarizer=summarizer, store=store))
        base = Pipeline.from_config(
            config, seams=self.seams, counter=None if given is None else given.counter
        )
        passes = entry.get("max_passes", base.max_passes)
        if not isinstance(passes, int) or isinstance(passes, bool) or passes < 1:
            msg = f"{where}: {name}: max_passes={passes!r} is not a whole number of at least 1"
            raise TraceError(msg)
        self.pipeline = attrs.evolve(base, seams=self.seams, observers=(), max_passes=passes)
        local = encoder_fingerprint(self.pipeline.counter)
        for key in ("encoder", "vocabulary_sha256"):
            if local[key] != entry.get(key):
                self.problems.append(
                    f"header: {name}: {key} recorded {entry.get(key)!r}, this machine has "
                    f"{local[key]!r}: token counts differ"
                )
        self.config = config
        self._plugin: MemoryPlugin | None = None

    def header_entry(self) -> dict[str, Any]:
        """This pipeline's header entry as the replay would write it."""
        canonical = canonical_config(self.config)
        return {
            **self.entry,
            "config": canonical,
            "config_sha256": config_sha256(canonical),
            **encoder_fingerprint(self.pipeline.counter),
        }

    def plugin(self) -> MemoryPlugin:
        """A plugin for this pipeline's request lines: every seam, the
        extractor, the resolver and the state store answered from the trace."""
        if self._plugin is None:
            seams = self.entry.get("seams") or {}  # checked by __init__
            changes: dict[str, Any] = {"observers": ()}
            extractor = seams.get("graph_extractor")
            if extractor is not None:
                inner = self.config.graph_extractor or StandIn("graph extractor", str(extractor))
                changes["graph_extractor"] = LoggedExtractor(inner)
            resolver = seams.get("context_window_resolver")
            changes["context_window_resolver"] = (
                None
                if resolver is None
                else LoggedResolver(StandIn("context window resolver", str(resolver)))
            )
            config = attrs.evolve(self.config, **changes)
            states = LoggedStateStore(ReplayStateStore(), limits=config.graph_limits)
            memory: dict[str, Any] = {}
            settings = config.memory_store
            if config.memory is not None and config.memory.enabled and settings is not None:
                # Retrieval and the clock are answered from the trace: no
                # store is opened, no embedder loaded, no clock read.
                store = StandIn("memory store", f"stores.memory {settings.store!r}")
                memory = {
                    "memory_store": LoggedStore(store),
                    "clock": StandIn("clock", "the recorded clock"),
                }
            self._plugin = MemoryPlugin(
                config,
                summarizer=self.seams.summarizer,
                store=self.seams.store,
                counter=self.pipeline.counter,
                state_store=states,
                **memory,
            )
        return self._plugin

    def replay(self, data: Mapping[str, Any], log: ReplayingLog, where: str) -> dict[str, Any]:
        """The line the request of ``data`` gives now (without its number)."""
        kind = data.get("kind")
        if kind == "request":
            return self._request(data, log, where)
        if kind == "response":
            return self._response(data, log, where)
        if kind == "answer":
            context = messages_from(data.get("context"), f"{where}: context")
            return replay_answer(self.index, data, context, log)
        if kind not in INPUTS:
            msg = f"{where}: unknown kind {kind!r}"
            raise TraceError(msg)
        inputs: dict[str, Any] = {key: data.get(key) for key in INPUTS[kind]}
        pipeline = self.pipeline
        if kind == "recall":

            def run() -> Any:
                return pipeline.recall(
                    inputs["query"],
                    k=inputs["k"],
                    conversation_id=inputs["conversation_id"],
                    user=inputs["user"],
                    tenant=inputs["tenant"],
                    mode=inputs["mode"],
                )

        else:
            messages = messages_from(data.get("messages"), f"{where}: messages")
            inputs["messages"] = messages_json(messages)
            scope: dict[str, Any] = {k: inputs[k] for k in ("conversation_id", "user", "tenant")}
            given = {k: data[k] for k in OPTIONAL_INPUTS.get(kind, ()) if k in data}
            inputs.update(given)
            options = self._options(kind, data, given, where)

            def run() -> Any:
                if kind == "apply":
                    budget = budget_from(inputs["budget"], f"{where}: budget")
                    if "clock" in options:  # the time the recorded run read
                        options["now"] = LoggedClock(options.pop("clock"))()
                    return pipeline.apply(messages, budget=budget, **scope, **options)
                if kind == "compress":
                    return pipeline.compress(messages, **scope)
                return pipeline.remember(messages, **scope, **options)

        result, line = run_line(str(kind), self.index, inputs, run, log)
        number = data.get("request")
        if kind == "apply" and isinstance(number, int):
            self._sent.keep(inputs["conversation_id"], number, result.sent)
        return line

    def _options(
        self, kind: str, data: Mapping[str, Any], given: Mapping[str, Any], where: str
    ) -> dict[str, Any]:
        """The keyword arguments of a recorded ``apply`` or ``remember``
        beyond its scope and budget (see `memrules._trace.run_inputs`)."""
        options: dict[str, Any] = {}
        if kind == "apply":
            if "previous" in given:
                options["previous"] = self._sent.find(
                    data.get("conversation_id"), given["previous"], where
                )
            if "cache" in given:
                options["cache"] = rule_from(given["cache"], where)
            if "now" in given:
                options["now"] = given["now"]
            elif any(
                isinstance(c, Mapping) and c.get("seam") == "clock" for c in data.get("calls") or []
            ):
                options["clock"] = StandIn("clock", "the recorded clock")
        elif kind == "remember":
            if "session_time" in given:
                options["session_time"] = time_from(given["session_time"], f"{where}: session_time")
            if "context" in given:
                options["context"] = context_from(given["context"], where)
        return options

    def _request(self, data: Mapping[str, Any], log: ReplayingLog, where: str) -> dict[str, Any]:
        plugin = self.plugin()
        request = Request(
            messages=messages_from(data.get("messages"), f"{where}: messages"),
            model=data.get("model"),
            conversation_id=data.get("conversation_id"),
            user=data.get("user"),
            tenant=data.get("tenant"),
        )
        now = data.get("now")
        with log.active():
            result = plugin._handle(request, now)
        return request_line(self.index, request, result, log.calls, now=now)

    def _response(self, data: Mapping[str, Any], log: ReplayingLog, where: str) -> dict[str, Any]:
        plugin = self.plugin()
        request = Request(
            messages=messages_from(data.get("messages"), f"{where}: messages"),
            conversation_id=data.get("conversation_id"),
            user=data.get("user"),
            tenant=data.get("tenant"),
        )
        said = data.get("reply")
        reply = said if isinstance(said, str) else messages_from([said], f"{where}: reply")[0]
        now = data.get("now")
        with log.active():
            outcome = plugin.on_response(request, reply, now=now)
        return response_line(self.index, request, reply, outcome, log.calls, now=now)


# --- comparing -------------------------------------------------------------------------


# --- the driver ------------------------------------------------------------------------


class _Rewrite:
    """The updated trace, written beside the original, synced and renamed
    over it (`AtomicFile`): the trace is the old one
    or the new one, whatever happens."""

    def __init__(self, path: Path) -> None:
        self.file = AtomicFile(path, "the trace")

    def write(self, data: bytes) -> None:
        self.file.write(data)

    def finish(self) -> None:
        self.file.commit()

    def discard(self) -> None:
        self.file.abort()


def _replayers(
    header: TraceHeader,
    where: str,
    *,
    pipelines: Sequence[Pipeline] | Mapping[int, Pipeline] | None,
    registry: Mapping[str, StrategyFactory] | None,
    allow_imports: bool | Iterable[str],
) -> list[_Replayer]:
    given: Mapping[int, Pipeline] = (
        dict(enumerate(pipelines)) if isinstance(pipelines, Sequence) else (pipelines or {})
    )
    return [
        _Replayer(
            entry,
            i,
            given=given.get(i),
            registry=registry,
            allow_imports=allow_imports,
            where=where,
        )
        for i, entry in enumerate(header.pipelines)
    ]


def replay_trace(
    path: str | os.PathLike[str],
    *,
    update: bool = False,
    pipelines: Sequence[Pipeline] | Mapping[int, Pipeline] | None = None,
    registry: Mapping[str, StrategyFactory] | None = None,
    allow_imports: bool | Iterable[str] = (),
    limit: int = 20,
    progress: Progress | None = None,
) -> ReplaySummary:
    """Replay the trace at ``path`` (see the module docs) and return what it found.

    Raises `ReplayMismatch` when anything differs (its
    ``differences`` list them, at most ``limit``), unless ``update`` is set:
    then the trace is rewritten from the replay, and the summary lists what
    changed. Raises `TraceError` for a file that is not a
    trace, or a pipeline that cannot be rebuilt from it: a strategy from a
    module the caller does not allow (``allow_imports``, as for
    `load_config`; ``registry`` likewise), or a closure,
    whose parameters a trace cannot hold: pass such pipelines yourself, by
    their index in the header (``pipelines=[pipeline]``); their seams are
    still answered from the trace.
    """
    where = str(path)
    header, lines = read_trace(path)
    replayers = _replayers(
        header, where, pipelines=pipelines, registry=registry, allow_imports=allow_imports
    )
    found: list[str] = [p for r in replayers for p in r.problems]
    notes: list[str] = []
    if header.memrules != memrules_version():
        notes.append(
            f"the trace was written by memrules {header.memrules}, replayed by {memrules_version()}"
        )
    rewrite = _Rewrite(Path(path)) if update else None
    # The replay writes each line as the trace's version does, to compare
    # bytes; a rewrite is of the current version.
    deltas = InputDeltas(enabled=header.version >= 2)
    rewritten = deltas if header.version == TRACE_VERSION else InputDeltas()
    requests = differed = left_out = 0
    unanswerable = False
    try:
        if rewrite is not None:
            entries = [r.header_entry() for r in replayers]
            fresh = attrs.evolve(
                header, version=TRACE_VERSION, memrules=memrules_version(), pipelines=tuple(entries)
            )
            rewrite.write(dump_line(fresh.to_dict()))
        for line in lines:
            requests += 1
            problems, replayed, (number, whole) = _replay_line(line, replayers, where, deltas)
            if rewrite is not None and rewritten is not deltas:
                again = dump_line(rewritten.encode(number, whole))
                replayed = None if replayed is None else again
            if progress is not None:
                progress.update(f"replay: request {requests:,}")
            if problems:
                differed += 1
                left_out += max(0, len(problems) - (limit - len(found)))
                found.extend(problems[: max(0, limit - len(found))])  # memory stays bounded
                unanswerable = unanswerable or replayed is None
            if rewrite is not None and replayed is not None:
                rewrite.write(replayed)
        if rewrite is not None:
            if unanswerable:
                rewrite.discard()
            else:
                rewrite.finish()
    except BaseException:
        if rewrite is not None:
            rewrite.discard()
        raise
    finally:
        close = getattr(lines, "close", None)
        if callable(close):
            close()
    if left_out:
        found.append(f"... and {left_out} more differences ({differed} of {requests} requests)")
    summary = ReplaySummary(
        path=where,
        requests=requests,
        differed=differed,
        differences=tuple(found),
        notes=tuple(notes),
        updated=rewrite is not None and not unanswerable,
    )
    if found and (not update or unanswerable):
        first = found[0]
        raise ReplayMismatch(
            f"{where}: {differed} of {requests} requests differ; first: {first}"
            if differed
            else f"{where}: {first}",
            differences=tuple(found),
        )
    return summary


def _replay_line(
    line: TraceLine, replayers: Sequence[_Replayer], where: str, deltas: InputDeltas
) -> tuple[list[str], bytes | None, tuple[int, dict[str, Any]]]:
    """What differs in one request, its replayed bytes (None when the replay
    could not answer it), and its number and line with the input whole (the
    replayed line, else the recorded one). ``deltas`` writes the input as
    the trace does."""
    data = line.data
    at = f"{where}:{line.line}"
    number = data.get("request")
    number = number if isinstance(number, int) else line.line - 2
    index = data.get("pipeline")
    if not isinstance(index, int) or not 0 <= index < len(replayers):
        msg = f"{at}: pipeline={index!r} is not one of the header's {len(replayers)}"
        raise TraceError(msg)
    calls = data.get("calls")
    if calls is not None and (
        not isinstance(calls, list) or not all(isinstance(c, Mapping) for c in calls)
    ):
        msg = f"{at}: calls={calls!r:.80} is not a list of seam calls (objects)"
        raise TraceError(msg)
    log = ReplayingLog(calls or [], request=number)
    prefix = f"request {number} ({about(data)})"
    problems: list[str] = []
    replayed: dict[str, Any] | None = None
    try:
        replayed = replayers[index].replay(data, log, at)
    except TraceError:
        raise
    except ReplayMismatch:
        pass  # kept by the log as its failure
    except Exception as exc:
        if log.failure is None:
            problems.append(f"{prefix}: the replay raised {type(exc).__name__}: {exc}")
    failure = log.finish()
    if failure is not None:
        problems.insert(0, f"{prefix}: {failure}")
    if replayed is None:
        # The conversation's next line may continue this input: as recorded.
        recorded = {k: v for k, v in data.items() if k != "request"}
        deltas.encode(number, recorded)
        return problems, None, (number, recorded)
    written = deltas.encode(number, replayed)
    data_bytes = dump_line(written)
    if data_bytes != line.raw:
        whole = {"request": number, **replayed}
        found = compare_request(number, data, whole)
        if failure is not None:  # the calls differ as the failure says: the rest is news
            found = [f for f in found if not f.startswith(f"{prefix}: seam call ")]
        elif not found and line.prefix != written.get("prefix"):
            found = [
                f"{prefix}: its input is stored with prefix={line.prefix!r}, a replay stores "
                f"it with prefix={written.get('prefix')!r}"
            ]
        problems.extend(found)
    return problems, None if failure is not None else data_bytes, (number, replayed)
