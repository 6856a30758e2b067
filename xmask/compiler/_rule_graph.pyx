"""Compile-time kernels over rule graphs, GIL released: the left-recursion cycle test, each
rule's return contexts (through tail calls) and the inliner's walk (recursive rules, callee-
first order), on int-indexed CSR graphs; Tarjan's components shared by the last two.

Example::

    >>> import numpy as np
    >>> rec, order = inline_plan(np.array([0, 1, 2, 2], np.int32), np.array([1, 1], np.int32), 0)
    >>> rec.tolist(), order.tolist()     # rule 1 calls itself; rule 2 is on its own
    ([0, 1, 0], [2])
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memset

from xmask.runtime._intseq cimport sort_unique
from xmask.compiler._ivec cimport IVec, iv_reserve, iv_push

ctypedef Py_ssize_t isz


def has_cycle(const int32_t[:, ::1] edges, isz n):
    """Whether the directed graph on ``0..n-1`` with ``edges`` (rows ``(from, to)``, repeats
    allowed) has a cycle, a self-loop included (Kahn's algorithm).  The compiler names a
    left-recursion cycle only when there is one."""
    cdef isz m = edges.shape[0], k, i, top = 0, done = 0
    cdef int32_t u, v
    cdef int32_t* indeg = <int32_t*>calloc(n + 1, sizeof(int32_t))
    cdef int32_t* off = <int32_t*>calloc(n + 2, sizeof(int32_t))
    cdef int32_t* dst = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef int32_t* stack = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    try:
        if not (indeg and off and dst and stack):
            raise MemoryError()
        with nogil:
            for k in range(m):
                off[edges[k, 0] + 2] += 1
                indeg[edges[k, 1]] += 1
            for i in range(2, n + 2):
                off[i] += off[i - 1]
            for k in range(m):
                dst[off[edges[k, 0] + 1]] = edges[k, 1]
                off[edges[k, 0] + 1] += 1
            for i in range(n):
                if indeg[i] == 0:
                    stack[top] = <int32_t>i
                    top += 1
            while top:
                top -= 1
                u = stack[top]
                done += 1
                for k in range(off[u], off[u + 1]):
                    v = dst[k]
                    indeg[v] -= 1
                    if indeg[v] == 0:
                        stack[top] = v
                        top += 1
    finally:
        free(indeg)
        free(off)
        free(dst)
        free(stack)
    return done != n


def return_contexts(const int32_t[::1] call_callee, const int32_t[::1] caller_rule,
                    const int32_t[::1] call_ret, const int32_t[::1] state_rule,
                    const uint64_t[:, ::1] follow, isz n_states):
    """Per rule, the return states its frame can reach, following tail calls (``call_ret``
    -1) up to their callers, and the bytes that can follow those states' rules once they
    finish.  Returns ``(offsets, flat, ctx_follow)``: rule ``r``'s sorted states are
    ``flat[offsets[r]:offsets[r + 1]]`` (int64 offsets, int32 states) and ``ctx_follow[r]``
    ORs ``follow`` (four uint64 words per rule) over the rules owning them.

    Strongly connected components of the tail-caller graph (Tarjan, iterative) are solved
    once each, callers' components first; a component with no return state of its own and
    one caller component shares that component's set."""
    cdef isz R = follow.shape[0], m = call_callee.shape[0], k, i, j, x, p, c, n_comp = 0
    cdef isz n_sid, own_n, total
    cdef int32_t v, w, sid, stamp = 0
    cdef bint nomem = False
    cdef IVec pool, set_off, vec, sids
    memset(&pool, 0, sizeof(IVec))
    memset(&set_off, 0, sizeof(IVec))
    memset(&vec, 0, sizeof(IVec))
    memset(&sids, 0, sizeof(IVec))
    # CSR by callee: tail callers (x -> caller rule) and own return states
    cdef int32_t* t_off = <int32_t*>calloc(R + 2, sizeof(int32_t))
    cdef int32_t* t_dst = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef int32_t* o_off = <int32_t*>calloc(R + 2, sizeof(int32_t))
    cdef int32_t* o_ret = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    cdef Scc g
    g.index = NULL
    cdef int32_t* comp_set = <int32_t*>malloc((R + 1) * sizeof(int32_t))
    cdef int32_t* mark = <int32_t*>calloc(n_states + 1, sizeof(int32_t))
    cdef int32_t* comp_of
    cdef int32_t* members
    cdef int32_t* comp_start
    try:
        if not (t_off and t_dst and o_off and o_ret and comp_set and mark) or scc_alloc(&g, R):
            raise MemoryError()
        comp_of, members, comp_start = g.comp_of, g.members, g.comp_start
        with nogil:
            for k in range(m):
                if call_ret[k] < 0:
                    t_off[call_callee[k] + 2] += 1
                else:
                    o_off[call_callee[k] + 2] += 1
            for i in range(2, R + 2):
                t_off[i] += t_off[i - 1]
                o_off[i] += o_off[i - 1]
            for k in range(m):
                if call_ret[k] < 0:
                    t_dst[t_off[call_callee[k] + 1]] = caller_rule[k]
                    t_off[call_callee[k] + 1] += 1
                else:
                    o_ret[o_off[call_callee[k] + 1]] = call_ret[k]
                    o_off[call_callee[k] + 1] += 1
            # Tarjan over x -> tail caller: a component comes after every component it reaches
            # (its callers), so callers' components are solved first
            n_comp = tarjan(R, t_off, t_dst, &g)
            # set 0 is the empty set
            if iv_push(&set_off, 0) or iv_push(&set_off, 0):
                nomem = True
            c = 0
            while c < n_comp and not nomem:
                stamp += 1
                vec.n = 0
                for j in range(comp_start[c], comp_start[c + 1]):
                    x = members[j]
                    for k in range(o_off[x], o_off[x + 1]):
                        v = o_ret[k]
                        if mark[v] != stamp:
                            mark[v] = stamp
                            if iv_push(&vec, v):
                                nomem = True
                own_n = vec.n
                sids.n = 0
                for j in range(comp_start[c], comp_start[c + 1]):
                    x = members[j]
                    for k in range(t_off[x], t_off[x + 1]):
                        p = t_dst[k]
                        if comp_of[p] == c:
                            continue
                        sid = comp_set[comp_of[p]]
                        for i in range(sids.n):
                            if sids.d[i] == sid:
                                break
                        else:
                            if iv_push(&sids, sid):
                                nomem = True
                if own_n == 0 and sids.n == 1:
                    comp_set[c] = sids.d[0]
                elif own_n == 0 and sids.n == 0:
                    comp_set[c] = 0
                else:
                    for i in range(sids.n):
                        sid = sids.d[i]
                        for k in range(set_off.d[sid], set_off.d[sid + 1]):
                            v = pool.d[k]
                            if mark[v] != stamp:
                                mark[v] = stamp
                                if iv_push(&vec, v):
                                    nomem = True
                    vec.n = sort_unique(vec.d, vec.n)
                    if iv_reserve(&pool, pool.n + vec.n):
                        nomem = True
                        break
                    memcpy(pool.d + pool.n, vec.d, vec.n * sizeof(int32_t))
                    pool.n += vec.n
                    comp_set[c] = <int32_t>(set_off.n - 1)
                    if iv_push(&set_off, <int32_t>pool.n):
                        nomem = True
                c += 1
        if nomem:
            raise MemoryError()
        n_sid = set_off.n - 1
        offsets_a = np.zeros(R + 1, dtype=np.int64)
        set_follow_a = np.zeros((n_sid, 4), dtype=np.uint64)
        ctx_follow_a = np.zeros((R, 4), dtype=np.uint64)
        total = 0
        for x in range(R):
            sid = comp_set[comp_of[x]]
            total += set_off.d[sid + 1] - set_off.d[sid]
        flat_a = np.empty(total, dtype=np.int32)
        _fill_contexts(offsets_a, flat_a, set_follow_a, ctx_follow_a, follow, state_rule,
                       pool.d, set_off.d, n_sid, comp_set, comp_of, R)
        return offsets_a, flat_a, ctx_follow_a
    finally:
        free(t_off); free(t_dst); free(o_off); free(o_ret); free(g.index); free(comp_set)
        free(mark)
        free(pool.d); free(set_off.d); free(vec.d); free(sids.d)


cdef void _fill_contexts(int64_t[::1] offsets, int32_t[::1] flat, uint64_t[:, ::1] set_follow,
                         uint64_t[:, ::1] ctx_follow, const uint64_t[:, ::1] follow,
                         const int32_t[::1] state_rule, const int32_t* pool,
                         const int32_t* set_off, isz n_sid, const int32_t* comp_set,
                         const int32_t* comp_of, isz R) noexcept nogil:
    cdef isz x, k, j, pos = 0
    cdef int32_t sid
    for sid in range(n_sid):
        for k in range(set_off[sid], set_off[sid + 1]):
            for j in range(4):
                set_follow[sid, j] |= follow[state_rule[pool[k]], j]
    for x in range(R):
        sid = comp_set[comp_of[x]]
        for k in range(set_off[sid], set_off[sid + 1]):
            flat[pos] = pool[k]
            pos += 1
        offsets[x + 1] = pos
        for j in range(4):
            ctx_follow[x, j] = set_follow[sid, j]


cdef struct Scc:
    # Tarjan's arrays for a graph of n nodes (one block, see scc_alloc)
    int32_t* index
    int32_t* low
    int32_t* tstack
    int32_t* cnode
    int32_t* cedge
    int32_t* comp_of
    int32_t* members
    int32_t* comp_start
    uint8_t* onstack


cdef int scc_alloc(Scc* g, isz n) noexcept nogil:
    """Allocate ``g``'s arrays for ``n`` nodes in one block (``onstack`` zeroed); -1 if out of
    memory.  Free with ``free(g.index)``."""
    cdef isz k = n + 2
    cdef int32_t* a = <int32_t*>calloc(8 * k + k // 4 + 1, sizeof(int32_t))
    if a == NULL:
        return -1
    g.index, g.low, g.tstack, g.cnode = a, a + k, a + 2 * k, a + 3 * k
    g.cedge, g.comp_of, g.members, g.comp_start = a + 4 * k, a + 5 * k, a + 6 * k, a + 7 * k
    g.onstack = <uint8_t*>(a + 8 * k)
    return 0


cdef isz tarjan(isz n, const int32_t* off, const int32_t* dst, Scc* g) noexcept nogil:
    """Strongly connected components of the graph ``0..n-1`` (CSR ``off`` / ``dst``), Tarjan
    without recursion; returns their count.  A component is emitted after every component
    it reaches: component ``c`` is ``g.members[g.comp_start[c]:g.comp_start[c + 1]]``, and
    ``g.comp_of`` maps nodes to components (``g.onstack`` is left zeroed)."""
    cdef isz x, ctop, top = 0, idx = 0, n_comp = 0, n_members = 0
    cdef int32_t v, w
    cdef int32_t* index = g.index
    cdef int32_t* low = g.low
    cdef int32_t* tstack = g.tstack
    cdef int32_t* cnode = g.cnode
    cdef int32_t* cedge = g.cedge
    cdef int32_t* comp_of = g.comp_of
    cdef int32_t* members = g.members
    cdef int32_t* comp_start = g.comp_start
    cdef uint8_t* onstack = g.onstack
    for x in range(n):
        index[x] = -1
    for x in range(n):
        if index[x] >= 0:
            continue
        ctop = 0
        cnode[0] = <int32_t>x
        cedge[0] = off[x]
        index[x] = low[x] = <int32_t>idx
        idx += 1
        tstack[top] = <int32_t>x
        top += 1
        onstack[x] = 1
        while ctop >= 0:
            v = cnode[ctop]
            if cedge[ctop] < off[v + 1]:
                w = dst[cedge[ctop]]
                cedge[ctop] += 1
                if index[w] < 0:
                    index[w] = low[w] = <int32_t>idx
                    idx += 1
                    tstack[top] = w
                    top += 1
                    onstack[w] = 1
                    ctop += 1
                    cnode[ctop] = w
                    cedge[ctop] = off[w]
                elif onstack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            if low[v] == index[v]:
                comp_start[n_comp] = <int32_t>n_members
                while True:
                    top -= 1
                    w = tstack[top]
                    onstack[w] = 0
                    comp_of[w] = <int32_t>n_comp
                    members[n_members] = w
                    n_members += 1
                    if w == v:
                        break
                n_comp += 1
            ctop -= 1
            if ctop >= 0 and low[v] < low[cnode[ctop]]:
                low[cnode[ctop]] = low[v]
    comp_start[n_comp] = <int32_t>n_members
    return n_comp


def inline_plan(const int32_t[::1] off, const int32_t[::1] dst, isz root):
    """The inliner's walk over the rule graph (rule ``r`` references ``dst[off[r]:off[r + 1]]``,
    in order): ``(recursive, order)``, uint8 per rule (on a reference cycle, a self-reference
    included) and the other rules but ``root`` in callee-first depth-first post-order, the
    walks started from each rule in index order and following references in order."""
    cdef isz n = off.shape[0] - 1, x, j, c, top, n_order = 0, n_comp
    cdef int32_t v, w
    rec_a = np.zeros(n, dtype=np.uint8)
    order_a = np.empty(n, dtype=np.int32)
    cdef uint8_t[::1] rec = rec_a
    cdef int32_t[::1] order = order_a
    cdef Scc g
    cdef int32_t* cnode
    cdef int32_t* cedge
    cdef int32_t* members
    cdef int32_t* comp_start
    cdef uint8_t* flag  # Tarjan's on-stack (zeroed after it), then "seen"
    if scc_alloc(&g, n):
        raise MemoryError()
    cnode, cedge, members, comp_start, flag = g.cnode, g.cedge, g.members, g.comp_start, g.onstack
    try:
        with nogil:
            n_comp = tarjan(n, &off[0], &dst[0] if dst.shape[0] else NULL, &g)
            for c in range(n_comp):
                if comp_start[c + 1] - comp_start[c] > 1:
                    for j in range(comp_start[c], comp_start[c + 1]):
                        rec[members[j]] = 1
            for x in range(n):
                for j in range(off[x], off[x + 1]):
                    if dst[j] == x:
                        rec[x] = 1
            # flag: seen (zero again after Tarjan)
            for x in range(n):
                if flag[x] or rec[x] or x == root:
                    continue
                flag[x] = 1
                top = 0
                cnode[0] = <int32_t>x
                cedge[0] = off[x]
                while top >= 0:
                    v = cnode[top]
                    if cedge[top] == off[v + 1]:
                        top -= 1
                        order[n_order] = v
                        n_order += 1
                        continue
                    w = dst[cedge[top]]
                    cedge[top] += 1
                    if not flag[w] and not rec[w] and w != root:
                        flag[w] = 1
                        top += 1
                        cnode[top] = w
                        cedge[top] = off[w]
    finally:
        free(g.index)
    return rec_a, order_a[:n_order]
