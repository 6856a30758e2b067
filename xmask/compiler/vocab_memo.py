"""One ``VocabTables`` per distinct tokenizer, shared by compilers and deserialized grammars.

Building the byte-sorted vocabulary tables costs ~0.1 s for a 128k vocabulary and ~3 MB; a
server that deserializes or unpickles many compiled grammars (each unpickle brings its own
``TokenizerInfo`` copy) should pay that once.  Tables are keyed by ``TokenizerInfo.vocab_hash``,
which covers everything they are built from (bytes of every id, vocab size, special ids), and
the few most recent are kept.

Example::

    >>> import xmask
    >>> info = xmask.TokenizerInfo.from_huggingface(xmask.default_tokenizer())
    >>> shared_vocab_tables(info) is shared_vocab_tables(info)
    True
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .token_table import build_vocab_tables

__all__ = ["shared_vocab_tables"]

_MAX_TOKENIZERS = 4
_lock = threading.Lock()
_tables: "OrderedDict[str, object]" = OrderedDict()


def shared_vocab_tables(tokenizer_info):
    """The ``VocabTables`` of ``tokenizer_info`` (built once per distinct vocabulary)."""
    key = tokenizer_info.vocab_hash
    with _lock:
        hit = _tables.get(key)
        if hit is not None:
            _tables.move_to_end(key)
            return hit
    built = build_vocab_tables(tokenizer_info)  # outside the lock: other tokenizers proceed
    with _lock:
        built = _tables.setdefault(key, built)
        _tables.move_to_end(key)
        while len(_tables) > _MAX_TOKENIZERS:
            _tables.popitem(last=False)
    return built
