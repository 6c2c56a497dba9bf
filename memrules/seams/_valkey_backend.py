"""The Valkey vector store's backend: the commands one collection's index
and records take (see `memrules.seams.valkey` for the layout, the
cluster refusal and what a write's acknowledgement guarantees)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
import time
from collections.abc import Sequence
from typing import Any

from memrules._core.errors import CollectionError, StoreError
from memrules._core.redaction import redact_url
from memrules._core.seam_records import RecallHit, Scope, StoredMessage, decode_message
from memrules.seams._lexical import tokens

log = logging.getLogger("memrules.seams")

MAX_QUERY_TERMS = 128
"""The most distinct tokens of a query that lexical search ranks by."""

CLUSTER_MESSAGE = (
    "valkey store {url} is a node of a Valkey cluster: the Search module indexes one "
    "node's records only, so searches would miss most of them. Use a Qdrant or Milvus "
    "server for the memory (store: {{backend: qdrant, url: http://host:6333}}, or "
    "backend: milvus); the conversation state can stay on the cluster "
    "(state_store: valkey+cluster://host:port)"
)
_FIELDS = ("text", "message", "conversation_id", "user", "tenant", "turn", "exchange")
_PAGE = 500
_SCAN_WAIT_SECONDS = 60


def _digest(value: object) -> str:
    """A tag value standing for ``value`` (ids, or None), safe in any query."""
    canonical = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=16).hexdigest()


def _scope_tag(user: str | None, tenant: str | None) -> str:
    return _digest([user, tenant])


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


_NAMES = {name.encode(): name for name in (*_FIELDS, "distance")}
_Row = tuple[float, str, dict[str, Any]]
"""A record a search read: its score, its id and its fields, undecoded."""


def _pairs(flat: Sequence[Any]) -> dict[str, Any]:
    """A reply's ``[name, value, name, value, ...]`` as a dict, names decoded
    (the fields a search returns looked up, not decoded each time)."""
    return {_NAMES.get(flat[i]) or _text(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}


class ValkeyBackend:
    engine = "valkey"

    def __init__(
        self,
        *,
        url: str,
        collection: str,
        key_prefix: str,
        m: int,
        ef_construction: int,
        ef_runtime: int,
        timeout_seconds: float,
        api_key_env: str | None = None,
    ) -> None:
        self.url = url
        self.api_key_env = api_key_env
        self.collection = collection
        self.key_prefix = key_prefix
        self.m = m
        self.ef_construction = ef_construction
        self.ef_runtime = ef_runtime
        self.timeout_seconds = timeout_seconds
        self._client: Any = None
        self._lexical: dict[str, bool] = {}
        # The rows the rankings of the hybrid search under way read, by id,
        # undecoded, until its fetch (the store's lock holds one search at a
        # time): owned by this backend, emptied by each fetch.
        self._read: dict[str, dict[str, Any]] = {}
        # The last write's transaction, held back to be sent with the
        # confirm that follows it: its record ids and its commands.
        self._pending: tuple[list[str], list[Any]] | None = None

    # --- names ----------------------------------------------------------------------------

    def _index(self, collection: str) -> str:
        return f"{self.key_prefix}{collection}"

    def _meta(self, collection: str) -> str:
        return f"{self.key_prefix}{collection}:meta"

    def _key(self, record_id: str, collection: str | None = None) -> str:
        return f"{self.key_prefix}{collection or self.collection}:r:{record_id}"

    def _open(self) -> Any:
        if self._client is None:
            import valkey

            password = os.environ.get(self.api_key_env, "") if self.api_key_env else ""
            client = valkey.Valkey.from_url(
                self.url,
                socket_timeout=self.timeout_seconds,
                socket_connect_timeout=self.timeout_seconds,
                **({"password": password} if password else {}),
            )
            try:
                info: Any = client.info("cluster")
                clustered = str(info.get("cluster_enabled", 0)) == "1"
            except valkey.exceptions.ValkeyError as exc:
                msg = f"valkey store {redact_url(self.url)} cannot be reached: {exc}"
                raise StoreError(msg) from exc
            if clustered:
                client.close()  # type: ignore[no-untyped-call]
                raise StoreError(CLUSTER_MESSAGE.format(url=redact_url(self.url)))
            self._client = client
        return self._client

    # --- the index and its identity ------------------------------------------------------

    def identity(self) -> dict[str, Any] | None:
        raw = self._open().hget(self._meta(self.collection), "identity")
        if raw is None:
            return None
        identity = json.loads(raw)
        if not isinstance(identity, dict):
            meta = self._meta(self.collection)
            msg = f"{meta!r} holds no embedder identity; name another collection"
            raise StoreError(msg)
        return identity

    def dimension(self) -> int | None:
        raw = self._open().hget(self._meta(self.collection), "dimension")
        return None if raw is None else int(raw)

    def create(self, dimension: int, identity: dict[str, Any]) -> None:
        client = self._open()
        index = self._index(self.collection)
        hnsw = [
            "TYPE", "FLOAT32", "DIM", dimension, "DISTANCE_METRIC", "COSINE",
            "M", self.m, "EF_CONSTRUCTION", self.ef_construction,
        ]  # fmt: skip
        vector = ["vector", "VECTOR", "HNSW", len(hnsw), *hnsw]
        tags = ["scope", "TAG", "conversation", "TAG"]
        head = ["FT.CREATE", index, "ON", "HASH", "PREFIX", 1, self._key("")]
        lexical = True
        try:
            client.execute_command(
                *head, "STOPWORDS", 0, "SCHEMA", "terms", "TEXT", "NOSTEM", *tags, *vector
            )
        except Exception as exc:
            if "already exists" in str(exc).lower():
                lexical = self._has_text(index)
            else:
                # A module without full-text fields (valkey-search): dense only.
                try:
                    client.execute_command(*head, "SCHEMA", *tags, *vector)
                except Exception as second:
                    if "already exists" not in str(second).lower():
                        raise
                lexical = self._has_text(index)
                if not lexical:
                    log.warning(
                        "valkey store %s: the server's search module refused a TEXT field "
                        "(%s); index %r is dense only: lexical search finds nothing and "
                        "hybrid search is the dense ranking",
                        redact_url(self.url),
                        " ".join(str(exc).split()),
                        index,
                    )
        meta = self._meta(self.collection)
        made = json.dumps(identity, sort_keys=True, default=str)
        pipe = client.pipeline(transaction=True)
        pipe.hsetnx(meta, "identity", made)
        pipe.hsetnx(meta, "dimension", str(dimension))
        pipe.hget(meta, "identity")
        pipe.hget(meta, "dimension")
        _, _, stored, stored_dimension = pipe.execute()
        if _text(stored) != made or int(stored_dimension) != dimension:
            msg = (
                f"collection {self.collection!r} was made at the same time by another process "
                f"for embedder {_text(stored)} with vectors of {int(stored_dimension)} floats; "
                "use another collection, or the embedder it was made for"
            )
            raise CollectionError(msg)
        self._lexical[index] = lexical
        self._await_scan(index)

    def _await_scan(self, index: str) -> None:
        """Wait for the scan of the keyspace that creating ``index`` starts.
        A record written while it runs is indexed twice (by the write and
        again by the scan), and the stale copy skews BM25 and drops records
        from tag-filtered queries until the module's collector runs; on a
        server holding other data the scan takes a while. RediSearch says
        ``indexing``, valkey-search ``backfill_in_progress``. Past a minute
        the writes go on, with a warning: ranking is off until it ends."""
        deadline = time.monotonic() + _SCAN_WAIT_SECONDS
        pause = 0.005
        while True:
            info = _pairs(self._open().execute_command("FT.INFO", index))
            running = info.get("indexing", info.get("backfill_in_progress", 0))
            if not int(_text(running) if isinstance(running, bytes) else running):
                return
            if time.monotonic() >= deadline:
                log.warning(
                    "valkey store %s: index %r is still scanning the server's keys after "
                    "%d s; records written before it ends rank off until the module's "
                    "collector runs",
                    redact_url(self.url),
                    index,
                    _SCAN_WAIT_SECONDS,
                )
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _has_text(self, index: str) -> bool:
        """Whether ``index`` has the ``terms`` full-text field."""
        if index not in self._lexical:
            info = _pairs(self._open().execute_command("FT.INFO", index))
            found = False
            for attribute in info.get("attributes", []):
                fields = [_text(v).lower() if isinstance(v, bytes) else v for v in attribute]
                if "terms" in fields and "text" in fields:
                    found = True
            self._lexical[index] = found
        return self._lexical[index]

    # --- records -------------------------------------------------------------------------

    def existing(self, ids: Sequence[str]) -> set[str]:
        client = self._open()
        found: set[str] = set()
        for start in range(0, len(ids), _PAGE):
            chunk = ids[start : start + _PAGE]
            pipe = client.pipeline(transaction=False)
            for record_id in chunk:
                pipe.exists(self._key(record_id))
            found.update(i for i, n in zip(chunk, pipe.execute(), strict=True) if n)
        return found

    def write(self, rows: Sequence[tuple[StoredMessage, list[float]]]) -> None:
        """Write ``rows`` as one transaction (a chunk is written whole or
        not at all). The transaction is sent with the next `confirm`,
        in its round trip; a chunk written before it is sent first."""
        self._send_pending()
        commands = self._open().pipeline(transaction=True)
        for r, vector in rows:
            scope = r.scope
            commands.hset(
                self._key(r.id),
                mapping={
                    "vector": struct.pack(f"<{len(vector)}f", *vector),
                    "scope": _scope_tag(scope.user, scope.tenant),
                    "conversation": _digest(scope.conversation_id),
                    "terms": " ".join(tokens(r.text)),
                    "text": r.text,
                    "conversation_id": scope.conversation_id or "",
                    "user": scope.user or "",
                    "tenant": scope.tenant or "",
                    "turn": json.dumps(r.turn),
                    "exchange": json.dumps(r.exchange),
                    "content_hash": r.content_hash,
                    "role": r.message.role,
                    "message": r.payload,
                },
            )
        self._pending = ([r.id for r, _ in rows], commands.command_stack)

    def _send_pending(self) -> None:
        """Send the transaction `write` holds back, on its own."""
        pending, self._pending = self._pending, None
        if pending is not None:
            commands = self._open().pipeline(transaction=True)
            commands.command_stack = pending[1]
            commands.execute()

    def delete(self, ids: Sequence[str], collection: str | None = None) -> None:
        self._pending = None  # a write held back is not sent any more
        client = self._open()
        for start in range(0, len(ids), _PAGE):
            keys = [self._key(i, collection) for i in ids[start : start + _PAGE]]
            if keys:
                client.delete(*keys)

    def persist(self, wrote: bool) -> bool:
        """Whether the server fsynced this connection's writes to its
        append-only file (``WAITAOF 1 0``, waiting up to the timeout); False
        when it keeps no such file (``appendonly no``: memory and
        snapshots only), does not know the command, or this user may not
        send it (an ACL): then nothing confirms more than memory."""
        import valkey

        try:
            answer = self._open().execute_command("WAITAOF", 1, 0, self._timeout_ms())
        except valkey.exceptions.ResponseError as exc:  # read by _fsynced
            answer = exc
        return self._fsynced(answer)

    def confirm(self, ids: Sequence[str]) -> tuple[bool, set[str]]:
        """The last write (the transaction `write` held back, when its
        records are among ``ids``), `persist` and `existing`, in
        one round trip: ``MULTI``, the ``HSET`` commands, ``EXEC``, then
        ``WAITAOF`` and an ``EXISTS`` per key, sent together (the server
        answers the ``EXISTS`` once the writes are fsynced). Raises when the
        transaction fails, before anything else is read."""
        pending, self._pending = self._pending, None
        if pending is not None and not set(pending[0]) <= set(ids):
            pending = None  # a write of another call, which did not confirm: not sent
        first, rest = ids[:_PAGE], ids[_PAGE:]
        pipe = self._open().pipeline(transaction=False)
        if pending is not None:
            pipe.execute_command("MULTI")
            for args, options in pending[1]:
                pipe.execute_command(*args, **options)
            pipe.execute_command("EXEC")
        written = len(pipe.command_stack)
        pipe.execute_command("WAITAOF", 1, 0, self._timeout_ms())
        for record_id in first:
            pipe.exists(self._key(record_id))
        answers = pipe.execute(raise_on_error=False)
        for answer in answers[:written]:
            if isinstance(answer, Exception):
                raise answer
        if pending is not None and answers[written - 1] is None:
            msg = "the server aborted the transaction that writes the records"
            raise StoreError(msg)
        answers = answers[written:]
        durable = self._fsynced(answers[0])
        for answer in answers[1:]:
            if isinstance(answer, Exception):
                raise answer
        found = {i for i, n in zip(first, answers[1:], strict=True) if n}
        return durable, found | (self.existing(rest) if rest else set())

    def _fsynced(self, answer: object) -> bool:
        """What ``WAITAOF 1 0`` answered (or raised), read as `persist` says."""
        import valkey

        if isinstance(answer, valkey.exceptions.ResponseError):
            text = str(answer).lower()
            if any(w in text for w in ("appendonly", "unknown command", "noperm")):
                return False
            raise answer
        waited: Any = answer  # [local fsyncs, replica fsyncs]
        if int(waited[0]) < 1:
            timeout_ms = self._timeout_ms()
            msg = f"the server did not fsync the writes to its append-only file in {timeout_ms} ms"
            raise StoreError(msg)
        return True

    # --- search ----------------------------------------------------------------------------

    def _timeout_ms(self) -> int:
        """A query's own time limit: the store's, not the module's default
        (500 ms in RediSearch, which then answers what it found so far)."""
        return max(1, int(self.timeout_seconds * 1000))

    def _filter(self, scope: Scope) -> str:
        found = f"@scope:{{{_scope_tag(scope.user, scope.tenant)}}}"
        if scope.conversation_id is not None:
            found += f" @conversation:{{{_digest(scope.conversation_id)}}}"
        return found

    def _rows(self, reply: Sequence[Any], scope: Scope, scores: str) -> list[_Row]:
        """The records of an ``FT.SEARCH`` reply that are ``scope``'s
        (checked again as read), best first (ties by id), each as (score,
        id, its returned fields, undecoded). ``scores``: ``withscores`` (the
        reply's own, ``WITHSCORES``), ``distance`` (a returned cosine
        distance) or ``none`` (each 0)."""
        found: list[_Row] = []
        step = 3 if scores == "withscores" else 2
        for i in range(1, len(reply) - step + 2, step):
            fields = _pairs(reply[i + step - 1])
            if scores == "withscores":
                score = float(reply[i + 1])
            elif scores == "distance":
                score = 1.0 - float(fields["distance"])
            else:
                score = 0.0
            owner = (_text(fields["user"]) or None, _text(fields["tenant"]) or None)
            if owner != (scope.user, scope.tenant):
                continue  # a digest collision; never another user's record
            conversation = _text(fields["conversation_id"]) or None
            if scope.conversation_id is not None and conversation != scope.conversation_id:
                continue
            found.append((score, _text(reply[i]).rpartition(":r:")[2], fields))
        found.sort(key=lambda f: (-f[0], f[1]))
        return found

    def _hits(self, reply: Sequence[Any], scope: Scope, scores: str) -> list[RecallHit]:
        """`_rows`, each decoded to a hit."""
        return [
            _hit(record_id, fields, score)
            for score, record_id, fields in self._rows(reply, scope, scores)
        ]

    def _dense_rows(self, vector: list[float], *, k: int, scope: Scope) -> list[_Row]:
        query = f"({self._filter(scope)})=>[KNN {k} @vector $vector EF_RUNTIME $ef AS distance]"
        reply = self._open().execute_command(
            "FT.SEARCH", self._index(self.collection), query,
            "PARAMS", 4, "vector", struct.pack(f"<{len(vector)}f", *vector),
            "ef", max(self.ef_runtime, k),
            "RETURN", len(_FIELDS) + 1, *_FIELDS, "distance",
            "LIMIT", 0, k, "TIMEOUT", self._timeout_ms(), "DIALECT", 2,
        )  # fmt: skip
        return self._rows(reply, scope, "distance")

    def _lexical_rows(self, query: str, *, k: int, scope: Scope) -> list[_Row]:
        """BM25 over ``terms`` within ``scope``, the best ``k``. Each query
        token is an optional clause (``~@terms:token``) after the scope
        filter: a union of terms inside an intersection is scored by its
        first matching term only (RediSearch 2.10), which ranks a record
        holding every term below one holding one; optional clauses are each
        scored. The union of the tokens is there too, weighted 0: it keeps
        out the records that hold none (the scope's tag alone gives every
        record a small score) and adds nothing to a score. So the engine
        answers only records holding a token and exactly ``k`` are read;
        among records tied at the ``k``-th score, the engine's order picks."""
        index = self._index(self.collection)
        terms = list(dict.fromkeys(tokens(query)))[:MAX_QUERY_TERMS]
        if not terms or not self._has_text(index):
            return []
        held = "|".join(terms)
        search = " ".join(
            [self._filter(scope), f"(@terms:({held}))=>{{$weight: 0.0}}"]
            + [f"~@terms:{t}" for t in terms]
        )
        reply = self._open().execute_command(
            "FT.SEARCH", index, search, "VERBATIM", "SCORER", "BM25STD", "WITHSCORES",
            "RETURN", len(_FIELDS), *_FIELDS, "LIMIT", 0, k,
            "TIMEOUT", self._timeout_ms(), "DIALECT", 2,
        )  # fmt: skip
        return self._rows(reply, scope, "withscores")

    def dense(self, vector: list[float], *, k: int, scope: Scope) -> list[RecallHit]:
        return [_hit(i, fields, s) for s, i, fields in self._dense_rows(vector, k=k, scope=scope)]

    def lexical(self, query: str, *, k: int, scope: Scope) -> list[RecallHit]:
        return [_hit(i, fields, s) for s, i, fields in self._lexical_rows(query, k=k, scope=scope)]

    # --- hybrid search: both rankings read, only the fused records decoded ----------------

    @property
    def ranks_ids(self) -> bool:
        """Hybrid search ranks ids first: each ranking's reply carries its
        records' fields, held undecoded until `fetch` decodes the few
        that fusion keeps (of ``2 * candidates`` read)."""
        return True

    def _held(self, rows: list[_Row]) -> list[tuple[str, float]]:
        self._read.update((record_id, fields) for _, record_id, fields in rows)
        return [(record_id, score) for score, record_id, _ in rows]

    def dense_ranking(
        self, vector: list[float], *, k: int, scope: Scope
    ) -> list[tuple[str, float]]:
        return self._held(self._dense_rows(vector, k=k, scope=scope))

    def lexical_ranking(self, query: str, *, k: int, scope: Scope) -> list[tuple[str, float]]:
        return self._held(self._lexical_rows(query, k=k, scope=scope))

    def fetch(self, found: Sequence[tuple[str, float]]) -> list[RecallHit]:
        """The records of ``found`` that the rankings since the last fetch
        read (every id they answered: those are the only ones hybrid search
        fuses), decoded, in its order, with its scores; then the rows held
        are let go."""
        read, self._read = self._read, {}
        return [_hit(i, read[i], score) for i, score in found if i in read]

    # --- listing and forgetting ----------------------------------------------------------

    def collections(self) -> list[str]:
        names = (_text(n) for n in self._open().execute_command("FT._LIST"))
        prefix = self.key_prefix
        return [
            n[len(prefix) :] for n in names if n.startswith(prefix) and ":" not in n[len(prefix) :]
        ]

    def scan(self, scope: Scope, *, collection: str) -> list[RecallHit]:
        client = self._open()
        index = self._index(collection)
        found: dict[str, RecallHit] = {}
        offset = 0
        while True:
            reply = client.execute_command(
                "FT.SEARCH", index, self._filter(scope), "RETURN", len(_FIELDS), *_FIELDS,
                "LIMIT", offset, _PAGE, "TIMEOUT", self._timeout_ms(), "DIALECT", 2,
            )  # fmt: skip
            found.update((h.id, h) for h in self._hits(reply, scope, "none"))
            offset += _PAGE
            if offset >= int(reply[0]):
                return list(found.values())

    def delete_where(self, scope: Scope, *, collection: str) -> int:
        ids = [h.id for h in self.scan(scope, collection=collection)]
        self.delete(ids, collection)
        return len(ids)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _hit(record_id: str, fields: dict[str, Any], score: float) -> RecallHit:
    return RecallHit(
        message=decode_message(_text(fields["message"])),
        score=score,
        conversation_id=_text(fields["conversation_id"]) or None,
        user=_text(fields["user"]) or None,
        tenant=_text(fields["tenant"]) or None,
        turn=json.loads(fields["turn"]),
        exchange=json.loads(fields["exchange"]),
        text=_text(fields["text"]),
        id=record_id,
    )
