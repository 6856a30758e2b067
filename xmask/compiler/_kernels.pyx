"""Compile-time kernel: classify every vocabulary token for every automaton state.

For a state s the walk starts from the stack (s over BOTTOM), where BOTTOM stands for the unknown
context below s's rule.  Tokens are visited in byte-sorted order so a shared prefix is parsed once
(truncate the history to the common prefix, then push the rest), and when byte d kills every path
all following tokens that share those d+1 bytes are classified at once.

A token is
* accepted  if a path consumes all of it (possibly returning to BOTTOM exactly at its end);
* uncertain if not, but some path returned to BOTTOM before its end and the next byte can follow
  the rule (FOLLOW set): only the real stack can decide;
* rejected  otherwise.
"""

import numpy as np

from libc.stdlib cimport malloc, free
from libc.stdint cimport int32_t, int64_t, uint8_t

from xmask.runtime._types cimport intp_t
from xmask.runtime._tables cimport AutomatonC, VocabC, AutomatonTables, VocabTables
from xmask.runtime._stack cimport (
    StackC, stack_init, stack_free, stack_reset, stack_start, stack_step, stack_truncate,
    stack_has_bottom,
)

cdef enum:
    _ACC = 0
    _REJ = 1
    _UNC = 2


cdef int _classify_state(StackC* st, const AutomatonC* a, const VocabC* v, int32_t state,
                         const uint8_t* follow, uint8_t* unc_prefix, uint8_t* out) except -1 nogil:
    # out[pos] := _ACC / _REJ / _UNC for every sorted position.
    cdef intp_t n = v.n_sorted
    cdef intp_t i = 0, j, d, k, length, reached = 0
    cdef int64_t off
    cdef uint8_t b, verdict
    cdef bint ok
    if st.n_nodes > 1 << 16:
        stack_reset(st, True)
    else:
        stack_reset(st, False)
    stack_start(st, a, state)
    unc_prefix[0] = 0
    while i < n:
        k = v.lcp[i] if v.lcp[i] < reached else reached
        stack_truncate(st, k + 1)
        off = v.tok_offsets[i]
        length = v.tok_offsets[i + 1] - off
        ok = True
        d = k
        while d < length:
            b = v.tok_bytes[off + d]
            unc_prefix[d + 1] = unc_prefix[d] | (stack_has_bottom(st, d) and follow[b] != 0)
            if stack_step(st, a, b) == 0:
                ok = False
                break
            d += 1
        if ok:
            reached = length
            out[i] = _ACC
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
                    uint8_t[:, ::1] state_follow):
    """Classify the vocabulary for each state in ``states``.

    ``state_follow[i]`` is the 256-entry FOLLOW byte set of ``states[i]``'s rule.  Returns a
    uint8 array of shape (len(states), n_sorted) holding 0 accepted / 1 rejected / 2 uncertain
    per byte-sorted token position.
    """
    cdef intp_t n_states = states.shape[0]
    cdef intp_t n_sorted = vocab.c.n_sorted
    if state_follow.shape[0] != n_states or state_follow.shape[1] != 256:
        raise ValueError("state_follow must have shape (len(states), 256)")
    result = np.empty((n_states, max(n_sorted, 1)), dtype=np.uint8)
    cdef uint8_t[:, ::1] res = result
    cdef StackC st
    cdef uint8_t* unc_prefix = <uint8_t*>malloc(<size_t>(vocab.c.max_token_len + 2))
    cdef intp_t i
    cdef int rc = 0
    if unc_prefix == NULL:
        raise MemoryError()
    try:
        stack_init(&st)
        with nogil:
            for i in range(n_states):
                _classify_state(&st, &automaton.c, &vocab.c, states[i], &state_follow[i, 0],
                                unc_prefix, &res[i, 0])
    finally:
        stack_free(&st)
        free(unc_prefix)
    return result[:, :n_sorted]
