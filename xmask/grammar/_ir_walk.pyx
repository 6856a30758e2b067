"""Walks over a grammar's IR in C loops: the check every ``Grammar`` makes that its rule
references are defined visits every node of every rule, and the JSON Schema converter's
grammars have thousands (the key tries of large objects).

Example::

    >>> from xmask.grammar.ir_expr import Bytes, RuleRef, Seq
    >>> first_undefined_ref({"root": Seq((Bytes(b"a"), RuleRef("x")))})
    ('root', 'x')
"""

from xmask.grammar.ir_expr import Bytes, CharClass, Choice, Repeat, RuleRef, Seq, TokenSet

cdef object _SEQ = Seq
cdef object _CHOICE = Choice
cdef object _REPEAT = Repeat
cdef object _REF = RuleRef
cdef object _BYTES = Bytes
cdef object _CLASS = CharClass
cdef object _TOKENS = TokenSet


def first_undefined_ref(dict rules):
    """``(rule, name)`` of the first reference to an undefined rule, in the order
    ``iter_refs`` meets them rule after rule; None when all are defined.  Sub-expressions
    shared between rules are walked once (one seen-set for the whole grammar: a shared part
    with a bad reference raises at its first rule already)."""
    cdef set seen = set()
    cdef list stack
    cdef object rule, expr, e, t, item, ti, items, key
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
                key = id(item)
                if key not in seen:
                    seen.add(key)
                    stack.append(item)
    return None
