"""Token budgets on the persistent parse stack (_stack_budget.pxd).

A rule with a token budget (``rule[max_tokens=n]`` over text, ``any_text`` with ``max_tokens``)
may read at most n tokens after the one during which it was entered (XGrammar 0.2.8's
counting).  Its call puts a marker under the callee frame whose state encodes the deadline
(the last token index the frame may read, ``stack_marker``); markers are transparent to
popping.  Each node keeps, over its paths down to BOTTOM, the least deadline (``node_dead``) and
the best path's least deadline (``node_live``), so after token T a top with node_dead > T is
untouched, one with node_live <= T is dead, and only one in between is rebuilt without its
dead paths (``stack_budget_filter``).  Leaving the rule needs no work here: the closure already
put the tops reached by returning from it into the set.
"""

from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from xmask.runtime._types cimport int32_t, intp_t
from xmask.runtime._stack cimport (
    StackC, NO_DEADLINE, grow_array, stack_node, stack_parent_of, stack_emit, stack_open_set,
    stack_close_set,
)


cdef int stack_enable_budgets(StackC* st) except -1 nogil:
    # Track deadlines from now on (call right after stack_init).
    cdef intp_t i, cap
    if st.node_live != NULL:
        return 0
    cap = 0
    grow_array(<void**>&st.node_live, &cap, st.cap_nodes, sizeof(int32_t))
    cap = 0
    grow_array(<void**>&st.node_dead, &cap, st.cap_nodes, sizeof(int32_t))
    cap = 0
    grow_array(<void**>&st.ps_live, &cap, st.cap_ps, sizeof(int32_t))
    cap = 0
    grow_array(<void**>&st.ps_dead, &cap, st.cap_ps, sizeof(int32_t))
    cap = 0
    grow_array(<void**>&st.set_tok, &cap, st.cap_depth, sizeof(int32_t))
    for i in range(2):
        st.node_live[i] = NO_DEADLINE
        st.node_dead[i] = NO_DEADLINE
    for i in range(st.depth + 1):
        st.set_tok[i] = -1
    st.tok_index = -1
    return 0


cdef int32_t _prune(StackC* st, int32_t x, int32_t last) except -2 nogil:
    # The node for the paths of x that pass no marker with deadline <= last (-1: none).
    cdef int32_t s, par, y, res
    cdef intp_t i, n, m, b
    cdef int32_t* buf
    if st.node_dead[x] > last:
        return x
    if st.node_live[x] <= last:
        return -1
    s = st.node_state[x]
    par = st.node_parent[x]
    if par >= 0:
        y = _prune(st, par, last)
        return -1 if y < 0 else stack_node(st, s, y)
    b = st.ps_start[-2 - par]
    n = st.ps_start[-1 - par] - b
    buf = <int32_t*>malloc(<size_t>n * sizeof(int32_t))
    if buf == NULL:
        with gil:
            raise MemoryError()
    memcpy(buf, st.ps_items + b, <size_t>n * sizeof(int32_t))  # (the arena may move below)
    m = 0
    try:
        for i in range(n):
            y = _prune(st, buf[i], last)
            if y >= 0:
                buf[m] = y
                m += 1
        res = -1 if m == 0 else stack_node(st, s, stack_parent_of(st, buf, m))
    finally:
        free(buf)
    return res


cdef intp_t stack_budget_filter(StackC* st, int32_t last) except -1 nogil:
    # After token `last` was read: drop from the newest top set every path through a budgeted
    # frame whose budget it spent (deadline <= last), in place.  Returns the tops left (0: every
    # path was such; the set is then empty and the caller rolls back).
    cdef intp_t begin = st.set_start[st.depth - 1], end = st.n_tops, i, j, w
    cdef int32_t x, y
    cdef bint dup
    if st.node_live == NULL:
        return end - begin
    for i in range(begin, end):
        if st.node_dead[st.tops[i]] <= last:
            break
    else:
        return end - begin
    w = begin
    for i in range(begin, end):
        x = st.tops[i]
        y = _prune(st, x, last)
        if y < 0:
            continue
        dup = False
        for j in range(begin, w):
            if st.tops[j] == y:
                dup = True
                break
        if not dup:
            st.tops[w] = y
            w += 1
    st.n_tops = w
    st.set_start[st.depth] = w
    return w - begin


cdef bint stack_budget_alive(const StackC* st, int32_t last) noexcept nogil:
    # Whether some path of the newest top set survives stack_budget_filter(st, last).
    cdef intp_t i
    if st.node_live == NULL:
        return True
    for i in range(st.set_start[st.depth - 1], st.set_start[st.depth]):
        if st.node_live[st.tops[i]] > last:
            return True
    return False


cdef int stack_repeat_set(StackC* st) except -1 nogil:
    # Append a copy of the newest top set: an input that reads nothing but counts as a token
    # (an empty accept_string, for budgets).
    cdef intp_t b = st.set_start[st.depth - 1], e = st.set_start[st.depth], i
    stack_open_set(st)
    for i in range(b, e):
        stack_emit(st, st.tops[i])
    stack_close_set(st)
    return 0
