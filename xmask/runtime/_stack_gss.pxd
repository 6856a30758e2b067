# Steps of the persistent parse stack (_stack.pxd), implemented in _stack_gss.pyx: each runs the
# plain closure (_stack.pyx) and redoes itself as the merged closure of a graph-structured stack
# when a state repeats.  Every caller that advances a stack goes through these.
from xmask.runtime._types cimport int32_t, uint8_t, intp_t
from xmask.runtime._tables cimport AutomatonC
from xmask.runtime._stack cimport StackC


cdef intp_t stack_start(StackC* st, const AutomatonC* a, int32_t state) except -1 nogil
cdef intp_t stack_start_many(StackC* st, const AutomatonC* a, const int32_t* states, intp_t n,
                             int32_t parent) except -1 nogil
cdef intp_t stack_step(StackC* st, const AutomatonC* a, uint8_t byte) except -1 nogil
cdef intp_t stack_token_step(StackC* st, const AutomatonC* a, intp_t from_depth, int32_t tid,
                             bint merge) except -1 nogil
