"""The subset construction of :func:`xmask.grammar.dfa_expr.dfa_from_expr` in C loops.

Patterns and formats are turned into code point automata by exploring the sets of NFA
states reachable on each code point interval; in Python (sets, frozensets, a closure per
target set) a URI format took ~20 ms and a 255-long counted class ~4 ms on a cold
conversion.  Here the NFA is laid out in flat arrays, each subset is a sorted int run in
one pool, found again by hash, and each state's intervals come from one sort of its
members' range ends.  States are numbered in the order the Python exploration numbers them
(discovery order, intervals in code point order) and edges are fused the same way, so the
unminimized automaton is the same one.

Example::

    >>> eps = [[1], [], []]                 # 0 -eps-> 1, 1 -[a-c]-> 2
    >>> sym = [[], [(((97, 99),), 2)], []]
    >>> subset_dfa(eps, sym, 0, 2, 10, lambda: None)
    ([((97, 99, 1),), ()], [False, True])
"""

from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort

from xmask.compiler._ivec cimport IVec, iv_push, iv_reserve, ints_eq, ints_hash
from xmask.runtime._intseq cimport cmp_i32, first_at_least, sort_unique

from xmask._switch_interval import switch_point

# a pool of subset members beyond this many ints (1 GB) is refused: the automaton is far
# beyond any state limit's worth of work already
cdef Py_ssize_t _MAX_POOL = 256 * 1024 * 1024


cdef struct _Subsets:
    IVec pool      # members of every state, state after state
    IVec start     # per state: offset of its members in pool (and one past the last)
    int32_t* table  # open addressing: state ids, -1 = empty
    Py_ssize_t mask


cdef int _grow_table(_Subsets* s) except -1:
    cdef Py_ssize_t n = (s.mask + 1) * 2, i, h, st
    cdef int32_t* t = <int32_t*> malloc(n * sizeof(int32_t))
    cdef int32_t q
    if t == NULL:
        raise MemoryError()
    for i in range(n):
        t[i] = -1
    for q in range(<int32_t>(s.start.n - 1)):
        st = s.start.d[q]
        h = <Py_ssize_t>(ints_hash(s.pool.d + st, s.start.d[q + 1] - st) & <uint64_t>(n - 1))
        while t[h] >= 0:
            h = (h + 1) & (n - 1)
        t[h] = q
    free(s.table)
    s.table = t
    s.mask = n - 1
    return 0


cdef int32_t _find_or_add(_Subsets* s, const int32_t* members, Py_ssize_t m, bint* added) except -2:
    """The id of the state with these (sorted) members, adding it when new."""
    cdef uint64_t hv = ints_hash(members, m)
    cdef Py_ssize_t h = <Py_ssize_t>(hv & <uint64_t>s.mask), st
    cdef int32_t q, i
    while s.table[h] >= 0:
        q = s.table[h]
        st = s.start.d[q]
        if s.start.d[q + 1] - st == m and ints_eq(s.pool.d + st, members, m):
            added[0] = False
            return q
        h = (h + 1) & s.mask
    if s.pool.n + m > _MAX_POOL:
        return -1
    q = <int32_t>(s.start.n - 1)
    if iv_reserve(&s.pool, s.pool.n + m) or iv_push(&s.start, <int32_t>(s.pool.n + m)):
        raise MemoryError()
    for i in range(m):
        s.pool.d[s.pool.n + i] = members[i]
    s.pool.n += m
    s.table[h] = q
    added[0] = True
    if (s.start.n - 1) * 2 > s.mask:
        _grow_table(s)
    return q


def subset_dfa(list eps, list sym, int start, int end, int max_states, check):
    """``(edges, accept)`` of the subset automaton of an NFA (``eps[q]``: epsilon targets;
    ``sym[q]``: ``(ranges, target)`` pairs, ranges sorted ``(lo, hi)`` code points) from the
    closure of ``start``, accepting where ``end`` is a member; edges fused per state.  None
    when it has more than ``max_states`` states, False when its subsets hold more than
    ``_MAX_POOL`` members in all.  ``check()`` is called every 256 states (the compile
    deadline), :func:`~xmask._switch_interval.switch_point` every 64 between."""
    cdef Py_ssize_t n = len(eps), i, j, k, q, m, n_edges, n_pts, n_iv, a, b
    cdef Py_ssize_t prev_a = -1, prev_b = -1
    cdef int32_t lo, hi, t, cur_id, prev_id, mstamp = 0, start32 = start
    cdef bint added
    cdef list out_edges = [], accept = [], row
    cdef tuple last
    cdef _Subsets S
    cdef IVec eps_off, eps_to, sym_off, sym_lo, sym_hi, sym_t, buf, stack, e_lo, e_hi, e_t
    cdef IVec pts, cnt, slot, tl
    cdef int32_t* mark = NULL
    S.pool.d = NULL; S.pool.n = 0; S.pool.cap = 0
    S.start.d = NULL; S.start.n = 0; S.start.cap = 0
    S.table = NULL
    S.mask = 63
    eps_off.d = eps_to.d = sym_off.d = sym_lo.d = sym_hi.d = sym_t.d = NULL
    buf.d = stack.d = e_lo.d = e_hi.d = e_t.d = pts.d = cnt.d = slot.d = tl.d = NULL
    eps_off.n = eps_to.n = sym_off.n = sym_lo.n = sym_hi.n = sym_t.n = 0
    buf.n = stack.n = e_lo.n = e_hi.n = e_t.n = pts.n = cnt.n = slot.n = tl.n = 0
    eps_off.cap = eps_to.cap = sym_off.cap = sym_lo.cap = sym_hi.cap = sym_t.cap = 0
    buf.cap = stack.cap = e_lo.cap = e_hi.cap = e_t.cap = pts.cap = cnt.cap = slot.cap = tl.cap = 0
    try:
        # the NFA as flat arrays
        mark = <int32_t*> malloc((n + 1) * sizeof(int32_t))
        S.table = <int32_t*> malloc(64 * sizeof(int32_t))
        if mark == NULL or S.table == NULL:
            raise MemoryError()
        for q in range(n):
            mark[q] = 0
        for i in range(64):
            S.table[i] = -1
        for q in range(n):
            if iv_push(&eps_off, <int32_t>eps_to.n) or iv_push(&sym_off, <int32_t>sym_lo.n):
                raise MemoryError()
            for x in <list>eps[q]:
                if iv_push(&eps_to, <int32_t>x):
                    raise MemoryError()
            for rs, x in <list>sym[q]:
                t = x
                for lo, hi in rs:
                    if iv_push(&sym_lo, lo) or iv_push(&sym_hi, hi) or iv_push(&sym_t, t):
                        raise MemoryError()
        if iv_push(&eps_off, <int32_t>eps_to.n) or iv_push(&sym_off, <int32_t>sym_lo.n):
            raise MemoryError()
        if iv_push(&S.start, 0):
            raise MemoryError()

        # state 0: the closure of the start
        mstamp += 1
        buf.n = 0
        stack.n = 0
        _closure_from(&start32, 1, mark, mstamp, &eps_off, &eps_to, &buf, &stack)
        qsort(buf.d, buf.n, sizeof(int32_t), cmp_i32)
        if _find_or_add(&S, buf.d, buf.n, &added) < 0:
            return False
        accept.append(mark[end] == mstamp)

        q = 0
        while q < S.start.n - 1:
            if not q & 255:
                check()
            elif not q & 63:
                # compiled code never reaches the interpreter's switch check: let a thread that
                # waits for the GIL run (see _switch_interval), about every 0.1 ms (~2 us a state)
                switch_point()
            # the edges of the members, and the cuts between their ranges
            e_lo.n = e_hi.n = e_t.n = pts.n = 0
            for j in range(S.start.d[q], S.start.d[q + 1]):
                m = S.pool.d[j]
                for k in range(sym_off.d[m], sym_off.d[m + 1]):
                    if (iv_push(&e_lo, sym_lo.d[k]) or iv_push(&e_hi, sym_hi.d[k])
                            or iv_push(&e_t, sym_t.d[k]) or iv_push(&pts, sym_lo.d[k])
                            or iv_push(&pts, sym_hi.d[k] + 1)):
                        raise MemoryError()
            row = []
            n_edges = e_lo.n
            if n_edges:
                n_pts = sort_unique(pts.d, pts.n)
                n_iv = n_pts - 1
                # the targets of each interval [pts[i], pts[i+1]-1], bucketed (counts, offsets)
                if iv_reserve(&cnt, n_iv + 1) or iv_reserve(&slot, n_iv + 1):
                    raise MemoryError()
                for i in range(n_iv + 1):
                    cnt.d[i] = 0
                for k in range(n_edges):
                    i = first_at_least(pts.d, n_pts, e_lo.d[k])
                    while i < n_iv and pts.d[i] <= e_hi.d[k]:
                        cnt.d[i] += 1
                        i += 1
                a = 0
                for i in range(n_iv):
                    slot.d[i] = <int32_t>a
                    a += cnt.d[i]
                slot.d[n_iv] = <int32_t>a
                if iv_reserve(&tl, a):
                    raise MemoryError()
                for i in range(n_iv):
                    cnt.d[i] = slot.d[i]  # fill positions
                for k in range(n_edges):
                    i = first_at_least(pts.d, n_pts, e_lo.d[k])
                    while i < n_iv and pts.d[i] <= e_hi.d[k]:
                        tl.d[cnt.d[i]] = e_t.d[k]
                        cnt.d[i] += 1
                        i += 1
                prev_a = prev_b = -1
                prev_id = -1
                for i in range(n_iv):
                    a = slot.d[i]
                    b = slot.d[i + 1]
                    if a == b:
                        continue
                    if prev_a >= 0 and b - a == prev_b - prev_a and ints_eq(tl.d + a, tl.d + prev_a, b - a):
                        cur_id = prev_id  # the same targets as the interval before
                    else:
                        mstamp += 1
                        buf.n = 0
                        stack.n = 0
                        _closure_from(tl.d + a, b - a, mark, mstamp, &eps_off, &eps_to, &buf, &stack)
                        qsort(buf.d, buf.n, sizeof(int32_t), cmp_i32)
                        cur_id = _find_or_add(&S, buf.d, buf.n, &added)
                        if cur_id < 0:
                            return False
                        if added:
                            if S.start.n - 1 > max_states:
                                return None
                            accept.append(mark[end] == mstamp)
                    prev_a, prev_b, prev_id = a, b, cur_id
                    lo = pts.d[i]
                    hi = pts.d[i + 1] - 1
                    if row:
                        last = <tuple>row[len(row) - 1]
                        if <int32_t>last[2] == cur_id and <int32_t>last[1] + 1 == lo:
                            row[len(row) - 1] = (last[0], hi, cur_id)
                            continue
                    row.append((lo, hi, cur_id))
            out_edges.append(tuple(row))
            q += 1
        return out_edges, accept
    finally:
        free(mark)
        free(S.table)
        free(S.pool.d)
        free(S.start.d)
        free(eps_off.d)
        free(eps_to.d)
        free(sym_off.d)
        free(sym_lo.d)
        free(sym_hi.d)
        free(sym_t.d)
        free(buf.d)
        free(stack.d)
        free(e_lo.d)
        free(e_hi.d)
        free(e_t.d)
        free(pts.d)
        free(cnt.d)
        free(slot.d)
        free(tl.d)


cdef int _closure_from(const int32_t* seeds, Py_ssize_t n_seeds, int32_t* mark, int32_t stamp,
                       IVec* eps_off, IVec* eps_to, IVec* buf, IVec* stack) except -1:
    """The epsilon closure of ``seeds`` into ``buf`` (unsorted), members marked ``stamp``."""
    cdef Py_ssize_t i, k
    cdef int32_t q, t
    for i in range(n_seeds):
        q = seeds[i]
        if mark[q] != stamp:
            mark[q] = stamp
            if iv_push(buf, q) or iv_push(stack, q):
                raise MemoryError()
    while stack.n:
        stack.n -= 1
        q = stack.d[stack.n]
        for k in range(eps_off.d[q], eps_off.d[q + 1]):
            t = eps_to.d[k]
            if mark[t] != stamp:
                mark[t] = stamp
                if iv_push(buf, t) or iv_push(stack, t):
                    raise MemoryError()
    return 0
