"""Walks over a grammar's IR in C loops: the check every ``Grammar`` makes that its rule
references are defined visits every node of every rule, and the JSON Schema converter's
grammars have thousands (the key tries of large objects).

Example::

    >>> from xmask.grammar.ir_expr import Bytes, RuleRef, Seq
    >>> first_undefined_ref({"root": Seq((Bytes(b"a"), RuleRef("x")))})
    ('root', 'x')
    >>> sorted(productive_rule_names({"root": RuleRef("x"), "x": Seq((Bytes(b"a"), RuleRef("x")))}))
    []
"""

from xmask.grammar._ir_nodes cimport (
    BYTES, CHOICE, CLASS, REF, REPEAT, SEQ, TOKENS, WORDS, PtrMap, node_items, pm_free, pm_init,
    pm_mark, pm_put, pm_slot,
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


# productive_rule_names: a node's state in the pass's table (0: not met)
cdef enum:
    OPEN = 1  # its children are being evaluated
    YES = 2
    NO = 3


def productive_rule_names(dict rules, known=()):
    """The names of the productive rules of ``rules`` (name -> expression): the least fixpoint
    of :func:`xmask.grammar.productivity.productive_rules` (its pure-Python twin, the tests'
    reference), with the names in ``known`` counted productive from the start.  A reference to
    a rule that is neither in ``rules`` nor ``known`` is unproductive.

    A worklist: each rule is evaluated once, in post-order of the references (a rule after the
    rules it references, but along cycles), and again only when a rule it referenced while not
    productive yet becomes productive (each evaluation walks the rule's body once, its shared
    sub-expressions once: a table of node addresses)."""
    cdef set productive = set(known)
    cdef dict waiting = {}  # rule -> the rules whose evaluation found it not productive yet
    cdef list queue = _post_order(rules)
    queue.reverse()  # (popped from the end)
    cdef set queued = set(queue)
    cdef object name, user
    while queue:
        name = queue.pop()
        queued.discard(name)
        if name in productive:
            continue
        if _holds(rules[name], productive, waiting, name):
            productive.add(name)
            for user in waiting.pop(name, ()):
                if user not in productive and user not in queued:
                    queue.append(user)
                    queued.add(user)
    return productive


cdef list _post_order(dict rules):
    # the rules in post-order of a depth-first walk of their references (iterative)
    cdef dict refs = {}
    cdef list out = []
    cdef set done = set()
    cdef list stack
    cdef object root, name, r
    cdef list pending_refs
    for root in rules:
        if root in done:
            continue
        done.add(root)
        stack = [(root, _refs_of(rules[root]))]
        while stack:
            name, pending_refs = stack[len(stack) - 1]
            if pending_refs:
                r = pending_refs.pop()
                if r not in done and r in rules:
                    done.add(r)
                    stack.append((r, _refs_of(rules[r])))
                continue
            stack.pop()
            out.append(name)
    return out


cdef list _refs_of(object e):
    # the distinct rule names ``e`` references (each shared sub-expression walked once)
    cdef PtrMap seen
    cdef list stack = [e]
    cdef list out = []
    cdef set names = set()
    cdef object x, t, items, item
    pm_init(&seen, 64)
    try:
        while stack:
            x = stack.pop()
            t = type(x)
            if t is REF:
                if x.name not in names:
                    names.add(x.name)
                    out.append(x.name)
                continue
            items = node_items(x, t)
            if items is None:
                continue
            for item in items:
                if pm_mark(&seen, <size_t><void *>item, 1):
                    stack.append(item)
    finally:
        pm_free(&seen)
    out.reverse()  # (popped from the end: in order of appearance)
    return out


cdef inline Py_ssize_t _state(PtrMap* m, object x) noexcept:
    cdef size_t p = <size_t><void *>x
    cdef size_t h = pm_slot(m, p)
    return m.vals[h] if m.keys[h] else 0


cdef bint _leaf(object x, object t, set productive, dict waiting, object rule) except -1:
    cdef object lo, hi
    if t is BYTES:
        return True
    if t is REF:
        if x.name in productive:
            return True
        waiting.setdefault(x.name, set()).add(rule)
        return False
    if t is CLASS:
        if not x.negated:
            # some range outside the surrogates (no characters) unless byte-level
            if x.byte_level:
                return bool(x.ranges)
            for lo, hi in x.ranges:
                if lo < 0xD800 or hi > 0xDFFF:
                    return True
            return False
        return _gap(x.ranges, 0xFF if x.byte_level else 0x10FFFF, x.byte_level)
    if t is TOKENS:
        # the vocabulary is not known here: only a plain empty set has no token
        return x.negated or bool(x.ids)
    if t is WORDS:
        # strings over an alphabet but a finite few: some are left unless the alphabet is
        # empty and the empty word is excluded
        return bool(x.alphabet) or "" not in x.words
    raise TypeError(f"not a grammar expression: {t.__name__}")


cdef bint _gap(tuple ranges, long limit, bint byte_level) except -1:
    # whether some character of [0, limit] (surrogates excluded unless byte-level) lies outside
    # ``ranges`` (sorted, merged): a negated class has a character
    cdef long c = 0, lo, hi
    cdef object r
    for r in ranges:
        lo = r[0]
        hi = r[1]
        if lo > c and _has_char(c, lo - 1, byte_level):
            return True
        if hi + 1 > c:
            c = hi + 1
    return c <= limit and _has_char(c, limit, byte_level)


cdef inline bint _has_char(long a, long b, bint byte_level) noexcept:
    return byte_level or a < 0xD800 or b > 0xDFFF


cdef bint _holds(object e, set productive, dict waiting, object rule) except -1:
    # whether ``e`` (the body of ``rule``) has a sentence when the rules in ``productive`` do;
    # each reference to a rule not productive yet puts ``rule`` in its ``waiting`` set
    # (explicit stack: converted schemas nest thousands of levels deep)
    cdef PtrMap table
    pm_init(&table, 64)
    try:
        return _holds_in(e, productive, waiting, rule, &table)
    finally:
        pm_free(&table)


cdef bint _holds_in(object e, set productive, dict waiting, object rule, PtrMap* state) except -1:
    cdef list stack = [e]
    cdef object x, t, items, c
    cdef Py_ssize_t st
    cdef bint v
    while stack:
        x = stack[len(stack) - 1]
        st = _state(state, x)
        if st == YES or st == NO:
            stack.pop()
            continue
        t = type(x)
        if t is SEQ or t is CHOICE or t is REPEAT:
            items = node_items(x, t)
            if st == 0:
                pm_put(state, <size_t><void *>x, OPEN)
                for c in items:
                    if _state(state, c) == 0:
                        stack.append(c)
                continue
            if t is SEQ:
                v = True
                for c in items:
                    if _state(state, c) != YES:
                        v = False
                        break
            elif t is CHOICE:
                v = False
                for c in items:
                    if _state(state, c) == YES:
                        v = True
                        break
            else:
                v = x.min == 0 or _state(state, items[0]) == YES
        else:
            v = _leaf(x, t, productive, waiting, rule)
        pm_put(state, <size_t><void *>x, YES if v else NO)
        stack.pop()
    return _state(state, e) == YES
