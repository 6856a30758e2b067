# Runtime limits of one matcher call (xmask.RuntimeLimits): byte steps taken through
# guarded_step / guarded_token_step are counted and checked (a step's units: 1, plus the closure
# items it handled, plain nodes or GSS (state, parent) pairs, see StackC.work_count, plus the
# stack nodes it created); crossing a cap records which one in
# GuardC.crossed and makes the step fail (nothing appended), so the caller's call unwinds as if
# the input were rejected.  Checked after each step: a call overshoots a cap by at most one step.
from xmask.runtime._types cimport int32_t, uint8_t, intp_t
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._stack cimport StackC, stack_step, stack_token_step, stack_truncate

cdef enum:
    XM_LIMIT_NONE = 0
    XM_LIMIT_TOPS = 1        # RuntimeLimits.max_stack_tops
    XM_LIMIT_WORK = 2        # RuntimeLimits.max_work_per_call
    XM_LIMIT_DEPTH = 3       # RuntimeLimits.max_stack_depth


ctypedef struct GuardC:
    intp_t max_tops
    intp_t max_work
    intp_t max_depth         # 0: no cap
    intp_t work              # units spent by the current call (reset by the matcher per call)
    int crossed              # XM_LIMIT_* of the first cap crossed; sticky until cleared


cdef inline bint _guard_check(GuardC* g, const StackC* st, intp_t added) noexcept nogil:
    # After a step that appended a set of `added` tops: record a crossed cap (True if any).
    # The common case (no cap near, no depth cap) is one branch.
    cdef intp_t i
    if added <= g.max_tops and g.work <= g.max_work and g.max_depth == 0:
        return False
    if added > g.max_tops:
        g.crossed = XM_LIMIT_TOPS
    elif g.work > g.max_work:
        g.crossed = XM_LIMIT_WORK
    else:
        for i in range(st.n_tops - added, st.n_tops):
            if st.node_depth[st.tops[i]] > g.max_depth:
                g.crossed = XM_LIMIT_DEPTH
                break
    return g.crossed != XM_LIMIT_NONE


cdef inline intp_t guarded_step(StackC* st, const AutomatonC* a, uint8_t byte,
                                GuardC* g) except -1 nogil:
    # stack_step under the guard g (NULL: unguarded).  0 if the byte is rejected or a cap is
    # crossed (then nothing is appended and g.crossed says which cap).
    cdef intp_t nodes, items, r
    if g == NULL:
        return stack_step(st, a, byte)
    if g.crossed:
        return 0
    nodes = st.n_nodes
    items = st.work_count
    r = stack_step(st, a, byte)
    g.work += 1 + (st.work_count - items) + (st.n_nodes - nodes)
    if r > 0 and _guard_check(g, st, r):
        stack_truncate(st, st.depth - 1)
        return 0
    return r


cdef inline intp_t guarded_token_step(StackC* st, const AutomatonC* a, intp_t from_depth,
                                      int32_t tid, bint merge, GuardC* g) except -1 nogil:
    # stack_token_step under the guard g (NULL: unguarded).  On a crossed cap the caller's
    # history is restored by the caller (accept_token_id truncates to its base), 0 returned.
    cdef intp_t nodes, items, r
    if g == NULL:
        return stack_token_step(st, a, from_depth, tid, merge)
    if g.crossed:
        return 0
    nodes = st.n_nodes
    items = st.work_count
    r = stack_token_step(st, a, from_depth, tid, merge)
    g.work += (st.work_count - items) + (st.n_nodes - nodes)
    if r > 0 and _guard_check(g, st, r):
        return 0
    return r
