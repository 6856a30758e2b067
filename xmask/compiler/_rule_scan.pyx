"""What the compiler learns from a grammar's IR before it builds the NFA, in compiled walks:
every rule's distinct references (plus whether a node is a ``TokenSet`` and whether a literal
may spell a special token, :func:`scan_rules`), the inliner's callee-first rule order
(:func:`callee_first`), expanded sizes (:func:`rule_sizes`, :class:`SizeMemo`) and the
rules left to call (:func:`reachable_called`).

The walks remember visited nodes by address in a C hash table (every node stays alive in the
rule table meanwhile), not by ``id()`` in a Python set or dict: no int object per node.

Example::

    >>> from xmask.grammar.ir import Bytes, RuleRef, Seq
    >>> rules = {"root": Seq((Bytes(b"ab"), RuleRef("x"))), "x": Bytes(b"xyz")}
    >>> refs, _, _ = scan_rules(rules)
    >>> refs
    {'root': ['x'], 'x': []}
    >>> order = callee_first(refs, "root")
    >>> order, rule_sizes(rules, order, 401)
    (['x'], [3])
"""

import numpy as np

from libc.stdint cimport int32_t

from xmask.grammar._ir_nodes cimport (
    BYTES, CHOICE, CLASS, REF, SEQ, TOKENS, WORDS, PtrMap, is_node_kind, node_items, pm_free,
    pm_init, pm_mark, pm_put, pm_slot,
)
from xmask.grammar._word_trie cimport trie_nodes

from .._switch_interval import switch_point
from ..grammar._ir_nodes import kind_of
from ._rule_graph import inline_plan

ctypedef Py_ssize_t isz

# nodes walked, process-wide: the walks hold the GIL, so every 1024 nodes (~0.05 ms) they let
# a thread that waits for it run (see _switch_interval; a large schema has ~10^5 nodes)
cdef isz _ticks = 0


cdef inline int _tick() except -1:
    global _ticks
    _ticks += 1
    if not (_ticks & 1023):
        switch_point()
    return 0


# ---- references ------------------------------------------------------------------------------

def distinct_refs(expr) -> list:
    """The rule names referenced inside ``expr``, each once, in discovery order of a
    depth-first walk (shared sub-expressions are visited once): ``grammar.ir.iter_refs``
    deduplicated, compiled.  Callers use the names as a set or sort them, so the order is only
    deterministic, not canonical."""
    cdef PtrMap seen
    pm_init(&seen, 64)
    try:
        return _refs(expr, NULL, NULL, NULL, &seen, 1)
    finally:
        pm_free(&seen)


def scan_rules(dict rules, first=None):
    """``(refs, has_token, has_literal)`` of a rule table in one compiled pass: every rule's
    :func:`distinct_refs`, whether a node is a ``TokenSet`` (exactly that class) and whether a
    literal holds a byte flagged in ``first`` (256 bytes, nonzero = a special text's first
    byte; None: no literal can spell one).  The compiler asks the last two before lowering
    (``special_literals``) and keeps the references for the inliner when neither is true.

    Example::

        >>> scan_rules({"root": Seq((Bytes(b"<a"), RuleRef("x"))), "x": Bytes(b"x")},
        ...            bytes(60) + b"\\x01" + bytes(195))
        ({'root': ['x'], 'x': []}, False, True)
    """
    cdef dict refs = {}
    cdef bint token = False, literal = first is None
    cdef bytes table
    cdef const unsigned char* tab = NULL
    cdef PtrMap seen
    cdef isz stamp = 0
    if first is not None:
        table = first
        if len(table) != 256:
            raise ValueError("first must hold 256 flags")
        tab = table
    pm_init(&seen, 256)
    try:
        for name, expr in rules.items():
            # a node counts as seen by this rule's walk when its value is this rule's stamp
            stamp += 1
            refs[name] = _refs(expr, tab, &token, &literal, &seen, stamp)
    finally:
        pm_free(&seen)
    return refs, token, literal and first is not None


cdef inline bint _has_flagged_byte(bytes data, const unsigned char* tab):
    cdef const unsigned char* p = data
    cdef isz i
    for i in range(len(data)):
        if tab[p[i]]:
            return True
    return False


cdef list _refs(expr, const unsigned char* tab, bint* token, bint* literal, PtrMap* seen,
                isz stamp):
    # distinct_refs; with ``tab``, also sets token[0] / literal[0] (see scan_rules).  Token
    # sets are leaves (lowered to token rules before the inliner runs).  ``seen``: nodes whose
    # value is ``stamp`` were visited by this walk.
    cdef list out = []
    cdef set names = set()
    cdef list stack = [expr]
    cdef object t, u
    pm_mark(seen, <size_t><void*>expr, stamp)
    while stack:
        e = stack.pop()
        _tick()
        t = type(e)
        if t is WORDS:
            continue  # (a leaf for the compiler: no references, and no literal of its own)
        if not is_node_kind(t):
            if isinstance(e, TOKENS):
                if token != NULL and type(e) is TOKENS:
                    token[0] = True
                continue
            t = kind_of(e)
        if t is REF:
            name = e.name
            if name not in names:
                names.add(name)
                out.append(name)
            continue
        items = node_items(e, t)
        if items is None:
            if t is BYTES and tab != NULL and not literal[0]:
                literal[0] = _has_flagged_byte(e.data, tab)
            continue
        for item in items:
            u = type(item)
            if u is BYTES:
                if tab != NULL and not literal[0]:
                    literal[0] = _has_flagged_byte(item.data, tab)
                continue
            if u is CLASS or u is WORDS:
                continue  # a leaf: nothing to find, and cheaper to skip than to remember
            if u is REF:
                name = item.name  # (one attribute read: most of a node's cost)
                if name not in names:
                    names.add(name)
                    out.append(name)
                continue
            if pm_mark(seen, <size_t><void*>item, stamp):
                stack.append(item)
    return out


# ---- the inliner's order and sizes -----------------------------------------------------------

def callee_first(dict refs, str root) -> list:
    """The rules of ``refs`` (name -> referenced names) that are on no reference cycle, but
    ``root``, callees first (``_rule_graph.inline_plan``'s depth-first post-order: walks
    started from each rule in table order, references followed in order)."""
    cdef isz n = len(refs), m = 0, i = 0, j
    cdef dict index = {}
    cdef list names = list(refs)
    for name in names:
        index[name] = i
        m += len(<list>refs[name])
        i += 1
    off_a = np.empty(n + 1, dtype=np.int32)
    dst_a = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] off = off_a
    cdef int32_t[::1] dst = dst_a
    off[0] = 0
    j = 0
    for i in range(n):
        for r in <list>refs[names[i]]:
            dst[j] = <int32_t>(<isz>index[r])
            j += 1
        off[i + 1] = <int32_t>j
    _, post = inline_plan(off_a, dst_a, index[root])
    return [names[k] for k in post.tolist()]


def reachable_called(dict refs, dict bodies, str root, rules) -> list:
    """The called (not inlined: not in ``bodies``) rules reachable from ``root`` through
    ``refs``, inlined rules passed through (their bodies are expanded in their callers), in
    the order of ``rules`` with ``root`` first."""
    cdef set seen = {root}
    cdef list stack = [root]
    cdef list out = [root]
    cdef str name
    while stack:
        name = stack.pop()
        for r in <list>refs[name]:
            if r not in seen:
                seen.add(r)
                stack.append(r)
    for name in rules:
        if name in seen and name != root and name not in bodies:
            out.append(name)
    return out


def rule_sizes(dict rules, list order, isz cap, dict refs=None) -> list:
    """``rule_size(rules[name])`` for each rule in ``order`` (callees first), each
    reference counting its callee's size when the callee came earlier (else 1); sizes saturate
    at ``cap``.  Sub-expressions shared between rules are sized once.  With ``refs`` (every
    rule's references), a rule that references a rule already sized ``cap`` is ``cap``
    without a walk: every node counts each of its parts at least once."""
    cdef dict sizes = {}
    cdef list out = []
    cdef isz size
    cdef PtrMap memo
    cdef object big = None if refs is None else set()
    pm_init(&memo, 256)
    try:
        for name in order:
            if big and not big.isdisjoint(<list>refs[name]):
                size = cap
            else:
                size = _size(rules[name], sizes, cap, &memo, None)
            if size >= cap and big is not None:
                big.add(name)
            sizes[name] = size
            out.append(size)
    finally:
        pm_free(&memo)
    return out


def rule_size(expr, dict sizes, isz cap) -> int:
    """Rough expanded size of ``expr`` (automaton states it adds), saturating at ``cap``; a
    reference counts ``sizes[name]`` (1 if absent).  Shared sub-expressions cost one visit.

    Example::

        >>> from xmask.grammar.ir import Repeat
        >>> rule_size(Seq((Bytes(b"ab"), Repeat(RuleRef("x"), 0, 3))), {"x": 5}, 10**6)
        19
    """
    return SizeMemo().size(expr, sizes, cap)


cdef class SizeMemo:
    """:func:`rule_size` with a memo shared by its calls (which must pass the same ``sizes``
    and ``cap``): the NFA builder sizes each bounded repeat before building it.  It keeps
    every expression it sized alive (a temporary's address could otherwise be reused)."""

    def __cinit__(self):
        pm_init(&self.memo, 64)
        self.keep = []

    def __dealloc__(self):
        pm_free(&self.memo)

    def size(self, expr, dict sizes, isz cap) -> int:
        return _size(expr, sizes, cap, &self.memo, self.keep)

    cdef isz csize(self, expr, dict sizes, isz cap) except -1:
        return _size(expr, sizes, cap, &self.memo, self.keep)


cdef isz _words_size(tuple words) except -1:
    # A WordComplement's size: an estimate of its expression's (which a compile never builds),
    # so that the inliner decides as it did when keys were that expression.  Fitted over the
    # key lists of a 300-schema MaskBench sample: 12 per trie node, -9 per word, +14, within
    # 1.1% of the expression's size for 90% of them (over 1,010 MaskBench schemas, one
    # inlining decision changed: lists whose subtries repeat, which the expression shares,
    # are overestimated).
    return max(1, 12 * (trie_nodes(words) - 1) - 9 * len(words) + 14)


cdef isz _size(expr, dict sizes, isz cap, PtrMap* memo, list keep) except -1:
    # rule_size: ``memo`` maps node addresses to sizes; every node outlives it, or is kept
    # alive in ``keep``
    cdef object t = type(expr)
    cdef isz total, n
    cdef size_t h
    _tick()
    if t is WORDS:
        return _words_size(expr.words)
    if not is_node_kind(t):
        t = kind_of(expr)
    if t is BYTES:
        return len(expr.data)
    if t is CLASS:
        return 1 + len(expr.ranges)
    if t is REF:
        return sizes.get(expr.name, 1)
    h = pm_slot(memo, <size_t><void*>expr)
    if memo.keys[h]:
        return memo.vals[h]
    if t is SEQ or t is CHOICE:
        total = 1
        for e in expr.items:
            total += _size(e, sizes, cap, memo, keep)
            if total >= cap:
                break
        total = min(cap, total)
    else:  # Repeat
        hi = expr.max
        n = max(expr.min, hi if hi is not None else 1, 1)
        total = min(cap, 1 + n * _size(expr.item, sizes, cap, memo, keep))
    pm_put(memo, <size_t><void*>expr, total)
    if keep is not None:
        keep.append(expr)
    return total
