"""The minimization of :func:`xmask.grammar.code_point_dfa.dfa_minimize` in C loops.

In Python (sets and dicts to trim, tuples hashed per state and round, a numpy table filled
slice by slice) minimizing took about twice the subset construction on a cold schema
conversion.  Here the automaton is read once into flat arrays and every step runs on them:
trim (reachable from the start and live), the equivalence blocks (one successors-first
pass when the only cycles are self-loops, else Moore refinement by hashed fused-edge
signatures, each round recomputing only the states whose successors changed block), and the
canonical renumbering (BFS from the start, edges in code point
order, fused).  The minimal automaton's partition is unique, so any exact block computation
gives the same canonical automaton as the Python twin
(``cp_minimize_reference.minimize_reference``), which the tests compare against.

Example::

    >>> minimize_edges([((97, 97, 1), (98, 98, 2)), (), ()], [False, True, True])
    ([((97, 98, 1),), ()], [False, True])
"""

from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport free, malloc

from xmask.compiler._ivec cimport IVec, ints_eq, ints_hash, iv_reserve
from xmask.runtime._intseq cimport sort_unique

# code points and their interval ends (hi + 1) must fit the int32 arrays
cdef long long _MAX_END = 0x7FFFFFFE
# every malloc of one call is kept here and freed at its end
cdef enum:
    _MAX_BUFS = 64

ctypedef int32_t* i32_p


cdef struct _SigSet:
    # Distinct int sequences (signatures), each numbered by first insertion; the table never
    # grows: it is sized for every state of the automaton being distinct.
    int32_t* pool    # signatures one after another
    int32_t* start   # per id: offset in pool (and one past the last id)
    int32_t n        # ids so far
    int32_t* table   # open addressing: ids, -1 = empty
    Py_ssize_t mask


cdef void _sigs_clear(_SigSet* s) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(s.mask + 1):
        s.table[i] = -1
    s.n = 0
    s.start[0] = 0


cdef int32_t _sigs_find(_SigSet* s, const int32_t* sig, int32_t m, bint add) noexcept nogil:
    """The id of ``sig``; when absent, -1 or (``add``) a new id."""
    cdef Py_ssize_t h = <Py_ssize_t>(ints_hash(sig, m) & <uint64_t>s.mask), st, i
    cdef int32_t b
    while s.table[h] >= 0:
        b = s.table[h]
        st = s.start[b]
        if s.start[b + 1] - st == m and ints_eq(s.pool + st, sig, m):
            return b
        h = (h + 1) & s.mask
    if not add:
        return -1
    b = s.n
    st = s.start[b]
    for i in range(m):
        s.pool[st + i] = sig[i]
    s.start[b + 1] = <int32_t>(st + m)
    s.n += 1
    s.table[h] = b
    return b


cdef inline int32_t _fused(const int32_t* off, const int32_t* lo, const int32_t* hi,
                           const int32_t* tg, int32_t q, const int32_t* lab, int32_t head,
                           int32_t self_lab, int32_t c, int32_t* out) noexcept nogil:
    # out = [head, then q's edges as (lo, hi, label) with adjacent same-label intervals fused]:
    # label lab[t], or -1 when t is q itself or (c >= 0) lab[t] == c, as merge_edges fuses
    cdef int32_t n = 1, i, t, l
    out[0] = head
    for i in range(off[q], off[q + 1]):
        t = tg[i]
        l = lab[t]
        if t == q:
            l = self_lab
        elif c >= 0 and l == c:
            l = -1
        if n > 1 and out[n - 1] == l and out[n - 2] + 1 == lo[i]:
            out[n - 2] = hi[i]
        else:
            out[n] = lo[i]
            out[n + 1] = hi[i]
            out[n + 2] = l
            n += 3
    return n


def minimize_edges(edges, accept, bint one_pass=True):
    """``(edges, accept)`` of the canonical minimal automaton (see ``dfa_minimize``), or None
    when the input is not a well-formed automaton (a code point or target out of range,
    unsorted or overlapping intervals, accepting flags that are not booleans): the Python twin
    then handles it (and raises what it raises).  ``one_pass=False``: Moore refinement even
    when the only cycles are self-loops (for tests).

    Example::

        >>> minimize_edges([((97, 97, 0),), ((98, 98, 0),)], [True, False])
        ([((97, 97, 0),)], [True])
    """
    cdef Py_ssize_t n = len(edges), m = 0, j, nb = 0
    cdef long long l0, h0, t0, prev_hi
    cdef int32_t q
    cdef void* bufs[_MAX_BUFS]
    cdef i32_p off, lo, hi, tg, acc
    if n == 0 or len(accept) != n or n >= 0x3FFFFFFF:
        return None
    for es in edges:  # count edges, so the flat arrays are allocated once
        if type(es) is not tuple and type(es) is not list:
            return None
        m += len(es)
    if m >= 0x1FFFFFFF:
        return None
    nb = 0
    try:
        # the automaton: the edges of state q are off[q] .. off[q + 1] - 1
        off = <int32_t*> _alloc(bufs, &nb, n + 1)
        lo = <int32_t*> _alloc(bufs, &nb, m + 1)
        hi = <int32_t*> _alloc(bufs, &nb, m + 1)
        tg = <int32_t*> _alloc(bufs, &nb, m + 1)
        acc = <int32_t*> _alloc(bufs, &nb, n + 1)
        j = 0
        for q in range(n):
            a = accept[q]
            if a is True or a is False or (type(a) is int and (a == 0 or a == 1)):
                acc[q] = 1 if a else 0
            else:
                return None
            off[q] = <int32_t>j
            prev_hi = -1
            for e in edges[q]:
                if type(e) is not tuple or len(<tuple>e) != 3:
                    return None
                x, y, z = <tuple>e
                if type(x) is not int or type(y) is not int or type(z) is not int:
                    return None
                try:
                    l0, h0, t0 = x, y, z
                except OverflowError:
                    return None
                if l0 <= prev_hi or h0 < l0 or h0 > _MAX_END or t0 < 0 or t0 >= n:
                    return None
                prev_hi = h0
                lo[j] = <int32_t>l0
                hi[j] = <int32_t>h0
                tg[j] = <int32_t>t0
                j += 1
        off[n] = <int32_t>j
        return _minimize(<int32_t>n, off, lo, hi, tg, acc, bufs, &nb, accept, one_pass)
    finally:
        for j in range(nb):
            free(bufs[j])


cdef int32_t* _alloc(void** bufs, Py_ssize_t* nb, Py_ssize_t count) except NULL:
    # count int32s, freed by minimize_edges on the way out
    if nb[0] >= _MAX_BUFS:
        raise RuntimeError("_cp_minimize: too many buffers")
    cdef void* p = malloc((count if count > 0 else 1) * sizeof(int32_t))
    if p == NULL:
        raise MemoryError()
    bufs[nb[0]] = p
    nb[0] += 1
    return <int32_t*>p


cdef object _minimize(int32_t n, const int32_t* off, const int32_t* lo, const int32_t* hi,
                      const int32_t* tg, const int32_t* acc, void** bufs, Py_ssize_t* nb,
                      accept, bint one_pass):
    cdef int32_t q, t, p, i, e, sp, k, mt, maxdeg = 0, root, b, c, ci, ns, ul, sl, u, x
    cdef int32_t n_blocks, nr, head
    cdef bint acyclic = one_pass, pushed, same
    cdef _SigSet S
    cdef i32_p seen, stack, poff, pos, pred, live, index, orig
    cdef i32_p eo, el, eh, et, kacc, state, cur, order, sig, alt
    cdef i32_p block, nblock, tmp, uses_off, uses, succ, ordb, reps, lab
    cdef list out_edges, out_accept, row

    # ---- reachable from the start (DFS), then live: reaching an accepting state backwards
    seen = _alloc(bufs, nb, n)
    stack = _alloc(bufs, nb, n + 1)
    poff = _alloc(bufs, nb, n + 1)
    for q in range(n + 1):
        poff[q] = 0
    for q in range(n):
        seen[q] = 0
    seen[0] = 1
    stack[0] = 0
    sp = 1
    while sp:
        sp -= 1
        q = stack[sp]
        for e in range(off[q], off[q + 1]):
            t = tg[e]
            poff[t + 1] += 1
            if not seen[t]:
                seen[t] = 1
                stack[sp] = t
                sp += 1
    for q in range(n):
        poff[q + 1] += poff[q]
    pos = _alloc(bufs, nb, n)
    pred = _alloc(bufs, nb, poff[n])
    for q in range(n):
        pos[q] = poff[q]
    for q in range(n):
        if seen[q]:
            for e in range(off[q], off[q + 1]):
                t = tg[e]
                pred[pos[t]] = q
                pos[t] += 1
    live = _alloc(bufs, nb, n)
    sp = 0
    for q in range(n):
        live[q] = seen[q] and acc[q]
        if live[q]:
            stack[sp] = q
            sp += 1
    while sp:
        sp -= 1
        q = stack[sp]
        for e in range(poff[q], poff[q + 1]):
            p = pred[e]
            if not live[p]:
                live[p] = 1
                stack[sp] = p
                sp += 1
    if not live[0]:
        return [()], [False]

    # ---- the trimmed automaton: live states in their order, edges to dead states dropped
    index = _alloc(bufs, nb, n)
    orig = _alloc(bufs, nb, n)
    k = 0
    for q in range(n):
        if live[q]:
            index[q] = k
            orig[k] = q
            k += 1
        else:
            index[q] = -1
    eo = _alloc(bufs, nb, k + 1)
    el = _alloc(bufs, nb, off[n])
    eh = _alloc(bufs, nb, off[n])
    et = _alloc(bufs, nb, off[n])
    kacc = _alloc(bufs, nb, k)
    mt = 0
    for i in range(k):
        q = orig[i]
        eo[i] = mt
        kacc[i] = acc[q]
        for e in range(off[q], off[q + 1]):
            t = index[tg[e]]
            if t >= 0:
                el[mt] = lo[e]
                eh[mt] = hi[e]
                et[mt] = t
                mt += 1
        if mt - eo[i] > maxdeg:
            maxdeg = mt - eo[i]
    eo[k] = mt

    # ---- successors-first order, unless a cycle longer than a self-loop (iterative DFS)
    state = _alloc(bufs, nb, k)  # 0 new, 1 on the path, 2 done
    cur = _alloc(bufs, nb, k)    # next edge to follow
    order = _alloc(bufs, nb, k)
    for q in range(k):
        state[q] = 0
    x = 0
    for root in range(k):
        if state[root] or not acyclic:
            continue
        state[root] = 1
        cur[root] = eo[root]
        stack[0] = root
        sp = 1
        while sp and acyclic:
            q = stack[sp - 1]
            pushed = False
            while cur[q] < eo[q + 1]:
                t = et[cur[q]]
                cur[q] += 1
                if t == q:
                    continue
                if state[t] == 1:
                    acyclic = False
                    break
                if state[t] == 0:
                    state[t] = 1
                    cur[t] = eo[t]
                    stack[sp] = t
                    sp += 1
                    pushed = True
                    break
            if acyclic and not pushed:
                sp -= 1
                state[q] = 2
                order[x] = q
                x += 1

    # signatures: [head, then fused (lo, hi, label) triples]; at most k distinct at a time
    S.pool = _alloc(bufs, nb, k + 3 * mt + 1)
    S.start = _alloc(bufs, nb, k + 2)
    S.mask = 1
    while S.mask + 1 < 2 * k + 2:
        S.mask = S.mask * 2 + 1
    S.table = _alloc(bufs, nb, S.mask + 1)
    sig = _alloc(bufs, nb, 3 * maxdeg + 1)
    alt = _alloc(bufs, nb, 3 * maxdeg + 1)
    block = _alloc(bufs, nb, k)
    _sigs_clear(&S)
    if acyclic:
        # ---- one pass: a state joins the block whose signature it has (self-loops as -1), or
        # the block c of a successor when its signature with edges into c as -1 is c's (a -> a*)
        uses_off = _alloc(bufs, nb, k + 1)  # per block: the other blocks its signature names
        uses = _alloc(bufs, nb, mt)
        succ = _alloc(bufs, nb, maxdeg)
        uses_off[0] = 0
        for q in range(k):
            block[q] = -1
        for x in range(k):
            q = order[x]
            sl = _fused(eo, el, eh, et, q, block, kacc[q], -1, -1, sig)
            b = _sigs_find(&S, sig, sl, False)
            if b < 0:
                ns = 0
                for e in range(eo[q], eo[q + 1]):
                    if et[e] != q:
                        succ[ns] = block[et[e]]
                        ns += 1
                ns = <int32_t>sort_unique(succ, ns)
                for ci in range(ns):
                    c = succ[ci]
                    # q can equal its successor's block c only if both name the same other blocks
                    ul = uses_off[c + 1] - uses_off[c]
                    if ul != ns - 1:
                        continue
                    same = True
                    u = uses_off[c]
                    for i in range(ns):
                        if i != ci:
                            if uses[u] != succ[i]:
                                same = False
                                break
                            u += 1
                    if not same:
                        continue
                    if _sigs_find(&S, alt, _fused(eo, el, eh, et, q, block, kacc[q], -1, c, alt),
                                  False) == c:
                        b = c
                        break
                if b < 0:
                    b = _sigs_find(&S, sig, sl, True)
                    u = uses_off[b]
                    for i in range(ns):
                        uses[u + i] = succ[i]
                    uses_off[b + 1] = u + ns
            block[q] = b
    else:
        _moore(k, eo, el, eh, et, kacc, block, &S, sig, bufs, nb)

    # ---- canonical: blocks numbered in BFS order from the start, edges fused
    ordb = _alloc(bufs, nb, k + 2)  # (Moore's block ids go up to k + 1)
    reps = _alloc(bufs, nb, k)  # the first state reached of each block, in BFS order
    lab = _alloc(bufs, nb, k)
    for q in range(k + 2):
        ordb[q] = -1
    ordb[block[0]] = 0
    reps[0] = 0
    nr = 1
    head = 0
    while head < nr:
        q = reps[head]
        head += 1
        for e in range(eo[q], eo[q + 1]):
            t = et[e]
            if ordb[block[t]] < 0:
                ordb[block[t]] = nr
                reps[nr] = t
                nr += 1
    for q in range(k):
        lab[q] = ordb[block[q]]
    out_edges = []
    out_accept = []
    for i in range(nr):
        q = reps[i]
        sl = _fused(eo, el, eh, et, q, lab, 0, lab[q], -1, sig)
        row = []
        for e in range(1, sl, 3):
            row.append((sig[e], sig[e + 1], sig[e + 2]))
        out_edges.append(tuple(row))
        out_accept.append(accept[orig[q]])  # the caller's objects, as the Python twin keeps them
    return out_edges, out_accept


cdef int _moore(int32_t k, const int32_t* eo, const int32_t* el, const int32_t* eh,
                const int32_t* et, const int32_t* kacc, int32_t* block, _SigSet* S,
                int32_t* sig, void** bufs, Py_ssize_t* nb) except -1:
    """Moore refinement (blocks: same block and same fused edges to blocks, until stable),
    recomputing per round only the states with an edge into a state that changed block: a
    block's other members keep its signature.  Plain rounds took as many passes over every
    edge as the longest distinguishing word (~10 ms for a 500-state cyclic key automaton)."""
    cdef int32_t q, t, e, i, j, b, g, sl, nd, nc, n_ids, stamp = 0
    cdef i32_p rp_off, rp, size, bso, bsl, bvalid, dirty, dmark, doff, match, kept, counted
    cdef i32_p ndirty_of, newid, changed
    cdef IVec dsig, bpool
    dsig.d = bpool.d = NULL
    dsig.n = bpool.n = dsig.cap = bpool.cap = 0
    rp_off = _alloc(bufs, nb, k + 1)
    rp = _alloc(bufs, nb, eo[k])
    size = _alloc(bufs, nb, k + 2)
    bso = _alloc(bufs, nb, k + 2)      # per block: its members' signature in bpool ...
    bsl = _alloc(bufs, nb, k + 2)      # ... its length
    bvalid = _alloc(bufs, nb, k + 2)   # ... and whether it is known yet
    kept = _alloc(bufs, nb, k + 2)     # per block: round stamp when some member keeps its id
    counted = _alloc(bufs, nb, k + 2)  # per block: round stamp of ndirty_of
    ndirty_of = _alloc(bufs, nb, k + 2)
    dirty = _alloc(bufs, nb, k)
    dmark = _alloc(bufs, nb, k)
    doff = _alloc(bufs, nb, k + 1)
    match = _alloc(bufs, nb, k)
    newid = _alloc(bufs, nb, k + 1)
    changed = _alloc(bufs, nb, k)
    try:
        # predecessors (CSR)
        for q in range(k + 1):
            rp_off[q] = 0
        for e in range(eo[k]):
            rp_off[et[e] + 1] += 1
        for q in range(k):
            rp_off[q + 1] += rp_off[q]
        for q in range(k):
            doff[q] = rp_off[q]
        for q in range(k):
            for e in range(eo[q], eo[q + 1]):
                rp[doff[et[e]]] = q
                doff[et[e]] += 1
        for b in range(k + 2):
            size[b] = 0
            bvalid[b] = 0
            kept[b] = 0
            counted[b] = 0
            ndirty_of[b] = 0
        for q in range(k):
            block[q] = kacc[q]
            size[kacc[q]] += 1
            dirty[q] = q
            dmark[q] = 0
        n_ids = 2
        nd = k
        while nd:
            stamp += 1
            # the signatures of the dirty states, against the blocks at the round's start
            if iv_reserve(&dsig, k + 3 * eo[k] + 1):
                raise MemoryError()
            doff[0] = 0
            for i in range(nd):
                q = dirty[i]
                sl = _fused(eo, el, eh, et, q, block, block[q], block[q], -1, dsig.d + doff[i])
                doff[i + 1] = doff[i] + sl
                b = block[q]
                if counted[b] != stamp:
                    counted[b] = stamp
                    ndirty_of[b] = 0
                ndirty_of[b] += 1
                if bvalid[b] and bsl[b] == sl and ints_eq(bpool.d + bso[b], dsig.d + doff[i], sl):
                    match[i] = -1
                    kept[b] = stamp
                else:
                    match[i] = 0
            # a block keeps its id for the members whose signature is unchanged; the others
            # are grouped by signature, each group a new block (or, when every member changed,
            # the first group keeps the id)
            for i in range(nd):
                b = block[dirty[i]]
                if ndirty_of[b] < size[b]:
                    kept[b] = stamp
            S.mask = 1
            while S.mask + 1 < 2 * nd + 2:
                S.mask = S.mask * 2 + 1
            _sigs_clear(S)
            nc = 0
            for i in range(nd):
                if match[i] < 0:
                    continue
                q = dirty[i]
                b = block[q]
                sl = doff[i + 1] - doff[i]
                j = S.n
                g = _sigs_find(S, dsig.d + doff[i], sl, True)
                if g == j:  # a new group
                    if kept[b] != stamp:
                        kept[b] = stamp
                        newid[g] = b
                    else:
                        newid[g] = n_ids
                        n_ids += 1
                    if iv_reserve(&bpool, bpool.n + sl):
                        raise MemoryError()
                    for j in range(sl):
                        bpool.d[bpool.n + j] = dsig.d[doff[i] + j]
                    bpool.d[bpool.n] = newid[g]  # the head: the block itself
                    bso[newid[g]] = <int32_t>bpool.n
                    bsl[newid[g]] = sl
                    bvalid[newid[g]] = 1
                    bpool.n += sl
                match[i] = g
                if newid[g] != b:
                    size[b] -= 1
                    size[newid[g]] += 1
                    changed[nc] = q
                    nc += 1
            # rewrite the changed states' blocks only now: the signatures above read the old ones
            for i in range(nd):
                if match[i] >= 0:
                    block[dirty[i]] = newid[match[i]]
            nd = 0
            for i in range(nc):
                t = changed[i]
                for e in range(rp_off[t], rp_off[t + 1]):
                    q = rp[e]
                    if dmark[q] != stamp:
                        dmark[q] = stamp
                        dirty[nd] = q
                        nd += 1
    finally:
        free(dsig.d)
        free(bpool.d)
    return 0
