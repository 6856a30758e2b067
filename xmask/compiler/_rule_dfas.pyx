"""Compile-time kernel: every rule's minimal DFA in one global numbering, GIL released, on
up to ``threads`` threads.

Each rule is determinized (``_determinize``), minimized (``_minimize``: Moore rounds, capped
by a work budget like the Python twin in ``dfa_reference``) and appended to one global
numbering (minimized blocks by first appearance, so the start state of each rule is its first
state).  Rules are independent, so a large grammar's rules are cut into contiguous chunks that
the caller and ``threads - 1`` helper threads (``_assist``) take in turn, each with its own
kernel context; the chunks' outputs are then joined in rule order.  The result is the same as
one thread's, array for array.

Limits are reported, not raised (no GIL here): ``status`` 1 = more DFA states than
``max_states`` (``total_so_far`` + the rules' so far), 2 = the subsets hold more than
``held_cap`` NFA states, 3 = the deadline passed, 4 = out of memory, 5 = the kernel's tables
would pass ``mem_cap`` bytes; ``bad_rule`` names the rule.  A chunk sees only its own rules'
states and memory, so the joined result is kept only when one thread's run, replayed from the
chunks' per-rule figures, could not have hit a limit; otherwise (and when a chunk hit one) the
rules are built again on one thread, which reports the limit exactly as it always has.  The
threads together keep within one thread's memory cap (see ``Job``): a grammar near the cap is
built on one thread.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, malloc, free, realloc

from cython.view cimport array as cvarray
from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.string cimport memcpy, memset

from xmask.compiler._assist cimport xa_begin, xa_end
from xmask.compiler._determinize cimport (Ctx, ST_MEMORY, ST_NOMEM, ST_OK,
                                          determinize, sm_free, sm_init, xm_now)
from xmask.compiler._ivec cimport IVec, iv_push, iv_reserve, lv_reserve
from xmask.compiler._minimize cimport MinWork, Moore, merged_runs, minimize_dfa, minwork_free
from xmask.runtime._atomic cimport xm_fetch_add

ctypedef Py_ssize_t isz

# a grammar with fewer NFA states than this is built on one thread: waking a helper costs more
# than it saves (measured in bench/README, issue 10)
cdef isz PARALLEL_MIN_NFA = 2048
# chunks per thread: enough that a thread that finishes early finds work left
cdef isz CHUNKS_PER_THREAD = 4
# builds whose chunks were joined, and those rebuilt on one thread after their chunks were
# built (a limit hit or possible): tests read them to know which path ran
cdef int64_t joined_builds = 0
cdef int64_t rebuilt_builds = 0


def threaded_builds() -> tuple:
    """``(joined, rebuilt)``: how many :func:`build_rule_dfas` calls of this process kept a
    result built on several threads, and how many built their chunks but then rebuilt on one
    thread to report a limit exactly (tests check which path ran)."""
    return joined_builds, rebuilt_builds


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


cdef int presize_ctx(Ctx* c, MinWork* wk, isz n_nfa, isz n_edges, isz n_calls) noexcept nogil:
    """Reserve a context's growing arrays for a small grammar at once (a rule's DFA rarely
    has more states than the grammar has NFA states, its rows more runs than twice the edges):
    growing each from empty costs ~150 reallocs.  Capped: a large grammar's arrays grow as
    needed (a large first reservation is fresh memory, slower to touch than a heap block grown
    into)."""
    cdef isz hs = min(n_nfa, 1024) + 16, he = 2 * min(n_edges, 1024) + 16
    cdef Moore* mo = &wk.mo
    if (iv_reserve(&c.stack, hs) or iv_reserve(&c.clos, hs) or iv_reserve(&c.cur, 256)
            or iv_reserve(&c.run_off, hs + 1) or iv_reserve(&c.run_col, he)
            or iv_reserve(&c.run_tgt, he) or iv_reserve(&c.finals, hs)
            or iv_reserve(&c.call_src, n_calls + 16) or iv_reserve(&c.call_rule, n_calls + 16)
            or iv_reserve(&c.call_dst, n_calls + 16) or lv_reserve(&c.ev, 256)
            or lv_reserve(&c.ev2, 256) or iv_reserve(&c.cnt, 258) or iv_reserve(&c.act, 128)
            or iv_reserve(&c.prev, 128) or lv_reserve(&c.pairs, 64) or iv_reserve(&c.tmp, 64)
            or iv_reserve(&wk.callees, 64) or iv_reserve(&wk.arena, 11 * hs + 3)
            or iv_reserve(&wk.rev_src, he + n_calls + 1) or iv_reserve(&mo.dirty, hs)
            or iv_reserve(&mo.newid, 2 * hs) or iv_reserve(&mo.spos, 2 * hs + 1)
            or iv_reserve(&mo.blocks, hs) or iv_reserve(&mo.reps, hs)
            or iv_reserve(&mo.changed, hs) or iv_reserve(&mo.sig, 4 * he + 2 * hs)
            or iv_reserve(&mo.slots, 4 * hs + 16) or iv_reserve(&mo.gsize, 2 * hs)):
        return -1
    return 0


cdef int presize_out(Out* o, isz n_nfa, isz n_edges, isz n_calls) noexcept nogil:
    """The output's arrays, reserved as :func:`presize_ctx` reserves a context's."""
    cdef isz hs = min(n_nfa, 1024) + 16, he = 2 * min(n_edges, 1024) + 16
    if (iv_reserve(&o.roff, hs + 1) or iv_reserve(&o.rcol, he) or iv_reserve(&o.rtgt, he)
            or iv_reserve(&o.final, hs) or iv_reserve(&o.seen, hs)
            or iv_reserve(&o.csrc, n_calls + 16) or iv_reserve(&o.crule, n_calls + 16)
            or iv_reserve(&o.cdst, n_calls + 16)):
        return -1
    return 0


cdef void out_free(Out* o) noexcept nogil:
    free(o.roff.d); free(o.rcol.d); free(o.rtgt.d); free(o.final.d); free(o.seen.d)
    free(o.csrc.d); free(o.crule.d); free(o.cdst.d)
    memset(o, 0, sizeof(Out))


cdef inline int64_t out_bytes(const Out* o, isz nc) noexcept nogil:
    # the emitted rules' tables (their rows, then the dense table and the other arrays copied
    # out at the end): what ``mem_cap`` bounds besides a rule's own construction
    return (4 * (o.roff.n + o.rcol.n + o.rtgt.n + o.roff.n * nc)
            + 2 * 4 * (o.final.n + o.csrc.n + o.crule.n + o.cdst.n))


# ------------------------------------------------------------------------- one thread's work

cdef struct Worker:
    # one thread's kernel context and minimizer buffers
    Ctx c
    MinWork wk
    int32_t* blk
    isz blk_cap


cdef int worker_init(Worker* w, const Ctx* proto, isz n_nfa, isz n_edges, isz n_calls) noexcept nogil:
    """``w``: ``proto``'s inputs and limits with scratch of its own; -1 when out of memory
    (``worker_free`` it all the same)."""
    memset(w, 0, sizeof(Worker))
    w.c = proto[0]
    w.c.mark = <int32_t*>calloc(n_nfa, sizeof(int32_t))
    w.c.one_val = <int32_t*>malloc(n_nfa * sizeof(int32_t))
    w.c.one_gen = <int32_t*>calloc(n_nfa, sizeof(int32_t))
    w.c.acnt = <int32_t*>calloc(n_nfa, sizeof(int32_t))
    if (w.c.mark == NULL or w.c.one_val == NULL or w.c.one_gen == NULL or w.c.acnt == NULL
            or sm_init(&w.c.index, min(n_nfa, 1024)) or sm_init(&w.c.memo, min(n_nfa, 1024) // 4)
            or presize_ctx(&w.c, &w.wk, n_nfa, n_edges, n_calls)):
        return -1
    return 0


cdef void worker_free(Worker* w) noexcept nogil:
    cdef Ctx* c = &w.c
    free(c.mark); free(c.one_val); free(c.one_gen); free(c.acnt)
    free(w.blk)
    minwork_free(&w.wk)
    sm_free(&c.index)
    sm_free(&c.memo)
    free(c.stack.d); free(c.clos.d); free(c.finals.d)
    free(c.run_off.d); free(c.run_col.d); free(c.run_tgt.d)
    free(c.call_src.d); free(c.call_rule.d); free(c.call_dst.d); free(c.cur.d)
    free(c.ev.d); free(c.ev2.d); free(c.evend.d); free(c.cnt.d); free(c.act.d); free(c.prev.d)
    free(c.tmp.d); free(c.pairs.d)
    memset(w, 0, sizeof(Worker))


cdef int run_rules(Worker* w, Out* o, IVec* rule_base, IVec* peak, int64_t* scratch,
                   int64_t* shared, int64_t shared_cap, const int32_t* r_start,
                   const int32_t* r_end, isz r0, isz r1, int32_t* bad) noexcept nogil:
    """Rules ``r0 .. r1`` determinized, minimized and appended to ``o`` (numbered from
    ``rule_base``'s last entry, one entry pushed per rule); returns a status (``bad`` = the
    failing rule).  ``peak`` (unless NULL): each rule's DFA states before minimization, and
    ``scratch`` the most bytes one rule's construction held (``held_bytes`` less the tables'
    capacities), the figures a chunk's caller replays the limits from; ``shared`` (unless
    NULL): the emitted tables' bytes of every thread, which may not pass ``shared_cap`` (> 0)."""
    cdef Ctx* c = &w.c
    cdef int status = ST_OK
    cdef isz r = r0, m = 0
    cdef int64_t s, before
    while status == ST_OK and r < r1:
        c.end = r_end[r]
        status = determinize(c, r_start[r])
        if status == ST_OK and peak != NULL:
            s = (4 * (c.run_off.n + 2 * c.run_col.n + c.index.pool.n + c.memo.pool.n)
                 + 20 * (c.index.val.n + c.memo.val.n))
            if s > scratch[0]:
                scratch[0] = s
            if iv_push(peak, <int32_t>c.finals.n):
                status = ST_NOMEM
        if status == ST_OK and c.finals.n > w.blk_cap:
            free(w.blk)
            w.blk_cap = c.finals.n * 2
            w.blk = <int32_t*>malloc(w.blk_cap * sizeof(int32_t))
            if w.blk == NULL:
                w.blk_cap = 0
                status = ST_NOMEM
        if status == ST_OK:
            m = minimize_dfa(c.finals.n, c.nc, c.run_off.d, c.run_col.d, c.run_tgt.d,
                             c.finals.d, c.call_src.d, c.call_rule.d, c.call_dst.d,
                             c.call_rule.n, c.budget, w.blk, &w.wk)
            if m < 0 or emit(c, w.blk, m, o, rule_base.d[rule_base.n - 1]):
                status = ST_NOMEM
        if status == ST_OK:
            c.total_so_far += m
            before = c.mem_base
            c.mem_base = out_bytes(o, c.nc)
            if c.mem_cap > 0 and c.mem_base > c.mem_cap:
                status = ST_MEMORY
            if shared != NULL and shared_cap > 0 and (
                    xm_fetch_add(shared, c.mem_base - before) + c.mem_base - before > shared_cap):
                status = ST_MEMORY
            if iv_push(rule_base, rule_base.d[rule_base.n - 1] + <int32_t>m):
                status = ST_NOMEM
        if status != ST_OK:
            bad[0] = <int32_t>r
        r += 1
    return status


# ------------------------------------------------------------------------- chunks on threads

cdef struct Chunk:
    isz r0
    isz r1
    int64_t weight       # NFA states
    Out o
    IVec base            # local numbering: 0, then each rule's end
    IVec peak
    int64_t scratch
    isz index_cap
    isz memo_cap
    int status           # -1 until a thread ran it
    int32_t bad


cdef struct Job:
    const Ctx* proto
    isz n_nfa
    isz n_edges
    isz n_calls
    const int32_t* r_start
    const int32_t* r_end
    Chunk* chunks
    isz* order           # chunks by NFA size, largest first: taken in this order
    int64_t n_chunks
    int64_t next         # the next chunk to take (atomic)
    int64_t failed       # chunks that hit a limit (atomic): the others stop
    # Memory: the threads together stay within one thread's cap.  Every chunk's tables (each
    # kept until the join, which copies them once more) within half of it, each thread's
    # construction within its share of the other half; a chunk past either is rebuilt on one
    # thread, which applies the cap exactly.
    int64_t out_total    # bytes of the tables emitted by all chunks so far (atomic)
    int64_t out_cap
    int64_t thread_cap


cdef void job_loop(Job* j, Worker* w) noexcept nogil:
    cdef int64_t k
    cdef Chunk* ch
    while xm_fetch_add(&j.failed, 0) == 0:
        k = xm_fetch_add(&j.next, 1)
        if k >= j.n_chunks:
            return
        ch = &j.chunks[j.order[k]]
        w.c.total_so_far = j.proto.total_so_far
        w.c.mem_base = 0
        w.c.mem_cap = j.thread_cap
        if iv_push(&ch.base, 0):
            ch.status = ST_NOMEM
        else:
            ch.status = run_rules(w, &ch.o, &ch.base, &ch.peak, &ch.scratch, &j.out_total,
                                  j.out_cap, j.r_start, j.r_end, ch.r0, ch.r1, &ch.bad)
        ch.index_cap = w.c.index.cap
        ch.memo_cap = w.c.memo.cap
        if ch.status != ST_OK:
            xm_fetch_add(&j.failed, 1)


cdef void job_help(void* arg) noexcept nogil:
    """A helper thread's share of the job (nothing when the caller already took every chunk)."""
    cdef Job* j = <Job*>arg
    cdef Worker w
    if xm_fetch_add(&j.next, 0) >= j.n_chunks:
        return
    if worker_init(&w, j.proto, j.n_nfa, j.n_edges, j.n_calls) == 0:
        job_loop(j, &w)
    worker_free(&w)


cdef isz cut_chunks(Chunk* chunks, isz n_chunks, const int32_t* r_start, isz R,
                    isz n_nfa) noexcept nogil:
    """Contiguous runs of rules of about equal NFA size (rules own consecutive NFA states);
    returns how many chunks were cut."""
    cdef isz r, k = 0
    cdef int64_t acc = 0, w
    chunks[0].r0 = 0
    for r in range(R):
        w = (r_start[r + 1] if r + 1 < R else n_nfa) - r_start[r]
        acc += w
        chunks[k].weight += w
        # close chunk k once it holds its share of the whole (the last takes the rest)
        if k < n_chunks - 1 and acc * n_chunks >= (k + 1) * <int64_t>n_nfa and r + 1 < R:
            chunks[k].r1 = r + 1
            k += 1
            chunks[k].r0 = r + 1
    chunks[k].r1 = R
    return k + 1


cdef int join_chunks(Chunk* chunks, isz n, Out* o, IVec* rule_base, const Ctx* proto,
                     isz n_nfa) noexcept nogil:
    """The chunks' outputs, in rule order, renumbered into ``o`` and ``rule_base``.  Returns
    ST_OK, ST_NOMEM, or -2 when a chunk hit a limit or one thread's run could have (replayed
    from each rule's figures): the caller then builds the rules on one thread."""
    cdef isz k, i, g, S = 0, RO = 0, ns = 0, nr = 0, nc_ = 0, nrules = 0
    cdef int64_t total = proto.total_so_far, scratch = 0
    cdef isz index_cap = 0, memo_cap = 0
    cdef Chunk* ch
    cdef int32_t t
    for k in range(n):
        ch = &chunks[k]
        if ch.status != ST_OK:
            return -2
        for i in range(ch.peak.n):
            # one thread checks each new DFA state against every earlier rule's states
            if total + ch.peak.d[i] > proto.max_states:
                return -2
            total += ch.base.d[i + 1] - ch.base.d[i]
        scratch = max(scratch, ch.scratch)
        index_cap = max(index_cap, ch.index_cap)
        memo_cap = max(memo_cap, ch.memo_cap)
        ns += ch.o.roff.n
        nr += ch.o.rcol.n
        nc_ += ch.o.csrc.n
        nrules += ch.base.n - 1
    if (iv_reserve(&o.roff, ns + 1) or iv_reserve(&o.rcol, nr) or iv_reserve(&o.rtgt, nr)
            or iv_reserve(&o.final, ns) or iv_reserve(&o.csrc, nc_)
            or iv_reserve(&o.crule, nc_) or iv_reserve(&o.cdst, nc_)
            or iv_reserve(rule_base, rule_base.n + nrules)):
        return ST_NOMEM
    for k in range(n):
        ch = &chunks[k]
        for g in range(ch.o.roff.n):
            o.roff.d[o.roff.n + g] = ch.o.roff.d[g] + <int32_t>RO
        memcpy(o.rcol.d + o.rcol.n, ch.o.rcol.d, ch.o.rcol.n * sizeof(int32_t))
        for g in range(ch.o.rtgt.n):
            t = ch.o.rtgt.d[g]
            o.rtgt.d[o.rtgt.n + g] = t + <int32_t>S if t >= 0 else -1
        memcpy(o.final.d + o.final.n, ch.o.final.d, ch.o.final.n * sizeof(int32_t))
        memcpy(o.crule.d + o.crule.n, ch.o.crule.d, ch.o.crule.n * sizeof(int32_t))
        for g in range(ch.o.csrc.n):
            o.csrc.d[o.csrc.n + g] = ch.o.csrc.d[g] + <int32_t>S
            o.cdst.d[o.cdst.n + g] = ch.o.cdst.d[g] + <int32_t>S
        for i in range(1, ch.base.n):
            rule_base.d[rule_base.n] = ch.base.d[i] + <int32_t>S
            rule_base.n += 1
        o.roff.n += ch.o.roff.n
        o.rcol.n += ch.o.rcol.n
        o.rtgt.n += ch.o.rtgt.n
        o.final.n += ch.o.final.n
        o.crule.n += ch.o.crule.n
        o.csrc.n += ch.o.csrc.n
        o.cdst.n += ch.o.cdst.n
        S += ch.o.roff.n
        RO += ch.o.rcol.n
    # one thread's memory checks: the tables of every rule before the one being built, its
    # construction, the subset maps grown to the largest rule's, and the largest new subset
    if proto.mem_cap > 0 and (out_bytes(o, proto.nc) + scratch + 4 * (index_cap + memo_cap)
                              + 4 * (n_nfa + 2)) > proto.mem_cap:
        return -2
    return ST_OK


cdef int run_parallel(Worker* w, const Ctx* proto, int threads, const int32_t* r_start,
                      const int32_t* r_end, isz R, isz n_nfa, isz n_edges, isz n_calls,
                      Out* o, IVec* rule_base) noexcept nogil:
    """The rules in chunks on the caller's worker ``w`` and up to ``threads - 1`` helpers,
    joined into ``o`` / ``rule_base``.  Returns ST_OK, ST_NOMEM, or < 0: build them on one
    thread instead (-1: no helper was free; -2: a limit was or may have been hit)."""
    cdef Job j
    cdef isz k, i, want = min(R, <isz>threads * CHUNKS_PER_THREAD)
    cdef int helpers, status
    memset(&j, 0, sizeof(Job))
    j.chunks = <Chunk*>calloc(want, sizeof(Chunk))
    j.order = <isz*>malloc(want * sizeof(isz))
    if j.chunks == NULL or j.order == NULL:
        free(j.chunks)
        free(j.order)
        return ST_NOMEM
    j.proto = proto
    j.n_nfa = n_nfa
    j.n_edges = n_edges
    j.n_calls = n_calls
    j.r_start = r_start
    j.r_end = r_end
    if proto.mem_cap > 0:
        j.out_cap = max(<int64_t>1, proto.mem_cap // 2)
        j.thread_cap = max(<int64_t>1, proto.mem_cap // (2 * threads))
    j.n_chunks = cut_chunks(j.chunks, want, r_start, R, n_nfa)
    for k in range(j.n_chunks):
        j.chunks[k].status = -1
        # largest first (insertion): a large chunk taken last would leave the others idle
        i = k
        while i > 0 and j.chunks[j.order[i - 1]].weight < j.chunks[k].weight:
            j.order[i] = j.order[i - 1]
            i -= 1
        j.order[i] = k
    helpers = xa_begin(job_help, &j, threads - 1)
    if helpers > 0:
        job_loop(&j, w)
        xa_end()
        status = join_chunks(j.chunks, j.n_chunks, o, rule_base, proto, n_nfa)
    else:
        status = -1
    for k in range(j.n_chunks):
        out_free(&j.chunks[k].o)
        free(j.chunks[k].base.d)
        free(j.chunks[k].peak.d)
    free(j.chunks)
    free(j.order)
    return status


def build_rule_dfas(const int32_t[::1] eps_off, const int32_t[::1] eps_dst,
                    const int32_t[::1] b_off, const int32_t[::1] b_lo, const int32_t[::1] b_hi,
                    const int32_t[::1] b_dst, const int32_t[::1] c_off, const int32_t[::1] c_rule,
                    const int32_t[::1] c_dst, const int32_t[::1] r_start, const int32_t[::1] r_end,
                    const uint8_t[::1] byte_class, int64_t max_states, int64_t held_cap, int64_t total_so_far,
                    int64_t budget, double seconds_left, int64_t mem_cap=0, int threads=1):
    """Determinize and minimize every rule (NFA in CSR form, byte edges as inclusive byte
    ranges, ``byte_class`` (uint8[256], numbered by first byte) the grammar's byte classes), on
    up to ``threads`` threads when the grammar is large (the result does not depend on it).

    Returns ``(status, bad_rule, rule_base, trans, finals, call_src, call_rule, call_dst,
    runs)``:
    rule ``r`` owns global states ``rule_base[r] .. rule_base[r + 1]`` (its start first),
    ``trans`` is ``n x n_classes`` (global targets, -1 none; ``n_classes`` =
    ``max(byte_class) + 1``), ``finals`` uint8, and the calls
    are (global state, callee rule index, global return state) triples; ``runs`` is
    ``(run_off, run_col, run_tgt)``, the rows of ``trans`` as the kernel built them: state
    ``s``'s row is the runs ``run_off[s] .. run_off[s + 1]`` (first class, target or -1),
    covering the classes in order, adjacent runs differing in target (the passes that read
    every row read these instead of the dense table).  Rules own consecutive NFA states when
    ``r_start`` ascends (as the NFA builder lays them out); otherwise one thread builds them.
    """
    cdef Ctx proto
    cdef Worker w
    cdef Out o
    cdef isz n_nfa = eps_off.shape[0] - 1, R = r_start.shape[0], r
    cdef isz n_edges = b_lo.shape[0], n_calls = c_rule.shape[0]
    cdef int status = ST_OK
    cdef int32_t bad = -1
    cdef IVec rule_base
    cdef Py_buffer tbuf
    cdef bint ascending = True
    memset(&proto, 0, sizeof(Ctx))
    memset(&w, 0, sizeof(Worker))
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
    for r in range(1, R):
        if r_start[r] <= r_start[r - 1]:
            ascending = False
    proto.bclass = &byte_class[0]
    proto.eps_off = &eps_off[0]
    proto.eps_dst = &eps_dst[0] if eps_dst.shape[0] else NULL
    proto.b_off = &b_off[0]
    proto.b_lo = &b_lo[0] if n_edges else NULL
    proto.b_hi = &b_hi[0] if b_hi.shape[0] else NULL
    proto.b_dst = &b_dst[0] if b_dst.shape[0] else NULL
    proto.c_off = &c_off[0]
    proto.c_rule = &c_rule[0] if n_calls else NULL
    proto.c_dst = &c_dst[0] if c_dst.shape[0] else NULL
    proto.nc = n_classes
    proto.max_states = max_states
    proto.held_cap = held_cap
    proto.total_so_far = total_so_far
    proto.budget = budget
    proto.mem_cap = mem_cap
    try:
        with nogil:
            proto.deadline = xm_now() + seconds_left if seconds_left >= 0 else -1.0
            if (worker_init(&w, &proto, n_nfa, n_edges, n_calls)
                    or iv_reserve(&rule_base, R + 1) or iv_push(&rule_base, 0)):
                status = ST_NOMEM
            elif threads > 1 and R > 1 and ascending and n_nfa >= PARALLEL_MIN_NFA:
                status = run_parallel(&w, &proto, threads, &r_start[0], &r_end[0], R, n_nfa,
                                      n_edges, n_calls, &o, &rule_base)
                if status == ST_OK:
                    xm_fetch_add(&joined_builds, 1)
                elif status == -2:
                    # one thread, from scratch: its limits and errors exactly as always
                    xm_fetch_add(&rebuilt_builds, 1)
                    out_free(&o)
                    worker_free(&w)
                    rule_base.n = 1
                    status = ST_NOMEM if worker_init(&w, &proto, n_nfa, n_edges, n_calls) else -1
            else:
                status = -1
            if status == -1:
                status = ST_OK
                if presize_out(&o, n_nfa, n_edges, n_calls):
                    status = ST_NOMEM
                else:
                    status = run_rules(&w, &o, &rule_base, NULL, NULL, NULL, 0, &r_start[0],
                                       &r_end[0], 0, R, &bad)
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
        worker_free(&w)
        out_free(&o)
        free(rule_base.d)
