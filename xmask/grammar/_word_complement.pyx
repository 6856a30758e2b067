"""The emission of the strings that are not one of a word list, in C loops (the kernel of
:func:`xmask.grammar.dfa_expr.word_complement_expr`, which documents the result).

Every JSON schema object that allows additional properties emits the keys other than its
declared names; on a cold conversion this trie was a tenth of the schema -> IR time in
Python.  The trie's nodes are merged by their sets of word endings (built from the sorted
words: children come in code point order); each class is emitted twice, as its part of the
prefix trie N and of the deviation trie D, and the result is ``N | D [alphabet]*``::

    words ab, b over [a-z]     N: prefixes that are not words     "a" | ""
    root -a-> a -b-> ab        D: a prefix, then a gap character  [c-z] | "a" ([ac-z] | "b" [a-z])
         -b-> b                   (then the one [a-z]* loop)        | "b" [a-z]

One loop for all deviations: the compiler's subset construction reaches the same NFA state
after any of them (a loop per trie node, the former shape, made one accept-all DFA state per
node for Moore rounds to merge).  No rules: a class shared by several parents is one
expression object under each.

Example::

    >>> from xmask.grammar.dfa_expr import word_complement_expr
    >>> from xmask.grammar.ir import Grammar
    >>> print(Grammar({"root": word_complement_expr(["ab"], [(97, 98)], None)}))
    root ::= "a" | "" | ("a" ("a" | "b" [ab]) | "b") [ab]*
"""

from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdlib cimport free, malloc

from xmask.grammar._ir_build cimport new_node
from xmask.grammar._ir_nodes cimport BYTES, CHOICE, EPSILON, REF, REPEAT, SEQ
from xmask.grammar._word_trie cimport WordTrie, trie_build, trie_free

from xmask.grammar.ir_expr import make_choice, make_seq


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


cdef object _label_of(object rs, dict memo_lab, object plain_label):
    cdef object label = memo_lab.get(rs)
    if label is None:
        label = memo_lab[rs] = plain_label(rs)
    return label


cdef object _seq2(object label, object x):
    """make_seq([label, x]) without its general loop when nothing fuses: x is built by
    make_seq / make_choice (a Seq has no nested Seq, no adjacent or empty Bytes)."""
    cdef object tx = type(x)
    if tx is CHOICE or tx is REF or tx is REPEAT:
        return new_node(SEQ, "items", (label, x))
    if tx is SEQ and len(x.items) > 1 and not (type(x.items[0]) is BYTES and type(label) is BYTES):
        return new_node(SEQ, "items", (label,) + x.items)
    return make_seq([label, x])


cdef object _body(list groups, Py_ssize_t univ, bint in_n, bint eps, const char *has,
                  dict memo_lab, object plain_label, list memo):
    """The expression of a class (``groups``: its edges grouped by target, ``univ`` marking
    its gap) in the prefix trie (``in_n``: its edges to the classes with prefixes, and ""
    when ``eps``) or in the deviation trie (its gap label alone, and its edges to the
    classes with deviations); ``has``: which classes have any, ``memo``: their expressions
    in that trie."""
    cdef list alts = []
    cdef Py_ssize_t t
    cdef object label
    for t, rs_t in groups:
        if t == univ:
            if not in_n:
                alts.append(_label_of(rs_t, memo_lab, plain_label))
        elif has[t]:
            label = _label_of(rs_t, memo_lab, plain_label)
            alts.append(_seq2(label, memo[t]))
    if eps:
        alts.append(EPSILON)
    # make_choice(alts): no alternative is a Choice (each starts with its label)
    return (alts[0] if len(alts) == 1 else new_node(CHOICE, "items", tuple(alts))) if alts else EPSILON


def word_complement_core(words, tuple alphabet, dict memo_lab, plain_label, dict gaps_memo):
    """See :func:`xmask.grammar.dfa_expr.word_complement_expr` (``memo_lab``: code point
    ranges -> label, filled with ``plain_label``; ``gaps_memo``: per alphabet, see _gaps)."""
    cdef list ws = sorted(set(words))
    cdef Py_ssize_t nw = len(ws), k, i, j, nn, c, t, n, univ, root, g
    # the trie in preorder from the sorted words (_word_trie): node 0 is the root, a node's
    # children follow it in code point order
    cdef WordTrie trie
    cdef int* first_kid
    cdef int* next_sib
    cdef int* node_cp
    cdef char* word_end
    cdef int *cls = NULL
    cdef char *flags = NULL
    cdef char *has_n
    cdef char *has_d
    cdef dict sigs = {}
    cdef list class_kids = []
    cdef list class_word = []
    cdef list groups, g_list, rs, out_groups
    cdef dict by_t
    cdef tuple ks, gap, gap_ranges, sig
    cdef object first_gap, x, loop, item
    cdef long cp, last_cp, fg
    cdef Py_ssize_t last_t, nk, q
    cdef list alts, memo_n, memo_d
    try:
        trie_build(ws, &trie)
        nn = trie.n
        first_kid, next_sib, node_cp, word_end = trie.first_kid, trie.next_sib, trie.cp, trie.word_end
        cls = <int *> malloc(nn * sizeof(int))
        if cls == NULL:
            raise MemoryError()
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
        flags = <char *> malloc(2 * n)
        if flags == NULL:
            raise MemoryError()
        has_n = flags  # the class has prefixes (N)
        has_d = flags + n  # the class has deviations (D)
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
            out_groups = []
            for t, x in g_list:
                out_groups.append((t, x if type(x) is tuple else tuple(x)))
            groups[c] = out_groups
        # both tries children first (no deep recursion), without rules: a class shared by
        # several parents is one expression object under each.  (Naming the large shared ones,
        # as dfa_to_expr does, changed 2 of 310 MaskBench automata -- the compiler inlines
        # small rules -- and was 2-7% slower to the first mask over 100 schemas.)
        memo_n = [None] * n
        memo_d = [None] * n
        for c in range(univ):
            has_n[c] = not class_word[c]
            has_d[c] = 0
            for t, _ in <list>groups[c]:
                if t == univ:
                    has_d[c] = 1
                else:
                    has_n[c] = has_n[c] or has_n[t]
                    has_d[c] = has_d[c] or has_d[t]
            if c != root:
                if has_n[c]:
                    memo_n[c] = _body(<list>groups[c], univ, True, not class_word[c], has_n,
                                      memo_lab, plain_label, memo_n)
                if has_d[c]:
                    memo_d[c] = _body(<list>groups[c], univ, False, False, has_d,
                                      memo_lab, plain_label, memo_d)
        # N | D [alphabet]*: the one loop every deviation reaches
        alts = []
        if has_n[root]:
            alts.append(_body(<list>groups[root], univ, True, not class_word[root], has_n,
                              memo_lab, plain_label, memo_n))
        if has_d[root]:
            every = []
            for lo, hi in alphabet:
                if every and every[len(every) - 1][1] + 1 == lo:
                    every[len(every) - 1] = (every[len(every) - 1][0], hi)
                else:
                    every.append((lo, hi))
            loop = REPEAT(_label_of(tuple(every), memo_lab, plain_label), 0, None)
            alts.append(make_seq([_body(<list>groups[root], univ, False, False, has_d,
                                        memo_lab, plain_label, memo_d), loop]))
        return make_choice(alts) if alts else None
    finally:
        trie_free(&trie)
        free(cls)
        free(flags)
