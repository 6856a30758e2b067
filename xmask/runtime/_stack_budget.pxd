# Token budgets on the persistent parse stack (implemented in _stack_budget.pyx): after a token,
# drop the paths through budgeted frames whose budget it spent.  Markers and per-node deadlines
# are kept by _stack.pyx (StackC.node_live / node_dead, stack_marker).
from xmask.runtime._types cimport int32_t, intp_t
from xmask.runtime._stack cimport StackC


cdef int stack_enable_budgets(StackC* st) except -1 nogil
cdef intp_t stack_budget_filter(StackC* st, int32_t last) except -1 nogil
cdef bint stack_budget_alive(const StackC* st, int32_t last) noexcept nogil
cdef int stack_repeat_set(StackC* st) except -1 nogil
