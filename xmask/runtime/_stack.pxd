# Persistent parse stack (implemented in _stack.pyx): a hash-consed graph-structured stack.
#
# A node is (state, parent) in one arena, hash-consed, so equal stacks share one node and a
# "stack" is just a node id.  The parent is either one node id (>= 0, the common case) or, for a
# node that merges several stacks with the same top state (ambiguous grammars: a GSS as in GLR
# parsing), a parent *set*: parent = -2 - k names the hash-consed sorted id list k of the parent
# set arena.  A node stands for every path from it down to a sentinel.  Node 0 is BOTTOM: below
# the root rule (at run time: the grammar may end here; in the cache builder: the walked rule has
# returned).  Node 1 is CONTEXT, used only by the cache builder: below the possible callers of
# the walked rule (unknown).  When bottom_cont is set, BOTTOM in a top set steps like the nodes
# of bottom_cont (the cache builder's "continue in every possible caller"); at run time it is
# NULL.  The parser state after each accepted byte (or whole token, see stack_token_step) is a
# *top set* (node ids whose states have byte or token edges, plus 0 when the bottom is
# reachable); the history keeps every top set since the start, so rolling back is truncation.
# Nodes are never freed while a history may refer to them.
#
# One step (a byte, a token edge, a start) first runs the plain closure, node by node; when it
# meets the same state in more than a few different nodes (ambiguity), it is redone as a GSS
# closure that groups frames by state and unions their parents, so a step costs at most
# O(states x parents) whatever the ambiguity (see _stack.pyx).
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, intp_t
from xmask.runtime._tables cimport AutomatonC


ctypedef struct LvState:
    # Per automaton state, for one step (valid while mark / stamp == StackC.epoch).
    uint32_t mark            # plain closure: a node of this state was closed in this step
    uint32_t stamp           # GSS closure: `act` belongs to this step
    int32_t act              # head of the active frame's parent list (LvItem index, -1: none)


ctypedef struct LvRet:
    # Per call edge, for one GSS step: the frame the callee returns to (valid while stamp ==
    # StackC.epoch).  Keyed by the edge, not the return state: callers that share a return state
    # but call different rules must not share return frames.
    uint32_t stamp
    uint32_t flags           # LV_POPPED | LV_BUSY (_stack.pyx)
    int32_t ret              # head of its parent list (LvItem index)
    int32_t depth            # deepest stack through it so far
    int32_t node             # its node once built, -1 before


ctypedef struct LvItem:
    int32_t state
    int32_t val              # a node id, or -2 - k: this step's return frame of call edge k
    int32_t next


ctypedef struct StackC:
    int32_t* node_state      # [cap_nodes] automaton state of each node (-1 for the sentinels)
    int32_t* node_parent     # [cap_nodes] parent node (>= 0), parent set (-2 - k), -1: none
    int32_t* node_depth      # [cap_nodes] frames down to BOTTOM, deepest path (sentinels: 0)
    uint8_t* node_reach      # [cap_nodes] REACH_BOTTOM | REACH_CONTEXT: where its paths end
    uint32_t* mark           # [cap_nodes] epoch stamps deduplicating one closure
    intp_t n_nodes
    intp_t cap_nodes
    int32_t* table           # open-addressing hash of nodes, -1 = empty slot
    intp_t table_cap         # power of two
    uint32_t epoch
    # parent sets: set k is ps_items[ps_start[k] : ps_start[k + 1]], sorted, >= 2 ids
    int32_t* ps_items
    intp_t n_ps_items
    intp_t cap_ps_items
    intp_t* ps_start         # [n_ps + 1]
    int32_t* ps_depth        # [n_ps] deepest node_depth among the items
    uint8_t* ps_reach        # [n_ps] OR of the items' node_reach
    intp_t n_ps
    intp_t cap_ps
    int32_t* ps_table        # open-addressing hash of parent sets, -1 = empty slot
    intp_t ps_table_cap      # power of two (0 before the first set)
    # history
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
    intp_t work_count        # closure work since stack_init (never reset), for callers that
                             # bound it (RuntimeLimits.max_work_per_call): plain work-list items
                             # (repeats included), GSS (state, parent) pairs and the parent-set
                             # items the GSS closure reads
    # scratch of one step (not copied by stack_clone)
    LvState* lv              # [cap_lv] per automaton state
    intp_t cap_lv
    LvRet* lr                # [cap_lr] per call edge
    intp_t cap_lr
    LvItem* items
    intp_t n_items
    intp_t cap_items
    uint64_t* pair_key       # open-addressing set of (kind, state, val) seen in this GSS step
    uint32_t* pair_stamp
    intp_t n_pairs
    intp_t pair_cap
    int32_t* order           # GSS step: states with an active frame that is a top, in order
    intp_t n_order
    intp_t cap_order
    int32_t* buf             # GSS step: one parent set being built
    intp_t cap_buf
    uint32_t sentinels       # GSS step: bit 0 BOTTOM, bit 1 CONTEXT popped to


cdef enum:
    REACH_BOTTOM = 1
    REACH_CONTEXT = 2


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


cdef inline bint stack_reaches_bottom(const StackC* st, int32_t node) noexcept nogil:
    # Whether a path of `node` ends at BOTTOM (rather than CONTEXT).
    return (st.node_reach[node] & REACH_BOTTOM) != 0


cdef inline void stack_truncate(StackC* st, intp_t depth) noexcept nogil:
    # Roll the history back so that it holds `depth` top sets.
    st.depth = depth
    st.n_tops = st.set_start[depth]
