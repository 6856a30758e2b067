"""The emission of the strings that are not one of a word list, in C loops (the kernel of
:func:`xmask.grammar.dfa_expr.word_complement_expr`, which documents the result).

Every JSON schema object that allows additional properties emits the keys other than its
declared names; on a cold conversion this trie was a tenth of the schema -> IR time in
Python.  The states are the trie's nodes merged by their sets of word endings (built from the
sorted words: children come in code point order), plus the accept-all state; the output is the
expression ``dfa_to_expr`` gives for the minimal automaton, rule names (BFS numbers) included.

Example::

    >>> from xmask.grammar.dfa_expr import word_complement_expr
    >>> from xmask.grammar.ir import Grammar
    >>> print(Grammar({"root": word_complement_expr(["ab"], [(97, 98)], None)}))
    root ::= "a" ("a" [ab]* | "b" [ab] [ab]* | "") | "b" [ab]* | ""
"""

from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdlib cimport free, malloc

from xmask.grammar._ir_build cimport new_node
from xmask.grammar._ir_nodes cimport BYTES, CHOICE, EPSILON, REF, REPEAT, SEQ

from xmask.grammar.ir_expr import make_seq


cdef tuple _gaps(tuple alphabet, tuple cps):
    """(ranges of ``alphabet`` other than the sorted ``cps``, fused; smallest one or None)."""
    cdef list out = []
    cdef Py_ssize_t i = 0, n = len(cps)
    cdef long lo, hi, pos, cp
    for lo, hi in alphabet:
        if i < n and <long>cps[i] < lo:
            break
        pos = lo
        while i < n and <long>cps[i] <= hi:
            cp = cps[i]
            if cp > pos:
                if out and (<tuple>out[len(out) - 1])[1] + 1 == pos:
                    out[len(out) - 1] = ((<tuple>out[len(out) - 1])[0], cp - 1)
                else:
                    out.append((pos, cp - 1))
            pos = cp + 1
            i += 1
        if pos <= hi:
            if out and (<tuple>out[len(out) - 1])[1] + 1 == pos:
                out[len(out) - 1] = ((<tuple>out[len(out) - 1])[0], hi)
            else:
                out.append((pos, hi))
    if i < n:
        raise ValueError(f"character {chr(cps[i])!r} of a word is outside the alphabet")
    return tuple(out), (out[0][0] if out else None)


cdef object _body(Py_ssize_t c, list groups, bint acc, dict memo_lab, object plain_label,
                  dict names, list memo):
    """The expression of state ``c`` (``groups``: its edges grouped by target)."""
    cdef object loop = None, label, x, tx, rest
    cdef list alts = []
    cdef Py_ssize_t t
    for t, rs_t in groups:
        label = memo_lab.get(rs_t)
        if label is None:
            label = memo_lab[rs_t] = plain_label(rs_t)
        if t == c:
            loop = REPEAT(label, 0, None)
            continue
        x = new_node(REF, "name", names[t]) if t in names else memo[t]
        tx = type(x)
        # make_seq([label, x]) without its general loop when nothing fuses: x is built by
        # make_seq / make_choice (a Seq has no nested Seq, no adjacent or empty Bytes)
        if tx is CHOICE or tx is REF or tx is REPEAT:
            alts.append(new_node(SEQ, "items", (label, x)))
        elif tx is SEQ and len(x.items) > 1 and not (type(x.items[0]) is BYTES and type(label) is BYTES):
            alts.append(new_node(SEQ, "items", (label,) + x.items))
        else:
            alts.append(make_seq([label, x]))
    if acc:
        alts.append(EPSILON)
    # make_choice(alts): no alternative is a Choice (each starts with its label)
    rest = (alts[0] if len(alts) == 1 else new_node(CHOICE, "items", tuple(alts))) if alts else EPSILON
    return make_seq([loop, rest]) if loop is not None else rest


def word_complement_core(words, tuple alphabet, sink, str hint, dict memo_lab, plain_label,
                         dict gaps_memo):
    """See :func:`xmask.grammar.dfa_expr.word_complement_expr` (``memo_lab``: code point
    ranges -> label, filled with ``plain_label``; ``gaps_memo``: per alphabet, see _gaps)."""
    cdef list ws = sorted(set(words))
    cdef Py_ssize_t nw = len(ws), total = 0, k, i, j, depth, lcp, nn, c, t, n, univ, root, g
    cdef str w, prev = ""
    for w in ws:
        total += len(w)
    # the trie in preorder from the sorted words: node 0 is the root, a node's children follow
    # it in code point order
    cdef int *parent = <int *> malloc((total + 1) * sizeof(int))
    cdef int *path = <int *> malloc((total + 2) * sizeof(int))
    cdef int *cls = <int *> malloc((total + 1) * sizeof(int))
    cdef int *first_kid = <int *> malloc((total + 1) * sizeof(int))
    cdef int *next_sib = <int *> malloc((total + 1) * sizeof(int))
    cdef int *last_kid = <int *> malloc((total + 1) * sizeof(int))
    cdef int *node_cp = <int *> malloc((total + 1) * sizeof(int))
    cdef char *word_end = <char *> malloc(total + 1)
    cdef int *indeg = NULL
    cdef int *size = NULL
    cdef char *needs = NULL
    cdef char *accept = NULL
    cdef dict sigs = {}
    cdef list class_kids = []
    cdef list class_word = []
    cdef list groups, g_list, rs, out_groups
    cdef dict by_t, names, bfs
    cdef tuple ks, gap, gap_ranges, sig
    cdef object first_gap, x, tx, label, loop, rest, item
    cdef long cp, last_cp, fg, s
    cdef Py_ssize_t last_t, nk, q
    cdef list alts, memo, queue
    if (parent == NULL or path == NULL or cls == NULL or first_kid == NULL or next_sib == NULL
            or last_kid == NULL or node_cp == NULL or word_end == NULL):
        free(parent)
        free(path)
        free(cls)
        free(first_kid)
        free(next_sib)
        free(last_kid)
        free(node_cp)
        free(word_end)
        raise MemoryError()
    try:
        nn = 1
        parent[0] = -1
        node_cp[0] = 0
        word_end[0] = 0
        first_kid[0] = last_kid[0] = next_sib[0] = -1
        path[0] = 0
        depth = 0
        for w in ws:
            lcp = 0
            k = min(len(w), len(prev))
            while lcp < k and w[lcp] == prev[lcp]:
                lcp += 1
            depth = lcp
            for i in range(lcp, len(w)):
                q = path[depth]
                parent[nn] = q
                node_cp[nn] = ord(w[i])
                word_end[nn] = 0
                first_kid[nn] = last_kid[nn] = next_sib[nn] = -1
                # children are made in code point order (the words are sorted)
                if last_kid[q] < 0:
                    first_kid[q] = nn
                else:
                    next_sib[last_kid[q]] = nn
                last_kid[q] = nn
                depth += 1
                path[depth] = nn
                nn += 1
            word_end[path[len(w)]] = 1
            prev = w
        # classes children first (reverse preorder); a class's signature is the flat tuple
        # (is_word, cp1, class1, cp2, class2, ...) of its first node, kept as its kids
        for i in range(nn - 1, -1, -1):
            nk = 0
            j = first_kid[i]
            while j >= 0:
                nk += 1
                j = next_sib[j]
            sig = PyTuple_New(1 + 2 * nk)
            item = bool(word_end[i])
            Py_INCREF(item)
            PyTuple_SET_ITEM(sig, 0, item)
            j = first_kid[i]
            k = 1
            while j >= 0:
                item = node_cp[j]
                Py_INCREF(item)
                PyTuple_SET_ITEM(sig, k, item)
                item = cls[j]
                Py_INCREF(item)
                PyTuple_SET_ITEM(sig, k + 1, item)
                k += 2
                j = next_sib[j]
            x = sigs.get(sig)
            if x is None:
                c = len(class_kids)
                sigs[sig] = c
                class_kids.append(sig)
                class_word.append(word_end[i] != 0)
            else:
                c = x
            cls[i] = c
        root = cls[0]
        univ = len(class_kids)
        n = univ + 1
        indeg = <int *> malloc(n * sizeof(int))
        size = <int *> malloc(n * sizeof(int))
        needs = <char *> malloc(n)
        accept = <char *> malloc(n)
        if indeg == NULL or size == NULL or needs == NULL or accept == NULL:
            raise MemoryError()
        for c in range(n):
            indeg[c] = 0
            needs[c] = 0
            accept[c] = 1 if c == univ else (0 if class_word[c] else 1)
        # each state's edges grouped by target in order of first appearance
        groups = [None] * n
        for c in range(univ):
            ks = <tuple>class_kids[c]
            cps = ks[1::2]
            gap = <tuple>gaps_memo.get(cps)
            if gap is None:
                if len(gaps_memo) >= 4096:
                    gaps_memo.clear()
                gap = _gaps(alphabet, cps)
                gaps_memo[cps] = gap
            gap_ranges = <tuple>gap[0]
            first_gap = gap[1]
            fg = -1 if first_gap is None else first_gap
            g_list = []
            by_t = {}
            last_cp = -2
            last_t = -1
            for k in range(1, len(ks), 2):
                cp = ks[k]
                t = ks[k + 1]
                if fg >= 0 and fg < cp:
                    g_list.append((univ, gap_ranges))
                    fg = -1
                x = by_t.get(t)
                if x is None:
                    rs = [(cp, cp)]
                    by_t[t] = rs
                    g_list.append((t, rs))
                    indeg[t] += 1
                else:
                    rs = <list>x
                    if last_t == t and last_cp + 1 == cp:
                        rs[len(rs) - 1] = ((<tuple>rs[len(rs) - 1])[0], cp)
                    else:
                        rs.append((cp, cp))
                last_cp = cp
                last_t = t
            if fg >= 0:
                g_list.append((univ, gap_ranges))
            if gap_ranges:
                indeg[univ] += 1
            out_groups = []
            for t, x in g_list:
                out_groups.append((t, x if type(x) is tuple else tuple(x)))
            groups[c] = out_groups
        every = []
        for lo, hi in alphabet:
            if every and every[len(every) - 1][1] + 1 == lo:
                every[len(every) - 1] = (every[len(every) - 1][0], hi)
            else:
                every.append((lo, hi))
        groups[univ] = [(univ, tuple(every))] if every else []
        if not accept[root] and not groups[root]:
            return None
        # sizes children first (the accept-all state first), deciding rules as dfa_to_expr
        # does (a default label is one node)
        any_rule = False
        for k in range(-1, univ):
            c = univ if k < 0 else k
            s = 1
            for t, _ in <list>groups[c]:
                s += 2 if (t == c or needs[t]) else 1 + size[t]
            size[c] = s
            if indeg[c] > 1 and s > 12 and c != root:
                needs[c] = 1
                any_rule = True
        names = {}
        if any_rule:
            if sink is None:
                raise ValueError("this automaton needs rules; pass a RuleSink")
            bfs = {root: 0}
            queue = [root]
            i = 0
            while i < len(queue):
                c = queue[i]
                i += 1
                for t, _ in <list>groups[c]:
                    if t not in bfs:
                        bfs[t] = len(queue)
                        queue.append(t)
            for c in sorted([c for c in range(n) if needs[c]], key=bfs.__getitem__):
                names[c] = sink.fresh(f"{hint}_s{bfs[c]}")
        memo = [None] * n

        for k in range(-1, univ):  # inline parts children first (no deep recursion)
            c = univ if k < 0 else k
            if c not in names and c != root:
                memo[c] = _body(c, <list>groups[c], accept[c] != 0, memo_lab, plain_label, names, memo)
        for c, name in names.items():
            sink.define(name, _body(c, <list>groups[c], accept[c] != 0, memo_lab, plain_label, names, memo))
        return _body(root, <list>groups[root], accept[root] != 0, memo_lab, plain_label, names, memo)
    finally:
        free(parent)
        free(path)
        free(cls)
        free(first_kid)
        free(next_sib)
        free(last_kid)
        free(node_cp)
        free(word_end)
        free(indeg)
        free(size)
        free(needs)
        free(accept)
