"""Persistent parse stack: the hash-consed node arena, parent sets and the history of top sets
(_stack.pxd), and the plain closure of one step.

The plain closure walks nodes (state, parent) one by one: cheapest when every state shows up
with one parent, the common case.  The steps themselves (``stack_step`` and friends) and the
merged closure they switch to when a state repeats (a graph-structured stack) are in
_stack_gss.pyx; this module holds what both closures share.
"""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy, memmove

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, intp_t
from xmask.runtime._types cimport XM_FLAG_FINAL, XM_FLAG_HAS_BYTES, XM_FLAG_TOKEN
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._intseq cimport sort_unique


cdef int grow_array(void** ptr, intp_t* cap, intp_t need, size_t elem) except -1 nogil:
    # Grow an array to hold at least `need` elements (doubling).  The only allocation path.
    cdef intp_t new_cap = cap[0] if cap[0] > 0 else 16
    cdef void* p
    while new_cap < need:
        new_cap *= 2
    if new_cap > (<intp_t>1 << 40) // <intp_t>elem:
        with gil:
            raise MemoryError("xmask stack arena exceeds its size limit")
    p = realloc(ptr[0], <size_t>new_cap * elem)
    if p == NULL:
        with gil:
            raise MemoryError()
    ptr[0] = p
    cap[0] = new_cap
    return 0



cdef inline uint32_t _hash(int32_t state, int32_t parent) noexcept nogil:
    cdef uint32_t h = (<uint32_t>state) * 0x9E3779B1u
    h ^= (<uint32_t>parent + 0x7F4A7C15u) * 0x85EBCA77u
    h ^= h >> 15
    return h


cdef int _rehash(StackC* st, intp_t new_cap) except -1 nogil:
    cdef int32_t* t = <int32_t*>malloc(<size_t>new_cap * sizeof(int32_t))
    cdef intp_t i, slot
    cdef intp_t mask = new_cap - 1
    if t == NULL:
        with gil:
            raise MemoryError()
    memset(t, 0xFF, <size_t>new_cap * sizeof(int32_t))
    for i in range(2, st.n_nodes):
        slot = _hash(st.node_state[i], st.node_parent[i]) & mask
        while t[slot] >= 0:
            slot = (slot + 1) & mask
        t[slot] = <int32_t>i
    free(st.table)
    st.table = t
    st.table_cap = new_cap
    return 0


cdef int stack_init(StackC* st) except -1 nogil:
    memset(st, 0, sizeof(StackC))
    grow_array(<void**>&st.node_state, &st.cap_nodes, 256, sizeof(int32_t))
    st.node_parent = <int32_t*>malloc(<size_t>st.cap_nodes * sizeof(int32_t))
    st.node_depth = <int32_t*>malloc(<size_t>st.cap_nodes * sizeof(int32_t))
    st.node_reach = <uint8_t*>malloc(<size_t>st.cap_nodes * sizeof(uint8_t))
    st.mark = <uint32_t*>malloc(<size_t>st.cap_nodes * sizeof(uint32_t))
    if (st.node_parent == NULL or st.node_depth == NULL or st.node_reach == NULL
            or st.mark == NULL):
        with gil:
            raise MemoryError()
    memset(st.mark, 0, <size_t>st.cap_nodes * sizeof(uint32_t))
    grow_array(<void**>&st.tops, &st.cap_tops, 1024, sizeof(int32_t))
    grow_array(<void**>&st.set_start, &st.cap_depth, 1024, sizeof(intp_t))
    grow_array(<void**>&st.work, &st.cap_work, 256, sizeof(int32_t))
    grow_array(<void**>&st.ps_start, &st.cap_ps, 16, sizeof(intp_t))
    st.ps_depth = <int32_t*>malloc(<size_t>st.cap_ps * sizeof(int32_t))
    st.ps_reach = <uint8_t*>malloc(<size_t>st.cap_ps * sizeof(uint8_t))
    if st.ps_depth == NULL or st.ps_reach == NULL:
        with gil:
            raise MemoryError()
    _rehash(st, 1024)
    stack_reset(st, True)
    return 0


cdef void stack_free(StackC* st) noexcept nogil:
    free(st.node_state)
    free(st.node_parent)
    free(st.node_depth)
    free(st.node_reach)
    free(st.mark)
    free(st.table)
    free(st.ps_items)
    free(st.ps_start)
    free(st.ps_depth)
    free(st.ps_reach)
    free(st.ps_table)
    free(st.tops)
    free(st.set_start)
    free(st.work)
    free(st.lv)
    free(st.items)
    free(st.pair_key)
    free(st.pair_stamp)
    free(st.order)
    free(st.buf)
    free(st.node_live)
    free(st.node_dead)
    free(st.ps_live)
    free(st.ps_dead)
    free(st.set_tok)
    memset(st, 0, sizeof(StackC))


cdef int _copy(void** dst, intp_t* cap, const void* src, intp_t n, intp_t cap_min,
               size_t elem) except -1 nogil:
    # dst = a fresh array of capacity max(n, cap_min) holding src[0:n].
    cap[0] = 0
    dst[0] = NULL
    grow_array(dst, cap, n if n > cap_min else cap_min, elem)
    if n > 0:
        memcpy(dst[0], src, <size_t>n * elem)
    return 0


cdef int stack_clone(StackC* dst, const StackC* src) except -1 nogil:
    # dst (uninitialized) = an independent copy of src's used arena, hash tables and history.
    # Only the used prefixes are copied; epoch stamps and step scratch start afresh.
    cdef intp_t cap_nodes, cap2, cap_ps
    memset(dst, 0, sizeof(StackC))
    _copy(<void**>&dst.node_state, &dst.cap_nodes, src.node_state, src.n_nodes, 256,
          sizeof(int32_t))
    cap_nodes = dst.cap_nodes
    _copy(<void**>&dst.node_parent, &cap2, src.node_parent, src.n_nodes, cap_nodes,
          sizeof(int32_t))
    _copy(<void**>&dst.node_depth, &cap2, src.node_depth, src.n_nodes, cap_nodes,
          sizeof(int32_t))
    _copy(<void**>&dst.node_reach, &cap2, src.node_reach, src.n_nodes, cap_nodes,
          sizeof(uint8_t))
    cap2 = 0
    grow_array(<void**>&dst.mark, &cap2, cap_nodes, sizeof(uint32_t))
    memset(dst.mark, 0, <size_t>cap_nodes * sizeof(uint32_t))
    dst.n_nodes = src.n_nodes
    _copy(<void**>&dst.table, &dst.table_cap, src.table, src.table_cap, src.table_cap,
          sizeof(int32_t))
    _copy(<void**>&dst.ps_items, &dst.cap_ps_items, src.ps_items, src.n_ps_items, 16,
          sizeof(int32_t))
    dst.n_ps_items = src.n_ps_items
    _copy(<void**>&dst.ps_start, &dst.cap_ps, src.ps_start, src.n_ps + 1, 16, sizeof(intp_t))
    cap_ps = dst.cap_ps
    _copy(<void**>&dst.ps_depth, &cap2, src.ps_depth, src.n_ps, cap_ps, sizeof(int32_t))
    _copy(<void**>&dst.ps_reach, &cap2, src.ps_reach, src.n_ps, cap_ps, sizeof(uint8_t))
    dst.n_ps = src.n_ps
    if src.ps_table_cap > 0:
        _copy(<void**>&dst.ps_table, &dst.ps_table_cap, src.ps_table, src.ps_table_cap,
              src.ps_table_cap, sizeof(int32_t))
    _copy(<void**>&dst.tops, &dst.cap_tops, src.tops, src.n_tops, 1024, sizeof(int32_t))
    dst.n_tops = src.n_tops
    _copy(<void**>&dst.set_start, &dst.cap_depth, src.set_start, src.depth + 1, 1024,
          sizeof(intp_t))
    dst.depth = src.depth
    _copy(<void**>&dst.work, &dst.cap_work, src.work, 0, 256, sizeof(int32_t))
    if src.node_live != NULL:
        _copy(<void**>&dst.node_live, &cap2, src.node_live, src.n_nodes, cap_nodes, sizeof(int32_t))
        _copy(<void**>&dst.node_dead, &cap2, src.node_dead, src.n_nodes, cap_nodes, sizeof(int32_t))
        _copy(<void**>&dst.ps_live, &cap2, src.ps_live, src.n_ps, cap_ps, sizeof(int32_t))
        _copy(<void**>&dst.ps_dead, &cap2, src.ps_dead, src.n_ps, cap_ps, sizeof(int32_t))
        _copy(<void**>&dst.set_tok, &cap2, src.set_tok, src.depth + 1, dst.cap_depth,
              sizeof(int32_t))
        dst.tok_index = src.tok_index
    dst.bottom_cont = src.bottom_cont
    dst.n_bottom_cont = src.n_bottom_cont
    dst.max_depth = src.max_depth
    dst.work_count = src.work_count
    return 0


cdef int stack_reset(StackC* st, bint drop_nodes) except -1 nogil:
    # Empty the history; with drop_nodes also empty the arena (keeping only the sentinels).
    if drop_nodes:
        st.n_nodes = 2  # the sentinels BOTTOM (0) and CONTEXT (1)
        st.node_state[0] = -1
        st.node_parent[0] = -1
        st.node_depth[0] = 0
        st.node_reach[0] = REACH_BOTTOM
        st.node_state[1] = -1
        st.node_parent[1] = -1
        st.node_depth[1] = 0
        st.node_reach[1] = REACH_CONTEXT
        # (epoch stamps stay: the epoch only grows, so old stamps never match a later step)
        memset(st.table, 0xFF, <size_t>st.table_cap * sizeof(int32_t))
        st.n_ps = 0
        st.n_ps_items = 0
        st.ps_start[0] = 0
        if st.ps_table != NULL:
            memset(st.ps_table, 0xFF, <size_t>st.ps_table_cap * sizeof(int32_t))
    st.depth = 0
    st.n_tops = 0
    st.set_start[0] = 0
    st.tok_index = -1
    return 0


cdef int32_t stack_find(const StackC* st, int32_t state, int32_t parent) noexcept nogil:
    # The node (state, parent) if it exists, else -1 (nothing is created).
    cdef intp_t mask = st.table_cap - 1
    cdef intp_t slot = _hash(state, parent) & mask
    cdef int32_t n
    while True:
        n = st.table[slot]
        if n < 0:
            return -1
        if st.node_state[n] == state and st.node_parent[n] == parent:
            return n
        slot = (slot + 1) & mask


cdef int32_t stack_node(StackC* st, int32_t state, int32_t parent) except -1 nogil:
    # The unique node for (state, parent), created if new.  parent: a node id or -2 - set.
    cdef intp_t mask = st.table_cap - 1
    cdef intp_t slot = _hash(state, parent) & mask
    cdef int32_t n
    cdef intp_t old_cap
    while True:
        n = st.table[slot]
        if n < 0:
            break
        if st.node_state[n] == state and st.node_parent[n] == parent:
            return n
        slot = (slot + 1) & mask
    if st.n_nodes >= 0x7FFFFFF0:
        with gil:
            raise MemoryError("xmask stack arena is full")
    if st.n_nodes == st.cap_nodes:
        old_cap = st.cap_nodes
        grow_array(<void**>&st.node_state, &st.cap_nodes, old_cap + 1, sizeof(int32_t))
        grow_array(<void**>&st.node_parent, &old_cap, st.cap_nodes, sizeof(int32_t))
        old_cap = st.n_nodes
        grow_array(<void**>&st.node_depth, &old_cap, st.cap_nodes, sizeof(int32_t))
        old_cap = st.n_nodes
        grow_array(<void**>&st.node_reach, &old_cap, st.cap_nodes, sizeof(uint8_t))
        old_cap = st.n_nodes
        grow_array(<void**>&st.mark, &old_cap, st.cap_nodes, sizeof(uint32_t))
        memset(st.mark + st.n_nodes, 0, <size_t>(st.cap_nodes - st.n_nodes) * sizeof(uint32_t))
        if st.node_live != NULL:
            old_cap = st.n_nodes
            grow_array(<void**>&st.node_live, &old_cap, st.cap_nodes, sizeof(int32_t))
            old_cap = st.n_nodes
            grow_array(<void**>&st.node_dead, &old_cap, st.cap_nodes, sizeof(int32_t))
    n = <int32_t>st.n_nodes
    st.n_nodes += 1
    st.node_state[n] = state
    st.node_parent[n] = parent
    # (a budget marker, state < -1, is not a frame: it adds no depth)
    if parent >= 0:
        st.node_depth[n] = st.node_depth[parent] + (state >= 0)
        st.node_reach[n] = st.node_reach[parent]
    else:
        st.node_depth[n] = st.ps_depth[-2 - parent] + (state >= 0)
        st.node_reach[n] = st.ps_reach[-2 - parent]
    if st.node_live != NULL:
        _budget_of_node(st, n, state, parent)
    st.table[slot] = n
    if 2 * st.n_nodes > st.table_cap:
        _rehash(st, 2 * st.table_cap)
    return n


# ---- parent sets ------------------------------------------------------------------------------

cdef inline uint32_t _hash_ids(const int32_t* ids, intp_t n) noexcept nogil:
    cdef uint32_t h = 0x811C9DC5u
    cdef intp_t i
    for i in range(n):
        h = (h ^ <uint32_t>ids[i]) * 0x01000193u
        h ^= h >> 13
    return h


cdef int _ps_rehash(StackC* st, intp_t new_cap) except -1 nogil:
    cdef int32_t* t = <int32_t*>malloc(<size_t>new_cap * sizeof(int32_t))
    cdef intp_t k, slot, mask = new_cap - 1
    if t == NULL:
        with gil:
            raise MemoryError()
    memset(t, 0xFF, <size_t>new_cap * sizeof(int32_t))
    for k in range(st.n_ps):
        slot = _hash_ids(st.ps_items + st.ps_start[k], st.ps_start[k + 1] - st.ps_start[k]) & mask
        while t[slot] >= 0:
            slot = (slot + 1) & mask
        t[slot] = <int32_t>k
    free(st.ps_table)
    st.ps_table = t
    st.ps_table_cap = new_cap
    return 0


cdef int32_t stack_parent_of(StackC* st, int32_t* ids, intp_t n) except -1 nogil:
    # The parent value for the node ids ids[0:n] (any order, duplicates allowed, n >= 1): the id
    # itself if there is one, else -2 - k for the hash-consed set k (created if new).
    cdef intp_t slot, mask, i, b, cap_ps
    cdef int32_t k, depth = 0
    cdef uint8_t reach = 0
    n = sort_unique(ids, n)
    if n == 1:
        return ids[0]
    if 2 * (st.n_ps + 1) > st.ps_table_cap:
        _ps_rehash(st, 64 if st.ps_table_cap == 0 else 2 * st.ps_table_cap)
    mask = st.ps_table_cap - 1
    slot = _hash_ids(ids, n) & mask
    while True:
        k = st.ps_table[slot]
        if k < 0:
            break
        b = st.ps_start[k]
        if st.ps_start[k + 1] - b == n:
            i = 0
            while i < n and st.ps_items[b + i] == ids[i]:
                i += 1
            if i == n:
                return -2 - k
        slot = (slot + 1) & mask
    if st.n_ps >= 0x7FFFFFF0:
        with gil:
            raise MemoryError("xmask stack arena is full")
    if st.n_ps + 2 > st.cap_ps:
        cap_ps = st.cap_ps
        grow_array(<void**>&st.ps_start, &st.cap_ps, st.n_ps + 2, sizeof(intp_t))
        b = cap_ps
        grow_array(<void**>&st.ps_depth, &b, st.cap_ps, sizeof(int32_t))
        b = cap_ps
        grow_array(<void**>&st.ps_reach, &b, st.cap_ps, sizeof(uint8_t))
        if st.ps_live != NULL:
            b = cap_ps
            grow_array(<void**>&st.ps_live, &b, st.cap_ps, sizeof(int32_t))
            b = cap_ps
            grow_array(<void**>&st.ps_dead, &b, st.cap_ps, sizeof(int32_t))
    ensure_array(<void**>&st.ps_items, &st.cap_ps_items, st.n_ps_items + n, sizeof(int32_t))
    memcpy(st.ps_items + st.n_ps_items, ids, <size_t>n * sizeof(int32_t))
    for i in range(n):
        if st.node_depth[ids[i]] > depth:
            depth = st.node_depth[ids[i]]
        reach |= st.node_reach[ids[i]]
    k = <int32_t>st.n_ps
    st.ps_depth[k] = depth
    st.ps_reach[k] = reach
    if st.ps_live != NULL:
        _budget_of_set(st, k, ids, n)
    st.n_ps_items += n
    st.n_ps += 1
    st.ps_start[st.n_ps] = st.n_ps_items
    st.ps_table[slot] = k
    return -2 - k


# ---- one step: shared parts (used by _stack_gss too) ---------------------------------------

cdef int stack_epoch_wrapped(StackC* st) except -1 nogil:
    # The epoch wrapped to 0 (stack_next_epoch): old stamps could collide, clear them.
    memset(st.mark, 0, <size_t>st.cap_nodes * sizeof(uint32_t))
    if st.lv != NULL:
        memset(st.lv, 0, <size_t>st.cap_lv * sizeof(LvState))
    if st.lr != NULL:
        memset(st.lr, 0, <size_t>st.cap_lr * sizeof(LvRet))
    if st.pair_stamp != NULL:
        memset(st.pair_stamp, 0, <size_t>st.pair_cap * sizeof(uint32_t))
    st.epoch = 1
    return 0


cdef int stack_grow_lv(StackC* st, const AutomatonC* a) except -1 nogil:
    # Per-state scratch for every state of `a` (stack_begin), the new part zeroed.
    cdef intp_t old = st.cap_lv
    grow_array(<void**>&st.lv, &st.cap_lv, a.n_states, sizeof(LvState))
    memset(st.lv + old, 0, <size_t>(st.cap_lv - old) * sizeof(LvState))
    return 0


# ---- the plain closure ------------------------------------------------------------------------

cdef int _closure(StackC* st, const AutomatonC* a, intp_t n_work, intp_t max_conflicts,
                  intp_t* conflicts) except -1 nogil:
    # Expand the work list: emit nodes that can read a byte or a whole token (and BOTTOM), push
    # callee frames for calls, pop finished frames to their parents.  Each node is handled once
    # per epoch, so nullable loops terminate; left recursion is rejected at compile time.
    # Returns 1 (stop: redo the step merged) once more than max_conflicts nodes met a state
    # that another node of this step already had.
    cdef int32_t x, s, ret, parent, k, k_end
    cdef intp_t i, done = 0
    cdef uint8_t f
    cdef uint32_t epoch = st.epoch
    cdef LvState* lv = st.lv  # (not reallocated during a step)
    while n_work > 0:
        n_work -= 1
        x = st.work[n_work]
        done += 1  # every work item counts (StackC.work_count), repeats included
        if stack_step_over(st, done):
            st.work_count += done
            return 1  # the caller sees step_over and abandons the step
        if st.mark[x] == epoch:
            continue
        st.mark[x] = epoch
        if x < 2:  # a sentinel: no edges of its own
            stack_emit(st, x)
            continue
        s = st.node_state[x]
        parent = st.node_parent[x]
        if s < -1:  # a budget marker, popped to: pop on to its parent
            _push_parents(st, &n_work, parent)
            continue
        if lv[s].mark == epoch:
            conflicts[0] += 1
            if conflicts[0] > max_conflicts:
                st.work_count += done
                return 1
        lv[s].mark = epoch
        f = a.flags[s]
        if f & (XM_FLAG_HAS_BYTES | XM_FLAG_TOKEN):
            stack_emit(st, x)
        k_end = a.call_offsets[s + 1]
        k = a.call_offsets[s]
        while k < k_end:
            ret = a.call_ret[k]
            if ret >= 0:
                # The callee frame sits one deeper than x; over the bound the path is dropped.
                if st.max_depth > 0 and st.node_depth[x] >= st.max_depth:
                    k += 1
                    continue
                ret = stack_node(st, ret, parent)
            else:
                ret = parent  # tail call: the callee replaces x, no deeper
            if a.call_budget != NULL and a.call_budget[k] >= 0:
                ret = stack_node(st, stack_marker(st, a.call_budget[k]), ret)
            stack_push_work(st, &n_work, stack_node(st, a.call_target[k], ret))
            k += 1
        if f & XM_FLAG_FINAL:
            _push_parents(st, &n_work, parent)
    st.work_count += done
    return 0


cdef inline int _push_parents(StackC* st, intp_t* n_work, int32_t parent) except -1 nogil:
    cdef intp_t i
    if parent >= 0:
        stack_push_work(st, n_work, parent)
    else:
        for i in range(st.ps_start[-2 - parent], st.ps_start[-1 - parent]):
            stack_push_work(st, n_work, st.ps_items[i])
    return 0


cdef int stack_plain_seed(StackC* st, const AutomatonC* a, int32_t s, int32_t parent,
                          intp_t max_conflicts, intp_t* conflicts) except -1 nogil:
    # State s over `parent` starts this step and is closed at once; 1 if the step met more than
    # max_conflicts repeated states (conflicts: the count so far) and must be redone merged.
    st.work[0] = stack_node(st, s, parent)  # cap_work >= 16 after stack_init
    return _closure(st, a, 1, max_conflicts, conflicts)


cdef bint stack_set_contains(const StackC* st, intp_t d, int32_t node) noexcept nogil:
    # Whether top set d contains `node` (sets are small: a linear scan).
    cdef intp_t i
    for i in range(st.set_start[d], st.set_start[d + 1]):
        if st.tops[i] == node:
            return True
    return False


cdef int stack_drop_front(StackC* st, intp_t n_sets) except -1 nogil:
    # Forget the oldest n_sets top sets (0 <= n_sets < depth): set n_sets becomes set 0, so a
    # history bounded by a rollback window (GrammarMatcher's max_rollback_tokens) stays bounded.
    # O(kept sets); capacities are kept for the sets to come; nodes stay in the arena.
    cdef intp_t off, i
    if n_sets <= 0 or n_sets >= st.depth:
        return 0
    off = st.set_start[n_sets]
    memmove(st.tops, st.tops + off, <size_t>(st.n_tops - off) * sizeof(int32_t))
    st.n_tops -= off
    for i in range(n_sets, st.depth + 1):
        st.set_start[i - n_sets] = st.set_start[i] - off
    if st.set_tok != NULL:
        memmove(st.set_tok, st.set_tok + n_sets, <size_t>(st.depth - n_sets) * sizeof(int32_t))
    st.depth -= n_sets
    return 0


cdef int64_t stack_memory_bytes(const StackC* st) noexcept nogil:
    # Bytes of the stack's heap arrays (capacities, not just the used part), parent sets and
    # the per-step scratch included.
    return (st.cap_nodes * <int64_t>(3 * sizeof(int32_t) + sizeof(uint32_t) + sizeof(uint8_t))
            + st.table_cap * <int64_t>sizeof(int32_t) + st.cap_tops * <int64_t>sizeof(int32_t)
            + st.cap_depth * <int64_t>sizeof(intp_t) + st.cap_work * <int64_t>sizeof(int32_t)
            + st.cap_ps_items * <int64_t>sizeof(int32_t)
            + st.cap_ps * <int64_t>(sizeof(intp_t) + sizeof(int32_t) + sizeof(uint8_t))
            + st.ps_table_cap * <int64_t>sizeof(int32_t)
            + st.cap_lv * <int64_t>sizeof(LvState) + st.cap_lr * <int64_t>sizeof(LvRet)
            + st.cap_items * <int64_t>sizeof(LvItem)
            + st.pair_cap * <int64_t>(sizeof(uint64_t) + sizeof(uint32_t))
            + st.cap_order * <int64_t>sizeof(int32_t) + st.cap_buf * <int64_t>sizeof(int32_t)
            + (0 if st.node_live == NULL else
               2 * (st.cap_nodes + st.cap_ps) * <int64_t>sizeof(int32_t)
               + st.cap_depth * <int64_t>sizeof(int32_t)))


# ---- token budgets: deadlines of new nodes and parent sets (see _stack_budget.pyx) -----------

cdef inline void _budget_of_node(StackC* st, int32_t n, int32_t state, int32_t parent) noexcept nogil:
    cdef int32_t own = -3 - state if state < -1 else NO_DEADLINE
    cdef int32_t live, dead
    if parent >= 0:
        live = st.node_live[parent]
        dead = st.node_dead[parent]
    else:
        live = st.ps_live[-2 - parent]
        dead = st.ps_dead[-2 - parent]
    st.node_live[n] = own if own < live else live
    st.node_dead[n] = own if own < dead else dead


cdef inline void _budget_of_set(StackC* st, int32_t k, const int32_t* ids, intp_t n) noexcept nogil:
    cdef int32_t live = -1, dead = NO_DEADLINE
    cdef intp_t i
    for i in range(n):
        if st.node_live[ids[i]] > live:
            live = st.node_live[ids[i]]
        if st.node_dead[ids[i]] < dead:
            dead = st.node_dead[ids[i]]
    st.ps_live[k] = live
    st.ps_dead[k] = dead
