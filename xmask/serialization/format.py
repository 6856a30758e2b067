"""The versioned JSON envelope every serialized xmask object lives in.

A serialized object is one JSON object::

    {"__VERSION__": "xmask-v3", "kind": "grammar", "checksum": "crc32:1a2b3c4d", "body": {...}}

* ``__VERSION__`` (XGrammar's field name): the format version, see
  :func:`get_serialization_version`.  Any other value raises ``DeserializeVersionError`` naming
  both versions (an XGrammar document, ``"v16"``, is refused this way too).
* ``kind``: which object the body describes, so a Grammar is never read as a CompiledGrammar.
* ``checksum``: CRC-32 of the body's canonical JSON (sorted keys, no spaces), so any corruption
  of the text, including in the base64 array payloads, is detected.  Canonical means re-indented
  or key-reordered copies (a JSON database column) still verify.
* ``body``: the object's own fields.

The checksum detects accidental corruption only; loaders additionally validate every index they
hand to the C runtime (see :mod:`xmask.serialization.compiled_codec`), so even a crafted
document with a matching checksum cannot make the runtime read out of bounds.

Example::

    >>> text = dump_document("grammar", {"x": 1})
    >>> load_document(text, "grammar")
    {'x': 1}
"""

from __future__ import annotations

import json
import zlib
from typing import Any, Dict

from ..errors import DeserializeFormatError, DeserializeVersionError, InvalidJSONError

__all__ = [
    "SERIALIZATION_VERSION",
    "CorruptJSONError",
    "TokenizerMismatchError",
    "dump_document",
    "format_error",
    "get_serialization_version",
    "load_document",
]

#: Bumped whenever a serialized object's layout or meaning changes.
SERIALIZATION_VERSION = "xmask-v3"

_KIND_NAMES = {
    "tokenizer_info": "TokenizerInfo",
    "grammar": "Grammar",
    "compiled_grammar": "CompiledGrammar",
}


class CorruptJSONError(DeserializeFormatError, InvalidJSONError):
    """Serialized text that is not JSON at all (truncated, garbled).

    Both a ``DeserializeFormatError`` and XGrammar's ``InvalidJSONError``, which is what
    XGrammar raises for the same input, so either ``except`` clause catches it.
    """

    def __init__(self, message, position=None):
        InvalidJSONError.__init__(self, message, position)


class TokenizerMismatchError(DeserializeFormatError):
    """A serialized CompiledGrammar loaded with a TokenizerInfo other than its own.

    ``expected_hash`` is the tokenizer the grammar was compiled for, ``actual_hash`` the one
    given to ``deserialize_json``.
    """

    def __init__(self, message, expected_hash, actual_hash):
        self.expected_hash = expected_hash
        self.actual_hash = actual_hash
        super().__init__(message)


def get_serialization_version() -> str:
    """The serialization format version written into every serialized object.

    Example::

        >>> get_serialization_version()
        'xmask-v3'
    """
    return SERIALIZATION_VERSION


def format_error(where: str, message: str) -> DeserializeFormatError:
    """A ``DeserializeFormatError`` that names the field (``where``) and the problem."""
    return DeserializeFormatError(f"cannot deserialize {where}: {message}")


def _canonical(body: Any) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def _checksum(body: Any) -> str:
    return "crc32:%08x" % (zlib.crc32(_canonical(body)) & 0xFFFFFFFF)


def dump_document(kind: str, body: Dict[str, Any]) -> str:
    """The JSON text of ``body`` wrapped in the versioned, checksummed envelope."""
    return json.dumps(
        {"__VERSION__": SERIALIZATION_VERSION, "kind": kind, "checksum": _checksum(body),
         "body": body},
        separators=(",", ":"),
    )


def load_document(text: Any, kind: str) -> Dict[str, Any]:
    """Parse and verify an envelope of ``kind``; return its body.

    Raises ``CorruptJSONError`` (a ``DeserializeFormatError``) for text that is not JSON,
    ``DeserializeVersionError`` for another or a missing format version, and
    ``DeserializeFormatError`` for another kind, a bad checksum or a malformed envelope.
    """
    name = _KIND_NAMES[kind]
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptJSONError(
                f"cannot deserialize {name}: the data is not UTF-8 text ({exc})", exc.start
            ) from None
    if not isinstance(text, str):
        raise TypeError(f"{name}.deserialize_json needs a JSON str, got {type(text).__name__}")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        pos = getattr(exc, "pos", None)
        raise CorruptJSONError(
            f"cannot deserialize {name}: not valid JSON ({exc}; the text has {len(text)} "
            "characters, truncated or corrupted?)", pos
        ) from None
    if not isinstance(doc, dict):
        raise format_error(name, f"expected a JSON object, got a JSON {type(doc).__name__}")
    if "__VERSION__" not in doc:
        raise DeserializeVersionError(
            f"cannot deserialize {name}: missing __VERSION__ field (expected "
            f"{SERIALIZATION_VERSION!r}); not data written by xmask serialize_json()"
        )
    version = doc["__VERSION__"]
    if version != SERIALIZATION_VERSION:
        raise DeserializeVersionError(
            f"cannot deserialize {name}: serialization version {version!r} in the data, but this "
            f"xmask reads version {SERIALIZATION_VERSION!r}; serialize it again with this version"
        )
    got = doc.get("kind")
    if got != kind:
        got_name = _KIND_NAMES.get(got, repr(got)) if isinstance(got, str) else repr(got)
        raise format_error(name, f"the data is a serialized {got_name}, not a {name}")
    body = doc.get("body")
    if not isinstance(body, dict):
        raise format_error(f"{name}.body", "missing or not a JSON object")
    expected = doc.get("checksum")
    actual = _checksum(body)
    if expected != actual:
        raise format_error(
            name, f"checksum mismatch (stored {expected!r}, computed {actual!r}): the data is "
            "corrupted"
        )
    return body
