# Runtime limits of one matcher call (xmask.RuntimeLimits): byte steps taken through
# guarded_step / guarded_token_step are counted and checked (a step's units: 1, plus the closure
# items it handled, plain nodes or GSS (state, parent) pairs, see StackC.work_count, plus the
# stack nodes it created); crossing a cap records which one in
# GuardC.crossed and makes the step fail (nothing appended), so the caller's call unwinds as if
# the input were rejected.  Checked after each step: a call overshoots a cap by at most one step,
# except the work cap, which also bounds the closure items inside a step (StackC.step_budget).
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, intp_t
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._stack cimport StackC, stack_truncate, stack_memory_bytes
from xmask.runtime._stack_gss cimport stack_step, stack_token_step

cdef enum:
    XM_LIMIT_NONE = 0
    XM_LIMIT_TOPS = 1        # RuntimeLimits.max_stack_tops
    XM_LIMIT_WORK = 2        # RuntimeLimits.max_work_per_call
    XM_LIMIT_DEPTH = 3       # RuntimeLimits.max_stack_depth
    XM_LIMIT_MEMORY = 4      # RuntimeLimits.max_stack_bytes


ctypedef struct GuardC:
    intp_t max_tops
    intp_t max_work
    intp_t max_depth         # 0: no cap
    int64_t max_bytes        # the matcher's parse-stack heap bytes (stack_memory_bytes)
    intp_t caps_seen         # _caps() at the last memory check: only growth triggers one
    intp_t work              # units spent by the current call (reset by the matcher per call)
    int crossed              # XM_LIMIT_* of the first cap crossed; sticky until cleared


cdef inline intp_t _caps(const StackC* st) noexcept nogil:
    # Changes whenever one of the stack's growing arrays is reallocated (they only double).
    return st.cap_nodes + st.table_cap + st.cap_ps_items + st.cap_ps + st.cap_items + st.cap_tops


cdef inline bint _guard_check(GuardC* g, const StackC* st, intp_t added) noexcept nogil:
    # After a step that appended a set of `added` tops: record a crossed cap (True if any).
    # The common case (no cap near, no depth cap, no array grown) is one branch.
    cdef intp_t i, caps = _caps(st)
    if (added <= g.max_tops and g.work <= g.max_work and g.max_depth == 0
            and caps == g.caps_seen):
        return False
    if caps != g.caps_seen:
        g.caps_seen = caps
        if stack_memory_bytes(st) > g.max_bytes:
            g.crossed = XM_LIMIT_MEMORY
            return True
    if added > g.max_tops:
        g.crossed = XM_LIMIT_TOPS
    elif g.work > g.max_work:
        g.crossed = XM_LIMIT_WORK
    elif g.max_depth > 0:
        for i in range(st.n_tops - added, st.n_tops):
            if st.node_depth[st.tops[i]] > g.max_depth:
                g.crossed = XM_LIMIT_DEPTH
                break
    return g.crossed != XM_LIMIT_NONE


cdef inline intp_t _budget(GuardC* g, StackC* st) noexcept nogil:
    # Before a guarded step: the step may handle at most the call's remaining work in closure
    # items (one step of an ambiguous grammar can otherwise need seconds); returns the item
    # count so far, to charge the step's items to the call.
    st.step_budget = g.max_work - g.work + 1 if g.max_work >= g.work else 1
    return st.work_count


cdef inline bint _step_over(GuardC* g, StackC* st) noexcept nogil:
    # After a guarded step: unbounded again for unguarded callers; True (the work cap crossed)
    # if the step was abandoned by its budget (then it appended nothing).
    st.step_budget = 0
    if st.step_over:
        g.crossed = XM_LIMIT_WORK
        return True
    return False


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
    items = _budget(g, st)
    r = stack_step(st, a, byte)
    g.work += 1 + (st.work_count - items) + (st.n_nodes - nodes)
    if _step_over(g, st):
        return 0
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
    items = _budget(g, st)
    r = stack_token_step(st, a, from_depth, tid, merge)
    g.work += (st.work_count - items) + (st.n_nodes - nodes)
    if _step_over(g, st):
        return 0
    if r > 0 and _guard_check(g, st, r):
        return 0
    return r
