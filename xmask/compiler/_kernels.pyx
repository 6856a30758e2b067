"""Compile-time kernel: classify every vocabulary token for every automaton state.

For a state s of rule R the walk starts from the stack (s over BOTTOM).  When a path returns
past BOTTOM (R is done) it continues in every place R can return to (the return states of R's
call sites, following tail calls up, each over CONTEXT); a path that returns past CONTEXT too can
only be judged by the real stack, so the next byte is checked against those callers' FOLLOW set.
Tokens are visited in byte-sorted order so a shared prefix is parsed once (truncate the history
to the common prefix, then push the rest), and when byte d kills every path all following tokens
that share those d+1 bytes are classified at once.

A token is
* accepted  if a path consumes all of it without leaving R (or leaving R exactly at its end);
* uncertain if not, but a path consumed it in a caller's context, or left the callers too with a
  byte that can follow them: only the real stack can decide;
* rejected  otherwise: no context whatsoever accepts it.
"""

import numpy as np

from libc.stdlib cimport malloc, realloc, free
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from xmask.runtime._types cimport intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC, AutomatonTables, VocabTables
from xmask.runtime._stack cimport (
    StackC, stack_init, stack_free, stack_reset, stack_start, stack_start_many, stack_step,
    stack_truncate, stack_set_contains,
)

cdef enum:
    _ACC = 0
    _REJ = 1
    _UNC = 2


cdef bint _inside_rule(const StackC* st) noexcept nogil:
    # Whether a path of the newest top set is still inside the walked rule (or just ended it):
    # its parent chain ends at BOTTOM rather than CONTEXT.
    cdef intp_t i
    cdef int32_t x
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        x = st.tops[i]
        while x >= 2:
            x = st.node_parent[x]
        if x == 0:
            return True
    return False


cdef int _classify_state(StackC* st, const AutomatonC* a, const VocabC* v, int32_t state,
                         const int32_t* ctx, intp_t n_ctx, int32_t** ctx_tops, intp_t* ctx_cap,
                         const uint8_t* follow, uint8_t* unc_prefix, uint8_t* out) except -1 nogil:
    # out[pos] := _ACC / _REJ / _UNC for every sorted position.
    cdef intp_t n = v.n_sorted
    cdef intp_t i = 0, j, d, k, length, reached = 0, n_ctx_tops
    cdef int64_t off
    cdef uint8_t b, verdict
    cdef bint ok
    cdef int32_t* p
    cdef bint ctx_has_ctx
    stack_reset(st, st.n_nodes > 1 << 16)
    st.bottom_cont = NULL
    # the caller contexts' top set, kept outside the history (node ids stay valid: no reset
    # drops nodes during this walk)
    stack_start_many(st, a, ctx, n_ctx, 1)
    n_ctx_tops = st.set_start[1]
    ctx_has_ctx = stack_set_contains(st, 0, 1)
    if n_ctx_tops > ctx_cap[0]:
        p = <int32_t*>realloc(ctx_tops[0], <size_t>n_ctx_tops * sizeof(int32_t))
        if p == NULL:
            with gil:
                raise MemoryError()
        ctx_tops[0] = p
        ctx_cap[0] = n_ctx_tops
    for i in range(n_ctx_tops):
        ctx_tops[0][i] = st.tops[i]
    stack_reset(st, False)
    st.bottom_cont = ctx_tops[0]
    st.n_bottom_cont = n_ctx_tops
    stack_start(st, a, state)
    unc_prefix[0] = 0
    i = 0
    while i < n:
        k = v.lcp[i] if v.lcp[i] < reached else reached
        stack_truncate(st, k + 1)
        off = v.tok_offsets[i]
        length = v.tok_offsets[i + 1] - off
        ok = True
        d = k
        while d < length:
            b = v.tok_bytes[off + d]
            # returned past the callers too (directly, or via BOTTOM whose continuation holds
            # CONTEXT) with a byte that can follow them: only the real stack can tell
            unc_prefix[d + 1] = unc_prefix[d] | (
                follow[b] != 0 and (stack_set_contains(st, d, 1)
                                    or (ctx_has_ctx and stack_set_contains(st, d, 0))))
            if stack_step(st, a, b) == 0:
                ok = False
                break
            d += 1
        if ok:
            reached = length
            out[i] = _ACC if _inside_rule(st) else _UNC
            i += 1
            continue
        reached = d
        verdict = _UNC if unc_prefix[d + 1] else _REJ
        out[i] = verdict
        j = i + 1
        while j < n and v.lcp[j] > d:
            out[j] = verdict
            j += 1
        i = j
    return 0


def classify_states(AutomatonTables automaton, VocabTables vocab, int32_t[::1] states,
                    int64_t[::1] ctx_offsets, int32_t[::1] ctx_states,
                    uint8_t[:, ::1] state_follow):
    """Classify the vocabulary for each state in ``states``.

    ``ctx_states[ctx_offsets[i]:ctx_offsets[i+1]]`` are the return states where ``states[i]``'s
    rule can return to; ``state_follow[i]`` is the 256-entry byte set that can follow those
    callers.  Returns a uint8 array of shape (len(states), n_sorted) holding 0 accepted /
    1 rejected / 2 uncertain per byte-sorted token position.
    """
    cdef intp_t n_states = states.shape[0]
    cdef intp_t n_sorted = vocab.c.n_sorted
    cdef intp_t n_all = automaton.c.n_states
    cdef intp_t i
    cdef StackC st
    cdef uint8_t* unc_prefix = NULL
    cdef int32_t* ctx_tops = NULL
    cdef intp_t ctx_cap = 0
    cdef const int32_t* ctx_ptr = &ctx_states[0] if ctx_states.shape[0] > 0 else NULL
    if state_follow.shape[0] != n_states or state_follow.shape[1] != 256:
        raise ValueError("state_follow must have shape (len(states), 256)")
    if ctx_offsets.shape[0] != n_states + 1 or ctx_offsets[n_states] > ctx_states.shape[0]:
        raise ValueError("ctx_offsets must have len(states) + 1 entries within ctx_states")
    for i in range(n_states):
        if not 0 <= states[i] < n_all:
            raise ValueError(f"state {states[i]} out of range")
    for i in range(ctx_states.shape[0]):
        if not 0 <= ctx_states[i] < n_all:
            raise ValueError(f"context state {ctx_states[i]} out of range")
    result = np.empty((n_states, max(n_sorted, 1)), dtype=np.uint8)
    cdef uint8_t[:, ::1] res = result
    unc_prefix = <uint8_t*>malloc(<size_t>(vocab.c.max_token_len + 2))
    if unc_prefix == NULL:
        raise MemoryError()
    stack_init(&st)
    try:
        with nogil:
            for i in range(n_states):
                _classify_state(&st, &automaton.c, &vocab.c, states[i],
                                ctx_ptr + ctx_offsets[i], ctx_offsets[i + 1] - ctx_offsets[i],
                                &ctx_tops, &ctx_cap, &state_follow[i, 0], unc_prefix, &res[i, 0])
    finally:
        stack_free(&st)
        free(unc_prefix)
        free(ctx_tops)
    return result[:, :n_sorted]


def split_verdicts(const uint8_t[::1] row, const int32_t[::1] ids_ascending,
                   const int32_t[::1] pos_of_ids, intp_t n_words):
    """Turn one state's verdict row into its smallest cache entry.

    ``row[pos]`` is 0/1/2 (accepted/rejected/uncertain) per sorted position;
    ``ids_ascending[k]`` are the eligible ids in increasing order and ``pos_of_ids[k]`` their
    sorted positions.  Returns ``(kind, payload, uncertain_positions, n_accepted, n_rejected)``
    where kind 0 = accepted ids, 1 = rejected ids, 2 = accepted bitset (as int32 words).
    """
    cdef intp_t n = row.shape[0], k, m = 0
    cdef intp_t counts[3]
    cdef int kind
    cdef uint8_t want
    counts[0] = counts[1] = counts[2] = 0
    for k in range(n):
        counts[row[k]] += 1
    unc = np.empty(counts[2], dtype=np.int32)
    cdef int32_t[::1] unc_v = unc
    for k in range(n):
        if row[k] == 2:
            unc_v[m] = <int32_t>k
            m += 1
    if counts[0] <= counts[1] and counts[0] <= n_words:
        kind = 0
    elif counts[1] <= n_words:
        kind = 1
    else:
        kind = 2
    cdef int32_t[::1] pay_v
    cdef uint32_t* words
    if kind == 2:
        payload = np.zeros(max(n_words, 1), dtype=np.int32)[:n_words]
        pay_v = payload
        words = <uint32_t*>&pay_v[0] if n_words > 0 else NULL
        for k in range(ids_ascending.shape[0]):
            if row[pos_of_ids[k]] == 0:
                words[ids_ascending[k] >> 5] |= (<uint32_t>1) << (ids_ascending[k] & 31)
    else:
        want = 0 if kind == 0 else 1
        payload = np.empty(counts[kind], dtype=np.int32)
        pay_v = payload
        m = 0
        for k in range(ids_ascending.shape[0]):
            if row[pos_of_ids[k]] == want:
                pay_v[m] = ids_ascending[k]
                m += 1
    return kind, payload, unc, counts[0], counts[1]
