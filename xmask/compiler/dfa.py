"""NFA -> one minimal DFA per rule, in one global numbering (Cython kernel, GIL released).

:func:`rule_dfas` runs ``_rule_dfas.build_rule_dfas`` (or, with ``reference=True``, the slow
pure-Python twin in :mod:`dfa_reference`) and turns its status codes into the compile limit
errors, each naming the rule.

Example::

    >>> from xmask.grammar.ir import Bytes
    >>> from xmask.compiler._nfa_build import NFA
    >>> from xmask.compiler.nfa import AutomatonLimitsLike, byte_classes
    >>> nfa = NFA(AutomatonLimitsLike(), dfa_of=None)
    >>> s, e = nfa.add_rule("root", Bytes(b"ab"), {})
    >>> arr = nfa.arrays()
    >>> rule_base, trans, finals, *_ = rule_dfas(arr, byte_classes(arr), [s], [e], ["root"],
    ...                                          AutomatonLimitsLike())
    >>> rule_base.tolist(), trans.shape, finals.tolist()
    ([0, 3], (3, 4), [0, 0, 1])
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from .. import _deadline as deadline
from ..errors import GrammarLimitError
from ._rule_dfas import build_rule_dfas
from .dfa_reference import MINIMIZE_BUDGET, rule_dfas_reference, states_limit, subset_limit
from .nfa import NfaArrays, byte_classes

_ST_STATES, _ST_HELD, _ST_DEADLINE, _ST_MEMORY = 1, 2, 3, 5


def rule_dfas(arr: NfaArrays, byte_class: np.ndarray, starts, ends, names, limits,
              total_so_far: int = 0, reference: bool = False, runs: bool = False,
              threads: int = 1):
    """Minimal DFA of each rule ``r`` (NFA states ``starts[r]`` -> ``ends[r]``).

    Returns ``(rule_base, trans, finals, call_src, call_rule, call_dst)``: rule ``r`` owns
    states ``rule_base[r] .. rule_base[r + 1]`` (its start first); ``trans`` is
    ``n_states x n_classes`` (targets, -1 none); calls are (state, callee rule, return state).
    ``runs=True`` appends ``trans``'s rows as runs ``(run_off, run_col, run_tgt)`` (see
    ``_rule_dfas.build_rule_dfas``; None with ``reference``).  ``threads``: how many threads a
    large grammar's rules may be built on (the result is the same on any number).
    """
    if reference:
        out = rule_dfas_reference(arr, byte_class, starts, ends, names, limits, total_so_far)
        return (*out, None) if runs else out
    n_classes = int(byte_class[255]) + 1  # byte ranges numbered in byte order (byte_classes)
    d = deadline.current()
    if d is not None:
        deadline.check(d)
    left = -1.0 if d is None else max(0.0, d[0] - time.monotonic())
    i32 = np.int32
    status, bad, rule_base, trans, finals, csrc, crule, cdst, rows = build_rule_dfas(
        arr.eps_off, arr.eps_dst, arr.b_off, arr.b_lo, arr.b_hi, arr.b_dst,
        arr.c_off, arr.c_rule, arr.c_dst,
        np.asarray(starts, dtype=i32), np.asarray(ends, dtype=i32),
        np.ascontiguousarray(byte_class, dtype=np.uint8),
        limits.max_states, limits.max_nfa_states, total_so_far, MINIMIZE_BUDGET, left,
        getattr(limits, "max_memory_bytes", 0), threads)
    if status == _ST_STATES:
        states_limit(limits.max_states, names[bad])
    if status == _ST_HELD:
        subset_limit(limits.max_nfa_states, names[bad])
    if status == _ST_MEMORY:
        raise GrammarLimitError(
            f"determinizing the grammar needs more than {limits.max_memory_bytes / 1048576:.3g} MB "
            "(CompileLimits.max_compile_memory_bytes)", rule=names[bad])
    if status == _ST_DEADLINE:
        deadline.check(d)
        raise GrammarLimitError(
            f"compile took longer than {d[1]:g} s (CompileLimits.max_compile_seconds)")
    if runs:
        return rule_base, trans.reshape(-1, n_classes), finals, csrc, crule, cdst, rows
    return rule_base, trans.reshape(-1, n_classes), finals, csrc, crule, cdst


@lru_cache(maxsize=None)
def dfa_of_fragment(reference: bool):
    """The ``dfa_of`` callback of :class:`nfa.NFA`: one fragment's minimal DFA
    ``(trans, finals, call_src, call_rule, call_dst, byte_class)``, its own byte classes.
    One function per mode (it keys the builder's process-wide template memo)."""

    def dfa_of(frag, start: int, end: int):
        arr = frag.arrays()
        byte_class = byte_classes(arr)
        _, trans, finals, csrc, crule, cdst = rule_dfas(
            arr, byte_class, [start], [end], [frag.rule], frag.limits, 0, reference)
        return trans, finals, csrc, crule, cdst, byte_class

    return dfa_of
