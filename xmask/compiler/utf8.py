"""Code-point ranges -> sequences of UTF-8 byte ranges.

A character class over code points becomes an alternation of byte-range sequences, each of which
matches exactly the shortest-form UTF-8 encodings of one sub-range, so the byte-level automaton
accepts valid UTF-8 only (no overlongs, no surrogates).

Example::

    >>> utf8_sequences(0x41, 0x5A)
    [((65, 90),)]
    >>> utf8_sequences(0xE9, 0xE9)
    [((195, 195), (169, 169))]
"""

from __future__ import annotations

from typing import List, Tuple

ByteSeq = Tuple[Tuple[int, int], ...]

_MAX_BY_LEN = (0x7F, 0x7FF, 0xFFFF, 0x10FFFF)


def _encode(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> List[ByteSeq]:
    """Byte-range sequences matching exactly the UTF-8 encodings of code points ``lo..hi``."""
    out: List[ByteSeq] = []
    _split(lo, hi, out)
    return out


def _split(lo: int, hi: int, out: List[ByteSeq]) -> None:
    if lo > hi:
        return
    # 1. Split at encoding-length boundaries.
    for limit in _MAX_BY_LEN[:-1]:
        if lo <= limit < hi:
            _split(lo, limit, out)
            _split(limit + 1, hi, out)
            return
    if hi <= 0x7F:
        out.append(((lo, hi),))
        return
    # 2. Split until each range is a product of byte ranges: find the first continuation-byte
    #    boundary where lo/hi are not aligned.
    n = len(_encode(lo))
    for i in range(1, n):
        mask = (1 << (6 * i)) - 1
        if lo & ~mask != hi & ~mask:
            if lo & mask != 0:
                _split(lo, lo | mask, out)
                _split((lo | mask) + 1, hi, out)
                return
            if hi & mask != mask:
                _split(lo, (hi & ~mask) - 1, out)
                _split(hi & ~mask, hi, out)
                return
    a, b = _encode(lo), _encode(hi)
    out.append(tuple((a[i], b[i]) for i in range(n)))
