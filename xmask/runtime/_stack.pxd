# Persistent parse stack (implemented in _stack.pyx).
#
# Nodes (state, parent) live in one arena and are hash-consed, so equal stacks share one node
# and a "stack" is just a node id.  Node 0 is BOTTOM: below the root rule (at run time: the
# grammar may end here; in the cache builder: the walked rule has returned).  Node 1 is CONTEXT,
# used only by the cache builder: below the possible callers of the walked rule (unknown).
# When bottom_cont is set, BOTTOM in a top set steps like the nodes of bottom_cont (the
# cache builder's "continue in every possible caller"); at run time it is NULL.  The parser
# state after each accepted byte (or whole token, see stack_token_step) is a *top set* (node ids
# whose states have byte or token edges, plus 0
# when the bottom is reachable); the history keeps every top set since the start, so rolling
# back is truncation.  Nodes are never freed while a history may refer to them.
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, intp_t
from xmask.runtime._tables cimport AutomatonC


ctypedef struct StackC:
    int32_t* node_state      # [cap_nodes] automaton state of each node (-1 for BOTTOM)
    int32_t* node_parent     # [cap_nodes] parent node (the caller's frame at its return state)
    int32_t* node_depth      # [cap_nodes] frames from this node down to BOTTOM (sentinels: 0)
    uint32_t* mark           # [cap_nodes] epoch stamps deduplicating one closure
    intp_t n_nodes
    intp_t cap_nodes
    int32_t* table           # open-addressing hash of nodes, -1 = empty slot
    intp_t table_cap         # power of two
    uint32_t epoch
    int32_t* tops            # every top set of the history, concatenated
    intp_t n_tops
    intp_t cap_tops
    intp_t* set_start        # [depth + 1] set d is tops[set_start[d] : set_start[d + 1]]
    intp_t depth             # number of top sets in the history
    intp_t cap_depth
    int32_t* work            # closure work list
    intp_t cap_work
    const int32_t* bottom_cont   # top set that BOTTOM continues into, or NULL
    intp_t n_bottom_cont
    intp_t max_depth         # > 0: a call that would make a stack deeper is dropped (see
                             # xmask.set_max_recursion_depth); 0 = unbounded (the cache builder)


cdef int grow_array(void** ptr, intp_t* cap, intp_t need, size_t elem) except -1 nogil
cdef int stack_init(StackC* st) except -1 nogil
cdef void stack_free(StackC* st) noexcept nogil
cdef int stack_clone(StackC* dst, const StackC* src) except -1 nogil
cdef int stack_reset(StackC* st, bint drop_nodes) except -1 nogil
cdef int32_t stack_node(StackC* st, int32_t state, int32_t parent) except -1 nogil
cdef intp_t stack_start(StackC* st, const AutomatonC* a, int32_t state) except -1 nogil
cdef intp_t stack_step(StackC* st, const AutomatonC* a, uint8_t byte) except -1 nogil
cdef intp_t stack_token_step(StackC* st, const AutomatonC* a, intp_t from_depth, int32_t tid,
                             bint merge) except -1 nogil
cdef bint stack_set_contains(const StackC* st, intp_t d, int32_t node) noexcept nogil
cdef intp_t stack_start_many(StackC* st, const AutomatonC* a, const int32_t* states, intp_t n,
                             int32_t parent) except -1 nogil
cdef int stack_drop_front(StackC* st, intp_t n_sets) except -1 nogil
cdef int64_t stack_memory_bytes(const StackC* st) noexcept nogil


cdef inline bint stack_has_bottom(const StackC* st, intp_t d) noexcept nogil:
    # Whether top set d contains BOTTOM (at run time: the grammar may end here).
    return stack_set_contains(st, d, 0)


cdef inline void stack_truncate(StackC* st, intp_t depth) noexcept nogil:
    # Roll the history back so that it holds `depth` top sets.
    st.depth = depth
    st.n_tops = st.set_start[depth]
