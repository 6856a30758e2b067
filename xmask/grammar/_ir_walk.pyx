"""Walks over a grammar's IR in C loops: the check every ``Grammar`` makes that its rule
references are defined visits every node of every rule, and the JSON Schema converter's
grammars have thousands (the key tries of large objects).

Example::

    >>> from libc.stdlib cimport calloc, free

from xmask.grammar.ir_expr import Bytes, RuleRef, Seq
    >>> first_undefined_ref({"root": Seq((Bytes(b"a"), RuleRef("x")))})
    ('root', 'x')
"""

from libc.stdlib cimport calloc, free

from xmask.grammar.ir_expr import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet

cdef object _SEQ = Seq
cdef object _CHOICE = Choice
cdef object _REPEAT = Repeat
cdef object _REF = RuleRef
cdef object _BYTES = Bytes
cdef object _CLASS = CharClass
cdef object _TOKENS = TokenSet


cdef struct _PtrSet:
    size_t *slots  # object addresses, 0 = empty
    size_t mask
    size_t used


cdef int _grow(_PtrSet *ps) except -1:
    cdef size_t old_n = ps.mask + 1, n = old_n * 2, i, p, h
    cdef size_t *old = ps.slots
    cdef size_t *slots = <size_t *> calloc(n, sizeof(size_t))
    if slots == NULL:
        raise MemoryError()
    for i in range(old_n):
        p = old[i]
        if p:
            h = ((p >> 4) * <size_t>0x9E3779B97F4A7C15) & (n - 1)
            while slots[h]:
                h = (h + 1) & (n - 1)
            slots[h] = p
    free(old)
    ps.slots = slots
    ps.mask = n - 1
    return 0


cdef inline int _add(_PtrSet *ps, size_t p) except -1:
    """1 when ``p`` was new (and is now in the set), 0 when it was there already."""
    cdef size_t h = ((p >> 4) * <size_t>0x9E3779B97F4A7C15) & ps.mask
    while ps.slots[h]:
        if ps.slots[h] == p:
            return 0
        h = (h + 1) & ps.mask
    ps.slots[h] = p
    ps.used += 1
    if ps.used * 2 > ps.mask:
        _grow(ps)
    return 1


def first_undefined_ref(dict rules):
    """``(rule, name)`` of the first reference to an undefined rule, in the order
    ``iter_refs`` meets them rule after rule; None when all are defined.  Sub-expressions
    shared between rules are walked once (one seen-set for the whole grammar, of object
    addresses: every node is alive in ``rules`` meanwhile; a shared part with a bad reference
    raises at its first rule already)."""
    cdef _PtrSet seen
    cdef list stack
    cdef object rule, expr, e, t, item, ti, items
    seen.slots = <size_t *> calloc(64, sizeof(size_t))
    if seen.slots == NULL:
        raise MemoryError()
    seen.mask = 63
    seen.used = 0
    try:
        for rule, expr in rules.items():
            stack = [expr]
            while stack:
                e = stack.pop()
                t = type(e)
                if t is _REF:
                    if e.name not in rules:
                        return rule, e.name
                    continue
                if t is _SEQ or t is _CHOICE:
                    items = e.items
                elif t is _REPEAT:
                    items = (e.item,)
                else:
                    continue
                for item in items:
                    ti = type(item)
                    if ti is _BYTES or ti is _CLASS or ti is _TOKENS:
                        continue  # leaves
                    if _add(&seen, <size_t><void *>item):
                        stack.append(item)
        return None
    finally:
        free(seen.slots)
