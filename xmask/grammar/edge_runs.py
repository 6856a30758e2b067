"""Edges of code point automata as sorted runs: ``(lo, hi, target)`` intervals fused.

Example::

    >>> merge_edges([(3, 5, 1), (0, 2, 1), (6, 6, 2)])
    ((0, 5, 1), (6, 6, 2))
"""

from __future__ import annotations

from typing import List, Tuple

__all__ = ["merge_edges"]


def merge_edges(pairs) -> Tuple[Tuple[int, int, int], ...]:
    """Sort and fuse adjacent ``(lo, hi, target)`` intervals with the same target.

    Example::

        >>> merge_edges([(3, 5, 1), (0, 2, 1), (6, 6, 2)])
        ((0, 5, 1), (6, 6, 2))
    """
    out: List[Tuple[int, int, int]] = []
    for lo, hi, t in sorted(pairs):
        if out and out[-1][2] == t and out[-1][1] + 1 == lo:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return tuple(out)
