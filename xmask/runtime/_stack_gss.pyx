"""Steps of the persistent parse stack (_stack.pxd) and their merged closure: a graph-structured
stack (GSS, as in GLR parsing).

Two closures compute a step's top set.  The plain one (_stack.pyx) walks nodes (state, parent)
one by one: cheapest when every state shows up with one parent, the common case.  On an
ambiguous grammar the same state shows up under many parents and each one is expanded again
(``root ::= y "b" | z "c"; y ::= "a" root; z ::= "a" root`` doubles its tops per byte), so once
a step has met more than ``_max_conflicts`` such repeats it is redone by the GSS closure here:
it tracks, per state, one active frame and one return frame, each with a growing parent list,
and propagates each (state, parent) pair once:

* active (s, p): a byte or token edge makes s a top; a call to t returning to r adds p to the
  return frame of r and (t, return frame of r) to the active frames (a tail call adds (t, p));
  a final s pops to p;
* popping to an old node (q, P) adds (q, e) for each e in P; to this step's return frame of r,
  the frame becomes active with every parent it has or gets later.

At the end each top state becomes one node whose parents are the sorted, hash-consed union
(return frames first, depth first).  Both closures give the same set of stacks; the GSS one
costs O(states x parents x calls) per step.
"""

from libc.stdlib cimport malloc, free
from libc.string cimport memset

from xmask.runtime._types cimport int32_t, uint8_t, uint32_t, uint64_t, intp_t
from xmask.runtime._types cimport XM_FLAG_FINAL, XM_FLAG_HAS_BYTES, XM_FLAG_TOKEN, XM_FLAG_STUB
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._stack cimport (
    StackC, LvState, LvRet, LvItem, grow_array, ensure_array, stack_node, stack_parent_of,
    stack_push_work, stack_emit, stack_open_set, stack_next_epoch, stack_begin,
    stack_plain_seed, stack_set_contains, stack_step_over, stack_close_set, stack_marker,
)

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


# ---- the GSS closure --------------------------------------------------------------------------

cdef int _gss_begin(StackC* st, const AutomatonC* a) except -1 nogil:
    cdef intp_t old, n_edges = a.call_offsets[a.n_states]
    if st.cap_lr < n_edges:
        old = st.cap_lr
        grow_array(<void**>&st.lr, &st.cap_lr, n_edges, sizeof(LvRet))
        memset(st.lr + old, 0, <size_t>(st.cap_lr - old) * sizeof(LvRet))
    stack_next_epoch(st)
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
    ensure_array(<void**>&st.items, &st.cap_items, st.n_items + 1, sizeof(LvItem))
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
            ensure_array(<void**>&st.order, &st.cap_order, st.n_order + 1, sizeof(int32_t))
            st.order[st.n_order] = s
            st.n_order += 1
    L.act = _new_item(st, s, p, L.act)
    stack_push_work(st, n_work, L.act)
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
        if q < -1:  # a budget marker: pop on to its parent(s)
            if par >= 0:
                return _pop(st, a, par, n_work)
            for j in range(st.ps_start[-2 - par], st.ps_start[-1 - par]):
                _pop(st, a, st.ps_items[j], n_work)
            return 0
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
        if stack_step_over(st, 0):
            return 0  # abandoned (step_over): the caller discards the step
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
    ensure_array(<void**>&st.buf, &st.cap_buf, n, sizeof(int32_t))
    n = 0
    i = head
    while i >= 0:
        v = st.items[i].val
        st.buf[n] = v if v >= 0 else st.lr[-2 - v].node
        n += 1
        i = st.items[i].next
    return stack_parent_of(st, st.buf, n)


cdef int _build_ret(StackC* st, const AutomatonC* a, int32_t k) except -1 nogil:
    cdef LvRet* R = &st.lr[k]
    cdef int32_t par, node
    if R.node >= 0:
        return 0
    if R.flags & LV_BUSY:  # only left recursion could do this, and the compiler rejects it
        with gil:
            raise RuntimeError("xmask internal error: cyclic return frames in one stack step")
    R.flags |= LV_BUSY
    par = _build_list(st, a, R.ret)
    node = stack_node(st, a.call_ret[k], par)
    if a.call_budget != NULL and a.call_budget[k] >= 0:  # the callee's marker over its return
        node = stack_node(st, stack_marker(st, a.call_budget[k]), node)
    R = &st.lr[k]
    R.node = node
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
            ensure_array(<void**>&st.order, &st.cap_order, st.n_order + 1, sizeof(int32_t))
            st.order[st.n_order] = <int32_t>i
            st.n_order += 1
    if dedupe_from >= 0:
        stack_next_epoch(st)
        for i in range(dedupe_from, st.n_tops):
            st.mark[st.tops[i]] = st.epoch
    for i in range(st.n_order):
        node = st.order[i]
        if dedupe_from >= 0:
            if st.mark[node] == st.epoch:
                continue
            st.mark[node] = st.epoch
        stack_emit(st, node)
    return 0


# ---- steps ------------------------------------------------------------------------------------

cdef inline int _seed(StackC* st, const AutomatonC* a, int32_t s, int32_t parent, bint gss,
                      intp_t* counter) except -1 nogil:
    # State s over `parent` starts this step.  Plain (counter: repeats met): closed at once,
    # 1 if the step must be redone merged.  GSS (counter: the work list): queued.
    if gss:
        _gss_seed(st, a, s, parent, counter)
        return 0
    return stack_plain_seed(st, a, s, parent, _max_conflicts, counter)


cdef int _gss_finish(StackC* st, const AutomatonC* a, intp_t n_work,
                     intp_t dedupe_from) except -1 nogil:
    _gss_run(st, a, n_work)
    if st.step_over:
        return 0
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
    stack_open_set(st)
    stack_begin(st, a)
    begin = st.set_start[st.depth]
    if not merged:
        merged = _start_pass(st, a, states, n, parent, False, &conflicts)
    if merged and not st.step_over:
        st.n_tops = begin
        _gss_begin(st, a)
        _start_pass(st, a, states, n, parent, True, &n_work)
        _gss_finish(st, a, n_work, -1)
    if st.step_over:
        st.n_tops = begin  # an empty set: nothing can be read from it
    stack_close_set(st)
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
        if t >= 0:
            if _seed(st, a, t, st.node_parent[x], gss, counter):
                return 1
        elif a.stub_hit != NULL and a.flags[st.node_state[x]] & XM_FLAG_STUB:
            a.stub_hit[0] = 1  # this byte may be the unbuilt rule's: the walk is not exact
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
    stack_open_set(st)
    stack_begin(st, a)
    begin = st.set_start[st.depth - 1]
    end = st.set_start[st.depth]
    if not merged:
        merged = _step_pass(st, a, begin, end, cls, False, &conflicts)
    if merged and not st.step_over:
        st.n_tops = end
        _gss_begin(st, a)
        _step_pass(st, a, begin, end, cls, True, &n_work)
        _gss_finish(st, a, n_work, -1)
    if st.step_over:
        st.n_tops = end
    if st.n_tops == end:
        return 0
    stack_close_set(st)
    return st.n_tops - end


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
    stack_begin(st, a)
    begin = st.set_start[st.depth - 1] if merge else st.n_tops
    if merge:
        for i in range(begin, st.n_tops):  # already there: closing them again adds nothing
            st.mark[st.tops[i]] = st.epoch
    else:
        stack_open_set(st)
    end = st.n_tops
    if not merged:
        merged = _token_pass(st, a, from_depth - 1, tid, False, &conflicts)
    if merged and not st.step_over:
        st.n_tops = end
        _gss_begin(st, a)
        _token_pass(st, a, from_depth - 1, tid, True, &n_work)
        _gss_finish(st, a, n_work, begin if merge else -1)
    if st.step_over:
        st.n_tops = end
    if st.n_tops == end:
        return 0
    if not merge:
        stack_close_set(st)
    else:
        st.set_start[st.depth] = st.n_tops
    return st.n_tops - end
