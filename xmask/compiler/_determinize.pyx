"""Compile-time kernel: per-rule subset construction, then minimization, GIL released.

Input is every rule's Thompson NFA as flat CSR arrays (epsilon edges, byte edges as inclusive
byte ranges with the grammar's byte classes, call edges as (callee rule, target)).  Each rule is
determinized (a DFA state is the sorted list of NFA states of an epsilon closure that have an
outgoing edge, plus the rule's end), minimized (``_minimize``: Moore rounds, capped by a work
budget like the Python twin in ``dfa_reference``), and appended to one global numbering.  DFA
states are numbered in discovery order (classes ascending, then callees ascending), minimized
blocks by first appearance, so the start state of each rule is its first state.

Work follows the edges, not the classes: a DFA state's row is built from its NFA states' sorted
byte edges (``row_of``) and kept as runs of classes with one target (a row has ~7 runs for ~90
classes) through minimization, until the dense ``states x classes`` table is written once at
the end.

Limits are reported, not raised (no GIL here): ``status`` 1 = more DFA states than
``max_states`` (``total_so_far`` + this rule's), 2 = the subsets hold more than ``held_cap`` NFA
states, 3 = the deadline passed, 4 = out of memory, 5 = the kernel's tables would pass
``mem_cap`` bytes (checked before each new DFA state and subset is stored, so the cap holds by
construction); ``bad_rule`` names the rule.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, malloc, free, qsort, realloc

from cython.view cimport array as cvarray
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.string cimport memcpy, memset

from xmask.runtime._intseq cimport cmp_i64, insertion_sort, sort_unique
from xmask.compiler._ivec cimport IVec, LVec, ints_eq, ints_hash, iv_reserve, iv_push, lv_reserve, lv_push
from xmask.compiler._minimize cimport MinWork, Moore, merged_runs, minimize_dfa, minwork_free

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
    ST_MEMORY = 5


# ------------------------------------------------------- map: int32 sequence -> int32 value

cdef struct SeqMap:
    int32_t* slots   # entry index, -1 = empty
    isz cap          # power of two
    IVec pool        # keys, concatenated
    LVec off         # entry i's key is pool[off[i] : off[i + 1]]
    IVec val
    LVec hsh


cdef int sm_init(SeqMap* m, isz hint) noexcept nogil:
    """An empty map sized for about ``hint`` entries of a few ints each."""
    memset(m, 0, sizeof(SeqMap))
    m.cap = 64
    while m.cap < 2 * hint:
        m.cap *= 2
    if (iv_reserve(&m.pool, 4 * hint) or lv_reserve(&m.off, hint + 1) or iv_reserve(&m.val, hint)
            or lv_reserve(&m.hsh, hint)):
        return -1
    m.slots = <int32_t*>malloc(m.cap * sizeof(int32_t))
    if m.slots == NULL:
        return -1
    memset(m.slots, 0xFF, m.cap * sizeof(int32_t))
    return lv_push(&m.off, 0)


cdef void sm_clear(SeqMap* m) noexcept nogil:
    cdef isz e, i
    if 8 * m.val.n < m.cap:
        # few entries in a table grown by an earlier, larger rule: empty their slots only
        # (a rule's probe never stops at an emptied slot here: it looks for its own entry)
        for e in range(m.val.n):
            i = <isz>(<uint64_t>m.hsh.d[e] & <uint64_t>(m.cap - 1))
            while m.slots[i] != e:
                i = (i + 1) & (m.cap - 1)
            m.slots[i] = -1
    else:
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
                and ints_eq(m.pool.d + m.off.d[e], k, n)):
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
    const int32_t* b_lo  # byte edges as inclusive byte ranges, classes by bclass
    const int32_t* b_hi
    const uint8_t* bclass
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
    int64_t mem_cap       # bytes the tables below may hold (<= 0: none)
    int64_t mem_base      # bytes of the rules emitted so far (global tables)
    # closure scratch
    int32_t* mark
    # singleton raw target sets {t} -> DFA state, valid when one_gen[t] == gen (the rule
    # being determinized): the common case of target(), answered without hashing
    int32_t* one_val
    int32_t* one_gen
    int32_t gen
    int32_t stamp
    IVec stack
    IVec clos
    # per-rule DFA under construction; state d's row is the runs run_off[d] .. run_off[d + 1]
    # (first class, target or -1), covering the classes 0 .. nc in order, adjacent runs
    # differing in target
    SeqMap index         # subset -> DFA state (entry i <-> state i)
    SeqMap memo          # raw target set -> DFA state
    IVec run_off
    IVec run_col
    IVec run_tgt
    IVec finals
    IVec call_src
    IVec call_rule
    IVec call_dst
    int64_t held
    # per-state scratch
    IVec cur
    LVec ev              # byte edge events of the state being expanded (row_of)
    LVec ev2             # sort_keys' scratch
    LVec evend           # row_sweep: the edges' ends
    IVec cnt
    int32_t* acnt        # NFA state -> live edges to it at the sweep position (zero between rows)
    IVec act             # the raw targets live at the sweep position, ascending
    IVec prev            # the last non-empty target set row_of looked up
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


cdef inline int64_t held_bytes(const Ctx* c) noexcept nogil:
    # What this rule's construction holds (rows, both subset maps with their offsets, hashes
    # and values) plus the rules emitted before it; the closure scratch is bounded by the NFA
    # size.
    return (c.mem_base + 4 * (c.run_off.n + 2 * c.run_col.n + c.index.pool.n + c.memo.pool.n)
            + 20 * (c.index.val.n + c.memo.val.n) + 4 * (c.index.cap + c.memo.cap))


cdef int32_t target(Ctx* c, const int32_t* raw, isz n, bint check_states, int* status) noexcept nogil:
    """The DFA state reached on the raw NFA target set ``raw`` (created if new), or -1."""
    cdef uint64_t h, h2
    cdef int32_t v
    cdef isz nd
    if n == 1 and c.one_gen[raw[0]] == c.gen:
        return c.one_val[raw[0]]
    h = ints_hash(raw, n)
    v = sm_get(&c.memo, raw, n, h)
    if v >= 0:
        return v
    if c.mem_cap > 0 and held_bytes(c) + 4 * (n + 2) > c.mem_cap:
        status[0] = ST_MEMORY
        return -1
    if closure(c, raw, n):
        status[0] = ST_NOMEM
        return -1
    h2 = ints_hash(c.clos.d, c.clos.n)
    v = sm_get(&c.index, c.clos.d, c.clos.n, h2)
    if v < 0:
        nd = c.index.val.n
        v = <int32_t>nd
        if sm_put(&c.index, c.clos.d, c.clos.n, h2, v):
            status[0] = ST_NOMEM
            return -1
        if check_states and c.total_so_far + nd + 1 > c.max_states:
            status[0] = ST_STATES
            return -1
        c.held += c.clos.n
        if c.held > c.held_cap:
            status[0] = ST_HELD
            return -1
    if n == 1:
        c.one_gen[raw[0]] = c.gen
        c.one_val[raw[0]] = v
    elif sm_put(&c.memo, raw, n, h, v):
        status[0] = ST_NOMEM
        return -1
    return v


cdef int determinize(Ctx* c, int32_t start) noexcept nogil:
    """Subset construction of one rule into c.run_* / c.finals / c.call_*; returns a status."""
    cdef int status = ST_OK
    cdef isz d = 0, i, nsub, work = 0
    cdef const int32_t* sub
    cdef bint fin
    sm_clear(&c.index)
    sm_clear(&c.memo)
    c.gen += 1
    c.run_off.n = 0
    c.run_col.n = 0
    c.run_tgt.n = 0
    c.finals.n = 0
    c.call_src.n = 0
    c.call_rule.n = 0
    c.call_dst.n = 0
    c.held = 0
    if target(c, &start, 1, False, &status) < 0:
        return status
    while d < c.index.val.n:
        nsub = c.index.off.d[d + 1] - c.index.off.d[d]
        # the deadline every 256 states, and every ~64k subset members: a state's cost grows
        # with its subset, and huge subsets (ambiguous repeats) made 256 states take minutes
        work += nsub + 1
        if (not (d & 255) or work >= 65536) and c.deadline >= 0:
            work = 0
            if xm_now() > c.deadline:
                return ST_DEADLINE
        c.cur.n = 0
        if iv_reserve(&c.cur, nsub):
            return ST_NOMEM
        memcpy(c.cur.d, c.index.pool.d + c.index.off.d[d], nsub * sizeof(int32_t))
        c.cur.n = nsub
        sub = c.cur.d
        fin = False
        for i in range(nsub):
            if sub[i] == c.end:
                fin = True
        if iv_push(&c.run_off, <int32_t>c.run_col.n):
            return ST_NOMEM
        status = row_of(c, sub, nsub)
        if status != ST_OK:
            return status
        status = calls_of(c, d, sub, nsub)
        if status != ST_OK:
            return status
        if iv_push(&c.finals, fin):
            return ST_NOMEM
        d += 1
    if iv_push(&c.run_off, <int32_t>c.run_col.n):
        return ST_NOMEM
    return ST_OK


cdef int sort_keys(LVec* v, LVec* scratch, IVec* cnt_buf, isz nc, int shift) noexcept nogil:
    """Sort ``v`` by class, the keys' bits from ``shift`` up (< nc + 1; the order within a class
    does not matter to row_of): insertion for the usual handful of keys, counting by class for
    many (``v`` and ``scratch`` may swap buffers)."""
    cdef isz i, j, n = v.n
    cdef int64_t* a = v.d
    cdef int32_t* cnt
    cdef LVec tmp
    if n <= 24:
        insertion_sort(a, n)
        return 0
    if iv_reserve(cnt_buf, nc + 2) or lv_reserve(scratch, n):
        return -1
    cnt = cnt_buf.d
    memset(cnt, 0, (nc + 2) * sizeof(int32_t))
    for i in range(n):
        cnt[(a[i] >> shift) + 1] += 1
    for i in range(nc + 1):
        cnt[i + 1] += cnt[i]
    for i in range(n):
        j = <isz>(a[i] >> shift)
        scratch.d[cnt[j]] = a[i]
        cnt[j] += 1
    tmp = v[0]
    v[0] = scratch[0]
    scratch[0] = tmp
    v.n = n
    return 0


cdef inline void put_run(Ctx* c, int32_t col, int32_t dst) noexcept nogil:
    # room reserved by row_of
    c.run_col.d[c.run_col.n] = col
    c.run_tgt.d[c.run_tgt.n] = dst
    c.run_col.n += 1
    c.run_tgt.n += 1


cdef int row_of(Ctx* c, const int32_t* sub, isz nsub) noexcept nogil:
    """Append the row of the DFA state whose subset is ``sub`` to c.run_col / c.run_tgt.

    Work in proportion to the byte edges, not the classes.  The edges, as (first class, last
    class, NFA target) keys sorted by class, usually give each class at most one target
    (chains of pasted item DFAs, keys, literals): then each edge is a run, its target the DFA
    state of {NFA target}.  Otherwise :func:`row_sweep`.  Either way target() sees the raw
    target sets in class order (the numbering of new states)."""
    cdef isz i, k, n
    cdef int64_t e
    cdef int32_t s, t, lo, hi, end = -1, cur = -1, dst, last = -2, prev_raw = -1, prev_dst = -1
    cdef int status = ST_OK
    cdef int64_t* ev
    c.ev.n = 0
    for i in range(nsub):
        s = sub[i]
        if lv_reserve(&c.ev, c.ev.n + (c.b_off[s + 1] - c.b_off[s])):
            return ST_NOMEM
        for k in range(c.b_off[s], c.b_off[s + 1]):
            c.ev.d[c.ev.n] = ((<int64_t>c.bclass[c.b_lo[k]] << 41)
                              | (<int64_t>c.bclass[c.b_hi[k]] << 32) | c.b_dst[k])
            c.ev.n += 1
    n = c.ev.n
    if c.mem_cap > 0 and held_bytes(c) + 16 * (n + 1) > c.mem_cap:
        return ST_MEMORY
    if (iv_reserve(&c.run_col, c.run_col.n + 2 * n + 1)
            or iv_reserve(&c.run_tgt, c.run_tgt.n + 2 * n + 1)
            or sort_keys(&c.ev, &c.ev2, &c.cnt, c.nc, 41)):
        return ST_NOMEM
    ev = c.ev.d
    # one target per class?  (sorted by first class, the edges overlap only the run before)
    for i in range(n):
        e = ev[i]
        lo = <int32_t>(e >> 41)
        hi = <int32_t>((e >> 32) & 0x1FF)
        t = <int32_t>(e & <int64_t>0xFFFFFFFF)
        if lo <= end:
            if t != cur:
                return row_sweep(c)
            if hi > end:
                end = hi
        else:
            end = hi
            cur = t
    end = -1
    for i in range(n):
        e = ev[i]
        lo = <int32_t>(e >> 41)
        hi = <int32_t>((e >> 32) & 0x1FF)
        t = <int32_t>(e & <int64_t>0xFFFFFFFF)
        if lo > end + 1:  # classes no edge reads (before the first edge too: end = -1)
            if last != -1:
                put_run(c, end + 1, -1)
                last = -1
        if t == prev_raw:
            dst = prev_dst
        else:
            dst = target(c, &t, 1, True, &status)
            if dst < 0:
                return status
            prev_raw = t
            prev_dst = dst
        if dst != last:  # (an edge overlapping the run before has its target: no new run)
            put_run(c, lo, dst)
            last = dst
        if hi > end:
            end = hi
    if end < c.nc - 1 and last != -1:
        put_run(c, end + 1, -1)
    return ST_OK


cdef int row_sweep(Ctx* c) noexcept nogil:
    """row_of for a state where some class has several NFA targets (its edge keys sorted in
    c.ev): a sweep over the classes.  Each edge starts at its first class and ends one past
    its last (the ends sorted apart, in c.evend); between two such positions the live NFA
    targets, kept ascending, are the raw target set of every class there, and a set equal to
    the previous non-empty one is not looked up again."""
    cdef isz i = 0, j, q = 0, n = c.ev.n
    cdef int64_t e
    cdef int32_t t, pos, dst, last = -2, prev_dst = -1
    cdef int status = ST_OK
    cdef int64_t* st
    cdef int64_t* en
    cdef int32_t* act
    if (lv_reserve(&c.evend, n) or iv_reserve(&c.act, n + 1) or iv_reserve(&c.prev, n + 1)):
        return ST_NOMEM
    for i in range(n):
        e = c.ev.d[i]
        c.evend.d[i] = ((((e >> 32) & 0x1FF) + 1) << 33) | (e & <int64_t>0xFFFFFFFF)
    c.evend.n = n
    if sort_keys(&c.evend, &c.ev2, &c.cnt, c.nc, 33):
        return ST_NOMEM
    st = c.ev.d
    en = c.evend.d
    act = c.act.d
    c.act.n = 0
    c.prev.n = 0
    if (st[0] >> 41) > 0:
        put_run(c, 0, -1)
        last = -1
    i = 0
    while q < n:
        # the next position: the next end or start, whichever comes first
        pos = <int32_t>(en[q] >> 33)
        if i < n and <int32_t>(st[i] >> 41) < pos:
            pos = <int32_t>(st[i] >> 41)
        while q < n and <int32_t>(en[q] >> 33) == pos:
            t = <int32_t>(en[q] & <int64_t>0xFFFFFFFF)
            c.acnt[t] -= 1
            if c.acnt[t] == 0:
                j = 0
                while act[j] != t:
                    j += 1
                c.act.n -= 1
                while j < c.act.n:
                    act[j] = act[j + 1]
                    j += 1
            q += 1
        while i < n and <int32_t>(st[i] >> 41) == pos:
            t = <int32_t>(st[i] & <int64_t>0xFFFFFFFF)
            c.acnt[t] += 1
            if c.acnt[t] == 1:
                j = c.act.n
                while j > 0 and act[j - 1] > t:
                    act[j] = act[j - 1]
                    j -= 1
                act[j] = t
                c.act.n += 1
            i += 1
        if pos >= c.nc:
            break
        if c.act.n == 0:
            dst = -1
        elif c.act.n == c.prev.n and ints_eq(act, c.prev.d, c.act.n):
            dst = prev_dst
        else:
            dst = target(c, act, c.act.n, True, &status)
            if dst < 0:
                return status
            memcpy(c.prev.d, act, c.act.n * sizeof(int32_t))
            c.prev.n = c.act.n
            prev_dst = dst
        if dst != last:
            put_run(c, pos, dst)
            last = dst
    return ST_OK


cdef int calls_of(Ctx* c, isz d, const int32_t* sub, isz nsub) noexcept nogil:
    """State ``d``'s calls, targets grouped by callee (c.call_*)."""
    cdef isz i, k, g, j, L
    cdef int32_t s, rule, dst
    cdef int status = ST_OK
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
    return ST_OK


# -------------------------------------------------------------------------------- assembly

cdef struct Out:
    # the rules emitted so far, global numbering: state g's row is the runs
    # roff[g] .. roff[g + 1] of (rcol, rtgt), spread into the dense table once at the end
    IVec roff
    IVec rcol
    IVec rtgt
    IVec final
    IVec csrc
    IVec crule
    IVec cdst
    IVec seen


cdef int emit(Ctx* c, const int32_t* blk, isz m, Out* o, int32_t base) noexcept nogil:
    """Append the quotient DFA (blocks ``blk``, ``m`` of them) to ``o``: each block's row is
    its first state's (blocks are numbered by first appearance, so they come in order)."""
    cdef isz n = c.finals.n, i, k, b, nb = 0
    cdef int32_t* seen
    if (iv_reserve(&o.seen, m) or iv_reserve(&o.rcol, o.rcol.n + c.run_col.n)
            or iv_reserve(&o.rtgt, o.rtgt.n + c.run_col.n) or iv_reserve(&o.roff, o.roff.n + m)
            or iv_reserve(&o.final, o.final.n + m)):
        return -1
    seen = o.seen.d
    for b in range(m):
        seen[b] = -1
    for i in range(n):
        b = blk[i]
        if seen[b] >= 0:
            continue
        seen[b] = <int32_t>i
        nb += 1
        o.roff.d[o.roff.n] = <int32_t>o.rcol.n
        o.roff.n += 1
        # two targets merged into one block: one run
        o.rcol.n += merged_runs(c.run_col.d, c.run_tgt.d, c.run_off.d[i], c.run_off.d[i + 1],
                                blk, base, o.rcol.d + o.rcol.n, o.rtgt.d + o.rcol.n, 1)
        o.final.d[o.final.n] = c.finals.d[i]
        o.final.n += 1
        if nb == m:
            break
    o.rtgt.n = o.rcol.n
    for k in range(c.call_src.n):
        i = c.call_src.d[k]
        if seen[blk[i]] != i:
            continue
        if (iv_push(&o.csrc, blk[i] + base) or iv_push(&o.crule, c.call_rule.d[k])
                or iv_push(&o.cdst, blk[c.call_dst.d[k]] + base)):
            return -1
    return 0


cdef void dense_table(const Out* o, isz nc, int32_t* trans) noexcept nogil:
    """The emitted rows (``o.roff`` closed: n + 1 offsets) as the dense ``states x nc`` table
    (-1 for no target), written to ``trans``."""
    cdef isz ns = o.roff.n - 1, g, k, k1, col, hi
    cdef int32_t t
    cdef int32_t* row
    for g in range(ns):
        row = trans + g * nc
        k1 = o.roff.d[g + 1]
        for k in range(o.roff.d[g], k1):
            col = o.rcol.d[k]
            hi = o.rcol.d[k + 1] if k + 1 < k1 else nc
            t = o.rtgt.d[k]
            if t < 0:
                memset(row + col, 0xFF, (hi - col) * sizeof(int32_t))
            else:
                while col < hi:
                    row[col] = t
                    col += 1


cdef object to_array(IVec* v, object dtype):
    """A copy of ``v`` as a new int32 or uint8 (``dtype``) numpy array.  Written through the
    buffer protocol: a typed memoryview and an ``astype`` per array cost ~0.5 us, and a compile
    copies out eight arrays."""
    cdef Py_buffer buf
    cdef isz i
    cdef uint8_t* u
    cdef bint narrow = dtype is not np.int32
    out = np.empty(v.n, dtype=np.uint8 if narrow else np.int32)
    if v.n == 0:
        return out
    PyObject_GetBuffer(out, &buf, PyBUF_WRITABLE)
    if narrow:
        u = <uint8_t*>buf.buf
        for i in range(v.n):
            u[i] = <uint8_t>v.d[i]
    else:
        memcpy(buf.buf, v.d, v.n * sizeof(int32_t))
    PyBuffer_Release(&buf)
    return out


cdef object take_array(IVec* v):
    """``v``'s data as an int32 numpy array: a small one copied (``v`` keeps its buffer, which
    its owner frees), a large one without a copy (the buffer, shrunk to its length, is handed
    to the array, which frees it; ``v`` is left empty)."""
    cdef int32_t* p
    cdef cvarray holder
    if v.n == 0:
        return np.empty(0, dtype=np.int32)
    if v.n <= 65536:
        # a small grammar's arrays: a copy (memcpy of at most 256 KB) costs less than wrapping
        # the buffer (a cvarray and the buffer protocol, ~1.5 us per array of every compile)
        return to_array(v, np.int32)
    p = <int32_t*>realloc(v.d, v.n * sizeof(int32_t))
    if p == NULL:
        p = v.d  # keeping the larger block is fine
    holder = cvarray(shape=(v.n,), itemsize=sizeof(int32_t), format="i", mode="c",
                     allocate_buffer=False)
    holder.data = <char*>p
    holder.callback_free_data = free
    v.d = NULL
    v.n = v.cap = 0
    return np.asarray(holder)


cdef int presize(Ctx* c, Out* o, MinWork* wk, isz n_nfa, isz n_edges, isz n_calls) noexcept nogil:
    """Reserve the growing arrays for a small grammar at once (a rule's DFA rarely has more
    states than the grammar has NFA states, its rows more runs than twice the edges): growing
    each from empty costs ~150 reallocs.  Capped: a large grammar's arrays grow as needed (a
    large first reservation is fresh memory, slower to touch than a heap block grown into)."""
    cdef isz hs = min(n_nfa, 1024) + 16, he = 2 * min(n_edges, 1024) + 16
    cdef Moore* mo = &wk.mo
    if (iv_reserve(&c.stack, hs) or iv_reserve(&c.clos, hs) or iv_reserve(&c.cur, 256)
            or iv_reserve(&c.run_off, hs + 1) or iv_reserve(&c.run_col, he)
            or iv_reserve(&c.run_tgt, he) or iv_reserve(&c.finals, hs)
            or iv_reserve(&c.call_src, n_calls + 16) or iv_reserve(&c.call_rule, n_calls + 16)
            or iv_reserve(&c.call_dst, n_calls + 16) or lv_reserve(&c.ev, 256)
            or lv_reserve(&c.ev2, 256) or iv_reserve(&c.cnt, 258) or iv_reserve(&c.act, 128)
            or iv_reserve(&c.prev, 128) or lv_reserve(&c.pairs, 64) or iv_reserve(&c.tmp, 64)
            or iv_reserve(&o.roff, hs + 1) or iv_reserve(&o.rcol, he) or iv_reserve(&o.rtgt, he)
            or iv_reserve(&o.final, hs) or iv_reserve(&o.seen, hs)
            or iv_reserve(&o.csrc, n_calls + 16) or iv_reserve(&o.crule, n_calls + 16)
            or iv_reserve(&o.cdst, n_calls + 16)
            or iv_reserve(&wk.callees, 64) or iv_reserve(&wk.arena, 11 * hs + 3)
            or iv_reserve(&wk.rev_src, he + n_calls + 1) or iv_reserve(&mo.dirty, hs)
            or iv_reserve(&mo.newid, 2 * hs) or iv_reserve(&mo.spos, 2 * hs + 1)
            or iv_reserve(&mo.blocks, hs) or iv_reserve(&mo.reps, hs)
            or iv_reserve(&mo.changed, hs) or iv_reserve(&mo.sig, 4 * he + 2 * hs)
            or iv_reserve(&mo.slots, 4 * hs + 16) or iv_reserve(&mo.gsize, 2 * hs)):
        return -1
    return 0


def build_rule_dfas(const int32_t[::1] eps_off, const int32_t[::1] eps_dst,
                    const int32_t[::1] b_off, const int32_t[::1] b_lo, const int32_t[::1] b_hi,
                    const int32_t[::1] b_dst, const int32_t[::1] c_off, const int32_t[::1] c_rule,
                    const int32_t[::1] c_dst, const int32_t[::1] r_start, const int32_t[::1] r_end,
                    const uint8_t[::1] byte_class, int64_t max_states, int64_t held_cap, int64_t total_so_far,
                    int64_t budget, double seconds_left, int64_t mem_cap=0):
    """Determinize and minimize every rule (NFA in CSR form, byte edges as inclusive byte
    ranges, ``byte_class`` (uint8[256], numbered by first byte) the grammar's byte classes).

    Returns ``(status, bad_rule, rule_base, trans, finals, call_src, call_rule, call_dst,
    runs)``:
    rule ``r`` owns global states ``rule_base[r] .. rule_base[r + 1]`` (its start first),
    ``trans`` is ``n x n_classes`` (global targets, -1 none; ``n_classes`` =
    ``max(byte_class) + 1``), ``finals`` uint8, and the calls
    are (global state, callee rule index, global return state) triples; ``runs`` is
    ``(run_off, run_col, run_tgt)``, the rows of ``trans`` as the kernel built them: state
    ``s``'s row is the runs ``run_off[s] .. run_off[s + 1]`` (first class, target or -1),
    covering the classes in order, adjacent runs differing in target (the passes that read
    every row read these instead of the dense table).
    """
    cdef Ctx c
    cdef Out o
    cdef isz n_nfa = eps_off.shape[0] - 1, R = r_start.shape[0], r, m
    cdef int status = ST_OK
    cdef int32_t bad = -1
    cdef IVec rule_base
    cdef Py_buffer tbuf
    cdef int32_t* blk = NULL
    cdef isz blk_cap = 0
    cdef MinWork wk
    memset(&wk, 0, sizeof(MinWork))
    memset(&c, 0, sizeof(Ctx))
    memset(&o, 0, sizeof(Out))
    memset(&rule_base, 0, sizeof(IVec))
    cdef int n_classes = 0
    if n_nfa == 0:
        raise ValueError("empty NFA")
    if byte_class.shape[0] != 256:
        raise ValueError("byte_class must have 256 entries")
    for r in range(256):
        if byte_class[r] + 1 > n_classes:
            n_classes = byte_class[r] + 1
    c.bclass = &byte_class[0]
    c.eps_off = &eps_off[0]
    c.eps_dst = &eps_dst[0] if eps_dst.shape[0] else NULL
    c.b_off = &b_off[0]
    c.b_lo = &b_lo[0] if b_lo.shape[0] else NULL
    c.b_hi = &b_hi[0] if b_hi.shape[0] else NULL
    c.b_dst = &b_dst[0] if b_dst.shape[0] else NULL
    c.c_off = &c_off[0]
    c.c_rule = &c_rule[0] if c_rule.shape[0] else NULL
    c.c_dst = &c_dst[0] if c_dst.shape[0] else NULL
    c.nc = n_classes
    c.max_states = max_states
    c.held_cap = held_cap
    c.total_so_far = total_so_far
    c.budget = budget
    c.mem_cap = mem_cap
    c.mark = <int32_t*>calloc(n_nfa, sizeof(int32_t))
    c.one_val = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    c.one_gen = <int32_t*>calloc(n_nfa, sizeof(int32_t))
    c.acnt = <int32_t*>calloc(n_nfa, sizeof(int32_t))
    try:
        with nogil:
            c.deadline = xm_now() + seconds_left if seconds_left >= 0 else -1.0
            if (c.mark == NULL or c.one_val == NULL or c.one_gen == NULL or c.acnt == NULL
                    or sm_init(&c.index, min(n_nfa, 1024))
                    or sm_init(&c.memo, min(n_nfa, 1024) // 4)
                    or presize(&c, &o, &wk, n_nfa, b_lo.shape[0], c_rule.shape[0])
                    or iv_reserve(&rule_base, R + 1) or iv_push(&rule_base, 0)):
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
                    m = minimize_dfa(c.finals.n, c.nc, c.run_off.d, c.run_col.d, c.run_tgt.d,
                                     c.finals.d, c.call_src.d, c.call_rule.d, c.call_dst.d,
                                     c.call_rule.n, c.budget, blk, &wk)
                    if m < 0 or emit(&c, blk, m, &o, rule_base.d[rule_base.n - 1]):
                        status = ST_NOMEM
                if status == ST_OK:
                    c.total_so_far += m
                    # emitted rules: their rows, then the dense table and the other arrays
                    # copied out at the end
                    c.mem_base = 4 * (o.roff.n + o.rcol.n + o.rtgt.n + o.roff.n * n_classes) \
                        + 2 * 4 * (o.final.n + o.csrc.n + o.crule.n + o.cdst.n)
                    if mem_cap > 0 and c.mem_base > mem_cap:
                        status = ST_MEMORY
                    if iv_push(&rule_base, rule_base.d[rule_base.n - 1] + <int32_t>m):
                        status = ST_NOMEM
                if status != ST_OK:
                    bad = <int32_t>r
                r += 1
            # close o.roff: the runs' offsets, n + 1 of them
            if status == ST_OK and iv_push(&o.roff, <int32_t>o.rcol.n):
                status = ST_NOMEM
        if status == ST_NOMEM:
            raise MemoryError()
        # The dense table, the largest output, is written straight into its numpy array: a
        # kernel buffer copied out afterwards cost a second pass over it and a malloc
        trans = np.empty((o.roff.n - 1) * n_classes if status == ST_OK else 0, dtype=np.int32)
        if trans.shape[0]:
            PyObject_GetBuffer(trans, &tbuf, PyBUF_WRITABLE)
            with nogil:
                dense_table(&o, n_classes, <int32_t*>tbuf.buf)
            PyBuffer_Release(&tbuf)
        return (status, bad, to_array(&rule_base, np.int32), trans,
                to_array(&o.final, np.uint8), to_array(&o.csrc, np.int32),
                to_array(&o.crule, np.int32), to_array(&o.cdst, np.int32),
                (take_array(&o.roff), take_array(&o.rcol), take_array(&o.rtgt)))
    finally:
        free(c.mark)
        free(c.one_val)
        free(c.one_gen)
        free(c.acnt)
        free(blk)
        minwork_free(&wk)
        sm_free(&c.index)
        sm_free(&c.memo)
        free(c.stack.d); free(c.clos.d); free(c.finals.d)
        free(c.run_off.d); free(c.run_col.d); free(c.run_tgt.d)
        free(c.call_src.d); free(c.call_rule.d); free(c.call_dst.d); free(c.cur.d)
        free(c.ev.d); free(c.ev2.d); free(c.evend.d); free(c.cnt.d); free(c.act.d); free(c.prev.d); free(c.tmp.d); free(c.pairs.d)
        free(o.roff.d); free(o.rcol.d); free(o.rtgt.d); free(o.final.d); free(o.seen.d)
        free(o.csrc.d); free(o.crule.d); free(o.cdst.d)
        free(rule_base.d)
