"""Persistent parse stack: hash-consed node arena + history of top sets (see _stack.pxd)."""

from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy, memmove

from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, intp_t
from xmask.runtime._types cimport XM_FLAG_FINAL, XM_FLAG_HAS_BYTES, XM_FLAG_TOKEN
from xmask.runtime._tables cimport AutomatonC


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
    st.mark = <uint32_t*>malloc(<size_t>st.cap_nodes * sizeof(uint32_t))
    if st.node_parent == NULL or st.node_depth == NULL or st.mark == NULL:
        with gil:
            raise MemoryError()
    grow_array(<void**>&st.tops, &st.cap_tops, 1024, sizeof(int32_t))
    grow_array(<void**>&st.set_start, &st.cap_depth, 1024, sizeof(intp_t))
    grow_array(<void**>&st.work, &st.cap_work, 256, sizeof(int32_t))
    _rehash(st, 1024)
    stack_reset(st, True)
    return 0


cdef void stack_free(StackC* st) noexcept nogil:
    free(st.node_state)
    free(st.node_parent)
    free(st.node_depth)
    free(st.mark)
    free(st.table)
    free(st.tops)
    free(st.set_start)
    free(st.work)
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
    # dst (uninitialized) = an independent copy of src's used arena, hash table and history.
    # Only the used prefixes are copied; epoch stamps start afresh.
    cdef intp_t cap_nodes, cap2, cap3
    memset(dst, 0, sizeof(StackC))
    _copy(<void**>&dst.node_state, &dst.cap_nodes, src.node_state, src.n_nodes, 256,
          sizeof(int32_t))
    cap_nodes = dst.cap_nodes
    _copy(<void**>&dst.node_parent, &cap2, src.node_parent, src.n_nodes, cap_nodes,
          sizeof(int32_t))
    _copy(<void**>&dst.node_depth, &cap3, src.node_depth, src.n_nodes, cap_nodes,
          sizeof(int32_t))
    cap2 = 0
    grow_array(<void**>&dst.mark, &cap2, cap_nodes, sizeof(uint32_t))
    memset(dst.mark, 0, <size_t>cap_nodes * sizeof(uint32_t))
    dst.n_nodes = src.n_nodes
    _copy(<void**>&dst.table, &dst.table_cap, src.table, src.table_cap, src.table_cap,
          sizeof(int32_t))
    _copy(<void**>&dst.tops, &dst.cap_tops, src.tops, src.n_tops, 1024, sizeof(int32_t))
    dst.n_tops = src.n_tops
    _copy(<void**>&dst.set_start, &dst.cap_depth, src.set_start, src.depth + 1, 1024,
          sizeof(intp_t))
    dst.depth = src.depth
    _copy(<void**>&dst.work, &dst.cap_work, src.work, 0, 256, sizeof(int32_t))
    dst.bottom_cont = src.bottom_cont
    dst.n_bottom_cont = src.n_bottom_cont
    dst.max_depth = src.max_depth
    return 0


cdef int stack_reset(StackC* st, bint drop_nodes) except -1 nogil:
    # Empty the history; with drop_nodes also empty the arena (keeping only BOTTOM).
    if drop_nodes:
        st.n_nodes = 2  # the sentinels BOTTOM (0) and CONTEXT (1)
        st.node_state[0] = -1
        st.node_parent[0] = -1
        st.node_depth[0] = 0
        st.node_state[1] = -1
        st.node_parent[1] = -1
        st.node_depth[1] = 0
        memset(st.mark, 0, <size_t>st.cap_nodes * sizeof(uint32_t))
        st.epoch = 0
        memset(st.table, 0xFF, <size_t>st.table_cap * sizeof(int32_t))
    st.depth = 0
    st.n_tops = 0
    st.set_start[0] = 0
    return 0


cdef int32_t stack_node(StackC* st, int32_t state, int32_t parent) except -1 nogil:
    # The unique node for (state, parent), created if new.
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
        grow_array(<void**>&st.mark, &old_cap, st.cap_nodes, sizeof(uint32_t))
        memset(st.mark + st.n_nodes, 0, <size_t>(st.cap_nodes - st.n_nodes) * sizeof(uint32_t))
    n = <int32_t>st.n_nodes
    st.n_nodes += 1
    st.node_state[n] = state
    st.node_parent[n] = parent
    st.node_depth[n] = st.node_depth[parent] + 1
    st.table[slot] = n
    if 2 * st.n_nodes > st.table_cap:
        _rehash(st, 2 * st.table_cap)
    return n


cdef inline int _push_work(StackC* st, intp_t* n_work, int32_t node) except -1 nogil:
    if n_work[0] == st.cap_work:
        grow_array(<void**>&st.work, &st.cap_work, n_work[0] + 1, sizeof(int32_t))
    st.work[n_work[0]] = node
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
        st.epoch = 1
    return 0


cdef int _closure(StackC* st, const AutomatonC* a, intp_t n_work) except -1 nogil:
    # Expand the work list: emit nodes that can read a byte or a whole token (and BOTTOM), push
    # callee frames for calls, pop finished frames to their parent.  Each node is handled once per epoch, so
    # nullable loops terminate; left recursion is rejected at compile time.
    cdef int32_t x, s, ret, parent, k, k_end
    cdef uint8_t f
    cdef uint32_t epoch = st.epoch
    while n_work > 0:
        n_work -= 1
        x = st.work[n_work]
        if st.mark[x] == epoch:
            continue
        st.mark[x] = epoch
        if x < 2:  # a sentinel: no edges of its own
            _emit(st, x)
            continue
        s = st.node_state[x]
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
            _push_work(st, &n_work, parent)
    return 0


cdef inline int _open_set(StackC* st) except -1 nogil:
    if st.depth + 2 > st.cap_depth:
        grow_array(<void**>&st.set_start, &st.cap_depth, st.depth + 2, sizeof(intp_t))
    return 0


cdef intp_t stack_start(StackC* st, const AutomatonC* a, int32_t state) except -1 nogil:
    # Append the top set of a fresh stack (state over BOTTOM); returns its size.
    return stack_start_many(st, a, &state, 1, 0)


cdef intp_t stack_start_many(StackC* st, const AutomatonC* a, const int32_t* states, intp_t n,
                             int32_t parent) except -1 nogil:
    # Append the top set of the stacks (states[i] over parent); returns its size.
    cdef intp_t begin, i
    _open_set(st)
    _next_epoch(st)
    begin = st.set_start[st.depth]
    for i in range(n):
        st.work[0] = stack_node(st, states[i], parent)  # cap_work >= 16 after stack_init
        _closure(st, a, 1)
    st.depth += 1
    st.set_start[st.depth] = st.n_tops
    return st.n_tops - begin


cdef inline int _step_nodes(StackC* st, const AutomatonC* a, const int32_t* nodes, intp_t n,
                            intp_t cls) except -1 nogil:
    cdef intp_t i
    cdef int32_t x, t
    for i in range(n):
        x = nodes[i]
        if x < 2:
            continue
        t = a.trans[st.node_state[x] * a.n_classes + cls]
        if t >= 0:
            st.work[0] = stack_node(st, t, st.node_parent[x])
            _closure(st, a, 1)
    return 0


cdef intp_t stack_step(StackC* st, const AutomatonC* a, uint8_t byte) except -1 nogil:
    # Advance the newest top set by one byte.  Non-empty result: appended as a new set, size
    # returned.  Empty: nothing is appended and 0 is returned (the byte is rejected).
    cdef intp_t i, begin, end
    cdef int32_t x
    cdef intp_t cls = a.byte_class[byte]
    if st.depth == 0:
        return 0
    _open_set(st)
    _next_epoch(st)
    begin = st.set_start[st.depth - 1]
    end = st.set_start[st.depth]
    for i in range(begin, end):
        x = st.tops[i]
        if x < 2:
            if x == 0 and st.bottom_cont != NULL:
                _step_nodes(st, a, st.bottom_cont, st.n_bottom_cont, cls)
            continue
        _step_nodes(st, a, &x, 1, cls)
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


cdef intp_t stack_token_step(StackC* st, const AutomatonC* a, intp_t from_depth, int32_t tid,
                             bint merge) except -1 nogil:
    # Take the token edges for token `tid` from top set from_depth - 1.  merge=False: the
    # result is appended as a new set (nothing appended, 0 returned, if no edge takes tid).
    # merge=True: the newest set (the same token read byte by byte) is extended with the result
    # instead, without duplicates, so one token boundary stays one history entry.  Returns how
    # many tops the token edges added.
    cdef intp_t i, begin, end, w
    cdef int32_t x, s, k
    if a.n_token_sets == 0 or from_depth < 1 or from_depth > st.depth:
        return 0
    w = tid >> 5
    if tid < 0 or w >= a.token_words or not ((a.token_any[w] >> (tid & 31)) & 1):
        return 0
    _next_epoch(st)
    if merge:
        begin = st.set_start[st.depth - 1]
        for i in range(begin, st.n_tops):  # already there: closing them again adds nothing
            st.mark[st.tops[i]] = st.epoch
    else:
        _open_set(st)
    end = st.n_tops
    for i in range(st.set_start[from_depth - 1], st.set_start[from_depth]):
        x = st.tops[i]
        if x < 2:
            continue
        s = st.node_state[x]
        k = a.token_set_of[s]
        if k < 0 or not ((a.token_bits[k * a.token_words + w] >> (tid & 31)) & 1):
            continue
        st.work[0] = stack_node(st, a.token_target[s], st.node_parent[x])
        _closure(st, a, 1)
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
    # Bytes of the stack's heap arrays (capacities, not just the used part).
    return (st.cap_nodes * <int64_t>(3 * sizeof(int32_t) + sizeof(uint32_t))
            + st.table_cap * <int64_t>sizeof(int32_t) + st.cap_tops * <int64_t>sizeof(int32_t)
            + st.cap_depth * <int64_t>sizeof(intp_t) + st.cap_work * <int64_t>sizeof(int32_t))
