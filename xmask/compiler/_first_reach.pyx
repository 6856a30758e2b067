"""The compiled walk of :mod:`xmask.compiler.first_reach`: how many bytes (a lower bound, saturated
at a horizon) come before each rule reference reachable from the root, with the value rules met
only at the horizon cut off.  :func:`xmask.compiler.first_reach.walk_offsets_reference` is its
pure-Python twin (the tests compare them).

Example::

    >>> from xmask.grammar.ir_expr import Bytes, RuleRef, Seq
    >>> rules = {"root": Seq((Bytes(b"[["), RuleRef("a"))), "a": Seq((Bytes(b"1"), RuleRef("b"))),
    ...          "b": Bytes(b"2")}
    >>> best, cut, met = walk_offsets(rules, set(), {"a", "b"}, set(), 3, "root")
    >>> sorted(best.items()), sorted(cut)
    ([('a', 2), ('root', 0)], ['b'])
"""

from xmask.grammar._ir_nodes cimport (
    BYTES, CHOICE, CLASS, REF, REPEAT, SEQ, WORDS, PtrMap, node_items, pm_free, pm_init, pm_put,
    pm_slot,
)


cdef inline Py_ssize_t _get(PtrMap* m, object x) noexcept:
    cdef size_t p = <size_t><void *>x
    cdef size_t h = pm_slot(m, p)
    return m.vals[h] if m.keys[h] else 0


def walk_offsets(dict rules, set pending, set values, set keep, int horizon, str root):
    """``(best, cut, met)``: the least offset found per rule to build (name -> bytes before its
    first reference, saturated at ``horizon``; the root at 0), and the value rules (in
    ``values``, not in ``keep``, not the root) referenced only at the horizon or past it.
    ``met``: the ``pending`` rules the rules to build reference (not walked).  Rules are walked in order of offset (a bucket
    per offset), each once; a sub-expression shared between rules is walked once per offset."""
    if not 0 < horizon < 60:
        raise ValueError("horizon must be within 1..59")
    cdef dict best = {root: 0}
    cdef set cut = set()
    cdef set met = set()
    cdef dict lens = {}
    cdef set walked = set()
    cdef list buckets = [[] for _ in range(horizon + 1)]
    cdef list todo, nodes, offs
    cdef object name, e, t, items, item, ref
    cdef int off, at, got
    cdef Py_ssize_t bits, bit
    cdef PtrMap seen, memo
    buckets[0].append(root)
    pm_init(&seen, 256)
    pm_init(&memo, 256)
    try:
        for off in range(horizon + 1):
            todo = buckets[off]
            while todo:
                name = todo.pop()
                if name in walked:
                    continue
                walked.add(name)
                nodes = [rules[name]]
                offs = [off]
                while nodes:
                    e = nodes.pop()
                    at = offs.pop()
                    bit = (<Py_ssize_t>1) << at
                    bits = _get(&seen, e)
                    if bits & bit:
                        continue
                    pm_put(&seen, <size_t><void *>e, bits | bit)
                    t = type(e)
                    if t is REF:
                        ref = e.name
                        if ref in pending:
                            met.add(ref)
                            continue
                        if at >= horizon and ref in values and ref not in keep and ref != root:
                            cut.add(ref)
                        else:
                            got = best.get(ref, horizon + 1)
                            if got > at:
                                best[ref] = at
                                buckets[at].append(ref)
                    elif t is SEQ:
                        for item in e.items:
                            nodes.append(item)
                            offs.append(at)
                            if at < horizon:
                                at = min(horizon, at + _min_len(item, lens, pending, horizon, &memo))
                    elif t is CHOICE:
                        for item in e.items:
                            nodes.append(item)
                            offs.append(at)
                    elif t is REPEAT:
                        if e.max != 0:
                            nodes.append(e.item)
                            offs.append(at)
                lens[name] = _min_len(rules[name], lens, pending, horizon, &memo)
    finally:
        pm_free(&seen)
        pm_free(&memo)
    return best, cut, met


cdef int _min_len(object e, dict lens, set pending, int horizon, PtrMap* memo) except -1:
    # a lower bound of the bytes of any sentence of ``e``, capped at ``horizon``; the memo
    # holds 1 + the bound per node (rule bounds only grow during a walk: a kept value stays a
    # lower bound).  Explicit stack: expressions nest deeply.
    cdef Py_ssize_t got = _get(memo, e)
    if got:
        return <int>got - 1
    cdef list stack = [e]
    cdef object x, t, items, c
    cdef Py_ssize_t st
    cdef int n, m
    cdef bint ready
    cdef PtrMap open_
    pm_init(&open_, 16)
    try:
        while stack:
            x = stack[len(stack) - 1]
            if _get(memo, x):
                stack.pop()
                continue
            t = type(x)
            if t is SEQ or t is CHOICE or t is REPEAT:
                items = node_items(x, t)
                if not _get(&open_, x):
                    pm_put(&open_, <size_t><void *>x, 1)
                    ready = True
                    for c in items:
                        if not _get(memo, c):
                            stack.append(c)
                            ready = False
                    if not ready:
                        continue
                if t is SEQ:
                    n = 0
                    for c in items:
                        n += <int>_get(memo, c) - 1
                        if n >= horizon:
                            break
                elif t is CHOICE:
                    n = horizon
                    for c in items:
                        m = <int>_get(memo, c) - 1
                        if m < n:
                            n = m
                    if not items:
                        n = 0
                else:
                    n = x.min * (<int>_get(memo, items[0]) - 1) if x.min else 0
            elif t is BYTES:
                n = len(x.data)
            elif t is CLASS:
                n = 1
            elif t is REF:
                n = 1 if x.name in pending else lens.get(x.name, 0)
            else:
                n = 0  # word complements, token sets: no bound claimed
            if n > horizon:
                n = horizon
            pm_put(memo, <size_t><void *>x, n + 1)
            stack.pop()
    finally:
        pm_free(&open_)
    return <int>_get(memo, e) - 1
