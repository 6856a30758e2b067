"""Persistent parse stack: hash-consed graph-structured stack + history of top sets (_stack.pxd).

Two closures compute a step's top set.  The plain one walks nodes (state, parent) one by one:
cheapest when every state shows up with one parent, the common case.  On an ambiguous grammar the
same state shows up under many parents and each one is expanded again (``root ::= y "b" |
z "c"; y ::= "a" root; z ::= "a" root`` doubles its tops per byte), so once a step has met more
than ``_max_conflicts`` such repeats it is redone by the GSS closure: it tracks, per state, one
active frame and one return frame, each with a growing parent list, and propagates each
(state, parent) pair once:

* active (s, p): a byte or token edge makes s a top; a call to t returning to r adds p to the
  return frame of r and (t, return frame of r) to the active frames (a tail call adds (t, p));
  a final s pops to p;
* popping to an old node (q, P) adds (q, e) for each e in P; to this step's return frame of r,
  the frame becomes active with every parent it has or gets later.

At the end each top state becomes one node whose parents are the sorted, hash-consed union
(return frames first, depth first).  Both closures give the same set of stacks; the GSS one
costs O(states x parents x calls) per step.
"""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy, memmove

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, intp_t
from xmask.runtime._types cimport XM_FLAG_FINAL, XM_FLAG_HAS_BYTES, XM_FLAG_TOKEN
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._intseq cimport sort_unique

cdef enum:
    LV_POPPED = 1            # the return frame was popped to in this step (it is active too)
    LV_BUSY = 2              # the return frame's node is being built (cycle guard)
    KIND_ACT = 0
    KIND_RET = 1

# A plain closure that meets this many repeated states switches to the GSS closure; -1: always
# GSS (tests run whole walks that way), a huge value: never.
cdef intp_t _max_conflicts = 0


def set_max_conflicts(n):
    """Repeated states a plain step tolerates before it is redone merged (for tests and benches).

    -1 merges every step; a huge value never merges (exponential on ambiguous grammars).
    Returns the previous value.  Example::

        >>> old = set_max_conflicts(-1); _ = set_max_conflicts(old)
    """
    global _max_conflicts
    old = _max_conflicts
    _max_conflicts = int(n)
    return old


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


cdef inline int _ensure(void** ptr, intp_t* cap, intp_t need, size_t elem) except -1 nogil:
    if need > cap[0]:
        grow_array(ptr, cap, need, elem)
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
    return 0


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
    n = <int32_t>st.n_nodes
    st.n_nodes += 1
    st.node_state[n] = state
    st.node_parent[n] = parent
    if parent >= 0:
        st.node_depth[n] = st.node_depth[parent] + 1
        st.node_reach[n] = st.node_reach[parent]
    else:
        st.node_depth[n] = st.ps_depth[-2 - parent] + 1
        st.node_reach[n] = st.ps_reach[-2 - parent]
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


cdef int32_t _parent_of(StackC* st, int32_t* ids, intp_t n) except -1 nogil:
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
    _ensure(<void**>&st.ps_items, &st.cap_ps_items, st.n_ps_items + n, sizeof(int32_t))
    memcpy(st.ps_items + st.n_ps_items, ids, <size_t>n * sizeof(int32_t))
    for i in range(n):
        if st.node_depth[ids[i]] > depth:
            depth = st.node_depth[ids[i]]
        reach |= st.node_reach[ids[i]]
    k = <int32_t>st.n_ps
    st.ps_depth[k] = depth
    st.ps_reach[k] = reach
    st.n_ps_items += n
    st.n_ps += 1
    st.ps_start[st.n_ps] = st.n_ps_items
    st.ps_table[slot] = k
    return -2 - k


# ---- one step: shared parts ---------------------------------------------------------------

cdef inline int _push_work(StackC* st, intp_t* n_work, int32_t v) except -1 nogil:
    if n_work[0] == st.cap_work:
        grow_array(<void**>&st.work, &st.cap_work, n_work[0] + 1, sizeof(int32_t))
    st.work[n_work[0]] = v
    n_work[0] += 1
    return 0


cdef inline int _emit(StackC* st, int32_t node) except -1 nogil:
    if st.n_tops == st.cap_tops:
        grow_array(<void**>&st.tops, &st.cap_tops, st.n_tops + 1, sizeof(int32_t))
    st.tops[st.n_tops] = node
    st.n_tops += 1
    return 0


cdef int _next_epoch(StackC* st) except -1 nogil:
    st.epoch += 1
    if st.epoch == 0:  # wrapped: old stamps could collide
        memset(st.mark, 0, <size_t>st.cap_nodes * sizeof(uint32_t))
        if st.lv != NULL:
            memset(st.lv, 0, <size_t>st.cap_lv * sizeof(LvState))
        if st.lr != NULL:
            memset(st.lr, 0, <size_t>st.cap_lr * sizeof(LvRet))
        if st.pair_stamp != NULL:
            memset(st.pair_stamp, 0, <size_t>st.pair_cap * sizeof(uint32_t))
        st.epoch = 1
    return 0


cdef int _begin(StackC* st, const AutomatonC* a) except -1 nogil:
    # Start a step: per-state scratch for this automaton, a fresh epoch.
    cdef intp_t old
    if st.cap_lv < a.n_states:
        old = st.cap_lv
        grow_array(<void**>&st.lv, &st.cap_lv, a.n_states, sizeof(LvState))
        memset(st.lv + old, 0, <size_t>(st.cap_lv - old) * sizeof(LvState))
    _next_epoch(st)
    return 0


cdef inline int _open_set(StackC* st) except -1 nogil:
    if st.depth + 2 > st.cap_depth:
        grow_array(<void**>&st.set_start, &st.cap_depth, st.depth + 2, sizeof(intp_t))
    return 0


# ---- the plain closure ------------------------------------------------------------------------

cdef int _closure(StackC* st, const AutomatonC* a, intp_t n_work,
                  intp_t* conflicts) except -1 nogil:
    # Expand the work list: emit nodes that can read a byte or a whole token (and BOTTOM), push
    # callee frames for calls, pop finished frames to their parents.  Each node is handled once
    # per epoch, so nullable loops terminate; left recursion is rejected at compile time.
    # Returns 1 (stop: redo the step merged) once more than _max_conflicts nodes met a state
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
        if st.mark[x] == epoch:
            continue
        st.mark[x] = epoch
        if x < 2:  # a sentinel: no edges of its own
            _emit(st, x)
            continue
        s = st.node_state[x]
        if lv[s].mark == epoch:
            conflicts[0] += 1
            if conflicts[0] > _max_conflicts:
                st.work_count += done
                return 1
        lv[s].mark = epoch
        parent = st.node_parent[x]
        f = a.flags[s]
        if f & (XM_FLAG_HAS_BYTES | XM_FLAG_TOKEN):
            _emit(st, x)
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
            _push_work(st, &n_work, stack_node(st, a.call_target[k], ret))
            k += 1
        if f & XM_FLAG_FINAL:
            if parent >= 0:
                _push_work(st, &n_work, parent)
            else:
                for i in range(st.ps_start[-2 - parent], st.ps_start[-1 - parent]):
                    _push_work(st, &n_work, st.ps_items[i])
    st.work_count += done
    return 0


# ---- the GSS closure --------------------------------------------------------------------------

cdef int _gss_begin(StackC* st, const AutomatonC* a) except -1 nogil:
    cdef intp_t old, n_edges = a.call_offsets[a.n_states]
    if st.cap_lr < n_edges:
        old = st.cap_lr
        grow_array(<void**>&st.lr, &st.cap_lr, n_edges, sizeof(LvRet))
        memset(st.lr + old, 0, <size_t>(st.cap_lr - old) * sizeof(LvRet))
    _next_epoch(st)
    st.n_items = 0
    st.n_pairs = 0
    st.n_order = 0
    st.sentinels = 0
    return 0


cdef int _pair_grow(StackC* st) except -1 nogil:
    cdef intp_t cap = 256 if st.pair_cap == 0 else 2 * st.pair_cap
    cdef uint64_t* keys = <uint64_t*>malloc(<size_t>cap * sizeof(uint64_t))
    cdef uint32_t* stamps = <uint32_t*>malloc(<size_t>cap * sizeof(uint32_t))
    cdef intp_t i, slot, mask = cap - 1
    if keys == NULL or stamps == NULL:
        free(keys)
        free(stamps)
        with gil:
            raise MemoryError()
    memset(stamps, 0, <size_t>cap * sizeof(uint32_t))
    for i in range(st.pair_cap):
        if st.pair_stamp[i] == st.epoch:
            slot = _hash64(st.pair_key[i]) & mask
            while stamps[slot] == st.epoch:
                slot = (slot + 1) & mask
            stamps[slot] = st.epoch
            keys[slot] = st.pair_key[i]
    free(st.pair_key)
    free(st.pair_stamp)
    st.pair_key = keys
    st.pair_stamp = stamps
    st.pair_cap = cap
    return 0


cdef inline uint32_t _hash64(uint64_t key) noexcept nogil:
    return <uint32_t>((key * <uint64_t>0x9E3779B97F4A7C15) >> 32)


cdef int _pair_new(StackC* st, uint32_t kind_key, int32_t val) except -1 nogil:
    # 1 if (kind_key, val) was not seen yet in this step (and now is), else 0.
    cdef uint64_t key = (<uint64_t>kind_key << 32) | <uint32_t>val
    cdef intp_t slot, mask
    if 2 * (st.n_pairs + 1) > st.pair_cap:
        _pair_grow(st)
    mask = st.pair_cap - 1
    slot = _hash64(key) & mask
    while st.pair_stamp[slot] == st.epoch:
        if st.pair_key[slot] == key:
            return 0
        slot = (slot + 1) & mask
    st.pair_stamp[slot] = st.epoch
    st.pair_key[slot] = key
    st.n_pairs += 1
    return 1


cdef inline int32_t _new_item(StackC* st, int32_t state, int32_t val,
                              int32_t nxt) except -1 nogil:
    if st.n_items >= 0x7FFFFFF0:
        with gil:
            raise MemoryError("xmask stack step is too large")
    _ensure(<void**>&st.items, &st.cap_items, st.n_items + 1, sizeof(LvItem))
    st.items[st.n_items].state = state
    st.items[st.n_items].val = val
    st.items[st.n_items].next = nxt
    st.n_items += 1
    return <int32_t>(st.n_items - 1)


cdef int _act(StackC* st, const AutomatonC* a, int32_t s, int32_t p,
              intp_t* n_work) except -1 nogil:
    # State s is active over parent p (queued once per step).
    cdef LvState* L
    if not _pair_new(st, (<uint32_t>s << 1) | KIND_ACT, p):
        return 0
    L = &st.lv[s]
    if L.stamp != st.epoch:
        L.stamp = st.epoch
        L.act = -1
        if a.flags[s] & (XM_FLAG_HAS_BYTES | XM_FLAG_TOKEN):
            _ensure(<void**>&st.order, &st.cap_order, st.n_order + 1, sizeof(int32_t))
            st.order[st.n_order] = s
            st.n_order += 1
    L.act = _new_item(st, s, p, L.act)
    _push_work(st, n_work, L.act)
    return 0


cdef int _ret(StackC* st, const AutomatonC* a, int32_t k, int32_t p, int32_t dp,
              intp_t* n_work) except -1 nogil:
    # Call edge k's return frame gets parent p (of depth dp).
    cdef LvRet* R
    if not _pair_new(st, (<uint32_t>k << 1) | KIND_RET, p):
        return 0
    R = &st.lr[k]
    if R.stamp != st.epoch:
        R.stamp = st.epoch
        R.flags = 0
        R.ret = -1
        R.depth = 0
        R.node = -1
    R.ret = _new_item(st, a.call_ret[k], p, R.ret)
    if dp + 1 > R.depth:
        R.depth = dp + 1
    if R.flags & LV_POPPED:
        _act(st, a, a.call_ret[k], p, n_work)
    return 0


cdef int _pop(StackC* st, const AutomatonC* a, int32_t p, intp_t* n_work) except -1 nogil:
    # A frame over p finished: p becomes active (once per step).
    cdef int32_t q, par, i
    cdef intp_t j
    cdef LvRet* R
    if p >= 0:
        if st.mark[p] == st.epoch:
            return 0
        st.mark[p] = st.epoch
        if p < 2:
            st.sentinels |= <uint32_t>1 << p
            return 0
        q = st.node_state[p]
        par = st.node_parent[p]
        if par >= 0:
            _act(st, a, q, par, n_work)
        else:
            st.work_count += st.ps_start[-1 - par] - st.ps_start[-2 - par]
            for j in range(st.ps_start[-2 - par], st.ps_start[-1 - par]):
                _act(st, a, q, st.ps_items[j], n_work)
        return 0
    R = &st.lr[-2 - p]
    if R.flags & LV_POPPED:
        return 0
    R.flags |= LV_POPPED
    i = R.ret
    while i >= 0:
        _act(st, a, st.items[i].state, st.items[i].val, n_work)
        i = st.items[i].next
    return 0


cdef int _gss_seed(StackC* st, const AutomatonC* a, int32_t s, int32_t parent,
                   intp_t* n_work) except -1 nogil:
    # State s becomes active over every parent of `parent` (a node id or -2 - set).
    cdef intp_t j
    if parent >= 0:
        return _act(st, a, s, parent, n_work)
    st.work_count += st.ps_start[-1 - parent] - st.ps_start[-2 - parent]
    for j in range(st.ps_start[-2 - parent], st.ps_start[-1 - parent]):
        _act(st, a, s, st.ps_items[j], n_work)
    return 0


cdef int _gss_run(StackC* st, const AutomatonC* a, intp_t n_work) except -1 nogil:
    # Propagate every queued (state, parent) pair once (see the module docstring).
    cdef int32_t it, s, p, dp, k, k_end, ret
    while n_work > 0:
        n_work -= 1
        it = st.work[n_work]
        s = st.items[it].state
        p = st.items[it].val
        st.work_count += 1
        dp = st.node_depth[p] if p >= 0 else st.lr[-2 - p].depth
        k_end = a.call_offsets[s + 1]
        k = a.call_offsets[s]
        while k < k_end:
            ret = a.call_ret[k]
            if ret >= 0:
                if st.max_depth > 0 and dp + 1 >= st.max_depth:
                    k += 1
                    continue  # the callee frame would be too deep: this path is dropped
                _ret(st, a, k, p, dp, &n_work)
                _act(st, a, a.call_target[k], -2 - k, &n_work)
            else:
                _act(st, a, a.call_target[k], p, &n_work)
            k += 1
        if a.flags[s] & XM_FLAG_FINAL:
            _pop(st, a, p, &n_work)
    return 0


cdef int32_t _build_list(StackC* st, const AutomatonC* a, int32_t head) except -1 nogil:
    # The parent value for an item list: its return frames built first (depth first).
    cdef int32_t i = head, v
    cdef intp_t n = 0
    while i >= 0:
        v = st.items[i].val
        if v < 0:
            _build_ret(st, a, -2 - v)
        n += 1
        i = st.items[i].next
    _ensure(<void**>&st.buf, &st.cap_buf, n, sizeof(int32_t))
    n = 0
    i = head
    while i >= 0:
        v = st.items[i].val
        st.buf[n] = v if v >= 0 else st.lr[-2 - v].node
        n += 1
        i = st.items[i].next
    return _parent_of(st, st.buf, n)


cdef int _build_ret(StackC* st, const AutomatonC* a, int32_t k) except -1 nogil:
    cdef LvRet* R = &st.lr[k]
    cdef int32_t par
    if R.node >= 0:
        return 0
    if R.flags & LV_BUSY:  # only left recursion could do this, and the compiler rejects it
        with gil:
            raise RuntimeError("xmask internal error: cyclic return frames in one stack step")
    R.flags |= LV_BUSY
    par = _build_list(st, a, R.ret)
    R = &st.lr[k]
    R.node = stack_node(st, a.call_ret[k], par)
    R.flags &= ~(<uint32_t>LV_BUSY)
    return 0


cdef int _gss_emit(StackC* st, const AutomatonC* a, intp_t dedupe_from) except -1 nogil:
    # Build one node per top state, then append them (and the sentinels popped to) to tops,
    # skipping nodes already in tops[dedupe_from:] when dedupe_from >= 0.
    cdef intp_t i
    cdef int32_t s, node
    for i in range(st.n_order):
        s = st.order[i]
        node = stack_node(st, s, _build_list(st, a, st.lv[s].act))
        st.order[i] = node
    for i in range(2):
        if st.sentinels & (<uint32_t>1 << i):
            _ensure(<void**>&st.order, &st.cap_order, st.n_order + 1, sizeof(int32_t))
            st.order[st.n_order] = <int32_t>i
            st.n_order += 1
    if dedupe_from >= 0:
        _next_epoch(st)
        for i in range(dedupe_from, st.n_tops):
            st.mark[st.tops[i]] = st.epoch
    for i in range(st.n_order):
        node = st.order[i]
        if dedupe_from >= 0:
            if st.mark[node] == st.epoch:
                continue
            st.mark[node] = st.epoch
        _emit(st, node)
    return 0


# ---- steps ------------------------------------------------------------------------------------

cdef inline int _seed(StackC* st, const AutomatonC* a, int32_t s, int32_t parent, bint gss,
                      intp_t* counter) except -1 nogil:
    # State s over `parent` starts this step.  Plain (counter: repeats met): closed at once,
    # 1 if the step must be redone merged.  GSS (counter: the work list): queued.
    if gss:
        _gss_seed(st, a, s, parent, counter)
        return 0
    st.work[0] = stack_node(st, s, parent)  # cap_work >= 16 after stack_init
    return _closure(st, a, 1, counter)


cdef int _gss_finish(StackC* st, const AutomatonC* a, intp_t n_work,
                     intp_t dedupe_from) except -1 nogil:
    _gss_run(st, a, n_work)
    return _gss_emit(st, a, dedupe_from)


cdef intp_t stack_start(StackC* st, const AutomatonC* a, int32_t state) except -1 nogil:
    # Append the top set of a fresh stack (state over BOTTOM); returns its size.
    return stack_start_many(st, a, &state, 1, 0)


cdef int _start_pass(StackC* st, const AutomatonC* a, const int32_t* states, intp_t n,
                     int32_t parent, bint gss, intp_t* counter) except -1 nogil:
    cdef intp_t i
    for i in range(n):
        if _seed(st, a, states[i], parent, gss, counter):
            return 1
    return 0


cdef intp_t stack_start_many(StackC* st, const AutomatonC* a, const int32_t* states, intp_t n,
                             int32_t parent) except -1 nogil:
    # Append the top set of the stacks (states[i] over parent); returns its size.
    cdef intp_t begin, conflicts = 0, n_work = 0
    cdef bint merged = _max_conflicts < 0
    _open_set(st)
    _begin(st, a)
    begin = st.set_start[st.depth]
    if not merged:
        merged = _start_pass(st, a, states, n, parent, False, &conflicts)
    if merged:
        st.n_tops = begin
        _gss_begin(st, a)
        _start_pass(st, a, states, n, parent, True, &n_work)
        _gss_finish(st, a, n_work, -1)
    st.depth += 1
    st.set_start[st.depth] = st.n_tops
    return st.n_tops - begin


cdef inline int _step_nodes(StackC* st, const AutomatonC* a, const int32_t* nodes, intp_t n,
                            intp_t cls, bint gss, intp_t* counter) except -1 nogil:
    # Seed the byte class's targets of nodes[0:n]; 1 if the step must be redone merged.
    cdef intp_t i
    cdef int32_t x, t
    for i in range(n):
        x = nodes[i]
        if x < 2:
            continue
        t = a.trans[st.node_state[x] * a.n_classes + cls]
        if t >= 0 and _seed(st, a, t, st.node_parent[x], gss, counter):
            return 1
    return 0


cdef inline int _step_pass(StackC* st, const AutomatonC* a, intp_t begin, intp_t end, intp_t cls,
                           bint gss, intp_t* counter) except -1 nogil:
    cdef intp_t i
    cdef int32_t x
    for i in range(begin, end):
        x = st.tops[i]
        if x == 0 and st.bottom_cont != NULL:
            if _step_nodes(st, a, st.bottom_cont, st.n_bottom_cont, cls, gss, counter):
                return 1
        elif _step_nodes(st, a, &x, 1, cls, gss, counter):
            return 1
    return 0


cdef intp_t stack_step(StackC* st, const AutomatonC* a, uint8_t byte) except -1 nogil:
    # Advance the newest top set by one byte.  Non-empty result: appended as a new set, size
    # returned.  Empty: nothing is appended and 0 is returned (the byte is rejected).
    cdef intp_t begin, end, conflicts = 0, n_work = 0
    cdef intp_t cls = a.byte_class[byte]
    cdef bint merged = _max_conflicts < 0
    if st.depth == 0:
        return 0
    _open_set(st)
    _begin(st, a)
    begin = st.set_start[st.depth - 1]
    end = st.set_start[st.depth]
    if not merged:
        merged = _step_pass(st, a, begin, end, cls, False, &conflicts)
    if merged:
        st.n_tops = end
        _gss_begin(st, a)
        _step_pass(st, a, begin, end, cls, True, &n_work)
        _gss_finish(st, a, n_work, -1)
    if st.n_tops == end:
        return 0
    st.depth += 1
    st.set_start[st.depth] = st.n_tops
    return st.n_tops - end


cdef bint stack_set_contains(const StackC* st, intp_t d, int32_t node) noexcept nogil:
    # Whether top set d contains `node` (sets are small: a linear scan).
    cdef intp_t i
    for i in range(st.set_start[d], st.set_start[d + 1]):
        if st.tops[i] == node:
            return True
    return False


cdef int _token_pass(StackC* st, const AutomatonC* a, intp_t d, int32_t tid, bint gss,
                     intp_t* counter) except -1 nogil:
    # Seed the token edges that take `tid` from top set d.
    cdef intp_t i, w = tid >> 5
    cdef int32_t x, s, k
    for i in range(st.set_start[d], st.set_start[d + 1]):
        x = st.tops[i]
        if x < 2:
            continue
        s = st.node_state[x]
        k = a.token_set_of[s]
        if k < 0 or not ((a.token_bits[k * a.token_words + w] >> (tid & 31)) & 1):
            continue
        if _seed(st, a, a.token_target[s], st.node_parent[x], gss, counter):
            return 1
    return 0


cdef intp_t stack_token_step(StackC* st, const AutomatonC* a, intp_t from_depth, int32_t tid,
                             bint merge) except -1 nogil:
    # Take the token edges for token `tid` from top set from_depth - 1.  merge=False: the
    # result is appended as a new set (nothing appended, 0 returned, if no edge takes tid).
    # merge=True: the newest set (the same token read byte by byte) is extended with the result
    # instead, without duplicates, so one token boundary stays one history entry.  Returns how
    # many tops the token edges added.
    cdef intp_t i, begin, end, w, conflicts = 0, n_work = 0
    cdef bint merged = _max_conflicts < 0
    if a.n_token_sets == 0 or from_depth < 1 or from_depth > st.depth:
        return 0
    w = tid >> 5
    if tid < 0 or w >= a.token_words or not ((a.token_any[w] >> (tid & 31)) & 1):
        return 0
    _begin(st, a)
    begin = st.set_start[st.depth - 1] if merge else st.n_tops
    if merge:
        for i in range(begin, st.n_tops):  # already there: closing them again adds nothing
            st.mark[st.tops[i]] = st.epoch
    else:
        _open_set(st)
    end = st.n_tops
    if not merged:
        merged = _token_pass(st, a, from_depth - 1, tid, False, &conflicts)
    if merged:
        st.n_tops = end
        _gss_begin(st, a)
        _token_pass(st, a, from_depth - 1, tid, True, &n_work)
        _gss_finish(st, a, n_work, begin if merge else -1)
    if st.n_tops == end:
        return 0
    if not merge:
        st.depth += 1
    st.set_start[st.depth] = st.n_tops
    return st.n_tops - end


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
            + st.cap_order * <int64_t>sizeof(int32_t) + st.cap_buf * <int64_t>sizeof(int32_t))
