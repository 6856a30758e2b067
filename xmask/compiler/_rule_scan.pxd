# The rule walks' size memo, for the NFA builder's repeat checks (a C call, no bound method).
from xmask.grammar._ir_nodes cimport PtrMap


cdef class SizeMemo:
    cdef PtrMap memo
    cdef list keep

    cdef Py_ssize_t csize(self, expr, dict sizes, Py_ssize_t cap) except -1
