"""Compile-time kernel: per-rule subset construction + Moore minimization, GIL released.

Input is every rule's Thompson NFA as flat CSR arrays (epsilon edges, byte edges as inclusive
class ranges, call edges as (callee rule, target)).  Each rule is determinized (a DFA state is
the sorted list of NFA states of an epsilon closure that have an outgoing edge, plus the rule's
end), minimized (Moore rounds, capped by a work budget like the Python twin in
``dfa_reference``), and appended to one global numbering.  DFA states are numbered in discovery
order (classes ascending, then callees ascending), minimized blocks by first appearance, so the
start state of each rule is its first state.

Limits are reported, not raised (no GIL here): ``status`` 1 = more DFA states than
``max_states`` (``total_so_far`` + this rule's), 2 = the subsets hold more than ``held_cap`` NFA
states, 3 = the deadline passed, 4 = out of memory; ``bad_rule`` names the rule.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free, qsort

from xmask.compiler._ivec cimport IVec, LVec, iv_reserve, iv_push, lv_reserve, lv_push
from libc.string cimport memcmp, memcpy, memset

ctypedef Py_ssize_t isz

cdef extern from *:
    """
    #ifdef _WIN32
    #include <windows.h>
    static double xm_now(void) {
        LARGE_INTEGER f, c;
        QueryPerformanceFrequency(&f); QueryPerformanceCounter(&c);
        return (double)c.QuadPart / (double)f.QuadPart;
    }
    #else
    #include <time.h>
    static double xm_now(void) {
        struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    #endif
    """
    double xm_now() nogil

cdef enum:
    ST_OK = 0
    ST_STATES = 1
    ST_HELD = 2
    ST_DEADLINE = 3
    ST_NOMEM = 4


cdef int cmp_i32(const void* a, const void* b) noexcept nogil:
    cdef int32_t x = (<const int32_t*>a)[0], y = (<const int32_t*>b)[0]
    return (x > y) - (x < y)


cdef int cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0], y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef isz sort_unique(int32_t* a, isz n) noexcept nogil:
    """Sort ``a[:n]`` ascending and drop duplicates; returns the new length."""
    cdef isz i, j, k
    cdef int32_t x
    if n < 2:
        return n
    if n <= 16:
        for i in range(1, n):
            x = a[i]
            j = i
            while j > 0 and a[j - 1] > x:
                a[j] = a[j - 1]
                j -= 1
            a[j] = x
    else:
        qsort(a, n, sizeof(int32_t), cmp_i32)
    k = 1
    for i in range(1, n):
        if a[i] != a[k - 1]:
            a[k] = a[i]
            k += 1
    return k


# ------------------------------------------------------- map: int32 sequence -> int32 value

cdef struct SeqMap:
    int32_t* slots   # entry index, -1 = empty
    isz cap          # power of two
    IVec pool        # keys, concatenated
    LVec off         # entry i's key is pool[off[i] : off[i + 1]]
    IVec val
    LVec hsh


cdef inline uint64_t seq_hash(const int32_t* k, isz n) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef isz i
    for i in range(n):
        h = (h ^ <uint32_t>k[i]) * 0x100000001B3ULL
        h ^= h >> 31
    return h


cdef int sm_init(SeqMap* m) noexcept nogil:
    memset(m, 0, sizeof(SeqMap))
    m.cap = 64
    m.slots = <int32_t*>malloc(m.cap * sizeof(int32_t))
    if m.slots == NULL:
        return -1
    memset(m.slots, 0xFF, m.cap * sizeof(int32_t))
    return lv_push(&m.off, 0)


cdef void sm_clear(SeqMap* m) noexcept nogil:
    memset(m.slots, 0xFF, m.cap * sizeof(int32_t))
    m.pool.n = 0
    m.off.n = 1
    m.val.n = 0
    m.hsh.n = 0


cdef void sm_free(SeqMap* m) noexcept nogil:
    free(m.slots)
    free(m.pool.d)
    free(m.off.d)
    free(m.val.d)
    free(m.hsh.d)


cdef int32_t sm_get(SeqMap* m, const int32_t* k, isz n, uint64_t h) noexcept nogil:
    cdef isz i = <isz>(h & <uint64_t>(m.cap - 1))
    cdef int32_t e
    while True:
        e = m.slots[i]
        if e < 0:
            return -1
        if (<uint64_t>m.hsh.d[e] == h and m.off.d[e + 1] - m.off.d[e] == n
                and memcmp(m.pool.d + m.off.d[e], k, n * sizeof(int32_t)) == 0):
            return m.val.d[e]
        i = (i + 1) & (m.cap - 1)


cdef int sm_put(SeqMap* m, const int32_t* k, isz n, uint64_t h, int32_t v) noexcept nogil:
    """Insert a key known to be absent.  ``k`` must not point into ``m.pool``."""
    cdef isz i, e, count = m.val.n, ncap
    cdef int32_t* ns
    if 2 * (count + 1) > m.cap:
        ncap = m.cap * 2
        ns = <int32_t*>malloc(ncap * sizeof(int32_t))
        if ns == NULL:
            return -1
        memset(ns, 0xFF, ncap * sizeof(int32_t))
        for e in range(count):
            i = <isz>(<uint64_t>m.hsh.d[e] & <uint64_t>(ncap - 1))
            while ns[i] >= 0:
                i = (i + 1) & (ncap - 1)
            ns[i] = <int32_t>e
        free(m.slots)
        m.slots = ns
        m.cap = ncap
    if iv_reserve(&m.pool, m.pool.n + n):
        return -1
    memcpy(m.pool.d + m.pool.n, k, n * sizeof(int32_t))
    m.pool.n += n
    if lv_push(&m.off, m.pool.n) or iv_push(&m.val, v) or lv_push(&m.hsh, <int64_t>h):
        return -1
    i = <isz>(h & <uint64_t>(m.cap - 1))
    while m.slots[i] >= 0:
        i = (i + 1) & (m.cap - 1)
    m.slots[i] = <int32_t>count
    return 0


# ------------------------------------------------------------------------------ the context

cdef struct Ctx:
    # NFA (CSR)
    const int32_t* eps_off
    const int32_t* eps_dst
    const int32_t* b_off
    const int32_t* b_clo
    const int32_t* b_chi
    const int32_t* b_dst
    const int32_t* c_off
    const int32_t* c_rule
    const int32_t* c_dst
    isz nc
    int32_t end
    # limits
    int64_t max_states
    int64_t held_cap
    int64_t total_so_far
    int64_t budget
    double deadline       # xm_now() value, or < 0 for none
    # closure scratch
    int32_t* mark
    int32_t stamp
    IVec stack
    IVec clos
    # per-rule DFA under construction
    SeqMap index         # subset -> DFA state (entry i <-> state i)
    SeqMap memo          # raw target set -> DFA state
    IVec trans           # n_dfa x nc
    IVec finals
    IVec call_src
    IVec call_rule
    IVec call_dst
    int64_t held
    # per-state scratch
    IVec cur
    IVec cnt
    IVec pos
    IVec buf
    LVec pairs
    IVec tmp


cdef int closure(Ctx* c, const int32_t* raw, isz nraw) noexcept nogil:
    """c.clos = sorted NFA states of the epsilon closure of ``raw`` that matter for identity."""
    cdef isz i, k
    cdef int32_t s, t
    c.stamp += 1
    if c.stamp == 0x7FFFFFFF:
        return -1  # never in practice: 2^31 closures
    c.clos.n = 0
    c.stack.n = 0
    for i in range(nraw):
        s = raw[i]
        if c.mark[s] != c.stamp:
            c.mark[s] = c.stamp
            if iv_push(&c.stack, s):
                return -1
    while c.stack.n:
        c.stack.n -= 1
        s = c.stack.d[c.stack.n]
        if c.b_off[s + 1] > c.b_off[s] or c.c_off[s + 1] > c.c_off[s] or s == c.end:
            if iv_push(&c.clos, s):
                return -1
        for k in range(c.eps_off[s], c.eps_off[s + 1]):
            t = c.eps_dst[k]
            if c.mark[t] != c.stamp:
                c.mark[t] = c.stamp
                if iv_push(&c.stack, t):
                    return -1
    c.clos.n = sort_unique(c.clos.d, c.clos.n)
    return 0


cdef int32_t target(Ctx* c, const int32_t* raw, isz n, bint check_states, int* status) noexcept nogil:
    """The DFA state reached on the raw NFA target set ``raw`` (created if new), or -1."""
    cdef uint64_t h = seq_hash(raw, n), h2
    cdef int32_t v = sm_get(&c.memo, raw, n, h)
    cdef isz i, nd
    if v >= 0:
        return v
    if closure(c, raw, n):
        status[0] = ST_NOMEM
        return -1
    h2 = seq_hash(c.clos.d, c.clos.n)
    v = sm_get(&c.index, c.clos.d, c.clos.n, h2)
    if v < 0:
        nd = c.index.val.n
        v = <int32_t>nd
        if sm_put(&c.index, c.clos.d, c.clos.n, h2, v):
            status[0] = ST_NOMEM
            return -1
        if iv_reserve(&c.trans, (nd + 1) * c.nc):
            status[0] = ST_NOMEM
            return -1
        for i in range(c.nc):
            c.trans.d[nd * c.nc + i] = -1
        c.trans.n = (nd + 1) * c.nc
        if check_states and c.total_so_far + nd + 1 > c.max_states:
            status[0] = ST_STATES
            return -1
        c.held += c.clos.n
        if c.held > c.held_cap:
            status[0] = ST_HELD
            return -1
    if sm_put(&c.memo, raw, n, h, v):
        status[0] = ST_NOMEM
        return -1
    return v


cdef int determinize(Ctx* c, int32_t start) noexcept nogil:
    """Subset construction of one rule into c.trans / c.finals / c.call_*; returns a status."""
    cdef int status = ST_OK
    cdef isz d = 0, i, k, p, nsub, total, L, prev_off, prev_len, g, j
    cdef int32_t s, cl, dst, prev_dst, rule
    cdef const int32_t* sub
    cdef bint fin
    sm_clear(&c.index)
    sm_clear(&c.memo)
    c.trans.n = 0
    c.finals.n = 0
    c.call_src.n = 0
    c.call_rule.n = 0
    c.call_dst.n = 0
    c.held = 0
    if iv_reserve(&c.cnt, c.nc + 1) or iv_reserve(&c.pos, c.nc + 1):
        return ST_NOMEM
    if target(c, &start, 1, False, &status) < 0:
        return status
    while d < c.index.val.n:
        if not (d & 255) and c.deadline >= 0 and xm_now() > c.deadline:
            return ST_DEADLINE
        nsub = c.index.off.d[d + 1] - c.index.off.d[d]
        c.cur.n = 0
        if iv_reserve(&c.cur, nsub):
            return ST_NOMEM
        memcpy(c.cur.d, c.index.pool.d + c.index.off.d[d], nsub * sizeof(int32_t))
        c.cur.n = nsub
        sub = c.cur.d
        # byte targets bucketed by class
        memset(c.cnt.d, 0, (c.nc + 1) * sizeof(int32_t))
        fin = False
        for i in range(nsub):
            s = sub[i]
            if s == c.end:
                fin = True
            for k in range(c.b_off[s], c.b_off[s + 1]):
                for cl in range(c.b_clo[k], c.b_chi[k] + 1):
                    c.cnt.d[cl] += 1
        total = 0
        for cl in range(c.nc):
            c.pos.d[cl] = <int32_t>total
            total += c.cnt.d[cl]
        if iv_reserve(&c.buf, total):
            return ST_NOMEM
        for i in range(nsub):
            s = sub[i]
            for k in range(c.b_off[s], c.b_off[s + 1]):
                for cl in range(c.b_clo[k], c.b_chi[k] + 1):
                    c.buf.d[c.pos.d[cl]] = c.b_dst[k]
                    c.pos.d[cl] += 1
        prev_len = -1
        prev_off = 0
        prev_dst = -1
        p = 0
        for cl in range(c.nc):
            L = c.cnt.d[cl]
            if L == 0:
                continue
            L = sort_unique(c.buf.d + p, L)
            if (L == prev_len
                    and memcmp(c.buf.d + p, c.buf.d + prev_off, L * sizeof(int32_t)) == 0):
                dst = prev_dst
            else:
                dst = target(c, c.buf.d + p, L, True, &status)
                if dst < 0:
                    return status
            c.trans.d[d * c.nc + cl] = dst
            prev_len = L
            prev_off = p
            prev_dst = dst
            p += c.cnt.d[cl]
        # call targets grouped by callee
        c.pairs.n = 0
        for i in range(nsub):
            s = sub[i]
            for k in range(c.c_off[s], c.c_off[s + 1]):
                if lv_push(&c.pairs, (<int64_t>c.c_rule[k] << 32) | <int64_t>c.c_dst[k]):
                    return ST_NOMEM
        if c.pairs.n > 1:
            qsort(c.pairs.d, c.pairs.n, sizeof(int64_t), cmp_i64)
        g = 0
        while g < c.pairs.n:
            rule = <int32_t>(c.pairs.d[g] >> 32)
            c.tmp.n = 0
            j = g
            while j < c.pairs.n and <int32_t>(c.pairs.d[j] >> 32) == rule:
                if iv_push(&c.tmp, <int32_t>(c.pairs.d[j] & <int64_t>0xFFFFFFFF)):
                    return ST_NOMEM
                j += 1
            L = sort_unique(c.tmp.d, c.tmp.n)
            dst = target(c, c.tmp.d, L, False, &status)
            if dst < 0:
                return status
            if iv_push(&c.call_src, <int32_t>d) or iv_push(&c.call_rule, rule) or iv_push(&c.call_dst, dst):
                return ST_NOMEM
            g = j
        if iv_push(&c.finals, fin):
            return ST_NOMEM
        d += 1
    return ST_OK


# ---------------------------------------------------------------------------- minimization

cdef inline int append_sig(int32_t s, const int32_t* block, const int32_t* run_off,
                           const int32_t* run_col, const int32_t* run_tgt, IVec* sig) noexcept nogil:
    """Append state ``s``'s signature: its block, then its row as maximal runs of columns whose
    targets lie in one block ((first column, block) pairs, -1 for no target).  Rows are stored
    as runs of equal targets; adjacent runs whose targets now share a block merge, so equal
    rows give equal signatures."""
    cdef isz k
    cdef int32_t t, b, prev = -2
    if iv_reserve(sig, sig.n + 1 + 2 * (run_off[s + 1] - run_off[s])):
        return -1
    sig.d[sig.n] = block[s]
    sig.n += 1
    for k in range(run_off[s], run_off[s + 1]):
        t = run_tgt[k]
        b = block[t] if t >= 0 else -1
        if b != prev:
            sig.d[sig.n] = run_col[k]
            sig.d[sig.n + 1] = b
            sig.n += 2
            prev = b
    return 0


cdef struct Moore:
    # partition: block ids, and each block's members as a doubly linked list
    int32_t* block
    int32_t* head
    int32_t* nxt
    int32_t* prv
    # predecessors (CSR), per-round marks
    int32_t* rev_off
    int32_t* rev_src
    int32_t* dmark      # state -> round it is dirty in
    int32_t* bmark      # block -> round it is affected in
    int32_t* bkeep      # block -> round its id was handed out
    IVec dirty
    IVec newid
    IVec spos           # signature offsets: dirty states, then block representatives
    IVec blocks         # affected blocks
    IVec reps           # representative (a clean member) per affected block, -1 none
    IVec changed
    IVec sig
    IVec slots


cdef void moore_free(Moore* m) noexcept nogil:
    free(m.block); free(m.head); free(m.nxt); free(m.prv); free(m.rev_off); free(m.rev_src)
    free(m.dmark); free(m.bmark); free(m.bkeep); free(m.dirty.d); free(m.newid.d)
    free(m.spos.d); free(m.blocks.d); free(m.reps.d); free(m.changed.d); free(m.sig.d)
    free(m.slots.d)


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


cdef isz moore_rounds(Moore* m, isz n, isz w, const int32_t* finals, const int32_t* run_off,
                      const int32_t* run_col, const int32_t* run_tgt, int64_t budget) noexcept nogil:
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
    # predecessors over the runs
    for i in range(n + 1):
        m.rev_off[i] = 0
    for i in range(n):
        for k in range(run_off[i], run_off[i + 1]):
            if run_tgt[k] >= 0:
                m.rev_off[run_tgt[k] + 1] += 1
    for i in range(n):
        m.rev_off[i + 1] += m.rev_off[i]
    m.rev_src = <int32_t*>malloc((m.rev_off[n] + 1) * sizeof(int32_t))
    if m.rev_src == NULL:
        return -1
    for i in range(n):
        for k in range(run_off[i], run_off[i + 1]):
            t = run_tgt[k]
            if t >= 0:
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
        nd = m.dirty.n
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
            if iv_push(&m.spos, <int32_t>m.sig.n) or append_sig(
                    m.dirty.d[i], m.block, run_off, run_col, run_tgt, &m.sig):
                return -1
        for i in range(nb_aff):
            if iv_push(&m.spos, <int32_t>m.sig.n):
                return -1
            if m.reps.d[i] >= 0 and append_sig(m.reps.d[i], m.block, run_off, run_col, run_tgt,
                                               &m.sig):
                return -1
        if iv_push(&m.spos, <int32_t>m.sig.n):
            return -1
        # group equal signatures (the block is their first element): a representative's group
        # keeps its block id, as does the first group of a block without one
        cap = 16
        while cap < 2 * (nd + nb_aff):
            cap <<= 1
        if iv_reserve(&m.slots, cap) or iv_reserve(&m.newid, nd + nb_aff):
            return -1
        for i in range(cap):
            m.slots.d[i] = -1
        next_id = n_blocks
        for j in range(nd + nb_aff):
            # representatives first (j >= nd maps to them), then the dirty states in order
            idx = <int32_t>(nd + j if j < nb_aff else j - nb_aff)
            if idx >= nd and m.reps.d[idx - nd] < 0:
                continue
            L = m.spos.d[idx + 1] - m.spos.d[idx]
            h = seq_hash(m.sig.d + m.spos.d[idx], L)
            i = <isz>(h & <uint64_t>(cap - 1))
            while True:
                e = m.slots.d[i]
                if e < 0:
                    m.slots.d[i] = idx
                    if idx >= nd:
                        b = m.blocks.d[idx - nd]
                        m.bkeep[b] = <int32_t>round_
                    else:
                        b = m.block[m.dirty.d[idx]]
                        if m.bkeep[b] != round_:
                            m.bkeep[b] = <int32_t>round_
                        else:
                            b = <int32_t>next_id
                            next_id += 1
                    m.newid.d[idx] = b
                    break
                if (m.spos.d[e + 1] - m.spos.d[e] == L and memcmp(
                        m.sig.d + m.spos.d[e], m.sig.d + m.spos.d[idx], L * sizeof(int32_t)) == 0):
                    m.newid.d[idx] = m.newid.d[e]
                    break
                i = (i + 1) & (cap - 1)
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


cdef isz minimize(Ctx* c, int32_t* blk_out, int* status) noexcept nogil:
    """Moore refinement of c's DFA; fills ``blk_out[state]`` with its block (first-appearance
    numbering, start = 0) and returns the block count (== n_dfa when nothing merges or the
    budget ran out, then ``blk_out`` is the identity).  The budget counts states x columns per
    round, as the Python twin does, so both give up on the same automata."""
    cdef isz n = c.finals.n, nc = c.nc, w, i, k, m = -1, ncal = c.call_rule.n
    cdef isz lo_i, hi_i, mid, kk, col
    cdef int32_t prev, t
    cdef int32_t* nb = NULL
    cdef int32_t* run_off = NULL
    cdef int32_t* callrow = NULL
    cdef IVec callees, run_col, run_tgt
    cdef Moore mo
    memset(&callees, 0, sizeof(IVec))
    memset(&run_col, 0, sizeof(IVec))
    memset(&run_tgt, 0, sizeof(IVec))
    for i in range(n):
        blk_out[i] = <int32_t>i
    if n < 2:
        return n
    # the callee rules called in this DFA, each its own column after the classes
    for k in range(ncal):
        if iv_push(&callees, c.call_rule.d[k]):
            status[0] = ST_NOMEM
            return -1
    callees.n = sort_unique(callees.d, callees.n)
    w = nc + callees.n
    nb = <int32_t*>malloc(n * sizeof(int32_t))
    run_off = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    callrow = <int32_t*>malloc((callees.n + 1) * sizeof(int32_t))
    if not (nb and run_off and callrow):
        status[0] = ST_NOMEM
    else:
        # each row as runs of equal targets: (first column, target)
        kk = 0
        for i in range(n):
            run_off[i] = <int32_t>run_col.n
            prev = -2
            for col in range(nc):
                t = c.trans.d[i * nc + col]
                if t != prev:
                    if iv_push(&run_col, <int32_t>col) or iv_push(&run_tgt, t):
                        status[0] = ST_NOMEM
                    prev = t
            for k in range(callees.n):
                callrow[k] = -1
            while kk < ncal and c.call_src.d[kk] == i:
                # column of this callee: binary search in the sorted callee list
                lo_i = 0
                hi_i = callees.n
                while lo_i < hi_i:
                    mid = (lo_i + hi_i) // 2
                    if callees.d[mid] < c.call_rule.d[kk]:
                        lo_i = mid + 1
                    else:
                        hi_i = mid
                callrow[lo_i] = c.call_dst.d[kk]
                kk += 1
            for k in range(callees.n):
                t = callrow[k]
                if t != prev:
                    if iv_push(&run_col, <int32_t>(nc + k)) or iv_push(&run_tgt, t):
                        status[0] = ST_NOMEM
                    prev = t
        run_off[n] = <int32_t>run_col.n
    if status[0] == ST_OK:
        memset(&mo, 0, sizeof(Moore))
        mo.block = <int32_t*>malloc(n * sizeof(int32_t))
        mo.head = <int32_t*>malloc(n * sizeof(int32_t))
        mo.nxt = <int32_t*>malloc(n * sizeof(int32_t))
        mo.prv = <int32_t*>malloc(n * sizeof(int32_t))
        mo.rev_off = <int32_t*>malloc((n + 1) * sizeof(int32_t))
        mo.dmark = <int32_t*>malloc(n * sizeof(int32_t))
        mo.bmark = <int32_t*>malloc(n * sizeof(int32_t))
        mo.bkeep = <int32_t*>malloc(n * sizeof(int32_t))
        if not (mo.block and mo.head and mo.nxt and mo.prv and mo.rev_off and mo.dmark
                and mo.bmark and mo.bkeep):
            m = -1
        else:
            m = moore_rounds(&mo, n, w, c.finals.d, run_off, run_col.d, run_tgt.d, c.budget)
        if m < 0:
            status[0] = ST_NOMEM
        elif m == n:
            pass
        else:
            # renumber by first appearance (start stays 0); nb reused as the block -> new map
            for i in range(n):
                nb[i] = -1
            m = 0
            for i in range(n):
                if nb[mo.block[i]] < 0:
                    nb[mo.block[i]] = <int32_t>m
                    m += 1
                blk_out[i] = nb[mo.block[i]]
        moore_free(&mo)
    free(nb)
    free(run_off)
    free(callrow)
    free(callees.d)
    free(run_col.d)
    free(run_tgt.d)
    return m if status[0] == ST_OK else -1


cdef int emit(Ctx* c, const int32_t* blk, isz m, IVec* g_trans, IVec* g_final, IVec* g_csrc,
              IVec* g_crule, IVec* g_cdst, int32_t base) noexcept nogil:
    """Append the quotient DFA (blocks ``blk``, ``m`` of them) to the global arrays."""
    cdef isz n = c.finals.n, nc = c.nc, i, k, b, t0 = g_trans.n
    cdef int32_t t
    cdef int32_t* seen = <int32_t*>malloc((m + 1) * sizeof(int32_t))
    if seen == NULL:
        return -1
    for b in range(m):
        seen[b] = -1
    if iv_reserve(g_trans, t0 + m * nc) or iv_reserve(g_final, g_final.n + m):
        free(seen)
        return -1
    # each block's representative: its first state (blocks are numbered by first appearance)
    for i in range(n):
        b = blk[i]
        if seen[b] >= 0:
            continue
        seen[b] = <int32_t>i
        for k in range(nc):
            t = c.trans.d[i * nc + k]
            g_trans.d[t0 + b * nc + k] = blk[t] + base if t >= 0 else -1
        g_final.d[g_final.n + b] = c.finals.d[i]
    g_trans.n = t0 + m * nc
    g_final.n += m
    for k in range(c.call_src.n):
        i = c.call_src.d[k]
        if seen[blk[i]] != i:
            continue
        if (iv_push(g_csrc, blk[i] + base) or iv_push(g_crule, c.call_rule.d[k])
                or iv_push(g_cdst, blk[c.call_dst.d[k]] + base)):
            free(seen)
            return -1
    free(seen)
    return 0


cdef object to_array(IVec* v, object dtype):
    out = np.empty(v.n, dtype=np.int32)
    cdef int32_t[::1] o = out
    if v.n:
        memcpy(&o[0], v.d, v.n * sizeof(int32_t))
    return out.astype(dtype, copy=False)


def build_rule_dfas(const int32_t[::1] eps_off, const int32_t[::1] eps_dst,
                    const int32_t[::1] b_off, const int32_t[::1] b_clo, const int32_t[::1] b_chi,
                    const int32_t[::1] b_dst, const int32_t[::1] c_off, const int32_t[::1] c_rule,
                    const int32_t[::1] c_dst, const int32_t[::1] r_start, const int32_t[::1] r_end,
                    int n_classes, int64_t max_states, int64_t held_cap, int64_t total_so_far,
                    int64_t budget, double seconds_left):
    """Determinize and minimize every rule (NFA in CSR form, byte edges as class ranges).

    Returns ``(status, bad_rule, rule_base, trans, finals, call_src, call_rule, call_dst)``:
    rule ``r`` owns global states ``rule_base[r] .. rule_base[r + 1]`` (its start first),
    ``trans`` is ``n x n_classes`` (global targets, -1 none), ``finals`` uint8, and the calls
    are (global state, callee rule index, global return state) triples.
    """
    cdef Ctx c
    cdef isz n_nfa = eps_off.shape[0] - 1, R = r_start.shape[0], r, m
    cdef int status = ST_OK
    cdef int32_t bad = -1
    cdef IVec g_trans, g_final, g_csrc, g_crule, g_cdst, rule_base
    cdef int32_t* blk = NULL
    cdef isz blk_cap = 0
    memset(&c, 0, sizeof(Ctx))
    memset(&g_trans, 0, sizeof(IVec))
    memset(&g_final, 0, sizeof(IVec))
    memset(&g_csrc, 0, sizeof(IVec))
    memset(&g_crule, 0, sizeof(IVec))
    memset(&g_cdst, 0, sizeof(IVec))
    memset(&rule_base, 0, sizeof(IVec))
    if n_nfa == 0:
        raise ValueError("empty NFA")
    c.eps_off = &eps_off[0]
    c.eps_dst = &eps_dst[0] if eps_dst.shape[0] else NULL
    c.b_off = &b_off[0]
    c.b_clo = &b_clo[0] if b_clo.shape[0] else NULL
    c.b_chi = &b_chi[0] if b_chi.shape[0] else NULL
    c.b_dst = &b_dst[0] if b_dst.shape[0] else NULL
    c.c_off = &c_off[0]
    c.c_rule = &c_rule[0] if c_rule.shape[0] else NULL
    c.c_dst = &c_dst[0] if c_dst.shape[0] else NULL
    c.nc = n_classes
    c.max_states = max_states
    c.held_cap = held_cap
    c.total_so_far = total_so_far
    c.budget = budget
    c.mark = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    try:
        with nogil:
            c.deadline = xm_now() + seconds_left if seconds_left >= 0 else -1.0
            if c.mark == NULL or sm_init(&c.index) or sm_init(&c.memo):
                status = ST_NOMEM
            else:
                memset(c.mark, 0, n_nfa * sizeof(int32_t))
                if iv_push(&rule_base, 0):
                    status = ST_NOMEM
            r = 0
            while status == ST_OK and r < R:
                c.end = r_end[r]
                status = determinize(&c, r_start[r])
                if status == ST_OK:
                    if c.finals.n > blk_cap:
                        free(blk)
                        blk_cap = c.finals.n * 2
                        blk = <int32_t*>malloc(blk_cap * sizeof(int32_t))
                        if blk == NULL:
                            status = ST_NOMEM
                if status == ST_OK:
                    m = minimize(&c, blk, &status)
                    if m >= 0 and emit(&c, blk, m, &g_trans, &g_final, &g_csrc, &g_crule, &g_cdst,
                                       rule_base.d[rule_base.n - 1]):
                        status = ST_NOMEM
                if status == ST_OK:
                    c.total_so_far += m
                    if iv_push(&rule_base, rule_base.d[rule_base.n - 1] + <int32_t>m):
                        status = ST_NOMEM
                if status != ST_OK:
                    bad = <int32_t>r
                r += 1
        if status == ST_NOMEM:
            raise MemoryError()
        return (status, bad, to_array(&rule_base, np.int32), to_array(&g_trans, np.int32),
                to_array(&g_final, np.uint8), to_array(&g_csrc, np.int32),
                to_array(&g_crule, np.int32), to_array(&g_cdst, np.int32))
    finally:
        free(c.mark)
        free(blk)
        sm_free(&c.index)
        sm_free(&c.memo)
        free(c.stack.d); free(c.clos.d); free(c.trans.d); free(c.finals.d)
        free(c.call_src.d); free(c.call_rule.d); free(c.call_dst.d); free(c.cur.d)
        free(c.cnt.d); free(c.pos.d); free(c.buf.d); free(c.tmp.d); free(c.pairs.d)
        free(g_trans.d); free(g_final.d); free(g_csrc.d); free(g_crule.d); free(g_cdst.d)
        free(rule_base.d)
