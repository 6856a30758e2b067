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
from libc.stdlib cimport calloc, free

from ..grammar.ir import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet
from ._rule_graph import inline_plan

ctypedef Py_ssize_t isz

# the node kinds the walks know (TokenSet: a leaf, handled apart)
NODE_KINDS = frozenset((Bytes, Seq, RuleRef, Choice, CharClass, Repeat))
cdef object _BYTES = Bytes
cdef object _SEQ = Seq
cdef object _CHOICE = Choice
cdef object _REF = RuleRef
cdef object _CLASS = CharClass
cdef object _REPEAT = Repeat


cdef inline bint _known(object t) noexcept:
    # one of the six node kinds exactly (pointer compares; TokenSet and subclasses: no)
    return (t is _BYTES or t is _SEQ or t is _REF or t is _CHOICE or t is _CLASS
            or t is _REPEAT)


def kind_of(expr):
    """The node kind of an instance of a subclass of one (built as that kind)."""
    for kind in NODE_KINDS:
        if isinstance(expr, kind):
            return kind
    raise TypeError(f"unknown grammar node {expr!r}")


# ---- a pointer -> size table (open addressing; key 0 = empty) --------------------------------

cdef struct PtrMap:
    size_t* keys
    isz* vals
    size_t mask
    size_t used


cdef int pm_init(PtrMap* m, size_t n) except -1:
    m.keys = <size_t*>calloc(n, sizeof(size_t))
    m.vals = <isz*>calloc(n, sizeof(isz))
    m.mask = n - 1
    m.used = 0
    if m.keys == NULL or m.vals == NULL:
        pm_free(m)
        raise MemoryError()
    return 0


cdef void pm_free(PtrMap* m) noexcept:
    free(m.keys)
    free(m.vals)
    m.keys = NULL
    m.vals = NULL


cdef inline size_t pm_slot(const PtrMap* m, size_t p) noexcept nogil:
    """The slot holding ``p``, or the empty slot where it would go."""
    cdef size_t h = ((p >> 4) * <size_t>0x9E3779B97F4A7C15) & m.mask
    while m.keys[h] and m.keys[h] != p:
        h = (h + 1) & m.mask
    return h


cdef int pm_put(PtrMap* m, size_t p, isz v) except -1:
    """Set ``p``'s value; 1 when ``p`` was new."""
    cdef size_t h = pm_slot(m, p), i, n
    cdef PtrMap old
    if m.keys[h]:
        m.vals[h] = v
        return 0
    m.keys[h] = p
    m.vals[h] = v
    m.used += 1
    if m.used * 2 > m.mask:
        old = m[0]
        n = (old.mask + 1) * 2
        pm_init(m, n)
        for i in range(old.mask + 1):
            if old.keys[i]:
                h = pm_slot(m, old.keys[i])
                m.keys[h] = old.keys[i]
                m.vals[h] = old.vals[i]
        m.used = old.used
        pm_free(&old)
    return 1


cdef inline int pm_mark(PtrMap* m, size_t p, isz stamp) except -1:
    """1 when ``p``'s value was not ``stamp`` yet (it is now)."""
    cdef size_t h = pm_slot(m, p)
    if m.keys[h]:
        if m.vals[h] == stamp:
            return 0
        m.vals[h] = stamp
        return 1
    pm_put(m, p, stamp)
    return 1


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
        t = type(e)
        if not _known(t):
            if isinstance(e, TokenSet):
                if token != NULL and type(e) is TokenSet:
                    token[0] = True
                continue
            t = kind_of(e)
        if t is _REF:
            if e.name not in names:
                names.add(e.name)
                out.append(e.name)
            continue
        if t is _SEQ or t is _CHOICE:
            items = e.items
        elif t is _REPEAT:
            items = (e.item,)
        else:
            if t is _BYTES and tab != NULL and not literal[0]:
                literal[0] = _has_flagged_byte(e.data, tab)
            continue
        for item in items:
            u = type(item)
            if u is _BYTES:
                if tab != NULL and not literal[0]:
                    literal[0] = _has_flagged_byte(item.data, tab)
                continue
            if u is _CLASS:
                continue  # a leaf: nothing to find, and cheaper to skip than to remember
            if u is _REF:
                if item.name not in names:
                    names.add(item.name)
                    out.append(item.name)
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


def rule_sizes(dict rules, list order, isz cap) -> list:
    """``rule_size(rules[name])`` for each rule in ``order`` (callees first), each
    reference counting its callee's size when the callee came earlier (else 1); sizes saturate
    at ``cap``.  Sub-expressions shared between rules are sized once."""
    cdef dict sizes = {}
    cdef list out = []
    cdef isz size
    cdef PtrMap memo
    pm_init(&memo, 256)
    try:
        for name in order:
            size = _size(rules[name], sizes, cap, &memo, None)
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

    cdef PtrMap memo
    cdef list keep

    def __cinit__(self):
        pm_init(&self.memo, 64)
        self.keep = []

    def __dealloc__(self):
        pm_free(&self.memo)

    def size(self, expr, dict sizes, isz cap) -> int:
        return _size(expr, sizes, cap, &self.memo, self.keep)


cdef isz _size(expr, dict sizes, isz cap, PtrMap* memo, list keep) except -1:
    # rule_size: ``memo`` maps node addresses to sizes; every node outlives it, or is kept
    # alive in ``keep``
    cdef object t = type(expr)
    cdef isz total, n
    cdef size_t h
    if not _known(t):
        t = kind_of(expr)
    if t is _BYTES:
        return len(expr.data)
    if t is _CLASS:
        return 1 + len(expr.ranges)
    if t is _REF:
        return sizes.get(expr.name, 1)
    h = pm_slot(memo, <size_t><void*>expr)
    if memo.keys[h]:
        return memo.vals[h]
    if t is _SEQ or t is _CHOICE:
        total = 1
        for e in expr.items:
            total += _size(e, sizes, cap, memo, keep)
            if total >= cap:
                break
        total = min(cap, total)
    else:  # Repeat
        n = max(expr.min, expr.max if expr.max is not None else 1, 1)
        total = min(cap, 1 + n * _size(expr.item, sizes, cap, memo, keep))
    pm_put(memo, <size_t><void*>expr, total)
    if keep is not None:
        keep.append(expr)
    return total
