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
# O(states x parents) whatever the ambiguity.  The arena, parent sets, history and the plain
# closure are in _stack.pyx; the steps (stack_start, stack_step, stack_token_step) and the GSS
# closure in _stack_gss.pyx (_stack_gss.pxd).
from xmask.runtime._types cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, intp_t
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._clock cimport monotonic_seconds


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
    # bounds on one step (start, byte, token edge), set by the caller (0 = none): a step that
    # handles more than step_budget closure items, or is still running at monotonic time
    # step_deadline, is abandoned: nothing is appended, 0 is returned and step_over is set.
    # Without them one step of a grammar whose nullable calls nest in big repeats (e.g.
    # root ::= "" | [a-z] ("" root){10000}) meets states x parents = 10^8 items (seconds, GBs).
    intp_t step_budget
    double step_deadline
    intp_t step_base         # work_count when the current step began
    bint step_over           # the last step was abandoned by step_budget / step_deadline
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
    # Token budgets (rule[max_tokens=n] over text; all NULL unless stack_enable_budgets, in
    # _stack_budget.pyx): a call of a budgeted rule puts a *marker* node under the callee,
    # state -3 - deadline (the last token index its frame may read: tok_index at the call + n),
    # transparent to popping.
    int32_t* node_live       # [cap_nodes] max over the node's paths of the least deadline
    int32_t* node_dead       # [cap_nodes] least deadline over all its paths (0x7FFFFFFF: none)
    int32_t* ps_live         # [cap_ps] the same for parent sets
    int32_t* ps_dead
    int32_t* set_tok         # [cap_depth] index of the token each top set belongs to
    int32_t tok_index        # index of the token being read (-1 before the first)


cdef enum:
    REACH_BOTTOM = 1
    REACH_CONTEXT = 2


cdef int grow_array(void** ptr, intp_t* cap, intp_t need, size_t elem) except -1 nogil
cdef int stack_init(StackC* st) except -1 nogil
cdef void stack_free(StackC* st) noexcept nogil
cdef int stack_clone(StackC* dst, const StackC* src) except -1 nogil
cdef int stack_reset(StackC* st, bint drop_nodes) except -1 nogil
cdef int32_t stack_node(StackC* st, int32_t state, int32_t parent) except -1 nogil
cdef int32_t stack_find(const StackC* st, int32_t state, int32_t parent) noexcept nogil
cdef int32_t stack_parent_of(StackC* st, int32_t* ids, intp_t n) except -1 nogil
cdef bint stack_set_contains(const StackC* st, intp_t d, int32_t node) noexcept nogil
cdef int stack_drop_front(StackC* st, intp_t n_sets) except -1 nogil
cdef int64_t stack_memory_bytes(const StackC* st) noexcept nogil
# one step (the steps are in _stack_gss.pxd): a fresh epoch and per-state scratch, the plain
# closure of one seed
cdef int stack_epoch_wrapped(StackC* st) except -1 nogil
cdef int stack_grow_lv(StackC* st, const AutomatonC* a) except -1 nogil
cdef int stack_plain_seed(StackC* st, const AutomatonC* a, int32_t s, int32_t parent,
                          intp_t max_conflicts, intp_t* conflicts) except -1 nogil


cdef inline int stack_next_epoch(StackC* st) except -1 nogil:
    # A fresh epoch: every stamp of an earlier one stops matching.
    st.epoch += 1
    if st.epoch == 0:
        stack_epoch_wrapped(st)
    return 0


cdef inline int stack_begin(StackC* st, const AutomatonC* a) except -1 nogil:
    # Start a step: per-state scratch for this automaton, a fresh epoch, its bounds' count.
    if st.cap_lv < a.n_states:
        stack_grow_lv(st, a)
    st.step_base = st.work_count
    st.step_over = False
    return stack_next_epoch(st)


cdef inline bint stack_step_over(StackC* st, intp_t done) noexcept nogil:
    # Whether the current step passed its bounds (StackC.step_budget / step_deadline), with
    # `done` items not yet added to work_count; the clock is read every 4,096 items (~0.1 ms).
    cdef intp_t n = st.work_count + done - st.step_base
    if st.step_budget > 0 and n > st.step_budget:
        st.step_over = True
    elif st.step_deadline > 0 and (n & 4095) == 0 and monotonic_seconds() > st.step_deadline:
        st.step_over = True
    return st.step_over


cdef inline int ensure_array(void** ptr, intp_t* cap, intp_t need, size_t elem) except -1 nogil:
    if need > cap[0]:
        grow_array(ptr, cap, need, elem)
    return 0


cdef inline int stack_push_work(StackC* st, intp_t* n_work, int32_t v) except -1 nogil:
    if n_work[0] == st.cap_work:
        grow_array(<void**>&st.work, &st.cap_work, n_work[0] + 1, sizeof(int32_t))
    st.work[n_work[0]] = v
    n_work[0] += 1
    return 0


cdef inline int stack_emit(StackC* st, int32_t node) except -1 nogil:
    # Append `node` to the top set being built.
    if st.n_tops == st.cap_tops:
        grow_array(<void**>&st.tops, &st.cap_tops, st.n_tops + 1, sizeof(int32_t))
    st.tops[st.n_tops] = node
    st.n_tops += 1
    return 0


cdef inline int stack_open_set(StackC* st) except -1 nogil:
    # Room for one more top set's start in the history.
    cdef intp_t cap
    if st.depth + 2 > st.cap_depth:
        cap = st.cap_depth
        grow_array(<void**>&st.set_start, &st.cap_depth, st.depth + 2, sizeof(intp_t))
        if st.set_tok != NULL:
            grow_array(<void**>&st.set_tok, &cap, st.cap_depth, sizeof(int32_t))
    return 0


cdef inline void stack_close_set(StackC* st) noexcept nogil:
    # The newest set is complete: record its end (and its token, with budgets).
    st.depth += 1
    st.set_start[st.depth] = st.n_tops
    if st.set_tok != NULL:
        st.set_tok[st.depth - 1] = st.tok_index


# ---- token budgets (the rest is in _stack_budget.pyx) ----------------------------------------

cdef enum:
    NO_DEADLINE = 0x7FFFFFFF
    MAX_DEADLINE = 0x7FFFFFF0


cdef inline int32_t stack_marker(const StackC* st, int32_t budget) noexcept nogil:
    # The state of the marker a call of a rule with this budget puts under the callee now.
    cdef int64_t d = <int64_t>st.tok_index + budget
    if d > MAX_DEADLINE:
        d = MAX_DEADLINE
    if d < 0:
        d = 0
    return <int32_t>(-3 - d)


cdef inline void stack_budget_token(StackC* st, int32_t plus) noexcept nogil:
    # Before reading input: the token index is the newest set's, + 1 for a new token.
    if st.set_tok != NULL and st.depth > 0:
        st.tok_index = st.set_tok[st.depth - 1] + plus


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
