"""Byte-sorted vocabulary tables shared by every grammar compiled for one tokenizer.

Grammar-eligible tokens (not special, not padding, non-empty) are sorted by their raw bytes; for
each sorted position we store the length of the common prefix with the previous token.  Tokens
that extend a prefix are contiguous in this order, which is what lets the cache builder and the
runtime share parse work and skip whole groups of tokens.
"""

from __future__ import annotations

import numpy as np

from ..runtime._tables import VocabTables


def _common_prefix_len(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def build_vocab_tables(tokenizer_info) -> VocabTables:
    """Build the ``VocabTables`` for a ``TokenizerInfo``.

    Example::

        >>> from xmask import TokenizerInfo
        >>> vt = build_vocab_tables(TokenizerInfo([b"b", b"a", b"ab"]))
        >>> vt.arrays["sorted_ids"].tolist(), vt.arrays["lcp"].tolist()
        ([1, 2, 0], [0, 1, 0])
    """
    vocab = tokenizer_info.decoded_vocab
    vocab_size = tokenizer_info.vocab_size
    special = set(tokenizer_info.special_token_ids)
    eligible_ids = [i for i in range(vocab_size) if i not in special and len(vocab[i]) > 0]
    eligible_ids.sort(key=vocab.__getitem__)
    n = len(eligible_ids)
    sorted_bytes = [vocab[i] for i in eligible_ids]
    lens = np.fromiter((len(b) for b in sorted_bytes), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=offsets[1:])
    tok_bytes = np.frombuffer(b"".join(sorted_bytes), dtype=np.uint8)
    lcp = np.zeros(n, dtype=np.int32)
    for i in range(1, n):
        lcp[i] = _common_prefix_len(sorted_bytes[i - 1], sorted_bytes[i])
    id_pos = np.full(vocab_size, -1, dtype=np.int32)
    id_pos[np.asarray(eligible_ids, dtype=np.int64)] = np.arange(n, dtype=np.int32)
    n_words = (vocab_size + 31) // 32
    eligible_bits = np.zeros(n_words * 32, dtype=np.uint8)
    eligible_bits[np.asarray(eligible_ids, dtype=np.int64)] = 1
    eligible = np.packbits(eligible_bits, bitorder="little").view("<u4").astype(np.uint32)
    return VocabTables(
        vocab_size,
        n,
        int(lens.max()) if n else 0,
        {
            "sorted_ids": np.asarray(eligible_ids, dtype=np.int32),
            "tok_offsets": offsets,
            "tok_bytes": tok_bytes,
            "lcp": lcp,
            "id_pos": id_pos,
            "eligible": eligible,
        },
    )
