"""Walks over a grammar's IR in C loops: the check every ``Grammar`` makes that its rule
references are defined visits every node of every rule, and the JSON Schema converter's
grammars have thousands (the key tries of large objects).

Example::

    >>> from xmask.grammar.ir_expr import Bytes, RuleRef, Seq
    >>> first_undefined_ref({"root": Seq((Bytes(b"a"), RuleRef("x")))})
    ('root', 'x')
"""

from xmask.grammar._ir_nodes cimport (
    BYTES, CLASS, REF, TOKENS, PtrMap, node_items, pm_free, pm_init, pm_mark,
)


def first_undefined_ref(dict rules):
    """``(rule, name)`` of the first reference to an undefined rule, in the order
    ``iter_refs`` meets them rule after rule; None when all are defined.  Sub-expressions
    shared between rules are walked once (one seen-set for the whole grammar, of object
    addresses: every node is alive in ``rules`` meanwhile; a shared part with a bad reference
    raises at its first rule already)."""
    cdef PtrMap seen
    cdef list stack
    cdef object rule, expr, e, t, item, ti, items
    pm_init(&seen, 64)
    try:
        for rule, expr in rules.items():
            stack = [expr]
            while stack:
                e = stack.pop()
                t = type(e)
                if t is REF:
                    if e.name not in rules:
                        return rule, e.name
                    continue
                items = node_items(e, t)
                if items is None:
                    continue
                for item in items:
                    ti = type(item)
                    if ti is BYTES or ti is CLASS or ti is TOKENS:
                        continue  # leaves
                    if pm_mark(&seen, <size_t><void *>item, 1):
                        stack.append(item)
        return None
    finally:
        pm_free(&seen)
