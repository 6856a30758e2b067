"""Compile-time kernels over the assembled automaton, GIL released: pruning unproductive
states, the nullable / FIRST / FOLLOW / left-call analysis, the assembly of the per-rule
DFAs' state and call arrays, the context-work check and the NFA's global byte classes (the
rule-graph kernels are in ``_rule_graph``).

Calls are flat arrays sorted by source state: ``(call_src[k], call_callee[k], call_ret[k])``
with the callee as a rule index and the return state a real state (never -1 here).  Byte sets
are 256-bit rows of four uint64 words (bit ``b`` of word ``b >> 6``).
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy, memset

from xmask.compiler._ivec cimport IVec, iv_reserve

ctypedef Py_ssize_t isz

cdef enum:
    FINAL = 1
    HAS_BYTES = 2
    EXIT_ONLY = 4


cdef inline isz skip_none(const int32_t* row, isz c, isz nc) noexcept nogil:
    """The first column ``>= c`` of ``row`` with a target (``nc`` if none).  Rows are mostly
    -1 (a JSON string state reads ~35 of ~90 classes, a key state a few): four columns are
    checked at once as two 64-bit words (-1 is all ones)."""
    cdef uint64_t w0, w1
    while c + 4 <= nc:
        memcpy(&w0, row + c, 8)
        memcpy(&w1, row + c + 2, 8)
        if (w0 & w1) != ~(<uint64_t>0):
            break
        c += 4
    while c < nc and row[c] < 0:
        c += 1
    return c


cdef int runs_of(object runs, isz n, const int32_t** off, const int32_t** tgt,
                 const int32_t** col) except -1:
    # ``runs`` = (run_off, run_col, run_tgt) (``_determinize.build_rule_dfas``) as pointers
    cdef const int32_t[::1] o = runs[0]
    cdef const int32_t[::1] c = runs[1]
    cdef const int32_t[::1] t = runs[2]
    if o.shape[0] != n + 1 or c.shape[0] != t.shape[0] or o[n] != c.shape[0]:
        raise ValueError("runs do not match the table")
    off[0] = &o[0]
    col[0] = &c[0] if c.shape[0] else NULL
    tgt[0] = &t[0] if t.shape[0] else NULL
    return 0


cdef inline void or_bytes(uint64_t* words, isz lo_b, isz hi_b) noexcept nogil:
    # set bits lo_b .. hi_b (inclusive) of a 256-bit set held as four words
    cdef isz j
    cdef uint64_t w
    for j in range(lo_b >> 6, (hi_b >> 6) + 1):
        w = ~(<uint64_t>0)
        if lo_b > 64 * j:
            w &= ~(<uint64_t>0) << (lo_b - 64 * j)
        if hi_b < 64 * j + 63:
            w &= ~(<uint64_t>0) >> (63 - (hi_b - 64 * j))
        words[j] |= w


def prune_unproductive(int32_t[:, ::1] trans, uint8_t[::1] flags, const int32_t[::1] call_src,
                       const int32_t[::1] call_callee, const int32_t[::1] call_ret,
                       const int32_t[::1] rule_start, runs=None):
    """Drop every byte edge into a state from which its rule can never finish (in place, in
    ``trans``) and set HAS_BYTES exactly where an edge is left; returns ``(productive, keep)``: uint8
    per state and per call (a call is kept iff its callee start and return state are
    productive).  A state is productive iff final, or it has an edge into a productive state,
    or a call whose callee start and return state are both productive.

    The dense table is read once: a row's runs of equal targets give its (target, source)
    pairs, the reversed edges the search needs; it is written only when some state is
    unproductive (rare: the per-rule DFAs are trimmed, only a dead callee makes one).
    ``runs``: the table's rows as runs (``_determinize.build_rule_dfas``), read instead of
    the dense rows (a few runs per row instead of ~100 columns).  A third value says whether
    some edge was dropped (then ``runs`` no longer match the table)."""
    cdef isz n = trans.shape[0], nc = trans.shape[1], m = call_src.shape[0], s, c, k, t, top
    prod_a = np.zeros(n, dtype=np.uint8)
    keep_a = np.zeros(m, dtype=np.uint8)
    cdef uint8_t[::1] prod = prod_a
    cdef uint8_t[::1] keep = keep_a
    cdef isz n_pairs = 0, n_prod = 0
    cdef int32_t prev
    cdef IVec pairs
    memset(&pairs, 0, sizeof(IVec))
    cdef int32_t* rev_off = <int32_t*>malloc((n + 2) * sizeof(int32_t))
    cdef int32_t* rev_src = NULL
    cdef int32_t* w_off = <int32_t*>malloc((n + 2) * sizeof(int32_t))
    cdef int32_t* w_call = <int32_t*>malloc((2 * m + 1) * sizeof(int32_t))
    cdef int32_t* stack = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef uint8_t* has_edge = <uint8_t*>malloc(n + 1)
    cdef int32_t cs, rs
    cdef const int32_t* row
    cdef bint nomem = False
    cdef const int32_t* r_off = NULL
    cdef const int32_t* r_tgt = NULL
    cdef const int32_t* r_col = NULL
    if runs is not None:
        runs_of(runs, n, &r_off, &r_tgt, &r_col)
    try:
        if not (rev_off and w_off and w_call and stack and has_edge):
            raise MemoryError()
        with nogil:
            for s in range(n + 2):
                rev_off[s] = 0
                w_off[s] = 0
            # (target, source) once per run of equal targets in a row
            for s in range(n):
                has_edge[s] = 0
                if r_off != NULL:
                    # adjacent runs differ in target: one pair per run with a target
                    if iv_reserve(&pairs, pairs.n + 2 * (r_off[s + 1] - r_off[s])):
                        nomem = True
                        break
                    for k in range(r_off[s], r_off[s + 1]):
                        t = r_tgt[k]
                        if t >= 0:
                            pairs.d[pairs.n] = <int32_t>t
                            pairs.d[pairs.n + 1] = <int32_t>s
                            pairs.n += 2
                            rev_off[t + 2] += 1
                            has_edge[s] = 1
                    continue
                row = &trans[s, 0] if nc else NULL
                c = skip_none(row, 0, nc)
                while c < nc:
                    # a run of columns with targets: one pair per run of equal targets
                    prev = -1
                    while c < nc and row[c] >= 0:
                        t = row[c]
                        if t != prev:
                            if iv_reserve(&pairs, pairs.n + 2):
                                nomem = True
                                break
                            pairs.d[pairs.n] = <int32_t>t
                            pairs.d[pairs.n + 1] = <int32_t>s
                            pairs.n += 2
                            rev_off[t + 2] += 1
                            has_edge[s] = 1
                        prev = <int32_t>t
                        c += 1
                    if nomem:
                        break
                    c = skip_none(row, c, nc)
                if nomem:
                    break
            n_pairs = pairs.n // 2
            if not nomem:
                rev_src = <int32_t*>malloc((n_pairs + 1) * sizeof(int32_t))
                nomem = rev_src == NULL
        if nomem:
            raise MemoryError()
        with nogil:
            for k in range(m):
                cs = rule_start[call_callee[k]]
                w_off[cs + 2] += 1
                if call_ret[k] != cs:
                    w_off[call_ret[k] + 2] += 1
            for s in range(2, n + 2):
                rev_off[s] += rev_off[s - 1]
                w_off[s] += w_off[s - 1]
            for k in range(n_pairs):
                t = pairs.d[2 * k]
                rev_src[rev_off[t + 1]] = pairs.d[2 * k + 1]
                rev_off[t + 1] += 1
            for k in range(m):
                cs = rule_start[call_callee[k]]
                w_call[w_off[cs + 1]] = <int32_t>k
                w_off[cs + 1] += 1
                if call_ret[k] != cs:
                    w_call[w_off[call_ret[k] + 1]] = <int32_t>k
                    w_off[call_ret[k] + 1] += 1
            top = 0
            for s in range(n):
                if flags[s] & FINAL:
                    prod[s] = 1
                    stack[top] = <int32_t>s
                    top += 1
            while top:
                top -= 1
                t = stack[top]
                n_prod += 1
                for k in range(rev_off[t], rev_off[t + 1]):
                    s = rev_src[k]
                    if not prod[s]:
                        prod[s] = 1
                        stack[top] = <int32_t>s
                        top += 1
                for k in range(w_off[t], w_off[t + 1]):
                    c = w_call[k]
                    s = call_src[c]
                    if not prod[s] and prod[rule_start[call_callee[c]]] and prod[call_ret[c]]:
                        prod[s] = 1
                        stack[top] = <int32_t>s
                        top += 1
            for k in range(m):
                keep[k] = prod[rule_start[call_callee[k]]] and prod[call_ret[k]]
            if n_prod == n:
                # nothing to drop: a state keeps its bytes iff it has an edge
                for s in range(n):
                    if has_edge[s]:
                        flags[s] |= HAS_BYTES
                    else:
                        flags[s] &= ~HAS_BYTES
            else:
                for s in range(n):
                    rs = 0
                    if has_edge[s]:
                        for c in range(nc):
                            t = trans[s, c]
                            if t >= 0:
                                if prod[s] and prod[t]:
                                    rs = 1
                                else:
                                    trans[s, c] = -1
                    if rs:
                        flags[s] |= HAS_BYTES
                    else:
                        flags[s] &= ~HAS_BYTES
    finally:
        free(rev_off)
        free(rev_src)
        free(w_off)
        free(w_call)
        free(stack)
        free(has_edge)
        free(pairs.d)
    return prod_a, keep_a, n_prod != n


def analyze(const int32_t[:, ::1] trans, const uint8_t[::1] flags, const uint8_t[::1] byte_class,
            const int32_t[::1] call_off, const int32_t[::1] call_callee,
            const int32_t[::1] call_ret, const int32_t[::1] rule_start,
            const int32_t[::1] state_rule, runs=None):
    """Nullable states, FIRST byte sets per state, FOLLOW byte sets per rule and the rules each
    rule calls before reading a byte (``left``: pairs ``(caller rule, callee rule)``, possibly
    repeated).  ``call_off`` is the CSR offset array of the calls by source state.  A row is
    read only where ``flags`` has HAS_BYTES (the pruning pass sets it exactly on the states
    left with an edge); ``runs``, when given, are the rows as runs (see
    :func:`prune_unproductive`), read instead of the dense table."""
    cdef isz n = trans.shape[0], nc = trans.shape[1], R = rule_start.shape[0], s, c, k, j, r, p
    cdef isz top, n_left = 0
    cdef int32_t t, callee, ret
    cdef bint changed
    cdef uint64_t cls_bits[256][4]
    cdef uint64_t m[4]
    cdef uint64_t w
    cdef int32_t cls_lo[256]
    cdef int32_t cls_hi[256]
    cdef isz lo_b, hi_b
    cdef bint ordered
    cdef const int32_t* row
    cdef const int32_t* r_off = NULL
    cdef const int32_t* r_tgt = NULL
    cdef const int32_t* r_col = NULL
    if runs is not None:
        runs_of(runs, n, &r_off, &r_tgt, &r_col)
    nullable_a = np.zeros(n, dtype=np.uint8)
    first_a = np.zeros((n, 4), dtype=np.uint64)
    follow_a = np.zeros((R, 4), dtype=np.uint64)
    left_a = np.zeros((max(call_callee.shape[0], 1), 2), dtype=np.int32)
    cdef uint8_t[::1] nullable = nullable_a
    cdef uint64_t[:, ::1] first = first_a
    cdef uint64_t[:, ::1] follow = follow_a
    cdef int32_t[:, ::1] left = left_a
    cdef int32_t* stack = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* seen = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef int32_t* callers = <int32_t*>malloc((n + 1) * sizeof(int32_t))
    cdef isz n_callers = 0, head, count, tail
    # FOLLOW's rule graph (CSR by caller rule) and its worklist
    cdef int32_t* e_off = <int32_t*>calloc(R + 1, sizeof(int32_t))
    cdef int32_t* e_dst = <int32_t*>malloc((call_callee.shape[0] + 1) * sizeof(int32_t))
    cdef int32_t* queue = <int32_t*>malloc((R + 1) * sizeof(int32_t))
    cdef uint8_t* inq = <uint8_t*>malloc(R + 1)
    if not (stack and seen and callers and e_off and e_dst and queue and inq):
        free(stack)
        free(seen)
        free(callers)
        free(e_off)
        free(e_dst)
        free(queue)
        free(inq)
        raise MemoryError()
    try:
        with nogil:
            for c in range(256):
                for j in range(4):
                    cls_bits[c][j] = 0
            for c in range(256):
                cls_bits[byte_class[c]][c >> 6] |= (<uint64_t>1) << (c & 63)
            # class -> its first and last byte, when every class is one consecutive byte range
            # in class order (as byte_classes builds them)
            ordered = byte_class[0] == 0
            for c in range(1, 256):
                if byte_class[c] != byte_class[c - 1] and byte_class[c] != byte_class[c - 1] + 1:
                    ordered = False
            for c in range(256):
                if c == 0 or byte_class[c] != byte_class[c - 1]:
                    cls_lo[byte_class[c]] = <int32_t>c
                cls_hi[byte_class[c]] = <int32_t>c
            ordered = ordered and byte_class[255] == nc - 1
            for s in range(n):
                nullable[s] = flags[s] & FINAL
                seen[s] = -1
                if call_off[s + 1] > call_off[s]:
                    callers[n_callers] = <int32_t>s
                    n_callers += 1
                if not flags[s] & HAS_BYTES:
                    continue  # no edge
                if r_off != NULL:
                    for k in range(r_off[s], r_off[s + 1]):
                        if r_tgt[k] < 0:
                            continue
                        hi_b = r_col[k + 1] if k + 1 < r_off[s + 1] else nc
                        if not ordered:
                            for c in range(r_col[k], hi_b):
                                for j in range(4):
                                    first[s, j] |= cls_bits[c][j]
                        else:
                            or_bytes(&first[s, 0], cls_lo[r_col[k]], cls_hi[hi_b - 1])
                    continue
                if not ordered:
                    for c in range(nc):
                        if trans[s, c] >= 0:
                            for j in range(4):
                                first[s, j] |= cls_bits[c][j]
                else:
                    # classes are consecutive byte ranges: a run of columns with an edge is
                    # one byte range
                    row = &trans[s, 0]
                    c = skip_none(row, 0, nc)
                    while c < nc:
                        k = c
                        while c < nc and row[c] >= 0:
                            c += 1
                        or_bytes(&first[s, 0], cls_lo[k], cls_hi[c - 1])
                        c = skip_none(row, c, nc)
            changed = True
            while changed:
                changed = False
                for p in range(n_callers):
                    s = callers[p]
                    if nullable[s]:
                        continue
                    for k in range(call_off[s], call_off[s + 1]):
                        if nullable[rule_start[call_callee[k]]] and nullable[call_ret[k]]:
                            nullable[s] = 1
                            changed = True
                            break
            # calls reachable from each rule's start without reading a byte
            for r in range(R):
                top = 0
                stack[top] = rule_start[r]
                top += 1
                seen[rule_start[r]] = <int32_t>r
                while top:
                    top -= 1
                    s = stack[top]
                    for k in range(call_off[s], call_off[s + 1]):
                        callee = call_callee[k]
                        left[n_left, 0] = <int32_t>r
                        left[n_left, 1] = callee
                        n_left += 1  # < len(left): a call is visited by its own rule only
                        ret = call_ret[k]
                        if nullable[rule_start[callee]] and seen[ret] != r:
                            seen[ret] = <int32_t>r
                            stack[top] = ret
                            top += 1
            changed = True
            while changed:
                changed = False
                for p in range(n_callers):
                    s = callers[p]
                    for j in range(4):
                        m[j] = first[s, j]
                    for k in range(call_off[s], call_off[s + 1]):
                        t = rule_start[call_callee[k]]
                        for j in range(4):
                            m[j] |= first[t, j]
                        if nullable[t]:
                            for j in range(4):
                                m[j] |= first[call_ret[k], j]
                    for j in range(4):
                        if m[j] != first[s, j]:
                            first[s, j] = m[j]
                            changed = True
            # FOLLOW: each call adds its return state's FIRST to its callee's FOLLOW, and,
            # when the return state is nullable, its own rule's FOLLOW.  The second part
            # is a graph over rules, solved with a worklist: round-robin sweeps took
            # hundreds of passes on deeply nested schemas (a rule's FOLLOW flows down the
            # nesting one level per sweep); the least fixpoint is the same.
            for p in range(n_callers):
                s = callers[p]
                for k in range(call_off[s], call_off[s + 1]):
                    callee = call_callee[k]
                    ret = call_ret[k]
                    for j in range(4):
                        follow[callee, j] |= first[ret, j]
                    if nullable[ret]:
                        e_off[state_rule[s] + 1] += 1
            for r in range(R):
                e_off[r + 1] += e_off[r]
            for p in range(n_callers):
                s = callers[p]
                r = state_rule[s]
                for k in range(call_off[s], call_off[s + 1]):
                    if nullable[call_ret[k]]:
                        e_dst[e_off[r]] = call_callee[k]
                        e_off[r] += 1
            for r in range(R, 0, -1):
                e_off[r] = e_off[r - 1]
            e_off[0] = 0
            # queue: a ring of R slots (a rule is queued at most once at a time)
            for r in range(R):
                queue[r] = <int32_t>r
                inq[r] = 1
            head = 0
            count = R
            while count:
                r = queue[head]
                head = head + 1 if head + 1 < R else 0
                count -= 1
                inq[r] = 0
                for k in range(e_off[r], e_off[r + 1]):
                    callee = e_dst[k]
                    changed = False
                    for j in range(4):
                        w = follow[callee, j] | follow[r, j]
                        if w != follow[callee, j]:
                            follow[callee, j] = w
                            changed = True
                    if changed and not inq[callee]:
                        inq[callee] = 1
                        tail = head + count
                        queue[tail if tail < R else tail - R] = callee
                        count += 1
    finally:
        free(stack)
        free(seen)
        free(callers)
        free(e_off)
        free(e_dst)
        free(queue)
        free(inq)
    return nullable_a, first_a, follow_a, left_a[:n_left]


def assemble_states(const int32_t[::1] rule_base, const uint8_t[::1] finals,
                    const int32_t[::1] call_src, const int32_t[::1] call_rule):
    """The per-state arrays of the per-rule DFAs laid end to end: ``(rule_start, state_rule,
    flags, sorted)``: each rule's first state, each state's rule (int32), FINAL where
    ``finals`` says so (uint8), and whether the calls are already sorted by (state, callee
    start), as the determinizer emits them (else the caller sorts them)."""
    cdef isz R = rule_base.shape[0] - 1, n = finals.shape[0], m = call_src.shape[0], r, s, k
    cdef bint ok = True
    rule_start_a = np.empty(R, dtype=np.int32)
    state_rule_a = np.empty(n, dtype=np.int32)
    flags_a = np.empty(n, dtype=np.uint8)
    cdef int32_t[::1] rule_start = rule_start_a
    cdef int32_t[::1] state_rule = state_rule_a
    cdef uint8_t[::1] flags = flags_a
    with nogil:
        for r in range(R):
            rule_start[r] = rule_base[r]
            for s in range(rule_base[r], rule_base[r + 1]):
                state_rule[s] = <int32_t>r
        for s in range(n):
            flags[s] = FINAL if finals[s] else 0
        for k in range(1, m):
            if call_src[k] < call_src[k - 1] or (
                    call_src[k] == call_src[k - 1]
                    and rule_start[call_rule[k]] <= rule_start[call_rule[k - 1]]):
                ok = False
                break
    return rule_start_a, state_rule_a, flags_a, ok


def assemble_calls(uint8_t[::1] flags, const int32_t[::1] call_src,
                   const int32_t[::1] call_rule, const int32_t[::1] call_dst,
                   const int32_t[::1] rule_start, const int32_t[::1] rule_budget):
    """Sets EXIT_ONLY (final, no byte edge, no call) in ``flags`` and returns the call arrays
    the runtime reads: ``(call_offsets, call_target, call_ret)``, the offsets of each state's
    calls (``n + 1``), each call's callee start and return state, -1 for a tail call (the
    return state is exit-only and the callee has no token budget)."""
    cdef isz n = flags.shape[0], m = call_src.shape[0], s, k
    off_a = np.zeros(n + 1, dtype=np.int32)
    target_a = np.empty(m, dtype=np.int32)
    ret_a = np.empty(m, dtype=np.int32)
    cdef int32_t[::1] off = off_a
    cdef int32_t[::1] target = target_a
    cdef int32_t[::1] ret = ret_a
    with nogil:
        for k in range(m):
            off[call_src[k] + 1] += 1
        for s in range(n):
            if flags[s] & FINAL and not flags[s] & HAS_BYTES and off[s + 1] == 0:
                flags[s] |= EXIT_ONLY
            off[s + 1] += off[s]
        for k in range(m):
            target[k] = rule_start[call_rule[k]]
            if flags[call_dst[k]] & EXIT_ONLY and rule_budget[call_rule[k]] < 0:
                ret[k] = -1
            else:
                ret[k] = call_dst[k]
    return off_a, target_a, ret_a


def byte_classes_of(const int32_t[::1] lo, const int32_t[::1] hi):
    """Global byte classes of byte-range edges ``lo[k]..hi[k]`` (inclusive): bytes no range
    tells apart share a class, classes numbered by their first byte (uint8[256])."""
    cdef isz k, b
    cdef uint8_t cut[257]
    cdef int c = -1
    out_a = np.empty(256, dtype=np.uint8)
    cdef uint8_t[::1] out = out_a
    with nogil:
        memset(cut, 0, sizeof(cut))
        cut[0] = 1
        for k in range(lo.shape[0]):
            cut[lo[k]] = 1
            cut[hi[k] + 1] = 1
        for b in range(256):
            c += cut[b]
            out[b] = <uint8_t>c
    return out_a


def context_work_over(const uint8_t[::1] flags, const int32_t[::1] state_rule,
                      const int64_t[::1] ctx_offsets, int64_t cap):
    """The first rule (in index order) at which the sum over rules of (byte-reading states x
    return contexts) passes ``cap``, or -1 (``automaton._check_context_work``)."""
    cdef isz n = flags.shape[0], R = ctx_offsets.shape[0] - 1, s, r
    cdef int64_t work = 0
    cdef int64_t* reads = <int64_t*>calloc(R + 1, sizeof(int64_t))
    cdef isz bad = -1
    if reads == NULL:
        raise MemoryError()
    with nogil:
        for s in range(n):
            if flags[s] & HAS_BYTES:
                reads[state_rule[s]] += 1
        for r in range(R):
            if reads[r]:
                work += reads[r] * (ctx_offsets[r + 1] - ctx_offsets[r])
                if work > cap:
                    bad = r
                    break
    free(reads)
    return bad
