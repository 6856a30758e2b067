"""The compiled passes of :mod:`xmask.compiler.first_reach`.

:func:`walk_offsets`: how many bytes (a lower bound, saturated at a horizon) come before each
rule reference reachable from the root, with the rules met only at the horizon cut off;
:func:`xmask.compiler.first_reach.walk_offsets_reference` is its pure-Python twin (the tests
compare them).  :func:`productive_rule_names`: which rules have a sentence (twin:
:func:`xmask.grammar.productivity.productive_rules`).

Example::

    >>> from xmask.grammar.ir_expr import Bytes, RuleRef, Seq
    >>> rules = {"root": Seq((Bytes(b"[["), RuleRef("a"))), "a": Seq((Bytes(b"1"), RuleRef("b"))),
    ...          "b": Bytes(b"2")}
    >>> best, cut, met = walk_offsets(rules, set(), {"a", "b"}, set(), 3, "root")
    >>> sorted(best.items()), sorted(cut)
    ([('a', 2), ('root', 0)], ['b'])
    >>> sorted(productive_rule_names({"root": RuleRef("x"), "x": Seq((Bytes(b"a"), RuleRef("x")))}))
    []
"""

from xmask.grammar._ir_nodes cimport (
    BYTES, CHOICE, CLASS, REF, REPEAT, SEQ, TOKENS, WORDS, PtrMap, node_items, pm_free, pm_get,
    pm_init, pm_put,
)

from ._rule_scan import scan_rules


def walk_offsets(dict rules, set pending, set values, set keep, int horizon, str root):
    """``(best, cut, met)``: the least offset found per rule to build (name -> bytes before its
    first reference, saturated at ``horizon``; the root at 0), and the rules that may be cut
    (in ``values``, or any with ``values=None``; not in ``keep``, not the root) referenced only
    at the horizon or past it.
    ``met``: the ``pending`` rules the rules to build reference (not walked), each with the
    least offset it is referenced at (saturated at ``horizon``).  Rules are walked
    in order of offset (a bucket per offset), each once; a sub-expression shared between rules
    is walked once per offset."""
    if not 0 < horizon < 60:
        raise ValueError("horizon must be within 1..59")
    cdef dict best = {root: 0}
    cdef set cut = set()
    cdef dict met = {}
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
                    bits = pm_get(&seen, e)
                    if bits & bit:
                        continue
                    pm_put(&seen, <size_t><void *>e, bits | bit)
                    t = type(e)
                    if t is REF:
                        ref = e.name
                        if ref in pending:
                            if met.get(ref, horizon + 1) > at:
                                met[ref] = at
                            continue
                        if (at >= horizon and (values is None or ref in values) and ref not in keep
                                and ref != root):
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
                                at = min(horizon,
                                         at + _min_len(item, lens, pending, horizon, &memo))
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
    cdef Py_ssize_t got = pm_get(memo, e)
    if got:
        return <int>got - 1
    cdef list stack = [e]
    cdef object x, t, items, c
    cdef int n, m
    cdef bint ready
    cdef PtrMap open_
    pm_init(&open_, 16)
    try:
        while stack:
            x = stack[len(stack) - 1]
            if pm_get(memo, x):
                stack.pop()
                continue
            t = type(x)
            if t is SEQ or t is CHOICE or t is REPEAT:
                items = node_items(x, t)
                if not pm_get(&open_, x):
                    pm_put(&open_, <size_t><void *>x, 1)
                    ready = True
                    for c in items:
                        if not pm_get(memo, c):
                            stack.append(c)
                            ready = False
                    if not ready:
                        continue
                if t is SEQ:
                    n = 0
                    for c in items:
                        n += <int>pm_get(memo, c) - 1
                        if n >= horizon:
                            break
                elif t is CHOICE:
                    n = horizon
                    for c in items:
                        m = <int>pm_get(memo, c) - 1
                        if m < n:
                            n = m
                    if not items:
                        n = 0
                else:
                    n = x.min * (<int>pm_get(memo, items[0]) - 1) if x.min else 0
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
    return <int>pm_get(memo, e) - 1


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
    # the rules in post-order of a depth-first walk of their references (iterative; each
    # rule's distinct references from the compiler's scan, scan_rules)
    cdef dict refs = scan_rules(rules)[0]
    cdef list out = []
    cdef set done = set()
    cdef list stack
    cdef object root, name, r
    cdef list todo
    for root in rules:
        if root in done:
            continue
        done.add(root)
        stack = [(root, list(refs[root]))]
        while stack:
            name, todo = stack[len(stack) - 1]
            if todo:
                r = todo.pop()
                if r not in done and r in rules:
                    done.add(r)
                    stack.append((r, list(refs[r])))
                continue
            stack.pop()
            out.append(name)
    return out


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
        st = pm_get(state, x)
        if st == YES or st == NO:
            stack.pop()
            continue
        t = type(x)
        if t is SEQ or t is CHOICE or t is REPEAT:
            items = node_items(x, t)
            if st == 0:
                pm_put(state, <size_t><void *>x, OPEN)
                for c in items:
                    if pm_get(state, c) == 0:
                        stack.append(c)
                continue
            if t is SEQ:
                v = True
                for c in items:
                    if pm_get(state, c) != YES:
                        v = False
                        break
            elif t is CHOICE:
                v = False
                for c in items:
                    if pm_get(state, c) == YES:
                        v = True
                        break
            else:
                v = x.min == 0 or pm_get(state, items[0]) == YES
        else:
            v = _leaf(x, t, productive, waiting, rule)
        pm_put(state, <size_t><void *>x, YES if v else NO)
        stack.pop()
    return pm_get(state, e) == YES
