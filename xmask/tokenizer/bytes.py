"""Byte decoding of vocabulary strings: the bytes a token really stands for.

Tokenizers store their vocabularies in an *encoded* form, not as the bytes a token adds to the
output.  There are three encodings in common use, named after XGrammar's ``VocabType``:

``RAW``
    The token string is the text itself; its bytes are its UTF-8 encoding.

``BYTE_FALLBACK`` (sentencepiece-style: Llama-2, Mistral, Phi-3)
    A space is spelled ``"\u2581"`` (LOWER ONE EIGHTH BLOCK) and a byte that is not covered by
    any text piece is a token of the form ``"<0xNN>"``::

        "\u2581the"  -> b" the"        "<0x0A>" -> b"\\n"

``BYTE_LEVEL`` (GPT-2-style: GPT-2, Llama-3, Qwen, DeepSeek, o200k)
    Every byte ``0..255`` is written as one printable unicode character by GPT-2's
    ``bytes_to_unicode`` table: printable Latin-1 bytes stand for themselves and the other 68
    bytes are shifted to ``U+0100..U+0143``::

        "\u0120the" -> b" the"      "\u010a" -> b"\\n"
        "\u00c3\u00a9" -> b"\\xc3\\xa9" (the UTF-8 of "\u00e9")

    A string that uses characters outside that alphabet cannot be byte-level text (typically an
    added token such as ``"<\uff5cend\u2581of\u2581sentence\uff5c>"``); like XGrammar we then
    fall back to its UTF-8 encoding.

Everything here is pure Python.  :func:`decode_vocab` is the bulk entry point; decoding the
128,256 ids of Llama-3 takes about 50 ms.
"""

from __future__ import annotations

import enum
import re
from typing import Dict, Iterable, List, Optional, Union

__all__ = [
    "VocabType",
    "bytes_to_unicode",
    "unicode_to_bytes",
    "decode_byte_level",
    "decode_byte_fallback",
    "decode_raw",
    "decode_token",
    "decode_vocab",
    "coerce_vocab_type",
    "first_invalid_char",
]

Token = Union[str, bytes, None]


class VocabType(enum.IntEnum):
    """How a tokenizer spells its vocabulary (values match ``xgrammar.VocabType``).

    Examples
    --------
    >>> VocabType.BYTE_LEVEL
    <VocabType.BYTE_LEVEL: 2>
    >>> VocabType(1).name
    'BYTE_FALLBACK'
    """

    RAW = 0
    BYTE_FALLBACK = 1
    BYTE_LEVEL = 2


def coerce_vocab_type(value) -> VocabType:
    """Accept a :class:`VocabType`, its integer value, or its name (any case).

    Examples
    --------
    >>> coerce_vocab_type("byte_level")
    <VocabType.BYTE_LEVEL: 2>
    """
    if isinstance(value, VocabType):
        return value
    if isinstance(value, str):
        try:
            return VocabType[value.strip().upper()]
        except KeyError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return VocabType(value)
        except ValueError:
            pass
    from ..errors import TokenizerError

    raise TokenizerError(
        f"unknown vocab_type {value!r}; expected one of {[m.name for m in VocabType]} or 0/1/2"
    )


# --------------------------------------------------------------------------------------------
# BYTE_LEVEL: GPT-2's byte <-> unicode alphabet
# --------------------------------------------------------------------------------------------


def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's table from each byte value to the printable character that spells it.

    Bytes ``!``..``~``, ``\u00a1``..``\u00ac`` and ``\u00ae``..``\u00ff`` map to the character
    with the same code point; the remaining 68 bytes (controls, space, DEL, NBSP, soft hyphen)
    map, in increasing byte order, to ``U+0100``, ``U+0101``, ...

    Examples
    --------
    >>> table = bytes_to_unicode()
    >>> table[ord("a")], table[ord(" ")], table[ord("\\n")]
    ('a', '\u0120', '\u010a')
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(0xA1, 0xAC + 1),
        *range(0xAE, 0xFF + 1),
    ]
    table = {b: chr(b) for b in printable}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return dict(sorted(table.items()))


def unicode_to_bytes() -> Dict[str, int]:
    """The inverse of :func:`bytes_to_unicode`: alphabet character -> byte value.

    Examples
    --------
    >>> unicode_to_bytes()["\u0120"]
    32
    """
    return {ch: b for b, ch in bytes_to_unicode().items()}


# ``str.translate`` table: each alphabet character becomes the Latin-1 character whose code
# point is its byte, so ``.encode("latin-1")`` yields the bytes in one C-level pass.  Code
# points below 256 that are *not* in the alphabet (space, controls, ...) are sent to a
# sentinel outside Latin-1 so that the encode fails and we fall back to UTF-8, exactly like a
# character above U+0143 that the table leaves alone.
_SENTINEL = "\U0010ffff"
_BYTE_LEVEL_TRANSLATE: Dict[int, str] = {cp: _SENTINEL for cp in range(256)}
_BYTE_LEVEL_TRANSLATE.update({ord(ch): chr(b) for b, ch in bytes_to_unicode().items()})


def decode_byte_level(token: Union[str, bytes]) -> bytes:
    """Bytes of a GPT-2 byte-level token string.

    A string containing a character outside the byte-level alphabet is returned UTF-8 encoded
    (XGrammar does the same), which is the right answer for added tokens stored verbatim.

    Examples
    --------
    >>> decode_byte_level("\u0120caf\u00c3\u00a9")
    b' caf\\xc3\\xa9'
    >>> decode_byte_level("<|eot_id|>")
    b'<|eot_id|>'
    """
    if isinstance(token, (bytes, bytearray)):
        try:
            token = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(token)
    try:
        return token.translate(_BYTE_LEVEL_TRANSLATE).encode("latin-1")
    except UnicodeEncodeError:
        return token.encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------------------------
# BYTE_FALLBACK: sentencepiece "<0xNN>" byte pieces and the U+2581 space marker
# --------------------------------------------------------------------------------------------

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
SPACE_MARKER = "\u2581"


def decode_byte_fallback(token: Union[str, bytes]) -> bytes:
    """Bytes of a sentencepiece (byte-fallback) token string.

    ``"<0xNN>"`` is the single byte ``NN``; otherwise every ``"\u2581"`` becomes a space and
    the result is UTF-8 encoded.

    Examples
    --------
    >>> decode_byte_fallback("<0x0A>"), decode_byte_fallback("\u2581hello")
    (b'\\n', b' hello')
    """
    if isinstance(token, (bytes, bytearray)):
        try:
            token = bytes(token).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(token)
    if len(token) == 6:
        m = _BYTE_PIECE.fullmatch(token)
        if m is not None:
            return bytes((int(m.group(1), 16),))
    return token.replace(SPACE_MARKER, " ").encode("utf-8", "surrogatepass")


def decode_raw(token: Union[str, bytes]) -> bytes:
    """Bytes of a raw token: UTF-8 for ``str``, unchanged for ``bytes``.

    Examples
    --------
    >>> decode_raw("caf\u00e9"), decode_raw(b"\\xff")
    (b'caf\\xc3\\xa9', b'\\xff')
    """
    if isinstance(token, (bytes, bytearray)):
        return bytes(token)
    return token.encode("utf-8", "surrogatepass")


_DECODERS = {
    VocabType.RAW: decode_raw,
    VocabType.BYTE_FALLBACK: decode_byte_fallback,
    VocabType.BYTE_LEVEL: decode_byte_level,
}


def decode_token(token: Token, vocab_type=VocabType.RAW) -> bytes:
    """Bytes of one encoded token under ``vocab_type`` (``None`` -> ``b""``).

    Examples
    --------
    >>> decode_token("\u0120x", VocabType.BYTE_LEVEL), decode_token("\u2581x", "byte_fallback")
    (b' x', b' x')
    """
    if token is None:
        return b""
    return _DECODERS[coerce_vocab_type(vocab_type)](token)


def decode_vocab(tokens: Iterable[Token], vocab_type=VocabType.RAW) -> List[bytes]:
    """Decode a whole vocabulary (``None`` entries, i.e. unused ids, become ``b""``).

    Examples
    --------
    >>> decode_vocab(["a", "\u0120b", None], VocabType.BYTE_LEVEL)
    [b'a', b' b', b'']
    """
    vocab_type = coerce_vocab_type(vocab_type)
    if vocab_type is VocabType.BYTE_LEVEL:
        table = _BYTE_LEVEL_TRANSLATE
        out: List[bytes] = []
        append = out.append
        for tok in tokens:
            if tok.__class__ is str:
                try:
                    append(tok.translate(table).encode("latin-1"))
                except UnicodeEncodeError:
                    append(tok.encode("utf-8", "surrogatepass"))
            elif tok is None:
                append(b"")
            else:
                append(decode_byte_level(tok))
        return out
    decode = _DECODERS[vocab_type]
    return [b"" if tok is None else decode(tok) for tok in tokens]


def first_invalid_char(token: str) -> Optional[str]:
    """The first character of ``token`` outside the byte-level alphabet, or ``None``.

    Examples
    --------
    >>> first_invalid_char("\u0120ok"), first_invalid_char("a b")
    (None, ' ')
    """
    for ch in token:
        if _BYTE_LEVEL_TRANSLATE.get(ord(ch), _SENTINEL) == _SENTINEL:
            return ch
    return None
