"""The NFA's data: flat CSR edge arrays, byte classes, and the IR helpers the builder uses.

The builder itself is ``_nfa_build.NFA`` (compiled): every rule gets a contiguous range of
NFA states with epsilon, byte-range and call edges, returned by ``NFA.arrays()`` as
:class:`NfaArrays`, the layout the Cython determinizer reads.

Example::

    >>> from xmask.compiler._nfa_build import NFA
    >>> from xmask.grammar.ir import Bytes
    >>> nfa = NFA(AutomatonLimitsLike(), dfa_of=None)
    >>> s, e = nfa.add_rule("root", Bytes(b"ab"), {})
    >>> (s, e, nfa.n)
    (0, 2, 3)
    >>> byte_classes(nfa.arrays())[ord("a") - 1 : ord("b") + 2].tolist()
    [0, 1, 2, 3]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Tuple

import numpy as np

from ..grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq
from ._analysis import byte_classes_of
from .utf8 import utf8_sequences


@dataclass(frozen=True)
class AutomatonLimitsLike:
    """The limit fields the NFA reads (``AutomatonLimits`` has them all); for doctests."""

    max_nfa_states: int = 2_000_000
    max_states: int = 200_000
    max_repeat: int = 10_000


@lru_cache(maxsize=4096)
def utf8_paths(cls: CharClass) -> Tuple[Tuple[Tuple[int, int], ...], ...]:
    """UTF-8 byte-range paths of a code-point class (memoized: long repeats rebuild the same
    JSON-string character class thousands of times)."""
    return tuple(seq for lo, hi in cls.positive_ranges() for seq in utf8_sequences(lo, hi))


def class_edges(cls: CharClass) -> Tuple[int, np.ndarray]:
    """A character class's byte edges as the NFA builder places them: ``(fresh states, rows)``,
    each row ``(source, lo, hi, target)`` with -2 for the class's start state, -1 for its end
    and ``k >= 0`` for its k-th fresh state (read-only int32, rows in placement order).

    UTF-8 paths share their common suffixes (the continuation bytes), so the sub-automaton is
    already minimal and determinization does not multiply equivalent states.  The NFA builder
    memoizes the result per class object (``_nfa_build._CLASS_IDS``).

    Example::

        >>> n, rows = class_edges(CharClass(((0xE9, 0xE9),)))  # "é" is C3 A9
        >>> n, rows.tolist()
        (1, [[0, 169, 169, -1], [-2, 195, 195, 0]])
    """
    rows = []
    n_new = 0
    if cls.byte_level:
        rows = [(-2, lo, hi, -1) for lo, hi in cls.positive_ranges()]
    else:
        suffix_state = {(): -1}
        for seq in utf8_paths(cls):
            nxt = -1
            for k in range(len(seq) - 1, 0, -1):
                key = seq[k:]
                got = suffix_state.get(key)
                if got is None:
                    got = suffix_state[key] = n_new
                    n_new += 1
                    rows.append((got, seq[k][0], seq[k][1], nxt))
                nxt = got
            rows.append((-2, seq[0][0], seq[0][1], nxt))
    out = np.array(rows, dtype=np.int32).reshape(-1, 4)
    out.setflags(write=False)
    return n_new, out


@dataclass
class NfaArrays:
    """CSR form: state ``s``'s epsilon targets are ``eps_dst[eps_off[s]:eps_off[s+1]]``; byte
    edges ``b_lo/b_hi/b_dst`` (inclusive byte ranges) and calls ``c_rule/c_dst`` likewise."""

    n: int
    eps_off: np.ndarray
    eps_dst: np.ndarray
    b_off: np.ndarray
    b_lo: np.ndarray
    b_hi: np.ndarray
    b_dst: np.ndarray
    c_off: np.ndarray
    c_rule: np.ndarray
    c_dst: np.ndarray


def byte_classes(arrays: NfaArrays) -> np.ndarray:
    """Global byte equivalence classes: bytes no edge distinguishes share one (uint8[256],
    classes numbered by their first byte)."""
    return byte_classes_of(arrays.b_lo, arrays.b_hi)


def flatten_repeat(expr: Repeat, max_repeat: int) -> Repeat:
    """``(x{a,b}){c,d}`` as ``x{ac,bd}`` when the two mean the same, i.e. when the counts the
    nesting can produce, the union of ``[ka, kb]`` over ``k`` in ``c..d``, have no gap.

    The nested form builds ``d`` copies of a ``b``-copy automaton whose determinization holds
    ~``(bd)^2/2`` NFA states when ``x{a,b}`` can be empty; the flat form is one linear chain.
    Example: ``(a{0,100}){0,100}`` -> ``a{0,10000}``.  A product past ``max_repeat`` stays
    nested (chunked repeats, such as a long ``maxLength``, are built that way on purpose).
    """
    while isinstance(expr.item, Repeat):
        inner = expr.item
        a, b, c, d = inner.min, inner.max, expr.min, expr.max
        if b == 0 or d == 0:
            break
        # consecutive intervals [ka, kb] and [(k+1)a, (k+1)b] touch iff k(b - a) >= a - 1;
        # the left side grows with k, so the first step (k = c) decides; a fixed outer count
        # (d == c) has one interval
        if b is None:
            if a > 1 and c == 0:
                break
            if c * a > max_repeat:
                break
            expr = Repeat(inner.item, c * a, None)
        else:
            if d != c and c * (b - a) < a - 1:
                break
            if max(c * a, d * b if d is not None else 0) > max_repeat:
                break
            expr = Repeat(inner.item, c * a, None if d is None else d * b)
    return expr
