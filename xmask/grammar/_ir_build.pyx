"""The simplifying constructors of the grammar IR (:func:`make_seq`, :func:`make_choice`) in
C loops; :mod:`xmask.grammar.ir_expr` exports them and binds its node classes here at import
(this module imports nothing of xmask, so ``ir_expr`` stays the bottom of the stack).

Every front end builds its sequences and alternations with these two (a JSON schema
conversion calls ``make_seq`` ~200 times for a typical schema, mostly on 2-10 items: object
members, key tries, separators).  The nodes they make are the same objects the classes'
own ``__init__`` makes (the one field set on a new instance), without a Python frame each.

Example::

    >>> from xmask.grammar.ir_expr import Bytes, RuleRef, Seq, make_seq
    >>> make_seq([Bytes(b"a"), Seq((Bytes(b"b"), RuleRef("x")))])
    Seq(items=(Bytes(data=b'ab'), RuleRef(name='x')))
"""

cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1

cdef object _SEQ = None
cdef object _BYTES = None
cdef object _CHOICE = None
cdef object _EPSILON = None
cdef object _new = object.__new__


def bind(seq, byts, choice, epsilon):
    """Register the node classes (``Seq``, ``Bytes``, ``Choice``) and ``EPSILON``: called once
    by :mod:`xmask.grammar.ir_expr`."""
    global _SEQ, _BYTES, _CHOICE, _EPSILON
    _SEQ, _BYTES, _CHOICE, _EPSILON = seq, byts, choice, epsilon


cdef object new_node(object cls, str field, object value):
    """What the one-field kinds' ``__init__`` do (``Seq``, ``Choice``, ``Bytes``, ``RuleRef``):
    a new instance, its one field set past the frozen ``__setattr__``."""
    cdef object o = _new(cls)
    PyObject_GenericSetAttr(o, field, value)
    return o


cdef inline object _flush(list run):
    """One literal for the adjacent non-empty literals ``run``, joined once (fusing pairwise
    is quadratic: a 1 MB enum literal of 600k pieces took minutes)."""
    if len(run) == 1:
        return run[0]
    return new_node(_BYTES, "data", b"".join([b.data for b in run]))


def make_seq(items):
    """Concatenation with light simplification: flatten nested ``Seq``, drop empty literals,
    fuse adjacent ``Bytes``, unwrap a single item; the empty sequence is ``Seq(())``."""
    cdef list out = []
    cdef list run = []
    cdef object item, p, t
    for item in items:
        t = type(item)  # (exact types: the node kinds are never subclassed)
        if t is _SEQ:
            for p in item.items:
                if type(p) is _BYTES:
                    if p.data:
                        run.append(p)
                    continue
                if run:
                    out.append(_flush(run))
                    run = []
                out.append(p)
        elif t is _BYTES:
            if item.data:
                run.append(item)
        else:
            if run:
                out.append(_flush(run))
                run = []
            out.append(item)
    if run:
        out.append(_flush(run))
    if not out:
        return _EPSILON
    if len(out) == 1:
        return out[0]
    return new_node(_SEQ, "items", tuple(out))


def make_choice(items):
    """Alternation with light simplification: flatten nested ``Choice``, unwrap one item."""
    cdef list out = []
    cdef object item
    for item in items:
        if type(item) is _CHOICE:
            out.extend(item.items)
        else:
            out.append(item)
    if len(out) == 1:
        return out[0]
    return new_node(_CHOICE, "items", tuple(out))
