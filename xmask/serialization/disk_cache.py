"""Compiled grammars on disk, for warm-up across restarts (``GrammarCompiler(cache_dir=...)``).

One file per compiled grammar, ``<key>.json`` in the cache directory, holding
``CompiledGrammar.serialize_json()``.  The key is a SHA-256 over everything that determines the
compiled result: what was compiled (EBNF text, canonical schema text, regex, or the serialized
Grammar) and its options, the compile limits, the tokenizer's ``vocab_hash``, the serialization
format version and the xmask version.

Safety:

* **concurrent writers** (threads or processes, one machine or a shared file system): each
  writes a private temporary file in the same directory and renames it over the key with
  ``os.replace``, which is atomic, so a reader sees either no file or a complete one; two
  writers of one key write identical content and the last rename wins;
* **bad files** (corrupt, truncated, another format version, another tokenizer): the checksum
  and the validating loader reject them; the grammar is then compiled again and the file
  rewritten.  A bad file is never trusted and never raises out of the compiler;
* **I/O errors** (read-only or full disk): the cache is skipped, compiling still works.

Example::

    >>> import xmask, tempfile
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> d = tempfile.mkdtemp()
    >>> _ = xmask.GrammarCompiler(info, cache_dir=d).compile_grammar('root ::= "a"+')
    >>> c = xmask.GrammarCompiler(info, cache_dir=d)
    >>> _ = c.compile_grammar('root ::= "a"+')
    >>> c.cache_info()["disk_hits"]
    1
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from typing import Any, Dict, Optional

from ..errors import DeserializeFormatError, DeserializeVersionError
from .format import SERIALIZATION_VERSION

__all__ = ["DiskCache"]


class DiskCache:
    """A directory of serialized compiled grammars for one tokenizer (see the module doc).

    ``stats`` counts ``hits``, ``misses``, ``writes``, ``rejected`` (bad files ignored) and
    ``errors`` (I/O failures).
    """

    def __init__(self, directory, tokenizer_info, extra_key: Any = None):
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self._info = tokenizer_info
        self._base = json.dumps(
            [SERIALIZATION_VERSION, _xmask_version(), tokenizer_info.vocab_hash, extra_key],
            sort_keys=True, default=repr,
        )
        self._lock = threading.Lock()
        self.stats: Dict[str, int] = dict(hits=0, misses=0, writes=0, rejected=0, errors=0)

    def _count(self, name: str) -> None:
        with self._lock:
            self.stats[name] += 1

    def key(self, what: Any) -> str:
        """Hex SHA-256 of ``what`` (a JSON-able description of the compile) and the base key."""
        text = json.dumps([self._base, what], sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).hexdigest()

    def path(self, key: str) -> str:
        return os.path.join(self.directory, key + ".json")

    def load(self, key: str):
        """The cached CompiledGrammar for ``key``, or None (missing or rejected file)."""
        from ..compiler.compiled import CompiledGrammar

        try:
            with open(self.path(key), encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            self._count("misses")
            return None
        except (OSError, UnicodeDecodeError):
            self._count("rejected")
            return None
        try:
            compiled = CompiledGrammar.deserialize_json(text, self._info)
        except (DeserializeFormatError, DeserializeVersionError):
            self._count("rejected")
            return None
        self._count("hits")
        return compiled

    def store(self, key: str, compiled) -> Optional[str]:
        """Write ``compiled`` atomically under ``key``; returns the path, or None on I/O error."""
        text = compiled.serialize_json()
        final = self.path(key)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=".tmp-" + key[:16] + "-", suffix=".json",
                                       dir=self.directory)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())  # the rename must never expose unwritten data
            os.replace(tmp, final)
            tmp = None
        except OSError:
            self._count("errors")
            return None
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        self._count("writes")
        return final


def _xmask_version() -> str:
    from .._version import __version__

    return __version__
