"""Compile-time kernel: one rule's subset construction, GIL released.

Input is every rule's Thompson NFA as flat CSR arrays (epsilon edges, byte edges as inclusive
byte ranges with the grammar's byte classes, call edges as (callee rule, target)), in a
:c:type:`Ctx` (``_determinize.pxd``).  :c:func:`determinize` builds one rule's DFA (a DFA state
is the sorted list of NFA states of an epsilon closure that have an outgoing edge, plus the
rule's end); ``_rule_dfas`` runs it over every rule, minimizes each result and appends it to
one global numbering.  DFA states are numbered in discovery order (classes ascending, then
callees ascending), so the start state of each rule is its first state.

Work follows the edges, not the classes: a DFA state's row is built from its NFA states' sorted
byte edges (``row_of``) and kept as runs of classes with one target (a row has ~7 runs for ~90
classes) through minimization, until the dense ``states x classes`` table is written once at
the end.

Limits are reported, not raised (no GIL here), as a status: ST_STATES = more DFA states than
``max_states`` (``total_so_far`` + this rule's), ST_HELD = the subsets hold more than
``held_cap`` NFA states, ST_DEADLINE = the deadline passed, ST_NOMEM = out of memory,
ST_MEMORY = the kernel's tables would pass ``mem_cap`` bytes (checked before each new DFA state
and subset is stored, so the cap holds by construction).
"""

from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free, qsort
from libc.string cimport memcpy, memset

from xmask.runtime._intseq cimport cmp_i64, insertion_sort, sort_unique
from xmask.compiler._ivec cimport IVec, LVec, ints_eq, ints_hash, iv_reserve, iv_push, lv_reserve, lv_push


# ------------------------------------------------------- map: int32 sequence -> int32 value

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
