"""An exact in-process index of one collection of an embedded engine.

Qdrant's local mode answers a filtered query by checking the payload filter
in Python for every point and scores sparse vectors one point at a time in
Python: a search of 10,000 memories costs a hundred times what the same
work costs in numpy. An embedded engine's directory is locked to one
process (`Files` names it), so every write
to the collection goes through the backend of this process, and the
backend can keep what searching needs beside the engine and search it with
numpy, exactly:

- **dense**: the unit vectors as one float32 matrix, the scope (user,
  tenant, conversation) as integer codes; a search is one matrix-vector
  product under the scope's mask and a partial sort, the same cosine the
  engine computes, so the top ``k`` are the engine's exact top ``k``;
- **lexical**: BM25 with the inverse document frequency
  ``ln((n - df + 0.5) / (df + 0.5) + 1)`` over every live record of the
  collection, whatever its scope, from postings per token. Each record
  gives its sparse vector: the saturated term weights Qdrant's engine
  stores, which a Milvus Lite file ranks by too
  (`document_vector`). Each token's posting
  is a pair of numpy arrays a write appends to; its live rows, their
  values and its inverse document frequency are kept from one query to
  the next until a write changes the corpus statistics, and a query scores
  only the rows of its tokens' postings.

The engine stays the record of truth: it stores every record first, and
the index is built from it (the first search after the store opens reads
the collection once, unless the index saved beside the engine's files
matches them: `memrules.seams._index_file`, through `LocalIndex.frozen`
and `LocalIndex.restore`) and then follows each write and delete the
backend makes. A write or delete that fails drops the index, which the next search
builds again from what the engine holds. Records the index finds are read
back from the engine by id.

The owner is the backend object of one open store
(`_Qdrant` in local mode; for Milvus Lite,
the stores of one file in the process).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["Frozen", "LocalIndex", "Row"]

Row = tuple[str, Any, Sequence[float], tuple[Sequence[int], Sequence[float]]]
"""One record for `LocalIndex.upsert`: its id, its (user, tenant,
conversation), its dense vector and its sparse vector (indices, values)."""

_GROWTH = 1.5
_WEIGHED = 4096  # tokens whose weighed postings are kept at most
_SCOPES = 1024  # scopes whose live rows are kept at most


class _Codes:
    """Strings as small integers, for masks."""

    def __init__(self, known: Sequence[str] = ()) -> None:
        self.of: dict[str, int] = {value: code for code, value in enumerate(known)}

    def code(self, value: str) -> int:
        return self.of.setdefault(value, len(self.of))

    def find(self, value: str) -> int:
        """The code of ``value``, or -1 (no row has it)."""
        return self.of.get(value, -1)


class Frozen:
    """The rows of an index as arrays (see `LocalIndex.frozen`):
    ``ids`` and ``codes`` (the strings of the scope codes, by code) are
    lists, the rest numpy arrays of one row each, ``sparse_at`` the CSR
    offsets into ``sparse_index`` and ``sparse_value``; ``total`` is the
    sum of ``lengths`` as the index kept it (None: summed again)."""

    def __init__(
        self,
        *,
        ids: list[str],
        codes: list[str],
        vectors: np.ndarray,
        scope: np.ndarray,
        sparse_at: np.ndarray,
        sparse_index: np.ndarray,
        sparse_value: np.ndarray,
        lengths: np.ndarray,
        total: float | None,
    ) -> None:
        self.ids = ids
        self.codes = codes
        self.vectors = vectors
        self.scope = scope
        self.sparse_at = sparse_at
        self.sparse_index = sparse_index
        self.sparse_value = sparse_value
        self.lengths = lengths
        self.total = total


class LocalIndex:
    """The dense vectors, scopes and lexical postings of one collection
    (see the module docs). Rows are appended; a rewritten or deleted
    record's row is marked dead, and the rows are compacted when more than
    half are dead."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._lengths: np.ndarray = np.zeros(0, dtype=np.float64)
        self._total_length = 0.0
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._codes = _Codes()
        self._vectors: np.ndarray = np.zeros((0, dimension), dtype=np.float32)
        # The codes of each row's user, tenant and conversation (one row of
        # codes each, so that a mask compares contiguous codes).
        self._scope: np.ndarray = np.zeros((3, 0), dtype=np.int64)
        self._alive: np.ndarray = np.zeros(0, dtype=bool)
        # The sparse vectors of rows [0, base) as CSR arrays (a restored or
        # compacted index), of the later rows as pairs of lists.
        self._base = 0
        self._base_at: np.ndarray = np.zeros(1, dtype=np.int64)
        self._base_index: np.ndarray = np.zeros(0, dtype=np.int64)
        self._base_value: np.ndarray = np.zeros(0, dtype=np.float64)
        self._sparse: list[tuple[Sequence[int], Sequence[float]]] = []
        # Postings: of the base rows by token as CSR arrays (tokens sorted);
        # a token a later row has is in ``_postings`` instead, whole.
        self._tokens: np.ndarray = np.zeros(0, dtype=np.int64)
        self._token_at: np.ndarray = np.zeros(1, dtype=np.int64)
        self._token_rows: np.ndarray = np.zeros(0, dtype=np.int64)
        self._token_values: np.ndarray = np.zeros(0, dtype=np.float64)
        self._postings: dict[int, _Posting] = {}
        # Per token, its live rows, their values and the token's
        # inverse document frequency, as of the last write.
        self._weights: dict[int, tuple[np.ndarray, np.ndarray, float] | None] = {}
        # Per scope (user, tenant, conversation or None), its live rows
        # (ascending), as of the last write: a search then compares no
        # code of the whole collection.
        self._scoped: dict[tuple[str, str, str | None], np.ndarray] = {}
        self.scope_scans = 0
        """How many times a scope's rows were found by comparing every row's codes."""
        self._live = 0

    def __len__(self) -> int:
        return self._live

    # --- writes -------------------------------------------------------------------------

    def upsert(
        self,
        rows: Iterable[Row],
    ) -> None:
        """Add or replace records: each ``(id, (user, tenant, conversation),
        dense vector, (sparse indices, sparse values))``; a record's length
        is the sum of its sparse values (its token count, for term counts)."""
        rows = list(rows)
        if not rows:
            return
        self._weights.clear()
        self._scoped.clear()
        for record_id, _, _, _ in rows:
            self._kill(record_id)
        start = len(self._ids)
        self._reserve(start + len(rows))
        vectors = np.asarray([v for _, _, v, _ in rows], dtype=np.float32).reshape(
            len(rows), self.dimension
        )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        self._vectors[start : start + len(rows)] = vectors / np.where(norms > 0, norms, 1.0)
        added: dict[int, tuple[list[int], list[float]]] = {}
        for offset, (record_id, scope, _, sparse) in enumerate(rows):
            row = start + offset
            self._ids.append(record_id)
            self._row[record_id] = row
            self._scope[:, row] = [self._codes.code(part) for part in scope]
            self._alive[row] = True
            self._sparse.append(sparse)
            self._lengths[row] = float(sum(sparse[1]))
            self._total_length += self._lengths[row]
            for index, value in zip(*sparse, strict=True):
                rows_of, values_of = added.setdefault(int(index), ([], []))
                rows_of.append(row)
                values_of.append(float(value))
        for index, (rows_of, values_of) in added.items():
            posting = self._postings.get(index)
            if posting is None:
                posting = self._postings[index] = _Posting(self._base_posting(index))
            posting.extend(rows_of, values_of)
        self._live += len(rows)

    def delete(self, ids: Iterable[str]) -> None:
        """Remove these records (ids not held are ignored)."""
        self._weights.clear()
        self._scoped.clear()
        for record_id in ids:
            self._kill(record_id)
        if len(self._ids) > 64 and self._live * 2 < len(self._ids):
            self.restore(self.frozen(total=False))

    def _kill(self, record_id: str) -> None:
        row = self._row.pop(record_id, None)
        if row is not None:
            self._alive[row] = False
            self._live -= 1
            self._total_length -= self._lengths[row]

    def _reserve(self, rows: int) -> None:
        if rows <= len(self._alive):
            return
        capacity = max(rows, int(len(self._alive) * _GROWTH), 64)
        grow = capacity - len(self._alive)
        self._vectors = np.vstack([self._vectors, np.zeros((grow, self.dimension), np.float32)])
        self._scope = np.hstack([self._scope, np.full((3, grow), -1, dtype=np.int64)])
        self._alive = np.concatenate([self._alive, np.zeros(grow, dtype=bool)])
        self._lengths = np.concatenate([self._lengths, np.zeros(grow, dtype=np.float64)])

    # --- as arrays ----------------------------------------------------------------------

    def live_ids(self) -> list[str]:
        """The ids of the live rows, in row order (as `frozen` has them)."""
        n = len(self._ids)
        return [self._ids[row] for row in np.flatnonzero(self._alive[:n]).tolist()]

    def frozen(self, *, total: bool = True) -> Frozen:
        """The live rows, in row order, as arrays (to save the index, or to
        compact it); with the running total of their lengths, or (``total``
        false) without, so that `restore` sums them again."""
        n = len(self._ids)
        keep = np.flatnonzero(self._alive[:n])
        counts: np.ndarray = np.zeros(len(keep), dtype=np.int64)
        pieces_index: list[np.ndarray] = []
        pieces_value: list[np.ndarray] = []
        for at, row in enumerate(keep.tolist()):
            indices, values = self._sparse_of(row)
            counts[at] = len(indices)
            pieces_index.append(np.asarray(indices, dtype=np.int64))
            pieces_value.append(np.asarray(values, dtype=np.float64))
        sparse_at: np.ndarray = np.zeros(len(keep) + 1, dtype=np.int64)
        np.cumsum(counts, out=sparse_at[1:])
        by_code = sorted(self._codes.of, key=self._codes.of.__getitem__)
        return Frozen(
            ids=[self._ids[row] for row in keep.tolist()],
            codes=by_code,
            vectors=self._vectors[keep].copy(),
            scope=self._scope[:, keep].T.copy(),
            sparse_at=sparse_at,
            sparse_index=np.concatenate(pieces_index) if pieces_index else np.zeros(0, np.int64),
            sparse_value=np.concatenate(pieces_value) if pieces_value else np.zeros(0),
            lengths=self._lengths[keep].copy(),
            total=self._total_length if total else None,
        )

    def _sparse_of(self, row: int) -> tuple[Any, Any]:
        if row < self._base:
            start, end = int(self._base_at[row]), int(self._base_at[row + 1])
            return self._base_index[start:end], self._base_value[start:end]
        return self._sparse[row - self._base]

    def restore(self, frozen: Frozen) -> None:
        """Hold exactly the rows of ``frozen`` (made by `frozen`, of
        an index with this dimension), all live."""
        n = len(frozen.ids)
        self.__init__(self.dimension)  # type: ignore[misc]
        self._codes = _Codes(frozen.codes)
        self._ids = list(frozen.ids)
        self._row = {record_id: row for row, record_id in enumerate(self._ids)}
        self._reserve(n)
        self._vectors[:n] = frozen.vectors
        self._scope[:, :n] = frozen.scope.T
        self._alive[:n] = True
        self._base = n
        self._base_at = np.asarray(frozen.sparse_at, dtype=np.int64)
        self._base_index = np.asarray(frozen.sparse_index, dtype=np.int64)
        self._base_value = np.asarray(frozen.sparse_value, dtype=np.float64)
        rows_of: np.ndarray = np.repeat(np.arange(n, dtype=np.int64), np.diff(self._base_at))
        self._lengths[:n] = frozen.lengths
        if frozen.total is None:
            self._total_length = 0.0
            for length in frozen.lengths.tolist():
                self._total_length += length
        else:
            self._total_length = frozen.total
        # Postings by token, each in row order (a stable sort of the tokens).
        order = np.argsort(self._base_index, kind="stable")
        tokens = self._base_index[order]
        self._tokens, first = np.unique(tokens, return_index=True)
        self._token_at = np.append(first, len(tokens)).astype(np.int64)
        self._token_rows = rows_of[order]
        self._token_values = self._base_value[order]
        self._live = n

    # --- search -------------------------------------------------------------------------

    def _in_scope(self, user: str, tenant: str, conversation: str | None) -> np.ndarray:
        """The live rows of the scope, ascending (empty when no row can
        match); kept until the next write."""
        key = (user, tenant, conversation)
        found = self._scoped.get(key)
        if found is not None:
            return found
        if len(self._scoped) >= _SCOPES:
            self._scoped.clear()
        wanted = [self._codes.find(user), self._codes.find(tenant)]
        if conversation is not None:
            wanted.append(self._codes.find(conversation))
        if min(wanted) < 0:
            rows: np.ndarray = np.zeros(0, dtype=np.int64)
        else:
            self.scope_scans += 1
            n = len(self._ids)
            mask: np.ndarray = self._scope[0, :n] == wanted[0]
            mask &= self._scope[1, :n] == wanted[1]
            if conversation is not None:
                mask &= self._scope[2, :n] == wanted[2]
            mask &= self._alive[:n]
            rows = np.flatnonzero(mask)
        self._scoped[key] = rows
        return rows

    def _best(self, rows: np.ndarray, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` best of ``rows`` (ascending) by their ``scores``, best
        first; ties in row order."""
        if not len(rows):
            return []
        if len(rows) > k:
            part = np.argpartition(-scores, k - 1)[:k]
            # Rows tied with the k-th score compete on row order, as a full sort would.
            # The two sets are disjoint, so sorting their concatenation is their union
            # (``np.union1d`` would import ``numpy.ma`` on a fresh process's first search).
            edge = scores[part].min()
            chosen = np.sort(
                np.concatenate((part[scores[part] > edge], np.flatnonzero(scores == edge)))
            )
        else:
            chosen = np.arange(len(rows))
        order = chosen[np.lexsort((chosen, -scores[chosen]))][:k]
        best = zip(rows[order].tolist(), scores[order].tolist(), strict=True)
        return [(self._ids[row], float(score)) for row, score in best]

    def dense(
        self, vector: Sequence[float], *, k: int, user: str, tenant: str, conversation: str | None
    ) -> list[tuple[str, float]]:
        """The ``k`` records of the scope nearest ``vector`` by cosine, best
        first, with their scores."""
        rows = self._in_scope(user, tenant, conversation)
        if not len(rows):
            return []
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        scores: np.ndarray = self._vectors[rows] @ (query / (norm if norm > 0 else 1.0))
        finite = np.isfinite(scores)
        if not finite.all():
            rows, scores = rows[finite], scores[finite]
        return self._best(rows, scores, k)

    def lexical(
        self,
        query: Mapping[int, float],
        *,
        k: int,
        user: str,
        tenant: str,
        conversation: str | None,
    ) -> list[tuple[str, float]]:
        """The ``k`` records of the scope with the highest BM25 for the
        query's sparse vector ``query`` (index: weight), best first, with
        their scores; records sharing no token with the query are not
        found."""
        if not query or not self._live:
            return []
        in_scope = self._in_scope(user, tenant, conversation)
        if not len(in_scope):
            return []
        n = len(self._ids)
        scores: np.ndarray = np.zeros(n, dtype=np.float64)
        touched: np.ndarray = np.zeros(n, dtype=bool)
        for index, weight in query.items():
            found = self._weighed(int(index))
            if found is None:
                continue
            rows, values, idf = found
            scores[rows] += values * (idf * float(weight))  # a row is once in a posting
            touched[rows] = True
        candidates = in_scope[touched[in_scope]]
        return self._best(candidates, scores[candidates].astype(np.float32), k)

    def _weighed(self, index: int) -> tuple[np.ndarray, np.ndarray, float] | None:
        """The live rows of token ``index``'s posting, their values and
        the token's inverse document frequency; None when no live row has it.
        Kept until the next write changes the corpus statistics."""
        if index in self._weights:
            return self._weights[index]
        if len(self._weights) >= _WEIGHED:
            self._weights.clear()
        weighed: tuple[np.ndarray, np.ndarray, float] | None = None
        found = self._posting(index)
        if found is not None:
            rows, values = found
            live = self._alive[rows]
            df = int(np.count_nonzero(live))
            if df:
                rows, values = rows[live], values[live]
                idf = math.log((self._live - df + 0.5) / (df + 0.5) + 1)
                weighed = (rows, values, idf)
        self._weights[index] = weighed
        return weighed

    def _posting(self, index: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Token ``index``'s rows (ascending) and values, or None."""
        posting = self._postings.get(index)
        if posting is not None:
            return posting.rows[: posting.size], posting.values[: posting.size]
        return self._base_posting(index)

    def _base_posting(self, index: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Token ``index``'s rows and values among the base rows, or None."""
        at = int(np.searchsorted(self._tokens, index))
        if at < len(self._tokens) and int(self._tokens[at]) == index:
            start, end = int(self._token_at[at]), int(self._token_at[at + 1])
            return self._token_rows[start:end], self._token_values[start:end]
        return None


class _Posting:
    """The rows and values of one token, in arrays that grow by half again
    when full (a write appends without copying the rest)."""

    def __init__(self, base: tuple[np.ndarray, np.ndarray] | None) -> None:
        size = 0 if base is None else len(base[0])
        capacity = max(8, int(size * _GROWTH))
        self.rows: np.ndarray = np.zeros(capacity, dtype=np.int64)
        self.values: np.ndarray = np.zeros(capacity, dtype=np.float64)
        if base is not None:
            self.rows[:size], self.values[:size] = base
        self.size = size

    def extend(self, rows: list[int], values: list[float]) -> None:
        end = self.size + len(rows)
        if end > len(self.rows):
            capacity = max(end, int(len(self.rows) * _GROWTH))
            self.rows = np.concatenate(
                [self.rows[: self.size], np.zeros(capacity - self.size, np.int64)]
            )
            self.values = np.concatenate([self.values[: self.size], np.zeros(capacity - self.size)])
        self.rows[self.size : end] = rows
        self.values[self.size : end] = values
        self.size = end
