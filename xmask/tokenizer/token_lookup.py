"""Name one token of a vocabulary: by id, or by its exact text (special tokens included).

Structural tags, Lark and EBNF helpers let a grammar name a whole token (``<tool_call>``,
``<|python_tag|>``, or an id); :func:`resolve_token` turns that name into the id, the way
XGrammar 0.2.8 resolves token strings: the text must equal the token's *decoded* text exactly
(``" hello"`` with its space for Llama-3's ``Ġhello``; the raw vocabulary spelling
``"Ġhello"`` is not a name).  Special and added tokens are named by their text.

When several ids decode to the same text (a byte-fallback vocabulary's ``<0x41>`` and ``A``),
the lowest id that is not special wins, else the lowest special id.

Example::

    >>> from xmask import TokenizerInfo
    >>> info = TokenizerInfo(["a", "<tool_call>", "</s>"], stop_token_ids=[2])
    >>> resolve_token(info, "<tool_call>"), resolve_token(info, 0)
    (1, 0)
    >>> resolve_token(info, "<b>", where="tags[0].begin")
    Traceback (most recent call last):
        ...
    xmask.errors.InvalidTokenError: token '<b>' (at tags[0].begin) is not in the vocabulary: no token decodes to exactly this text
"""

from __future__ import annotations

import operator
import threading
import weakref
from typing import Dict, Union

from ..errors import InvalidTokenError

__all__ = ["resolve_token"]

_LOCK = threading.Lock()
_BY_TEXT: "weakref.WeakKeyDictionary[object, Dict[bytes, int]]" = weakref.WeakKeyDictionary()


def _text_index(info) -> Dict[bytes, int]:
    """Decoded bytes -> id for ``info`` (built once per TokenizerInfo, ~50 ms on 150k ids)."""
    with _LOCK:
        got = _BY_TEXT.get(info)
    if got is not None:
        return got
    special = set(info.special_token_ids)
    index: Dict[bytes, int] = {}
    # lowest special id first, then lowest non-special id overwrites: non-special wins
    for i in sorted(special, reverse=True):
        b = info.decoded_vocab[i]
        if b:
            index[b] = i
    vocab = info.decoded_vocab
    for i in range(len(vocab) - 1, -1, -1):
        if i not in special and vocab[i]:
            index[vocab[i]] = i
    with _LOCK:
        _BY_TEXT[info] = index
    return index


def resolve_token(info, token: Union[int, str], where: str = "") -> int:
    """The id of ``token`` in ``info``'s vocabulary: an int id (checked against
    ``[0, vocab_size)``) or a str, the exact decoded text of one token (special tokens
    included).  Raises ``InvalidTokenError`` naming the token and ``where`` otherwise.

    Example::

        >>> from xmask import TokenizerInfo
        >>> resolve_token(TokenizerInfo(["x", "<|python_tag|>"]), "<|python_tag|>")
        1
    """
    at = f" (at {where})" if where else ""
    if isinstance(token, str):
        got = _text_index(info).get(token.encode("utf-8"))
        if got is None:
            raise InvalidTokenError(f"token {token!r}{at} is not in the vocabulary: no token "
                                    "decodes to exactly this text")
        return got
    if isinstance(token, bool):
        raise InvalidTokenError(f"token {token!r}{at} must be a token id (int) or token text (str)")
    try:
        tid = operator.index(token)
    except TypeError:
        raise InvalidTokenError(f"token {token!r}{at} must be a token id (int) or token text "
                                f"(str), got {type(token).__name__}") from None
    if not 0 <= tid < info.vocab_size:
        raise InvalidTokenError(
            f"token id {tid}{at} is outside the vocabulary [0, {info.vocab_size})")
    return tid
