"""Compile-time kernel: Moore minimization of one DFA, GIL released (``_determinize`` calls it
for every rule it determinizes).

Rows come as runs of classes with one target (``_determinize`` keeps them so); calls are
columns too: each callee rule called in the DFA is one more column (its return state the
target), a (callee, block) pair in a signature.  Rounds are synchronous like the full algorithm's but touch only the states
whose successors changed block (see :func:`moore_rounds`); the work budget counts states x
columns per round as the pure-Python twin (``dfa_reference``) does, so both give up on the
same automata and leave them unminimized.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from xmask.runtime._intseq cimport sort_unique
from xmask.compiler._ivec cimport IVec, ints_eq, ints_hash, iv_reserve, iv_push


cdef struct Rows:
    # the DFA's rows: state s's byte runs run_off[s] .. run_off[s + 1] (first class, target or
    # -1; they cover the classes in order), its calls call_off[s] .. call_off[s + 1] (callee
    # rule ascending, return state)
    const int32_t* run_off
    const int32_t* run_col
    const int32_t* run_tgt
    const int32_t* call_off
    const int32_t* call_rule
    const int32_t* call_dst
    int32_t nc


cdef inline int append_sig(int32_t s, const int32_t* block, const Rows* g, IVec* sig) noexcept nogil:
    """Append state ``s``'s signature: its block, then its byte row as maximal runs of classes
    whose targets lie in one block ((first class, block) pairs, -1 for no target), then its
    calls as (nc + callee, block) pairs.  Adjacent runs whose targets now share a block merge,
    so equal rows give equal signatures."""
    cdef isz k, n
    cdef int32_t r0 = g.run_off[s], r1 = g.run_off[s + 1], c0 = g.call_off[s], c1 = g.call_off[s + 1]
    if iv_reserve(sig, sig.n + 1 + 2 * (r1 - r0 + c1 - c0)):
        return -1
    n = sig.n + 1
    sig.d[sig.n] = block[s]
    n += 2 * merged_runs(g.run_col, g.run_tgt, r0, r1, block, 0, sig.d + n, sig.d + n + 1, 2)
    for k in range(c0, c1):
        sig.d[n] = g.nc + g.call_rule[k]
        sig.d[n + 1] = block[g.call_dst[k]]
        n += 2
    sig.n = n
    return 0


cdef void minwork_free(MinWork* w) noexcept nogil:
    """Free a :c:type:`MinWork` (its buffers outlive the ``minimize_dfa`` calls it served)."""
    cdef Moore* m = &w.mo
    free(w.callees.d); free(w.arena.d)
    free(w.rev_src.d); free(m.dirty.d); free(m.newid.d)
    free(m.spos.d); free(m.blocks.d); free(m.reps.d); free(m.changed.d); free(m.sig.d)
    free(m.slots.d); free(m.gsize.d)
    memset(w, 0, sizeof(MinWork))


cdef inline void unlink(Moore* m, int32_t s) noexcept nogil:
    if m.prv[s] >= 0:
        m.nxt[m.prv[s]] = m.nxt[s]
    else:
        m.head[m.block[s]] = m.nxt[s]
    if m.nxt[s] >= 0:
        m.prv[m.nxt[s]] = m.prv[s]


cdef inline void link(Moore* m, int32_t s, int32_t b) noexcept nogil:
    m.block[s] = b
    m.prv[s] = -1
    m.nxt[s] = m.head[b]
    if m.head[b] >= 0:
        m.prv[m.head[b]] = s
    m.head[b] = s


cdef isz moore_rounds(Moore* m, IVec* rev_src_buf, isz n, isz w, const int32_t* finals,
                      const Rows* g, int64_t budget) noexcept nogil:
    """Moore refinement in synchronous rounds, each equal to a full round, but touching only
    the states whose successors changed block in the previous round (plus one clean member
    per affected block, whose unchanged signature all its clean block-mates share): a chain of
    n states costs O(n), not O(n^2).  Returns the block count (``m.block`` holds ids), ``n``
    when ``budget`` (states x columns per round, as the full algorithm counts) ran out, or -1
    when out of memory."""
    cdef isz i, k, j, cap, nd, nb_aff, L, round_ = 1, n_blocks, next_id
    cdef int64_t work = 0
    cdef int32_t s, t, b, r, e, idx
    cdef uint64_t h
    cdef bint has0 = False, has1 = False
    for i in range(n):
        if finals[i]:
            has1 = True
        else:
            has0 = True
    n_blocks = (<isz>has0) + (<isz>has1)
    for i in range(n):
        m.head[i] = -1
        m.dmark[i] = 0
        m.bmark[i] = 0
        m.bkeep[i] = 0
    for i in range(n - 1, -1, -1):
        link(m, <int32_t>i, 1 if finals[i] and has0 else 0)
    # predecessors over the runs and the calls' return states
    for i in range(n + 1):
        m.rev_off[i] = 0
    for k in range(g.run_off[n]):
        if g.run_tgt[k] >= 0:
            m.rev_off[g.run_tgt[k] + 1] += 1
    for k in range(g.call_off[n]):
        m.rev_off[g.call_dst[k] + 1] += 1
    for i in range(n):
        m.rev_off[i + 1] += m.rev_off[i]
    if iv_reserve(rev_src_buf, m.rev_off[n] + 1):
        return -1
    m.rev_src = rev_src_buf.d
    for i in range(n):
        for k in range(g.run_off[i], g.run_off[i + 1]):
            t = g.run_tgt[k]
            if t >= 0:
                m.rev_src[m.rev_off[t]] = <int32_t>i
                m.rev_off[t] += 1
        for k in range(g.call_off[i], g.call_off[i + 1]):
            t = g.call_dst[k]
            m.rev_src[m.rev_off[t]] = <int32_t>i
            m.rev_off[t] += 1
    for i in range(n, 0, -1):
        m.rev_off[i] = m.rev_off[i - 1]
    m.rev_off[0] = 0
    m.dirty.n = 0
    for i in range(n):
        if iv_push(&m.dirty, <int32_t>i):
            return -1
    while m.dirty.n:
        # a state alone in its block cannot split: drop it (skips about a fifth of the
        # signatures of a large schema's rules, which are nearly minimal)
        nd = 0
        for i in range(m.dirty.n):
            s = m.dirty.d[i]
            if m.prv[s] >= 0 or m.nxt[s] >= 0:
                m.dirty.d[nd] = s
                nd += 1
        m.dirty.n = nd
        if nd == 0:
            break
        for i in range(nd):
            m.dmark[m.dirty.d[i]] = <int32_t>round_
        # affected blocks, each with a clean member if it has one
        m.blocks.n = 0
        m.reps.n = 0
        for i in range(nd):
            b = m.block[m.dirty.d[i]]
            if m.bmark[b] != round_:
                m.bmark[b] = <int32_t>round_
                r = m.head[b]
                while r >= 0 and m.dmark[r] == round_:
                    r = m.nxt[r]
                if iv_push(&m.blocks, b) or iv_push(&m.reps, r):
                    return -1
        nb_aff = m.blocks.n
        # signatures against the current ids: dirty states, then the representatives
        m.sig.n = 0
        m.spos.n = 0
        for i in range(nd):
            if iv_push(&m.spos, <int32_t>m.sig.n) or append_sig(m.dirty.d[i], m.block, g, &m.sig):
                return -1
        for i in range(nb_aff):
            if iv_push(&m.spos, <int32_t>m.sig.n):
                return -1
            if m.reps.d[i] >= 0 and append_sig(m.reps.d[i], m.block, g, &m.sig):
                return -1
        if iv_push(&m.spos, <int32_t>m.sig.n):
            return -1
        # group equal signatures (the block is their first element); m.newid first holds each
        # signature's group leader (its first index), m.gsize the group's dirty count
        cap = 16
        while cap < 2 * (nd + nb_aff):
            cap <<= 1
        if (iv_reserve(&m.slots, cap) or iv_reserve(&m.newid, nd + nb_aff)
                or iv_reserve(&m.gsize, nd + nb_aff)):
            return -1
        for i in range(cap):
            m.slots.d[i] = -1
        for j in range(nd + nb_aff):
            # representatives first (j >= nd maps to them), then the dirty states in order
            idx = <int32_t>(nd + j if j < nb_aff else j - nb_aff)
            if idx >= nd and m.reps.d[idx - nd] < 0:
                continue
            L = m.spos.d[idx + 1] - m.spos.d[idx]
            h = ints_hash(m.sig.d + m.spos.d[idx], L)
            i = <isz>(h & <uint64_t>(cap - 1))
            while True:
                e = m.slots.d[i]
                if e < 0:
                    m.slots.d[i] = idx
                    m.newid.d[idx] = idx
                    # a representative's group keeps its block id: it holds the clean members
                    m.gsize.d[idx] = 0x40000000 if idx >= nd else 1
                    break
                if (m.spos.d[e + 1] - m.spos.d[e] == L
                        and ints_eq(m.sig.d + m.spos.d[e], m.sig.d + m.spos.d[idx], L)):
                    m.newid.d[idx] = e
                    m.gsize.d[e] += 1
                    break
                i = (i + 1) & (cap - 1)
        # Each split block keeps its id for its largest group (Hopcroft's "all but the largest
        # half"): only states whose id changes make their predecessors dirty next round, and
        # the ids are only names, so the partitions, their rounds and the result are the same
        # whichever group keeps it (blocks are renumbered by first appearance at the end).
        for j in range(nd + nb_aff):
            idx = <int32_t>(nd + j if j < nb_aff else j - nb_aff)
            if (idx >= nd and m.reps.d[idx - nd] < 0) or m.newid.d[idx] != idx:
                continue
            b = m.blocks.d[idx - nd] if idx >= nd else m.block[m.dirty.d[idx]]
            if m.bkeep[b] != round_:
                m.bkeep[b] = <int32_t>round_
                m.bbest[b] = idx
            elif m.gsize.d[idx] > m.gsize.d[m.bbest[b]]:
                m.bbest[b] = idx
        next_id = n_blocks
        for j in range(nd + nb_aff):
            idx = <int32_t>(nd + j if j < nb_aff else j - nb_aff)
            if (idx >= nd and m.reps.d[idx - nd] < 0) or m.newid.d[idx] != idx:
                continue
            b = m.blocks.d[idx - nd] if idx >= nd else m.block[m.dirty.d[idx]]
            if m.bbest[b] == idx:
                m.gsize.d[idx] = b
            else:
                m.gsize.d[idx] = <int32_t>next_id
                next_id += 1
        for i in range(nd):
            m.newid.d[i] = m.gsize.d[m.newid.d[i]]
        if next_id == n_blocks:
            return n_blocks
        n_blocks = next_id
        work += n * (w + 1)
        if work > budget:
            return n
        # move the split-off states, then next round's dirty states: their predecessors
        m.changed.n = 0
        for i in range(nd):
            s = m.dirty.d[i]
            if m.newid.d[i] != m.block[s]:
                unlink(m, s)
                link(m, s, m.newid.d[i])
                if iv_push(&m.changed, s):
                    return -1
        round_ += 1
        m.dirty.n = 0
        for i in range(m.changed.n):
            s = m.changed.d[i]
            for k in range(m.rev_off[s], m.rev_off[s + 1]):
                t = m.rev_src[k]
                if m.dmark[t] != round_:
                    m.dmark[t] = <int32_t>round_
                    if iv_push(&m.dirty, t):
                        return -1
    return n_blocks


cdef isz minimize_dfa(isz n, isz nc, const int32_t* run_off, const int32_t* run_col,
                      const int32_t* run_tgt, const int32_t* finals, const int32_t* call_src,
                      const int32_t* call_rule, const int32_t* call_dst, isz ncal, int64_t budget,
                      int32_t* blk_out, MinWork* wk) noexcept nogil:
    """Moore refinement of a DFA: ``n`` states, ``nc`` classes, state s's row the runs
    ``run_off[s] .. run_off[s + 1]`` of ``(run_col, run_tgt)`` (first class, target or -1,
    covering the classes in order), calls sorted by source state then callee as
    ``(call_src, call_rule, call_dst)``, each callee its own column; fills ``blk_out[state]``
    with its block (first-appearance numbering, start = 0) and returns the block count (== n
    when nothing merges or the budget ran out, then ``blk_out`` is the identity), or -1 when
    out of memory.  The budget counts states x (classes + callees) per round, as the Python
    twin does, so both give up on the same automata.  ``wk``: buffers reused from call to call
    (zeroed before the first, freed by :c:func:`minwork_free`)."""
    cdef isz w, i, k, m = -1
    cdef int32_t* nb
    cdef int32_t* call_off
    cdef IVec* callees = &wk.callees
    cdef Moore* mo = &wk.mo
    cdef int32_t* a
    cdef Rows g
    for i in range(n):
        blk_out[i] = <int32_t>i
    if n < 2:
        return n
    # the callee rules called in this DFA, each its own column after the classes
    callees.n = 0
    for k in range(ncal):
        if iv_push(callees, call_rule[k]):
            return -1
    callees.n = sort_unique(callees.d, callees.n)
    w = nc + callees.n
    # one arena: nb, call_off, then the partition's arrays
    if iv_reserve(&wk.arena, 11 * n + 3):
        return -1
    a = wk.arena.d
    nb = a
    call_off = a + n
    a = call_off + n + 1
    mo.block, mo.head, mo.nxt, mo.prv = a, a + n, a + 2 * n, a + 3 * n
    mo.dmark, mo.bmark, mo.bkeep, mo.rev_off = a + 4 * n, a + 5 * n, a + 6 * n, a + 7 * n
    mo.bbest = a + 8 * n + 1
    # each state's calls: a slice of the call arrays (sorted by source)
    k = 0
    for i in range(n):
        call_off[i] = <int32_t>k
        while k < ncal and call_src[k] == i:
            k += 1
    call_off[n] = <int32_t>k
    g.run_off, g.run_col, g.run_tgt = run_off, run_col, run_tgt
    g.call_off, g.call_rule, g.call_dst = call_off, call_rule, call_dst
    g.nc = <int32_t>nc
    m = moore_rounds(mo, &wk.rev_src, n, w, finals, &g, budget)
    if m < 0 or m == n:
        return m
    # renumber by first appearance (start stays 0); nb is the block -> new map
    for i in range(n):
        nb[i] = -1
    m = 0
    for i in range(n):
        if nb[mo.block[i]] < 0:
            nb[mo.block[i]] = <int32_t>m
            m += 1
        blk_out[i] = nb[mo.block[i]]
    return m
