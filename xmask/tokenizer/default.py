"""The embedded default tokenizer: a small byte-level BPE built offline from a shipped corpus.

Tests, examples and benchmarks need a real tokenizer without network access or large files.
This module trains one on ``xmask/data/default_corpus.txt`` (about 31 KB of English prose,
JSON documents with escapes and non-ASCII text, and code) the first time it is asked for:

* model: ``tokenizers`` BPE, trained with ``BpeTrainer(min_frequency=2)``; the corpus yields
  about 1,460 merges, so with the 256 single-byte tokens there are about 1,720 ids;
* pre-tokenizer and decoder: GPT-2 ``ByteLevel`` (regex split, no prefix space), with all 256
  byte tokens in the initial alphabet, so every byte string -- invalid UTF-8 included -- is
  encodable;
* ``<|endoftext|>``: a special token appended as the last id; it is the stop token.

Training is deterministic (the trainer breaks count ties by pair id, and alphabet ids are
assigned in sorted order; the test suite rebuilds it in fresh processes and compares
``to_str()``), and takes about 50 ms.  The serialised tokenizer is cached per process; every
:func:`default_tokenizer` call returns a fresh ``Tokenizer`` so callers may configure it freely.

Example::

    >>> tok = default_tokenizer()
    >>> tok.decode(tok.encode('{"caf\u00e9": [1, 2]}').ids)
    '{"caf\u00e9": [1, 2]}'
"""

from __future__ import annotations

import functools
from importlib import resources

from .info import TokenizerInfo

__all__ = ["DEFAULT_STOP_TOKEN", "default_corpus", "default_tokenizer", "default_tokenizer_info"]

#: The special end-of-text token of the default tokenizer (its last id).
DEFAULT_STOP_TOKEN = "<|endoftext|>"

# Upper bound for the trainer; the corpus runs out of pairs seen twice well before it, so the
# real size is set by the corpus and min_frequency.
_MAX_VOCAB = 4096
_MIN_FREQUENCY = 2


def default_corpus() -> str:
    """Text of the shipped training corpus (``xmask/data/default_corpus.txt``).

    Examples
    --------
    >>> "caf\u00e9" in default_corpus()
    True
    """
    return (
        resources.files("xmask")
        .joinpath("data")
        .joinpath("default_corpus.txt")
        .read_text(encoding="utf-8")
    )


@functools.lru_cache(maxsize=1)
def _default_tokenizer_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_MAX_VOCAB,
        min_frequency=_MIN_FREQUENCY,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator([default_corpus()], trainer=trainer)
    tok.add_special_tokens([DEFAULT_STOP_TOKEN])
    return tok.to_str()


def default_tokenizer():
    """A fresh ``tokenizers.Tokenizer`` for the embedded byte-level BPE vocabulary.

    Returns
    -------
    tokenizers.Tokenizer
        About 1,720 ids: 256 single bytes, BPE merges, and ``<|endoftext|>`` (last id).

    Examples
    --------
    >>> tok = default_tokenizer()
    >>> tok.token_to_id("<|endoftext|>") == tok.get_vocab_size() - 1
    True
    """
    from tokenizers import Tokenizer

    return Tokenizer.from_str(_default_tokenizer_json())


@functools.lru_cache(maxsize=1)
def default_tokenizer_info() -> TokenizerInfo:
    """The (cached, shared) :class:`TokenizerInfo` of :func:`default_tokenizer`.

    Returns
    -------
    TokenizerInfo
        ``BYTE_LEVEL``; stop and only special token ``<|endoftext|>``.

    Examples
    --------
    >>> info = default_tokenizer_info()
    >>> info.vocab_type.name, info.decoded_vocab[info.stop_token_ids[0]]
    ('BYTE_LEVEL', b'<|endoftext|>')
    """
    return TokenizerInfo.from_huggingface(default_tokenizer())
