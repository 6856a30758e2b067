"""Tokenizer bridge (pure Python): vocabularies decoded to bytes, special and stop tokens.

* :class:`TokenizerInfo` -- the public, XGrammar-compatible vocabulary object.
* :class:`VocabType` -- RAW / BYTE_FALLBACK / BYTE_LEVEL spelling of a vocabulary.
* :func:`default_tokenizer`, :func:`default_tokenizer_info` -- a small embedded byte-level BPE
  tokenizer for tests and examples.

Example::

    >>> from xmask.tokenizer import default_tokenizer_info
    >>> default_tokenizer_info().vocab_type.name
    'BYTE_LEVEL'
"""

from .bytes import VocabType, bytes_to_unicode, decode_token, decode_vocab
from .default import default_tokenizer, default_tokenizer_info
from .info import TokenizerInfo
from .vocab import STOP_TOKEN_NAMES

__all__ = [
    "STOP_TOKEN_NAMES",
    "TokenizerInfo",
    "VocabType",
    "bytes_to_unicode",
    "decode_token",
    "decode_vocab",
    "default_tokenizer",
    "default_tokenizer_info",
]
